package tui

import (
	"os"
	"runtime"
	"testing"

	"github.com/iwkit/iwkit/gen"
)

// benchCapture is IWTUI_BENCH_FILE, or a generated read-heavy capture.
func benchCapture(b *testing.B) string {
	if f := os.Getenv("IWTUI_BENCH_FILE"); f != "" {
		return f
	}
	return genCapture(b, b.TempDir(), "read-heavy", "bench.pcap", gen.Params{Seed: 1, Conns: 4, MaxBytes: 32 << 20})
}

// BenchmarkIndex builds the whole index of a capture; it reports frames
// per second and the index's octets per frame (rows and frame offsets).
func BenchmarkIndex(b *testing.B) {
	path := benchCapture(b)
	var frames, rows int
	for i := 0; i < b.N; i++ {
		s, err := Open(Config{File: path})
		if err != nil {
			b.Fatal(err)
		}
		s.Wait()
		frames, rows = s.Ix.store.frames(), s.Ix.Len()
		s.Close()
	}
	b.ReportMetric(float64(frames)*float64(b.N)/b.Elapsed().Seconds(), "frames/s")
	b.ReportMetric(float64(rows*40+frames*8)/float64(frames), "index-B/frame")
	runtime.GC()
}

// BenchmarkFirstScreen: from Open to the rows of a first screen (40)
// indexed and the first one decoded again for the detail pane.
func BenchmarkFirstScreen(b *testing.B) {
	path := benchCapture(b)
	for i := 0; i < b.N; i++ {
		s, err := Open(Config{File: path})
		if err != nil {
			b.Fatal(err)
		}
		for s.Ix.Len() < 40 {
			runtime.Gosched()
		}
		l := &loader{ix: s.Ix}
		if d := l.Load(0); d.Err != nil {
			b.Fatal(d.Err)
		}
		s.Close()
	}
}
