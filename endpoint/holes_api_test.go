package endpoint

// Tests for issue 17's holes that needed new API (stream scope, Destroy,
// a batch-size hook): the old code could not express them.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
)

// rawClientOn connects a raw Initiator to sv.qp (already set up).
func rawClientOn(t testing.TB, srv Config, req decode.MPAFrame, sv *side) *raw {
	t.Helper()
	r, _ := rawConnect(t, srv, req, sv)
	return r
}

// rawConnect connects a raw Initiator to sv.qp, returning the Reply.
func rawConnect(t testing.TB, srv Config, req decode.MPAFrame, sv *side) (*raw, decode.MPAFrame) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, accepted := acceptOne(t, ctx, srv, sv, nil)
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	r := &raw{t: t, c: c, br: bufio.NewReader(c), msn: [3]uint32{1, 1, 1}}
	r.write(req.Append(nil))
	hdr := make([]byte, 20)
	if _, err := io.ReadFull(r.br, hdr); err != nil {
		t.Fatalf("reading Reply: %v", err)
	}
	b := make([]byte, 20+int(binary.BigEndian.Uint16(hdr[18:])))
	copy(b, hdr)
	io.ReadFull(r.br, b[20:])
	var rep decode.MPAFrame
	if _, err := decode.ParseMPAFrame(b, &rep); err != nil {
		t.Fatal(err)
	}
	if err := accepted(); err != nil {
		t.Fatalf("accept: %v", err)
	}
	r.crc = req.CRC || rep.CRC
	t.Cleanup(func() { c.Close() })
	return r, rep
}

// twoQPs is one Responder device and PD with two QPs, A and B.
func twoQPs(t testing.TB) (a, b *side) {
	a = newSide(t, QPAttr{})
	qp, err := a.pd.CreateQP(QPAttr{SendCQ: a.cq, RecvCQ: a.cq})
	if err != nil {
		t.Fatal(err)
	}
	return a, &side{dev: a.dev, pd: a.pd, cq: a.cq, qp: qp}
}

// Hole 4 (RFC 5040 §8.1.1 item 3, RFC 5042 §6.1.1): a region scoped to QP B
// is out of reach of the peer of QP A on the same PD: no Write, no Read, no
// Send with Invalidate; B's peer uses it.
func TestHoleStreamScope(t *testing.T) {
	for _, what := range []string{"write", "read", "invalidate"} {
		t.Run(what, func(t *testing.T) {
			a, b := twoQPs(t)
			buf := make([]byte, 4096)
			mr, err := b.pd.RegisterMR(buf, AccessAll, &MROptions{QP: b.qp})
			if err != nil {
				t.Fatal(err)
			}
			rb, _ := a.reg(t, 64, AccessLocalWrite)
			a.qp.PostRecv(RecvWR{WRID: 1, SGL: []SGE{rb.SGE(0, 64)}})
			ra := rawClientOn(t, Config{}, v2Req(false, true), a)
			rbp := rawClientOn(t, Config{}, v2Req(false, true), b)
			switch what {
			case "write":
				ra.send(wr(mr, 0, 64))
				ra.expectTerminate(1, 1, 0x02)
			case "read":
				ra.send(readReq(1, decode.ReadRequest{SinkSTag: 0x500, Size: 64, SrcSTag: uint32(mr.STag()), SrcTO: mr.Addr()}))
				ra.expectTerminate(0, 1, 0x03)
			case "invalidate":
				s := untagged(decode.OpSendInv, 0, 1, 0, true, []byte("x"))
				s.InvalidateSTag = uint32(mr.STag())
				ra.send(s)
				ra.expectTerminate(0, 1, 0x09)
			}
			ra.c.Close()
			waitDone(t, a.qp, StateError)
			if !mr.Valid() {
				t.Fatal("A's peer invalidated B's region")
			}
			if !bytes.Equal(buf, make([]byte, 4096)) {
				t.Fatal("A's peer wrote into B's region")
			}
			// B's own peer may use it.
			rbp.send(tagged(decode.OpWrite, uint32(mr.STag()), mr.Addr(), true, bytes.Repeat([]byte{7}, 64)))
			rbp.send(readReq(1, decode.ReadRequest{SinkSTag: 0x500, Size: 64, SrcSTag: uint32(mr.STag()), SrcTO: mr.Addr()}))
			rbp.c.SetReadDeadline(time.Now().Add(10 * time.Second))
			s, _, err := rbp.readFPDU()
			if err != nil || s.RDMAP.Opcode != decode.OpReadResponse || !bytes.Equal(s.Payload, bytes.Repeat([]byte{7}, 64)) {
				t.Fatalf("B's peer: %v %v", s.RDMAP.Opcode, err)
			}
			// Locally, too, only B may use it.
			if _, _, e := a.dev.check(mr.STag(), a.qp, AccessLocalWrite, mr.Addr(), 8); e != accPD {
				t.Fatalf("QP A's local access to B's region: %v", e)
			}
			if _, _, e := b.dev.check(mr.STag(), b.qp, AccessLocalWrite, mr.Addr(), 8); e != accOK {
				t.Fatalf("QP B's local access to its region: %v", e)
			}
		})
	}
	a, _ := twoQPs(t)
	other := newSide(t, QPAttr{})
	if _, err := a.pd.RegisterMR(make([]byte, 8), AccessAll, &MROptions{QP: other.qp}); err == nil {
		t.Fatal("region scoped to a QP of another PD")
	}
}

// Hole 6f: Destroy frees the QP's MaxQP slot, resets a connected QP and
// flushes its work; a destroyed QP takes no more verbs.
func TestHoleDestroyQP(t *testing.T) {
	dev := OpenDevice(DeviceAttr{MaxQP: 2})
	pd := dev.AllocPD()
	cq, _ := dev.CreateCQ(64)
	var qps []*QP
	for i := 0; i < 2; i++ {
		qp, err := pd.CreateQP(QPAttr{SendCQ: cq, RecvCQ: cq})
		if err != nil {
			t.Fatal(err)
		}
		qps = append(qps, qp)
	}
	if _, err := pd.CreateQP(QPAttr{SendCQ: cq, RecvCQ: cq}); err == nil {
		t.Fatal("MaxQP not enforced")
	}
	for round := 0; round < 300; round++ {
		if err := qps[0].Destroy(); err != nil {
			t.Fatal(err)
		}
		qp, err := pd.CreateQP(QPAttr{SendCQ: cq, RecvCQ: cq})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		qps[0] = qp
	}
	if err := qps[1].Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := qps[1].Destroy(); err != ErrClosed {
		t.Fatalf("second Destroy: %v", err)
	}
	if _, err := qps[1].PostSend(SendWR{Opcode: OpSend}); err != ErrClosed {
		t.Fatalf("PostSend on a destroyed QP: %v", err)
	}
	// A connected QP: reset, receives flushed, the peer sees the reset.
	sv := newSide(t, QPAttr{})
	rb, _ := sv.reg(t, 64, AccessLocalWrite)
	sv.qp.PostRecv(RecvWR{WRID: 5, SGL: []SGE{rb.SGE(0, 64)}})
	r := rawClientOn(t, Config{}, v2Req(false, false), sv)
	if err := sv.qp.Destroy(); err != nil {
		t.Fatal(err)
	}
	if wc := sv.wait(t); wc.WRID != 5 || wc.Status != StatusFlushed {
		t.Fatalf("receive %+v", wc)
	}
	r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(r.br); err != nil && !errorsIs(err, syscall.ECONNRESET) {
		t.Fatalf("peer of a destroyed QP: %v", err)
	}
}

// Hole 6g: a large Read Response (and a large Write) goes out in batches of
// bounded size, not as one batch of the whole message.
func TestHoleReadResponseBatched(t *testing.T) {
	const n = 16 << 20
	var src *MR
	var maxBatch atomic.Int64
	r, sv, _ := rawClient(t, Config{}, v2Req(false, true), QPAttr{}, func(sv *side) {
		src, _ = sv.reg(t, n, AccessAll)
		sv.qp.onFlush = func(b int) {
			if int64(b) > maxBatch.Load() {
				maxBatch.Store(int64(b))
			}
		}
	})
	r.send(readReq(1, decode.ReadRequest{SinkSTag: 0x500, Size: n, SrcSTag: uint32(src.STag()), SrcTO: src.Addr()}))
	r.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	got := 0
	for got < n {
		s, _, err := r.readFPDU()
		if err != nil {
			t.Fatal(err)
		}
		got += len(s.Payload)
	}
	if m := maxBatch.Load(); m > txBatchMax+128<<10 {
		t.Fatalf("largest batch %d octets for a %d-octet Read", m, n)
	}
	if sv.qp.State() != StateRTS {
		t.Fatal(sv.qp.Err())
	}
}

// CQ Resize keeps waiting completions; Destroy waits for its QPs' Destroy.
func TestCQResizeDestroy(t *testing.T) {
	dev := OpenDevice(DeviceAttr{MaxCQE: 64})
	cq, _ := dev.CreateCQ(4)
	for i := 0; i < 3; i++ {
		cq.push(WorkCompletion{WRID: uint64(i)})
	}
	if err := cq.Resize(2); err == nil {
		t.Fatal("resized below the completions waiting")
	}
	if err := cq.Resize(128); err == nil {
		t.Fatal("resized beyond MaxCQE")
	}
	if err := cq.Resize(16); err != nil || cq.Depth() != 16 {
		t.Fatal(err)
	}
	for i := 3; i < 16; i++ {
		if !cq.push(WorkCompletion{WRID: uint64(i)}) {
			t.Fatalf("push %d", i)
		}
	}
	var wc [32]WorkCompletion
	if n := cq.Poll(wc[:]); n != 16 || wc[0].WRID != 0 || wc[15].WRID != 15 {
		t.Fatalf("%d completions, first %d", n, wc[0].WRID)
	}
	qp, _ := dev.AllocPD().CreateQP(QPAttr{SendCQ: cq, RecvCQ: cq})
	if err := cq.Destroy(); err == nil {
		t.Fatal("CQ destroyed under a QP")
	}
	qp.Destroy()
	if err := cq.Destroy(); err != nil {
		t.Fatal(err)
	}
	if cq.Destroy() != ErrClosed || cq.Resize(8) != ErrClosed {
		t.Fatal("verbs on a destroyed CQ")
	}
}
