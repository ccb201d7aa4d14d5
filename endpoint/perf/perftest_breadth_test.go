package perf

import (
	"context"
	"testing"
	"time"

	"github.com/iwkit/iwkit/endpoint"
)

// TestPerftestBreadth runs iwperf's client against iwperf's server over
// perftest's exchange with -a, -b and -D where perftest has them: every
// size of -a on the same connections (each size's row on the sides that
// print one), -b with both sides' Writes or Reads counted by the other's
// QPs and both reports summed, -D for read_lat.
func TestPerftestBreadth(t *testing.T) {
	nSizes := len(SweepSizes())
	for _, c := range []struct {
		name string
		o    Options
	}{
		{"write_bw-a", Options{Test: WriteBW, All: true}},
		{"read_bw-a", Options{Test: ReadBW, All: true}},
		{"write_lat-a", Options{Test: WriteLat, All: true}},
		{"read_lat-a", Options{Test: ReadLat, All: true}},
		{"send_lat-a", Options{Test: SendLat, All: true, QPs: 2}},
		{"write_bw-b", Options{Test: WriteBW, Bidir: true, QPs: 2}},
		{"read_bw-b", Options{Test: ReadBW, Bidir: true}},
		{"write_bw-a-b", Options{Test: WriteBW, Bidir: true, All: true}},
		{"read_bw-b-D", Options{Test: ReadBW, Bidir: true, Duration: 200 * time.Millisecond}},
		{"read_lat-D", Options{Test: ReadLat, Duration: 200 * time.Millisecond}},
		{"send_bw-a", Options{Test: SendBW, All: true, QPs: 2}},
		{"send_bw-D", Options{Test: SendBW, Duration: 300 * time.Millisecond}},
		{"send_bw-b", Options{Test: SendBW, Bidir: true, QPs: 2, Iters: 1500}},
		{"send_bw-a-b", Options{Test: SendBW, Bidir: true, All: true}},
		{"send_bw-b-D", Options{Test: SendBW, Bidir: true, Duration: 300 * time.Millisecond}},
		{"write_lat-D", Options{Test: WriteLat, Duration: 300 * time.Millisecond}},
		{"send_lat-D", Options{Test: SendLat, Duration: 300 * time.Millisecond}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.Size, o.Iters = 4096, max(o.Iters, 20)
			var srows, crows []Result
			so, co := o, o
			so.Each = func(r Result) { srows = append(srows, r) }
			co.Each = func(r Result) { crows = append(crows, r) }
			cl, s := ptPair(t, so, co)
			wantRows := 1
			if o.All {
				wantRows = nSizes
			}
			if len(crows) != wantRows || crows[len(crows)-1].Row != cl.Row {
				t.Fatalf("client: %d rows, want %d", len(crows), wantRows)
			}
			for i, r := range crows {
				if want := o.Size; o.All && r.Row.Size != 2<<i || !o.All && r.Row.Size != want {
					t.Errorf("client row %d: size %d", i, r.Row.Size)
				}
				if r.Row.Iters <= 0 || o.Duration == 0 && r.Row.Iters != o.Iters || r.Row.AvgBps <= 0 {
					t.Errorf("client row %d: %+v", i, r.Row)
				}
			}
			// The server prints a row per size where perftest's does: both
			// sides of write_lat, send_lat's echoes and -b; the one-way
			// write_bw, read_bw and read_lat servers only wait.
			prints := o.Test == WriteLat || o.Test == SendLat || o.Test == SendBW || o.Bidir
			if prints && len(srows) != wantRows {
				t.Errorf("server: %d rows, want %d", len(srows), wantRows)
			}
			if !prints && len(srows) != 0 {
				t.Errorf("server: %d rows of a run it only waits for", len(srows))
			}
			// Every operation of the client's reached the server's QPs,
			// and with -b every one of the server's the client's.
			qps := uint64(max(o.QPs, 1))
			perSize := uint64(cl.Row.Iters) * qps
			total := perSize * uint64(wantRows)
			got := map[string]func(endpoint.Counters) uint64{
				WriteBW: func(c endpoint.Counters) uint64 { return c.RxWrites }, ReadBW: func(c endpoint.Counters) uint64 { return c.RxReadReqs },
				WriteLat: func(c endpoint.Counters) uint64 { return c.RxWrites }, ReadLat: func(c endpoint.Counters) uint64 { return c.RxReadReqs },
				SendLat: func(c endpoint.Counters) uint64 { return c.RxSends }, SendBW: func(c endpoint.Counters) uint64 { return c.RxSends }}[o.Test]
			if o.Duration > 0 {
				total = 0 // -D: at least one each way
			}
			if n := got(s.Counter); n < total || n == 0 {
				t.Errorf("the server's QPs saw %d of the client's operations, want %d", n, total)
			}
			if o.Bidir {
				if n := got(cl.Counter); n == 0 || o.Duration == 0 && n < total {
					t.Errorf("the client's QPs saw %d of the server's operations, want %d", n, total)
				}
				// Both sides print the sum of both reports (but a timed
				// send_bw, which exchanges none: its own).
				if o.Test == SendBW && o.Duration > 0 {
					if cl.Row.AvgBps <= 0 || s.Row.AvgBps <= 0 {
						t.Errorf("-b -D: client %+v, server %+v", cl.Row, s.Row)
					}
				} else if !cl.Bidir || cl.Row.AvgBps <= 0 || s.Row.AvgBps <= 0 || cl.Msgs <= int64(perSize) {
					t.Errorf("-b: client %+v (%d messages), server %+v", cl.Row, cl.Msgs, s.Row)
				}
			}
		})
	}
}

// ptPair runs ServePerftest with so and RunPerftest with co against it
// over loopback, within a minute, and returns both results; either's
// error fails t.
func ptPair(t *testing.T, so, co Options) (client, server Result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// write_lat's server writes first.
	l, err := endpoint.Listen(ctx, "tcp", "127.0.0.1:0", &endpoint.Config{EarlyResponder: so.Test == WriteLat})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var serr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		server, serr = ServePerftest(ctx, l, so)
	}()
	client, err = RunPerftest(ctx, TCPDialer(l.Addr().String()), co)
	<-done
	if err != nil || serr != nil {
		t.Fatalf("client: %v; server: %v", err, serr)
	}
	return client, server
}
