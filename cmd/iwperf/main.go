// Command iwperf measures RDMA bandwidth and latency over iwkit's soft-iWARP
// endpoint, perftest style, and speaks rdma-core's rping exchange.
//
//	iwperf -s [-a ADDR] [-p PORT] [-P] [-t rping]             server
//	iwperf -c HOST [-p PORT] [-t TEST] [-S SIZE] [-n N | -D DUR] client
//
// TEST is write_bw, send_bw, read_bw, write_lat, send_lat, read_lat or rping.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/iwkit/iwkit/endpoint"
	"github.com/iwkit/iwkit/endpoint/perf"
	"github.com/iwkit/iwkit/endpoint/rping"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("iwperf", flag.ContinueOnError)
	var (
		server     = fs.Bool("s", false, "run as server")
		client     = fs.String("c", "", "run as client, connecting to `HOST`")
		addr       = fs.String("a", "", "server: address to listen on (default all)")
		port       = fs.Int("p", 7174, "TCP port")
		test       = fs.String("t", "write_bw", "test: "+strings.Join(perf.Tests, ", ")+", or rping")
		size       = fs.Int("S", -1, "message size in octets (default 65536; rping: 64)")
		iters      = fs.Int("n", 0, "iterations (default 1000; rping: -C)")
		count      = fs.Int("C", 10, "rping: number of pings")
		dur        = fs.Duration("D", 0, "run for this long instead of -n iterations")
		depth      = fs.Int("q", 64, "bandwidth tests: work requests outstanding")
		persistent = fs.Bool("P", false, "server: keep serving clients one after another")
		validate   = fs.Bool("V", false, "rping: verify the data of every ping")
		verbose    = fs.Bool("v", false, "rping: print the data of every ping")
		crc        = fs.Bool("crc", false, "ask for MPA CRCs (used anyway when the peer asks)")
		markers    = fs.Bool("markers", false, "ask the peer to insert MPA markers in what it sends")
		rev        = fs.Int("mpa-rev", 2, "MPA revision of our frame: 1 or 2")
		p2p        = fs.Bool("p2p", false, "RFC 6581 peer-to-peer mode with an RTR message")
		rtr        = fs.String("rtr", "write,read,send", "RTR types we can send (client) or accept (server)")
		ird        = fs.Int("ird", 0, "QP IRD (default: per test)")
		ord        = fs.Int("ord", 0, "QP ORD (default: per test)")
		mulpdu     = fs.Int("mulpdu", 0, "largest ULPDU to send (default: from the TCP MSS)")
		pcapFile   = fs.String("pcap", "", "write this side's traffic to `FILE` (pcap)")
		asJSON     = fs.Bool("json", false, "print results as JSON")
		timeout    = fs.Duration("timeout", 10*time.Second, "wait at most this long for any completion or for the MPA exchange")
		retry      = fs.Duration("retry", 0, "client: keep retrying the connection for this long (peers behind NAT forwarders)")
	)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: iwperf -s [flags] | iwperf -c HOST [flags]\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *server == (*client != "") {
		fs.Usage()
		return 2
	}
	cfg := endpoint.Config{Rev: *rev, CRC: *crc, Markers: *markers, PeerToPeer: *p2p, MULPDU: *mulpdu, Timeout: *timeout}
	for _, r := range strings.Split(*rtr, ",") {
		switch strings.TrimSpace(r) {
		case "write":
			cfg.RTR |= endpoint.RTRWrite
		case "read":
			cfg.RTR |= endpoint.RTRRead
		case "send":
			cfg.RTR |= endpoint.RTRSend
		case "":
		default:
			fmt.Fprintf(os.Stderr, "iwperf: unknown RTR type %q\n", r)
			return 2
		}
	}
	if *pcapFile != "" {
		f, err := os.Create(*pcapFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "iwperf:", err)
			return 1
		}
		c, err := endpoint.NewCapture(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "iwperf:", err)
			return 1
		}
		cfg.Capture = c
		defer func() {
			c.Flush()
			f.Close()
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// listen opens the server's listener, saying why it cannot (nil then).
	listen := func() *endpoint.Listener {
		l, err := endpoint.Listen(ctx, "tcp", net.JoinHostPort(*addr, strconv.Itoa(*port)), &cfg)
		if err != nil {
			fmt.Fprintln(os.Stderr, "iwperf:", err)
			return nil
		}
		return l
	}

	if *test == "rping" {
		o := rping.Options{Size: *size, Count: *count, Validate: *validate, Config: cfg, Timeout: *timeout, IRD: *ird, ORD: *ord}
		if o.Size < 0 {
			o.Size = 64
		}
		if *verbose {
			o.Verbose = os.Stdout
		}
		if *server {
			l := listen()
			if l == nil {
				return 1
			}
			defer l.Close()
			o.Count = *iters // 0: until the client disconnects
			res, err := rping.Serve(ctx, l, o, *persistent)
			return report(res, err, *asJSON)
		}
		o.Dial = dialer(*client, *port, *retry)
		res, err := rping.Client(ctx, "", o)
		return report(res, err, *asJSON)
	}

	o := perf.Options{Test: *test, Size: *size, Iters: *iters, Duration: *dur, Depth: *depth, Config: cfg, Timeout: *timeout}
	if o.Size < 0 {
		o.Size = 65536
	}
	if *server {
		l := listen()
		if l == nil {
			return 1
		}
		defer l.Close()
		fmt.Fprintf(os.Stderr, "iwperf: listening on %v\n", l.Addr())
		if err := perf.Serve(ctx, l, *persistent, *timeout, os.Stderr); err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, "iwperf:", err)
			return 1
		}
		return 0
	}
	res, err := perf.Client(ctx, net.JoinHostPort(*client, strconv.Itoa(*port)), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "iwperf:", err)
		return 1
	}
	if *asJSON {
		fmt.Println(string(res.JSON()))
	} else {
		res.Format(os.Stdout)
	}
	return 0
}

func dialer(host string, port int, retry time.Duration) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		end := time.Now().Add(retry)
		for {
			c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
			if err == nil || time.Now().After(end) {
				return c, err
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

func report(res rping.Result, err error, asJSON bool) int {
	if asJSON {
		fmt.Printf(`{"pings":%d,"bytes":%d,"elapsed_ns":%d,"error":%q}`+"\n", res.Pings, res.Bytes, res.Duration.Nanoseconds(), errString(err))
	} else {
		fmt.Printf("rping: %d pings, %d octets moved in %v\n", res.Pings, res.Bytes, res.Duration.Round(time.Microsecond))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "iwperf:", err)
		return 1
	}
	return 0
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
