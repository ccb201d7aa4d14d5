// Command iwgen writes synthetic iWARP captures: a built-in scenario or a
// scenario file (JSON or YAML, see package gen) goes through MPA, DDP and
// RDMAP framing, TCP segmentation and impairments into a pcap or pcapng
// file, with the ground truth as JSON on request. Output is deterministic for
// a seed. Run iwgen -h for the flags.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/internal/exitcode"
	"github.com/iwkit/iwkit/pcap"
)

// Exit codes (docs/exit-status.md, the same in every command): 0
// success (and -h), 1 an error, 2 a usage mistake.
const (
	exitOK    = exitcode.OK
	exitError = exitcode.Failure
	exitUsage = exitcode.Usage
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	builtin, file, out, truth, print string
	list, quiet                      bool
	progress                         string
	seed                             uint64
	count, conns                     int
	msgSize, size, rate              sizeFlag
	mss, snaplen                     int
	packing                          string
	crc, markers, timestamps         boolFlag
	mpaRev                           int
	rates                            gen.Rates
}

// sizeFlag is a gen.Size flag ("64KiB", "2GB").
type sizeFlag struct {
	v   gen.Size
	set bool
}

func (s *sizeFlag) String() string { return fmt.Sprint(int64(s.v)) }
func (s *sizeFlag) Set(v string) error {
	n, err := gen.ParseSize(v)
	if err != nil {
		return err
	}
	s.v, s.set = n, true
	return nil
}

// boolFlag is a tri-state bool: unset leaves the scenario's value.
type boolFlag struct {
	v, set bool
}

func (b *boolFlag) String() string   { return fmt.Sprint(b.v) }
func (b *boolFlag) IsBoolFlag() bool { return true }
func (b *boolFlag) Set(v string) error {
	switch strings.ToLower(v) {
	case "true", "1", "on", "yes":
		b.v = true
	case "false", "0", "off", "no":
		b.v = false
	default:
		return fmt.Errorf("want true or false")
	}
	b.set = true
	return nil
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("iwgen", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.builtin, "s", "rping", "built-in scenario `NAME` (see -list)")
	fs.StringVar(&o.file, "scenario", "", "read the scenario from `FILE` (.json, .yaml, .yml) instead of a built-in")
	fs.BoolVar(&o.list, "list", false, "list the built-in scenarios and exit")
	fs.StringVar(&o.print, "print", "", "print the effective scenario as `yaml` or json and exit (a starting point for a scenario file)")
	fs.StringVar(&o.out, "w", "", "write the capture to `FILE` (.pcapng: pcapng, else pcap; - for stdout)")
	fs.StringVar(&o.truth, "truth", "", "write the ground truth (FPDUs, impairments, findings) as JSON to `FILE`")
	fs.Uint64Var(&o.seed, "seed", 1, "`seed` for ISNs, STags, payloads and random impairments")
	fs.IntVar(&o.count, "count", 0, "operations per connection (rping: pings; scenario file: repetitions of the ops)")
	fs.IntVar(&o.conns, "conns", 0, "connections (built-ins only)")
	fs.Var(&o.msgSize, "msgsize", "message `size` of a built-in (e.g. 64KiB)")
	fs.Var(&o.size, "size", "repeat the operations until the capture holds `SIZE` octets (e.g. 4GiB), then close")
	fs.Var(&o.rate, "rate", "link `rate` in bit/s that spaces the timestamps (e.g. 25G; default 10G)")
	fs.IntVar(&o.mss, "mss", 0, "TCP MSS of every connection (default: the scenario's, 1460 for IPv4)")
	fs.IntVar(&o.snaplen, "snaplen", 0, "cut every frame to `N` octets")
	fs.StringVar(&o.packing, "packing", "", "FPDUs per TCP segment on every connection: one, pack or stream")
	fs.Var(&o.crc, "crc", "MPA CRC on or off on every connection")
	fs.Var(&o.markers, "markers", "MPA markers on or off, both directions, on every connection")
	fs.Var(&o.timestamps, "timestamps", "TCP timestamps on or off on every connection")
	fs.IntVar(&o.mpaRev, "mpa-rev", -1, "MPA revision (0, 1, 2) on every connection")
	fs.Float64Var(&o.rates.Drop, "drop", 0, "probability per data segment that the capture misses it")
	fs.Float64Var(&o.rates.Reorder, "reorder", 0, "probability per data segment of being sent after the next one")
	fs.Float64Var(&o.rates.Duplicate, "dup", 0, "probability per data segment of being duplicated")
	fs.Float64Var(&o.rates.Retransmit, "retrans", 0, "probability per data segment of a later retransmission")
	fs.Float64Var(&o.rates.RetransmitDiff, "retrans-diff", 0, "probability per data segment of a retransmission with different octets")
	fs.Float64Var(&o.rates.CorruptCRC, "corrupt-crc", 0, "probability per FPDU of a bad CRC")
	fs.Float64Var(&o.rates.CorruptHeader, "corrupt-hdr", 0, "probability per message of a bad header field (MSN, QN, DV, RV)")
	fs.StringVar(&o.progress, "progress", "auto", "progress bar on stderr: auto (when writing a file and stderr is a terminal), always, never")
	fs.BoolVar(&o.quiet, "q", false, "print no summary")
	doc.Setup(fs, stderr) // -h, --help, --version (doc.go)
	if code, done := doc.Done(fs, fs.Parse(args), stdout); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "iwgen: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if o.list {
		for _, b := range gen.Builtins() {
			fmt.Fprintf(stdout, "%-16s %s\n", b[0], b[1])
		}
		return exitOK
	}
	sc, err := scenario(&o)
	if err != nil {
		fmt.Fprintf(stderr, "iwgen: %v\n", err)
		if o.file != "" {
			return exitError // the scenario file: unreadable or damaged
		}
		return exitUsage // the flags
	}
	switch o.print {
	case "":
	case "yaml":
		if err := sc.WriteYAML(stdout); err != nil {
			fmt.Fprintf(stderr, "iwgen: %v\n", err)
			return exitError
		}
		return exitOK
	case "json":
		if err := sc.WriteJSON(stdout); err != nil {
			fmt.Fprintf(stderr, "iwgen: %v\n", err)
			return exitError
		}
		return exitOK
	default:
		fmt.Fprintf(stderr, "iwgen: -print %q: want yaml or json\n", o.print)
		return exitUsage
	}
	if o.out == "" {
		fmt.Fprintln(stderr, "iwgen: -w FILE is required (try -h)")
		return exitUsage
	}
	st, elapsed, err := generate(sc, &o, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "iwgen: %v\n", err)
		return exitError
	}
	for _, u := range st.Unapplied {
		fmt.Fprintf(stderr, "iwgen: warning: %s\n", u)
	}
	if !o.quiet {
		secs := elapsed.Seconds()
		fmt.Fprintf(stderr, "iwgen: %s: %d frames, %d octets, %d FPDUs, %d impairments in %.2fs (%.0f frames/s, %.1f MB/s)\n",
			sc.Name, st.Frames, st.Octets, st.FPDUs, st.Impairments, secs, float64(st.Frames)/secs, float64(st.Octets)/secs/1e6)
	}
	return exitOK
}

// scenario builds the scenario from a file or a built-in and applies the
// flags that override it.
func scenario(o *options) (*gen.Scenario, error) {
	var sc *gen.Scenario
	var err error
	if o.file != "" {
		if o.conns != 0 || o.msgSize.set {
			return nil, fmt.Errorf("-conns and -msgsize apply to built-in scenarios only")
		}
		if sc, err = gen.Load(o.file); err != nil {
			return nil, err
		}
		sc.Seed = o.seed
		if o.count > 0 {
			sc.Repeat = o.count
		}
		if o.size.set {
			sc.MaxBytes = o.size.v
		}
	} else {
		p := gen.Params{Seed: o.seed, Count: o.count, Conns: o.conns, Size: int64(o.msgSize.v), MaxBytes: int64(o.size.v)}
		if sc, err = gen.Builtin(o.builtin, p); err != nil {
			return nil, err
		}
	}
	if o.rate.set {
		sc.LinkRate = o.rate.v
	}
	if o.snaplen > 0 {
		sc.Snaplen = o.snaplen
	}
	if o.rates != (gen.Rates{}) {
		sc.Rates = o.rates
	}
	for i := range sc.Connections {
		c := &sc.Connections[i]
		if o.mss > 0 {
			c.MSS = o.mss
		}
		if o.packing != "" {
			c.Packing = o.packing
		}
		if o.crc.set {
			c.MPA.CRC = o.crc.v
		}
		if o.markers.set {
			c.MPA.MarkersI2R, c.MPA.MarkersR2I = o.markers.v, o.markers.v
		}
		if o.timestamps.set {
			c.Timestamps = o.timestamps.v
		}
		if o.mpaRev >= 0 {
			rev := o.mpaRev
			c.MPA.Rev = &rev
		}
	}
	return sc, sc.Validate()
}

// generate writes the capture (and truth) and reports the run.
func generate(sc *gen.Scenario, o *options, stdout, stderr io.Writer) (gen.Stats, time.Duration, error) {
	var w io.Writer = stdout
	var f *os.File
	if o.out != "-" {
		var err error
		if f, err = os.Create(o.out); err != nil {
			return gen.Stats{}, 0, err
		}
		defer f.Close()
		w = f
	}
	snap := uint32(0)
	if sc.Snaplen > 0 {
		snap = uint32(sc.Snaplen)
	}
	pw, err := pcap.NewWriter(w, pcap.FormatForName(o.out), layers.LinkTypeEthernet, snap)
	if err != nil {
		return gen.Stats{}, 0, err
	}
	opts := &gen.Options{}
	if o.truth != "" {
		tf, err := os.Create(o.truth)
		if err != nil {
			return gen.Stats{}, 0, err
		}
		defer tf.Close()
		tw, err := gen.NewJSONTruthWriter(tf)
		if err != nil {
			return gen.Stats{}, 0, err
		}
		defer tw.Close()
		opts.Truth = tw
	}
	var bar *progressbar.ProgressBar
	if showProgress(o, stderr) {
		total := int64(sc.MaxBytes)
		if total == 0 {
			total = -1
		}
		bar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription("writing "+o.out),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionShowCount(),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(stderr) }))
		opts.ProgressEvery = 4 << 20
		opts.Progress = func(s gen.Stats) { bar.Set64(s.Octets) }
	}
	start := time.Now()
	st, err := gen.Run(sc, pw, opts)
	if ferr := pw.Flush(); err == nil {
		err = ferr
	}
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if bar != nil {
		bar.Finish()
	}
	return st, time.Since(start), err
}

// showProgress decides on the progress bar: only for a file, and by
// default only when stderr is a terminal.
func showProgress(o *options, stderr io.Writer) bool {
	switch o.progress {
	case "never":
		return false
	case "always":
		return o.out != "-"
	}
	if o.out == "-" {
		return false
	}
	f, ok := stderr.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
