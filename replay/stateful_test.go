package replay

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func siw(name string) string { return filepath.Join("..", "testdata", "siw", name) }

// both replays both sides of connection conn of file against each other
// over loopback.
func both(t *testing.T, file string, conn int, edit func(*Script)) (ini, resp *Result) {
	t.Helper()
	s, err := LoadScript(file, conn, nil)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := LoadScript(file, conn, nil)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(s2)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var rerr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		resp, rerr = Stateful(ctx, s, StatefulOptions{Side: Responder, Listener: l, Topspeed: true, Timeout: 3 * time.Second})
	}()
	ini, err = Stateful(ctx, s2, StatefulOptions{Side: Initiator, Addr: l.Addr().String(), Topspeed: true, Timeout: 3 * time.Second})
	wg.Wait()
	if err != nil || rerr != nil {
		t.Fatalf("initiator: %v, responder: %v", err, rerr)
	}
	return ini, resp
}

func TestStatefulBothSides(t *testing.T) {
	for _, c := range []struct {
		file string
		conn int
	}{
		{"rping.pcap", 0}, {"crc_rping.pcap", 0}, {"p2p_rping.pcap", 0}, {"p2pcrc_rping.pcap", 0}, {"v1_rping.pcap", 0},
		{"ib_write_bw_4096.pcap", 0}, {"ib_write_bw_4096.pcap", 1},
		{"ib_read_bw_4096.pcap", 0}, {"ib_send_bw_4096.pcap", 0}, {"term_ok.pcap", 0},
		{"mtu1500_ib_send_bw_32768.pcap", 0}, {"mtu1500_ib_read_bw_32768.pcap", 0}, {"mtu1500_ib_write_bw_32768.pcap", 0},
		{"crc_ib_read_bw_4096.pcap", 0}, {"v1_ib_write_bw_4096.pcap", 0}, {"mtu1500gso_ib_write_bw_32768.pcap", 0},
	} {
		t.Run(fmt.Sprintf("%s#%d", c.file, c.conn), func(t *testing.T) {
			ini, resp := both(t, siw(c.file), c.conn, nil)
			for _, r := range []*Result{ini, resp} {
				t.Logf("%v: %d operations, %d matched, %+v", r.Side, r.Operations, r.Matched, r.Counters)
				if len(r.Differences) != 0 || r.Matched != r.Operations {
					t.Errorf("%v: differences %v", r.Side, r.Differences)
				}
			}
		})
	}
}

// The term_* captures: one side's faulty access and the other's
// Terminate. Replayed against each other, the Terminate must come again.
func TestStatefulTerminates(t *testing.T) {
	for _, f := range []string{"term_write_badstag.pcap", "term_write_oob.pcap", "term_read_badstag.pcap", "term_read_oob.pcap", "term_send_norecv.pcap"} {
		t.Run(f, func(t *testing.T) {
			ini, resp := both(t, siw(f), 0, nil)
			for _, r := range []*Result{ini, resp} {
				t.Logf("%v: %d operations, %d matched, %v", r.Side, r.Operations, r.Matched, r.Differences)
			}
		})
	}
}
