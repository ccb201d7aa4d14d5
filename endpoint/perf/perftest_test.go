package perf

import (
	"context"
	"encoding/hex"
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
			if test == WriteLat && qps > 1 {
				continue // perftest's write_lat runs on one QP
			}
			t.Run(test, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				// write_lat's server writes first.
				l, err := endpoint.Listen(ctx, "tcp", "127.0.0.1:0", &endpoint.Config{EarlyResponder: test == WriteLat})
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
				s := <-sv
				if err != nil || s.err != nil {
					t.Fatalf("client: %v; server: %v", err, s.err)
				}
				if cl.Msgs != int64(n*qps) || cl.Row.Iters != n || cl.Row.AvgBps <= 0 || (cl.Row.Lat == nil) != IsBW(test) {
					t.Errorf("client: %d messages, row %+v", cl.Msgs, cl.Row)
				}
				// The server has the client's report of a bandwidth run;
				// write_lat's server measures its own, as perftest's does.
				if s.r.Row.Size != 4096 || s.r.Row.Iters != n || (s.r.Row.AvgBps > 0) != (IsBW(test) || test == WriteLat) ||
					(s.r.Row.Lat != nil) != (test == WriteLat) {
					t.Errorf("server's copy of the client's report: %+v", s.r.Row)
				}
				if test == WriteLat && cl.Counter.RxWrites != uint64(n) {
					t.Errorf("write_lat's client had %d Writes placed, want %d", cl.Counter.RxWrites, n)
				}
				// What the client's operations moved, as the server's QPs counted it.
				want := uint64(n * qps)
				got := map[string]uint64{WriteBW: s.r.Counter.RxWrites, ReadBW: s.r.Counter.RxReadReqs, SendBW: s.r.Counter.RxSends,
					WriteLat: s.r.Counter.RxWrites, ReadLat: s.r.Counter.RxReadReqs, SendLat: s.r.Counter.RxSends}[test]
				if got != want {
					t.Errorf("server received %d %s operations, want %d", got, test, want)
				}
			})
		}
	}
}

// TestPTDestCaptured decodes a pingpong_dest as ib_write_bw sent it over
// siw (testdata/siw/ib_write_bw_4096.pcap, frame 28's Send), re-encodes
// it, and refuses every other length.
func TestPTDestCaptured(t *testing.T) {
	b, _ := hex.DecodeString("00000000" + "00000001" + "00000003" + "00e0a790" + "3bb6ba00" + "00000000" +
		"0000562aa1241000" + "52540012345600000000000000000000" + "00000000" + "00000000")
	d, err := decodeDest(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := (ptDest{OutReads: 1, QPN: 3, PSN: 0xe0a790, RKey: 0x3bb6ba00, VAddr: 0x562aa1241000}); d != want {
		t.Fatalf("decoded %+v, want %+v", d, want)
	}
	if e, _ := decodeDest(d.encode()); e != d {
		t.Fatalf("re-encoded %+v", e)
	}
	for n := 0; n < len(b)+8; n++ {
		if n == ptDestLen {
			continue
		}
		if _, err := decodeDest(append(b[:0:0], append(b, make([]byte, 8)...)[:n]...)); err == nil {
			t.Fatalf("a %d-octet record decoded", n)
		}
	}
}
