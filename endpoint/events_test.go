package endpoint

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
)

// evPair connects two endpoints whose devices record their events.
func evPair(t *testing.T, clAttr, svAttr QPAttr) (cl, sv *evSide) {
	t.Helper()
	cl, sv = newEvSide(t, clAttr), newEvSide(t, svAttr)
	connectSides(t, pairOpts{}, cl.side, sv.side)
	t.Cleanup(func() { cl.qp.Destroy(); sv.qp.Destroy() })
	return cl, sv
}

// Each affiliated asynchronous event of V00 §8.3.1 (Figs. 24, 37), produced
// where the draft puts it.
func TestEventLLPCloseComplete(t *testing.T) {
	cl, sv := evPair(t, QPAttr{}, QPAttr{})
	if err := cl.qp.Modify(StateClosing); err != nil {
		t.Fatal(err)
	}
	e := waitEvent(t, cl.ev, EventLLPCloseComplete)
	if e.QP != cl.qp || e.State != StateIdle {
		t.Fatalf("event %+v", e)
	}
	// The peer saw a FIN with nothing outstanding: RTS → Closing → Idle.
	waitEvent(t, sv.ev, EventLLPCloseComplete)
	waitDone(t, sv.qp, StateIdle)
}

func TestEventTerminateReceived(t *testing.T) {
	cl, sv := evPair(t, QPAttr{}, QPAttr{})
	cl.qp.Modify(StateTerminate)
	e := waitEvent(t, sv.ev, EventTerminateReceived)
	if !errors.Is(e.Err, ErrRemoteTerminate) {
		t.Fatalf("event error %v", e.Err)
	}
	// The receiver reports entering Error; the side that chose to
	// terminate by Modify reports neither (V00 §6.2.3 item 1).
	waitEvent(t, sv.ev, EventErrorStateEntered)
	waitDone(t, cl.qp, StateError)
	noEvent(t, cl.ev, EventTerminateSent)
	noEvent(t, cl.ev, EventErrorStateEntered)
}

func TestEventTerminateSentAndErrorStateEntered(t *testing.T) {
	s := newEvSide(t, QPAttr{})
	r := rawClientOn(t, Config{}, v2Req(false, false), s.side)
	r.send(tagged(decode.OpWrite, 0x12345600, 0, true, make([]byte, 8)))
	e := waitEvent(t, s.ev, EventTerminateSent)
	var te *TerminateError
	if !errors.As(e.Err, &te) || te.Info.Cause.Layer != 1 || te.Info.Cause.EType != 1 || te.Info.Cause.Code != 0 {
		t.Fatalf("event error %v, want the DDP Invalid STag Terminate", e.Err)
	}
	r.expectTerminate(1, 1, 0)
	r.c.Close()
	waitEvent(t, s.ev, EventErrorStateEntered)
}

func TestEventBadCloseDataWhileClosing(t *testing.T) {
	s, r := qpIn(t, StateClosing)
	r.send(untagged(decode.OpSend, decode.QNSend, 1, 0, true, nil))
	e := waitEvent(t, s.ev, EventBadClose)
	if e.State != StateError {
		t.Fatalf("event %+v", e)
	}
	waitDone(t, s.qp, StateError)
}

func TestEventLLPConnLostFinalTimeoutInClosing(t *testing.T) {
	s := newEvSide(t, QPAttr{DrainTimeout: 50 * time.Millisecond})
	openGate(t, s)
	s.qp.Modify(StateClosing) // the raw peer never closes: the final timeout is an error
	waitEvent(t, s.ev, EventLLPConnLost)
	waitDone(t, s.qp, StateError)
}

func TestEventBadCloseAfterModifyTerminate(t *testing.T) {
	s := newEvSide(t, QPAttr{DrainTimeout: 50 * time.Millisecond})
	openGate(t, s)
	s.qp.Modify(StateTerminate) // the peer never closes: an LLP error in Terminate
	waitEvent(t, s.ev, EventBadClose)
	waitDone(t, s.qp, StateError)
	noEvent(t, s.ev, EventErrorStateEntered)
}

func TestEventLLPConnReset(t *testing.T) {
	s := newEvSide(t, QPAttr{})
	r := openGate(t, s)
	r.c.(*net.TCPConn).SetLinger(0)
	r.c.Close()
	e := waitEvent(t, s.ev, EventLLPConnReset)
	if e.State != StateError {
		t.Fatalf("event %+v", e)
	}
}

func TestEventRQLimitReached(t *testing.T) {
	cl, sv := evPair(t, QPAttr{}, QPAttr{})
	mr, _ := sv.reg(t, 4*16, AccessAll)
	for i := 0; i < 4; i++ {
		sv.qp.PostRecv(RecvWR{WRID: uint64(i), SGL: []SGE{mr.SGE(16*i, 16)}})
	}
	if err := sv.qp.SetRQLimit(3); err != nil {
		t.Fatal(err)
	}
	if err := sv.qp.SetRQLimit(5000); err == nil {
		t.Fatal("RQ limit above the RQ depth")
	}
	cl.qp.PostSend(SendWR{Opcode: OpSend})
	sv.waitOK(t, OpRecv)
	// Four receives, one taken: still 3, not below the limit.
	noEvent(t, sv.ev, EventRQLimitReached)
	cl.qp.PostSend(SendWR{Opcode: OpSend}, SendWR{Opcode: OpSend})
	sv.waitOK(t, OpRecv)
	sv.waitOK(t, OpRecv)
	e := waitEvent(t, sv.ev, EventRQLimitReached)
	if e.QP != sv.qp {
		t.Fatalf("event %+v", e)
	}
	noEvent(t, sv.ev, EventRQLimitReached) // one-shot
}

// Unaffiliated events (V00 Fig. 25, 37) reach Device.Events, with no QP.
func TestUnaffiliatedCQOverflow(t *testing.T) {
	cl, sv := evPair(t, QPAttr{}, QPAttr{})
	small, _ := sv.dev.CreateCQ(1)
	qp, _ := sv.pd.CreateQP(QPAttr{SendCQ: small, RecvCQ: small})
	defer qp.Destroy()
	_ = cl
	// Two flushed receives into a CQ of one: the second overflows.
	mr, _ := sv.reg(t, 16, AccessAll)
	qp.PostRecv(RecvWR{WRID: 1, SGL: []SGE{mr.SGE(0, 16)}}, RecvWR{WRID: 2, SGL: []SGE{mr.SGE(0, 16)}})
	qp.Modify(StateError)
	e := waitEvent(t, sv.dev.Events(), EventCQOverflow)
	if e.CQ != small || e.QP != nil || !errors.Is(e.Err, ErrCQOverflow) {
		t.Fatalf("event %+v", e)
	}
	if !small.Overflowed() {
		t.Fatal("CQ does not report the overflow")
	}
}

func TestUnaffiliatedListenerError(t *testing.T) {
	dev := OpenDevice(DeviceAttr{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := Listen(ctx, "tcp", "127.0.0.1:0", &Config{Device: dev})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")) // not an MPA Request
	e := waitEvent(t, dev.Events(), EventListenerError)
	var me *MPAError
	if e.Listener != l || e.QP != nil || !errors.As(e.Err, &me) {
		t.Fatalf("event %+v (%v)", e, e.Err)
	}
}

func TestUnaffiliatedSRQLimit(t *testing.T) {
	cl, sv := evPair(t, QPAttr{}, QPAttr{})
	srq, _ := sv.pd.CreateSRQ(SRQAttr{MaxWR: 4, Limit: 2})
	_ = cl
	mr, _ := sv.reg(t, 64, AccessAll)
	srq.PostRecv(RecvWR{WRID: 1, SGL: []SGE{mr.SGE(0, 16)}}, RecvWR{WRID: 2, SGL: []SGE{mr.SGE(16, 16)}})
	// A second QP on the SRQ, connected to a raw peer that sends a Send.
	q := &side{dev: sv.dev, pd: sv.pd, cq: sv.cq}
	q.qp, _ = sv.pd.CreateQP(QPAttr{SendCQ: sv.cq, RecvCQ: sv.cq, SRQ: srq})
	defer q.qp.Destroy()
	r := rawClientOn(t, Config{}, v2Req(false, false), q)
	r.send(untagged(decode.OpSend, decode.QNSend, 1, 0, true, []byte("x")))
	e := waitEvent(t, sv.dev.Events(), EventSRQLimitReached)
	if e.SRQ != srq || e.QP != nil {
		t.Fatalf("event %+v", e)
	}
}

// Bad LLP Close (V00 §6.2.2, Fig. 24): the peer closes while our RDMA Read
// waits for its response; the Read completes with LocalTermination and the
// peer gets Terminate 0x0/0x2/0x07.
func TestBadLLPCloseStatus(t *testing.T) {
	s := newEvSide(t, QPAttr{})
	r := openGate(t, s)
	sink, _ := s.reg(t, 64, AccessAll)
	s.qp.PostSend(SendWR{WRID: 3, Opcode: OpRead, SGL: []SGE{sink.SGE(0, 64)}, RemoteAddr: 0, RKey: 0x100})
	for {
		seg, _, err := r.readFPDU()
		if err != nil {
			t.Fatal(err)
		}
		if seg.RDMAP.Opcode == decode.OpReadRequest {
			break
		}
	}
	r.c.(*net.TCPConn).CloseWrite()
	r.expectTerminate(0, 2, 0x07)
	if wc := s.wait(t); wc.WRID != 3 || wc.Status != StatusLocalTermination {
		t.Fatalf("Read completion %v %v, want LocalTermination", wc.Opcode, wc.Status)
	}
}

// A reset while Closing is an LLP failure of the close (V00 §6.2.5, Fig.
// 11): LLP Connection Reset, Error, and nothing posted survives.
func TestEventResetWhileClosing(t *testing.T) {
	s, r := qpIn(t, StateClosing)
	mr, _ := s.reg(t, 16, AccessAll)
	s.qp.PostRecv(RecvWR{WRID: 4, SGL: []SGE{mr.SGE(0, 16)}})
	r.c.(*net.TCPConn).SetLinger(0)
	r.c.Close()
	waitEvent(t, s.ev, EventLLPConnReset)
	waitDone(t, s.qp, StateError)
	if wc := s.wait(t); wc.WRID != 4 || wc.Status != StatusFlushed {
		t.Fatalf("receive %v %v, want Flushed", wc.WRID, wc.Status)
	}
	noEvent(t, s.ev, EventLLPCloseComplete)
}

// waitRxWrites waits until the QP has taken n inbound RDMA Writes, failing
// the test after a watchdog bound.
func waitRxWrites(t *testing.T, qp *QP, n uint64) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); qp.Counters().RxWrites < n; {
		if time.Now().After(end) {
			t.Fatalf("the QP took %d Writes, want %d", qp.Counters().RxWrites, n)
		}
		time.Sleep(time.Millisecond)
	}
}
