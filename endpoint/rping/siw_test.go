package rping

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/endpoint"
	"github.com/iwkit/iwkit/internal/siwpeer"
)

// siwVariant is one combination run in the guest: siw's module parameters
// (which set what rping -c asks and how rping -s answers), our side's
// configuration, and what we expect.
type siwVariant struct {
	name   string
	params string // mpa_version, mpa_crc_required, peer_to_peer
	client endpoint.Config
	server endpoint.Config
	// expect, per direction (our client → rping -s, rping -c → our
	// server): "ok" = every ping completes and verifies on both sides;
	// "fail" = siw cannot do it and the connection must not complete;
	// "any" = record what happens.
	expectCl, expectSv string
	guestTimeout       int  // seconds for the guest's rping commands (25)
	mayCrash           bool // siw may oops on this path: record it, do not fail
}

type hostResult struct {
	res    Result
	err    error
	guest  string // rping's output in the guest
	rc     string
	params endpoint.Params
}

var siwVariants = []siwVariant{
	{name: "v2", params: "2 N N", client: endpoint.Config{}, server: endpoint.Config{}, expectCl: "ok", expectSv: "ok"},
	{name: "v2-crc", params: "2 Y N", client: endpoint.Config{CRC: true}, server: endpoint.Config{CRC: true}, expectCl: "ok", expectSv: "ok"},
	// CRC MUST be used when the peer asks: we do not ask, siw requires it
	// (as Initiator it sets C; as Responder siw 6.1 does not force C into
	// its Reply, so that direction runs without CRC).
	{name: "v2-crc-siw-asks", params: "2 Y N", client: endpoint.Config{}, server: endpoint.Config{}, expectCl: "ok", expectSv: "ok"},
	// We ask for CRC, siw does not require it.
	{name: "v2-crc-we-ask", params: "2 N N", client: endpoint.Config{CRC: true}, server: endpoint.Config{CRC: true}, expectCl: "ok", expectSv: "ok"},
	{name: "v2-p2p", params: "2 N Y", client: endpoint.Config{PeerToPeer: true}, server: endpoint.Config{PeerToPeer: true}, expectCl: "ok", expectSv: "ok"},
	{name: "v2-p2p-crc", params: "2 Y Y", client: endpoint.Config{PeerToPeer: true, CRC: true}, server: endpoint.Config{PeerToPeer: true, CRC: true}, expectCl: "ok", expectSv: "ok"},
	// Our client offers only the Read RTR, our server accepts only Read.
	{name: "v2-p2p-read-rtr", params: "2 N Y", client: endpoint.Config{PeerToPeer: true, RTR: endpoint.RTRRead}, server: endpoint.Config{PeerToPeer: true, RTR: endpoint.RTRRead}, expectCl: "ok", expectSv: "ok"},
	// MPA Rev 1: no IRD/ORD exchange. rping -c (siw Initiator) against our
	// server works; siw as Responder leaves its ORD at 0, so rping -s
	// cannot post its RDMA Read ("post send error", as in siw↔siw).
	{name: "v1", params: "1 N N", client: endpoint.Config{Rev: 1}, server: endpoint.Config{Rev: 1}, expectCl: "fail", expectSv: "ok"},
	{name: "v1-crc", params: "1 Y N", client: endpoint.Config{Rev: 1, CRC: true}, server: endpoint.Config{Rev: 1, CRC: true}, expectCl: "fail", expectSv: "ok"},
	// siw rejects markers (siw_proc_mpareq: "MPA Markers: currently not
	// supported"): our Request with M gets a rejecting Reply; siw as
	// Initiator gives up on our Reply with M.
	{name: "v2-markers", params: "2 N N", client: endpoint.Config{Markers: true}, server: endpoint.Config{Markers: true}, expectCl: "fail", expectSv: "fail", guestTimeout: 8},
	// Only the zero-length Send RTR, which siw does not implement: siw's
	// Reply names Write only (we then send Terminate 0x2/0x0/0x07), and
	// siw as Initiator answers our Send-only Reply with a Terminate. Last:
	// on that path siw 6.1 trips "kernel BUG at
	// drivers/infiniband/core/iwcm.c:969" (our Terminate is the first FPDU
	// siw reads: it upcalls CLOSE for a connection it never reported
	// ESTABLISHED; peers/siw/iwcm-969.md), which ends the VM.
	{name: "v2-p2p-send-rtr", params: "2 N Y", client: endpoint.Config{PeerToPeer: true, RTR: endpoint.RTRSend}, server: endpoint.Config{PeerToPeer: true, RTR: endpoint.RTRSend}, expectCl: "fail", expectSv: "fail", guestTimeout: 8, mayCrash: true},
}

// The guest signals step i (siwpeer.Ready) once rping -s of variant i
// listens on 7500+i; rping -c of variant i connects to 10.0.2.100:7400+i.
const (
	siwPings = 100
	siwSize  = 100
)

// TestSiwInterop runs our rping client against `rping -s` in a Linux siw
// guest and `rping -c` in the guest against our server, for every variant,
// in one VM boot.
func TestSiwInterop(t *testing.T) {
	if testing.Short() {
		t.Skip("siw interop boots a VM; skipped in -short mode")
	}
	// IWKIT_SIW_INTEROP=0 turns the test off by hand. It runs by default:
	// a guest kernel oops ends the VM at once (and is a failure unless the
	// variant is known to trip siw), and the run stays inside go test's
	// deadline.
	if os.Getenv("IWKIT_SIW_INTEROP") == "0" {
		t.Skip("IWKIT_SIW_INTEROP=0")
	}
	peer := siwpeer.Require(t)
	variants := siwVariants
	if only := os.Getenv("IWKIT_SIW_VARIANTS"); only != "" {
		variants = nil
		for _, v := range siwVariants {
			if strings.Contains(","+only+",", ","+v.name+",") {
				variants = append(variants, v)
			}
		}
	}
	var script strings.Builder
	script.WriteString("P=/sys/module/siw/parameters\nset_params() { echo $1 > $P/mpa_version; echo $2 > $P/mpa_crc_required; echo $3 > $P/peer_to_peer; }\n")
	// Stay inside go test's -timeout.
	budget := siwpeer.Budget(t, 9*time.Minute)
	if budget < 2*time.Minute {
		t.Skipf("only %v left before the test deadline; the siw VM needs more", budget)
	}
	ready := siwpeer.NewReady(t, len(variants))
	listeners := make([]*endpoint.Listener, len(variants))
	fwd := make([]int, len(variants))
	// A guest kernel oops (siw or iw_cm) ends the run at once instead of
	// leaving the rest to time out.
	opts := siwpeer.Options{Timeout: budget, GuestFwd: []string{ready.Fwd()}, KillOn: siwpeer.GuestOops}
	for i, v := range variants {
		gs, gc := 7500+i, 7400+i
		gt := v.guestTimeout
		if gt == 0 {
			gt = 25
		}
		l, err := endpoint.Listen(context.Background(), "tcp", "127.0.0.1:0", &v.server)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		listeners[i] = l
		fwd[i] = opts.AddHostFwd(t, gs)
		opts.AddGuestFwd(gc, l.Addr())
		fmt.Fprintf(&script, `set_params %s
echo "=== VARIANT %s params: $(for p in mpa_version mpa_crc_required peer_to_peer; do printf '%%s=%%s ' $p $(cat $P/$p); done)"
timeout %d rping -s -a 10.0.2.15 -p %d -C %d -S %d -v -V > /tmp/s%d.log 2>&1 & SP=$!
%s
%s
timeout %d rping -c -a 10.0.2.100 -p %d -C %d -S %d -v -V > /tmp/c%d.log 2>&1; CRC=$?
wait $SP; SRC=$?
echo "=== RESULT %s server_rc=$SRC client_rc=$CRC t=${SECONDS}s"
echo "--- rping -s"; tail -n 6 /tmp/s%d.log
echo "--- rping -c"; tail -n 6 /tmp/c%d.log
echo "--- dmesg"; dmesg | grep -i siw | tail -n 4; dmesg -C
echo "=== END %s"
`, v.params, v.name,
			gt, gs, siwPings, siwSize, i, siwpeer.WaitListen(gs), siwpeer.Signal(i), gt, gc, siwPings, siwSize, i, v.name, i, i, v.name)
	}

	host := siwpeer.NewHost(t)
	ctx := host.Ctx
	results := make([]struct{ cl, sv hostResult }, len(variants))
	for i, v := range variants {
		// Our server, for rping -c in the guest.
		l := listeners[i]
		host.Go(func() {
			sctx, scancel := host.ServeCtx()
			defer scancel()
			req, err := l.Accept(sctx)
			if err != nil {
				results[i].sv.err = err
				return
			}
			// The guest's FIN does not reach us (qemu's guestfwd runs nc, which
			// keeps the host socket open), so serve exactly siwPings.
			res, err := ServeRequest(sctx, req, Options{Size: siwSize, Count: siwPings, Validate: true, Config: v.server, Timeout: 30 * time.Second})
			results[i].sv.res, results[i].sv.err = res, err
		})
		// Our client, for rping -s in the guest. slirp accepts before the
		// guest listens and then closes: retry until an MPA Reply comes.
		host.Go(func() {
			if !host.Await(ready.Step(i)) {
				results[i].cl.err = errors.New("the guest never signalled that rping -s listens")
				return
			}
			for try := 0; ; try++ {
				cfg := v.client
				cfg.Timeout = 8 * time.Second
				res, err := Client(ctx, "", Options{Size: siwSize, Count: siwPings, Validate: true, Config: cfg, Timeout: 30 * time.Second,
					StartDelay: 300 * time.Millisecond,
					Dial: func(ctx context.Context) (net.Conn, error) {
						var d net.Dialer
						return d.DialContext(ctx, "tcp", fmt.Sprintf("127.0.0.1:%d", fwd[i]))
					}})
				results[i].cl.res, results[i].cl.err = res, err
				// rping -s listens: a few retries only for a connection slirp
				// closed before it reached the guest.
				var me *endpoint.MPAError
				retry := err != nil && res.Params.Rev == 0 && try < 3 &&
					!errors.As(err, new(*endpoint.RejectError)) && !errors.As(err, &me)
				if !retry {
					return
				}
				select {
				case <-host.Ended():
					return
				case <-ctx.Done():
					return
				case <-time.After(250 * time.Millisecond):
				}
			}
		})
	}
	start := time.Now()
	r := host.Run(t, peer, script.String(), opts)
	crashOK := false
	if r.KillLine != "" {
		variant := oopsVariant(r.Console, r.KillLine)
		for _, v := range variants {
			crashOK = crashOK || v.name == variant && v.mayCrash
		}
		oops := fmt.Sprintf("guest kernel oops during variant %q: %s", variant, r.KillLine)
		if !crashOK {
			t.Errorf("%s\n%s", oops, r.Tail(3000))
		} else {
			t.Logf("siw answered with a kernel BUG (a known siw/iw_cm defect on this path): %s", oops)
		}
	}
	t.Logf("VM run: exit code %d (killed %v, timed out %v, %v) in %v", r.ExitCode, r.Killed, r.TimedOut, r.Err, time.Since(start).Round(time.Second))
	text := r.Console
	if r.ExitCode != 0 && !strings.Contains(text, "=== END") && !crashOK {
		t.Fatalf("siw VM failed: exit code %d, %v\n%s", r.ExitCode, r.Err, r.Tail(4000))
	}
	for i, v := range variants {
		re := regexp.MustCompile(`(?s)=== VARIANT ` + regexp.QuoteMeta(v.name) + ` (.*?)=== END ` + regexp.QuoteMeta(v.name))
		m := re.FindStringSubmatch(text)
		guest := "(no guest output)"
		if m != nil {
			guest = m[1]
		}
		rc := regexp.MustCompile(`server_rc=(\d+) client_rc=(\d+)`).FindStringSubmatch(guest)
		cl, sv := results[i].cl, results[i].sv
		t.Run(v.name, func(t *testing.T) {
			t.Logf("guest:\n%s", guest)
			t.Logf("our client → rping -s: %d pings, err %v, params %+v", cl.res.Pings, cl.err, summarize(cl.res.Params))
			t.Logf("rping -c → our server: %d pings, err %v, params %+v", sv.res.Pings, sv.err, summarize(sv.res.Params))
			check := func(dir, expect string, h hostResult, guestRC string) {
				switch expect {
				case "ok":
					if h.err != nil || h.res.Pings != siwPings {
						t.Errorf("%s: %d/%d pings, %v", dir, h.res.Pings, siwPings, h.err)
					}
					if guestRC != "0" {
						t.Errorf("%s: guest rping exit code %q", dir, guestRC)
					}
				case "fail":
					if h.err == nil || h.res.Pings != 0 {
						t.Errorf("%s: expected siw to refuse, got %d pings, err %v", dir, h.res.Pings, h.err)
					}
				}
			}
			if rc == nil {
				rc = []string{"", "?", "?"}
			}
			check("our client vs rping -s", v.expectCl, cl, rc[1])
			check("rping -c vs our server", v.expectSv, sv, rc[2])
		})
	}
}

// oopsVariant is the variant the guest ran when it printed the oops line:
// the name in the last console line "=== VARIANT NAME ..." before it.
func oopsVariant(console, oops string) string {
	variant := ""
	for _, line := range strings.Split(console, "\n") {
		if line == oops {
			break
		}
		if strings.HasPrefix(line, "=== VARIANT ") {
			variant = strings.Fields(line)[2]
		}
	}
	return variant
}

func summarize(p endpoint.Params) string {
	if p.Rev == 0 {
		return "(not connected)"
	}
	return fmt.Sprintf("rev %d/%d enhanced=%v crc=%v markers tx/rx=%v/%v p2p=%v rtr=%v ird/ord=%d/%d peer ird/ord=%d/%d",
		p.Rev, p.PeerRev, p.Enhanced, p.CRC, p.MarkersTx, p.MarkersRx, p.PeerToPeer, p.RTR, p.IRD, p.ORD, p.PeerIRD, p.PeerORD)
}

// The oops is charged to the variant whose marker came last before it, not
// to one that came after or to a marker's echo inside another line.
func TestOopsVariant(t *testing.T) {
	console := "boot\n=== VARIANT v2 params: x\nok\n+ echo \"=== VARIANT v1 params\"\n=== VARIANT v2-p2p params: y\n[ 1.0] kernel BUG at x.c:1!\n=== VARIANT v1 params: z\n"
	if got := oopsVariant(console, "[ 1.0] kernel BUG at x.c:1!"); got != "v2-p2p" {
		t.Errorf("got %q, want v2-p2p", got)
	}
	if got := oopsVariant("[ 1.0] Oops\n=== VARIANT v2 params\n", "[ 1.0] Oops"); got != "" {
		t.Errorf("an oops before any variant: got %q", got)
	}
}
