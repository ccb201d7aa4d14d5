package reassembly

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/iwkit/iwkit/internal/frame"
	"github.com/iwkit/iwkit/pcap"
)

var resyncCapture = flag.String("resync.capture", "", "BenchmarkResyncCapture: write the capture to this file and keep it")

// BenchmarkResyncCapture is issue 20 item 4 end to end below the analyzer:
// a pcap file of a valid MPA exchange (CRC on; markers from the initiator
// too in /markers) and then b.N segments of 1448 random octets from the
// initiator, read back (pcap.Reader, DecodeTCP) into an Assembler. With
// -benchtime 302486x the random octets are 438 MB, the case; with
// -args -resync.capture FILE the file stays for
// `iwdump -q -r FILE --workers 1` (the analyzer's decoding and tracking
// have nothing to do: no FPDU is found).
func BenchmarkResyncCapture(b *testing.B) {
	for _, markers := range []bool{false, true} {
		b.Run(map[bool]string{false: "crc", true: "markers"}[markers], func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "resync.pcap")
			if *resyncCapture != "" {
				path = *resyncCapture
				if markers {
					path += ".markers.pcap"
				}
			}
			writeResyncCapture(b, path, markers, b.N)
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			h := &countHandler{}
			a := New(Config{}, h)
			b.SetBytes(1448)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			r, err := pcap.NewReader(bufio.NewReaderSize(f, 1<<20))
			if err != nil {
				b.Fatal(err)
			}
			var fr pcap.Frame
			var p pcap.Packet
			for {
				if err := r.Next(&fr); err != nil {
					if !errors.Is(err, io.EOF) {
						b.Fatal(err)
					}
					break
				}
				if err := pcap.DecodeTCP(fr.LinkType, fr.Data, &p); err != nil {
					b.Fatal(err)
				}
				a.Feed(fr.Number, fr.Timestamp, &p)
			}
			a.Flush()
			b.StopTimer()
			reportCPU(b, cpuTime()-cpu0, 1448)
			if st := a.Stats(); h.crcBad > 0 || st.Resyncs > 0 {
				b.Fatalf("%d FPDUs with a bad CRC, %d resyncs in random octets", h.crcBad, st.Resyncs)
			}
		})
	}
}

// writeResyncCapture writes the capture of BenchmarkResyncCapture.
func writeResyncCapture(tb testing.TB, path string, markers bool, n int) {
	c := mpaConv(markers, true)
	out, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	bw := bufio.NewWriterSize(out, 1<<20)
	w, err := pcap.NewWriter(bw, pcap.FormatPcap, layers.LinkTypeEthernet, 65535)
	if err != nil {
		tb.Fatal(err)
	}
	var t [2]*frame.Template
	for d := range t {
		t[d] = frame.NewTemplate(frame.Endpoint{MAC: [6]byte{2, 0, 0, 0, 0, byte(d + 1)}, Addr: c.addr[d]},
			frame.Endpoint{MAC: [6]byte{2, 0, 0, 0, 0, byte(2 - d)}, Addr: c.addr[1-d]}, 0)
	}
	var buf []byte
	ts := c.ts
	put := func(d Dir, seq, ack uint32, flags uint8, data []byte) {
		ts = ts.Add(time.Microsecond)
		buf = t[d].Append(buf[:0], &frame.Segment{Seq: seq, Ack: ack, Flags: flags, Window: 65535}, data)
		if err := w.WriteFrame(ts, buf, len(buf)); err != nil {
			tb.Fatal(err)
		}
	}
	for _, p := range c.pkts {
		put(p.d, p.seq, p.ack, p.flags, p.data)
	}
	rng := rand.New(rand.NewPCG(20, 4))
	seg := make([]byte, 1448)
	seq, ack := c.s[0].seqAt(len(c.s[0].data)), c.s[1].seqAt(len(c.s[1].data))
	for range n {
		for i := 0; i < len(seg); i += 8 {
			binary.LittleEndian.PutUint64(seg[i:], rng.Uint64())
		}
		put(0, seq, ack, pcap.TCPAck, seg)
		seq += uint32(len(seg))
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := out.Close(); err != nil {
		tb.Fatal(err)
	}
}
