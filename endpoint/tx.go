package endpoint

import (
	"encoding/binary"
	"fmt"

	"github.com/iwkit/iwkit/decode"
)

// rtrType is an RFC 6581 ready-to-receive message type.
type rtrType uint8

const (
	rtrNone  rtrType = iota
	rtrSend          // zero-length Send (B)
	rtrWrite         // zero-length RDMA Write (C)
	rtrRead          // zero-length RDMA Read Request (D)
)

func (r rtrType) String() string {
	return [...]string{"none", "send", "write", "read"}[r]
}

const (
	tkNone = iota
	tkSQ
	tkResp
	tkTerm
	tkStop
	tkRTR
)

type txItem struct {
	kind uint8
	wqe  *sqe
	irr  *irrqEntry
	term *decode.Terminate
	rtr  rtrType
}

// nextWorkLocked picks the send engine's next job: a pending Terminate
// first, then (once the Responder may send) the RTR, Read Responses in the
// order their requests arrived (RFC 5040 §5.2.2 rule 20), then SQ WRs in
// order, holding RDMA Reads at ORD and Read-fenced WRs behind earlier Reads.
func (qp *QP) nextWorkLocked() txItem {
	if qp.termOut != nil {
		t := qp.termOut
		qp.termOut = nil
		return txItem{kind: tkTerm, term: t}
	}
	switch qp.state {
	case StateRTS:
	case StateClosing, StateTerminate:
		if qp.txStop {
			return txItem{kind: tkStop}
		}
		return txItem{}
	default:
		return txItem{}
	}
	if !qp.gateOpen {
		return txItem{}
	}
	if qp.rtrOut != rtrNone {
		r := qp.rtrOut
		qp.rtrOut = rtrNone
		return txItem{kind: tkRTR, rtr: r}
	}
	if len(qp.irrq) > 0 {
		e := qp.irrq[0]
		qp.irrq[0] = nil
		qp.irrq = qp.irrq[1:]
		return txItem{kind: tkResp, irr: e}
	}
	if qp.sqNext < len(qp.sq) {
		w := qp.sq[qp.sqNext]
		if w.wr.Opcode.usesORD() {
			if qp.ord == 0 && !qp.noORD {
				qp.sqNext++
				w.started = true
				qp.terminateLocked(localTerm(0x0, 0x0, 0x00, fmt.Sprintf("%v with ORD 0", w.wr.Opcode)), w, StatusZeroReadResources)
				return txItem{}
			}
			if len(qp.orq) >= qp.ord && !qp.noORD {
				qp.cnt.readStalls.Add(1)
				return txItem{}
			}
		} else if w.wr.ReadFence && len(qp.orq) > 0 {
			return txItem{}
		}
		if w.wr.LocalFence && qp.sqNext > 0 {
			return txItem{} // every earlier WR must have completed (V00 §8.2.2)
		}
		qp.sqNext++
		w.started = true
		if w.wr.Opcode.usesORD() {
			s := w.sgl[0]
			o := &orqEntry{wqe: w, sink: s.LKey, to: s.Addr, size: uint64(s.Length)}
			o.atomic = w.wr.Opcode.isAtomic()
			qp.orq = append(qp.orq, o)
		}
		return txItem{kind: tkSQ, wqe: w}
	}
	return txItem{}
}

// txState is the send engine's working state, owned by whoever holds
// QP.txMu: the engine goroutine, or a PostSend caller that finds the engine
// idle and puts its WRs on the wire itself (one goroutine hand-off less per
// message, which is most of a small message's latency).
type txState struct {
	b         txBatch
	doneSQ    []*sqe
	resp      *irrqEntry // Read Response under way, continued in the next batch
	respFault *Fault     // its fault
	parts     [][]byte
	scratch   [][]byte
	closed    bool // the write side is closed: nothing more goes out
	pending   bool // b is built and not all written (an inline write stopped at a full socket)
	stopAfter bool // b ends the stream: close the write side once it is out
}

// runTx builds and writes one batch of work. It reports whether anything
// was written, and whether the send engine is done (Terminate sent, close
// started, or a write failed). The caller holds qp.txMu. inline is a post
// verb's caller: it writes only what the socket takes at once, and a batch
// it could not finish is left in t.b for the next runTx (the engine's,
// which waits for the socket) before anything else goes out.
func (qp *QP) runTx(s *stream, inline bool) (wrote, done bool) {
	t := &qp.txs
	if t.closed {
		return false, true
	}
	if t.pending {
		return qp.flushTx(s, inline)
	}
	b := &t.b
	b.reset()
	t.doneSQ = t.doneSQ[:0]
	t.stopAfter = false
	memOps := false
fill:
	for b.bytes < txBatchMax && len(b.bufs) < 768 {
		var it txItem
		qp.mu.Lock()
		if t.resp != nil && (qp.termOut != nil || qp.state != StateRTS) {
			t.resp = nil // a Terminate or a close goes first; the response is void
		}
		if t.resp != nil {
			it = txItem{kind: tkResp, irr: t.resp}
			s.txFault = t.respFault
		} else {
			it = qp.nextWorkLocked()
			s.txFault = nil
			if len(qp.faults) > 0 {
				switch it.kind {
				case tkSQ:
					s.txFault = qp.takeFaultLocked(wrTarget(it.wqe.wr.Opcode))
				case tkResp:
					s.txFault = qp.takeFaultLocked(OnReadResponse)
					t.respFault = s.txFault
				case tkRTR:
					s.txFault = qp.takeFaultLocked(OnRTR)
				case tkTerm:
					s.txFault = qp.takeFaultLocked(OnTerminate)
				}
			}
		}
		qp.unlock()
		switch it.kind {
		case tkNone:
			break fill
		case tkTerm:
			f := s.txFault
			if f != nil && f.Kind == FaultDataAfterTerminate {
				s.txFault = nil
			}
			qp.emitTerminate(s, b, it.term)
			if f != nil && f.Kind == FaultDataAfterTerminate {
				msn := qp.sendMSN[0]
				qp.sendMSN[0]++
				qp.emitUntagged(s, b, decode.OpSend, 0, decode.QNSend, msn, nil, [][]byte{[]byte("after-terminate")}, 15, nil)
			}
			t.stopAfter = true
			break fill
		case tkStop:
			t.stopAfter = true
			break fill
		case tkRTR:
			r := it.rtr
			if f := s.txFault; f != nil && f.Kind == FaultOmitRTR {
				continue
			} else if f != nil && f.Kind == FaultRTRType && f.Value >= 1 && f.Value <= 3 {
				r = rtrType(f.Value)
				s.txFault = nil
			}
			qp.emitRTR(s, b, r)
		case tkResp:
			r := it.irr
			t.resp = nil
			if r.sent == 0 {
				t.respFault = s.txFault
			}
			done, ok := qp.emitReadResponse(s, b, r)
			if !ok {
				continue // the failure queued a Terminate
			}
			if !done {
				t.resp = r
				break fill
			}
			qp.cnt.txReadResps.Add(1)
			// The IRD slot is free once the response is committed to the
			// stream: the peer can only reuse it after receiving the
			// response, which follows this point.
			qp.mu.Lock()
			qp.irrqBusy--
			qp.mu.Unlock()
		case tkSQ:
			w := it.wqe
			var err error
			t.parts, t.scratch, err = qp.emitWR(s, b, w, t.parts, t.scratch)
			if err != nil {
				continue // the failure queued a Terminate
			}
			if !w.wr.Opcode.usesORD() {
				t.doneSQ = append(t.doneSQ, w) // Reads and atomics complete with their response
			}
		}
	}
	s.txFault = nil
	if s.txTrunc {
		t.stopAfter = true // the stream is broken: nothing more can follow
	}
	if len(b.bufs) > 0 {
		if qp.onFlush != nil {
			qp.onFlush(b.bytes)
		}
		// Counted as the batch is committed to the stream, before the
		// write: a peer can answer what it received before this goroutine
		// runs again after the write, and a counter read on that answer
		// must include what it answers.
		qp.cnt.txOctets.Add(uint64(b.bytes))
		t.pending = true
		return qp.flushTx(s, inline)
	}
	if len(t.doneSQ) > 0 {
		// Memory operations only: nothing to write, complete them now.
		qp.completeTx()
		memOps = true
	}
	if t.stopAfter {
		t.closed = true
		qp.closeWrite(s)
		return false, true
	}
	// More of a Read Response to send, or more WRs after memory operations.
	return t.resp != nil || memOps, false
}

// flushTx writes the pending batch (the part the socket takes at once, when
// inline) and, once it is all out, completes its WRs and closes the write
// side when the batch ended the stream.
func (qp *QP) flushTx(s *stream, inline bool) (wrote, done bool) {
	t := &qp.txs
	all, err := s.flush(&t.b, !inline)
	if err != nil {
		t.closed, t.pending = true, false
		qp.txFailed(err)
		return true, true
	}
	if !all {
		return true, false // the engine waits for the socket and writes the rest
	}
	t.pending = false
	qp.completeTx()
	if t.stopAfter {
		t.closed = true
		qp.closeWrite(s)
		return true, true
	}
	return true, false
}

// completeTx marks the batch's WRs done, in SQ order, once its octets are
// written.
func (qp *QP) completeTx() {
	t := &qp.txs
	qp.mu.Lock()
	for _, w := range t.doneSQ {
		w.done = true
	}
	qp.completeSQLocked()
	qp.unlock()
}

// txBatchMax bounds the octets one batch (one writev) carries: a large Read
// Response or Write goes out over several batches, so memory does not grow
// with the message.
const txBatchMax = 1 << 20

// emitReadResponse puts the next part of an inbound Read's response into
// the batch, at most what is left of the batch budget (at least 64 KiB).
// The Data Source is checked again here and its octets are copied into the
// batch under the region's pin: a region invalidated or deregistered after
// the Read Request was accepted discloses nothing (RFC 5040 §8.1.1 item 6,
// RFC 5042 §6.2.2, §6.3.3); the Read then fails with the Remote Protection Error
// the Request would have got (RFC 5040 §4.8). It reports whether the
// response is complete, and false ok when it failed.
func (qp *QP) emitReadResponse(s *stream, b *txBatch, r *irrqEntry) (done, ok bool) {
	if r.atomic != nil {
		return true, qp.emitAtomicResponse(s, b, r)
	}
	size := uint64(r.req.Size)
	if size == 0 {
		qp.emitTagged(s, b, decode.OpReadResponse, r.req.SinkSTag, r.req.SinkTO, nil, 0, nil, true)
		return true, true
	}
	n := min(size-r.sent, uint64(max(txBatchMax-b.bytes, 64<<10)))
	mr, src, e := qp.dev.lookup(STag(r.req.SrcSTag), qp, AccessRemoteRead, r.req.SrcTO+r.sent, n)
	if e != accOK {
		qp.readSourceFailed(r, e)
		return false, false
	}
	buf := b.alloc(int(n))
	copy(buf, src)
	mr.sync.Add(1) // our read happens before the owner's next Sync
	mr.unpin()
	qp.txs.parts = append(qp.txs.parts[:0], buf)
	r.sent += n
	to := r.req.SinkTO + r.sent - n
	last := r.sent == size
	if f := s.txFault; last && f != nil && f.Kind == FaultOversize {
		qp.txs.parts = append(qp.txs.parts, make([]byte, f.Value))
		n += uint64(f.Value)
	}
	qp.txs.scratch = qp.emitTagged(s, b, decode.OpReadResponse, r.req.SinkSTag, to, qp.txs.parts, n, qp.txs.scratch, last)
	qp.cnt.txPayload.Add(n)
	return last, true
}

// readSourceFailed terminates the QP when the source of an accepted Read
// failed its checks at response time: RDMAP Remote Protection Error, with
// the Read Request's DDP and RDMAP headers (RFC 5040 §4.8, §7.1).
func (qp *QP) readSourceFailed(r *irrqEntry, e accessErr) {
	t := decode.Terminate{Layer: decode.TermLayerRDMAP, EType: 1, Code: readCode(e), M: true, D: true, R: true,
		HasSegLen: true, HasDDP: true, HasRDMA: true, DDPSegmentLength: decode.ReadReqHdrLen, TermRDMA: r.req}
	decode.ParseDDP(r.hdr[:], &t.TermDDP)
	t.TermDDPRaw = append([]byte(nil), r.hdr[:]...)
	var rh [decode.ReadReqHdrLen]byte
	t.TermRDMARaw = r.req.Append(rh[:0])
	ti := TermInfo{Local: true, Cause: decode.LookupTermCause(t.Layer, t.EType, t.Code), Header: t,
		Reason: fmt.Sprintf("Read source STag 0x%08x TO 0x%x size %d at response time: %v", r.req.SrcSTag, r.req.SrcTO, r.req.Size, e)}
	qp.mu.Lock()
	qp.terminateLocked(ti, nil, 0)
	qp.unlock()
}

// txLoop is the send engine.
func (qp *QP) txLoop(s *stream) {
	defer close(qp.txDone)
	stopping := false
	for {
		qp.txMu.Lock()
		wrote, done := qp.runTx(s, false)
		qp.txMu.Unlock()
		if done {
			return
		}
		if wrote {
			continue
		}
		if stopping {
			return
		}
		select {
		case <-qp.kick:
		case <-qp.stop:
			stopping = true
		}
	}
}

// txInline runs the send engine in the caller's goroutine when it is idle;
// it never waits for the socket (see runTx).
func (qp *QP) txInline(s *stream) {
	if !qp.txMu.TryLock() {
		qp.kickTx()
		return
	}
	wrote, done := qp.runTx(s, true)
	qp.txMu.Unlock()
	if wrote || done {
		qp.kickTx() // the engine picks up anything left, or notices the end
	}
}

// txFailed handles an LLP write failure: no Terminate can go out, reset.
// In Terminate that is the LLP failure that prevents the Terminate's
// transmission (V00 §6.2.3).
func (qp *QP) txFailed(err error) {
	err = fmt.Errorf("endpoint: LLP write: %w", err)
	qp.mu.Lock()
	st := qp.state
	if st == StateTerminate {
		qp.llpErr = true
	}
	qp.unlock()
	switch st {
	case StateRTS, StateClosing:
		qp.abort(err, llpLost(err))
	case StateTerminate:
		// The Terminate cannot go out: LLP reset, Error (V00 §6.2.3).
		qp.abort(err, EventBadClose)
	}
}

// wqeFailed completes w in error and terminates the QP with a Local
// Catastrophic Terminate without headers: the error happened while building
// an outbound message (RFC 5040 §7.1 rule 1, V00 Fig. 23).
func (qp *QP) wqeFailed(w *sqe, st Status, reason string) {
	qp.mu.Lock()
	qp.terminateLocked(localTerm(0x0, 0x0, 0x00, reason), w, st)
	qp.unlock()
}

// gather resolves a local SGL with the given rights.
func (qp *QP) gather(sgl []SGE, need Access, parts [][]byte) ([][]byte, uint64, accessErr, SGE) {
	parts = parts[:0]
	var tot uint64
	for _, sge := range sgl {
		if sge.Length == 0 {
			continue
		}
		_, p, e := qp.dev.check(sge.LKey, qp, need, sge.Addr, uint64(sge.Length))
		if e != accOK {
			return parts, 0, e, sge
		}
		parts = append(parts, p)
		tot += uint64(len(p))
	}
	return parts, tot, accOK, SGE{}
}

func (qp *QP) emitWR(s *stream, b *txBatch, w *sqe, parts, scratch [][]byte) ([][]byte, [][]byte, error) {
	op := w.wr.Opcode
	switch op {
	case OpBindMW, OpLocalInv, OpFastReg:
		// Memory operations take effect in SQ order, before later WRs
		// execute (V00 §8.2.2); a failure is a completion error with a
		// Local Catastrophic Terminate (V00 Fig. 23).
		var be *bindError
		switch {
		case op == OpFastReg:
			be = qp.fastReg(w.wr.FastReg)
		case op == OpLocalInv:
			be = qp.localInvalidate(w.wr.InvalidateSTag)
		case w.wr.Bind.MW.r.mwType != MWType2:
			be = bindErr(StatusInvalidWindow, "type 1 windows are bound by QP.BindMW")
		default:
			_, be = qp.bind(w.wr.Bind)
		}
		if be != nil {
			qp.wqeFailed(w, be.st, be.reason)
			return parts, scratch, be
		}
		return parts, scratch, nil
	}
	if op.is7306() {
		// Atomics and Immediate Data; Write and Send with Immediate go on
		// as a Write or Send, followed by their Immediate Data below.
		var done bool
		var err error
		if op, done, err = qp.emit7306(s, b, w); done {
			return parts, scratch, err
		}
	}
	if op.isRead() {
		sink := w.sgl[0]
		if sink.Length > 0 {
			// The sink of a Read Response needs Remote Write (V00 §7.4.2).
			if _, _, e := qp.dev.check(sink.LKey, qp, AccessRemoteWrite, sink.Addr, uint64(sink.Length)); e != accOK {
				err := fmt.Errorf("RDMA Read sink %v: %v", sink.LKey, e)
				qp.wqeFailed(w, e.status(), err.Error())
				return parts, scratch, err
			}
		}
		rr := decode.ReadRequest{SinkSTag: uint32(sink.LKey), SinkTO: sink.Addr, Size: sink.Length,
			SrcSTag: uint32(w.wr.RKey), SrcTO: w.wr.RemoteAddr}
		qp.emitReadRequest(s, b, &rr)
		return parts, scratch, nil
	}
	parts, tot, e, bad := qp.gather(w.sgl, AccessLocalRead, parts)
	if e != accOK {
		err := fmt.Errorf("%v source SGE %v at 0x%x+%d: %v", op, bad.LKey, bad.Addr, bad.Length, e)
		qp.wqeFailed(w, e.status(), err.Error())
		return parts, scratch, err
	}
	if op == OpWrite {
		scratch = qp.emitTagged(s, b, decode.OpWrite, uint32(w.wr.RKey), w.wr.RemoteAddr, parts, tot, scratch, true)
		qp.cnt.txWrites.Add(1)
	} else {
		var inv uint32
		if op == OpSendInv || op == OpSendSEInv {
			inv = uint32(w.wr.InvalidateSTag)
		}
		msn := qp.sendMSN[0]
		qp.sendMSN[0]++
		scratch = qp.emitUntagged(s, b, op.rdmap(), inv, decode.QNSend, msn, nil, parts, tot, scratch)
		qp.cnt.txSends.Add(1)
	}
	if op != w.wr.Opcode {
		qp.emitImm(s, b, false, w.wr.Imm)
	}
	qp.cnt.txPayload.Add(tot)
	return parts, scratch, nil
}

// split walks total octets of parts in segments of at most maxp octets,
// calling fn with each segment's offset and sub-slices.
func split(parts [][]byte, total uint64, maxp int, scratch [][]byte, fn func(off uint64, seg [][]byte, n int, last bool)) [][]byte {
	if total == 0 {
		fn(0, nil, 0, true)
		return scratch
	}
	pi, po := 0, 0
	var off uint64
	for off < total {
		n := int(min(uint64(maxp), total-off))
		scratch = scratch[:0]
		need := n
		for need > 0 {
			p := parts[pi][po:]
			if len(p) > need {
				p = p[:need]
			}
			scratch = append(scratch, p)
			need -= len(p)
			po += len(p)
			if po == len(parts[pi]) {
				pi, po = pi+1, 0
			}
		}
		fn(off, scratch, n, off+uint64(n) == total)
		off += uint64(n)
	}
	return scratch
}

func (qp *QP) maxPayload(s *stream, hdr int) int {
	return max(s.mulpdu-hdr, 1)
}

// emitTagged segments a tagged message (RDMA Write, Read Response): each
// segment carries STag and the TO of its first octet (RFC 5041 §4.2, §5.2).
func (qp *QP) emitTagged(s *stream, b *txBatch, op decode.Opcode, stag uint32, to uint64, parts [][]byte, total uint64, scratch [][]byte, lastMsg bool) [][]byte {
	var h [decode.DDPTaggedHdrLen]byte
	h[1] = decode.RDMAPVersion<<6 | uint8(op)
	binary.BigEndian.PutUint32(h[2:], stag)
	return split(parts, total, qp.maxPayload(s, len(h)), scratch, func(off uint64, seg [][]byte, n int, last bool) {
		h[0] = decode.DDPFlagT | decode.DDPVersion
		if last && lastMsg {
			h[0] |= decode.DDPFlagL
		}
		binary.BigEndian.PutUint64(h[6:], to+off)
		s.appendFPDU(b, h[:], seg, n)
		qp.cnt.txFPDUs.Add(1)
	})
}

// emitUntagged segments an untagged message: QN, MSN and the MO of each
// segment (RFC 5041 §4.3); rdmaHdr (Read Request, Terminate) goes in the
// first and only segment.
func (qp *QP) emitUntagged(s *stream, b *txBatch, op decode.Opcode, inv, qn, msn uint32, rdmaHdr []byte, parts [][]byte, total uint64, scratch [][]byte) [][]byte {
	var hb [decode.DDPUntaggedHdrLen + 64]byte
	h := hb[:decode.DDPUntaggedHdrLen]
	h[1] = decode.RDMAPVersion<<6 | uint8(op)
	binary.BigEndian.PutUint32(h[2:], inv)
	binary.BigEndian.PutUint32(h[6:], qn)
	binary.BigEndian.PutUint32(h[10:], msn)
	h = append(h, rdmaHdr...)
	return split(parts, total, qp.maxPayload(s, len(h)), scratch, func(off uint64, seg [][]byte, n int, last bool) {
		h[0] = decode.DDPVersion
		if last {
			h[0] |= decode.DDPFlagL
		}
		binary.BigEndian.PutUint32(h[14:], uint32(off))
		s.appendFPDU(b, h, seg, n)
		qp.cnt.txFPDUs.Add(1)
	})
}

func (qp *QP) emitReadRequest(s *stream, b *txBatch, rr *decode.ReadRequest) {
	var rh [decode.ReadReqHdrLen]byte
	rr.Append(rh[:0])
	msn := qp.sendMSN[1]
	qp.sendMSN[1]++
	qp.emitUntagged(s, b, decode.OpReadRequest, 0, decode.QNReadReq, msn, rh[:], nil, 0, nil)
	qp.cnt.txReadReqs.Add(1)
}

func (qp *QP) emitTerminate(s *stream, b *txBatch, t *decode.Terminate) {
	var th [64]byte
	hdr := t.Append(th[:0])
	qp.emitUntagged(s, b, decode.OpTerminate, 0, decode.QNTerminate, 1, hdr, nil, 0, nil)
	qp.cnt.txTerminates.Add(1)
}

// emitRTR sends the RFC 6581 ready-to-receive message the Initiator chose:
// its first FPDU (RFC 6581 §5, §9.3).
func (qp *QP) emitRTR(s *stream, b *txBatch, r rtrType) {
	switch r {
	case rtrWrite:
		// STag/TO are not checked for zero-length tagged segments (RFC 5041
		// §5.2); like current siw, send STag 1, not 0.
		qp.emitTagged(s, b, decode.OpWrite, 1, 0, nil, 0, nil, true)
	case rtrRead:
		rr := decode.ReadRequest{SinkSTag: 1, SrcSTag: 1}
		qp.emitReadRequest(s, b, &rr)
	case rtrSend:
		msn := qp.sendMSN[0]
		qp.sendMSN[0]++
		qp.emitUntagged(s, b, decode.OpSend, 0, decode.QNSend, msn, nil, nil, 0, nil)
	}
}
