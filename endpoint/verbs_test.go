package endpoint

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
)

// Many connections at once, each moving data every way, verified.
func TestManyConnections(t *testing.T) {
	const conns = 24
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					errs <- fmt.Errorf("conn %d: %v", i, r)
				}
			}()
			cfg := Config{CRC: i%2 == 0, PeerToPeer: i%3 == 0, Markers: i%5 == 0}
			cl, sv := connect(t, pairOpts{client: cfg, server: cfg})
			n := 1000 + i*7919
			cmr, cbuf := cl.reg(t, n, AccessAll)
			smr, sbuf := sv.reg(t, n, AccessAll)
			kmr, kbuf := cl.reg(t, n, AccessAll)
			for round := 0; round < 5; round++ {
				smr.Sync()
				fillRand(cbuf, uint64(i*100+round))
				fillRand(sbuf, uint64(i*100+round+50))
				smr.Sync()
				cl.qp.PostSend(SendWR{WRID: 1, Opcode: OpRead, Signaled: true, SGL: []SGE{kmr.SGE(0, n)}, RemoteAddr: smr.Addr(), RKey: smr.STag()})
				cl.waitOK(t, OpRead)
				mustEqual(t, "read", kbuf, sbuf)
				smr.Sync()
				cl.qp.PostSend(SendWR{WRID: 2, Opcode: OpWrite, SGL: []SGE{cmr.SGE(0, n)}, RemoteAddr: smr.Addr(), RKey: smr.STag()})
				sv.qp.PostRecv(RecvWR{WRID: 3, SGL: []SGE{kmr.SGE(0, 0)}})
				cl.qp.PostSend(SendWR{WRID: 4, Opcode: OpSend, Signaled: true})
				sv.waitOK(t, OpRecv)
				// The signaled Send completing retires the unsignaled Write
				// before it: cbuf may be reused.
				cl.waitOK(t, OpSend)
				mustEqual(t, "write", sbuf, cbuf)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Unsignaled WRs complete silently; a later signaled one reports; an error
// completes even unsignaled and flushes the rest.
func TestSignaledAndSolicited(t *testing.T) {
	cl, sv := connect(t, pairOpts{})
	cmr, _ := cl.reg(t, 4096, AccessAll)
	smr, _ := sv.reg(t, 4096, AccessAll)
	for i := 0; i < 10; i++ {
		cl.qp.PostSend(SendWR{WRID: uint64(i), Opcode: OpWrite, SGL: []SGE{cmr.SGE(0, 100)}, RemoteAddr: smr.Addr(), RKey: smr.STag(), Signaled: i == 9})
	}
	if wc := cl.waitOK(t, OpWrite); wc.WRID != 9 {
		t.Fatalf("first completion is WR %d", wc.WRID)
	}
	if cl.cq.Len() != 0 {
		t.Fatalf("%d extra completions", cl.cq.Len())
	}
	// Solicited-event notification: a plain Send does not fire it, a Send
	// with SE does.
	for i := 0; i < 2; i++ {
		sv.qp.PostRecv(RecvWR{WRID: uint64(i), SGL: []SGE{smr.SGE(0, 4096)}})
	}
	sv.cq.ReqNotify(true)
	cl.qp.PostSend(SendWR{Opcode: OpSend, SGL: []SGE{cmr.SGE(0, 10)}})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	if err := sv.cq.WaitNotify(ctx); err == nil {
		t.Fatal("a Send without SE fired a solicited notification")
	}
	cancel()
	cl.qp.PostSend(SendWR{Opcode: OpSendSE, SGL: []SGE{cmr.SGE(0, 10)}})
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := sv.cq.WaitNotify(ctx); err != nil {
		t.Fatal("no solicited notification:", err)
	}
	var wc [4]WorkCompletion
	if n := sv.cq.Poll(wc[:]); n != 2 || wc[0].Solicited || !wc[1].Solicited {
		t.Fatalf("%d completions %+v", n, wc[:n])
	}
	// Next-completion notification fires on any completion.
	cl.cq.ReqNotify(false)
	cl.qp.PostSend(SendWR{WRID: 77, Opcode: OpWrite, Signaled: true, SGL: []SGE{cmr.SGE(0, 1)}, RemoteAddr: smr.Addr(), RKey: smr.STag()})
	if err := cl.cq.WaitNotify(ctx); err != nil {
		t.Fatal(err)
	}
}

// Send with Invalidate invalidates the peer's STag before the receive
// completes; the STag is then unusable; reregistering makes it usable.
func TestSendWithInvalidate(t *testing.T) {
	cl, sv := connect(t, pairOpts{})
	cmr, _ := cl.reg(t, 64, AccessAll)
	smr, _ := sv.reg(t, 64, AccessAll)
	tgt, _ := sv.reg(t, 64, AccessAll)
	sv.qp.PostRecv(RecvWR{WRID: 5, SGL: []SGE{smr.SGE(0, 64)}})
	cl.qp.PostSend(SendWR{Opcode: OpSendSEInv, SGL: []SGE{cmr.SGE(0, 3)}, InvalidateSTag: tgt.STag()})
	wc := sv.waitOK(t, OpRecv)
	if !wc.Invalidated || wc.InvalidatedSTag != tgt.STag() || !wc.Solicited || tgt.Valid() {
		t.Fatalf("completion %+v, valid %v", wc, tgt.Valid())
	}
	// A Write to the invalidated STag ends the connection.
	cl.qp.PostSend(SendWR{Opcode: OpWrite, SGL: []SGE{cmr.SGE(0, 8)}, RemoteAddr: tgt.Addr(), RKey: tgt.STag()})
	waitDone(t, sv.qp, StateError)
	if ti := sv.qp.Terminate(); ti == nil || ti.Cause.Layer != 1 || ti.Cause.EType != 1 || ti.Cause.Code != 0 {
		t.Fatalf("terminate %+v", ti)
	}
	waitDone(t, cl.qp, StateError)
	if !errors.Is(cl.qp.Err(), ErrRemoteTerminate) {
		t.Fatalf("client error %v", cl.qp.Err())
	}
}

// ORD caps the outstanding RDMA Reads: 40 Reads with ORD 2 all complete in
// order, the engine holds the rest back; Read Fence orders a Write after
// them; ORD 0 fails a Read locally.
func TestORDAndReadFence(t *testing.T) {
	cl, sv := connect(t, pairOpts{clientAttr: QPAttr{ORD: 2}, srvAttr: QPAttr{IRD: 2}})
	if _, ord := cl.qp.IRDORD(); ord != 2 {
		t.Fatalf("ORD %d", ord)
	}
	kmr, kbuf := cl.reg(t, 40*1000, AccessAll)
	smr, sbuf := sv.reg(t, 40*1000, AccessAll)
	fillRand(sbuf, 9)
	smr.Sync()
	for i := 0; i < 40; i++ {
		if _, err := cl.qp.PostSend(SendWR{WRID: uint64(i), Opcode: OpRead, Signaled: true, SGL: []SGE{kmr.SGE(i*1000, 1000)},
			RemoteAddr: smr.Addr() + uint64(i*1000), RKey: smr.STag()}); err != nil {
			t.Fatal(err)
		}
	}
	wmr, _ := sv.reg(t, 8, AccessAll)
	cl.qp.PostSend(SendWR{WRID: 99, Opcode: OpWrite, ReadFence: true, Signaled: true, SGL: []SGE{kmr.SGE(0, 8)}, RemoteAddr: wmr.Addr(), RKey: wmr.STag()})
	for i := 0; i < 40; i++ {
		if wc := cl.waitOK(t, OpRead); wc.WRID != uint64(i) {
			t.Fatalf("read %d completed as %d", i, wc.WRID)
		}
	}
	cl.waitOK(t, OpWrite)
	mustEqual(t, "reads", kbuf, sbuf)
	if c := cl.qp.Counters(); c.ReadStalls == 0 {
		t.Errorf("no Read was held back by ORD: %+v", c)
	}
	cl2, _ := connect(t, pairOpts{client: Config{Rev: 1}, server: Config{Rev: 1}})
	cl2.qp.mu.Lock()
	cl2.qp.ord = 0
	cl2.qp.mu.Unlock()
	m2, _ := cl2.reg(t, 8, AccessAll)
	cl2.qp.PostSend(SendWR{WRID: 1, Opcode: OpRead, SGL: []SGE{m2.SGE(0, 8)}, RemoteAddr: 1, RKey: 0x100})
	if wc := cl2.wait(t); wc.Status != StatusZeroReadResources {
		t.Fatalf("ORD 0 Read: %v", wc.Status)
	}
}

// Local protection: a WR whose SGE is outside its region, lacks rights or
// names another PD's region fails locally with a completion error and a
// Local Catastrophic Terminate to the peer; later WRs flush.
func TestLocalProtection(t *testing.T) {
	for _, tc := range []struct {
		name string
		wr   func(cl *side, own, other, ro *MR) SendWR
		st   Status
	}{
		{"bounds", func(cl *side, own, other, ro *MR) SendWR {
			return SendWR{Opcode: OpSend, SGL: []SGE{{Addr: own.Addr() + 60, Length: 8, LKey: own.STag()}}}
		}, StatusBaseBounds},
		{"other-pd", func(cl *side, own, other, ro *MR) SendWR {
			return SendWR{Opcode: OpSend, SGL: []SGE{other.SGE(0, 8)}}
		}, StatusInvalidPD},
		{"read-sink-without-remote-write", func(cl *side, own, other, ro *MR) SendWR {
			return SendWR{Opcode: OpRead, SGL: []SGE{ro.SGE(0, 8)}, RemoteAddr: 1, RKey: 0x100}
		}, StatusAccessViolation},
		{"wrap", func(cl *side, own, other, ro *MR) SendWR {
			return SendWR{Opcode: OpSend, SGL: []SGE{{Addr: ^uint64(0) - 3, Length: 8, LKey: own.STag()}}}
		}, StatusWrapError},
		{"invalid-lkey", func(cl *side, own, other, ro *MR) SendWR {
			return SendWR{Opcode: OpWrite, SGL: []SGE{{Addr: 0, Length: 8, LKey: 0x7777700}}}
		}, StatusInvalidSTag},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, sv := connect(t, pairOpts{})
			own, _ := cl.reg(t, 64, AccessAll)
			ro, _ := cl.reg(t, 64, AccessLocalRead|AccessLocalWrite)
			other, _ := cl.dev.AllocPD().RegisterMR(make([]byte, 64), AccessAll, nil)
			wr := tc.wr(cl, own, other, ro)
			wr.WRID = 1
			cl.qp.PostSend(wr, SendWR{WRID: 2, Opcode: OpSend, Signaled: false})
			if wc := cl.wait(t); wc.WRID != 1 || wc.Status != tc.st {
				t.Fatalf("completion %+v, want %v", wc, tc.st)
			}
			if wc := cl.wait(t); wc.WRID != 2 || wc.Status != StatusFlushed {
				t.Fatalf("second completion %+v", wc)
			}
			waitDone(t, sv.qp, StateError)
			if ti := sv.qp.Terminate(); ti == nil || ti.Local || ti.Cause.Layer != 0 || ti.Cause.EType != 0 {
				t.Fatalf("peer saw %+v", ti)
			}
		})
	}
}

// Zero-based regions: TOs count from 0.
func TestZeroBasedRegion(t *testing.T) {
	cl, sv := connect(t, pairOpts{})
	cmr, cbuf := cl.reg(t, 5000, AccessAll)
	sbuf := make([]byte, 5000)
	smr, _ := sv.pd.RegisterMR(sbuf, AccessAll, &MROptions{ZeroBased: true})
	if smr.Addr() != 0 {
		t.Fatal(smr.Addr())
	}
	fillRand(cbuf, 4)
	cl.qp.PostSend(SendWR{Opcode: OpWrite, Signaled: true, SGL: []SGE{cmr.SGE(0, 4000)}, RemoteAddr: 1000, RKey: smr.STag()})
	cl.waitOK(t, OpWrite)
	cl.qp.PostSend(SendWR{Opcode: OpRead, Signaled: true, SGL: []SGE{cmr.SGE(0, 4000)}, RemoteAddr: 1000, RKey: smr.STag()})
	cl.waitOK(t, OpRead)
	// A Send tells the server the Write is placed.
	rmr, _ := sv.reg(t, 8, AccessAll)
	sv.qp.PostRecv(RecvWR{SGL: []SGE{rmr.SGE(0, 8)}})
	cl.qp.PostSend(SendWR{Opcode: OpSend})
	sv.waitOK(t, OpRecv)
	mustEqual(t, "zero-based", sbuf[1000:5000], cbuf[:4000])
}

// Private Data both ways, IRD/ORD negotiation, and reject.
func TestMPAPrivateDataAndIRDORD(t *testing.T) {
	cl, sv := connect(t, pairOpts{client: Config{PrivateData: []byte("hello responder")}, serverPrivateData: []byte("hi initiator"),
		clientAttr: QPAttr{IRD: 3, ORD: 7}, srvAttr: QPAttr{IRD: 5, ORD: 9}})
	cp, sp := cl.conn.Params(), sv.conn.Params()
	if string(cp.PeerPrivateData) != "hi initiator" || string(sp.PeerPrivateData) != "hello responder" {
		t.Fatalf("private data %q %q", cp.PeerPrivateData, sp.PeerPrivateData)
	}
	// Responder: ORD ≤ Initiator IRD (3), IRD raised to the Initiator ORD (7).
	// Initiator: ORD ≤ Responder IRD (7), IRD ≥ Responder ORD (3).
	if sp.ORD != 3 || sp.IRD != 7 || cp.ORD != 7 || cp.IRD != 3 {
		t.Fatalf("IRD/ORD: initiator %d/%d responder %d/%d", cp.IRD, cp.ORD, sp.IRD, sp.ORD)
	}
}

func TestMPAReject(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, _ := Listen(ctx, "tcp", "127.0.0.1:0", nil)
	defer l.Close()
	go func() {
		if r, err := l.Accept(ctx); err == nil {
			r.Reject([]byte("go away"))
		}
	}()
	c := newSide(t, QPAttr{})
	_, err := Dial(ctx, "tcp", l.Addr().String(), c.qp, nil)
	var re *RejectError
	if !errors.As(err, &re) || string(re.PrivateData) != "go away" || re.Rev != 2 {
		t.Fatalf("dial: %v", err)
	}
	if c.qp.State() != StateIdle {
		t.Fatalf("QP %v after reject", c.qp.State())
	}
}

// rawServer runs fn as a hand-written MPA Responder: it gets the
// Initiator's Request and writes whatever it wants back.
func rawServer(t *testing.T, fn func(c net.Conn, br *bufio.Reader, req decode.MPAFrame)) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		hdr := make([]byte, 20)
		io.ReadFull(br, hdr)
		b := make([]byte, 20+int(hdr[18])<<8+int(hdr[19]))
		copy(b, hdr)
		io.ReadFull(br, b[20:])
		var req decode.MPAFrame
		decode.ParseMPAFrame(b, &req)
		fn(c, br, req)
	}()
	return l.Addr().String()
}

// Initiator-side MPA checks (MPA-01, -04, -10, -11, -12, -13) and the timeout.
func TestMPAInitiatorChecks(t *testing.T) {
	reply := func(mod func(f *decode.MPAFrame)) func(c net.Conn, br *bufio.Reader, req decode.MPAFrame) {
		return func(c net.Conn, br *bufio.Reader, req decode.MPAFrame) {
			f := decode.MPAFrame{Reply: true, Rev: req.Rev, Enhanced: req.HasV2, HasV2: req.HasV2, PrivateData: make([]byte, 4),
				V2: decode.MPAv2{PeerToPeer: req.V2.PeerToPeer, ZeroLenWriteRTR: req.V2.PeerToPeer, IRD: 4, ORD: 4}}
			if !req.HasV2 {
				f.PrivateData = nil
			}
			mod(&f)
			c.Write(f.Append(nil))
			io.Copy(io.Discard, br) // read what the Initiator sends (a Terminate)
		}
	}
	// The timeout case's server stays silent until the Initiator has given
	// up, so Dial can only return through its own timeout; no clock is
	// read. (After a minute it hangs up: a Dial that ignored its timeout
	// then fails with a wrong error instead of hanging the test.)
	silent := make(chan struct{})
	for _, tc := range []struct {
		name string
		cfg  Config
		srv  func(c net.Conn, br *bufio.Reader, req decode.MPAFrame)
		code int // LLP Terminate code expected in the MPAError, -1 none
	}{
		{"MPA-01 bad key", Config{}, func(c net.Conn, br *bufio.Reader, req decode.MPAFrame) {
			c.Write([]byte("MPA ID Foo Frame\x00\x02\x00\x00"))
		}, -1},
		{"MPA-02 Rev 3", Config{}, reply(func(f *decode.MPAFrame) { f.Rev = 3; f.Enhanced, f.HasV2, f.PrivateData = false, false, nil }), -1},
		{"MPA-04 PD_Length 600", Config{}, func(c net.Conn, br *bufio.Reader, req decode.MPAFrame) {
			c.Write([]byte("MPA ID Rep Frame\x00\x02\x02\x58"))
		}, -1},
		{"MPA-10 plain Reply to an enhanced Request", Config{}, reply(func(f *decode.MPAFrame) { f.Enhanced, f.HasV2, f.PrivateData = false, false, nil }), -1},
		{"MPA-11 P2P not copied", Config{PeerToPeer: true}, reply(func(f *decode.MPAFrame) { f.V2.PeerToPeer = false }), 0x07},
		{"MPA-12 no RTR type", Config{PeerToPeer: true}, reply(func(f *decode.MPAFrame) { f.V2.ZeroLenWriteRTR = false }), 0x07},
		{"MPA-12 only an RTR we cannot send", Config{PeerToPeer: true, RTR: RTRWrite}, reply(func(f *decode.MPAFrame) {
			f.V2.ZeroLenWriteRTR, f.V2.ZeroLenSendRTR = false, true
		}), 0x07},
		{"MPA-13 Responder ORD beyond our IRD", Config{}, reply(func(f *decode.MPAFrame) { f.V2.ORD = 5000 }), 0x06},
		{"timeout", Config{Timeout: 300 * time.Millisecond}, func(c net.Conn, br *bufio.Reader, req decode.MPAFrame) {
			select {
			case <-silent:
			case <-time.After(time.Minute):
			}
		}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := rawServer(t, tc.srv)
			c := newSide(t, QPAttr{})
			_, err := Dial(context.Background(), "tcp", addr, c.qp, &tc.cfg)
			if err == nil {
				t.Fatal("connected")
			}
			var me *MPAError
			switch {
			case tc.code >= 0:
				if !errors.As(err, &me) || me.Term == nil || me.Term.Cause.Layer != 2 || me.Term.Cause.Code != uint8(tc.code) {
					t.Fatalf("error %v, want a Terminate 0x2/0x0/0x%02x", err, tc.code)
				}
			case tc.name == "timeout":
				close(silent)
				var ne net.Error
				if !errors.As(err, &ne) || !ne.Timeout() {
					t.Fatalf("error %v, want a timeout while the Responder is silent", err)
				}
			default:
				if !errors.As(err, &me) || me.Term != nil {
					t.Fatalf("error %v, want a local MPA error without Terminate", err)
				}
			}
			if c.qp.State() != StateIdle {
				t.Fatalf("QP %v", c.qp.State())
			}
		})
	}
}

// Responder-side MPA checks: bad frames close the connection and Accept
// reports them; a silent Initiator times out; the Listener goes on.
func TestMPAResponderChecks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := Listen(ctx, "tcp", "127.0.0.1:0", &Config{Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tc := range []struct {
		name string
		send []byte
	}{
		{"MPA-01 bad key", []byte("MPA ID Rep Frame\x00\x01\x00\x00")},
		{"MPA-02 Rev 0", []byte("MPA ID Req Frame\xc0\x00\x00\x00")},
		{"MPA-04 PD_Length 513", []byte("MPA ID Req Frame\x00\x01\x02\x01")},
		{"MPA-09 S with Rev 1", []byte("MPA ID Req Frame\x10\x01\x00\x04\x00\x01\x00\x01")},
		{"timeout", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.Write(tc.send)
			_, err = l.Accept(ctx)
			if err == nil {
				t.Fatal("accepted")
			}
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			if n, _ := c.Read(make([]byte, 100)); n != 0 {
				t.Fatalf("got %d octets back", n)
			}
		})
	}
	// The Listener still serves a good Initiator.
	sv := newSide(t, QPAttr{})
	go func() {
		if r, err := l.Accept(ctx); err == nil {
			r.Accept(sv.qp, nil)
		}
	}()
	cl := newSide(t, QPAttr{})
	conn, err := Dial(ctx, "tcp", l.Addr().String(), cl.qp, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
}

// A P2P Responder takes only the agreed RTR as the first FPDU (MPA-14).
func TestP2PFirstFPDUNotRTR(t *testing.T) {
	var e env
	req := v2Req(true, false) // offers the Write RTR
	r, sv, rep := rawClient(t, Config{PeerToPeer: true}, req, QPAttr{}, stdPrep(&e, 1))
	if !rep.V2.PeerToPeer || !rep.V2.ZeroLenWriteRTR {
		t.Fatalf("reply %+v", rep.V2)
	}
	r.send(untagged(decode.OpSend, 0, 1, 0, true, []byte("too early")))
	term := r.expectTerminate(2, 0, 0x07)
	if term.HasDDP {
		t.Fatal("LLP Terminate with headers")
	}
	r.c.Close()
	waitDone(t, sv.qp, StateError)
}
