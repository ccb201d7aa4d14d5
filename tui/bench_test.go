package tui

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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

// vmHWM is the process's peak resident memory (VmHWM) in octets.
func vmHWM(b *testing.B) int64 {
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status")
	}
	for _, ln := range strings.Split(string(st), "\n") {
		if f := strings.Fields(ln); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	b.Skip("no VmHWM")
	return 0
}

// BenchmarkViews opens a capture (IWTUI_BENCH_FILE, bench/iwtui-vs-termshark.sh
// makes the dense and ACK-mixed ones of BENCHMARKS.md), waits for the whole
// index, then opens every view as its key does, drawing each on a 200x50
// SimulationScreen. It reports the peak resident memory (VmHWM) before any
// view and after every view, in MiB and per row against the budget (64
// octets a row + 70 MB), and the slowest view's time from the key to the
// screen drawn (ms). Run it with -benchtime 1x: the peak is the process's.
func BenchmarkViews(b *testing.B) {
	path := benchCapture(b)
	for i := 0; i < b.N; i++ {
		s, err := Open(Config{File: path})
		if err != nil {
			b.Fatal(err)
		}
		s.Wait()
		rows := s.Ix.Len()
		before := vmHWM(b)
		sim := tcell.NewSimulationScreen("UTF-8")
		if err := sim.Init(); err != nil {
			b.Fatal(err)
		}
		sim.SetSize(200, 50)
		u := New(s)
		u.deferLater()
		u.pages.SetRect(0, 0, 200, 50)
		var slowest time.Duration
		for _, a := range []Action{ActFindings, ActOps, ActConns, ActSTags, ActCmds, ActGraph, ActOps} {
			start := time.Now()
			u.Do(a)
			u.pages.Draw(sim)
			sim.Show()
			d := time.Since(start) // the view on the screen
			u.settle()
			u.pages.Draw(sim)
			sim.Show()
			all := time.Since(start) // and its order, off the event loop
			slowest = max(slowest, d)
			b.Logf("view %v (page %s): on screen %v, ordered %v, VmHWM %d MiB", a, u.page, d, all, vmHWM(b)>>20)
		}
		afterViews := vmHWM(b)
		// A display filter over the whole capture, to its end (a second
		// pass of the pipeline over the stored frames).
		start := time.Now()
		if err := u.ApplyFilter("ddp.tagged && rdmap.opcode == 0"); err != nil {
			b.Fatal(err)
		}
		for {
			if _, done, _ := u.S.Filter().Status(); done {
				break
			}
			time.Sleep(time.Millisecond)
		}
		filter := time.Since(start)
		u.Do(ActOps) // the operations view, filtered
		u.settle()
		after := vmHWM(b)
		budget := int64(rows)*64 + 70e6
		b.ReportMetric(float64(rows), "rows")
		b.ReportMetric(float64(before)/(1<<20), "MiB-before")
		b.ReportMetric(float64(afterViews)/(1<<20), "MiB-after-views")
		b.ReportMetric(float64(after)/(1<<20), "MiB-after-filter")
		b.ReportMetric(float64(budget)/(1<<20), "MiB-budget")
		b.ReportMetric(float64(slowest.Microseconds())/1e3, "ms-slowest-view")
		b.ReportMetric(filter.Seconds(), "s-filter")
		s.Close()
	}
}

// settle waits for the jobs off the event loop and runs what they hand
// over (what tview's loop does when the screen runs).
func (u *UI) settle() {
	u.jobs.Wait()
	for {
		u.pendMu.Lock()
		fs := u.pending
		u.pending = nil
		u.pendMu.Unlock()
		if len(fs) == 0 {
			return
		}
		for _, f := range fs {
			f()
		}
	}
}
