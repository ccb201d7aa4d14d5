// Command iwdump decodes iWARP (MPA, DDP, RDMAP) in capture files, in the
// spirit of tcpdump with tshark's depth. See docs/iwdump.md for flags,
// output formats and exit codes.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/capture"
	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/internal/exitcode"
	"github.com/iwkit/iwkit/iograph"
	"github.com/iwkit/iwkit/render"
)

// Exit codes are a contract (docs/exit-status.md), the same in every command.
const (
	exitOK       = exitcode.OK           // the input was read to its end
	exitError    = exitcode.Failure      // I/O error, damaged input, capture error
	exitUsage    = exitcode.Usage        // bad flags, arguments or filters
	exitFindings = exitcode.Findings     // --fail-on: a finding of that severity or worse was raised
	exitPanic    = exitcode.DecoderPanic // a decoder panicked on the input: contained as internal.decoder_panic findings
)

type options struct {
	in       capture.Options // -r, -i, -F, the capture filter, --decode-as, -s -p -B (package capture)
	count    int
	display  string
	stats    []string
	plot     string
	failOn   string
	progress string
	workers  int
	limits   limitOptions // --max-flows, --reassembly-mem, --keep-conns, --mem-limit
	print    render.Options
	w        writeOptions         // -w and its flags (live.go)
	fields   render.FieldsOptions // -T fields: -e, -E
	glossary string               // -G fields
	export   exportOptions        // --export, --each, --jobs (export.go)
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("iwdump", flag.ContinueOnError)
	var o options
	o.fields = render.DefaultFieldsOptions()
	o.in.Register(fs, capture.All)
	fs.IntVar(&o.count, "c", 0, "stop after `N` frames")
	fs.BoolVar(&o.print.Verbose, "V", false, "print the full field tree of every PDU")
	fs.BoolVar(&o.print.Hex, "x", false, "print the PDU's octets in hex")
	fs.BoolVar(&o.print.Numeric, "n", false, "print named values (opcodes, Terminate causes, ...) as numbers")
	fs.BoolVar(&o.print.Quiet, "q", false, "print no PDUs or findings, only the -z tables")
	fs.StringVar(&o.display, "Y", "", "display only PDUs and findings matching the display `filter`, e.g. 'rdmap.opcode == \"RDMA Read Request\" && rdmap.sink_stag == 0x1234'")
	fs.Func("z", "print statistics `STAT` at the end: conv, ops, findings, latency; storage protocols: nvme, iscsi, smb2, rpc (repeatable)", func(v string) error {
		for _, s := range strings.Split(v, ",") {
			if !render.ValidStat(s) {
				return fmt.Errorf("unknown statistic %q (want one of %s)", s, strings.Join(render.StatNames, ", "))
			}
			o.stats = append(o.stats, s)
		}
		return nil
	})
	fs.StringVar(&o.plot, "plot", "", "draw an I/O graph, the read-latency distribution and, on storage traffic, command latency per command, queue depth and flow-control windows (credits, iSCSI CmdSN window, NVMe SQ head/tail) over time per queue to `FILE` (.svg or .png)")
	fs.StringVar(&o.failOn, "fail-on", "", "exit with status 4 when a finding of `SEVERITY` (error, warning, note) or worse was raised")
	fs.StringVar(&o.progress, "progress", "auto", "progress bar on stderr: auto (large files, stderr a terminal), always, never")
	fs.IntVar(&o.workers, "workers", 0, "reassemble and decode on `N` goroutines, flows sharded by their addresses (0: one per core for files of 64 MiB or more; 1 otherwise); the output does not depend on N")
	fs.StringVar(&o.print.TimeFormat, "t", "r", "time `format` of text lines: r (seconds since the first frame), a (time of day, UTC), ad (date and time, UTC), e (seconds since the epoch)")
	fs.StringVar(&o.print.Format, "T", "text", "output `format`: text, json (NDJSON, one object per PDU or finding) or fields (tshark's -T fields: the -e fields, a line per frame)")
	fs.Func("e", "with -T fields, print `FIELD` (repeatable; iwdump -G fields lists them)", func(v string) error {
		o.fields.Fields = append(o.fields.Fields, v)
		return nil
	})
	fs.Func("E", "with -T fields, tshark's `OPTION`: header=y|n, separator=/t|/s|C, occurrence=f|l|a, aggregator=,|/s|C, quote=d|s|n, escape=y|n", o.fields.SetE)
	fs.IntVar(&o.limits.maxFlows, "max-flows", analyze.DefaultMaxFlows, "TCP flows held at once, all workers together; past it the least recently active one is evicted (tcp.flow_evicted)")
	fs.IntVar(&o.limits.reasmMiB, "reassembly-mem", analyze.DefaultMemoryBudget>>20, "MiB of reassembly buffers (out-of-order data, FPDUs across segments, resync windows), all workers together")
	fs.IntVar(&o.limits.keepConns, "keep-conns", analyze.DefaultKeepConns, "ended connections whose addresses and statistics the -z tables keep")
	fs.IntVar(&o.limits.memLimitMiB, "mem-limit", 64, "soft limit in MiB on the Go heap (runtime/debug.SetMemoryLimit; 0: none; the GOMEMLIMIT variable, when set, wins)")
	writeFlags(fs, &o)  // live.go
	exportFlags(fs, &o) // export.go
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile to `FILE` (for performance work)")
	doc.Setup(fs, stderr) // -h, --help, --version (doc.go)
	if code, done := doc.Done(fs, fs.Parse(args), stdout); done {
		return code
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintf(stderr, "iwdump: %v\n", err)
			return exitError
		}
		defer f.Close()
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	usage := func(msg string) int {
		fmt.Fprintf(stderr, "iwdump: %s\n", msg)
		fs.Usage()
		return exitUsage
	}
	if o.glossary != "" {
		render.WriteGlossary(stdout)
		return exitOK
	}
	if o.export.dir != "" {
		return runExport(&o, fs.Args(), stdout, stderr) // export.go
	}
	// The arguments after the flags are a capture filter (package capture).
	if done, err := o.in.Finish(fs.Args(), stdout); err != nil || done {
		return fail(stderr, err)
	}
	if err := o.w.check(&o); err != nil {
		return fail(stderr, &capture.UsageError{Msg: err.Error()})
	}
	if o.w.write == "-" {
		o.print.Quiet = true // standard output carries the capture file
	}
	switch {
	case o.print.Format != "text" && o.print.Format != "json" && o.print.Format != "fields":
		return usage(fmt.Sprintf("unknown output format %q", o.print.Format))
	case o.failOn != "" && !validSeverity(o.failOn):
		return usage(fmt.Sprintf("--fail-on takes error, warning or note, not %q", o.failOn))
	case o.progress != "auto" && o.progress != "always" && o.progress != "never":
		return usage(fmt.Sprintf("--progress takes auto, always or never, not %q", o.progress))
	case !slices.Contains(render.TimeFormats, o.print.TimeFormat):
		return usage(fmt.Sprintf("-t takes %s, not %q", strings.Join(render.TimeFormats, ", "), o.print.TimeFormat))
	case o.limits.maxFlows < 1 || o.limits.reasmMiB < 1 || o.limits.keepConns < 1 || o.limits.memLimitMiB < 0:
		return usage("--max-flows, --reassembly-mem and --keep-conns take 1 or more, --mem-limit 0 or more")
	case o.workers < 0 || o.workers > analyze.MaxWorkers:
		return usage(fmt.Sprintf("--workers takes 0 to %d, not %d", analyze.MaxWorkers, o.workers))
	case o.plot != "" && !strings.HasSuffix(o.plot, ".svg") && !strings.HasSuffix(o.plot, ".png"):
		return usage("--plot FILE must end in .svg or .png")
	}
	if o.display != "" {
		f, err := analyze.CompileFilter(o.display)
		if err != nil {
			fmt.Fprintf(stderr, "iwdump: -Y: %v\n", err)
			return exitUsage
		}
		o.print.Filter = f
	}
	w := bufio.NewWriterSize(stdout, 1<<16)
	defer w.Flush()
	src, total, err := openInput(&o, w, stderr) // files or -i, capture filter, -w (live.go)
	if err != nil {
		return fail(stderr, err)
	}
	defer src.Close()
	prog := newProgress(stderr, o.progress, total)
	cfg := analyze.Config{Ports: o.in.Ports, Count: o.count, Workers: o.workers, InputSize: total, Progress: prog.add, DecodeAs: o.in.DecodeAs,
		MaxFlows: o.limits.maxFlows, MemoryBudget: int64(o.limits.reasmMiB) << 20, KeepConns: o.limits.keepConns}
	o.limits.apply(o.in.Iface == "")
	if o.in.Iface != "" {
		cfg.Workers = 1 // frames come as they are captured: no chunks to shard
	}
	if o.print.Format == "fields" {
		cfg.Workers = 1 // a line gathers every PDU of its frame
	}
	var shardPlots []*iograph.Collector
	var fp *render.FieldsPrinter
	if o.print.Format == "fields" {
		var match func(*analyze.Record) bool
		if o.print.Filter != nil {
			match = o.print.Filter.Match
		}
		var err error
		if fp, err = render.NewFieldsPrinter(w, o.fields, o.print.Numeric, match); err != nil {
			fmt.Fprintf(stderr, "iwdump: %v\n", err)
			return exitUsage
		}
	}
	out := analyze.Output{W: w}
	if f, ok := stdout.(*os.File); ok {
		out.Direct = f // the shards' output goes to it where it lies (writev)
	}
	rep, derr := analyze.RunOrdered(src, cfg, out, func(_ int, out *analyze.Out) analyze.Consumer {
		if fp != nil {
			return fp
		}
		p := render.New(out, &o.print)
		if o.plot == "" {
			return p
		}
		pc := &plotConsumer{Printer: p, c: &iograph.Collector{}}
		shardPlots = append(shardPlots, pc.c)
		return pc
	})
	prog.finish()
	if fp != nil {
		fp.Flush()
	}
	if derr != nil {
		// Everything before the damage is printed first.
		w.Flush()
		fmt.Fprintf(stderr, "iwdump: %s\n", capture.Message("iwdump", derr))
	}
	live := ""
	if l, ok := src.(*analyze.Live); ok {
		live = l.Finish() // ends a live capture: its statistics
		fmt.Fprint(stderr, l.Tcpdump())
	}
	for _, s := range o.stats {
		render.WriteStat(w, rep, live, s)
	}
	if o.plot != "" {
		if err := writePlot(iograph.Merge(shardPlots), rep.ULP, o.plot); err != nil {
			fmt.Fprintf(stderr, "iwdump: --plot: %v\n", err)
			return exitError
		}
	}
	if derr != nil {
		return exitError
	}
	if rep.Panics > 0 {
		fmt.Fprintf(stderr, "iwdump: %d decoder panic(s) contained (internal.decoder_panic findings): the output is incomplete; please report the capture\n", rep.Panics)
		return exitPanic
	}
	if sev, ok := finding.ParseSeverity(o.failOn); ok && rep.Worst >= int(sev) {
		return exitFindings
	}
	return exitOK
}

// fail reports err (nil: nothing to report, exit 0) and gives its exit
// status: usage mistakes 2, anything else 1.
func fail(stderr io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "iwdump: %s\n", capture.Message("iwdump", err))
	if capture.IsUsage(err) {
		return exitUsage
	}
	return exitError
}

func validSeverity(s string) bool {
	_, ok := finding.ParseSeverity(s)
	return ok
}

// limitOptions are the memory limits (docs/iwdump.md "Memory limits").
type limitOptions struct {
	maxFlows, reasmMiB, keepConns, memLimitMiB int
}

// apply sets the soft memory limit: the garbage collector works harder as
// the heap nears it, instead of letting it grow to twice what is live.
//
// Reading files (files), under that limit, and unless GOGC says
// otherwise, the collector runs only as the heap nears the limit (GOGC
// off): what a run keeps is bounded by the limits above, not by a
// multiple of what is live, and a run whose heap stays small never pays
// for a collection. Doubling from the 4 MiB the runtime starts at, it
// collected once or twice on a million frames with --workers 2, at
// 5-30% of the run's CPU time (BENCHMARKS.md). A live capture keeps
// GOGC: it runs for long, beside a kernel ring of its own.
func (l limitOptions) apply(files bool) {
	if l.memLimitMiB > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(int64(l.memLimitMiB) << 20)
		if files && os.Getenv("GOGC") == "" {
			debug.SetGCPercent(-1)
		}
	}
}
