// Command iwdump decodes iWARP (MPA, DDP, RDMAP) in capture files, in the
// spirit of tcpdump with tshark's depth. See the README for flags, output
// formats and exit codes.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"

	"github.com/iwkit/iwkit/filter"
	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/reassembly"
)

// Exit codes are a contract (README).
const (
	exitOK       = 0 // the input was read to its end
	exitError    = 1 // usage, I/O error or damaged input
	exitFindings = 2 // --fail-on: a finding of that severity or worse was raised
)

type options struct {
	files      []string
	count      int
	verbose    bool
	hex        bool
	format     string
	numeric    bool
	quiet      bool
	display    string
	ports      []uint16
	stats      []string
	plot       string
	failOn     string
	progress   string
	workers    int
	timeFormat string
	filter     *filter.Filter[*record]
	live       liveOptions // -i, capture filter, -w and their flags (live.go)
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("iwdump", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.Func("r", "read frames from `FILE` (pcap or pcapng, may be gzip-compressed; - for stdin); repeat to merge several files in time order", func(v string) error {
		o.files = append(o.files, v)
		return nil
	})
	fs.IntVar(&o.count, "c", 0, "stop after `N` frames")
	fs.BoolVar(&o.verbose, "V", false, "print the full field tree of every PDU")
	fs.BoolVar(&o.hex, "x", false, "print the PDU's octets in hex")
	fs.BoolVar(&o.numeric, "n", false, "print named values (opcodes, Terminate causes, ...) as numbers")
	fs.BoolVar(&o.quiet, "q", false, "print no PDUs or findings, only the -z tables")
	fs.StringVar(&o.display, "Y", "", "display only PDUs and findings matching the display `filter`, e.g. 'rdmap.opcode == \"RDMA Read Request\" && rdmap.sink_stag == 0x1234'")
	fs.Func("decode-as", "treat TCP `PORT` as iWARP even where content detection hesitates (repeatable)", func(v string) error {
		p, err := strconv.ParseUint(v, 10, 16)
		if err != nil {
			return fmt.Errorf("bad port %q", v)
		}
		o.ports = append(o.ports, uint16(p))
		return nil
	})
	fs.Func("z", "print statistics `STAT` at the end: conv, ops, findings, latency (repeatable)", func(v string) error {
		for _, s := range strings.Split(v, ",") {
			if !validStat(s) {
				return fmt.Errorf("unknown statistic %q (want one of %s)", s, strings.Join(statNames, ", "))
			}
			o.stats = append(o.stats, s)
		}
		return nil
	})
	fs.StringVar(&o.plot, "plot", "", "draw an I/O graph and the read-latency distribution to `FILE` (.svg or .png)")
	fs.StringVar(&o.failOn, "fail-on", "", "exit with status 2 when a finding of `SEVERITY` (error, warning, note) or worse was raised")
	fs.StringVar(&o.progress, "progress", "auto", "progress bar on stderr: auto (large files, stderr a terminal), always, never")
	fs.IntVar(&o.workers, "workers", 0, "reassemble and decode on `N` goroutines, flows sharded by their addresses (0: one per core, up to 4, for files of 64 MiB or more; 1 otherwise); the output does not depend on N")
	fs.StringVar(&o.timeFormat, "t", "r", "time `format` of text lines: r (seconds since the first frame), a (time of day, UTC), ad (date and time, UTC), e (seconds since the epoch)")
	fs.StringVar(&o.format, "T", "text", "output `format`: text or json (NDJSON, one object per PDU or finding)")
	liveFlags(fs, &o) // live.go
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: iwdump {-r FILE [-r FILE]... | -i IFACE [-w FILE]} [-c N] [-n] [-q] [-V] [-x] [-t r|a|ad|e] [-Y FILTER] [-T text|json] [-z STAT] [--plot FILE] [--fail-on SEVERITY] [--workers N] [capture filter]\n")
		fs.PrintDefaults()
	}
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile to `FILE` (for performance work)")
	if err := fs.Parse(args); err != nil {
		return exitError
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
		return exitError
	}
	// The arguments after the flags are a capture filter (live.go).
	if code, done := liveSetup(&o, fs.Args(), stdout, stderr); done {
		return code
	}
	switch {
	case len(o.files) == 0 && o.live.iface == "":
		return usage("no input: give -r FILE or -i IFACE")
	case o.format != "text" && o.format != "json":
		return usage(fmt.Sprintf("unknown output format %q", o.format))
	case o.failOn != "" && severityRank(o.failOn) < 0:
		return usage(fmt.Sprintf("--fail-on takes error, warning or note, not %q", o.failOn))
	case o.progress != "auto" && o.progress != "always" && o.progress != "never":
		return usage(fmt.Sprintf("--progress takes auto, always or never, not %q", o.progress))
	case !slices.Contains(timeFormats, o.timeFormat):
		return usage(fmt.Sprintf("-t takes %s, not %q", strings.Join(timeFormats, ", "), o.timeFormat))
	case o.workers < 0 || o.workers > maxWorkers:
		return usage(fmt.Sprintf("--workers takes 0 to %d, not %d", maxWorkers, o.workers))
	case o.plot != "" && !strings.HasSuffix(o.plot, ".svg") && !strings.HasSuffix(o.plot, ".png"):
		return usage("--plot FILE must end in .svg or .png")
	}
	if o.display != "" {
		f, err := filter.Compile(o.display, resolveField)
		if err != nil {
			fmt.Fprintf(stderr, "iwdump: -Y: %v\n", err)
			return exitError
		}
		o.filter = f
	}
	src, total, err := openInput(&o, stderr) // files or -i, capture filter, -w (live.go)
	if err != nil {
		fmt.Fprintf(stderr, "iwdump: %v\n", err)
		return exitError
	}
	defer src.Close()
	w := bufio.NewWriterSize(stdout, 1<<16)
	defer w.Flush()
	o.live.out = w // flushed while a live capture is idle
	prog := newProgress(stderr, o.progress, total)
	var (
		rep   *report
		plt   *plots
		worst int
		derr  error
	)
	if n := workersFor(&o, total); n > 1 {
		rep, plt, worst, derr = dumpSharded(src, &o, n, prog, w)
	} else {
		out := &printer{w: w, o: &o, worst: -1}
		h := newHandler(out)
		derr = dump(src, h, &o, prog)
		rep, plt = h.report(), &h.plots
		worst = out.worst
	}
	prog.finish()
	if derr != nil {
		// Everything before the damage is printed first.
		w.Flush()
		fmt.Fprintf(stderr, "iwdump: %v\n", derr)
	}
	rep.live = captureReport(src) // ends a live capture: its statistics
	for _, s := range o.stats {
		rep.write(w, s)
	}
	if o.plot != "" {
		if err := plt.write(o.plot); err != nil {
			fmt.Fprintf(stderr, "iwdump: --plot: %v\n", err)
			return exitError
		}
	}
	if derr != nil {
		return exitError
	}
	if o.failOn != "" && worst >= severityRank(o.failOn) {
		return exitFindings
	}
	return exitOK
}

// workersFor picks the number of shards: --workers, or by default one per
// core (up to 4) for files large enough to gain from it. A live capture
// has its own pipeline (live.go) and stays on one.
func workersFor(o *options, total int64) int {
	switch {
	case o.live.iface != "":
		return 1
	case o.workers > 0:
		return o.workers
	case total >= 64<<20:
		return min(runtime.GOMAXPROCS(0), 4)
	}
	return 1
}

// severityRank orders severities: note 0, warning 1, error 2; -1 unknown.
func severityRank(s string) int {
	if v, ok := finding.ParseSeverity(s); ok {
		return int(v)
	}
	return -1
}

// dump feeds every frame through the reassembler and the tracker.
func dump(src frameSource, h *handler, o *options, prog *progress) error {
	a := reassembly.New(reassembly.Config{Ports: o.ports}, h)
	h.asm = a
	var fr pcap.Frame
	defer func() {
		a.Flush()
		h.t.Finish()
	}()
	for n := 0; o.count == 0 || n < o.count; n++ {
		err := src.Next(&fr)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		prog.add(fr.CapLen + 16)
		h.frame(&fr)
		if err := a.FeedFrame(&fr); err != nil {
			h.undecodable(&fr, err)
		}
	}
	return nil
}
