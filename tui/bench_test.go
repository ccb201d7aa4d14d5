package tui

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"testing"

	"github.com/gdamore/tcell/v2"

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
// per second and the index's octets per frame (Index.Bytes: rows, frame
// offsets and what the views keep, as allocated).
func BenchmarkIndex(b *testing.B) {
	path := benchCapture(b)
	var frames, bytes int
	for i := 0; i < b.N; i++ {
		s, err := Open(Config{File: path})
		if err != nil {
			b.Fatal(err)
		}
		s.Wait()
		frames, bytes = s.Ix.store.frames(), s.Ix.Bytes()
		s.Close()
	}
	b.ReportMetric(float64(frames)*float64(b.N)/b.Elapsed().Seconds(), "frames/s")
	b.ReportMetric(float64(bytes)/float64(frames), "index-B/frame")
	runtime.GC()
}

// BenchmarkIndexWorkers builds the whole index on 1 and 2 workers
// (Config.Workers): the sharded pipeline hands the indexer the same
// records in the same order. Wall time per index and frames/s, with the
// process's CPU time (cpu-ms/op); BENCHMARKS.md runs it on a 1 M-frame
// capture (IWTUI_BENCH_FILE, bench/records-workers.sh).
func BenchmarkIndexWorkers(b *testing.B) {
	path := benchCapture(b)
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			var frames int
			cpu := cpuClock()
			for i := 0; i < b.N; i++ {
				s, err := Open(Config{File: path, Workers: w})
				if err != nil {
					b.Fatal(err)
				}
				s.Wait()
				frames = s.Ix.store.frames()
				s.Close()
			}
			b.ReportMetric(float64(frames)*float64(b.N)/b.Elapsed().Seconds(), "frames/s")
			b.ReportMetric(float64(cpuClock()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}

// cpuClock is the process's CPU time (user + system) in nanoseconds.
func cpuClock() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkFirstScreen: from Open to a first screen drawn (200x50, on a
// SimulationScreen): the rows of a screenful indexed, the first decoded
// again for the tree and the hex, everything drawn.
func BenchmarkFirstScreen(b *testing.B) {
	path := benchCapture(b)
	sim := tcell.NewSimulationScreen("UTF-8")
	if err := sim.Init(); err != nil {
		b.Fatal(err)
	}
	sim.SetSize(200, 50)
	sim.Show()
	for i := 0; i < b.N; i++ {
		s, err := Open(Config{File: path})
		if err != nil {
			b.Fatal(err)
		}
		for s.Ix.Len() < 50 {
			runtime.Gosched()
		}
		u := New(s)
		u.pages.SetRect(0, 0, 200, 50)
		u.pages.Draw(sim)
		sim.Show()
		if u.detail == nil || u.detail.Err != nil || len(u.detail.Wire) == 0 {
			b.Fatal("no detail on the first screen")
		}
		s.Close()
	}
}
