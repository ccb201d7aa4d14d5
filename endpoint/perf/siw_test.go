package perf

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
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
	// The run takes 1.5 to 3.5 minutes under TCG on 2 loaded cores; the
	// limit only ends a hung guest.
	budget := 8 * time.Minute
	if dl, ok := t.Deadline(); ok {
		budget = min(budget, time.Until(dl)-30*time.Second)
	}
	ready := siwpeer.NewReady(t, len(siwSteps))
	opts := siwpeer.Options{Timeout: budget, GuestFwd: []string{ready.Fwd()}}
	// The VM gets budget once it boots; the host side waits as long as
	// the test may: another package's VM can hold the boot lock first.
	ctx, cancel := context.WithTimeout(context.Background(), siwpeer.HostWait(t))
	defer cancel()

	var script strings.Builder
	out := make([]siwOutcome, len(siwSteps))
	var wg sync.WaitGroup
	vmDone := make(chan struct{})
	o := func(test string) Options {
		return Options{Test: test, Size: siwSize, Iters: siwIters(test), Timeout: 30 * time.Second}
	}
	for i, s := range siwSteps {
		gport := 7600 + i
		tool := "ib_" + s.test
		fmt.Fprintf(&script, "echo '=== STEP %d'\n", i)
		if s.guestServer {
			hport := siwpeer.FreePort(t)
			opts.HostFwd = append(opts.HostFwd, fmt.Sprintf("%d:%d", hport, gport))
			fmt.Fprintf(&script, "timeout 60 %s -R -d siw0 -F -p %d -s %d -n %d > /tmp/%d.log 2>&1 & SP=$!\n%s\n%s\nwait $SP; RC=$?\n",
				tool, gport, siwSize, siwIters(s.test), i, siwpeer.WaitListen(gport), siwpeer.Signal(i))
			wg.Add(1)
			go func() {
				defer wg.Done()
				select {
				case <-ready.Step(i):
				case <-vmDone:
					out[i].err = fmt.Errorf("the guest never said %s -R listens", tool)
					return
				}
				out[i].res, out[i].err = RunPerftest(ctx, TCPDialer(fmt.Sprintf("127.0.0.1:%d", hport)), o(s.test))
			}()
		} else {
			// ib_write_lat's server writes first (ServePerftest).
			l, err := endpoint.Listen(ctx, "tcp", "127.0.0.1:0", &endpoint.Config{EarlyResponder: s.test == WriteLat})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			opts.GuestFwd = append(opts.GuestFwd, fmt.Sprintf("%d:%d", gport, l.Addr().(*net.TCPAddr).Port))
			fmt.Fprintf(&script, "timeout 60 %s -R -d siw0 -F -p %d -s %d -n %d 10.0.2.100 > /tmp/%d.log 2>&1; RC=$?\n",
				tool, gport, siwSize, siwIters(s.test), i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				// qemu's guest forward keeps our socket open after the
				// guest's FIN: end the wait when the VM has ended.
				sctx, scancel := context.WithCancel(ctx)
				defer scancel()
				go func() {
					select {
					case <-vmDone:
						time.Sleep(2 * time.Second)
						scancel()
					case <-sctx.Done():
					}
				}()
				out[i].res, out[i].err = ServePerftest(sctx, l, o(s.test))
			}()
		}
		fmt.Fprintf(&script, "echo \"=== RESULT %d rc=$RC t=${SECONDS}s\"; tail -n 12 /tmp/%d.log\n", i, i)
	}
	script.WriteString("echo '=== DMESG'; dmesg | grep -i siw | tail -n 5\n")

	start := time.Now()
	vm, err := peer.Start(t, script.String(), opts)
	if err != nil {
		close(vmDone)
		wg.Wait()
		t.Fatal(err)
	}
	r := vm.Wait()
	close(vmDone)
	wg.Wait()
	t.Logf("VM run: exit code %d (killed %v, timed out %v) in %v", r.ExitCode, r.Killed, r.TimedOut, time.Since(start).Round(time.Second))
	if r.ExitCode != 0 {
		t.Fatalf("siw VM: exit code %d, %v\n%s", r.ExitCode, r.Err, tailOf(r.Console, 4000))
	}
	for i, s := range siwSteps {
		name := s.test + "/iwperf-client"
		if !s.guestServer {
			name = s.test + "/perftest-client"
		}
		t.Run(name, func(t *testing.T) {
			m := regexp.MustCompile(fmt.Sprintf(`(?s)=== RESULT %d rc=(\d+) (.*?)(=== |$)`, i)).FindStringSubmatch(r.Console)
			if m == nil {
				t.Fatalf("no guest result for step %d\n%s", i, tailOf(r.Console, 3000))
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

func tailOf(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
