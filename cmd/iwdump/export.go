package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/iwkit/iwkit/export"
)

// exportOptions are --export, --each and --jobs.
type exportOptions struct {
	dir  string
	each bool
	jobs int
}

func exportFlags(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.export.dir, "export", "", "write what was recovered as Parquet tables under `DIR` (DIR/<table>/capture=<name>/part-<id>.parquet), instead of printing it")
	fs.BoolVar(&o.export.each, "each", false, "with --export, export each file (-r or argument) as its own capture set")
	fs.IntVar(&o.export.jobs, "jobs", 0, "with --export --each, export `N` capture sets at once (0: one per core)")
}

// runExport is iwdump --export: the capture sets from -r (one set, the
// files merged) or, with --each, one set per file (-r and the arguments).
// A line per set on stdout says what was written.
func runExport(o *options, args []string, stdout, stderr io.Writer) int {
	x := &o.export
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "iwdump: "+format+"\n", a...)
		return exitError
	}
	switch {
	case o.live.iface != "":
		return fail("--export reads files (-r), not -i")
	case o.display != "" || len(o.stats) > 0 || o.plot != "" || o.live.write != "" || o.print.Format != "text":
		return fail("--export takes no -Y, -z, --plot, -w or -T")
	case x.jobs < 0:
		return fail("--jobs takes a positive number, not %d", x.jobs)
	case o.failOn != "" && severityRank(o.failOn) < 0:
		return fail("--fail-on takes error, warning or note, not %q", o.failOn)
	}
	files := o.files
	var sets []export.Set
	if x.each {
		files = append(files, args...)
		for _, f := range files {
			sets = append(sets, export.Set{Capture: export.CaptureName(f), Files: []string{f}})
		}
	} else {
		if len(args) > 0 {
			return fail("--export without --each: give the files with -r (arguments would be a capture filter, which --export does not take): %q", strings.Join(args, " "))
		}
		if len(files) > 0 {
			var names []string
			for _, f := range files {
				names = append(names, export.CaptureName(f))
			}
			sets = []export.Set{{Capture: export.CaptureName(strings.Join(names, "+")), Files: files}}
		}
	}
	if len(sets) == 0 {
		return fail("--export: no input files")
	}
	var total int64
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			total += st.Size()
		}
	}
	prog := newProgress(stderr, o.progress, total)
	var read atomic.Int64
	var progMu sync.Mutex
	cfg := export.Config{Dir: x.dir, Ports: o.ports, Count: o.count, Progress: func(n int) {
		// Called from every job: gather, and let one update the bar.
		if read.Add(int64(n)) >= 1<<20 {
			if v := read.Swap(0); v > 0 {
				progMu.Lock()
				prog.add(int(v))
				progMu.Unlock()
			}
		}
	}}
	jobs := x.jobs
	if jobs == 0 {
		jobs = runtime.GOMAXPROCS(0)
	}
	code := exitOK
	results := export.ExportEach(sets, cfg, jobs, func(r export.Result) {
		if r.Err != nil {
			fmt.Fprintf(stderr, "iwdump: %s: %v\n", r.Set.Capture, filterMessage(r.Err))
		}
		if r.Report == nil {
			return
		}
		c := r.Counts
		fmt.Fprintf(stdout, "capture=%s frames=%d connections=%d pdus=%d operations=%d findings=%d commands=%d\n",
			r.Set.Capture, c.Frames, c.Connections, c.PDUs, c.Operations, c.Findings, c.Commands)
	})
	prog.add(int(read.Swap(0)))
	prog.finish()
	worst, panics := -1, 0
	for _, r := range results {
		if r.Err != nil {
			code = exitError
		}
		if r.Report != nil {
			worst = max(worst, r.Report.Worst)
			panics += r.Report.Panics
		}
	}
	if code == exitOK && panics > 0 {
		fmt.Fprintf(stderr, "iwdump: %d decoder panic(s) contained (internal.decoder_panic findings): the export is incomplete; please report the capture\n", panics)
		return exitPanic
	}
	if code == exitOK && o.failOn != "" && worst >= severityRank(o.failOn) {
		return exitFindings
	}
	return code
}

// severityRank orders the severities as analyze.Report.Worst does: note
// 0, warning 1, error 2; -1 for anything else.
func severityRank(s string) int {
	switch s {
	case "note":
		return 0
	case "warning":
		return 1
	case "error":
		return 2
	}
	return -1
}
