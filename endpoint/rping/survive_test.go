package rping

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iwkit/iwkit/endpoint"
	"github.com/iwkit/iwkit/internal/rudepeer"
)

type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A persistent rping server survives a bare connect-and-close, half an
// MPA Request then silence, and 1,000 silent connections, logging each
// failed connection, and pings a client afterwards (issue 31, broken
// item 1: the bare connect used to end it).
func TestServeSurvivesRudeClients(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := endpoint.Config{Timeout: 300 * time.Millisecond}
	l, err := endpoint.Listen(ctx, "tcp", "127.0.0.1:0", &cfg)
	if err != nil {
		t.Fatal(err)
	}
	var log lockedBuf
	done := make(chan error, 1)
	go func() {
		_, err := Serve(ctx, l, Options{Size: 100, Validate: true, Log: &log}, true)
		done <- err
	}()
	ended := false
	defer func() {
		l.Close()
		if !ended {
			<-done
		}
	}()
	rep, err := rudepeer.Abuse(l.Addr().String(), 1000, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rep)
	select {
	case err := <-done:
		ended = true
		t.Fatalf("the server ended: %v", err)
	default:
	}
	for _, p := range rep.Problems(endpoint.DefaultBacklog) {
		t.Error(p)
	}
	res, err := Client(ctx, l.Addr().String(), Options{Size: 100, Count: 5, Validate: true})
	if err != nil || res.Pings != 5 {
		t.Fatalf("a client after the rude ones: %d pings, %v\n%s", res.Pings, err, log.String())
	}
	if n := strings.Count(log.String(), "\n"); n < 3 || !strings.Contains(log.String(), "EOF") {
		t.Errorf("%d lines logged:\n%s", n, log.String())
	}
}
