package replay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/endpoint"
	"github.com/iwkit/iwkit/endpoint/perf"
	"github.com/iwkit/iwkit/pcap"
)

// TestMaskPerftest replays the client of a siw ib_write_bw -R capture
// against iwkit's perftest server (iwperf --perftest): without --mask
// perftest, the fields perftest draws anew every run (qpn, psn, rkey,
// vaddr, gid, the padding and the reports) are false differences; with
// it none of the control channel's Sends differ, and what is left are the
// handshake's IRD/ORD (iwkit's QPs answer 16, siw's perftest 0: a real
// difference between the two). The replay's own pcap holds both
// connections.
func TestMaskPerftest(t *testing.T) {
	run := func(mask []MaskRule, capt *endpoint.Capture) *Result {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		l, err := endpoint.Listen(ctx, "tcp", "127.0.0.1:0", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		done := make(chan error, 1)
		go func() {
			_, err := perf.ServePerftest(ctx, l, perf.Options{Test: perf.WriteBW, Size: 4096, Iters: 20})
			done <- err
		}()
		res, err := Stateful(ctx, mustLoad(t, siw("ib_write_bw_4096.pcap")), StatefulOptions{Side: Initiator, Addr: l.Addr().String(),
			Topspeed: true, Timeout: 5 * time.Second, Mask: mask, Capture: capt})
		if err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("perftest server: %v", err)
		}
		return res
	}
	plain := run(nil, nil)
	differs := 0
	for _, d := range plain.Differences {
		if d.Kind == "differs" {
			differs++
		}
	}
	if differs < 5 || plain.Masked != 0 {
		t.Errorf("without a mask: %d Sends differ (want the run's own fields, at least 5), %d octets masked", differs, plain.Masked)
	}
	masks, err := ParseMasks("perftest")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "played.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	capt, _ := endpoint.NewCapture(f)
	res := run(masks, capt)
	capt.Flush()
	f.Close()
	for _, d := range res.Differences {
		if d.Kind != "handshake" || !strings.Contains(d.What, "IRD/ORD") {
			t.Errorf("with --mask perftest: %v", d)
		}
	}
	if res.Masked == 0 {
		t.Error("nothing masked")
	}
	t.Logf("without: %d differences; with: %d (%d octets masked)", len(plain.Differences), len(res.Differences), res.Masked)
	// The pcap: both connections' handshakes and the run.
	pf, _ := os.Open(path)
	defer pf.Close()
	r, err := pcap.NewReader(pf)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var fr pcap.Frame
	for r.Next(&fr) == nil {
		n++
	}
	if n < 50 {
		t.Errorf("the replay's pcap has %d frames", n)
	}
	if _, err := ParseMasks("perftest,nosuch"); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("unknown rule: %v", err)
	}
}
