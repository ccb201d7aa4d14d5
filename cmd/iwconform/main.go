// Command iwconform runs iwkit's iWARP conformance and fault-injection
// suite against a peer, or serves as an rping-compatible target.
//
//	iwconform [flags] HOST:PORT          dial the target (an rping server)
//	iwconform --listen [flags] [ADDR:]PORT   the target dials us, once per case
//	iwconform --serve [ADDR:]PORT [flags]    run an iwkit rping target
//
// It prints one row per case (id, RFC clause, what was sent, the expected
// reaction, what came back, verdict) as a table, or with --json one JSON
// object per line. Exit status: 0 all cases passed or were skipped, 1 a
// case failed, 2 usage or setup error.
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
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("iwconform", flag.ContinueOnError)
	fs.SetOutput(stderr)
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
	)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: iwconform [flags] HOST:PORT | iwconform --listen [flags] [ADDR:]PORT | iwconform --serve [ADDR:]PORT\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg := endpoint.Config{CRC: *crc, Markers: *markers, PeerToPeer: *p2p, Rev: *rev}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *list {
		for _, c := range conform.Cases() {
			fmt.Fprintf(stdout, "%-34s %-40s %s\n", c.ID, c.Clause, c.Sent)
		}
		return 0
	}
	if *serve != "" {
		addr := *serve
		if !strings.Contains(addr, ":") {
			addr = ":" + addr
		}
		ln, err := endpoint.Listen(ctx, "tcp", addr, &cfg)
		if err != nil {
			fmt.Fprintln(stderr, "iwconform:", err)
			return 2
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
			return 2
		}
		return 0
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	addr := fs.Arg(0)
	if *listen && !strings.Contains(addr, ":") {
		addr = ":" + addr
	}
	o := conform.Options{Addr: addr, Listen: *listen, Config: cfg, Size: *size, Timeout: *timeout, StartDelay: *delay, RFC7306: *rfc7306}
	if *only != "" {
		o.Only = strings.Split(*only, ",")
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	enc := json.NewEncoder(stdout)
	if !*asJSON {
		fmt.Fprintln(tw, "ID\tCLAUSE\tSENT\tEXPECTED\tGOT\tVERDICT")
	}
	failed := false
	rows, err := conform.Run(ctx, o, func(r conform.Row) {
		if r.Verdict == conform.Fail {
			failed = true
		}
		if *asJSON {
			enc.Encode(r)
			return
		}
		v := r.Verdict
		if r.Reason != "" {
			v += " (" + r.Reason + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Clause, r.Sent, r.Expected, r.Got, v)
	})
	if !*asJSON {
		tw.Flush()
	}
	if err != nil {
		fmt.Fprintln(stderr, "iwconform:", err)
		return 2
	}
	if len(rows) == 0 {
		fmt.Fprintln(stderr, "iwconform: no case selected")
		return 2
	}
	if failed {
		return 1
	}
	return 0
}
