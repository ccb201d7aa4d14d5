package perf

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iwkit/iwkit/endpoint"
)

// TestPerftestDuration: under perftest's exchange, write_bw and read_bw
// run for -D (the server, which only waits for the end of the run, gets
// the client's count in its report), and --run_infinitely ticks a row
// per period until stopped; the combinations perftest refuses are
// refused in its words.
func TestPerftestDuration(t *testing.T) {
	for _, test := range []string{WriteBW, ReadBW} {
		t.Run(test, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			l, err := endpoint.Listen(ctx, "tcp", "127.0.0.1:0", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			serve := func() chan Result {
				ch := make(chan Result, 1)
				go func() {
					r, err := ServePerftest(ctx, l, Options{Test: test, Size: 4096})
					if err != nil {
						t.Errorf("server: %v", err)
					}
					ch <- r
				}()
				return ch
			}
			sv := serve()
			cl, err := RunPerftest(ctx, TCPDialer(l.Addr().String()), Options{Test: test, Size: 4096, Duration: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			s := <-sv
			if cl.Row.Iters <= 0 || s.Row.Iters != cl.Row.Iters {
				t.Errorf("-D: client %d iterations, the server's report %d", cl.Row.Iters, s.Row.Iters)
			}
			// --run_infinitely: a row every period until Stop; the test
			// stops it at its second row (no timed assertion).
			sv = serve()
			stop := make(chan struct{})
			var ticks atomic.Int32
			var once sync.Once
			cl, err = RunPerftest(ctx, TCPDialer(l.Addr().String()), Options{Test: test, Size: 4096, Every: 100 * time.Millisecond, Stop: stop,
				Tick: func(r Row) {
					if ticks.Add(1) == 2 {
						once.Do(func() { close(stop) })
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			s = <-sv
			if ticks.Load() < 1 || cl.Row.Iters <= 0 || s.Row.Iters != cl.Row.Iters {
				t.Errorf("--run_infinitely: %d ticks, client %d iterations, server %d", ticks.Load(), cl.Row.Iters, s.Row.Iters)
			}
		})
	}
	// What perftest refuses, refused in its words; what iwperf's side
	// does not run, refused naming what it runs.
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Test: WriteLat, Bidir: true}, "Bidirectional is only available in BW test"},
		{Options{Test: ReadLat, Bidir: true}, "Bidirectional is only available in BW test"},
		{Options{Test: WriteBW, All: true, Duration: time.Second}, "Duration mode currently doesn't support running on all sizes"},
		{Options{Test: ReadLat, Every: time.Second}, "run_infinitely exists only in BW tests for now"},
		{Options{Test: SendBW, Bidir: true, Every: time.Second}, "run_infinitely mode is not supported in SEND Bidirectional BW test"},
	} {
		if err := checkPerftest(&c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s -b %v -a %v -D %v inf %v: %v, want %q", c.o.Test, c.o.Bidir, c.o.All, c.o.Duration, c.o.Every, err, c.want)
		}
	}
}

// TestPerftestInfiniteBoth: --run_infinitely with -b (write_bw, read_bw)
// and send_bw one way run until the client is stopped (here at its
// second row); the client's closing record then ends the server's run,
// and both sides' rows count what moved.
func TestPerftestInfiniteBoth(t *testing.T) {
	for _, c := range []Options{{Test: WriteBW, Bidir: true}, {Test: ReadBW, Bidir: true}, {Test: SendBW}} {
		t.Run(fmt.Sprintf("%s-b=%v", c.Test, c.Bidir), func(t *testing.T) {
			o := c
			o.Size, o.Every = 4096, 100*time.Millisecond
			var sticks atomic.Int32
			so := o
			so.Tick = func(Row) { sticks.Add(1) }
			stop := make(chan struct{})
			var ticks atomic.Int32
			var once sync.Once
			co := o
			co.Stop = stop
			co.Tick = func(Row) {
				if ticks.Add(1) == 2 {
					once.Do(func() { close(stop) })
				}
			}
			cl, s := ptPair(t, so, co)
			if ticks.Load() < 2 || cl.Row.Iters <= 0 || s.Row.Iters <= 0 {
				t.Errorf("client %d ticks, row %+v; server %d ticks, row %+v", ticks.Load(), cl.Row, sticks.Load(), s.Row)
			}
			got := map[string]func(endpoint.Counters) uint64{WriteBW: func(c endpoint.Counters) uint64 { return c.RxWrites },
				ReadBW: func(c endpoint.Counters) uint64 { return c.RxReadReqs }, SendBW: func(c endpoint.Counters) uint64 { return c.RxSends }}[o.Test]
			if got(s.Counter) == 0 || o.Bidir && got(cl.Counter) == 0 {
				t.Errorf("operations seen: server %d, client %d", got(s.Counter), got(cl.Counter))
			}
		})
	}
}
