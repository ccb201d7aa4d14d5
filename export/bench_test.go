package export

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/render"
)

// BenchmarkExport and BenchmarkExportNDJSON export the capture named by
// IWKIT_EXPORT_BENCH (a bulk-write capture from iwgen, as bench/export.sh
// makes) to Parquet, and print it as NDJSON on one worker (what the
// export's cost is measured against, BENCHMARKS.md). Both report the
// process CPU time per run (cpu-ms/op), steadier than wall time on a
// loaded machine: go test ./export -run X -bench Export -count 3.
func BenchmarkExport(b *testing.B) {
	file := benchFile(b)
	cpu := cpuClock()
	for b.Loop() {
		if r := Export(Set{Capture: "bench", Files: []string{file}}, Config{Dir: b.TempDir()}); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
	b.ReportMetric(float64(cpuClock()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
}

// BenchmarkExportWorkers exports the capture on 1 and 2 workers
// (Config.Workers): the rows are written from the records the sharded
// pipeline hands out in capture order.
func BenchmarkExportWorkers(b *testing.B) {
	file := benchFile(b)
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) {
			cpu := cpuClock()
			for b.Loop() {
				if r := Export(Set{Capture: "bench", Files: []string{file}}, Config{Dir: b.TempDir(), Workers: w}); r.Err != nil {
					b.Fatal(r.Err)
				}
			}
			b.ReportMetric(float64(cpuClock()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}

func BenchmarkExportNDJSON(b *testing.B) {
	file := benchFile(b)
	cpu := cpuClock()
	for b.Loop() {
		src, _, err := analyze.OpenFiles([]string{file})
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriterSize(io.Discard, 64<<10)
		o := &render.Options{Format: "json"}
		if _, err := analyze.RunOrdered(src, analyze.Config{Workers: 1}, analyze.Output{W: w}, func(_ int, out *analyze.Out) analyze.Consumer { return render.New(out, o) }); err != nil {
			b.Fatal(err)
		}
		w.Flush()
		src.Close()
	}
	b.ReportMetric(float64(cpuClock()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
}

func benchFile(b *testing.B) string {
	file := os.Getenv("IWKIT_EXPORT_BENCH")
	if file == "" {
		b.Skip("IWKIT_EXPORT_BENCH names no capture (bench/export.sh makes one)")
	}
	return file
}

// cpuClock is the process's user + system CPU time.
func cpuClock() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
