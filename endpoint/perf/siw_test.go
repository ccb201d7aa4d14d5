package perf

import (
	"fmt"
	"regexp"
	"strings"
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
}

var siwSteps = []siwStep{
	{WriteBW, true}, {WriteBW, false},
	{ReadBW, true}, {ReadBW, false},
	{SendBW, true}, {SendBW, false},
	{ReadLat, true}, {ReadLat, false},
	{SendLat, true}, {SendLat, false},
	{WriteLat, true}, {WriteLat, false},
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
	// The run takes 1.5 to 3.5 minutes under TCG on 2 loaded cores.
	ready := siwpeer.NewReady(t, len(siwSteps))
	opts := siwpeer.Options{Timeout: siwpeer.Budget(t, 8*time.Minute), GuestFwd: []string{ready.Fwd()}}
	host := siwpeer.NewHost(t)

	var script strings.Builder
	out := make([]siwOutcome, len(siwSteps))
	o := func(test string) Options {
		return Options{Test: test, Size: siwSize, Iters: siwIters(test), Timeout: 30 * time.Second}
	}
	for i, s := range siwSteps {
		gport := 7600 + i
		tool := "ib_" + s.test
		fmt.Fprintf(&script, "echo '=== STEP %d'\n", i)
		if s.guestServer {
			hport := opts.AddHostFwd(t, gport)
			fmt.Fprintf(&script, "timeout 60 %s -R -d siw0 -F -p %d -s %d -n %d > /tmp/%d.log 2>&1 & SP=$!\n%s\n%s\nwait $SP; RC=$?\n",
				tool, gport, siwSize, siwIters(s.test), i, siwpeer.WaitListen(gport), siwpeer.Signal(i))
			host.Go(func() {
				if !host.Await(ready.Step(i)) {
					out[i].err = fmt.Errorf("the guest never said %s -R listens", tool)
					return
				}
				out[i].res, out[i].err = RunPerftest(host.Ctx, TCPDialer(fmt.Sprintf("127.0.0.1:%d", hport)), o(s.test))
			})
		} else {
			// ib_write_lat's server writes first (ServePerftest).
			l, err := endpoint.Listen(host.Ctx, "tcp", "127.0.0.1:0", &endpoint.Config{EarlyResponder: s.test == WriteLat})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			opts.AddGuestFwd(gport, l.Addr())
			fmt.Fprintf(&script, "timeout 60 %s -R -d siw0 -F -p %d -s %d -n %d 10.0.2.100 > /tmp/%d.log 2>&1; RC=$?\n",
				tool, gport, siwSize, siwIters(s.test), i)
			host.Go(func() {
				sctx, scancel := host.ServeCtx()
				defer scancel()
				out[i].res, out[i].err = ServePerftest(sctx, l, o(s.test))
			})
		}
		fmt.Fprintf(&script, "echo \"=== RESULT %d rc=$RC t=${SECONDS}s\"; tail -n 12 /tmp/%d.log\n", i, i)
	}
	script.WriteString("echo '=== DMESG'; dmesg | grep -i siw | tail -n 5\n")

	start := time.Now()
	r := host.Run(t, peer, script.String(), opts)
	t.Logf("VM run: exit code %d (killed %v, timed out %v) in %v", r.ExitCode, r.Killed, r.TimedOut, time.Since(start).Round(time.Second))
	if r.ExitCode != 0 {
		t.Fatalf("siw VM: exit code %d, %v\n%s", r.ExitCode, r.Err, r.Tail(4000))
	}
	for i, s := range siwSteps {
		name := s.test + "/iwperf-client"
		if !s.guestServer {
			name = s.test + "/perftest-client"
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
			n := siwIters(s.test)
			// perftest's latency columns can be inf or -nan under TCG: it
			// divides cycles by a CPU MHz the emulated CPU may report as
			// 0 (seen with ib_write_lat). The row is still its run's.
			num := `([0-9.]+|inf|-?nan)`
			row := regexp.MustCompile(fmt.Sprintf(`(?m)^ %d +%d +%s +%s`, siwSize, n, num, num))
			if !row.MatchString(guest) && !(s.test == ReadLat && s.guestServer) {
				t.Errorf("perftest printed no row of %d × %d octets", n, siwSize)
			}
			if res.Row.Size != siwSize || res.Row.Iters != n {
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
