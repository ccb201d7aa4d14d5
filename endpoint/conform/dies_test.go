package conform

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/xml"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/endpoint"
	"github.com/iwkit/iwkit/endpoint/rping"
	"github.com/iwkit/iwkit/pcap"
)

// fragile is a listening socket whose target "crashes" as it ends its
// first connection: the listener closes, as when Linux siw hit its
// kernel BUG at iwcm.c:969 on a case's input.
type fragile struct {
	net.Listener
	once sync.Once
}

type fragileConn struct {
	net.Conn
	f *fragile
}

func (c fragileConn) Close() error {
	c.f.once.Do(func() { c.f.Listener.Close() })
	return c.Conn.Close()
}

func (f *fragile) Accept() (net.Conn, error) {
	c, err := f.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return fragileConn{c, f}, nil
}

// A target that dies during a case: that case is no pass (mpa-truncated
// wants a close, and got one), the run stops with the cause, and the
// cases after it are reported not run, with it (issue 31, broken item
// 4: the crashing case read "pass" and the 24 after it "fail").
func TestRunStopsWhenTargetDies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl := &fragile{Listener: l}
	ln := endpoint.NewListener(fl, &endpoint.Config{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		Serve(ctx, ln, rping.Options{Timeout: 5 * time.Second}, nil)
	}()
	defer func() { cancel(); ln.Close(); <-done }()
	rows, err := Run(ctx, Options{Addr: l.Addr().String(), Timeout: time.Second, Only: []string{"mpa-truncated", "ddp-version", "ddp-qn"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows: %+v", len(rows), rows)
	}
	if r := rows[0]; r.Verdict != Fail || !strings.Contains(r.Reason, "the target died during this case") {
		t.Errorf("the crashing case: %+v", r)
	}
	for _, r := range rows[1:] {
		if r.Verdict != NotRun || !strings.Contains(r.Reason, "the target died during mpa-truncated") {
			t.Errorf("after the crash: %+v", r)
		}
	}
	// In JUnit: a <failure> that names the death, two <skipped>.
	var b bytes.Buffer
	if err := WriteJUnit(&b, "fragile", rows); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Failures int `xml:"failures,attr"`
		Skipped  int `xml:"skipped,attr"`
		Suite    struct {
			Cases []struct {
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Failures != 1 || doc.Skipped != 2 || len(doc.Suite.Cases) != 3 || doc.Suite.Cases[0].Failure == nil ||
		!strings.Contains(doc.Suite.Cases[0].Failure.Message, "the target died during this case") {
		t.Fatalf("JUnit:\n%s", b.String())
	}
}

// A target that is not there: every case is an error (no connection), not
// a fail, and the run stops after the first with the cause.
func TestRunDeadTargetIsError(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	rows, err := Run(context.Background(), Options{Addr: addr, Timeout: 200 * time.Millisecond, Only: []string{"ddp-qn", "ddp-msn"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Verdict != Error || rows[1].Verdict != NotRun || !strings.Contains(rows[1].Reason, "connection refused") {
		t.Fatalf("%+v", rows)
	}
}

// Each case's evidence: its own pcap (which holds its Terminate) and the
// Terminate's octets; with Repeat, each run its own row and file.
func TestRunEvidenceAndRepeat(t *testing.T) {
	addr := serve(t, rping.Options{})
	dir := t.TempDir()
	rows, err := Run(context.Background(), Options{Addr: addr, Repeat: 2, PcapDir: dir, Only: []string{"ddp-qn"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	for i, r := range rows {
		if r.Verdict != Pass || r.Run != i+1 || r.Seconds <= 0 || r.Pcap != filepath.Join(dir, "ddp-qn-"+string(rune('1'+i))+".pcap") {
			t.Fatalf("row %+v", r)
		}
		b, err := hex.DecodeString(r.Terminate)
		if err != nil {
			t.Fatal(err)
		}
		var term decode.Terminate
		if _, err := decode.ParseTerminate(b, &term); err != nil || term.Layer != 1 || term.EType != 2 || term.Code != 0x01 {
			// DDP-03: untagged buffer error, invalid QN (RFC 5041 §7.2).
			t.Fatalf("Terminate %s: %+v %v", r.Terminate, term, err)
		}
		f, err := os.Open(r.Pcap)
		if err != nil {
			t.Fatal(err)
		}
		pr, err := pcap.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		var fr pcap.Frame
		for pr.Next(&fr) == nil {
			n++
		}
		f.Close()
		if n < 4 {
			t.Fatalf("%s: %d frames", r.Pcap, n)
		}
	}
}
