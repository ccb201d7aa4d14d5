package endpoint

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/iwkit/iwkit/decode"
)

// RFC 7306 work request kinds, posted on a QP with QPAttr.RFC7306. Their
// values sit apart from the RFC 5040 kinds.
const (
	// OpImmData sends SendWR.Imm in an Immediate Data message (RFC 7306
	// §6.3); it consumes one receive at the peer.
	OpImmData Opcode = 32 + iota
	// OpImmDataSE is Immediate Data with Solicited Event.
	OpImmDataSE
	// OpWriteImm is an RDMA Write followed by an Immediate Data message:
	// RFC 7306's RDMA Write with Immediate Data (§6). The peer's receive
	// completes once the Write is Placed (§7).
	OpWriteImm
	// OpSendImm is a Send followed by an Immediate Data message (RFC 7306
	// has no single Send with Immediate message): it consumes two receives
	// at the peer, completed in order (§6.4, §7).
	OpSendImm
	// OpAtomicFetchAdd and OpAtomicCmpSwap are the RFC 7306 Atomic
	// Operations (§5.1): SendWR.Atomic holds the operands, RemoteAddr and
	// RKey the 64-bit aligned target (its region needs AccessRemoteAtomic),
	// and SGL one 8-octet local buffer with Local Write, where the
	// Original Remote Data Value is placed (in host byte order) before the
	// work request completes (§5.4 rules 1, 7). They count against ORD
	// with RDMA Reads (§5.2).
	OpAtomicFetchAdd
	OpAtomicCmpSwap
)

func (o Opcode) is7306() bool   { return o >= OpImmData && o <= OpAtomicCmpSwap }
func (o Opcode) isAtomic() bool { return o == OpAtomicFetchAdd || o == OpAtomicCmpSwap }

// usesORD: the work request completes when its response arrives.
func (o Opcode) usesORD() bool { return o.isRead() || o.isAtomic() }

func (o Opcode) string7306() string {
	switch o {
	case OpImmData:
		return "ImmData"
	case OpImmDataSE:
		return "ImmDataSE"
	case OpWriteImm:
		return "RDMAWriteImm"
	case OpSendImm:
		return "SendImm"
	case OpAtomicFetchAdd:
		return "FetchAdd"
	case OpAtomicCmpSwap:
		return "CmpSwap"
	}
	return fmt.Sprintf("Opcode(%d)", uint8(o))
}

// AtomicArgs are the operands of an RFC 7306 Atomic Operation (§5.1,
// §5.2.1 Fig. 5). FetchAdd and CmpSwap build the usual unmasked ones.
type AtomicArgs struct {
	// Data is the Add Data (FetchAdd) or Swap Data (CmpSwap).
	Data uint64
	// Mask is the Add Mask (FetchAdd: a 1 marks the top bit of each
	// independent field, 0 is one 64-bit add) or the Swap Mask (CmpSwap:
	// the bits swapped).
	Mask uint64
	// Compare and CompareMask are CmpSwap's: the swap happens when the
	// target equals Compare in the bits of CompareMask.
	Compare, CompareMask uint64
}

// FetchAdd is a 64-bit Fetch-and-Add of add.
func FetchAdd(add uint64) AtomicArgs { return AtomicArgs{Data: add, CompareMask: ^uint64(0)} }

// CmpSwap is a 64-bit Compare-and-Swap: swap if the target equals compare.
func CmpSwap(compare, swap uint64) AtomicArgs {
	return AtomicArgs{Data: swap, Mask: ^uint64(0), Compare: compare, CompareMask: ^uint64(0)}
}

// is7306 reports an RFC 7306 RDMAP opcode (0x8–0xB).
func is7306(op decode.Opcode) bool { return op >= decode.OpImmData && op <= decode.OpAtomicResponse }

// apply computes the target's new value (RFC 7306 §5.1.1 pseudocode for
// the masked FetchAdd, §5.1.2 for CmpSwap).
func apply(a *decode.AtomicRequest, orig uint64) uint64 {
	if a.AOpCode == decode.AOpCmpSwap {
		if (a.CompareData^orig)&a.CompareMask != 0 {
			return orig
		}
		return orig&^a.AddSwapMask | a.AddSwapData&a.AddSwapMask
	}
	if a.AddSwapMask == 0 {
		return orig + a.AddSwapData
	}
	// Each field ends at a bit set in the Add Mask; the carry out of it is
	// discarded.
	var v, carry uint64
	for bit := uint(0); bit < 64; bit++ {
		sum := carry + orig>>bit&1 + a.AddSwapData>>bit&1
		v |= (sum & 1) << bit
		carry = sum >> 1
		if a.AddSwapMask>>bit&1 != 0 {
			carry = 0
		}
	}
	return v
}

// aligned8 reports whether the ULP Buffer address of p is 64-bit aligned
// (RFC 7306 §5.1.1, §5.1.2: the address, not the Tagged Offset).
func aligned8(p []byte) bool { return uintptr(unsafe.Pointer(&p[0]))&7 == 0 }

// check7306WR is PostSend's check of an RFC 7306 work request.
func (qp *QP) check7306WR(wr *SendWR) error {
	if !qp.attr.RFC7306 {
		return fmt.Errorf("%w: %v needs QPAttr.RFC7306 (RFC 7306 §1.1)", ErrInvalidWR, wr.Opcode)
	}
	switch {
	case wr.Opcode.isAtomic() && (len(wr.SGL) != 1 || wr.SGL[0].Length != 8):
		return fmt.Errorf("%w: an atomic takes one 8-octet local SGE for the original value", ErrInvalidWR)
	case (wr.Opcode == OpImmData || wr.Opcode == OpImmDataSE) && len(wr.SGL) != 0:
		return fmt.Errorf("%w: Immediate Data takes no SGL", ErrInvalidWR)
	}
	return nil
}

// emit7306 puts an atomic or Immediate Data work request into the batch
// and reports done. For Write and Send with Immediate it returns the data
// message's kind instead, and emitWR sends that, then the Immediate Data
// (emitImm).
func (qp *QP) emit7306(s *stream, b *txBatch, w *sqe) (data Opcode, done bool, err error) {
	switch op := w.wr.Opcode; op {
	case OpWriteImm:
		return OpWrite, false, nil
	case OpSendImm:
		return OpSend, false, nil
	case OpImmData, OpImmDataSE:
		qp.emitImm(s, b, op == OpImmDataSE, w.wr.Imm)
		return op, true, nil
	}
	res := w.sgl[0]
	if _, _, e := qp.dev.check(res.LKey, qp, AccessLocalWrite, res.Addr, 8); e != accOK {
		err := fmt.Errorf("%v result buffer %v at 0x%x: %v", w.wr.Opcode, res.LKey, res.Addr, e)
		qp.wqeFailed(w, e.status(), err.Error())
		return 0, true, err
	}
	a := w.wr.Atomic
	msn := qp.sendMSN[1]
	qp.sendMSN[1]++
	// The Request Identifier is the request's MSN on QN 1: unique on the
	// stream, and the response must echo it (§5.2.1).
	req := decode.AtomicRequest{AOpCode: decode.AOpFetchAdd, RequestID: msn, RemoteSTag: uint32(w.wr.RKey),
		RemoteTO: w.wr.RemoteAddr, AddSwapData: a.Data, AddSwapMask: a.Mask, CompareData: a.Compare, CompareMask: a.CompareMask}
	if w.wr.Opcode == OpAtomicCmpSwap {
		req.AOpCode = decode.AOpCmpSwap
	}
	qp.mu.Lock()
	for i := len(qp.orq) - 1; i >= 0; i-- {
		if qp.orq[i].wqe == w {
			qp.orq[i].reqID = msn
			break
		}
	}
	qp.mu.Unlock()
	var h [decode.AtomicReqHdrLen]byte
	qp.emitUntagged(s, b, decode.OpAtomicRequest, 0, decode.QNReadReq, msn, req.Append(h[:0]), nil, 0, nil)
	qp.cnt.txAtomicReqs.Add(1)
	return 0, true, nil
}

// emitImm sends an Immediate Data message: untagged, QN 0 in the Send MSN
// sequence, exactly 8 octets (RFC 7306 §6.2, §6.3).
func (qp *QP) emitImm(s *stream, b *txBatch, se bool, imm uint64) {
	op := decode.OpImmData
	if se {
		op = decode.OpImmDataSE
	}
	var d [decode.ImmDataLen]byte
	binary.BigEndian.PutUint64(d[:], imm)
	msn := qp.sendMSN[0]
	qp.sendMSN[0]++
	qp.emitUntagged(s, b, op, 0, decode.QNSend, msn, d[:], nil, 0, nil)
	qp.cnt.txImmData.Add(1)
}

// emitAtomicResponse performs an accepted Atomic Request and puts its
// Atomic Response into the batch. It runs in the send engine, in the QN 1
// order of the requests: after the responses to earlier Reads and atomics
// were generated, before later ones (RFC 7306 §5.4 rule 8, §7). The target
// is checked again (it may have been invalidated since the request
// arrived) and the read-modify-write holds the device's atomic lock, so
// atomics from every stream of the device are atomic with respect to each
// other (§5.3). It reports false when the target failed its checks; the
// QP then terminates.
func (qp *QP) emitAtomicResponse(s *stream, b *txBatch, r *irrqEntry) bool {
	a := r.atomic
	mr, p, e := qp.dev.lookup(STag(a.RemoteSTag), qp, AccessRemoteAtomic, a.RemoteTO, 8)
	if e != accOK {
		qp.atomicFailed(r, decode.TermLayerRDMAP, 1, readCode(e), fmt.Sprintf("Atomic Request target STag 0x%08x TO 0x%x at response time: %v", a.RemoteSTag, a.RemoteTO, e))
		return false
	}
	if !aligned8(p) {
		mr.unpin()
		qp.atomicFailed(r, decode.TermLayerRDMAP, 2, 0x07, fmt.Sprintf("Atomic Request target TO 0x%x is not 64-bit aligned", a.RemoteTO))
		return false
	}
	d := qp.dev
	d.atomicMu.Lock()
	orig := binary.NativeEndian.Uint64(p) // the endian format of the target memory (§5.1.1)
	binary.NativeEndian.PutUint64(p, apply(a, orig))
	d.atomicMu.Unlock()
	mr.sync.Add(1) // our write happens before the owner's next Sync
	mr.unpin()
	resp := decode.AtomicResponse{OrigRequestID: a.RequestID, OrigValue: orig}
	var h [decode.AtomicRespHdrLen]byte
	msn := qp.sendMSN[3]
	qp.sendMSN[3]++
	qp.emitUntagged(s, b, decode.OpAtomicResponse, 0, decode.QNAtomicResp, msn, resp.Append(h[:0]), nil, 0, nil)
	qp.cnt.txAtomicResps.Add(1)
	return true
}

// atomicFailed terminates the QP when an accepted Atomic Request fails at
// response time: the Terminate carries its DDP header but no RDMA header
// (RFC 7306 §8.1 rule 2).
func (qp *QP) atomicFailed(r *irrqEntry, layer, etype, code uint8, reason string) {
	t := decode.Terminate{Layer: layer, EType: etype, Code: code, M: true, D: true,
		HasSegLen: true, HasDDP: true, DDPSegmentLength: decode.AtomicReqHdrLen}
	decode.ParseDDP(r.hdr[:], &t.TermDDP)
	t.TermDDPRaw = append([]byte(nil), r.hdr[:]...)
	ti := TermInfo{Local: true, Cause: decode.LookupTermCause(layer, etype, code), Header: t, Reason: reason}
	qp.mu.Lock()
	qp.terminateLocked(ti, nil, 0)
	qp.unlock()
}

// rx7306 checks an incoming RFC 7306 message before it is Delivered. A QP
// without the extensions answers it as a peer without them does (and as
// Linux siw does, before any queue check): Remote Operation Error,
// Unexpected OpCode (RFC 7306 §1.1). Errors on these messages copy the
// DDP header but never the RDMA header (§8.1 rule 2).
func (qp *QP) rx7306(seg *rxSeg) *fault {
	h, op := &seg.h, seg.ctl.Opcode
	if !qp.attr.RFC7306 {
		return ddpFault(decode.TermLayerRDMAP, 2, 0x06, "%v: RFC 7306 is not enabled on this QP", op)
	}
	want := map[decode.Opcode]uint32{decode.OpImmData: decode.QNSend, decode.OpImmDataSE: decode.QNSend,
		decode.OpAtomicRequest: decode.QNReadReq, decode.OpAtomicResponse: decode.QNAtomicResp}[op]
	if h.QN != want {
		return ddpFault(decode.TermLayerRDMAP, 2, 0x06, "%v on QN %d, not %d (RFC 7306 §4.1 Fig. 2)", op, h.QN, want)
	}
	var n int
	switch op {
	case decode.OpImmData, decode.OpImmDataSE:
		// One receive per message, in the Send MSN sequence (§6.3).
		if _, f := qp.rxRecvBuf(seg); f != nil {
			return f
		}
		n = decode.ImmDataLen
	case decode.OpAtomicRequest:
		// QN 1 and its MSN sequence and IRD, with the Read Requests (§5.2).
		if h.MSN != qp.recvMSN[1] {
			return ddpFault(decode.TermLayerDDP, 2, 0x03, "Atomic Request MSN %d, expected %d", h.MSN, qp.recvMSN[1])
		}
		qp.mu.Lock()
		busy, ird := qp.irrqBusy, qp.ird
		qp.mu.Unlock()
		if busy >= ird {
			return ddpFault(decode.TermLayerDDP, 2, 0x03, "Atomic Request beyond IRD %d", ird)
		}
		n = decode.AtomicReqHdrLen
	default:
		if h.MSN != qp.recvMSN[3] {
			return ddpFault(decode.TermLayerDDP, 2, 0x03, "Atomic Response MSN %d, expected %d", h.MSN, qp.recvMSN[3])
		}
		n = decode.AtomicRespHdrLen
	}
	if seg.ctl.RV != decode.RDMAPVersion {
		return ddpFault(decode.TermLayerRDMAP, 2, 0x05, "RDMAP version %d", seg.ctl.RV)
	}
	if h.MO != 0 {
		return ddpFault(decode.TermLayerDDP, 2, 0x04, "%v with MO %d", op, h.MO)
	}
	if !h.Last || seg.plen != n {
		// RFC 7306 gives no code for a wrong length (§6.3, §5.2.1); the
		// Read Request's rule is used.
		f := ddpFault(decode.TermLayerRDMAP, 2, 0x06, "%v of %d octets (L=%v), not one %d-octet segment", op, seg.plen, h.Last, n)
		if h.QN == decode.QNSend {
			f.rqStatus = StatusLocalLength // the receive it took fails
		}
		return f
	}
	return nil
}

// deliver7306 runs the RDMAP part of a valid RFC 7306 message.
func (qp *QP) deliver7306(seg *rxSeg) *fault {
	switch op := seg.ctl.Opcode; op {
	case decode.OpImmData, decode.OpImmDataSE:
		// The receive completes with the 8 octets, nothing placed (§6.1).
		r := qp.cur
		wc := WorkCompletion{WRID: r.wr.WRID, Opcode: OpRecv, WithImm: true, Imm: binary.BigEndian.Uint64(seg.pay),
			Solicited: op == decode.OpImmDataSE, QPNum: qp.num}
		qp.cnt.rxImmData.Add(1)
		qp.completeRecv(r, wc)
		return nil
	case decode.OpAtomicRequest:
		var a decode.AtomicRequest
		decode.ParseAtomicRequest(seg.pay, &a)
		qp.recvMSN[1]++
		qp.cnt.rxAtomicReqs.Add(1)
		if !a.AOpCode.Known() {
			// §5.2.1 rule 4: an error, with no code of its own.
			return ddpFault(decode.TermLayerRDMAP, 2, 0x06, "Atomic Request AOpCode %v not supported", a.AOpCode)
		}
		_, p, e := qp.dev.check(STag(a.RemoteSTag), qp, AccessRemoteAtomic, a.RemoteTO, 8)
		if e != accOK {
			return ddpFault(decode.TermLayerRDMAP, 1, readCode(e), "Atomic Request target STag 0x%08x TO 0x%x: %v", a.RemoteSTag, a.RemoteTO, e)
		}
		if !aligned8(p) {
			// Memory untouched, Catastrophic error localized to the
			// stream (§5.1.1, §5.1.2, §8.2).
			return ddpFault(decode.TermLayerRDMAP, 2, 0x07, "Atomic Request target TO 0x%x is not 64-bit aligned", a.RemoteTO)
		}
		qp.mu.Lock()
		qp.irrq = append(qp.irrq, &irrqEntry{atomic: &a, hdr: seg.hdr})
		qp.irrqBusy++
		qp.kickTx()
		qp.unlock()
		return nil
	}
	var a decode.AtomicResponse
	decode.ParseAtomicResponse(seg.pay, &a)
	qp.recvMSN[3]++
	qp.cnt.rxAtomicResps.Add(1)
	qp.mu.Lock()
	var o *orqEntry
	if len(qp.orq) > 0 {
		o = qp.orq[0]
	}
	qp.mu.Unlock()
	// An invalid Atomic Response surfaces an error (§5.2.2 rule 7): one
	// with no atomic at the head of the ORQ is unexpected, one for another
	// request breaks the stream's order (§5.2.2 rule 8).
	if o == nil || !o.atomic {
		return ddpFault(decode.TermLayerRDMAP, 2, 0x06, "Atomic Response with no Atomic Request at the head of the ORQ")
	}
	if a.OrigRequestID != o.reqID {
		return ddpFault(decode.TermLayerRDMAP, 2, 0x07, "Atomic Response for request %d, the oldest outstanding is %d", a.OrigRequestID, o.reqID)
	}
	// The original value goes to the requester's buffer, which the WR
	// named with Local Write; the atomic completes only now (§5.4 rule 7).
	mr, p, e := qp.dev.lookup(o.sink, qp, AccessLocalWrite, o.to, 8)
	if e == accOK {
		binary.NativeEndian.PutUint64(p, a.OrigValue)
		mr.unpin()
	}
	qp.mu.Lock()
	defer qp.unlock()
	if len(qp.orq) == 0 || qp.orq[0] != o {
		return nil // the QP was flushed meanwhile
	}
	qp.orq[0] = nil
	qp.orq = qp.orq[1:]
	if e != accOK {
		qp.terminateLocked(localTerm(0x0, 0x0, 0x00, fmt.Sprintf("atomic result buffer %v: %v", o.sink, e)), o.wqe, e.status())
		return nil
	}
	o.wqe.done = true
	qp.completeSQLocked()
	qp.kickTx() // an ORD slot is free
	return nil
}
