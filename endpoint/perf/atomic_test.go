package perf

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/endpoint"
)

// atomic_bw runs RFC 7306 FetchAdds or CmpSwaps between two iwkit
// endpoints: every one completes, each moves 8 octets whatever -s says, and
// the server prints ib_atomic_bw's title and the client's row.
func TestAtomicBW(t *testing.T) {
	for _, a := range []string{"", FetchAndAdd, CmpAndSwap} {
		t.Run(a, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cfg := endpoint.Config{CRC: true}
			ts := startServer(t, false, Limits{}, &cfg)
			res, err := Run(ctx, TCPDialer(ts.addr), Options{Test: AtomicBW, Atomic: a, Size: 65536, Iters: 300, Depth: 16, CQMod: 4, Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			if err := <-ts.done; err != nil {
				t.Fatal("server:", err)
			}
			ts.done <- nil
			if res.Row.Size != 8 || res.Row.Iters != 300 || res.Bytes != 300*8 || res.Msgs != 300 || res.Row.MsgRate <= 0 || res.Counter.TxAtomicReqs != 300 {
				t.Fatalf("result %+v", res)
			}
			want := a
			if want == "" {
				want = FetchAndAdd
			}
			var b bytes.Buffer
			FormatRow(&b, AtomicBW, res.Row, false)
			out := ts.out.String()
			if !strings.Contains(out, "Atomic "+want+" BW Test") || !strings.Contains(out, b.String()) {
				t.Fatalf("server printed\n%s\nwant the title and the row\n%s", out, b.String())
			}
		})
	}
	if _, err := Run(context.Background(), TCPDialer("127.0.0.1:1"), Options{Test: AtomicBW, Atomic: "SWAP"}); err == nil || !strings.Contains(err.Error(), "SWAP") {
		t.Fatalf("unknown atomic type: %v", err)
	}
}

// atomic_lat: one atomic at a time, its round trip the sample (as
// ib_atomic_lat), 8 octets.
func TestAtomicLat(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts := startServer(t, false, Limits{}, nil)
	res, err := Run(ctx, TCPDialer(ts.addr), Options{Test: AtomicLat, Atomic: CmpAndSwap, Iters: 200})
	if err != nil {
		t.Fatal(err)
	}
	<-ts.done
	ts.done <- nil
	l := res.Row.Lat
	if res.Row.Size != 8 || res.Row.Iters != 200 || l == nil || !(l.Min <= l.Typical && l.Typical <= l.Max) || res.Counter.TxAtomicReqs != 200 {
		t.Fatalf("result %+v, latency %+v", res, l)
	}
	if out := ts.out.String(); !strings.Contains(out, "Atomic CMP_AND_SWAP Latency Test") {
		t.Fatalf("server printed\n%s", out)
	}
}

// TestAtomicFormatGolden pins ib_atomic_bw's banner title and row.
func TestAtomicFormatGolden(t *testing.T) {
	var b bytes.Buffer
	for _, a := range []string{FetchAndAdd, CmpAndSwap} {
		r := fixedResult(AtomicBW)
		r.Atomic = a
		r.Row = Row{Size: 8, Iters: 5000, PeakBps: 2.5 * (1 << 20), AvgBps: 2.25 * (1 << 20), MsgRate: 294912, Elapsed: time.Second}
		r.Format(&b, false)
	}
	r := fixedResult(AtomicLat)
	r.Atomic = FetchAndAdd
	r.Row.Size = 8
	r.Format(&b, false)
	golden(t, "format-atomic.golden", b.Bytes())
	r = fixedResult(AtomicBW)
	r.Atomic = CmpAndSwap
	golden(t, "json-atomic.golden", JSON([]Result{r}, false))
}
