package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
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
		b.Logf("index built: %d rows, VmHWM %d MiB; %s", rows, before>>20, heapNote(b, "index"))
		sim := tcell.NewSimulationScreen("UTF-8")
		if err := sim.Init(); err != nil {
			b.Fatal(err)
		}
		sim.SetSize(200, 50)
		u := New(s)
		u.deferLater()
		u.pages.SetRect(0, 0, 200, 50)
		var slowest time.Duration
		views := func(when string) {
			for _, a := range []Action{ActFindings, ActOps, ActConns, ActSTags, ActCmds, ActGraph, ActOps} {
				start, watch := time.Now(), peakWatch()
				u.Do(a)
				u.pages.Draw(sim)
				sim.Show()
				d := time.Since(start) // the view on the screen
				u.settle()
				u.pages.Draw(sim)
				sim.Show()
				all := time.Since(start) // and its order, off the event loop
				slowest = max(slowest, d)
				b.Logf("view %v (page %s, %s): on screen %v, ordered %v, VmHWM %d MiB; %s; %s", a, u.page, when, d, all, vmHWM(b)>>20, watch(), heapNote(b, when+"-"+u.page))
			}
		}
		// A display filter over the whole capture, to its end (a second
		// pass of the pipeline over the stored frames).
		start, watch := time.Now(), peakWatch()
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
		u.settle()
		afterFilter := vmHWM(b)
		b.Logf("filter: %v, VmHWM %d MiB; %s; %s", filter, afterFilter>>20, watch(), heapNote(b, "filter"))
		views("filtered") // every view, the display filter applied to it
		afterFiltered := vmHWM(b)
		if err := u.ApplyFilter(""); err != nil {
			b.Fatal(err)
		}
		views("unfiltered") // and every view again without it
		after := vmHWM(b)
		budget := int64(rows)*64 + 70e6
		b.ReportMetric(float64(rows), "rows")
		b.ReportMetric(float64(before)/(1<<20), "MiB-before")
		b.ReportMetric(float64(afterFilter)/(1<<20), "MiB-after-filter")
		b.ReportMetric(float64(afterFiltered)/(1<<20), "MiB-after-filtered-views")
		b.ReportMetric(float64(after)/(1<<20), "MiB-after-all-views")
		b.ReportMetric(float64(budget)/(1<<20), "MiB-budget")
		b.ReportMetric(float64(slowest.Microseconds())/1e3, "ms-slowest-view")
		b.ReportMetric(filter.Seconds(), "s-filter")
		s.Close()
	}
}

// peakWatch samples the resident memory (VmRSS) every 2 ms until stop
// is called, and words what the runtime held from the system (Go heap,
// stacks, the rest) when it was highest: what the peak was made of.
func peakWatch() (stop func() string) {
	quit, done := make(chan struct{}), make(chan string)
	go func() {
		f, _ := os.Open("/proc/self/statm")
		defer f.Close()
		fd := int(f.Fd())
		var best int64
		var at runtime.MemStats
		for {
			select {
			case <-quit:
				done <- fmt.Sprintf("peak VmRSS %d MiB: Go heap %d MiB (live or garbage %d), stacks %d, runtime's other %d",
					best>>20, (at.HeapSys-at.HeapReleased)>>20, at.HeapAlloc>>20, at.StackSys>>20, (at.Sys-at.HeapSys-at.StackSys)>>20)
				return
			default:
				time.Sleep(2 * time.Millisecond)
			}
			if r := vmRSS(fd); r > best {
				best = r
				runtime.ReadMemStats(&at)
			}
		}
	}()
	return func() string { close(quit); return <-done }
}

// vmRSS is the process's resident memory now in octets (/proc/self/statm,
// read into a buffer of its own: the sampler adds no garbage of its own).
func vmRSS(fd int) int64 {
	var buf [128]byte
	n, _ := syscall.Pread(fd, buf[:], 0)
	var fields [2]int64
	k := 0
	for _, c := range buf[:max(n, 0)] {
		if c == ' ' {
			if k++; k == 2 {
				break
			}
			continue
		}
		fields[k] = fields[k]*10 + int64(c-'0')
	}
	return fields[1] * int64(os.Getpagesize())
}

// heapNote words the Go heap now (live, and what the runtime holds from
// the system); with IWTUI_BENCH_HEAP=DIR it also writes a heap profile
// DIR/NAME.heap (go tool pprof -sample_index=inuse_space).
func heapNote(b *testing.B, name string) string {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if dir := os.Getenv("IWTUI_BENCH_HEAP"); dir != "" {
		f, err := os.Create(filepath.Join(dir, name+".heap"))
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		pprof.WriteHeapProfile(f)
		f.Close()
	}
	return fmt.Sprintf("heap %d MiB live, %d MiB from the system", ms.HeapAlloc>>20, (ms.HeapSys-ms.HeapReleased)>>20)
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
