package endpoint

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
)

// env is the Responder's memory in a receiver-check test.
type env struct {
	rw    *MR // all rights, 4096 octets, VA-based
	noRW  *MR // no Remote Write
	noRR  *MR // no Remote Read
	other *MR // all rights, another PD of the same device
	inv   *MR // invalidated
	zb    *MR // zero-based, all rights
	local *MR // local rights only
}

func stdPrep(e *env, recvs int) func(*side) {
	return func(sv *side) {
		reg := func(acc Access, opt *MROptions) *MR {
			mr, err := sv.pd.RegisterMR(make([]byte, 4096), acc, opt)
			if err != nil {
				panic(err)
			}
			return mr
		}
		e.rw = reg(AccessAll, nil)
		e.noRW = reg(AccessLocalRead|AccessLocalWrite|AccessRemoteRead, nil)
		e.noRR = reg(AccessLocalRead|AccessLocalWrite|AccessRemoteWrite, nil)
		e.inv = reg(AccessAll, nil)
		e.inv.Invalidate()
		e.zb = reg(AccessAll, &MROptions{ZeroBased: true})
		e.local = reg(AccessLocalRead|AccessLocalWrite, nil)
		o, err := sv.dev.AllocPD().RegisterMR(make([]byte, 4096), AccessAll, nil)
		if err != nil {
			panic(err)
		}
		e.other = o
		rb, _ := sv.pd.RegisterMR(make([]byte, 64*recvs), AccessLocalWrite, nil)
		for i := 0; i < recvs; i++ {
			sv.qp.PostRecv(RecvWR{WRID: uint64(100 + i), SGL: []SGE{rb.SGE(64*i, 64)}})
		}
	}
}

type checkCase struct {
	name               string
	recvs              int
	cfg                Config
	crc                bool
	attr               QPAttr
	send               func(r *raw, e *env)
	layer, etype, code uint8
	ddp, rdma          bool   // copied headers expected in the Terminate
	rqStatus           Status // status of the first receive WR, when it fails with the error
}

func wr(e *MR, off int, n int) *decode.Segment {
	return tagged(decode.OpWrite, uint32(e.STag()), e.Addr()+uint64(off), true, make([]byte, n))
}

var checkCases = []checkCase{
	// MPA
	{name: "MPA-16 CRC error", crc: true, send: func(r *raw, e *env) {
		b := decode.AppendFPDU(nil, untagged(decode.OpSend, 0, 1, 0, true, []byte("hello")).Append(nil), true)
		b[len(b)-1] ^= 0xFF
		r.write(b)
	}, layer: 2, etype: 0, code: 0x02},
	{name: "MPA-16 CRC error on a header that is bad too", crc: true, send: func(r *raw, e *env) {
		b := decode.AppendFPDU(nil, untagged(decode.OpSend, 9, 1, 0, true, nil).Append(nil), true)
		b[len(b)-1] ^= 0xFF
		r.write(b)
	}, layer: 2, etype: 0, code: 0x02},
	{name: "MPA-21 ULPDU_Length below a DDP header", send: func(r *raw, e *env) {
		r.sendULPDU(make([]byte, 10))
	}, layer: 1, etype: 0, code: 0x00},
	{name: "MPA-21 untagged header cut short", send: func(r *raw, e *env) {
		r.sendULPDU([]byte{0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0})
	}, layer: 1, etype: 0, code: 0x00},
	// DDP
	{name: "DDP-01 tagged DV 0", send: func(r *raw, e *env) {
		s := wr(e.rw, 0, 8)
		s.DDP.DV = 0
		r.send(s)
	}, layer: 1, etype: 1, code: 0x04, ddp: true},
	{name: "DDP-01 untagged DV 2", recvs: 1, send: func(r *raw, e *env) {
		s := untagged(decode.OpSend, 0, 1, 0, true, []byte("x"))
		s.DDP.DV = 2
		r.send(s)
	}, layer: 1, etype: 2, code: 0x06, ddp: true},
	{name: "DDP-03 invalid QN", send: func(r *raw, e *env) {
		r.send(untagged(decode.OpSend, 5, 1, 0, true, nil))
	}, layer: 1, etype: 2, code: 0x01, ddp: true},
	{name: "DDP-03 inbound RDMA Read disabled", attr: QPAttr{DisableRemoteRead: true}, send: func(r *raw, e *env) {
		r.send(readReq(1, decode.ReadRequest{SinkSTag: 5, Size: 8, SrcSTag: uint32(e.rw.STag()), SrcTO: e.rw.Addr()}))
	}, layer: 1, etype: 2, code: 0x01, ddp: true},
	{name: "DDP-04 no receive buffer", send: func(r *raw, e *env) {
		r.send(untagged(decode.OpSend, 0, 1, 0, true, []byte("hi")))
	}, layer: 1, etype: 2, code: 0x02, ddp: true},
	{name: "DDP-05 MSN out of range", recvs: 2, send: func(r *raw, e *env) {
		r.send(untagged(decode.OpSend, 0, 7, 0, true, []byte("hi")))
	}, layer: 1, etype: 2, code: 0x03, ddp: true},
	{name: "DDP-05 Read Request MSN", send: func(r *raw, e *env) {
		r.send(readReq(3, decode.ReadRequest{SinkSTag: 5, Size: 8, SrcSTag: uint32(e.rw.STag()), SrcTO: e.rw.Addr()}))
	}, layer: 1, etype: 2, code: 0x03, ddp: true},
	{name: "DDP-06 MO beyond the buffer", recvs: 1, send: func(r *raw, e *env) {
		r.send(untagged(decode.OpSend, 0, 1, 100, true, []byte("hi")))
	}, layer: 1, etype: 2, code: 0x04, ddp: true, rqStatus: StatusLocalLength},
	{name: "DDP-07 RD-16 Send longer than the buffer", recvs: 1, send: func(r *raw, e *env) {
		r.send(untagged(decode.OpSend, 0, 1, 0, true, make([]byte, 65)))
	}, layer: 1, etype: 2, code: 0x05, ddp: true, rqStatus: StatusLocalLength},
	{name: "DDP-07 second segment overflows", recvs: 1, send: func(r *raw, e *env) {
		r.send(untagged(decode.OpSend, 0, 1, 0, false, make([]byte, 40)))
		r.send(untagged(decode.OpSend, 0, 1, 40, true, make([]byte, 40)))
	}, layer: 1, etype: 2, code: 0x05, ddp: true, rqStatus: StatusLocalLength},
	{name: "DDP-08 unknown STag", send: func(r *raw, e *env) {
		r.send(tagged(decode.OpWrite, 0x7777700, e.rw.Addr(), true, make([]byte, 8)))
	}, layer: 1, etype: 1, code: 0x00, ddp: true},
	{name: "DDP-08 STag 0", send: func(r *raw, e *env) {
		r.send(tagged(decode.OpWrite, 0, 0, true, make([]byte, 8)))
	}, layer: 1, etype: 1, code: 0x00, ddp: true},
	{name: "DDP-08 wrong key", send: func(r *raw, e *env) {
		s := wr(e.rw, 0, 8)
		s.DDP.STag ^= 0x01
		r.send(s)
	}, layer: 1, etype: 1, code: 0x00, ddp: true},
	{name: "DDP-08 invalidated STag", send: func(r *raw, e *env) {
		r.send(wr(e.inv, 0, 8))
	}, layer: 1, etype: 1, code: 0x00, ddp: true},
	{name: "DDP-09 STag of another PD", send: func(r *raw, e *env) {
		r.send(wr(e.other, 0, 8))
	}, layer: 1, etype: 1, code: 0x02, ddp: true},
	{name: "DDP-10 beyond the bound", send: func(r *raw, e *env) {
		r.send(wr(e.rw, 4090, 8))
	}, layer: 1, etype: 1, code: 0x01, ddp: true},
	{name: "DDP-10 below the base", send: func(r *raw, e *env) {
		r.send(wr(e.rw, -1, 8))
	}, layer: 1, etype: 1, code: 0x01, ddp: true},
	{name: "DDP-10 zero-based region, VA used", send: func(r *raw, e *env) {
		r.send(tagged(decode.OpWrite, uint32(e.zb.STag()), 4096, true, make([]byte, 1)))
	}, layer: 1, etype: 1, code: 0x01, ddp: true},
	{name: "DDP-11 TO wraps", send: func(r *raw, e *env) {
		r.send(tagged(decode.OpWrite, uint32(e.rw.STag()), ^uint64(0)-3, true, make([]byte, 8)))
	}, layer: 1, etype: 1, code: 0x03, ddp: true},
	{name: "DDP-12 Write without Remote Write", send: func(r *raw, e *env) {
		r.send(wr(e.noRW, 0, 8))
	}, layer: 1, etype: 1, code: 0x02, ddp: true},
	{name: "DDP-12 inbound Write disabled", attr: QPAttr{DisableRemoteWrite: true}, send: func(r *raw, e *env) {
		r.send(wr(e.rw, 0, 8))
	}, layer: 1, etype: 1, code: 0x02, ddp: true},
	{name: "DDP-15 new MSN before the L segment", recvs: 2, send: func(r *raw, e *env) {
		r.send(untagged(decode.OpSend, 0, 1, 0, false, make([]byte, 8)))
		r.send(untagged(decode.OpSend, 0, 2, 0, true, make([]byte, 8)))
	}, layer: 0, etype: 2, code: 0x07, ddp: true},
	// RDMAP
	{name: "RD-01 RDMAP version 0", recvs: 1, send: func(r *raw, e *env) {
		s := untagged(decode.OpSend, 0, 1, 0, true, []byte("x"))
		s.RDMAP.RV = 0
		r.send(s)
	}, layer: 0, etype: 2, code: 0x05, ddp: true},
	{name: "RD-02 unassigned opcode", recvs: 1, send: func(r *raw, e *env) {
		r.send(untagged(0xC, 0, 1, 0, true, nil))
	}, layer: 0, etype: 2, code: 0x06, ddp: true},
	{name: "RD-02 RFC 7306 Immediate Data unsupported", recvs: 1, send: func(r *raw, e *env) {
		r.send(untagged(decode.OpImmData, 0, 1, 0, true, nil))
	}, layer: 0, etype: 2, code: 0x06, ddp: true},
	{name: "RD-03 Send in a tagged segment", send: func(r *raw, e *env) {
		r.send(tagged(decode.OpSend, uint32(e.rw.STag()), e.rw.Addr(), true, make([]byte, 4)))
	}, layer: 0, etype: 2, code: 0x06, ddp: true},
	{name: "RD-03 Read Request on QN 0", recvs: 1, send: func(r *raw, e *env) {
		r.send(untagged(decode.OpReadRequest, 0, 1, 0, true, make([]byte, 28)))
	}, layer: 0, etype: 2, code: 0x06, ddp: true},
	{name: "RD-03 Send on QN 1", send: func(r *raw, e *env) {
		r.send(untagged(decode.OpSend, 1, 1, 0, true, make([]byte, 28)))
	}, layer: 0, etype: 2, code: 0x06, ddp: true},
	{name: "RD-05 Read Request with MO", send: func(r *raw, e *env) {
		s := readReq(1, decode.ReadRequest{SinkSTag: 5, Size: 8, SrcSTag: uint32(e.rw.STag()), SrcTO: e.rw.Addr()})
		s.DDP.MO = 4
		r.send(s)
	}, layer: 1, etype: 2, code: 0x04, ddp: true},
	{name: "RD-05 Read Request with trailing octets", send: func(r *raw, e *env) {
		s := readReq(1, decode.ReadRequest{SinkSTag: 5, Size: 8, SrcSTag: uint32(e.rw.STag()), SrcTO: e.rw.Addr()})
		s.Payload = []byte{1, 2, 3, 4}
		r.send(s)
	}, layer: 0, etype: 2, code: 0x06, ddp: true},
	{name: "RD-06 Send with Invalidate of an unknown STag", recvs: 1, send: func(r *raw, e *env) {
		s := untagged(decode.OpSendInv, 0, 1, 0, true, []byte("x"))
		s.InvalidateSTag = 0x7777700
		r.send(s)
	}, layer: 0, etype: 1, code: 0x09, ddp: true, rqStatus: StatusInvalidateError},
	{name: "RD-07 Send with Invalidate of another PD's STag", recvs: 1, send: func(r *raw, e *env) {
		s := untagged(decode.OpSendSEInv, 0, 1, 0, true, []byte("x"))
		s.InvalidateSTag = uint32(e.other.STag())
		r.send(s)
	}, layer: 0, etype: 1, code: 0x09, ddp: true, rqStatus: StatusInvalidateError},
	{name: "RD-07 Send with Invalidate of a local-only STag", recvs: 1, send: func(r *raw, e *env) {
		s := untagged(decode.OpSendInv, 0, 1, 0, true, []byte("x"))
		s.InvalidateSTag = uint32(e.local.STag())
		r.send(s)
	}, layer: 0, etype: 1, code: 0x09, ddp: true, rqStatus: StatusInvalidateError},
	{name: "RD-07 Send with Invalidate of STag 0", recvs: 1, send: func(r *raw, e *env) {
		r.send(untagged(decode.OpSendInv, 0, 1, 0, true, []byte("x")))
	}, layer: 0, etype: 1, code: 0x09, ddp: true, rqStatus: StatusInvalidateError},
	{name: "RD-08 Read Request of an unknown STag", send: func(r *raw, e *env) {
		r.send(readReq(1, decode.ReadRequest{SinkSTag: 5, Size: 8, SrcSTag: 0x7777700, SrcTO: e.rw.Addr()}))
	}, layer: 0, etype: 1, code: 0x00, ddp: true, rdma: true},
	{name: "RD-08 Read Request of an invalidated STag", send: func(r *raw, e *env) {
		r.send(readReq(1, decode.ReadRequest{SinkSTag: 5, Size: 8, SrcSTag: uint32(e.inv.STag()), SrcTO: e.inv.Addr()}))
	}, layer: 0, etype: 1, code: 0x00, ddp: true, rdma: true},
	{name: "RD-09 Read Request of another PD's STag", send: func(r *raw, e *env) {
		r.send(readReq(1, decode.ReadRequest{SinkSTag: 5, Size: 8, SrcSTag: uint32(e.other.STag()), SrcTO: e.other.Addr()}))
	}, layer: 0, etype: 1, code: 0x03, ddp: true, rdma: true},
	{name: "RD-10 Read Request beyond the bound", send: func(r *raw, e *env) {
		r.send(readReq(1, decode.ReadRequest{SinkSTag: 5, Size: 4097, SrcSTag: uint32(e.rw.STag()), SrcTO: e.rw.Addr()}))
	}, layer: 0, etype: 1, code: 0x01, ddp: true, rdma: true},
	{name: "RD-11 Read Request TO wraps", send: func(r *raw, e *env) {
		r.send(readReq(1, decode.ReadRequest{SinkSTag: 5, Size: 16, SrcSTag: uint32(e.rw.STag()), SrcTO: ^uint64(0) - 7}))
	}, layer: 0, etype: 1, code: 0x04, ddp: true, rdma: true},
	{name: "RD-12 Read Request without Remote Read", send: func(r *raw, e *env) {
		r.send(readReq(1, decode.ReadRequest{SinkSTag: 5, Size: 8, SrcSTag: uint32(e.noRR.STag()), SrcTO: e.noRR.Addr()}))
	}, layer: 0, etype: 1, code: 0x02, ddp: true, rdma: true},
	{name: "RD-15 Read Response with no Read outstanding", send: func(r *raw, e *env) {
		r.send(tagged(decode.OpReadResponse, uint32(e.rw.STag()), e.rw.Addr(), true, make([]byte, 8)))
	}, layer: 0, etype: 2, code: 0x06, ddp: true},
}

func TestReceiverChecks(t *testing.T) {
	for _, tc := range checkCases {
		t.Run(tc.name, func(t *testing.T) {
			var e env
			r, sv, _ := rawClient(t, tc.cfg, v2Req(false, tc.crc), tc.attr, stdPrep(&e, tc.recvs))
			tc.send(r, &e)
			term := r.expectTerminate(tc.layer, tc.etype, tc.code)
			if term.HasDDP != tc.ddp || term.HasRDMA != tc.rdma || term.D != tc.ddp || term.M != tc.ddp || term.R != tc.rdma {
				t.Fatalf("Terminate headers: M=%v D=%v R=%v ddp=%v rdma=%v, want ddp=%v rdma=%v", term.M, term.D, term.R, term.HasDDP, term.HasRDMA, tc.ddp, tc.rdma)
			}
			if tc.rdma && term.TermRDMA.Size == 0 && term.TermRDMA.SrcSTag == 0 {
				t.Fatalf("copied Read Request header is empty: %+v", term.TermRDMA)
			}
			// The endpoint closes after its Terminate; so do we.
			r.c.Close()
			waitDone(t, sv.qp, StateError)
			ti := sv.qp.Terminate()
			if ti == nil || !ti.Local || ti.Cause.Layer != tc.layer || ti.Cause.EType != tc.etype || ti.Cause.Code != tc.code {
				t.Fatalf("QP Terminate info %+v", ti)
			}
			var te *TerminateError
			if err := sv.qp.Err(); err == nil || !errorsAs(err, &te) {
				t.Fatalf("QP error %v", err)
			}
			// Every receive completes: the failing one with its status, the
			// rest flushed.
			for i := 0; i < tc.recvs; i++ {
				wc := sv.wait(t)
				want := StatusFlushed
				if i == 0 && tc.rqStatus != StatusSuccess {
					want = tc.rqStatus
				}
				if wc.Opcode != OpRecv || wc.Status != want {
					t.Fatalf("receive %d: %v %v, want %v", i, wc.Opcode, wc.Status, want)
				}
			}
		})
	}
}

// Placement checks never let a peer touch memory outside what an STag
// names: after the faulty Writes above, the regions stay zero.
func TestNoPlacementOutsideBounds(t *testing.T) {
	var e env
	r, sv, _ := rawClient(t, Config{}, v2Req(false, false), QPAttr{}, stdPrep(&e, 0))
	r.send(wr(e.rw, 4090, 8)) // crosses the bound: nothing may be placed
	r.expectTerminate(1, 1, 0x01)
	r.c.Close()
	waitDone(t, sv.qp, StateError)
	if !bytes.Equal(e.rw.Buf(), make([]byte, 4096)) {
		t.Fatal("octets placed by an out-of-bounds Write")
	}
}

// DDP-13 / RD-13: zero-length tagged segments and zero-size Reads are not
// validated; the connection goes on.
func TestZeroLengthNotChecked(t *testing.T) {
	var e env
	r, sv, _ := rawClient(t, Config{}, v2Req(false, true), QPAttr{}, stdPrep(&e, 1))
	r.send(tagged(decode.OpWrite, 0, 0xFFFFFFFFFFFFFFFF, true, nil)) // STag 0, wrapping TO: unchecked
	r.send(readReq(1, decode.ReadRequest{SinkSTag: 0x1234500, SinkTO: 77, Size: 0, SrcSTag: 0xdead00, SrcTO: 1}))
	s, _, err := r.readFPDU()
	if err != nil || s.RDMAP.Opcode != decode.OpReadResponse || len(s.Payload) != 0 || s.DDP.STag != 0x1234500 || s.DDP.TO != 77 || !s.DDP.Last {
		t.Fatalf("zero-length Read Response: %+v %v", s.DDP, err)
	}
	r.send(untagged(decode.OpSendSE, 0, 1, 0, true, []byte("after")))
	wc := sv.waitOK(t, OpRecv)
	if wc.ByteLen != 5 || !wc.Solicited {
		t.Fatalf("receive %+v", wc)
	}
	if sv.qp.State() != StateRTS {
		t.Fatalf("QP %v", sv.qp.State())
	}
}

// MPA-17: without negotiated CRC the field is not checked.
func TestCRCNotNegotiatedNotChecked(t *testing.T) {
	var e env
	r, sv, _ := rawClient(t, Config{}, v2Req(false, false), QPAttr{}, stdPrep(&e, 1))
	b := decode.AppendFPDU(nil, untagged(decode.OpSend, 0, 1, 0, true, []byte("x")).Append(nil), false)
	copy(b[len(b)-4:], []byte{1, 2, 3, 4})
	r.write(b)
	sv.waitOK(t, OpRecv)
}

// RD-14: more Read Requests than IRD.
func TestIRDExceeded(t *testing.T) {
	var e env
	exceedIRD(t, QPAttr{IRD: 1}, stdPrep(&e, 0), func(src *MR) *decode.Segment {
		return readReq(2, decode.ReadRequest{SinkSTag: 0x600, Size: 8, SrcSTag: uint32(src.STag()), SrcTO: src.Addr()})
	})
}

// exceedIRD connects a raw Initiator to a Responder with IRD 1 (attr; prep
// sets its QP up) and sends, in one write, a Read Request of 16 MiB, whose
// answer takes a while, and second: one request too many (RDMAP's Read
// queue, DDP queue 1, has one slot). The Responder must answer Terminate
// DDP/untagged/MSN out of range (0x1/0x2/0x03) blaming queue 1, MSN 2, and
// end in Error.
func exceedIRD(t *testing.T, attr QPAttr, prep func(*side), second func(src *MR) *decode.Segment) {
	t.Helper()
	big := make([]byte, 16<<20)
	var src *MR
	req := v2Req(false, false)
	req.V2.ORD = 1 // else the Responder raises its IRD to our ORD (RFC 6581 §9.1)
	r, sv, _ := rawClient(t, Config{}, req, attr, func(sv *side) {
		prep(sv)
		src, _ = sv.pd.RegisterMR(big, AccessAll, nil)
	})
	if ird, _ := sv.qp.IRDORD(); ird != 1 {
		t.Fatalf("IRD %d", ird)
	}
	a := readReq(1, decode.ReadRequest{SinkSTag: 0x500, Size: uint32(len(big)), SrcSTag: uint32(src.STag()), SrcTO: src.Addr()}).Append(nil)
	b := second(src).Append(nil)
	r.write(append(decode.AppendFPDU(nil, a, false), decode.AppendFPDU(nil, b, false)...))
	term := r.expectTerminate(1, 2, 0x03)
	if term.TermDDP.MSN != 2 || term.TermDDP.QN != 1 {
		t.Fatalf("Terminate blames %+v", term.TermDDP)
	}
	r.c.Close()
	waitDone(t, sv.qp, StateError)
}

// A received Terminate is surfaced with its cause, never answered, and the
// outstanding WR completes with Remote Termination.
func TestTerminateReceived(t *testing.T) {
	var e env
	r, sv, _ := rawClient(t, Config{}, v2Req(false, false), QPAttr{}, stdPrep(&e, 2))
	r.send(tagged(decode.OpWrite, 0, 0, true, nil)) // the Responder sends only after our first FPDU
	// An RDMA Read the peer will not answer.
	sv.qp.PostSend(SendWR{WRID: 9, Opcode: OpRead, Signaled: true, SGL: []SGE{e.rw.SGE(0, 8)}, RemoteAddr: 0x1000, RKey: 0x4400})
	r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	s, _, err := r.readFPDU()
	if err != nil || s.RDMAP.Opcode != decode.OpReadRequest {
		t.Fatalf("expected the Read Request: %v %v", s.RDMAP.Opcode, err)
	}
	tm := untagged(decode.OpTerminate, decode.QNTerminate, 1, 0, true, nil)
	tm.Terminate = decode.Terminate{Layer: 0, EType: 1, Code: 0x00, M: true, D: true, R: true, HasSegLen: true, HasDDP: true, HasRDMA: true,
		TermDDP: s.DDP, TermRDMA: s.ReadRequest}
	r.send(tm)
	r.expectNothing(300 * time.Millisecond) // never answered with a Terminate
	r.c.Close()
	waitDone(t, sv.qp, StateError)
	ti := sv.qp.Terminate()
	if ti == nil || ti.Local || ti.Cause.Layer != 0 || ti.Cause.EType != 1 || ti.Cause.Code != 0 || !ti.Header.HasRDMA || ti.Header.TermRDMA.SrcSTag != 0x4400 {
		t.Fatalf("terminate info %+v", ti)
	}
	if err := sv.qp.Err(); !errorsIs(err, ErrRemoteTerminate) {
		t.Fatalf("QP error %v", err)
	}
	wc := sv.wait(t)
	if wc.WRID != 9 || wc.Status != StatusRemoteTermination {
		t.Fatalf("read completion %+v", wc)
	}
	for i := 0; i < 2; i++ {
		if wc := sv.wait(t); wc.Status != StatusFlushed {
			t.Fatalf("receive %+v", wc)
		}
	}
}

// RD-23: FIN while an RDMA Read is outstanding ⇒ Terminate 0x0/0x2/0x07.
func TestBadLLPClose(t *testing.T) {
	var e env
	r, sv, _ := rawClient(t, Config{}, v2Req(false, false), QPAttr{}, stdPrep(&e, 0))
	r.send(tagged(decode.OpWrite, 0, 0, true, nil))
	sv.qp.PostSend(SendWR{WRID: 9, Opcode: OpRead, Signaled: true, SGL: []SGE{e.rw.SGE(0, 8)}, RemoteAddr: 0x1000, RKey: 0x4400})
	r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if s, _, err := r.readFPDU(); err != nil || s.RDMAP.Opcode != decode.OpReadRequest {
		t.Fatalf("expected the Read Request: %v", err)
	}
	r.c.(*netTCPConn).CloseWrite()
	r.expectTerminate(0, 2, 0x07)
	waitDone(t, sv.qp, StateError)
	if wc := sv.wait(t); wc.WRID != 9 || wc.Status == StatusSuccess {
		t.Fatalf("read completion %+v", wc)
	}
}

// A FIN with nothing outstanding is a normal close: RTS → Closing → Idle,
// receives flushed.
func TestNormalClose(t *testing.T) {
	var e env
	r, sv, _ := rawClient(t, Config{}, v2Req(false, false), QPAttr{}, stdPrep(&e, 1))
	r.c.Close()
	waitDone(t, sv.qp, StateIdle)
	if sv.qp.Err() != nil {
		t.Fatal(sv.qp.Err())
	}
	if wc := sv.wait(t); wc.Status != StatusFlushed {
		t.Fatalf("receive %+v", wc)
	}
	// Error → Idle and Idle → Idle are allowed; Idle → Closing is not.
	if err := sv.qp.Modify(StateClosing); err == nil {
		t.Fatal("Idle → Closing allowed")
	}
}

// Modify QP to Terminate sends a Local Catastrophic Terminate without headers.
func TestModifyTerminate(t *testing.T) {
	var e env
	r, sv, _ := rawClient(t, Config{}, v2Req(false, false), QPAttr{}, stdPrep(&e, 0))
	if err := sv.qp.Modify(StateTerminate); err != nil {
		t.Fatal(err)
	}
	term := r.expectTerminate(0, 0, 0)
	if term.HasDDP || term.HasRDMA || term.M || term.D || term.R {
		t.Fatalf("Local Catastrophic Terminate with headers: %+v", term)
	}
	r.c.Close()
	waitDone(t, sv.qp, StateError)
	if err := sv.qp.Modify(StateRTS); err == nil {
		t.Fatal("Error → RTS allowed")
	}
	if err := sv.qp.Modify(StateIdle); err != nil {
		t.Fatalf("Error → Idle: %v", err)
	}
}

// MPA-18: markers negotiated toward the endpoint (its Reply has M) must
// point at their FPDU; a wrong FPDUPTR is MPA error 3. A correct stream with
// markers is accepted.
func TestMarkerChecks(t *testing.T) {
	for _, bad := range []bool{false, true} {
		var e env
		r, sv, rep := rawClient(t, Config{Markers: true}, v2Req(false, false), QPAttr{}, func(sv *side) {
			stdPrep(&e, 1)(sv)
			big, _ := sv.reg(t, 2000, AccessAll)
			sv.qp.PostRecv(RecvWR{WRID: 7, SGL: []SGE{big.SGE(0, 2000)}})
		})
		if !rep.Markers {
			t.Fatal("Reply without M")
		}
		var b []byte
		pos := uint32(0)
		b, pos = decode.AppendFPDUWithMarkers(b, pos, 0, untagged(decode.OpSend, 0, 1, 0, true, make([]byte, 40)).Append(nil), false)
		start := len(b)
		b, _ = decode.AppendFPDUWithMarkers(b, pos, 0, untagged(decode.OpSend, 0, 2, 0, true, make([]byte, 1000)).Append(nil), false)
		if bad {
			// The first marker inside the second FPDU sits at stream offset 512.
			if start >= 512 || binary.BigEndian.Uint16(b[514:]) == 0 {
				t.Fatalf("test setup: second FPDU at %d", start)
			}
			b[515] ^= 0x10
		}
		r.write(b)
		if bad {
			r.expectTerminate(2, 0, 0x03)
			r.c.Close()
			waitDone(t, sv.qp, StateError)
			if sv.qp.Counters().MarkerErrors != 1 {
				t.Fatal("marker error not counted")
			}
		} else {
			sv.waitOK(t, OpRecv)
			if wc := sv.waitOK(t, OpRecv); wc.ByteLen != 1000 {
				t.Fatalf("%+v", wc)
			}
		}
	}
}
