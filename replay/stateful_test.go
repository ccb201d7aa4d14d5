package replay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iwkit/iwkit/endpoint"
	"github.com/iwkit/iwkit/endpoint/rping"
	"github.com/iwkit/iwkit/pcap"
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
	return pair(t, s2, s)
}

func mustLoad(t *testing.T, file string) *Script {
	t.Helper()
	s, err := LoadScript(file, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// pair replays script si's Initiator against script sr's Responder at top
// speed.
func pair(t *testing.T, si, sr *Script) (ini, resp *Result) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return pairOn(t, si, sr, l, StatefulOptions{Topspeed: true, Timeout: 3 * time.Second})
}

// pairOn replays script si's Initiator against script sr's Responder
// listening on l, both with o's timing and timeout.
func pairOn(t *testing.T, si, sr *Script, l net.Listener, o StatefulOptions) (ini, resp *Result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var rerr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := o
		r.Side, r.Listener = Responder, l
		resp, rerr = Stateful(ctx, sr, r)
	}()
	i := o
	i.Side, i.Addr = Initiator, l.Addr().String()
	ini, err := Stateful(ctx, si, i)
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
				if len(r.Differences) != 0 || r.Matched != r.Operations {
					t.Errorf("%v: %d operations, %d matched, %v", r.Side, r.Operations, r.Matched, r.Differences)
				}
			}
		})
	}
}

// A capture altered so that the peer must answer differently: each side
// replays its own copy, one of them edited; the other reports the
// difference at the frame concerned, and nothing else.
func TestStatefulAltered(t *testing.T) {
	find := func(s *Script, side Side, kind MsgKind, n int) *Msg { return nthMsg(t, s, side, kind, n) }
	for _, c := range []struct {
		name  string
		side  Side // whose script is altered; the other side must notice
		edit  func(s *Script)
		frame int
		kind  string
	}{
		// rping: the server's go-ahead of ping 2 carries a 1.
		{"send", Responder, func(s *Script) { find(s, Responder, MsgSend, 2).Payload[3] = 1 }, 19, "differs"},
		// rping: the client's source buffer of ping 1 holds other data:
		// the server's RDMA Read returns it.
		{"read-data", Initiator, func(s *Script) { find(s, Initiator, MsgReadResponse, 1).Payload[5] ^= 0x20 }, 18, "differs"},
		// the client stops after three pings: the server misses the rest.
		{"fewer", Initiator, func(s *Script) {
			m := find(s, Initiator, MsgSend, 6)
			k := 0
			for i := range s.Msgs {
				if &s.Msgs[i] == m {
					k = i
				}
			}
			s.Msgs = s.Msgs[:k]
		}, 32, "missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := LoadScript(siw("rping.pcap"), 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			c.edit(s)
			var ini, resp *Result
			if c.side == Initiator {
				ini, resp = pair(t, s, mustLoad(t, siw("rping.pcap")))
			} else {
				ini, resp = pair(t, mustLoad(t, siw("rping.pcap")), s)
			}
			watcher := resp
			if c.side == Responder {
				watcher = ini
			}
			t.Logf("initiator %v; responder %v", ini.Differences, resp.Differences)
			if len(watcher.Differences) == 0 || watcher.Differences[0].Frame != c.frame || watcher.Differences[0].Kind != c.kind {
				t.Fatalf("%v: differences %v, want the first at frame %d (%s)", watcher.Side, watcher.Differences, c.frame, c.kind)
			}
			if watcher.Matched == watcher.Operations {
				t.Errorf("%v: all %d matched", watcher.Side, watcher.Operations)
			}
		})
	}
}

// Against a real application: the initiator side of an siw rping capture
// replayed against the iwkit rping server (which RDMA Reads the advertised
// buffer with the STag rewritten, checks its pattern with -V, and RDMA
// Writes it back), and the responder side against the iwkit rping client
// (which checks that the Write brought back its own data).
func TestStatefulAgainstRping(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o := rping.Options{Size: 100, Count: 5, Validate: true, Timeout: 5 * time.Second}
	t.Run("initiator", func(t *testing.T) {
		l, err := endpoint.Listen(ctx, "tcp", "127.0.0.1:0", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		var wg sync.WaitGroup
		var serr error
		var sres rping.Result
		wg.Add(1)
		go func() {
			defer wg.Done()
			sres, serr = rping.Serve(ctx, l, o, false)
		}()
		res, err := Stateful(ctx, mustLoad(t, siw("rping.pcap")), StatefulOptions{Side: Initiator, Addr: l.Addr().String(), Topspeed: true, Timeout: 5 * time.Second})
		wg.Wait()
		if err != nil || serr != nil {
			t.Fatalf("replay: %v; rping server: %v", err, serr)
		}
		if sres.Pings != 5 || len(res.Differences) != 0 {
			t.Errorf("server pings %d; differences %v", sres.Pings, res.Differences)
		}
	})
	t.Run("responder", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var res *Result
		var rerr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, rerr = Stateful(ctx, mustLoad(t, siw("rping.pcap")), StatefulOptions{Side: Responder, Listener: l, Topspeed: true, Timeout: 5 * time.Second})
		}()
		cres, cerr := rping.Client(ctx, l.Addr().String(), o)
		wg.Wait()
		if rerr != nil || cerr != nil {
			t.Fatalf("replay: %v; rping client: %v", rerr, cerr)
		}
		if cres.Pings != 5 || len(res.Differences) != 0 {
			t.Errorf("client pings %d; differences %v", cres.Pings, res.Differences)
		}
	})
}

// cut writes the frames of file that keep accepts to a new capture.
func cut(t *testing.T, file string, keep func(n int) bool) string {
	t.Helper()
	r, err := pcap.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := filepath.Join(t.TempDir(), "cut.pcap")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var w *pcap.Writer
	var fr pcap.Frame
	for {
		if err := r.Next(&fr); err != nil {
			break
		}
		if w == nil {
			if w, err = pcap.NewWriter(f, pcap.FormatPcap, fr.LinkType, pcap.MaxSnaplen); err != nil {
				t.Fatal(err)
			}
		}
		if keep(fr.Number) {
			if err := w.WriteFrame(fr.Timestamp, fr.Data, fr.OrigLen); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestStatefulScriptErrors(t *testing.T) {
	// Only the TCP handshake: no iWARP.
	if _, err := LoadScript(cut(t, siw("rping.pcap"), func(n int) bool { return n <= 3 }), 0, nil); !errors.Is(err, ErrNoIWARP) {
		t.Errorf("TCP only: %v", err)
	}
	if _, err := LoadScript(siw("rping.pcap"), 2, nil); err == nil || !strings.Contains(err.Error(), "no connection 2") {
		t.Errorf("--conn 2 of one: %v", err)
	}
	// Without the MPA Request and Reply (and the TCP handshake): refused
	// unless parameters are assumed, and then replayed with them.
	mid := cut(t, siw("rping.pcap"), func(n int) bool { return n >= 8 })
	if _, err := LoadScript(mid, 0, nil); !errors.Is(err, ErrNoHandshake) {
		t.Fatalf("no handshake: %v", err)
	}
	as, err := ParseAssume("rev=2,ird=1,ord=1")
	if err != nil {
		t.Fatal(err)
	}
	si, err := LoadScript(mid, 0, as)
	if err != nil {
		t.Fatal(err)
	}
	sr, _ := LoadScript(mid, 0, as)
	ini, resp := pair(t, si, sr)
	for _, r := range []*Result{ini, resp} {
		if len(r.Differences) != 0 || r.Operations != 36 {
			t.Errorf("%v: %d operations, differences %v", r.Side, r.Operations, r.Differences)
		}
	}
	for _, bad := range []string{"rev=3", "crc=1", "ird=x", "speed"} {
		if _, err := ParseAssume(bad); err == nil {
			t.Errorf("--assume %s accepted", bad)
		}
	}
}

// Markers and CRC on both sides (the rping script with M and C set in
// both frames), and the capture's own timing scaled: nothing differs.
func TestStatefulMarkersAndTiming(t *testing.T) {
	edit := func() *Script {
		s := mustLoad(t, siw("rping.pcap"))
		hs := &s.Conns[0].HS
		hs.Request.Markers, hs.Reply.Markers, hs.Request.CRC, hs.Reply.CRC = true, true, true, true
		hs.MarkersI, hs.MarkersR, hs.CRC = true, true, true
		return s
	}
	si, sr := edit(), edit()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ini, resp := pairOn(t, si, sr, l, StatefulOptions{Multiplier: 10, Timeout: 5 * time.Second})
	for _, r := range []*Result{ini, resp} {
		p := r.Params[0]
		if len(r.Differences) != 0 || !p.MarkersTx || !p.MarkersRx || !p.CRC {
			t.Errorf("%v: differences %v, params %+v", r.Side, r.Differences, p)
		}
	}
}

// nthMsg is the script's n-th message (from 0) of that kind sent by side.
func nthMsg(t *testing.T, s *Script, side Side, kind MsgKind, n int) *Msg {
	t.Helper()
	for i := range s.Msgs {
		if m := &s.Msgs[i]; m.Side == side && m.Kind == kind {
			if n == 0 {
				return m
			}
			n--
		}
	}
	t.Fatalf("no %v of the %v", kind, side)
	return nil
}
