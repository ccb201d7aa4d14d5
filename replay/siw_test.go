package replay

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/iwkit/iwkit/internal/siwpeer"
)

// TestSiwStatefulRping replays the initiator's side of
// testdata/siw/rping.pcap (rping -c, 5 pings of 100 octets, against siw)
// against a live `rping -s` with the capture's parameters in the Linux siw
// guest: every operation must happen as captured, and rping -s must exit 0.
func TestSiwStatefulRping(t *testing.T) {
	peer := siwpeer.Require(t)
	s := mustLoad(t, siw("rping.pcap"))
	ready := siwpeer.NewReady(t, 1)
	// The run takes 2 minutes under TCG on 2 loaded cores.
	opts := siwpeer.Options{Timeout: siwpeer.Budget(t, 6*time.Minute), GuestFwd: []string{ready.Fwd()}}
	const gport = 7170 // the capture's
	hport := opts.AddHostFwd(t, gport)
	// The capture's rping -s: siw's defaults (MPA v2, no CRC, no markers).
	script := fmt.Sprintf(`timeout 60 rping -s -v -a 10.0.2.15 -p %d -C 5 -S 100 > /tmp/s.log 2>&1 & SP=$!
%s
%s
wait $SP; echo "=== RESULT rc=$?"; tail -n 8 /tmp/s.log; dmesg | grep -i siw | tail -n 4
`, gport, siwpeer.WaitListen(gport), siwpeer.Signal(0))
	host := siwpeer.NewHost(t)
	var res *Result
	var err error
	host.Go(func() {
		if !host.Await(ready.Step(0)) {
			err = fmt.Errorf("the guest never said rping -s listens")
			return
		}
		// With the capture's timing (the client's first Send comes after
		// rping's wait for ESTABLISHED, which siw's accept path needs).
		// StartDelay: under TCG on loaded cores the capture's 6.8 ms
		// between the Reply and the first Send may not be enough for
		// siw's accept path (README, deviation 8).
		res, err = Stateful(host.Ctx, s, StatefulOptions{Side: Initiator, Addr: fmt.Sprintf("127.0.0.1:%d", hport), Timeout: 30 * time.Second, StartDelay: 500 * time.Millisecond})
	})
	start := time.Now()
	r := host.Run(t, peer, script, opts)
	t.Logf("VM run: exit code %d in %v", r.ExitCode, time.Since(start).Round(time.Second))
	m := regexp.MustCompile(`(?s)=== RESULT rc=(\d+)\n(.*)`).FindStringSubmatch(r.Console)
	if m == nil {
		t.Fatalf("no guest result (exit code %d, %v)\n%s", r.ExitCode, r.Err, r.Tail(3000))
	}
	t.Logf("rping -s:\n%s", m[2])
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	t.Logf("replayed: %d operations, %d matched, %d differences in %v", res.Operations, res.Matched, len(res.Differences), res.Duration)
	for _, d := range res.Differences {
		t.Errorf("%v", d)
	}
	if res.Matched != res.Operations || res.Operations == 0 {
		t.Errorf("%d of %d operations matched", res.Matched, res.Operations)
	}
	if m[1] != "0" {
		t.Errorf("rping -s exited with %s", m[1])
	}
}
