// Command iwconform runs iwkit's iWARP conformance and fault-injection
// suite against a peer, or serves as an rping-compatible target.
//
//	iwconform [flags] HOST:PORT          dial the target (an rping server)
//	iwconform --listen [flags] [ADDR:]PORT   the target dials us, once per case
//	iwconform --serve [ADDR:]PORT [flags]    run an iwkit rping target
//	iwconform --fuzz DIR [flags] HOST:PORT    wire-fuzz the target (endpoint/wirefuzz)
//	iwconform --replay CASE HOST:PORT        replay a case the fuzzer wrote
//
// It prints one row per case (id, RFC clause, what was sent, the expected
// reaction, what came back, verdict, seconds) as a table and a summary
// line, or with --json one JSON object per case and line and a summary
// object last; --junit FILE also writes JUnit XML for CI. Verdicts: pass,
// fail, skip, error (the case could not run: no connection), not-run (the
// target died earlier). Exit status (package exitcode, one table for
// every command): 0 all cases passed or were skipped, 1 a case failed,
// errored or was not run, or the run could not start (cannot listen, the
// JUnit file cannot be written), 2 usage (a bad flag or argument, --run
// naming no case).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/iwkit/iwkit/endpoint"
	"github.com/iwkit/iwkit/endpoint/conform"
	"github.com/iwkit/iwkit/endpoint/rping"
	"github.com/iwkit/iwkit/internal/exitcode"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("iwconform", flag.ContinueOnError)
	var (
		serve   = fs.String("serve", "", "run an rping-compatible iwkit target on `[ADDR:]PORT` until interrupted")
		listen  = fs.Bool("listen", false, "listen on the address instead of dialing: the target connects once per case")
		asJSON  = fs.Bool("json", false, "one JSON object per case and line instead of the table")
		crc     = fs.Bool("crc", false, "ask for MPA CRCs (needed by the mpa-crc cases)")
		markers = fs.Bool("markers", false, "ask the peer for MPA markers")
		p2p     = fs.Bool("p2p", false, "RFC 6581 peer-to-peer model (needed by mpa-rtr-missing)")
		rev     = fs.Int("mpa-rev", 2, "MPA revision of our frame: 1, 2, or 129 (Alibaba erdma's non-RFC MPA)")
		size    = fs.Int("size", 64, "rping buffer size to advertise (at most the target's rping -S)")
		timeout = fs.Duration("timeout", 5*time.Second, "wait at most this long for each case's reaction")
		delay   = fs.Duration("start-delay", 0, "wait this long after each MPA exchange before the first FPDU")
		only    = fs.String("run", "", "comma-separated case id prefixes to run (default all)")
		list    = fs.Bool("list", false, "list the cases and exit")
		verbose = fs.Bool("v", false, "--serve: log each connection")
		rfc7306 = fs.Bool("rfc7306", false, "the target supports RFC 7306 atomics (the atomic cases check its answers, not its refusal); --serve: the target does")
		junit   = fs.String("junit", "", "also write the results as JUnit XML to `FILE` (for CI)")
		repeat  = fs.Int("repeat", 1, "run the selected cases `N` times (an intermittent target); rows carry run")
		pcapDir = fs.String("pcap-dir", "", "write each case's traffic to `DIR`/ID.pcap (ID-RUN.pcap with --repeat; not with --listen)")
		fz      fuzzFlags
	)
	fs.StringVar(&fz.dir, "fuzz", "", "wire-fuzz the target, checking its liveness after every input; record in `DIR` (log.ndjson, inputs/*.pcap, case.json and case.pcap when it dies)")
	fs.StringVar(&fz.replay, "replay", "", "play the fuzzer's `CASE` file against the target (exit 1 if it dies); with --fuzz DIR, record DIR/replay.pcap")
	fs.IntVar(&fz.inputs, "fuzz-inputs", 0, "--fuzz: stop after `N` inputs (0: no limit)")
	fs.DurationVar(&fz.dur, "fuzz-time", 0, "--fuzz: stop after this long (0: no limit)")
	fs.Int64Var(&fz.seed, "seed", 0, "--fuzz: the input generator's seed (0: from the clock)")
	fs.StringVar(&fz.restart, "restart-cmd", "", "--fuzz: shell `CMD` that restarts a dead target while minimising (its last output line, if HOST:PORT, is the new address)")
	doc.Setup(fs, stderr) // -h, --help, --version (doc.go)
	if code, done := doc.Done(fs, fs.Parse(args), stdout); done {
		return code
	}
	if *repeat < 1 {
		fmt.Fprintln(stderr, "iwconform: --repeat takes a count of 1 or more")
		return exitcode.Usage
	}
	cfg := endpoint.Config{CRC: *crc, Markers: *markers, PeerToPeer: *p2p, Rev: *rev}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *list {
		for _, c := range conform.Cases() {
			fmt.Fprintf(stdout, "%-34s %-40s %s\n", c.ID, c.Clause, c.Sent)
		}
		return exitcode.OK
	}
	if *serve != "" {
		addr := *serve
		if !strings.Contains(addr, ":") {
			addr = ":" + addr
		}
		ln, err := endpoint.Listen(ctx, "tcp", addr, &cfg)
		if err != nil {
			fmt.Fprintln(stderr, "iwconform:", err)
			return exitcode.Failure
		}
		defer ln.Close()
		fmt.Fprintf(stderr, "iwconform: rping target on %v\n", ln.Addr())
		var logf func(string, ...any)
		if *verbose {
			logf = func(f string, a ...any) { fmt.Fprintf(stderr, f+"\n", a...) }
		}
		go func() { <-ctx.Done(); ln.Close() }()
		if err := conform.Serve(ctx, ln, rping.Options{Config: cfg, Size: *size, RFC7306: *rfc7306}, logf); err != nil && ctx.Err() == nil {
			fmt.Fprintln(stderr, "iwconform:", err)
			return exitcode.Failure
		}
		return exitcode.OK
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitcode.Usage
	}
	addr := fs.Arg(0)
	if fz.dir != "" || fz.replay != "" {
		fz.crc, fz.timeout = *crc, *timeout
		return runFuzz(ctx, fz, addr, stdout, stderr)
	}
	if *listen && !strings.Contains(addr, ":") {
		addr = ":" + addr
	}
	o := conform.Options{Addr: addr, Listen: *listen, Config: cfg, Size: *size, Timeout: *timeout, StartDelay: *delay, RFC7306: *rfc7306,
		PcapDir: *pcapDir}
	if *repeat > 1 {
		o.Repeat = *repeat
	}
	if *only != "" {
		o.Only = strings.Split(*only, ",")
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	enc := json.NewEncoder(stdout)
	if !*asJSON {
		fmt.Fprintln(tw, "ID\tCLAUSE\tSENT\tEXPECTED\tGOT\tVERDICT\tSECONDS")
	}
	rows, err := conform.Run(ctx, o, func(r conform.Row) {
		if *asJSON {
			enc.Encode(r)
			return
		}
		id := r.ID
		if r.Run > 0 {
			id = fmt.Sprintf("%s#%d", r.ID, r.Run)
		}
		v := r.Verdict
		if r.Reason != "" {
			v += " (" + r.Reason + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.3f\n", id, r.Clause, r.Sent, r.Expected, r.Got, v, r.Seconds)
	})
	sum := conform.Summarize(rows)
	if *asJSON {
		enc.Encode(struct {
			Summary conform.Summary `json:"summary"`
		}{sum})
	} else {
		tw.Flush()
		fmt.Fprintln(stdout, sum)
	}
	if *junit != "" && len(rows) > 0 {
		if jerr := writeJUnit(*junit, addr, rows); jerr != nil {
			fmt.Fprintln(stderr, "iwconform:", jerr)
			return exitcode.Failure
		}
	}
	if err != nil { // cannot listen (--listen)
		fmt.Fprintln(stderr, "iwconform:", err)
		return exitcode.Failure
	}
	switch {
	case len(rows) == 0: // --run named no case
		fmt.Fprintln(stderr, "iwconform: no case selected")
		return exitcode.Usage
	case sum.Fail > 0 || sum.Error > 0 || sum.NotRun > 0:
		return exitcode.Failure
	}
	return exitcode.OK
}

func writeJUnit(path, target string, rows []conform.Row) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := conform.WriteJUnit(f, "iwconform "+target, rows); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
