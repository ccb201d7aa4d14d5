package endpoint

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
)

// Two QPs share one SRQ: each Send takes the oldest receive whichever QP
// it arrives on, the limit event fires once when the SRQ falls below its
// limit, and a Send with the SRQ empty gets "no buffer".
func TestSRQLimit(t *testing.T) {
	var events atomic.Int32
	var evSRQ atomic.Pointer[SRQ]
	dev := OpenDevice(DeviceAttr{AsyncEvent: func(e AsyncEvent) {
		if e.Type == EventSRQLimitReached {
			events.Add(1)
			evSRQ.Store(e.SRQ)
		}
	}})
	pd := dev.AllocPD()
	cq, _ := dev.CreateCQ(64)
	srq, err := pd.CreateSRQ(SRQAttr{MaxWR: 8, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pd.CreateSRQ(SRQAttr{MaxWR: 4, Limit: 5}); err == nil {
		t.Fatal("limit above MaxWR")
	}
	rb, _ := pd.RegisterMR(make([]byte, 3*64), AccessLocalWrite, nil)
	for i := 0; i < 3; i++ {
		if _, err := srq.PostRecv(RecvWR{WRID: uint64(10 + i), SGL: []SGE{rb.SGE(64*i, 64)}}); err != nil {
			t.Fatal(err)
		}
	}
	mk := func() *side {
		qp, err := pd.CreateQP(QPAttr{SendCQ: cq, RecvCQ: cq, SRQ: srq})
		if err != nil {
			t.Fatal(err)
		}
		return &side{dev: dev, pd: pd, cq: cq, qp: qp}
	}
	a, b := mk(), mk()
	if _, err := a.qp.PostRecv(RecvWR{WRID: 1}); err == nil {
		t.Fatal("PostRecv on a QP with an SRQ")
	}
	ra := rawClientOn(t, Config{}, v2Req(false, false), a)
	rb2 := rawClientOn(t, Config{}, v2Req(false, false), b)
	send := func(r *raw, msn uint32) { r.send(untagged(decode.OpSend, 0, msn, 0, true, []byte("hi"))) }
	send(ra, 1)
	if wc := a.waitOK(t, OpRecv); wc.WRID != 10 || wc.QPNum != a.qp.Num() {
		t.Fatalf("first receive %+v", wc)
	}
	if events.Load() != 0 {
		t.Fatal("limit event with 2 receives left (limit 2)")
	}
	send(rb2, 1)
	if wc := b.waitOK(t, OpRecv); wc.WRID != 11 || wc.QPNum != b.qp.Num() {
		t.Fatalf("second receive %+v", wc)
	}
	if events.Load() != 1 || evSRQ.Load() != srq {
		t.Fatalf("%d limit events", events.Load())
	}
	send(ra, 2)
	if wc := a.waitOK(t, OpRecv); wc.WRID != 12 {
		t.Fatalf("third receive %+v", wc)
	}
	if events.Load() != 1 {
		t.Fatal("the limit event fired twice without being re-armed")
	}
	send(rb2, 2)
	rb2.expectTerminate(1, 2, 0x02)
	rb2.c.Close()
	waitDone(t, b.qp, StateError)
	if err := srq.Destroy(); err == nil {
		t.Fatal("SRQ destroyed under its QPs")
	}
	ra.c.Close()
	select {
	case <-a.qp.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("QP a did not end")
	}
	a.qp.Destroy()
	b.qp.Destroy()
	if err := srq.Destroy(); err != nil {
		t.Fatal(err)
	}
	if _, err := srq.PostRecv(RecvWR{}); err != ErrClosed {
		t.Fatalf("PostRecv on a destroyed SRQ: %v", err)
	}
}
