package endpoint

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
)

const accAtomic = AccessLocalRead | AccessLocalWrite | AccessRemoteAtomic

var ne = binary.NativeEndian

// link connects cl to sv over loopback TCP: sv's QP accepts, cl's dials.
func link(t testing.TB, cl, sv *side) {
	t.Helper()
	connectSides(t, pairOpts{client: Config{CRC: true}, server: Config{CRC: true}}, cl, sv)
}

// Masked FetchAdd follows the RFC 7306 §5.1.1 pseudocode: every field ends
// at a bit set in the Add Mask and drops its carry; CmpSwap swaps the
// masked bits when the masked compare matches (§5.1.2).
func TestAtomicApply(t *testing.T) {
	cases := []struct {
		a    decode.AtomicRequest
		orig uint64
		want uint64
	}{
		{decode.AtomicRequest{AOpCode: decode.AOpFetchAdd, AddSwapData: 5}, 10, 15},
		{decode.AtomicRequest{AOpCode: decode.AOpFetchAdd, AddSwapData: 1}, ^uint64(0), 0},
		// Two 32-bit fields: each wraps on its own.
		{decode.AtomicRequest{AOpCode: decode.AOpFetchAdd, AddSwapData: 0x00000001_FFFFFFFF, AddSwapMask: 0x80000000_80000000}, 0xFFFFFFFF_00000001, 0},
		// Eight 8-bit fields.
		{decode.AtomicRequest{AOpCode: decode.AOpFetchAdd, AddSwapData: 0x0101010101010101, AddSwapMask: 0x8080808080808080}, 0xFF00FF00FF00FF00, 0x0001000100010001},
		{decode.AtomicRequest{AOpCode: decode.AOpCmpSwap, AddSwapData: 7, AddSwapMask: ^uint64(0), CompareData: 3, CompareMask: ^uint64(0)}, 3, 7},
		{decode.AtomicRequest{AOpCode: decode.AOpCmpSwap, AddSwapData: 7, AddSwapMask: ^uint64(0), CompareData: 4, CompareMask: ^uint64(0)}, 3, 3},
		// Compare the low octet only, swap the high half only.
		{decode.AtomicRequest{AOpCode: decode.AOpCmpSwap, AddSwapData: 0xAAAAAAAA_BBBBBBBB, AddSwapMask: 0xFFFFFFFF_00000000, CompareData: 0x11, CompareMask: 0xFF}, 0x12345678_9ABCDE11, 0xAAAAAAAA_9ABCDE11},
	}
	for i, c := range cases {
		if got := apply(&c.a, c.orig); got != c.want {
			t.Errorf("case %d: %#x, want %#x", i, got, c.want)
		}
	}
}

// atomicSides connects two RFC 7306 endpoints; the server's target region
// has remote-atomic (and remote-write) rights and holds init at each
// 8-octet slot.
func atomicSides(t testing.TB, init []uint64) (cl, sv *side, tgt *MR, res *MR) {
	cl, sv = newSide(t, QPAttr{RFC7306: true}), newSide(t, QPAttr{RFC7306: true})
	buf := make([]byte, 8*len(init))
	for i, v := range init {
		ne.PutUint64(buf[8*i:], v)
	}
	tgt, err := sv.pd.RegisterMR(buf, accAtomic|AccessRemoteWrite, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, _ = cl.reg(t, 8*64, AccessLocalWrite|AccessLocalRead|AccessRemoteWrite)
	link(t, cl, sv)
	return cl, sv, tgt, res
}

// Each RFC 7306 operation between two endpoints: the original value lands
// in the requester's buffer, the target holds the result, a Read after the
// atomics sees it, and completions come in order.
func TestAtomicOps(t *testing.T) {
	cl, _, tgt, res := atomicSides(t, []uint64{100, 3, 3, 0xFF00FF00FF00FF00})
	ops := []struct {
		op   Opcode
		slot int
		args AtomicArgs
		orig uint64
	}{
		{OpAtomicFetchAdd, 0, FetchAdd(5), 100},
		{OpAtomicFetchAdd, 0, FetchAdd(^uint64(0)), 105}, // -1
		{OpAtomicCmpSwap, 1, CmpSwap(3, 42), 3},          // swaps
		{OpAtomicCmpSwap, 2, CmpSwap(4, 42), 3},          // does not
		{OpAtomicFetchAdd, 3, AtomicArgs{Data: 0x0101010101010101, Mask: 0x8080808080808080}, 0xFF00FF00FF00FF00},
		{OpAtomicFetchAdd, 0, FetchAdd(0), 104}, // the RFC's harmless probe (§1.1)
	}
	for i, o := range ops {
		if _, err := cl.qp.PostSend(SendWR{WRID: uint64(i), Opcode: o.op, Signaled: true, SGL: []SGE{res.SGE(8*i, 8)},
			RKey: tgt.STag(), RemoteAddr: tgt.Addr() + uint64(8*o.slot), Atomic: o.args}); err != nil {
			t.Fatal(err)
		}
	}
	for i, o := range ops {
		wc := cl.waitOK(t, o.op)
		if wc.WRID != uint64(i) {
			t.Fatalf("completion %d for WR %d", i, wc.WRID)
		}
		if got := ne.Uint64(res.Buf()[8*i:]); got != o.orig {
			t.Fatalf("%v %d: original %d (%#x), want %#x", o.op, i, got, got, o.orig)
		}
	}
	if c := cl.qp.Counters(); c.TxAtomicReqs != uint64(len(ops)) || c.RxAtomicResps != uint64(len(ops)) {
		t.Fatalf("counters %+v", c)
	}
	tgt.Sync()
	want := []uint64{104, 42, 3, 0x0001000100010001}
	for i, w := range want {
		if got := ne.Uint64(tgt.Buf()[8*i:]); got != w {
			t.Fatalf("target slot %d = %#x, want %#x", i, got, w)
		}
	}
}

// Atomics and RDMA Reads share QN 1 and ORD: a Read after atomics returns
// the target as the atomics left it, and an atomic after a Read does not
// change what the Read returns (RFC 7306 §5.2, §7).
func TestAtomicOrderWithReads(t *testing.T) {
	cl, sv := newSide(t, QPAttr{RFC7306: true, ORD: 2}), newSide(t, QPAttr{RFC7306: true})
	tgt, _ := sv.reg(t, 64, accAtomic|AccessRemoteRead)
	res, _ := cl.reg(t, 4096, AccessLocalWrite|AccessLocalRead|AccessRemoteWrite)
	link(t, cl, sv)
	var wrs []SendWR
	for i := 0; i < 20; i++ {
		wrs = append(wrs, SendWR{WRID: uint64(2 * i), Opcode: OpRead, Signaled: true, SGL: []SGE{res.SGE(16*i, 8)}, RKey: tgt.STag(), RemoteAddr: tgt.Addr()},
			SendWR{WRID: uint64(2*i + 1), Opcode: OpAtomicFetchAdd, Signaled: true, SGL: []SGE{res.SGE(16*i+8, 8)}, RKey: tgt.STag(), RemoteAddr: tgt.Addr(), Atomic: FetchAdd(1)})
	}
	if _, err := cl.qp.PostSend(wrs...); err != nil {
		t.Fatal(err)
	}
	for i := range wrs {
		if wc := cl.wait(t); wc.Status != StatusSuccess || wc.WRID != uint64(i) {
			t.Fatalf("completion %+v, want WR %d", wc, i)
		}
	}
	for i := 0; i < 20; i++ {
		read, orig := ne.Uint64(res.Buf()[16*i:]), ne.Uint64(res.Buf()[16*i+8:])
		if read != uint64(i) || orig != uint64(i) {
			t.Fatalf("step %d: Read saw %d, FetchAdd returned %d", i, read, orig)
		}
	}
}

// Fetch-and-Adds from two QPs on two connections to one device are atomic
// with respect to each other (RFC 7306 §5.3): every returned value is
// unique and the final value is the sum.
func TestAtomicConcurrentSum(t *testing.T) {
	const perQP = 500
	srv := newSide(t, QPAttr{RFC7306: true})
	tgt, _ := srv.reg(t, 8, accAtomic)
	qp2, err := srv.pd.CreateQP(QPAttr{SendCQ: srv.cq, RecvCQ: srv.cq, RFC7306: true})
	if err != nil {
		t.Fatal(err)
	}
	srv2 := &side{dev: srv.dev, pd: srv.pd, cq: srv.cq, qp: qp2}
	var clients []*side
	for _, sv := range []*side{srv, srv2} {
		cl := newSide(t, QPAttr{RFC7306: true})
		link(t, cl, sv)
		clients = append(clients, cl)
	}
	seen := make([]bool, 2*perQP)
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, cl := range clients {
		wg.Add(1)
		go func(cl *side) {
			defer wg.Done()
			res, _ := cl.pd.RegisterMR(make([]byte, 8*perQP), AccessLocalWrite|AccessLocalRead, nil)
			for i := 0; i < perQP; {
				n := 0
				for ; n < 8 && i+n < perQP; n++ {
					wr := SendWR{WRID: uint64(i + n), Opcode: OpAtomicFetchAdd, Signaled: true, SGL: []SGE{res.SGE(8*(i+n), 8)},
						RKey: tgt.STag(), RemoteAddr: tgt.Addr(), Atomic: FetchAdd(1)}
					if _, err := cl.qp.PostSend(wr); err != nil {
						errs <- err
						return
					}
				}
				for k := 0; k < n; k++ {
					ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
					var wc [1]WorkCompletion
					_, err := cl.cq.Wait(ctx, wc[:])
					cancel()
					if err != nil || wc[0].Status != StatusSuccess {
						errs <- errors.Join(err, errors.New(wc[0].Status.String()))
						return
					}
				}
				i += n
			}
			mu.Lock()
			defer mu.Unlock()
			for i := 0; i < perQP; i++ {
				v := ne.Uint64(res.Buf()[8*i:])
				if v >= 2*perQP || seen[v] {
					errs <- errors.New("a value returned twice or out of range")
					return
				}
				seen[v] = true
			}
		}(cl)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	tgt.Sync()
	if got := ne.Uint64(tgt.Buf()); got != 2*perQP {
		t.Fatalf("final %d, want %d", got, 2*perQP)
	}
}

// Immediate Data, with SE, RDMA Write with Immediate and Send with
// Immediate: each receive completes with the 8 octets (RFC 7306 §6.1), a
// Write's data is placed before its Immediate Data completes (§7), and a
// Send with Immediate takes two receives in order.
func TestImmediateData(t *testing.T) {
	cl, sv := newSide(t, QPAttr{RFC7306: true}), newSide(t, QPAttr{RFC7306: true})
	dst, dbuf := sv.reg(t, 4096, AccessLocalWrite|AccessRemoteWrite)
	src, sbuf := cl.reg(t, 4096, AccessLocalRead)
	fillRand(sbuf, 7)
	for i := 0; i < 6; i++ {
		sv.qp.PostRecv(RecvWR{WRID: uint64(100 + i), SGL: []SGE{dst.SGE(2048+64*i, 64)}})
	}
	link(t, cl, sv)
	wrs := []SendWR{
		{WRID: 1, Opcode: OpImmData, Imm: 0x0102030405060708, Signaled: true},
		{WRID: 2, Opcode: OpImmDataSE, Imm: 2, Signaled: true},
		{WRID: 3, Opcode: OpWriteImm, Imm: 3, SGL: []SGE{src.SGE(0, 1500)}, RKey: dst.STag(), RemoteAddr: dst.Addr(), Signaled: true},
		{WRID: 4, Opcode: OpSendImm, Imm: 4, SGL: []SGE{src.SGE(0, 50)}, Signaled: true},
	}
	if _, err := cl.qp.PostSend(wrs...); err != nil {
		t.Fatal(err)
	}
	for _, w := range wrs {
		if wc := cl.waitOK(t, w.Opcode); wc.WRID != w.WRID {
			t.Fatalf("send completion %d, want %d", wc.WRID, w.WRID)
		}
	}
	type want struct {
		imm       uint64
		with, sol bool
		n         uint32
	}
	for i, w := range []want{{0x0102030405060708, true, false, 0}, {2, true, true, 0}, {3, true, false, 0}, {0, false, false, 50}, {4, true, false, 0}} {
		wc := sv.waitOK(t, OpRecv)
		if wc.WRID != uint64(100+i) || wc.WithImm != w.with || wc.Imm != w.imm || wc.Solicited != w.sol || wc.ByteLen != w.n {
			t.Fatalf("receive %d: %+v, want %+v", i, wc, w)
		}
		if i == 2 {
			mustEqual(t, "Write with Immediate data", dbuf[:1500], sbuf[:1500])
		}
	}
	mustEqual(t, "Send with Immediate data", dbuf[2048+64*3:2048+64*3+50], sbuf[:50])
	if !bytes.Equal(dbuf[2048:2048+64*3], make([]byte, 64*3)) {
		t.Fatal("Immediate Data placed octets into a receive buffer")
	}
}

// Without QPAttr.RFC7306 the extensions cannot be posted.
func TestRFC7306NeedsOption(t *testing.T) {
	s := newSide(t, QPAttr{})
	mr, _ := s.reg(t, 8, AccessLocalWrite)
	for _, op := range []Opcode{OpImmData, OpImmDataSE, OpWriteImm, OpSendImm, OpAtomicFetchAdd, OpAtomicCmpSwap} {
		if _, err := s.qp.PostSend(SendWR{Opcode: op, SGL: []SGE{mr.SGE(0, 8)}}); !errors.Is(err, ErrInvalidWR) {
			t.Fatalf("%v without the option: %v", op, err)
		}
	}
	s2 := newSide(t, QPAttr{RFC7306: true})
	mr2, _ := s2.reg(t, 16, AccessLocalWrite)
	for _, wr := range []SendWR{
		{Opcode: OpAtomicFetchAdd, SGL: []SGE{mr2.SGE(0, 16)}},
		{Opcode: OpAtomicCmpSwap},
		{Opcode: OpImmData, SGL: []SGE{mr2.SGE(0, 8)}},
	} {
		if _, err := s2.qp.PostSend(wr); !errors.Is(err, ErrInvalidWR) {
			t.Fatalf("%v with SGL %v: %v", wr.Opcode, wr.SGL, err)
		}
	}
	if _, err := s.pd.RegisterMR(make([]byte, 8), AccessLocalRead|AccessRemoteAtomic, nil); !errors.Is(err, ErrInvalidAccess) {
		t.Fatalf("Remote Atomic without Local Write: %v", err)
	}
}

// A requester with RFC 7306 against an endpoint without it: the peer
// answers with Unexpected OpCode, as Linux siw does (RFC 7306 §1.1), and
// the atomic completes with Remote Termination.
func TestAtomicPeerWithoutRFC7306(t *testing.T) {
	for _, op := range []Opcode{OpAtomicFetchAdd, OpImmData, OpWriteImm} {
		t.Run(op.String(), func(t *testing.T) {
			cl, sv := newSide(t, QPAttr{RFC7306: true}), newSide(t, QPAttr{})
			tgt, buf := sv.reg(t, 64, AccessAll|AccessRemoteAtomic)
			fillRand(buf, 3)
			saved := bytes.Clone(buf)
			res, _ := cl.reg(t, 64, AccessLocalWrite|AccessLocalRead)
			link(t, cl, sv)
			wr := SendWR{WRID: 5, Opcode: op, Signaled: true, SGL: []SGE{res.SGE(0, 8)}, RKey: tgt.STag(), RemoteAddr: tgt.Addr(), Atomic: FetchAdd(1)}
			switch op {
			case OpImmData:
				wr.SGL = nil
			case OpWriteImm:
				wr.SGL = nil // the Write is placed; its Immediate Data is refused
			}
			if _, err := cl.qp.PostSend(wr); err != nil {
				t.Fatal(err)
			}
			wc := cl.wait(t)
			waitDone(t, cl.qp, StateError)
			ti := cl.qp.Terminate()
			if ti == nil || ti.Local || ti.Cause.Layer != 0 || ti.Cause.EType != 2 || ti.Cause.Code != 0x06 {
				t.Fatalf("requester's Terminate %+v", ti)
			}
			if op.isAtomic() && wc.Status != StatusRemoteTermination {
				t.Fatalf("atomic completion %+v", wc)
			}
			waitDone(t, sv.qp, StateError)
			if !bytes.Equal(buf, saved) {
				t.Fatal("target changed")
			}
		})
	}
}

// aenv is the Responder's memory in the RFC 7306 receiver-check tests.
type aenv struct {
	atom, noAtomic, other, inv, scoped *MR
	all                                []*MR
	saved                              [][]byte
}

func (e *aenv) prep(recvs int) func(*side) {
	return func(sv *side) {
		reg := func(pd *PD, acc Access, opt *MROptions) *MR {
			mr, err := pd.RegisterMR(make([]byte, 4096), acc, opt)
			if err != nil {
				panic(err)
			}
			return mr
		}
		qp2, _ := sv.pd.CreateQP(QPAttr{SendCQ: sv.cq, RecvCQ: sv.cq})
		e.atom = reg(sv.pd, accAtomic, nil)
		e.noAtomic = reg(sv.pd, AccessAll, nil)
		e.other = reg(sv.dev.AllocPD(), accAtomic, nil)
		e.inv = reg(sv.pd, accAtomic, nil)
		e.scoped = reg(sv.pd, accAtomic, &MROptions{QP: qp2})
		e.all = []*MR{e.atom, e.noAtomic, e.other, e.inv, e.scoped}
		for i, mr := range e.all {
			fillRand(mr.Buf(), uint64(70+i))
			e.saved = append(e.saved, bytes.Clone(mr.Buf()))
		}
		e.inv.Invalidate()
		rb, _ := sv.pd.RegisterMR(make([]byte, 64*recvs), AccessLocalWrite, nil)
		for i := 0; i < recvs; i++ {
			sv.qp.PostRecv(RecvWR{WRID: uint64(100 + i), SGL: []SGE{rb.SGE(64*i, 64)}})
		}
	}
}

func atomicReq(msn uint32, a decode.AtomicRequest) *decode.Segment {
	s := untagged(decode.OpAtomicRequest, decode.QNReadReq, msn, 0, true, nil)
	s.AtomicRequest = a
	return s
}

func faReq(mr *MR, off uint64) decode.AtomicRequest {
	return decode.AtomicRequest{AOpCode: decode.AOpFetchAdd, RequestID: 1, RemoteSTag: uint32(mr.STag()), RemoteTO: mr.Addr() + off, AddSwapData: 1, CompareMask: ^uint64(0)}
}

// immSeg is an Immediate Data message of n octets (8 are valid).
func immSeg(op decode.Opcode, msn uint32, n int) *decode.Segment {
	return untagged(op, decode.QNSend, msn, 0, true, make([]byte, n-8))
}

// Every RFC 7306 error a peer can cause gets its Terminate (RFC 7306 §8,
// RFC 5040 §4.8) with the DDP header and no RDMA header (§8.1 rule 2), and
// no atomic touches memory outside a valid STag's bounds, rights and
// lifetime: the victim's memory is unchanged byte for byte.
func TestAtomicReceiverChecks(t *testing.T) {
	fa := func(get func(e *aenv) *MR, off uint64) func(r *raw, e *aenv) {
		return func(r *raw, e *aenv) { r.send(atomicReq(1, faReq(get(e), off))) }
	}
	cases := []struct {
		name               string
		off                bool // the QP without RFC 7306
		recvs              int
		send               func(r *raw, e *aenv)
		layer, etype, code uint8
		rq                 Status
	}{
		{name: "unknown STag", send: func(r *raw, e *aenv) {
			a := faReq(e.atom, 0)
			a.RemoteSTag = 0x7777701
			r.send(atomicReq(1, a))
		}, layer: 0, etype: 1, code: 0x00},
		{name: "invalidated STag", send: fa(func(e *aenv) *MR { return e.inv }, 0), layer: 0, etype: 1, code: 0x00},
		{name: "out of bounds", send: fa(func(e *aenv) *MR { return e.atom }, 4096), layer: 0, etype: 1, code: 0x01},
		{name: "straddles the end", send: fa(func(e *aenv) *MR { return e.atom }, 4092), layer: 0, etype: 1, code: 0x01},
		{name: "below the base", send: func(r *raw, e *aenv) {
			a := faReq(e.atom, 0)
			a.RemoteTO -= 8
			r.send(atomicReq(1, a))
		}, layer: 0, etype: 1, code: 0x01},
		{name: "without Remote Atomic", send: fa(func(e *aenv) *MR { return e.noAtomic }, 0), layer: 0, etype: 1, code: 0x02},
		{name: "another PD's region", send: fa(func(e *aenv) *MR { return e.other }, 0), layer: 0, etype: 1, code: 0x03},
		{name: "another QP's region", send: fa(func(e *aenv) *MR { return e.scoped }, 0), layer: 0, etype: 1, code: 0x03},
		{name: "TO wraps", send: func(r *raw, e *aenv) {
			a := faReq(e.atom, 0)
			a.RemoteTO = ^uint64(0) - 3
			r.send(atomicReq(1, a))
		}, layer: 0, etype: 1, code: 0x04},
		{name: "misaligned", send: fa(func(e *aenv) *MR { return e.atom }, 4), layer: 0, etype: 2, code: 0x07},
		{name: "misaligned CmpSwap", send: func(r *raw, e *aenv) {
			a := faReq(e.atom, 1)
			a.AOpCode, a.AddSwapMask = decode.AOpCmpSwap, ^uint64(0)
			r.send(atomicReq(1, a))
		}, layer: 0, etype: 2, code: 0x07},
		{name: "reserved AOpCode", send: func(r *raw, e *aenv) {
			a := faReq(e.atom, 0)
			a.AOpCode = 1
			r.send(atomicReq(1, a))
		}, layer: 0, etype: 2, code: 0x06},
		{name: "Atomic Request MSN", send: func(r *raw, e *aenv) { r.send(atomicReq(2, faReq(e.atom, 0))) }, layer: 1, etype: 2, code: 0x03},
		{name: "Atomic Request too long", send: func(r *raw, e *aenv) {
			s := atomicReq(1, faReq(e.atom, 0))
			s.Payload = make([]byte, 8)
			r.send(s)
		}, layer: 0, etype: 2, code: 0x06},
		{name: "Atomic Request on QN 0", recvs: 1, send: func(r *raw, e *aenv) {
			s := atomicReq(1, faReq(e.atom, 0))
			s.DDP.QN = 0
			r.send(s)
		}, layer: 0, etype: 2, code: 0x06},
		{name: "Atomic Response with none outstanding", send: func(r *raw, e *aenv) {
			s := untagged(decode.OpAtomicResponse, decode.QNAtomicResp, 1, 0, true, nil)
			r.send(s)
		}, layer: 0, etype: 2, code: 0x06},
		{name: "Immediate Data without a receive", send: func(r *raw, e *aenv) { r.send(immSeg(decode.OpImmData, 1, 8)) }, layer: 1, etype: 2, code: 0x02},
		{name: "Immediate Data of 12 octets", recvs: 1, send: func(r *raw, e *aenv) { r.send(immSeg(decode.OpImmData, 1, 12)) }, layer: 0, etype: 2, code: 0x06, rq: StatusLocalLength},
		// A QP without the option answers every extension as siw does.
		{name: "no RFC 7306: Atomic Request", off: true, send: fa(func(e *aenv) *MR { return e.atom }, 0), layer: 0, etype: 2, code: 0x06},
		{name: "no RFC 7306: Atomic Response", off: true, send: func(r *raw, e *aenv) {
			r.send(untagged(decode.OpAtomicResponse, decode.QNAtomicResp, 1, 0, true, make([]byte, 12)))
		}, layer: 0, etype: 2, code: 0x06},
		{name: "no RFC 7306: Immediate Data", off: true, recvs: 1, send: func(r *raw, e *aenv) { r.send(immSeg(decode.OpImmData, 1, 8)) }, layer: 0, etype: 2, code: 0x06},
		{name: "no RFC 7306: Immediate Data with SE, no receive", off: true, send: func(r *raw, e *aenv) { r.send(immSeg(decode.OpImmDataSE, 1, 8)) }, layer: 0, etype: 2, code: 0x06},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var e aenv
			r, sv, _ := rawClient(t, Config{}, v2Req(false, false), QPAttr{RFC7306: !tc.off}, e.prep(tc.recvs))
			tc.send(r, &e)
			term := r.expectTerminate(tc.layer, tc.etype, tc.code)
			if !term.M || !term.D || term.R || !term.HasDDP || term.HasRDMA {
				t.Fatalf("Terminate headers M=%v D=%v R=%v: want the DDP header only (RFC 7306 §8.1)", term.M, term.D, term.R)
			}
			r.c.Close()
			waitDone(t, sv.qp, StateError)
			for i, mr := range e.all {
				if !bytes.Equal(mr.Buf(), e.saved[i]) {
					t.Fatalf("region %d changed", i)
				}
			}
			for i := 0; i < tc.recvs; i++ {
				want := StatusFlushed
				if i == 0 && tc.rq != StatusSuccess {
					want = tc.rq
				}
				if wc := sv.wait(t); wc.Status != want || wc.WithImm {
					t.Fatalf("receive %d: %+v, want %v", i, wc, want)
				}
			}
		})
	}
}

// The wire form against a hand-built peer: an Atomic Request is answered on
// QN 3 with MSN 1, the request's identifier and the original value; the
// endpoint's own Atomic Request rides QN 1 and completes when a response
// with its identifier arrives; one with another identifier is an error.
func TestAtomicWire(t *testing.T) {
	var e aenv
	r, sv, _ := rawClient(t, Config{}, v2Req(false, false), QPAttr{RFC7306: true}, e.prep(0))
	slot := ne.Uint64(e.saved[0][16:])
	a := faReq(e.atom, 16)
	a.RequestID, a.AddSwapData = 0xABCD, 10
	r.send(atomicReq(1, a))
	r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	s, _, err := r.readFPDU()
	if err != nil || s.RDMAP.Opcode != decode.OpAtomicResponse || s.DDP.Tagged || s.DDP.QN != 3 || s.DDP.MSN != 1 || !s.DDP.Last {
		t.Fatalf("Atomic Response %+v: %v", s.DDP, err)
	}
	if s.AtomicResponse.OrigRequestID != 0xABCD || s.AtomicResponse.OrigValue != slot {
		t.Fatalf("Atomic Response %+v, want id 0xABCD value %#x", s.AtomicResponse, slot)
	}
	e.atom.Sync()
	if got := ne.Uint64(e.atom.Buf()[16:]); got != slot+10 {
		t.Fatalf("target %#x, want %#x", got, slot+10)
	}

	// The endpoint as requester.
	res, _ := sv.reg(t, 16, AccessLocalWrite)
	post := func(id uint64) {
		sv.qp.PostSend(SendWR{WRID: id, Opcode: OpAtomicCmpSwap, Signaled: true, SGL: []SGE{res.SGE(0, 8)}, RKey: 0x1234, RemoteAddr: 0x8000, Atomic: CmpSwap(1, 2)})
	}
	post(1)
	s, _, err = r.readFPDU()
	q := s.AtomicRequest
	if err != nil || s.RDMAP.Opcode != decode.OpAtomicRequest || s.DDP.QN != 1 || s.DDP.MSN != 1 || q.AOpCode != decode.AOpCmpSwap ||
		q.RemoteSTag != 0x1234 || q.RemoteTO != 0x8000 || q.AddSwapData != 2 || q.CompareData != 1 || q.CompareMask != ^uint64(0) || q.AddSwapMask != ^uint64(0) {
		t.Fatalf("Atomic Request %+v %+v: %v", s.DDP, q, err)
	}
	resp := untagged(decode.OpAtomicResponse, decode.QNAtomicResp, 1, 0, true, nil)
	resp.AtomicResponse = decode.AtomicResponse{OrigRequestID: q.RequestID, OrigValue: 0x5555}
	r.send(resp)
	if wc := sv.waitOK(t, OpAtomicCmpSwap); wc.WRID != 1 || ne.Uint64(res.Buf()) != 0x5555 {
		t.Fatalf("completion %+v, result %#x", wc, ne.Uint64(res.Buf()))
	}
	post(2)
	s, _, _ = r.readFPDU()
	resp.DDP.MSN = 2
	resp.AtomicResponse.OrigRequestID = s.AtomicRequest.RequestID + 1
	r.send(resp)
	r.expectTerminate(0, 2, 0x07)
	r.c.Close()
	waitDone(t, sv.qp, StateError)
	if wc := sv.wait(t); wc.WRID != 2 || wc.Status == StatusSuccess {
		t.Fatalf("completion %+v after a wrong response", wc)
	}
}

// An atomic against a region invalidated after the request was accepted
// but before it was performed does nothing (RFC 5042 §6.2.2): the
// invalidation waits for an atomic in flight, one after it fails.
func TestAtomicAfterInvalidate(t *testing.T) {
	cl, sv, tgt, res := atomicSides(t, []uint64{7})
	cl.qp.PostSend(SendWR{WRID: 1, Opcode: OpAtomicFetchAdd, Signaled: true, SGL: []SGE{res.SGE(0, 8)}, RKey: tgt.STag(), RemoteAddr: tgt.Addr(), Atomic: FetchAdd(1)})
	cl.waitOK(t, OpAtomicFetchAdd)
	tgt.Invalidate()
	cl.qp.PostSend(SendWR{WRID: 2, Opcode: OpAtomicFetchAdd, Signaled: true, SGL: []SGE{res.SGE(8, 8)}, RKey: tgt.STag(), RemoteAddr: tgt.Addr(), Atomic: FetchAdd(1)})
	if wc := cl.wait(t); wc.Status != StatusRemoteTermination {
		t.Fatalf("atomic on an invalidated STag: %+v", wc)
	}
	waitDone(t, sv.qp, StateError)
	if ti := sv.qp.Terminate(); ti == nil || ti.Cause.Layer != 0 || ti.Cause.EType != 1 || ti.Cause.Code != 0 {
		t.Fatalf("Terminate %+v", ti)
	}
	if got := ne.Uint64(tgt.Buf()); got != 8 {
		t.Fatalf("target %d, want 8", got)
	}
}

// BenchmarkAtomic: FetchAdds and CmpSwaps (ORD 16 outstanding) beside RDMA
// Writes of 8 octets, one QP over loopback, CRC on, one completion in 16.
func BenchmarkAtomic(b *testing.B) {
	for _, op := range []Opcode{OpAtomicFetchAdd, OpAtomicCmpSwap, OpWrite} {
		b.Run(op.String(), func(b *testing.B) {
			cl, _, tgt, res := atomicSides(b, make([]uint64, 64))
			const depth, mod = 64, 16
			posted, done := 0, 0
			b.ResetTimer()
			for done < b.N {
				for posted < b.N && posted-done < depth {
					wr := SendWR{WRID: uint64(posted), Opcode: op, Signaled: posted%mod == mod-1 || posted == b.N-1,
						SGL: []SGE{res.SGE(8*(posted%64), 8)}, RKey: tgt.STag(), RemoteAddr: tgt.Addr() + uint64(8*(posted%64)), Atomic: FetchAdd(1)}
					if op == OpAtomicCmpSwap {
						wr.Atomic = CmpSwap(0, 0)
					}
					if _, err := cl.qp.PostSend(wr); err != nil {
						b.Fatal(err)
					}
					posted++
				}
				done = int(cl.waitOK(b, op).WRID) + 1
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}

// Atomic Requests share IRD with RDMA Read Requests (RFC 7306 §5.2): with
// IRD 1 and a long Read being answered, an atomic is one too many.
func TestAtomicIRDShared(t *testing.T) {
	var e aenv
	exceedIRD(t, QPAttr{IRD: 1, RFC7306: true}, e.prep(0), func(*MR) *decode.Segment {
		return atomicReq(2, faReq(e.atom, 0))
	})
	if !bytes.Equal(e.atom.Buf(), e.saved[0]) {
		t.Fatal("target changed")
	}
}
