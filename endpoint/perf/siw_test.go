package perf

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iwkit/iwkit/endpoint"
	"github.com/iwkit/iwkit/internal/siwpeer"
)

// siwStep is one run of TestSiwPerf: perftest in the guest against iwperf
// on the host, one way.
type siwStep struct {
	test        string
	guestServer bool // perftest serves (ib_X -R), iwperf dials; else the reverse
	// A step of perftest's -a, -b or -D (issue 31): perftest's flags
	// instead of -s and -n, iwperf's options changed to match, and the
	// row both sides print (size, iterations; 0: any count).
	flags      string
	opt        func(*Options)
	size, iter int
}

// siwBreadth are the steps of -a, -b and -D: each flag at least once,
// each way, under TCG's budget (-a's 23 sizes with -n 5).
var siwBreadth = []siwStep{
	{test: WriteBW, guestServer: true, flags: "-a -n 5", opt: func(o *Options) { o.All, o.Iters = true, 5 }, size: MaxSize, iter: 5},
	{test: WriteBW, guestServer: false, flags: "-b -s 4096 -n 200", opt: func(o *Options) { o.Bidir = true }, size: siwSize, iter: 200},
	// Not ib_read_bw -R -b against iwperf's server: it passed in one boot
	// and in the next perftest's 128 Reads all completed flushed (status
	// 5, none done) while iwperf's Reads went unanswered, with no
	// Terminate or close on the wire (2026-11-28; not yet understood).
	{test: SendBW, guestServer: true, flags: "-b -s 4096 -n 600", opt: func(o *Options) { o.Bidir = true }, size: siwSize, iter: 600},
	{test: ReadLat, guestServer: true, flags: "-D 2 -s 4096", opt: func(o *Options) { o.Duration = 2 * time.Second }, size: siwSize},
	{test: WriteLat, guestServer: false, flags: "-D 2 -s 4096", opt: func(o *Options) { o.Duration = 2 * time.Second }, size: siwSize},
	{test: SendBW, guestServer: false, flags: "-D 2 -s 4096", opt: func(o *Options) { o.Duration = 2 * time.Second }, size: siwSize},
	// iwperf's client stops itself at its second row, then ends as
	// perftest's client does (end record, reports, close): perftest's
	// one-way server prints the client's report, the whole run's
	// iterations, and exits 0.
	{test: WriteBW, guestServer: true, flags: "--run_infinitely -D 1 -s 4096", opt: stopAtSecondRow, size: siwSize},
}

// stopAtSecondRow makes o a --run_infinitely run (a row a second) that
// stops itself at its second row.
func stopAtSecondRow(o *Options) {
	stop := make(chan struct{})
	var n atomic.Int32
	o.Every, o.Stop = time.Second, stop
	o.Tick = func(Row) {
		if n.Add(1) == 2 {
			close(stop)
		}
	}
}

var siwSteps = []siwStep{
	{test: WriteBW, guestServer: true}, {test: WriteBW, guestServer: false},
	{test: ReadBW, guestServer: true}, {test: ReadBW, guestServer: false},
	{test: SendBW, guestServer: true}, {test: SendBW, guestServer: false},
	{test: ReadLat, guestServer: true}, {test: ReadLat, guestServer: false},
	{test: SendLat, guestServer: true}, {test: SendLat, guestServer: false},
	{test: WriteLat, guestServer: true}, {test: WriteLat, guestServer: false},
}

// flagsOf is the step's perftest flags.
func (s siwStep) flagsOf() string {
	if s.flags != "" {
		return s.flags
	}
	return fmt.Sprintf("-s %d -n %d", siwSize, siwIters(s.test))
}

// timeout is the guest's bound on the step's perftest, in seconds: -a's
// sweep moves some 80 MB through TCG.
func (s siwStep) timeout() int {
	if strings.Contains(s.flags, "-a") {
		return 240
	}
	return 60
}

// rowOf is the row (size, iterations) the step's sides print; iterations
// 0 for any.
func (s siwStep) rowOf() (int, int) {
	if s.opt != nil {
		return s.size, s.iter
	}
	return siwSize, siwIters(s.test)
}

const siwSize = 4096

// siwIters is a step's -n: send_bw's beyond its 512 receives, so that
// the sender needs the receiver's credits (its first after 170).
func siwIters(test string) int {
	if test == SendBW {
		return 600
	}
	return 200
}

type siwOutcome struct {
	res Result
	err error
}

// TestSiwPerf runs iwperf against perftest's ib_write_bw, ib_read_bw,
// ib_send_bw, ib_read_lat, ib_send_lat and ib_write_lat with -R in the Linux siw guest,
// both ways, in one VM boot: the perftest side must exit 0 and print the run's row
// (all but ib_read_lat's server, which prints none), iwperf's side must
// complete, and iwperf's server must have seen every operation of
// perftest's client.
func TestSiwPerf(t *testing.T) {
	peer := siwpeer.Require(t)
	// The run takes 1.5 to 3.5 minutes under TCG on 2 loaded cores, and the
	// breadth steps (-a above all) some minutes more.
	ready := siwpeer.NewReady(t, len(siwSteps)+len(siwBreadth))
	opts := siwpeer.Options{Timeout: siwpeer.Budget(t, 12*time.Minute), GuestFwd: []string{ready.Fwd()}}
	host := siwpeer.NewHost(t)

	var script strings.Builder
	out := make([]siwOutcome, len(siwSteps)+len(siwBreadth))
	o := func(s siwStep) Options {
		o := Options{Test: s.test, Size: siwSize, Iters: siwIters(s.test), Timeout: 30 * time.Second}
		if s.opt != nil {
			s.opt(&o)
		}
		return o
	}
	steps := append(append([]siwStep(nil), siwSteps...), siwBreadth...)
	// -a's buffers (2 × 8 MiB and more per QP) are above the default
	// RLIMIT_MEMLOCK of 8 MiB: ibv_reg_mr fails ("Couldn't allocate MR").
	script.WriteString("ulimit -l unlimited\n")
	for i, s := range steps {
		gport := 7600 + i
		tool := "ib_" + s.test
		fmt.Fprintf(&script, "echo '=== STEP %d'\n", i)
		if s.guestServer {
			hport := opts.AddHostFwd(t, gport)
			fmt.Fprintf(&script, "timeout %d %s -R -d siw0 -F -p %d %s > /tmp/%d.log 2>&1 & SP=$!\n%s\n%s\nwait $SP; RC=$?\n",
				s.timeout(), tool, gport, s.flagsOf(), i, siwpeer.WaitListen(gport), siwpeer.Signal(i))
			host.Go(func() {
				if !host.Await(ready.Step(i)) {
					out[i].err = fmt.Errorf("the guest never said %s -R listens", tool)
					return
				}
				out[i].res, out[i].err = RunPerftest(host.Ctx, TCPDialer(fmt.Sprintf("127.0.0.1:%d", hport)), o(s))
			})
		} else {
			// ib_write_lat's server writes first (ServePerftest).
			l, err := endpoint.Listen(host.Ctx, "tcp", "127.0.0.1:0", &endpoint.Config{EarlyResponder: s.test == WriteLat})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			opts.AddGuestFwd(gport, l.Addr())
			fmt.Fprintf(&script, "timeout %d %s -R -d siw0 -F -p %d %s 10.0.2.100 > /tmp/%d.log 2>&1; RC=$?\n",
				s.timeout(), tool, gport, s.flagsOf(), i)
			host.Go(func() {
				sctx, scancel := host.ServeCtx()
				defer scancel()
				out[i].res, out[i].err = ServePerftest(sctx, l, o(s))
			})
		}
		// perftest's stderr comes before its buffered stdout in the log:
		// the breadth steps show enough to hold an error too.
		fmt.Fprintf(&script, "echo \"=== RESULT %d rc=$RC t=${SECONDS}s\"; tail -n %d /tmp/%d.log\n", i, map[bool]int{false: 12, true: 40}[s.opt != nil], i)
	}
	script.WriteString("echo '=== DMESG'; dmesg | grep -i siw | tail -n 5\n")

	start := time.Now()
	r := host.Run(t, peer, script.String(), opts)
	t.Logf("VM run: exit code %d (killed %v, timed out %v) in %v", r.ExitCode, r.Killed, r.TimedOut, time.Since(start).Round(time.Second))
	if r.ExitCode != 0 {
		t.Fatalf("siw VM: exit code %d, %v\n%s", r.ExitCode, r.Err, r.Tail(4000))
	}
	if i := strings.Index(r.Console, "=== DMESG"); i >= 0 {
		t.Logf("guest kernel log (siw):\n%s", r.Console[i:])
	}
	for i, s := range steps {
		name := s.test + "/iwperf-client"
		if !s.guestServer {
			name = s.test + "/perftest-client"
		}
		if s.opt != nil {
			name += "/" + strings.Fields(s.flags)[0]
		}
		t.Run(name, func(t *testing.T) {
			m := regexp.MustCompile(fmt.Sprintf(`(?s)=== RESULT %d rc=(\d+) (.*?)(=== |$)`, i)).FindStringSubmatch(r.Console)
			if m == nil {
				t.Fatalf("no guest result for step %d\n%s", i, r.Tail(3000))
			}
			guest := m[2]
			t.Logf("guest:\n%s", guest)
			res, err := out[i].res, out[i].err
			t.Logf("iwperf: %+v, latency %+v, err %v", res.Row, res.Row.Lat, err)
			if m[1] != "0" {
				t.Errorf("ib_%s exited with %s", s.test, m[1])
			}
			if err != nil {
				t.Fatalf("iwperf: %v", err)
			}
			// Both sides print the client's measurement: perftest's server
			// the one iwperf reported, iwperf's server the one perftest did.
			size, n := s.rowOf()
			iters := strconv.Itoa(n)
			if n == 0 {
				iters = `\d+`
			}
			// perftest's latency columns can be inf or -nan under TCG: it
			// divides cycles by a CPU MHz the emulated CPU may report as
			// 0 (seen with ib_write_lat). The row is still its run's.
			num := `([0-9.]+|inf|-?nan)`
			row := regexp.MustCompile(fmt.Sprintf(`(?m)^ %d +%s +%s +%s`, size, iters, num, num))
			if !row.MatchString(guest) && !(s.test == ReadLat && s.guestServer) {
				t.Errorf("perftest printed no row of %s × %d octets", iters, size)
			}
			if res.Row.Size != size || n > 0 && res.Row.Iters != n || res.Row.Iters <= 0 {
				t.Errorf("iwperf's row: %+v", res.Row)
			}
			if s.guestServer && (res.Row.AvgBps <= 0 || (res.Row.Lat == nil) != IsBW(s.test)) {
				t.Errorf("iwperf measured nothing: %+v", res.Row)
			}
			if !s.guestServer {
				// iwperf served: its QP counted what perftest's client did.
				got := map[string]uint64{WriteBW: res.Counter.RxWrites, ReadBW: res.Counter.RxReadReqs, SendBW: res.Counter.RxSends,
					WriteLat: res.Counter.RxWrites, ReadLat: res.Counter.RxReadReqs, SendLat: res.Counter.RxSends}[s.test]
				if got < uint64(n) {
					t.Errorf("iwperf's server saw %d %s operations of perftest's, want at least %d", got, s.test, n)
				}
			}
		})
	}
}
