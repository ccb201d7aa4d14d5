package render

import (
	"bufio"
	"io"
	"testing"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/pcap"
)

// recordKeeper keeps copies of a run's PDU records, and the run's Out.
type recordKeeper struct {
	out  *analyze.Out
	recs []analyze.Record
}

func (k *recordKeeper) Record(r *analyze.Record) {
	if r.Kind != analyze.KindPDU {
		return
	}
	c := *r
	e := *r.PDU
	e.PDU = clonePDU(&r.PDU.PDU)
	c.PDU = &e
	c.ULP = nil
	k.recs = append(k.recs, c)
}

type pcapSource struct{ *pcap.Reader }

func (pcapSource) Close() error { return nil }

// BenchmarkPrinter times what iwdump prints per PDU record, text line,
// NDJSON object and text with -V's tree, into a bufio.Writer over io.Discard (one worker): the
// records of a generated bulk Write run (item 8's traffic: tagged FPDUs
// with CRC), a few hundred cycled so that they stay in cache as in
// iwdump, where a record is printed right after it is decoded.
func BenchmarkPrinter(b *testing.B) {
	r, err := pcap.NewReader(generatedCapture(b, "bulk-write", gen.Params{Count: 20}))
	if err != nil {
		b.Fatal(err)
	}
	var k recordKeeper
	w := bufio.NewWriterSize(io.Discard, 1<<16)
	if _, err := analyze.RunOrdered(pcapSource{r}, analyze.Config{Workers: 1}, analyze.Output{W: w}, func(_ int, out *analyze.Out) analyze.Consumer {
		k.out = out
		return &k
	}); err != nil {
		b.Fatal(err)
	}
	recs := k.recs[len(k.recs)/2:]
	recs = recs[:min(len(recs), 256)]
	if len(recs) == 0 || !recs[0].PDU.PDU.Seg.DDP.Tagged {
		b.Fatalf("%d records, not tagged", len(recs))
	}
	for _, format := range []string{"text", "json", "verbose"} {
		b.Run(format, func(b *testing.B) {
			o := &Options{Format: format, TimeFormat: "r"}
			if format == "verbose" { // -V: the field tree
				o.Format, o.Verbose = "text", true
			}
			p := New(k.out, o)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				p.Record(&recs[i%len(recs)])
			}
			w.Flush()
		})
	}
}
