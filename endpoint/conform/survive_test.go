package conform

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iwkit/iwkit/endpoint"
	"github.com/iwkit/iwkit/endpoint/rping"
	"github.com/iwkit/iwkit/internal/rudepeer"
)

// iwconform --serve's target survives a bare connect-and-close, half an
// MPA Request then silence, and 1,000 silent connections, logging each,
// and serves an rping client afterwards (issue 31, broken item 1: the
// bare connect used to end it, and iwconform with exit status 2).
func TestServeSurvivesRudeClients(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := endpoint.Config{Timeout: 300 * time.Millisecond}
	ln, err := endpoint.Listen(ctx, "tcp", "127.0.0.1:0", &cfg)
	if err != nil {
		t.Fatal(err)
	}
	var logged atomic.Int64
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ln, rping.Options{Timeout: 5 * time.Second}, func(f string, a ...any) {
			logged.Add(1)
			t.Log(fmt.Sprintf(f, a...))
		})
	}()
	ended := false
	defer func() {
		cancel()
		ln.Close()
		if !ended {
			<-done
		}
	}()
	rep, err := rudepeer.Abuse(ln.Addr().String(), 1000, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rep)
	select {
	case err := <-done:
		ended = true
		t.Fatalf("the target ended: %v", err)
	default:
	}
	for _, p := range rep.Problems(endpoint.DefaultBacklog) {
		t.Error(p)
	}
	res, err := rping.Client(ctx, ln.Addr().String(), rping.Options{Count: 3, Validate: true})
	if err != nil || res.Pings != 3 {
		t.Fatalf("a client after the rude ones: %d pings, %v", res.Pings, err)
	}
	if logged.Load() < 3 {
		t.Errorf("%d connections logged", logged.Load())
	}
}
