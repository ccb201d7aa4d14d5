// Command iwreplay sends the frames of a capture onto a network interface
// with tcpreplay's habits and its closing report:
//
//	iwreplay -i IFACE [--pps N | --mbps N | --multiplier X | --topspeed]
//	         [--loop N] [--limit N] [--duration S] [--preload] [--stats S] FILE
//
// Stateless: the frames go out as captured (pure-Go AF_PACKET, no libpcap).
// Stateful replay against a live peer (--connect/--listen) is not built yet.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

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
		stateIO string
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
	str(&stateIO, []string{"connect", "listen"}, "stateful replay against a live peer (not built yet)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: iwreplay -i IFACE [--pps N | --mbps N | --multiplier X | --topspeed] [--loop N] [--limit N] [--duration S] [--preload] [--stats S] FILE")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if stateIO != "" {
		fmt.Fprintln(stderr, "iwreplay: stateful replay (--connect/--listen) is not built yet")
		return 2
	}
	if iface == "" || fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	if o.Loop <= 0 {
		fmt.Fprintln(stderr, "iwreplay: --loop must be at least 1")
		return 2
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
		return 2
	}
	sink, err := replay.OpenInterface(iface)
	if err != nil {
		fmt.Fprintln(stderr, "iwreplay:", err)
		return 1
	}
	defer sink.Close()
	st, err := replay.File(fs.Arg(0), sink, o)
	st.Report(stdout)
	if err != nil {
		fmt.Fprintln(stderr, "iwreplay:", err)
		return 1
	}
	if st.Failed > 0 {
		return 1
	}
	return 0
}
