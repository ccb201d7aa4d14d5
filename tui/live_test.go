package tui

import (
	"errors"
	"fmt"
	"github.com/iwkit/iwkit/internal/testenv"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/pcap"
	pcapbpf "github.com/iwkit/iwkit/pcap/bpf"
)

// mpaFrame is an MPA Request or Reply, Rev 1, CRC wanted, no Private Data.
func mpaFrame(key string) []byte { return append([]byte(key), decode.MPAFlagC, 1, 0, 0) }

// sendFPDU is a Send FPDU (QN 0, MSN msn) with CRC.
func sendFPDU(msn uint32, payload []byte) []byte {
	seg := (&decode.DDPHeader{Last: true, DV: 1, QN: 0, MSN: msn, RsvdULP: 0x43}).Append(nil)
	return decode.AppendFPDU(nil, append(seg, payload...), true)
}

// TestLiveIndex captures iWARP Sends on lo: rows arrive while the capture
// runs, each decodes again from the spill file, and the kernel counters
// are there.
func TestLiveIndex(t *testing.T) {
	testenv.NeedRoot(t, "live capture on lo")
	if l, err := pcap.OpenLive("lo", pcap.LiveOptions{}); err != nil {
		var pe *pcap.PermissionError
		if errors.As(err, &pe) {
			testenv.Skipf(t, "no CAP_NET_RAW: %v", err)
		}
		testenv.Skipf(t, "cannot capture on lo: %v", err)
	} else {
		l.Close()
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	prog, err := pcapbpf.Compile(fmt.Sprintf("tcp port %d", port), layers.LinkTypeEthernet, pcapbpf.Options{Kernel: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(Config{Live: &analyze.LiveConfig{Iface: "lo", Filter: prog, Decode: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 50
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		req := make([]byte, 20)
		if _, err := io.ReadFull(c, req); err != nil {
			done <- err
			return
		}
		_, err = c.Write(mpaFrame(decode.MPAKeyRep))
		io.Copy(io.Discard, c)
		done <- err
	}()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Write(mpaFrame(decode.MPAKeyReq))
	rep := make([]byte, 20)
	if _, err := io.ReadFull(c, rep); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		if _, err := c.Write(sendFPDU(uint32(i), make([]byte, 100+i))); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	c.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Rows arrive while the capture goes on (a deadline, not a measure).
	deadline := time.Now().Add(10 * time.Second)
	for s.Ix.Len() < n+2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d rows after 10 s, want %d", s.Ix.Len(), n+2)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, _, done, _ := s.Ix.Progress(); done {
		t.Fatal("the live index ended by itself")
	}
	l := &loader{ix: s.Ix}
	sends := 0
	for i := 0; i < s.Ix.Len(); i++ {
		r := s.Ix.Row(i)
		if r.Kind != RowFPDU {
			continue
		}
		d := l.Load(i)
		if d.Err != nil {
			t.Fatalf("row %d: %v", i, d.Err)
		}
		if d.PDU.CRCStatus != decode.CRCGood || d.PDU.Seg.DDP.MSN != uint32(sends+1) || len(d.PDU.Seg.Payload) != 101+sends {
			t.Fatalf("row %d: CRC %v MSN %d payload %d", i, d.PDU.CRCStatus, d.PDU.Seg.DDP.MSN, len(d.PDU.Seg.Payload))
		}
		sends++
	}
	if sends != n {
		t.Fatalf("%d Sends indexed, want %d", sends, n)
	}
	// A display filter applied while the capture idles is installed at
	// once (no frame boundary comes) and matches what came before.
	fr, err := s.ApplyFilter("ddp.msn > 20")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if n, done, _ := fr.Status(); done && s.Filter() == fr {
			if n != 30 {
				t.Fatalf("filter matched %d rows, want 30", n)
			}
			break
		}
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatal("the filter was never applied on the idle capture")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if recv, _, ok := s.Drops(); !ok || recv == 0 {
		t.Fatalf("kernel counters: %d received, ok %v", recv, ok)
	}
	// The status line of a live capture (issue 29 bug 8): capturing and
	// the kernel's counters in frames, not "indexing N MB" of a size a
	// live capture has not.
	sc := screenFor(t, s)
	st := sc.u.statusText()
	if !strings.Contains(st, "capturing") || !strings.Contains(st, " received, ") || strings.Contains(st, "indexing") || strings.Contains(st, " MB") {
		t.Fatalf("live status line: %s", st)
	}
}
