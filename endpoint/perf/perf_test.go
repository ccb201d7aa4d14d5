package perf

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iwkit/iwkit/endpoint"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type testServer struct {
	addr string
	out  *syncBuf
	log  *syncBuf
	done chan error
	srv  *Server
}

// startServer runs a Server on loopback until the test ends.
func startServer(t *testing.T, persistent bool, lim Limits, cfg *endpoint.Config) *testServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l, err := endpoint.Listen(ctx, "tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{addr: l.Addr().String(), out: &syncBuf{}, log: &syncBuf{}, done: make(chan error, 1)}
	ts.srv = &Server{Limits: lim, Out: ts.out, Log: ts.log}
	go func() { ts.done <- ts.srv.Serve(ctx, l, persistent) }()
	t.Cleanup(func() {
		cancel()
		l.Close()
		select {
		case <-ts.done:
		case <-time.After(20 * time.Second):
			t.Error("server did not stop")
		}
	})
	return ts
}

func TestEveryTest(t *testing.T) {
	for _, test := range Tests {
		if isAtomicTest(test) {
			continue // always 8 octets: TestAtomicBW, TestAtomicLat
		}
		for _, size := range []int{0, 100, 70000} {
			t.Run(fmt.Sprint(test, "/", size), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				cfg := endpoint.Config{CRC: true}
				ts := startServer(t, false, Limits{}, &cfg)
				res, err := Run(ctx, TCPDialer(ts.addr), Options{Test: test, Size: size, Iters: 300, Depth: 16, CQMod: 4, Config: cfg})
				if err != nil {
					t.Fatal(err)
				}
				if err := <-ts.done; err != nil {
					t.Fatal("server:", err)
				}
				ts.done <- nil
				if res.Row.Iters != 300 || res.Bytes != 300*int64(size) || res.Msgs != 300 {
					t.Fatalf("result %+v", res)
				}
				if IsLat(test) != (res.Row.Lat != nil) {
					t.Fatalf("latency %+v", res.Row.Lat)
				}
				if IsLat(test) && !(res.Row.Lat.Min <= res.Row.Lat.Typical && res.Row.Lat.Typical <= res.Row.Lat.P99 && res.Row.Lat.P99 <= res.Row.Lat.Max) {
					t.Fatalf("latency %+v", res.Row.Lat)
				}
				if !res.Params.CRC {
					t.Fatal("no CRC")
				}
				// The server printed the same row: the client's report.
				var b bytes.Buffer
				FormatRow(&b, test, res.Row, false)
				if !strings.Contains(ts.out.String(), b.String()) || !strings.Contains(ts.out.String(), Title(test, false)) {
					t.Fatalf("server printed\n%s\nwant the row\n%s", ts.out, b.String())
				}
				if test == SendBW || test == SendLat || test == WriteLat {
					if res.Counter.TxSends < 300 {
						t.Fatalf("counters %+v", res.Counter)
					}
				}
			})
		}
	}
}

// TestQPsAndBidir runs -q 4 and -b: every connection moves its messages,
// and the server's table sums them as the client's does.
func TestQPsAndBidir(t *testing.T) {
	for _, test := range []string{WriteBW, SendBW, ReadBW} {
		for _, bidir := range []bool{false, true} {
			t.Run(fmt.Sprint(test, bidir), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				ts := startServer(t, false, Limits{}, nil)
				var got []Result
				var mu sync.Mutex
				ts.srv.OnResult = func(r Result) { mu.Lock(); got = append(got, r); mu.Unlock() }
				res, err := Run(ctx, TCPDialer(ts.addr), Options{Test: test, Size: 4096, Iters: 200, Depth: 32, QPs: 4, Bidir: bidir})
				if err != nil {
					t.Fatal(err)
				}
				if err := <-ts.done; err != nil {
					t.Fatal("server:", err)
				}
				ts.done <- nil
				conns := int64(4)
				if bidir {
					conns = 8
				}
				if res.Msgs != 200*conns || res.Bytes != 200*4096*conns {
					t.Fatalf("msgs %d bytes %d, want %d connections of 200", res.Msgs, res.Bytes, conns)
				}
				if bidir && (res.Counter.RxOctets < 200*4096*4 || res.Counter.TxOctets < 200*4096*4) {
					t.Fatalf("one direction idle: %+v", res.Counter)
				}
				mu.Lock()
				defer mu.Unlock()
				if len(got) != 1 || got[0].Msgs != res.Msgs || got[0].Bytes != res.Bytes {
					t.Fatalf("server results %+v", got)
				}
				if !strings.Contains(ts.out.String(), Title(test, bidir)) {
					t.Fatalf("server banner:\n%s", ts.out)
				}
			})
		}
	}
}

// TestSweep is -a: one row per size, 2 .. 8 MiB, on one server that ends
// after the sweep.
func TestSweep(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	ts := startServer(t, false, Limits{}, nil)
	var sizes []int
	err := Sweep(ctx, TCPDialer(ts.addr), Options{Test: WriteBW, Iters: 20, Depth: 8}, SweepSizes(), func(r Result) {
		if r.Msgs != 20 || r.Bytes != 20*int64(r.Row.Size) {
			t.Errorf("size %d: %+v", r.Row.Size, r)
		}
		sizes = append(sizes, r.Row.Size)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-ts.done; err != nil {
		t.Fatal("server:", err)
	}
	ts.done <- nil
	if len(sizes) != 23 || sizes[0] != 2 || sizes[22] != 8<<20 {
		t.Fatalf("sizes %v", sizes)
	}
	out := ts.out.String()
	if strings.Count(out, "BW Test") != 1 || strings.Count(out, "\n 8388608 ") != 1 || strings.Count(out, "\n 2 ") != 1 {
		t.Fatalf("server output:\n%s", out)
	}
}

func TestDuration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts := startServer(t, false, Limits{}, nil)
	res, err := Run(ctx, TCPDialer(ts.addr), Options{Test: WriteBW, Size: 4096, Duration: 200 * time.Millisecond})
	// No timed assertion: the run's clock starts at its first post, after
	// the duration's timer, so Elapsed may fall a hair short of -D.
	if err != nil || res.Row.Iters == 0 || res.Row.Elapsed <= 0 {
		t.Fatalf("%+v %v", res, err)
	}
}

// TestInfinitely is --run_infinitely: a report every interval until Stop.
func TestInfinitely(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts := startServer(t, false, Limits{}, nil)
	stop := make(chan struct{})
	var ticks []Row
	var mu sync.Mutex
	o := Options{Test: SendBW, Size: 1024, Every: 50 * time.Millisecond, Stop: stop, Tick: func(r Row) {
		mu.Lock()
		defer mu.Unlock()
		ticks = append(ticks, r)
		if len(ticks) == 4 {
			close(stop)
		}
	}}
	res, err := Run(ctx, TCPDialer(ts.addr), o)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var sum int
	for _, r := range ticks {
		sum += r.Iters
	}
	if len(ticks) < 4 || sum == 0 || res.Msgs < int64(sum) {
		t.Fatalf("ticks %+v, result %+v", ticks, res)
	}
}

// rawRequest asks the server for what it likes, as a hostile client can.
func rawRequest(ctx context.Context, addr string, r request) error {
	dev := endpoint.OpenDevice(endpoint.DeviceAttr{})
	cq, _ := dev.CreateCQ(16)
	qp, _ := dev.AllocPD().CreateQP(endpoint.QPAttr{SendCQ: cq, RecvCQ: cq})
	pd, _ := json.Marshal(r)
	conn, err := endpoint.Dial(ctx, "tcp", addr, qp, &endpoint.Config{PrivateData: pd})
	if err == nil {
		conn.Close()
	}
	return err
}

// TestServerLimits: a request for a 1 GiB buffer × 1024, or any other
// excess, is refused with the reason in the Reject, and the server goes on
// serving.
func TestServerLimits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ts := startServer(t, true, Limits{MaxMem: 64 << 20}, nil)
	ok := request{Magic: magic, Test: WriteBW, Size: 4096, Depth: 16, Iters: 10, QPs: 1, Run: 1, Sweep: 1}
	bad := map[string]func(r *request){
		"size 1073741824 is not within this server's 0..8388608": func(r *request) { r.Size = 1 << 30; r.Depth = 1024 },
		"tx depth 100000":      func(r *request) { r.Depth = 100000 },
		"1000 QPs":             func(r *request) { r.QPs = 1000 },
		"unknown test":         func(r *request) { r.Test = "rm_rf" },
		"iterations":           func(r *request) { r.Reverse = true; r.Iters = 1 << 40 },
		"not an iwperf client": func(r *request) { r.Magic = "1" },
		"above this server's limit of 67108864": func(r *request) {
			r.Test, r.Size, r.Depth = Stress, 1<<20, 64
			r.Stress = &stressReq{Region: 1 << 40}
		},
	}
	for want, mod := range bad {
		r := ok
		mod(&r)
		err := rawRequest(ctx, ts.addr, r)
		var re *endpoint.RejectError
		if !errors.As(err, &re) || !strings.Contains(string(re.PrivateData), want) {
			t.Errorf("%s: got %v (%q)", want, err, func() []byte {
				if re != nil {
					return re.PrivateData
				}
				return nil
			}())
		}
	}
	// Still serving; through Run the refusal reads as an error.
	if _, err := Run(ctx, TCPDialer(ts.addr), Options{Test: ReadBW, Size: 4096, Iters: 50}); err != nil {
		t.Fatal(err)
	}
	_, err := Run(ctx, TCPDialer(ts.addr), Options{Test: WriteBW, Size: 8 << 20, Iters: 5, QPs: 8})
	if err == nil || !strings.Contains(err.Error(), "the server refused: iwperf: refused: busy") {
		t.Fatalf("8 QPs of 16 MiB against 64 MiB: %v", err)
	}
	if _, err := Run(ctx, TCPDialer(ts.addr), Options{Test: SendLat, Size: 64, Iters: 50}); err != nil {
		t.Fatal(err)
	}
	// Every reservation is given back once the server's side has ended.
	for i := 0; ; i++ {
		ts.srv.mu.Lock()
		conns, mem := ts.srv.conns, ts.srv.mem
		ts.srv.mu.Unlock()
		if conns == 0 && mem == 0 {
			break
		}
		if i == 200 {
			t.Fatalf("reservations left: %d connections, %d octets", conns, mem)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestIRDORD(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, test := range []string{ReadBW, WriteLat} {
		ts := startServer(t, false, Limits{}, nil)
		res, err := Run(ctx, TCPDialer(ts.addr), Options{Test: test, Size: 64, Iters: 20, IRD: 3, ORD: 5})
		if err != nil {
			t.Fatal(err)
		}
		if res.Params.IRD != 3 || res.Params.ORD != 5 {
			t.Fatalf("%s: IRD/ORD %d/%d, want 3/5", test, res.Params.IRD, res.Params.ORD)
		}
	}
}

// TestPendingRunsBounded: runs whose announced connections never all
// come do not pile up in the server.
func TestPendingRunsBounded(t *testing.T) {
	s := &Server{runs: map[uint64]*runState{}, sweeps: map[uint64]bool{}}
	for i := 0; i < 3*maxPending; i++ {
		s.record(request{Test: WriteBW, Run: uint64(i + 1), QPs: 2}, stats{}, nil, endpoint.Params{}, Address{}, Address{})
	}
	if len(s.runs) != maxPending || s.runs[uint64(3*maxPending)] == nil {
		t.Fatalf("%d runs pending", len(s.runs))
	}
}
