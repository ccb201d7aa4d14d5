package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/iwkit/iwkit/capture"
	"github.com/iwkit/iwkit/export"
	"github.com/iwkit/iwkit/finding"
)

// exportOptions are --export, --each, --jobs and the capture identity
// flags (--name, --tag, --replace, --skip-existing).
type exportOptions struct {
	dir           string
	each          bool
	jobs          int
	name          string
	tags          []string
	replace, skip bool
}

func exportFlags(fs *flag.FlagSet, o *options) {
	fs.StringVar(&o.export.dir, "export", "", "write what was recovered as Parquet tables under `DIR` (DIR/<table>/capture=<name>/part-<id>.parquet), instead of printing it")
	fs.BoolVar(&o.export.each, "each", false, "with --export, export each file (-r or argument) as its own capture set")
	fs.IntVar(&o.export.jobs, "jobs", 0, "with --export --each, export `N` capture sets at once (0: one per core)")
	fs.StringVar(&o.export.name, "name", "", "with --export, the capture set's `NAME` (default: the file's base name); not with --each of several files")
	fs.Func("tag", "with --export, record `KEY=VALUE` in captures.tags (repeatable; KEY of a-z, 0-9, _)", func(v string) error {
		k, _, ok := strings.Cut(v, "=")
		if !ok || k == "" || strings.Trim(k, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
			return fmt.Errorf("--tag takes KEY=VALUE with KEY of a-z, 0-9 and _, not %q", v)
		}
		o.export.tags = append(o.export.tags, v)
		return nil
	})
	fs.BoolVar(&o.export.replace, "replace", false, "with --export, replace a capture set of the same name whose content differs (else refused)")
	fs.BoolVar(&o.export.skip, "skip-existing", false, "with --export, skip a capture set whose live copy has the same content hash")
}

// runExport is iwdump --export: the capture sets from -r (one set, the
// files merged) or, with --each, one set per file (-r and the arguments).
// A line per set on stdout says what was written.
func runExport(o *options, args []string, stdout, stderr io.Writer) int {
	x := &o.export
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "iwdump: "+format+"\n", a...)
		return exitUsage
	}
	sev, sevOK := finding.ParseSeverity(o.failOn)
	switch {
	case o.in.Iface != "":
		return fail("--export reads files (-r), not -i")
	case o.display != "" || len(o.stats) > 0 || o.plot != "" || o.w.write != "" || o.print.Format != "text":
		return fail("--export takes no -Y, -z, --plot, -w or -T")
	case x.jobs < 0:
		return fail("--jobs takes a positive number, not %d", x.jobs)
	case o.failOn != "" && !sevOK:
		return fail("--fail-on takes error, warning or note, not %q", o.failOn)
	}
	files := o.in.Files
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
	if x.name != "" {
		if len(sets) > 1 {
			return fail("--name names one capture set; --each made %d", len(sets))
		}
		if export.CaptureName(x.name) != x.name {
			return fail("--name %q: use letters, digits, '.', '-' and '_', not first '.' or '_' (%q would do)", x.name, export.CaptureName(x.name))
		}
		sets[0].Capture = x.name
	}
	// Ctrl-C or SIGTERM: the sets not yet committed remove their
	// temporary files and commit nothing; a commit under way ends first.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	defer func() { signal.Stop(sig); close(done) }()
	go func() {
		var s os.Signal
		select {
		case s = <-sig:
		case <-done:
			return
		}
		n := export.Interrupt()
		fmt.Fprintf(stderr, "iwdump: %v: %d capture sets stopped before their commit (nothing of them written)\n", s, n)
		os.Exit(exitError)
	}()
	var total int64
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			total += st.Size()
		}
	}
	prog := newProgress(stderr, o.progress, total)
	var read atomic.Int64
	var progMu sync.Mutex
	cfg := export.Config{Dir: x.dir, Ports: o.in.Ports, Count: o.count, Workers: o.workers, Tags: x.tags, Replace: x.replace, SkipExisting: x.skip, Progress: func(n int) {
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
			fmt.Fprintf(stderr, "iwdump: %s: %v\n", r.Set.Capture, capture.Message("iwdump", r.Err))
		}
		if r.Skipped {
			fmt.Fprintf(stdout, "capture=%s skipped=unchanged\n", r.Set.Capture)
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
	if code == exitOK && sevOK && worst >= int(sev) {
		return exitFindings
	}
	return code
}
