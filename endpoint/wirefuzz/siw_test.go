package wirefuzz

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/internal/siwpeer"
)

const siwPort = 7175 // rping -s -P in the guest

// siwFuzzScript keeps `rping -s -P` listening in the guest (restarted if it
// ends) until the VM is killed: the fuzzer's target is the guest's siw and
// iw_cm, and a dead rping must not be taken for a dead kernel.
var siwFuzzScript = fmt.Sprintf(`(while true; do rping -s -P -a 10.0.2.15 -p %[1]d -S 64 > /dev/null 2>&1; sleep 0.2; done) &
%[2]s
%[3]s
for k in $(seq 3000); do sleep 1; done
`, siwPort, siwpeer.WaitListen(siwPort), siwpeer.Signal(0))

// oopsLine drops the console line's timestamp.
var oopsLine = regexp.MustCompile(`^.*?\] `)

// TestSiwFuzzFindsIwcm969 runs the fuzzer against `rping -s -P` on a
// Linux siw guest until the guest dies or the search budget runs out,
// then lets it minimise the failing inputs, booting a fresh guest for
// the candidates (one restart: a boot under TCG takes 12 s on an idle
// machine, two minutes on a loaded one; the first candidate that kills
// the fresh guest is the case). Nothing
// in the fuzzer knows the crash: it must find a peer-to-peer Request,
// wait for siw's Reply and then reset the connection or send a first FPDU
// siw rejects (peers/siw/iwcm-969.md), and the minimised case must name
// the kernel BUG at iwcm.c:969 and keep the peer-to-peer bit. The guest
// is expected to die; every VM is killed and checked gone at the end.
func TestSiwFuzzFindsIwcm969(t *testing.T) {
	peer := siwpeer.Require(t)
	budget := siwpeer.Budget(t, 7*time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	var cur *siwpeer.VM
	var names []string
	boot := func(ctx context.Context) (string, error) {
		if cur != nil {
			cur.Kill()
			cur.Wait()
		}
		t0 := time.Now()
		ready := siwpeer.NewReady(t, 1)
		opts := siwpeer.Options{Timeout: time.Until(deadline(ctx)) + 30*time.Second, Out: t.TempDir(),
			GuestFwd: []string{ready.Fwd()}, KillOn: siwpeer.GuestOops}
		port := opts.AddHostFwd(t, siwPort)
		vm, err := peer.Start(t, siwFuzzScript, opts)
		if err != nil {
			return "", err
		}
		cur = vm
		names = append(names, vm.Name)
		select {
		case <-ready.Step(0):
		case <-vm.Done():
			r := vm.Wait()
			return "", fmt.Errorf("the guest ended before rping listened (exit %d)\n%s", r.ExitCode, r.Tail(3000))
		case <-ctx.Done():
			return "", ctx.Err()
		}
		t.Logf("guest %d up in %v", len(names), time.Since(t0).Round(time.Second))
		return fmt.Sprintf("127.0.0.1:%d", port), nil
	}
	defer func() {
		if cur != nil {
			cur.Kill()
			cur.Wait()
		}
		for _, n := range names {
			if err := siwpeer.Gone(n, 100); err != nil {
				t.Error(err)
			}
		}
	}()
	// cause waits for the guest's console watch to kill it on the oops.
	cause := func() string {
		select {
		case <-cur.Done():
		case <-time.After(30 * time.Second):
			cur.Kill()
		}
		r := cur.Wait()
		if r.KillLine == "" {
			return fmt.Sprintf("the guest stopped answering without a kernel oops (exit %d, killed %v)", r.ExitCode, r.Killed)
		}
		return strings.TrimRight(oopsLine.ReplaceAllString(r.KillLine, ""), "!")
	}
	addr, err := boot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The search may find another way to stop the guest first (one run
	// found a Request whose PD_Length says 1024 after which the guest
	// stopped answering, with no oops): that is logged as a finding, and
	// the search goes on in a fresh guest while the budget lasts.
	var c Case
	var rep Report
	// livenessTimeout: how long the guest may take to answer a probe's
	// MPA Request before it counts as dead. Under TCG, with the rest of
	// the test suite on the same 2 cores, 5 s was too short: a CI run
	// took two slow answers for deaths ("stopped answering without a
	// kernel oops") and spent its budget on them.
	const livenessTimeout = 15 * time.Second
	for round := 1; ; round++ {
		seed := time.Now().UnixNano()
		o := Options{Addr: addr, Seed: seed, Duration: min(150*time.Second, budget/2), Timeout: livenessTimeout,
			Drain: 150 * time.Millisecond, Settle: 100 * time.Millisecond, Out: t.TempDir(),
			Restart: boot, Restarts: 1, MinimiseAttempts: 24, Cause: cause, Logf: t.Logf}
		t0 := time.Now()
		rep, err = Fuzz(ctx, o)
		t.Logf("round %d, seed %d: %d inputs, %.1f inputs/s, died %v after %v; whole round %v", round, seed, rep.Inputs, rep.PerSec, rep.Died,
			rep.FoundAt.Round(time.Second), time.Since(t0).Round(time.Second))
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatal(err)
		}
		if !rep.Died {
			t.Fatalf("the search did not kill the guest in %d inputs (seed %d)", rep.Inputs, seed)
		}
		if c, err = ReadCase(rep.CasePath); err != nil {
			t.Fatal(err)
		}
		t.Logf("case %s: cause %q; minimised %+v", rep.CasePath, c.Cause, c.Minimised)
		for _, in := range c.Inputs {
			t.Logf("  %s", in)
		}
		if strings.Contains(c.Cause, "kernel BUG") || ctx.Err() != nil {
			break
		}
		t.Logf("round %d found another failure (above); searching again in a fresh guest", round)
		if addr, err = boot(ctx); err != nil {
			t.Fatalf("no budget left for another round: %v", err)
		}
	}
	if !strings.Contains(c.Cause, "kernel BUG at drivers/infiniband/core/iwcm.c:969") {
		t.Errorf("the case's cause is %q, want the kernel BUG at iwcm.c:969", c.Cause)
	}
	if rep.Inputs < 2 {
		t.Errorf("the first input killed the guest: the search did not search")
	}
	if !c.Minimised.Confirmed {
		t.Errorf("no minimised candidate was seen to kill a fresh guest (%+v)", c.Minimised)
	}
	last := c.Inputs[len(c.Inputs)-1]
	p2p := false
	for _, m := range last.Request {
		p2p = p2p || m.F == "v2.a" && m.V != 0
	}
	if !p2p || len(last.Steps) == 0 || last.Steps[0].Op != OpAwait {
		t.Errorf("the minimised input %s lacks the peer-to-peer Request or the wait for siw's Reply", last)
	}
}

func deadline(ctx context.Context) time.Time {
	d, _ := ctx.Deadline()
	return d
}
