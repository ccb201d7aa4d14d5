package gen

import (
	"io"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/iwkit/iwkit/pcap"
)

// countingSink counts frames on their way to the pcap writer.
type countingSink struct {
	w      *pcap.Writer
	frames int
	octets int64
}

func (c *countingSink) WriteFrame(ts time.Time, data []byte, origLen int) error {
	c.frames++
	c.octets += int64(len(data))
	return c.w.WriteFrame(ts, data, origLen)
}

// benchRun generates sc b.N times into a pcap writer on io.Discard and
// reports frames/s and MB/s of capture data.
func benchRun(b *testing.B, sc *Scenario, opts func() *Options) {
	b.ReportAllocs()
	var frames, octets int64
	for b.Loop() {
		w, err := pcap.NewWriter(io.Discard, pcap.FormatPcap, layers.LinkTypeEthernet, 0)
		if err != nil {
			b.Fatal(err)
		}
		s := &countingSink{w: w}
		if _, err := Run(sc, s, opts()); err != nil {
			b.Fatal(err)
		}
		w.Flush()
		frames += int64(s.frames)
		octets += s.octets
	}
	secs := b.Elapsed().Seconds()
	b.ReportMetric(float64(frames)/secs, "frames/s")
	b.ReportMetric(float64(octets)/secs/1e6, "MB/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(frames), "ns/frame")
	b.SetBytes(octets / int64(b.N))
}

// BenchmarkGenerate is the big-capture case: RDMA Writes of 64 KiB, CRC on,
// one FPDU per 1448-octet segment, no truth, 64 MB of frames per run.
func BenchmarkGenerate(b *testing.B) {
	sc := mustBuiltin(b, "bulk-write", Params{Seed: 1, MaxBytes: 64 << 20})
	benchRun(b, sc, func() *Options { return nil })
}

// BenchmarkGenerateMarkers adds markers in both directions.
func BenchmarkGenerateMarkers(b *testing.B) {
	sc := mustBuiltin(b, "bulk-write", Params{Seed: 1, MaxBytes: 64 << 20})
	for i := range sc.Connections {
		sc.Connections[i].MPA.MarkersI2R, sc.Connections[i].MPA.MarkersR2I = true, true
	}
	benchRun(b, sc, func() *Options { return nil })
}

// BenchmarkGenerateSmall is small Sends (rping-like messages, 64 octets):
// the per-frame overhead.
func BenchmarkGenerateSmall(b *testing.B) {
	sc := &Scenario{Seed: 1, MaxBytes: 16 << 20, Connections: []Connection{{MPA: MPA{CRC: true},
		Ops: []Op{{Op: OpNameSend, Size: 64}, {Op: OpNameSend, Dir: "r2i", Size: 64}}}}}
	benchRun(b, sc, func() *Options { return nil })
}

// BenchmarkGenerateTruth is the bulk case with the ground truth streamed
// as JSON to io.Discard.
func BenchmarkGenerateTruth(b *testing.B) {
	sc := mustBuiltin(b, "bulk-write", Params{Seed: 1, MaxBytes: 16 << 20})
	benchRun(b, sc, func() *Options {
		tw, err := NewJSONTruthWriter(io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { tw.Close() })
		return &Options{Truth: tw}
	})
}
