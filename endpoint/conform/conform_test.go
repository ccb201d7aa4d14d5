package conform

import (
	"context"
	"testing"
	"time"

	"github.com/iwkit/iwkit/endpoint"
	"github.com/iwkit/iwkit/endpoint/rping"
)

// serve starts an iwkit rping target (what iwconform --serve runs).
func serve(t *testing.T, cfg endpoint.Config) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := endpoint.Listen(ctx, "tcp", "127.0.0.1:0", &cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Serve(ctx, ln, rping.Options{Config: cfg, Timeout: 5 * time.Second}, nil)
	}()
	t.Cleanup(func() {
		cancel()
		ln.Close()
		<-done
	})
	return ln.Addr().String()
}

// Every case passes against an iwkit endpoint: each fault of the suite is
// sent by one iwkit endpoint and caught, with the Terminate the RFCs
// require, by another.
func TestSuiteAgainstIwkit(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  endpoint.Config
	}{
		{"crc", endpoint.Config{CRC: true}},
		{"p2p", endpoint.Config{PeerToPeer: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := serve(t, endpoint.Config{})
			rows, err := Run(context.Background(), Options{Addr: addr, Config: tc.cfg}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != len(Cases()) {
				t.Fatalf("%d rows for %d cases", len(rows), len(Cases()))
			}
			for _, r := range rows {
				want := Pass
				if tc.cfg.PeerToPeer == false && r.ID == "mpa-rtr-missing" || !tc.cfg.CRC && (r.ID == "mpa-crc" || r.ID == "mpa-crc-byte-order") {
					want = Skip
				}
				if r.Verdict != want {
					t.Errorf("%s: %s (want %s): sent %s, expected %s, got %s %s", r.ID, r.Verdict, want, r.Sent, r.Expected, r.Got, r.Reason)
				}
			}
		})
	}
}
