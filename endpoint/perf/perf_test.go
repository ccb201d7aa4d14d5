package perf

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/iwkit/iwkit/endpoint"
)

func TestEveryTest(t *testing.T) {
	for _, test := range Tests {
		for _, size := range []int{0, 100, 70000} {
			if size == 0 && test == SendBW {
				continue
			}
			t.Run(test, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				cfg := endpoint.Config{CRC: true}
				l, err := endpoint.Listen(ctx, "tcp", "127.0.0.1:0", &cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
				done := make(chan error, 1)
				go func() { done <- Serve(ctx, l, false, 10*time.Second, io.Discard) }()
				res, err := Client(ctx, l.Addr().String(), Options{Test: test, Size: size, Iters: 300, Depth: 16, Config: cfg})
				if err != nil {
					t.Fatal(err)
				}
				if err := <-done; err != nil {
					t.Fatal("server:", err)
				}
				if res.Iters < 300 || res.Bytes != int64(res.Iters)*int64(size) {
					t.Fatalf("result %+v", res)
				}
				if (test == SendLat || test == WriteLat || test == ReadLat) != (res.Lat != nil) {
					t.Fatalf("latency %+v", res.Lat)
				}
			})
		}
	}
}

func TestDuration(t *testing.T) {
	ctx := context.Background()
	l, err := endpoint.Listen(ctx, "tcp", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go Serve(ctx, l, false, 10*time.Second, io.Discard)
	res, err := Client(ctx, l.Addr().String(), Options{Test: WriteBW, Size: 4096, Duration: 200 * time.Millisecond})
	if err != nil || res.Iters == 0 || res.Elapsed < 200*time.Millisecond {
		t.Fatalf("%+v %v", res, err)
	}
}
