package wirefuzz

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/endpoint"
	"github.com/iwkit/iwkit/endpoint/conform"
	"github.com/iwkit/iwkit/endpoint/rping"
	"github.com/iwkit/iwkit/pcap"
)

// fragile is a real MPA Responder on loopback with siw's iwcm.c:969 flaw
// planted (peers/siw/iwcm-969.md): a peer-to-peer Request, siw's Reply
// naming the Write RTR, then a reset or a first FPDU whose DDP version is
// not 1, and it stops answering for good (its listener closes). Every
// other input it survives. It lets the search, the minimising and the
// replay be tested without the VM.
type fragile struct {
	ln   net.Listener
	once sync.Once
	died chan struct{}
	// loseOnRes, when set, plants a second, lesser flaw: a Request with
	// any of its reserved flag bits set closes the listener (the target
	// is lost, as siw's listener is by a close that beats its accept
	// work, docs/fuzzing.md) without the death the search hunts.
	loseOnRes bool
	lost      chan struct{}
}

func startFragile(t *testing.T) *fragile {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fragile{ln: ln, died: make(chan struct{}), lost: make(chan struct{})}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(c)
		}
	}()
	return f
}

func (f *fragile) addr() string { return f.ln.Addr().String() }

func (f *fragile) serve(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	r := bufio.NewReader(c)
	hdr := make([]byte, decode.MPAFrameHdrLen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return
	}
	pd := make([]byte, int(hdr[18])<<8|int(hdr[19]))
	if len(pd) > decode.MPAMaxPDLength {
		return
	}
	if _, err := io.ReadFull(r, pd); err != nil {
		return
	}
	var req decode.MPAFrame
	if _, err := decode.ParseMPAFrame(append(hdr, pd...), &req); err != nil || req.Reply || req.Rev != 2 || req.Reject {
		return // a bad Request: closed, as siw does
	}
	if f.loseOnRes && req.Res != 0 {
		f.once.Do(func() { close(f.lost); f.ln.Close() })
		return
	}
	rep := decode.MPAFrame{Reply: true, Rev: 2, Enhanced: req.Enhanced, CRC: req.CRC, HasV2: req.HasV2,
		V2: decode.MPAv2{IRD: 1, ORD: 1, PeerToPeer: req.HasV2 && req.V2.PeerToPeer}}
	rep.V2.ZeroLenWriteRTR = rep.V2.PeerToPeer
	if rep.HasV2 {
		rep.PrivateData = make([]byte, decode.MPAv2Len)
	}
	if _, err := c.Write(rep.Append(nil)); err != nil || !rep.V2.PeerToPeer {
		io.Copy(io.Discard, r)
		return
	}
	// Waiting for the RTR: the planted flaw.
	first := make([]byte, 3)
	_, err := io.ReadFull(r, first)
	if errors.Is(err, syscall.ECONNRESET) || err == nil && first[2]&decode.DDPDVMask != 1 {
		f.once.Do(func() { close(f.died); f.ln.Close() })
	}
	io.Copy(io.Discard, r)
}

// TestFuzzFindsAndMinimises: the search finds the planted flaw (it is not
// among the first inputs: the test checks the input that found it is
// neither the first nor hand-made), the minimising restarts the target
// and reduces the case to the flaw's class (a peer-to-peer Request, the
// Reply awaited or not, then a reset or a bad first FPDU), and the case replays:
// it kills a fresh target, and leaves a robust one alive.
func TestFuzzFindsAndMinimises(t *testing.T) {
	f := startFragile(t)
	dir := t.TempDir()
	targets := []*fragile{f}
	o := Options{Addr: f.addr(), Seed: 7, Inputs: 2000, Timeout: 300 * time.Millisecond, Drain: 20 * time.Millisecond, Settle: time.Millisecond,
		Out: dir, Restart: func(context.Context) (string, error) {
			nf := startFragile(t)
			targets = append(targets, nf)
			return nf.addr(), nil
		},
		Cause: func() string { return "fragile: the iwcm.c:969 flaw" }, Logf: t.Logf}
	rep, err := Fuzz(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Died {
		t.Fatalf("no death in %d inputs", rep.Inputs)
	}
	t.Logf("found after %d inputs (%.0f inputs/s), %v", rep.Inputs, rep.PerSec, rep.FoundAt)
	if rep.Inputs < 2 {
		t.Errorf("the first input found it: the search is not searching")
	}
	c, err := ReadCase(rep.CasePath)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("case: %+v", c.Minimised)
	for _, in := range c.Inputs {
		t.Logf("  %s", in)
	}
	if !c.Minimised.Confirmed || c.Minimised.Restarts == 0 || len(c.Inputs) != 1 {
		t.Fatalf("want a confirmed one-input case after restarts, got %+v", c.Minimised)
	}
	in := c.Inputs[0]
	if len(in.Request) != 1 || in.Request[0].F != "v2.a" {
		t.Errorf("the minimised Request is %v, want just v2.a (peer-to-peer)", in.Request)
	}
	// This target, unlike siw, takes octets that come before its Reply:
	// the await may go.
	last := in.Steps[len(in.Steps)-1].Op
	if len(in.Steps) > 2 || len(in.Steps) == 2 && in.Steps[0].Op != OpAwait || last != OpReset && last != OpFPDU && last != OpRaw {
		t.Errorf("the minimised steps are %v, want (await then) a reset or a bad first FPDU", in.Steps)
	}
	// Every input is in the log with its pcap.
	lines := 0
	b, _ := os.ReadFile(filepath.Join(dir, "log.ndjson"))
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ll logLine
		if err := json.Unmarshal([]byte(l), &ll); err != nil {
			t.Fatal(err)
		}
		lines++
		if ll.N == rep.Inputs && ll.Alive {
			t.Errorf("the last input's line says alive")
		}
		if _, err := os.Stat(filepath.Join(dir, ll.Pcap)); err != nil {
			t.Error(err)
		}
	}
	if lines != rep.Inputs {
		t.Errorf("log has %d lines for %d inputs", lines, rep.Inputs)
	}
	// The logged inputs are the generator's draws for the seed (what
	// TestSiwFuzzFindsIwcm969 checks of the input that crashed siw).
	g := newGen(o.Seed)
	for n := 1; n <= rep.Inputs; n++ {
		if drawn, logged := g.input(), loggedInput(t, filepath.Join(dir, "log.ndjson"), n); drawn.String() != logged.String() {
			t.Fatalf("input %d: logged %s, drawn %s", n, logged, drawn)
		}
	}
	if n := countFrames(t, rep.CasePcap); n < 6 {
		t.Errorf("case.pcap has %d frames", n)
	}
	// Replay: a fresh fragile target dies at the case's input; a robust
	// target (iwkit's rping server) survives it.
	nf := startFragile(t)
	at, err := Replay(context.Background(), Options{Addr: nf.addr(), Timeout: 300 * time.Millisecond}, c, filepath.Join(dir, "replay.pcap"))
	if at != 0 || err == nil {
		t.Errorf("replay against a fresh fragile target: at %d, %v; want it dead after input 1", at, err)
	}
	select {
	case <-nf.died:
	default:
		t.Error("the fresh target's flaw was not hit")
	}
	robust := serveRping(t)
	if at, err := Replay(context.Background(), Options{Addr: robust, Timeout: time.Second}, c, ""); at >= 0 || err != nil {
		t.Errorf("replay against iwkit's rping server: at %d, %v; want alive", at, err)
	}
}

// TestFuzzGoesOnAfterLostTarget: with Triage, a death that is not
// fatal (the fragile target's lesser flaw: its listener closes, nothing
// else dies) is recorded as a lost case, the target is restarted and the
// search goes on until the fatal flaw; the minimised case is the fatal
// one. Seed 7 draws Requests with reserved bits before it finds the
// iwcm.c:969 flaw.
func TestFuzzGoesOnAfterLostTarget(t *testing.T) {
	start := func() *fragile {
		f := startFragile(t)
		f.loseOnRes = true
		return f
	}
	var cur *fragile
	cur = start()
	dir := t.TempDir()
	restarts := 0
	o := Options{Addr: cur.addr(), Seed: 7, Inputs: 2000, Timeout: 300 * time.Millisecond, Drain: 20 * time.Millisecond, Settle: time.Millisecond,
		Out: dir, Restart: func(context.Context) (string, error) {
			restarts++
			cur = start()
			return cur.addr(), nil
		},
		Triage: func(context.Context) (string, bool) {
			select {
			case <-cur.died:
				return "fragile: the iwcm.c:969 flaw", true
			case <-cur.lost:
				return "fragile: the listener is lost", false
			default:
				return "fragile: no answer, no flaw hit", false
			}
		}, Logf: t.Logf}
	rep, err := Fuzz(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Died || len(rep.Lost) == 0 {
		t.Fatalf("died %v after %d inputs with %d targets lost: want targets lost, then the fatal flaw", rep.Died, rep.Inputs, len(rep.Lost))
	}
	t.Logf("found after %d inputs, %d targets lost, %d restarts", rep.Inputs, len(rep.Lost), restarts)
	for _, l := range rep.Lost {
		if l.Cause != "fragile: the listener is lost" || l.N >= rep.Inputs {
			t.Errorf("lost %+v", l)
		}
		c, err := ReadCase(l.Case)
		if err != nil {
			t.Fatal(err)
		}
		last := c.Inputs[len(c.Inputs)-1]
		if !slices.ContainsFunc(last.Request, func(m Mut) bool { return m.F == "res" && m.V&15 != 0 }) {
			t.Errorf("lost case %s: its last input %s has no reserved bits", l.Case, last)
		}
		if n := countFrames(t, l.Pcap); n < 2 {
			t.Errorf("%s has %d frames", l.Pcap, n)
		}
	}
	c, err := ReadCase(rep.CasePath)
	if err != nil {
		t.Fatal(err)
	}
	if c.Cause != "fragile: the iwcm.c:969 flaw" || !c.Minimised.Confirmed {
		t.Errorf("case: cause %q, %+v; want the fatal flaw, confirmed", c.Cause, c.Minimised)
	}
	// Every lost target was restarted, and the minimiser restarted the
	// dead one at least once.
	if restarts <= len(rep.Lost) {
		t.Errorf("%d restarts for %d lost targets and a minimising", restarts, len(rep.Lost))
	}
}

// TestFuzzRobustTarget: iwkit's own rping target survives sixty
// inputs; every input is logged and recorded.
func TestFuzzRobustTarget(t *testing.T) {
	dir := t.TempDir()
	rep, err := Fuzz(context.Background(), Options{Addr: serveRping(t), Seed: 11, Inputs: 60, Timeout: time.Second,
		Drain: 20 * time.Millisecond, Settle: time.Millisecond, Out: dir})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Died || rep.Inputs != 60 {
		t.Fatalf("iwkit's rping target: died %v after %d inputs", rep.Died, rep.Inputs)
	}
	t.Logf("%d inputs in %v: %.0f inputs/s", rep.Inputs, rep.Elapsed.Round(time.Millisecond), rep.PerSec)
	if n := countFrames(t, filepath.Join(dir, "inputs/000060.pcap")); n < 6 {
		t.Errorf("the last input's pcap has %d frames", n)
	}
}

func serveRping(t *testing.T) string {
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := endpoint.Listen(ctx, "tcp", "127.0.0.1:0", &endpoint.Config{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		conform.Serve(ctx, ln, rping.Options{Size: 64}, nil)
	}()
	t.Cleanup(func() { cancel(); ln.Close(); <-done })
	return ln.Addr().String()
}

func countFrames(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcap.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var fr pcap.Frame
	for r.Next(&fr) == nil {
		n++
	}
	return n
}

// TestRequestBaseline: the baseline Request is a valid MPA v2 Request,
// and each Request mutation changes it.
func TestRequestBaseline(t *testing.T) {
	b, _ := request(true, nil)
	var f decode.MPAFrame
	if n, err := decode.ParseMPAFrame(b, &f); err != nil || n != len(b) || f.Reply || f.Rev != 2 || !f.HasV2 || !f.CRC || f.V2.PeerToPeer {
		t.Fatalf("baseline % x: %+v %v", b, f, err)
	}
	for name, vs := range requestFields {
		for _, v := range vs {
			m, split := request(true, []Mut{{name, v}})
			if string(m) == string(b) && split == 0 && !(name == "c" && v == 1) {
				t.Errorf("%s=%d leaves the Request as it was", name, v)
			}
		}
	}
}

// TestFPDUMutations: every template builds an FPDU that parses, and every
// FPDU mutation changes the octets (or the split).
func TestFPDUMutations(t *testing.T) {
	for name := range templates {
		q := newQueues()
		b, _ := fpdu(Step{Op: OpFPDU, PDU: name}, &q, true)
		var f decode.FPDU
		if n, err := decode.ParseFPDU(b, &f); err != nil || n != len(b) || !f.CRCOK() {
			t.Fatalf("%s: % x: %v", name, b, err)
		}
		var s decode.Segment
		if err := decode.ParseSegment(f.ULPDU, &s); err != nil || s.RDMAP.Opcode != templates[name].op {
			t.Errorf("%s: %v %+v", name, err, s.RDMAP)
		}
		for field, vs := range fpduFields {
			for _, v := range vs {
				q := newQueues()
				m, split := fpdu(Step{Op: OpFPDU, PDU: name, Muts: []Mut{{field, v}}}, &q, true)
				if string(m) == string(b) && split == 0 && !noEffect(name, field, v) && !(field == "trunc" && int(v) >= len(b)) {
					t.Errorf("%s: %s=%d leaves the FPDU as it was", name, field, v)
				}
			}
		}
	}
}

// noEffect names mutations that are the template's own value.
func noEffect(tmpl, field string, v int64) bool {
	tp := templates[tmpl]
	switch field {
	case "ddp.t":
		return (v != 0) == tp.tagged
	case "rdmap.op":
		return decode.Opcode(v) == tp.op
	case "ddp.qn":
		return tp.tagged || uint32(v) == tp.qn
	case "len":
		return int(v) == tp.size
	case "ddp.stag", "ddp.to":
		return !tp.tagged || v == 0
	case "ddp.msn", "ddp.mo", "ddp.inv":
		return tp.tagged || field == "ddp.inv" && v == 0 || field == "ddp.msn" && v == 1
	case "read.size":
		return tp.op != decode.OpReadRequest || (v == 16 && tmpl == "read-req") || (v == 0 && tmpl == "rtr-read")
	case "term.ctrl":
		return tp.op != decode.OpTerminate
	case "pad":
		return decode.PadLen(tp.size+hdrLen(tp.op, tp.tagged)) == 0
	}
	return false
}

func hdrLen(op decode.Opcode, tagged bool) int {
	n := decode.DDPUntaggedHdrLen
	if tagged {
		n = decode.DDPTaggedHdrLen
	}
	return n + op.HeaderLen()
}
