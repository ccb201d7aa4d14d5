package perf

import (
	"context"
	"testing"
	"time"

	"github.com/iwkit/iwkit/endpoint"
)

// TestPerftestLoopback runs both sides of perftest's exchange against each
// other: every record must pair up, the client's Writes and Reads must
// complete, and the server must print the client's measurement from its
// report (bandwidth tests). (Against perftest itself: TestSiwPerf, in the
// siw VM.)
func TestPerftestLoopback(t *testing.T) {
	for _, test := range PerftestTests {
		for _, qps := range []int{1, 2} {
			t.Run(test, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				l, err := endpoint.Listen(ctx, "tcp", "127.0.0.1:0", &endpoint.Config{})
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				// send_bw: more than its 512 receives, so that the sender
				// needs the receiver's credits to finish.
				n := 300
				if test == SendBW {
					n = 1500
				}
				o := Options{Test: test, Size: 4096, Iters: n, QPs: qps}
				type out struct {
					r   Result
					err error
				}
				sv := make(chan out, 1)
				go func() {
					r, err := ServePerftest(ctx, l, o)
					sv <- out{r, err}
				}()
				cl, err := RunPerftest(ctx, TCPDialer(l.Addr().String()), o)
				if err != nil {
					t.Fatalf("client: %v", err)
				}
				s := <-sv
				if s.err != nil {
					t.Fatalf("server: %v", s.err)
				}
				if cl.Msgs != int64(n*qps) || cl.Row.Iters != n || cl.Row.AvgBps <= 0 || (cl.Row.Lat == nil) != IsBW(test) {
					t.Errorf("client: %d messages, row %+v", cl.Msgs, cl.Row)
				}
				// The server has the client's report of a bandwidth run.
				if s.r.Row.Size != 4096 || s.r.Row.Iters != n || (s.r.Row.AvgBps > 0) != IsBW(test) {
					t.Errorf("server's copy of the client's report: %+v", s.r.Row)
				}
				// What the client's operations moved, as the server's QPs counted it.
				want := uint64(n * qps)
				got := map[string]uint64{WriteBW: s.r.Counter.RxWrites, ReadBW: s.r.Counter.RxReadReqs, SendBW: s.r.Counter.RxSends,
					ReadLat: s.r.Counter.RxReadReqs, SendLat: s.r.Counter.RxSends}[test]
				if got != want {
					t.Errorf("server received %d %s operations, want %d", got, test, want)
				}
			})
		}
	}
}
