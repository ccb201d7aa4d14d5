package perf

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/endpoint"
	"github.com/iwkit/iwkit/internal/rudepeer"
)

// A persistent server survives a bare connect-and-close, half an MPA
// Request then silence, and 1,000 silent connections: each is counted and
// logged, at most Backlog of them are negotiating at a time, each for at
// most the MPA deadline, and a client afterwards is served (issue 31,
// broken item 1: the first bare connect used to end the server with
// "reading the MPA Request: EOF").
func TestServerSurvivesRudeClients(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := endpoint.Config{Timeout: 300 * time.Millisecond}
	ts := startServer(t, true, Limits{}, &cfg)
	rep, err := rudepeer.Abuse(ts.addr, 1000, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rep)
	select {
	case err := <-ts.done:
		t.Fatalf("the server ended: %v\n%s", err, ts.log)
	default:
	}
	for _, p := range rep.Problems(endpoint.DefaultBacklog) {
		t.Error(p)
	}
	res, err := Run(ctx, TCPDialer(ts.addr), Options{Test: WriteBW, Size: 4096, Iters: 100, Depth: 8})
	if err != nil {
		t.Fatalf("a client after the rude ones: %v\n%s", err, ts.log)
	}
	if res.Msgs == 0 {
		t.Fatal("no messages")
	}
	// Bare, half, the silent ones closed at the deadline (the rest
	// were closed at once, without a goroutine, by the full backlog).
	if n := ts.srv.ConnErrors(); n < 3 {
		t.Errorf("%d connection errors counted\n%s", n, ts.log)
	}
}

// ServePerftest passes over the connections that fail before their MPA
// Request (each logged) and serves the perftest client that comes after
// them; a closed listener is a *ListenerError, which ends a persistent
// server (issue 31, broken item 1).
func TestServePerftestSurvivesRudeClients(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// perftest's client waits about a second (ptSettle) before its
	// first FPDU: the MPA deadline (Timeout) bounds that wait as well.
	l, err := endpoint.Listen(ctx, "tcp", "127.0.0.1:0", &endpoint.Config{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var log syncBuf
	o := Options{Test: WriteBW, Size: 4096, Iters: 100, Log: &log}
	type out struct {
		r   Result
		err error
	}
	sv := make(chan out, 1)
	go func() {
		r, err := ServePerftest(ctx, l, o)
		sv <- out{r, err}
	}()
	if _, err := rudepeer.Abuse(l.Addr().String(), 100, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	cl, err := RunPerftest(ctx, TCPDialer(l.Addr().String()), o)
	s := <-sv
	if err != nil || s.err != nil {
		t.Fatalf("client: %v; server: %v\n%s", err, s.err, log.String())
	}
	if cl.Msgs != 100 || !strings.Contains(log.String(), "EOF") {
		t.Fatalf("%d messages; log:\n%s", cl.Msgs, log.String())
	}
	l.Close()
	if _, err := ServePerftest(ctx, l, o); !errors.As(err, new(*ListenerError)) {
		t.Fatalf("closed listener: %v, want a *ListenerError", err)
	}
}

// A client that asks for a run and then sends nothing gives its
// connection, and its share of the limits, back after the timeout: with
// room for one connection, a client after it is served (a silent client
// used to hold the slot until the server ended).
func TestServerDropsSilentRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := endpoint.Config{}
	ctxS, cancelS := context.WithCancel(ctx)
	defer cancelS()
	l, err := endpoint.Listen(ctxS, "tcp", "127.0.0.1:0", &cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var log syncBuf
	srv := &Server{Limits: Limits{MaxConns: 1}, Timeout: 300 * time.Millisecond, Log: &log}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctxS, l, true) }()
	defer func() { cancelS(); l.Close(); <-done }()

	// A valid request, then silence.
	pd, _ := json.Marshal(request{Magic: magic, Test: WriteBW, Size: 64, Depth: 1, Iters: 10, QPs: 1, Run: 1, Sweep: 1, Final: true})
	dev := endpoint.OpenDevice(endpoint.DeviceAttr{})
	cq, _ := dev.CreateCQ(8)
	qp, _ := dev.AllocPD().CreateQP(endpoint.QPAttr{SendCQ: cq, RecvCQ: cq})
	silent, err := endpoint.Dial(ctx, "tcp", l.Addr().String(), qp, &endpoint.Config{PrivateData: pd})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	for !strings.Contains(log.String(), "nothing from the peer") {
		select {
		case <-ctx.Done():
			t.Fatalf("the silent run was never dropped:\n%s", log.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if _, err := Run(ctx, TCPDialer(l.Addr().String()), Options{Test: WriteBW, Size: 4096, Iters: 50, Depth: 4}); err != nil {
		t.Fatalf("a client after the silent one: %v\n%s", err, log.String())
	}
}
