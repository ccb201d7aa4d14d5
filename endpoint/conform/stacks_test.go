package conform

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/endpoint"
	"github.com/iwkit/iwkit/endpoint/rping"
)

func runOnly(t *testing.T, o Options, id string) Row {
	t.Helper()
	o.Only = []string{id}
	rows, err := Run(context.Background(), o, nil)
	if err != nil || len(rows) != 1 {
		t.Fatalf("%s: %d rows, %v", id, len(rows), err)
	}
	return rows[0]
}

// A target that resets MPA v2 Requests (an RFC 5044-only peer) and accepts
// v1: the suite falls back and passes, naming the fallback.
func TestV1AfterRefusedV2(t *testing.T) {
	addr := serve(t, rping.Options{Config: endpoint.Config{RefuseV2: true}})
	r := runOnly(t, Options{Addr: addr}, "mpa-v1-after-refused-v2")
	if r.Verdict != Pass || !strings.Contains(r.Got, "v1 retry accepted") {
		t.Errorf("%+v", r)
	}
}

// The suite listens and resets the target's v2 Request: an Initiator with
// the fallback (an iwkit endpoint with FallbackV1, as cxgb4) passes, one
// without fails.
func TestV1RetryAfterAbort(t *testing.T) {
	for _, fallback := range []bool{true, false} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		ln, err := endpoint.Listen(ctx, "tcp", "127.0.0.1:0", &endpoint.Config{})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			dev := endpoint.OpenDevice(endpoint.DeviceAttr{})
			pd := dev.AllocPD()
			cq, _ := dev.CreateCQ(16)
			qp, _ := pd.CreateQP(endpoint.QPAttr{SendCQ: cq, RecvCQ: cq})
			if c, err := endpoint.Dial(ctx, "tcp", ln.Addr().String(), qp, &endpoint.Config{Rev: 2, FallbackV1: fallback}); err == nil {
				c.Close()
			}
		}()
		o := Options{Listen: true, Timeout: time.Second, Only: []string{"mpa-v1-retry-after-abort"}}
		r := runCaseOn(ctx, t, &o, ln)
		want := Pass
		if !fallback {
			want = Fail
		}
		if r.Verdict != want {
			t.Errorf("fallback %v: %+v", fallback, r)
		}
		ln.Close()
		cancel()
	}
}

func runCaseOn(ctx context.Context, t *testing.T, o *Options, ln *endpoint.Listener) Row {
	for _, tc := range Cases() {
		if tc.ID == o.Only[0] {
			return runCase(ctx, o, ln, tc, 1)
		}
	}
	t.Fatalf("no case %s", o.Only[0])
	return Row{}
}

// A target speaking Alibaba erdma's Rev 129 is named when the suite speaks
// RFC MPA, and passes when the suite speaks erdma too.
func TestReplyRevisionERDMA(t *testing.T) {
	addr := serve(t, rping.Options{Config: endpoint.Config{Rev: decode.MPARevERDMA, ERDMA: decode.MPAERDMAExt{Cookie: 5, Bits: 2}}})
	r := runOnly(t, Options{Addr: addr, Config: endpoint.Config{Rev: decode.MPARevERDMA}}, "mpa-rev")
	if r.Verdict != Pass || !strings.Contains(r.Got, "erdma") {
		t.Errorf("erdma both ways: %+v", r)
	}
	// erdma closes on an RFC Request: the suite names the dialect.
	r = runOnly(t, Options{Addr: addr, Timeout: time.Second}, "mpa-rev")
	if r.Verdict != Fail || !strings.Contains(r.Reason, "erdma") {
		t.Errorf("RFC Request to an erdma target: %+v", r)
	}
	// An RFC target passes.
	r = runOnly(t, Options{Addr: serve(t, rping.Options{})}, "mpa-rev")
	if r.Verdict != Pass || r.Got != "Reply Rev 2" {
		t.Errorf("RFC target: %+v", r)
	}
}
