// Command iwperf measures RDMA bandwidth and latency over iwkit's soft-iWARP
// endpoint with perftest's habits, speaks rdma-core's rping exchange, and
// stresses a peer with a verified random mix of operations.
//
//	iwperf TEST [flags]          server: waits for one client (--persistent: many)
//	iwperf TEST HOST [flags]     client
//
// TEST is write_bw, send_bw, read_bw, atomic_bw, write_lat, send_lat,
// read_lat, atomic_lat, rping or stress. The flags keep perftest's letters:
// -s SIZE, -a, -n ITERS, -D SECONDS, -q QPS, -t TX_DEPTH, -b, -p PORT
// (18515), --report_gbits, --run_infinitely, -l POST_LIST, -Q CQ_MOD,
// -A ATOMIC_TYPE, --out_json, --out_json_file FILE (and accepts, with no
// effect, perftest's -R, -d, -F, -x); the wire options use iwkit's names.
// A server logs and counts a connection that fails before its MPA Request
// (a port scan, a silent client) and goes on. With --perftest, write_bw,
// read_bw, send_bw, write_lat, read_lat and send_lat speak perftest's own exchange instead, against ib_write_bw -R
// and its kin.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/iwkit/iwkit/endpoint"
	"github.com/iwkit/iwkit/endpoint/perf"
	"github.com/iwkit/iwkit/endpoint/rping"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// tests are the first argument's values.
var tests = append(slices.Clone(perf.Tests), "rping", "stress")

// perftestFlags are the flags that keep perftest's letters and long names
// (checked against ib_write_bw --help by the tests).
var perftestFlags = []struct{ short, long string }{
	{"s", "size"}, {"a", "all"}, {"n", "iters"}, {"D", "duration"}, {"q", "qp"}, {"t", "tx-depth"},
	{"b", "bidirectional"}, {"p", "port"}, {"l", "post_list"}, {"Q", "cq-mod"},
	{"", "report_gbits"}, {"", "run_infinitely"}, {"", "out_json"}, {"", "out_json_file"},
	{"R", "rdma_cm"}, {"d", "ib-dev"}, {"F", "CPU-freq"}, {"x", "gid-index"},
}

type flags struct {
	size, iters, dur, qps, depth, port, postList, cqMod int
	all, bidir, gbits, infinite, outJSON                bool
	jsonFile, plot, bind, atomic                        string
	persistent                                          bool
	crc, markers, p2p                                   bool
	rev, ird, ord, mulpdu                               int
	rtr, pcapFile                                       string
	timeout, retry, startDelay                          time.Duration
	maxSize, maxDepth, maxQPs                           int
	maxMem                                              int64
	count                                               int
	validate, verbose                                   bool
	seed                                                int64
	conns                                               int
	perftest                                            bool
	// perftest's own flags, accepted so that its command lines run
	// unchanged, with no effect here.
	rdmaCM, cpuFreq bool
	ibDev           string
	gidIndex        int
}

func newFlagSet(f *flags, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("iwperf", flag.ContinueOnError)
	fs.SetOutput(stderr)
	both := func(short, long string, p *int, v int, usage string) {
		fs.IntVar(p, short, v, usage)
		fs.IntVar(p, long, v, "same as -"+short)
	}
	bothB := func(short, long string, p *bool, usage string) {
		fs.BoolVar(p, short, false, usage)
		fs.BoolVar(p, long, false, "same as -"+short)
	}
	both("s", "size", &f.size, -1, "message `size` in octets (default 65536 for bandwidth, 2 for latency, 64 for rping)")
	bothB("a", "all", &f.all, "run sizes from 2 to 2^23 (8 MiB)")
	both("n", "iters", &f.iters, 0, "`iterations` per QP (default 5000 for bandwidth, 1000 for latency)")
	both("D", "duration", &f.dur, 0, "run for this many `seconds` instead of -n (stress: default 10)")
	both("q", "qp", &f.qps, 1, "number of QPs (connections) at once")
	both("t", "tx-depth", &f.depth, 0, "work requests outstanding per QP (default 128 for bandwidth, 1 for latency)")
	bothB("b", "bidirectional", &f.bidir, "measure both directions at once (bandwidth tests)")
	both("p", "port", &f.port, perf.DefaultPort, "TCP `port` to listen on or connect to")
	both("l", "post_list", &f.postList, 1, "post work requests in lists of this `size`")
	both("Q", "cq-mod", &f.cqMod, perf.DefaultCQMod, "signal one work request in this many (at most -t)")
	fs.StringVar(&f.atomic, "A", perf.FetchAndAdd, "atomic_bw, atomic_lat: atomic `type`, CMP_AND_SWAP or FETCH_AND_ADD (RFC 7306)")
	fs.StringVar(&f.atomic, "atomic_type", perf.FetchAndAdd, "same as -A")
	fs.BoolVar(&f.gbits, "report_gbits", false, "report bandwidth in Gb/sec (10^9 bits) instead of MB/sec (2^20 octets)")
	fs.BoolVar(&f.infinite, "run_infinitely", false, "run until interrupted, printing a row every -D seconds (default 5)")
	fs.BoolVar(&f.outJSON, "out_json", false, "also write the report as perftest's JSON to --out_json_file")
	fs.StringVar(&f.jsonFile, "out_json_file", "perftest_out.json", "`file` of the JSON report")
	fs.StringVar(&f.plot, "plot", "", "with -a: draw bandwidth and latency against size into `FILE` (.svg or .png)")
	fs.StringVar(&f.bind, "bind", "", "server: `address` to listen on (default all)")
	fs.BoolVar(&f.persistent, "persistent", false, "server: keep serving clients (default: end after the first client's run)")
	fs.IntVar(&f.maxSize, "max-size", perf.DefaultLimits.MaxSize, "server: largest message size a client may ask for")
	fs.IntVar(&f.maxDepth, "max-depth", perf.DefaultLimits.MaxDepth, "server: largest tx depth a client may ask for")
	fs.IntVar(&f.maxQPs, "max-qps", perf.DefaultLimits.MaxQPs, "server: most QPs in one client's run")
	fs.Int64Var(&f.maxMem, "max-mem", perf.DefaultLimits.MaxMem, "server: octets of buffers for all the connections served at once")
	fs.BoolVar(&f.crc, "crc", false, "ask for MPA CRCs (used anyway when the peer asks)")
	fs.BoolVar(&f.markers, "markers", false, "ask the peer to insert MPA markers in what it sends")
	fs.IntVar(&f.rev, "mpa-rev", 2, "MPA revision of our frame: 1 or 2")
	fs.BoolVar(&f.p2p, "p2p", false, "RFC 6581 peer-to-peer mode with an RTR message")
	fs.StringVar(&f.rtr, "rtr", "write,read,send", "RTR types we can send (client) or accept (server)")
	fs.IntVar(&f.ird, "ird", 0, "QP IRD (default: per test)")
	fs.IntVar(&f.ord, "ord", 0, "QP ORD (default: per test)")
	fs.IntVar(&f.mulpdu, "mulpdu", 0, "largest ULPDU to send (default: from the TCP MSS)")
	fs.StringVar(&f.pcapFile, "pcap", "", "write this side's traffic to `FILE` (pcap)")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "wait at most this long for any completion or for the MPA exchange")
	fs.DurationVar(&f.retry, "retry", 0, "client: keep retrying the connection for this long")
	fs.IntVar(&f.count, "C", 10, "rping: number of pings")
	fs.DurationVar(&f.startDelay, "start-delay", 300*time.Millisecond, "rping client: wait this long after connecting before the first Send (Linux siw's accept path can leave an FPDU sent at once unread)")
	fs.IntVar(&f.size, "S", -1, "rping: same as -s")
	fs.BoolVar(&f.validate, "V", false, "rping: verify the data of every ping")
	fs.BoolVar(&f.verbose, "v", false, "rping: print the data of every ping")
	fs.BoolVar(&f.perftest, "perftest", false, "speak perftest's own exchange (rdma_cm control QP) with ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_read_lat, ib_send_lat -R: same -s, -n, -q on both sides")
	bothB("R", "rdma_cm", &f.rdmaCM, "accepted for perftest's command lines: an iWARP connection always begins with the MPA exchange (--perftest speaks perftest's rdma_cm exchange)")
	fs.StringVar(&f.ibDev, "d", "", "accepted for perftest's command lines: iwkit's endpoint is the one `device`")
	fs.StringVar(&f.ibDev, "ib-dev", "", "same as -d")
	bothB("F", "CPU-freq", &f.cpuFreq, "accepted for perftest's command lines: iwperf has no CPU-frequency warning")
	both("x", "gid-index", &f.gidIndex, 0, "accepted for perftest's command lines: iWARP has no GID (`index` ignored)")
	fs.Int64Var(&f.seed, "seed", 0, "stress: random seed (default: from the clock, printed); stress takes -q (connections, default 8), -t (operations in flight, 16), -s (largest message, 65536), -D (seconds, 10), -n (operations per connection)")
	doc.Setup(fs, stderr) // -h, --help, --version (doc.go)
	return fs
}

// parse takes flags and positional arguments in any order.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func run(args []string, stdout, stderr io.Writer) int {
	var f flags
	fs := newFlagSet(&f, stderr)
	pos, err := parse(fs, args)
	if code, done := doc.Done(fs, err, stdout); done {
		return code
	}
	if len(pos) < 1 || len(pos) > 2 || !slices.Contains(tests, pos[0]) {
		if len(pos) >= 1 && !slices.Contains(tests, pos[0]) {
			fmt.Fprintf(stderr, "iwperf: unknown test %q\n", pos[0])
		}
		fs.Usage()
		return 2
	}
	test, host := pos[0], ""
	if len(pos) == 2 {
		host = pos[1]
	}
	cfg := endpoint.Config{Rev: f.rev, CRC: f.crc, Markers: f.markers, PeerToPeer: f.p2p, MULPDU: f.mulpdu, Timeout: f.timeout}
	for _, r := range strings.Split(f.rtr, ",") {
		switch strings.TrimSpace(r) {
		case "write":
			cfg.RTR |= endpoint.RTRWrite
		case "read":
			cfg.RTR |= endpoint.RTRRead
		case "send":
			cfg.RTR |= endpoint.RTRSend
		case "":
		default:
			fmt.Fprintf(stderr, "iwperf: unknown RTR type %q\n", r)
			return 2
		}
	}
	if f.pcapFile != "" {
		pf, err := os.Create(f.pcapFile)
		if err != nil {
			fmt.Fprintln(stderr, "iwperf:", err)
			return 1
		}
		c, err := endpoint.NewCapture(pf)
		if err != nil {
			fmt.Fprintln(stderr, "iwperf:", err)
			return 1
		}
		cfg.Capture = c
		defer func() {
			c.Flush()
			pf.Close()
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	a := &app{f: &f, fs: fs, cfg: cfg, ctx: ctx, stdout: stdout, stderr: stderr, test: test, host: host}
	switch test {
	case "rping":
		return a.rping()
	case "stress":
		return a.stress()
	}
	if host == "" {
		return a.server()
	}
	return a.client()
}

type app struct {
	f              *flags
	fs             *flag.FlagSet
	cfg            endpoint.Config
	ctx            context.Context
	stdout, stderr io.Writer
	test, host     string
}

func (a *app) fail(err error) int {
	fmt.Fprintln(a.stderr, "iwperf:", err)
	return 1
}

// listen opens the server's listener.
func (a *app) listen() (*endpoint.Listener, error) {
	cfg := a.cfg
	// perftest's write_lat server writes first, before its client sent
	// anything (endpoint/perf/perftest_write.go).
	cfg.EarlyResponder = a.f.perftest && a.options().Test == perf.WriteLat
	return endpoint.Listen(a.ctx, "tcp", net.JoinHostPort(a.f.bind, strconv.Itoa(a.f.port)), &cfg)
}

func (a *app) dialer() perf.Dialer {
	addr := net.JoinHostPort(a.host, strconv.Itoa(a.f.port))
	retry := a.f.retry
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		end := time.Now().Add(retry)
		for {
			c, err := d.DialContext(ctx, "tcp", addr)
			if err == nil || time.Now().After(end) {
				return c, err
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

func (a *app) writeJSON(rs []perf.Result) error {
	if !a.f.outJSON || len(rs) == 0 {
		return nil
	}
	return os.WriteFile(a.f.jsonFile, perf.JSON(rs, a.f.gbits), 0o644)
}

func (a *app) server() int {
	l, err := a.listen()
	if err != nil {
		return a.fail(err)
	}
	defer l.Close()
	fmt.Fprintf(a.stderr, "iwperf: waiting for clients on %v\n", l.Addr())
	if a.f.perftest {
		return a.perftestServer(l)
	}
	var rs []perf.Result
	s := &perf.Server{Limits: perf.Limits{MaxSize: a.f.maxSize, MaxDepth: a.f.maxDepth, MaxQPs: a.f.maxQPs, MaxMem: a.f.maxMem},
		Timeout: a.f.timeout, Log: a.stderr, Out: a.stdout, Gbits: a.f.gbits,
		OnResult: func(r perf.Result) { rs = append(rs, r) }}
	err = s.Serve(a.ctx, l, a.f.persistent)
	if jerr := a.writeJSON(rs); jerr != nil {
		return a.fail(jerr)
	}
	if err != nil && a.ctx.Err() == nil {
		return a.fail(err)
	}
	return 0
}

func (a *app) options() perf.Options {
	f := a.f
	o := perf.Options{Test: a.test, Size: f.size, Iters: f.iters, Duration: time.Duration(f.dur) * time.Second, Depth: f.depth,
		QPs: f.qps, Bidir: f.bidir, PostList: f.postList, Atomic: f.atomic, CQMod: f.cqMod, IRD: f.ird, ORD: f.ord, Config: a.cfg, Timeout: f.timeout,
		All: f.all && f.perftest}
	if o.Size < 0 {
		o.Size = perf.DefaultSize(a.test)
	}
	return o
}

func (a *app) client() int {
	f := a.f
	o := a.options()
	if f.plot != "" && !f.all {
		fmt.Fprintln(a.stderr, "iwperf: --plot draws a size sweep: it needs -a")
		return 2
	}
	if f.infinite {
		o.Every = 5 * time.Second
		if f.dur > 0 {
			o.Every = time.Duration(f.dur) * time.Second
		}
		o.Duration = 0
		o.Stop = a.ctx.Done()
		fmt.Fprint(a.stdout, perf.Line)
		perf.Header(a.stdout, a.test, f.gbits)
		o.Tick = func(r perf.Row) { perf.FormatRow(a.stdout, a.test, r, f.gbits) }
		run := perf.Run
		if f.perftest {
			run = perf.RunPerftest
		}
		res, err := run(context.WithoutCancel(a.ctx), a.dialer(), o)
		fmt.Fprint(a.stdout, perf.Line)
		if err != nil {
			return a.fail(err)
		}
		if err := a.writeJSON([]perf.Result{res}); err != nil {
			return a.fail(err)
		}
		return 0
	}
	if f.perftest {
		return a.perftestRun(func(o perf.Options) (perf.Result, error) { return perf.RunPerftest(a.ctx, a.dialer(), o) })
	}
	if !f.all {
		return a.report(perf.Run(a.ctx, a.dialer(), o))
	}
	var rs []perf.Result
	err := perf.Sweep(a.ctx, a.dialer(), o, perf.SweepSizes(), func(r perf.Result) {
		if len(rs) == 0 {
			perf.Banner(a.stdout, r)
			perf.Header(a.stdout, a.test, f.gbits)
		}
		perf.FormatRow(a.stdout, a.test, r.Row, f.gbits)
		rs = append(rs, r)
	})
	if len(rs) > 0 {
		fmt.Fprint(a.stdout, perf.Line)
	}
	if err != nil {
		return a.fail(err)
	}
	if err := a.writeJSON(rs); err != nil {
		return a.fail(err)
	}
	if f.plot != "" {
		if err := perf.Plot(f.plot, rs, f.gbits); err != nil {
			return a.fail(err)
		}
	}
	return 0
}

func (a *app) rping() int {
	f := a.f
	o := rping.Options{Size: f.size, Count: f.count, Validate: f.validate, Config: a.cfg, Timeout: f.timeout, IRD: f.ird, ORD: f.ord,
		StartDelay: f.startDelay}
	if o.Size < 0 {
		o.Size = 64
	}
	if f.verbose {
		o.Verbose = a.stdout
	}
	if a.host == "" {
		l, err := a.listen()
		if err != nil {
			return a.fail(err)
		}
		defer l.Close()
		o.Count = f.iters // 0: until the client disconnects
		res, err := rping.Serve(a.ctx, l, o, f.persistent)
		return a.rpingReport(res, err)
	}
	dial := a.dialer()
	o.Dial = func(ctx context.Context) (net.Conn, error) { return dial(ctx) }
	res, err := rping.Client(a.ctx, "", o)
	return a.rpingReport(res, err)
}

func (a *app) rpingReport(res rping.Result, err error) int {
	if a.f.outJSON {
		es := ""
		if err != nil {
			es = err.Error()
		}
		b := fmt.Sprintf(`{"pings":%d,"bytes":%d,"elapsed_ns":%d,"error":%q}`+"\n", res.Pings, res.Bytes, res.Duration.Nanoseconds(), es)
		if werr := os.WriteFile(a.f.jsonFile, []byte(b), 0o644); werr != nil {
			return a.fail(werr)
		}
	}
	fmt.Fprintf(a.stdout, "rping: %d pings, %d octets moved in %v\n", res.Pings, res.Bytes, res.Duration.Round(time.Microsecond))
	if err != nil {
		return a.fail(err)
	}
	return 0
}

// perftestServer serves perftest clients (ib_write_bw -R HOST), one at a
// time: one, or every one with --persistent.
func (a *app) perftestServer(l *endpoint.Listener) int {
	var err error
	for {
		rc := a.perftestRun(func(o perf.Options) (perf.Result, error) {
			o.Log = a.stderr
			var res perf.Result
			res, err = perf.ServePerftest(a.ctx, l, o)
			return res, err
		})
		// A client's failed run is that client's; only the
		// listener's own failure ends a persistent server.
		if !a.f.persistent || a.ctx.Err() != nil || errors.As(err, new(*perf.ListenerError)) {
			return rc
		}
	}
}

// perftestRun runs one side of a --perftest run, printing each size's row
// as it comes where the side measures (-a sweeps on the same
// connections, -b), else the result (a one-way server prints the
// client's report), and writes the JSON.
func (a *app) perftestRun(run func(perf.Options) (perf.Result, error)) int {
	o := a.options()
	if a.f.infinite && a.host == "" {
		// The server of a --run_infinitely run it takes part in (-b,
		// send_bw) prints a row per interval too, as perftest's does.
		o.Every, o.Duration = 5*time.Second, 0
		if a.f.dur > 0 {
			o.Every = time.Duration(a.f.dur) * time.Second
		}
		if a.f.bidir || a.test == perf.SendBW {
			fmt.Fprint(a.stdout, perf.Line)
			perf.Header(a.stdout, a.test, a.f.gbits)
			o.Tick = func(r perf.Row) { perf.FormatRow(a.stdout, a.test, r, a.f.gbits) }
		}
	}
	var rs []perf.Result
	o.Each = func(r perf.Result) {
		if len(rs) == 0 {
			perf.Banner(a.stdout, r)
			perf.Header(a.stdout, r.Test, a.f.gbits)
		}
		perf.FormatRow(a.stdout, r.Test, r.Row, a.f.gbits)
		rs = append(rs, r)
	}
	res, err := run(o)
	if len(rs) == 0 {
		return a.report(res, err)
	}
	fmt.Fprint(a.stdout, perf.Line)
	if err != nil {
		return a.fail(err)
	}
	rs[len(rs)-1] = res // with its counters to the end
	if err := a.writeJSON(rs); err != nil {
		return a.fail(err)
	}
	return 0
}

// report prints one run's result as perftest does and writes its JSON.
func (a *app) report(res perf.Result, err error) int {
	if err != nil {
		return a.fail(err)
	}
	res.Format(a.stdout, a.f.gbits)
	if err := a.writeJSON([]perf.Result{res}); err != nil {
		return a.fail(err)
	}
	return 0
}
