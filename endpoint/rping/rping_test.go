package rping

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/iwkit/iwkit/endpoint"
)

func TestPattern(t *testing.T) {
	b := make([]byte, 40)
	Pattern(b, 0)
	if got, want := string(b), "rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ\x00"; got != want {
		t.Fatalf("ping 0: %q, want %q", got, want)
	}
	Pattern(b, 58)
	if string(b[:14]) != "rdma-ping-58: " || b[14] != 'A' {
		t.Fatalf("ping 58: %q", b)
	}
}

func TestLoopback(t *testing.T) {
	for _, cfg := range []endpoint.Config{{}, {CRC: true}, {Rev: 1}, {PeerToPeer: true, CRC: true}, {PeerToPeer: true, RTR: endpoint.RTRRead}, {PeerToPeer: true, RTR: endpoint.RTRSend}, {Markers: true}} {
		t.Run(fmt.Sprintf("%+v", cfg), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			l, err := endpoint.Listen(ctx, "tcp", "127.0.0.1:0", &cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			done := make(chan error, 1)
			var sres Result
			go func() {
				var err error
				sres, err = Serve(ctx, l, Options{Size: 100, Validate: true}, false)
				done <- err
			}()
			res, err := Client(ctx, l.Addr().String(), Options{Size: 100, Count: 50, Validate: true, Config: cfg})
			if err != nil {
				t.Fatal(err, <-done)
			}
			if err := <-done; err != nil {
				t.Fatal("server:", err)
			}
			if res.Pings != 50 || sres.Pings != 50 {
				t.Fatalf("pings: client %d server %d", res.Pings, sres.Pings)
			}
		})
	}
}
