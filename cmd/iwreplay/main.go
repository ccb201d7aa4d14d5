// Command iwreplay sends the frames of a capture onto a network interface
// with tcpreplay's habits and its closing report:
//
//	iwreplay -i IFACE [--pps N | --mbps N | --multiplier X | --topspeed]
//	         [--loop N] [--limit N] [--duration S] [--preload] [--stats S] FILE
//
// Stateless: the frames go out as captured (pure-Go AF_PACKET, no libpcap).
//
// Stateful: one side of the capture's iWARP connections is played through
// the iwkit endpoint against a live peer, and what the peer does is
// compared with the capture:
//
//	iwreplay --connect HOST:PORT [--conn N] [--decode-as PORT[=proto]] [--multiplier X | --topspeed] [--json] FILE
//	iwreplay --listen [ADDR:]PORT [--conn N] [--decode-as PORT[=proto]] [--multiplier X | --topspeed] [--json] FILE
//
// The capture is read through package capture, as iwdump and iwtui read
// it: -r FILE (or FILE after the flags) and --decode-as.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/capture"
	"github.com/iwkit/iwkit/endpoint"
	"github.com/iwkit/iwkit/internal/exitcode"
	"github.com/iwkit/iwkit/replay"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("iwreplay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		o       replay.Options
		iface   string
		dur     float64
		stats   int
		limit   uint64
		connect string
		listen  string
		conn    int
		assume  string
		asJSON  bool
		timeout float64
		mask    string
		pcapOut string
	)
	str := func(p *string, names []string, usage string) {
		for i, n := range names {
			u := usage
			if i > 0 {
				u = "same as -" + names[0]
			}
			fs.StringVar(p, n, "", u)
		}
	}
	f64 := func(p *float64, names []string, usage string) {
		for i, n := range names {
			u := usage
			if i > 0 {
				u = "same as -" + names[0]
			}
			fs.Float64Var(p, n, 0, u)
		}
	}
	boolean := func(p *bool, names []string, usage string) {
		for i, n := range names {
			u := usage
			if i > 0 {
				u = "same as -" + names[0]
			}
			fs.BoolVar(p, n, false, u)
		}
	}
	str(&iface, []string{"i", "intf1"}, "send onto this `interface`")
	f64(&o.PPS, []string{"pps", "p"}, "send this many packets per second")
	f64(&o.Mbps, []string{"mbps", "M"}, "send at this many megabits (10^6) per second")
	f64(&o.Multiplier, []string{"multiplier", "x"}, "replay the capture's timing this many times faster (default 1)")
	boolean(&o.Topspeed, []string{"topspeed", "t"}, "send as fast as the interface takes the frames")
	fs.IntVar(&o.Loop, "loop", 1, "replay the file this many times")
	fs.IntVar(&o.Loop, "l", 1, "same as -loop")
	fs.Uint64Var(&limit, "limit", 0, "send at most this many packets (0: all)")
	fs.Uint64Var(&limit, "L", 0, "same as -limit")
	fs.Float64Var(&dur, "duration", 0, "stop after this many `seconds`")
	boolean(&o.Preload, []string{"preload", "preload-pcap", "K"}, "read the file into memory before sending")
	fs.IntVar(&stats, "stats", 0, "print statistics every this many `seconds`")
	fs.StringVar(&connect, "connect", "", "stateful: play the MPA Initiator's side against the responder at `HOST:PORT`")
	fs.StringVar(&listen, "listen", "", "stateful: play the Responder's side for an initiator connecting to `[ADDR:]PORT`")
	fs.IntVar(&conn, "conn", 0, "stateful: replay connection `N` of the capture only (default: all, together)")
	fs.StringVar(&assume, "assume", "", "stateful: MPA parameters of connections without a captured handshake: crc,markers,rev=N,ird=N,ord=N")
	fs.BoolVar(&asJSON, "json", false, "stateful: the report as JSON objects, one per difference, the summary last")
	fs.Float64Var(&timeout, "timeout", 10, "stateful: wait at most this many `seconds` for each thing the peer should do")
	fs.StringVar(&mask, "mask", "", "stateful: leave uncompared the fields that differ every run, by `RULES` (comma-separated; perftest)")
	fs.StringVar(&pcapOut, "pcap", "", "stateful: write what was played and what the peer sent to `FILE` (pcap)")
	var in capture.Options
	in.Register(fs, capture.Read|capture.DecodeAs) // -r FILE, or FILE after the flags; --decode-as for stateful replay
	doc.Setup(fs, stderr)                          // -h, --help, --version (doc.go)
	if code, done := doc.Done(fs, fs.Parse(args), stdout); done {
		return code
	}
	if len(in.Files) == 0 {
		in.Files = fs.Args()
	} else if fs.NArg() > 0 {
		in.Files = nil // both -r and FILE: the usage below
	}
	if _, err := in.Finish(nil, stdout); err != nil {
		fmt.Fprintln(stderr, "iwreplay:", err)
		if capture.IsUsage(err) {
			fs.Usage()
			return exitcode.Usage
		}
		return exitcode.Failure
	}
	if len(in.Files) != 1 {
		fs.Usage()
		return exitcode.Usage
	}
	if connect != "" || listen != "" {
		return stateful(stdout, stderr, statefulArgs{file: in.Files[0], connect: connect, listen: listen, conn: conn, assume: assume,
			json: asJSON, timeout: timeout, iface: iface, o: o, limit: limit, dur: dur, stats: stats, mask: mask, pcap: pcapOut, in: &in})
	}
	if iface == "" {
		fs.Usage()
		return exitcode.Usage
	}
	if len(in.Ports) > 0 {
		fmt.Fprintln(stderr, "iwreplay: --decode-as is for stateful replay (--connect, --listen): stateless replay sends the frames as captured")
		return exitcode.Usage
	}
	if o.Loop <= 0 {
		fmt.Fprintln(stderr, "iwreplay: --loop must be at least 1")
		return exitcode.Usage
	}
	o.Limit = limit
	o.Duration = time.Duration(dur * float64(time.Second))
	if stats > 0 {
		o.Stats, o.StatsOut = time.Duration(stats)*time.Second, stdout
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	o.Stop = ctx.Done()
	if _, err := replay.NewPacer(o); err != nil {
		fmt.Fprintln(stderr, "iwreplay:", err)
		return exitcode.Usage
	}
	sink, err := replay.OpenInterface(iface)
	if err != nil {
		fmt.Fprintln(stderr, "iwreplay:", err)
		return exitcode.Failure
	}
	defer sink.Close()
	st, err := replay.File(in.Files[0], sink, o)
	st.Report(stdout)
	if err != nil {
		fmt.Fprintln(stderr, "iwreplay:", err)
		return exitcode.Failure
	}
	if st.Failed > 0 {
		return exitcode.Failure
	}
	return exitcode.OK
}

type statefulArgs struct {
	file, connect, listen, assume, iface string
	mask, pcap                           string
	conn                                 int
	json                                 bool
	timeout, dur                         float64
	o                                    replay.Options
	limit                                uint64
	stats                                int
	in                                   *capture.Options
}

// stateful wires --connect/--listen to replay.Stateful.
func stateful(stdout, stderr io.Writer, a statefulArgs) int {
	usage := func(msg string) int {
		fmt.Fprintln(stderr, "iwreplay:", msg)
		return exitcode.Usage
	}
	switch {
	case a.connect != "" && a.listen != "":
		return usage("give --connect or --listen, not both")
	case a.iface != "" || a.o.PPS > 0 || a.o.Mbps > 0 || a.o.Loop != 1 || a.limit > 0 || a.dur > 0 || a.o.Preload || a.stats > 0:
		return usage("-i, --pps, --mbps, --loop, --limit, --duration, --preload and --stats are for stateless replay, not with --connect/--listen")
	case a.o.Topspeed && a.o.Multiplier > 0 && a.o.Multiplier != 1:
		return usage("give at most one of --multiplier, --topspeed")
	case a.o.Multiplier < 0 || a.timeout <= 0 || a.conn < 0:
		return usage("--multiplier, --timeout and --conn must be positive")
	}
	var as *replay.Assume
	if a.assume != "" {
		var err error
		if as, err = replay.ParseAssume(a.assume); err != nil {
			return usage(err.Error())
		}
	}
	o := replay.StatefulOptions{Side: replay.Initiator, Addr: a.connect, Multiplier: a.o.Multiplier, Topspeed: a.o.Topspeed,
		Timeout: time.Duration(a.timeout * float64(time.Second))}
	var err error
	if a.listen != "" {
		o.Side, o.Addr = replay.Responder, a.listen
		if !strings.Contains(a.listen, ":") {
			o.Addr = ":" + a.listen
		}
		o.Ready = func(addr net.Addr) { fmt.Fprintf(stderr, "iwreplay: listening on %v\n", addr) }
	}
	if o.Mask, err = replay.ParseMasks(a.mask); err != nil {
		return usage(err.Error())
	}
	if a.pcap != "" {
		var done func() error
		if o.Capture, done, err = endpoint.CreateCapture(a.pcap); err != nil {
			fmt.Fprintln(stderr, "iwreplay:", err)
			return exitcode.Failure
		}
		defer done()
	}
	s, err := replay.LoadScriptWith(a.file, a.conn, as, analyze.Config{Ports: a.in.Ports, DecodeAs: a.in.DecodeAs})
	if err != nil {
		fmt.Fprintln(stderr, "iwreplay:", err)
		return exitcode.Failure
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := replay.Stateful(ctx, s, o)
	if res != nil {
		res.Report(stdout, a.json)
	}
	if err != nil {
		fmt.Fprintln(stderr, "iwreplay:", err)
		return exitcode.Failure
	}
	if len(res.Differences) > 0 {
		return exitcode.Failure
	}
	return exitcode.OK
}
