package endpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/iwkit/iwkit/decode"
)

// fault is a receiver-check failure on an incoming segment: the Terminate
// cause, what to copy into it (RFC 5040 §7.1, Fig. 10), and the receive
// WR that fails with it, if any.
type fault struct {
	layer, etype, code uint8
	reason             string
	ddp                bool // copy the DDP header and segment length
	rdma               bool // copy the Read Request header
	rqStatus           Status
}

func fl(layer, etype, code uint8, format string, args ...any) *fault {
	return &fault{layer: layer, etype: etype, code: code, reason: fmt.Sprintf(format, args...)}
}

// ddpFault is a DDP-layer error or an RDMAP error on a non-Read-Request
// message: the DDP header is copied (RFC 5040 §7.1 rule 2).
func ddpFault(layer, etype, code uint8, format string, args ...any) *fault {
	f := fl(layer, etype, code, format, args...)
	f.ddp = true
	return f
}

// rxSeg is the segment being processed.
type rxSeg struct {
	ulen  int
	hdr   [decode.DDPUntaggedHdrLen]byte
	hlen  int
	h     decode.DDPHeader
	ctl   decode.RDMAPControl
	plen  int    // DDP payload octets (after the DDP header)
	pay   []byte // the payload (aliases the receive buffer)
	rdma  [decode.ReadReqHdrLen]byte
	hasRR bool
	rtr   bool // it was the RFC 6581 RTR
}

func (qp *QP) rxLoop(s *stream) {
	err := qp.rxRun(s)
	qp.finish(err)
}

// rxRun processes FPDUs until the connection ends. Each FPDU is read whole
// and its CRC and markers checked before anything else (RFC 5044 §6); then
// the checks run on the segment before Placement (DDP, RFC 5041 §7.1) and
// on the message (RDMAP, RFC 5040 §7.2); the first error produces the
// Terminate.
func (qp *QP) rxRun(s *stream) error {
	var seg rxSeg
	var f fpdu
	first := true
	for {
		qp.mu.Lock()
		st, gate := qp.state, qp.gateOpen
		qp.mu.Unlock()
		if st != StateRTS && st != StateClosing {
			return qp.drain(s)
		}
		// The Responder waits for the Initiator's first FPDU (the RTR)
		// before it sends; that wait is bounded like the MPA exchange.
		if first && !gate && qp.firstTimeout > 0 {
			s.c.SetReadDeadline(time.Now().Add(qp.firstTimeout))
		}
		boundary, err := s.nextFPDU(&f)
		if first && !gate && qp.firstTimeout > 0 {
			if err == nil {
				// Clear our bound, unless a close or a Terminate set its
				// own meanwhile (closeWrite, terminateLocked).
				qp.mu.Lock()
				if qp.state == StateRTS && !qp.txStop {
					s.c.SetReadDeadline(time.Time{})
				}
				qp.mu.Unlock()
			} else if errors.Is(err, os.ErrDeadlineExceeded) {
				err = fmt.Errorf("endpoint: no first FPDU within %v: %w", qp.firstTimeout, err)
			}
		}
		first = false
		if err != nil {
			return qp.llpEnd(err, boundary)
		}
		qp.cnt.rxFPDUs.Add(1)
		qp.cnt.rxOctets.Add(uint64(f.wire))
		var fl *fault
		// An FPDU with a bad CRC or marker is invalid as a whole: that is the
		// error to report, whatever its header said (RFC 5044 §8), and
		// nothing of it is used.
		if !f.crcOK {
			qp.cnt.crcErrors.Add(1)
			seg = rxSeg{}
			fl = mpaFault(0x02, "MPA CRC error in FPDU at stream offset %d", s.fpduStart)
		} else if !f.markersOK {
			qp.cnt.markerErrors.Add(1)
			seg = rxSeg{}
			fl = mpaFault(0x03, "MPA marker does not point at the FPDU at stream offset %d", s.fpduStart)
		} else {
			seg = rxSeg{ulen: len(f.ulpdu)}
			fl, err = qp.rxSegment(f.ulpdu, &seg, st)
			if err != nil {
				return qp.llpEnd(err, false)
			}
		}
		if fl == nil {
			fl = qp.rxDeliver(&seg)
		}
		if fl != nil {
			qp.rxFault(&seg, fl)
			continue
		}
	}
}

func mpaFault(code uint8, format string, args ...any) *fault {
	return fl(decode.TermLayerLLP, 0, code, format, args...)
}

// rxSegment parses and checks the DDP header of u, then checks and places
// the payload where the segment is valid.
func (qp *QP) rxSegment(u []byte, seg *rxSeg, st QPState) (*fault, error) {
	if seg.ulen < decode.DDPTaggedHdrLen {
		// MPA-21: no DDP header fits (V00 "segment size invalid").
		return fl(decode.TermLayerDDP, 0, 0, "ULPDU_Length %d below the DDP header", seg.ulen), nil
	}
	copy(seg.hdr[:], u[:decode.DDPTaggedHdrLen])
	seg.hlen = decode.DDPTaggedHdrLen
	if seg.hdr[0]&decode.DDPFlagT == 0 {
		if seg.ulen < decode.DDPUntaggedHdrLen {
			return fl(decode.TermLayerDDP, 0, 0, "ULPDU_Length %d below the untagged DDP header", seg.ulen), nil
		}
		copy(seg.hdr[:], u[:decode.DDPUntaggedHdrLen])
		seg.hlen = decode.DDPUntaggedHdrLen
	}
	decode.ParseDDP(seg.hdr[:seg.hlen], &seg.h)
	seg.ctl = decode.ParseRDMAPControl(seg.h.RsvdULP)
	seg.plen = seg.ulen - seg.hlen
	seg.pay = u[seg.hlen:]
	if st == StateClosing && !(!seg.h.Tagged && seg.h.QN == decode.QNTerminate) {
		return nil, errBadClose
	}
	if seg.h.Tagged {
		return qp.rxTagged(seg), nil
	}
	return qp.rxUntagged(seg), nil
}

var errBadClose = errors.New("endpoint: data arrived while Closing")

// rtrCheck enforces RFC 6581 §9.3 at the Responder: the Initiator's first
// FPDU is a zero-length RTR of a type the Reply allowed.
func (qp *QP) rtrCheck(seg *rxSeg) (rtrType, *fault) {
	qp.mu.Lock()
	want := qp.rtrIn
	qp.mu.Unlock()
	if want == 0 {
		return rtrNone, nil
	}
	if !seg.h.Tagged && seg.h.QN == decode.QNTerminate && seg.ctl.Opcode == decode.OpTerminate {
		// The Initiator gave up (e.g. no RTR type it can send): take its
		// Terminate, never answer it with one (V00 §6.2.2.3).
		return rtrNone, nil
	}
	var got rtrType
	switch {
	case seg.h.Tagged && seg.ctl.Opcode == decode.OpWrite && seg.plen == 0:
		got = rtrWrite
	case !seg.h.Tagged && seg.h.QN == decode.QNSend && seg.ctl.Opcode == decode.OpSend && seg.plen == 0 && seg.h.MSN == 1:
		got = rtrSend
	case !seg.h.Tagged && seg.h.QN == decode.QNReadReq && seg.ctl.Opcode == decode.OpReadRequest && seg.h.MSN == 1 &&
		seg.plen == decode.ReadReqHdrLen && binary.BigEndian.Uint32(seg.pay[12:]) == 0:
		// The Read RTR is a zero-size RDMA Read Request (RFC 6581 §5):
		// a Read with a size is not one.
		got = rtrRead
	}
	if got == rtrNone || want&(1<<got) == 0 {
		return rtrNone, fl(decode.TermLayerLLP, 0, 0x07, "first FPDU is not an RTR the Reply allowed (%v, allowed %s)", seg.ctl.Opcode, rtrSetString(want))
	}
	return got, nil
}

func rtrSetString(m uint8) string {
	s := ""
	for _, r := range []rtrType{rtrSend, rtrWrite, rtrRead} {
		if m&(1<<r) != 0 {
			if s != "" {
				s += ","
			}
			s += r.String()
		}
	}
	return s
}

// openGate lets the Responder's send engine start once a valid first FPDU
// arrived (RFC 5044 §7.1.2 rule 4).
func (qp *QP) openGate() {
	qp.mu.Lock()
	if !qp.gateOpen {
		qp.gateOpen = true
		qp.rtrIn = 0
		qp.kickTx()
	}
	qp.mu.Unlock()
}

func tagCode(e accessErr) uint8 {
	switch e {
	case accInvalidSTag:
		return 0x00
	case accBounds:
		return 0x01
	case accPD, accRights:
		// DDP has no access-rights code: V00 maps rights and PD/stream
		// mismatches to "STag not associated with DDP Stream" (0x1/0x1/0x02).
		return 0x02
	case accWrap:
		return 0x03
	}
	return 0xFF
}

// rxTagged checks and places a tagged segment (RDMA Write, Read Response).
func (qp *QP) rxTagged(seg *rxSeg) *fault {
	h := &seg.h
	if h.DV != decode.DDPVersion {
		return ddpFault(decode.TermLayerDDP, 1, 0x04, "DDP version %d", h.DV)
	}
	rtr, f := qp.rtrCheck(seg)
	if f != nil {
		return f
	}
	if rtr == rtrWrite {
		seg.rtr = true
		return nil
	}
	op := seg.ctl.Opcode
	var mr *MR
	var dst []byte
	if seg.plen > 0 {
		// STag and TO are checked only on non-zero-length segments (RFC 5041
		// §5.2). The RDMA Write enable covers every inbound tagged
		// placement, Read Responses included.
		if qp.attr.DisableRemoteWrite && (op == decode.OpWrite || op == decode.OpReadResponse) {
			return ddpFault(decode.TermLayerDDP, 1, 0x02, "inbound tagged placement (%v) disabled on this QP", op)
		}
		m, b, e := qp.dev.lookup(STag(h.STag), qp, AccessRemoteWrite, h.TO, uint64(seg.plen))
		if e != accOK {
			return ddpFault(decode.TermLayerDDP, 1, tagCode(e), "tagged segment STag 0x%08x TO 0x%x len %d: %v", h.STag, h.TO, seg.plen, e)
		}
		// Pinned: a revocation waits until the copy below is done, and one
		// that came first made the lookup fail (RFC 5042 §6.2.2, §6.3.3).
		mr, dst = m, b
		defer mr.unpin()
	}
	if seg.ctl.RV != decode.RDMAPVersion {
		return ddpFault(decode.TermLayerRDMAP, 2, 0x05, "RDMAP version %d", seg.ctl.RV)
	}
	switch op {
	case decode.OpWrite:
	case decode.OpReadResponse:
		qp.mu.Lock()
		var o *orqEntry
		if len(qp.orq) > 0 {
			o = qp.orq[0]
		}
		qp.mu.Unlock()
		if o == nil || o.atomic {
			// Responses come back in the order of the requests on QN 1,
			// Reads and RFC 7306 atomics together (RFC 7306 §5.4, §7).
			return ddpFault(decode.TermLayerRDMAP, 2, 0x06, "Read Response with no RDMA Read outstanding at the head of the ORQ")
		}
		if seg.plen > 0 {
			if h.STag != uint32(o.sink) {
				return ddpFault(decode.TermLayerDDP, 1, 0x00, "Read Response STag 0x%08x, the outstanding Read's sink is %v", h.STag, o.sink)
			}
			if h.TO != o.to+o.got || o.got+uint64(seg.plen) > o.size {
				return ddpFault(decode.TermLayerDDP, 1, 0x01, "Read Response TO 0x%x len %d outside the sink 0x%x+%d (at %d)", h.TO, seg.plen, o.to, o.size, o.got)
			}
		}
	default:
		return ddpFault(decode.TermLayerRDMAP, 2, 0x06, "opcode %v in a tagged segment", op)
	}
	copy(dst, seg.pay)
	if op == decode.OpWrite && h.Last && mr != nil {
		// Still pinned: a revoked region publishes nothing more.
		mr.placed.advance()
	}
	return nil
}

// rxUntagged checks an untagged segment and places Send payload into the
// posted receive buffer.
func (qp *QP) rxUntagged(seg *rxSeg) *fault {
	h := &seg.h
	if h.DV != decode.DDPVersion {
		return ddpFault(decode.TermLayerDDP, 2, 0x06, "DDP version %d", h.DV)
	}
	if h.QN > decode.QNTerminate && !(h.QN == decode.QNAtomicResp && is7306(seg.ctl.Opcode)) {
		return ddpFault(decode.TermLayerDDP, 2, 0x01, "invalid QN %d", h.QN)
	}
	rtr, f := qp.rtrCheck(seg)
	if f != nil {
		return f
	}
	if rtr == rtrSend {
		// The Send RTR uses MSN 1 of QN 0 but no receive buffer.
		qp.recvMSN[0]++
		seg.rtr = true
		return nil
	}
	if is7306(seg.ctl.Opcode) {
		return qp.rx7306(seg)
	}
	switch h.QN {
	case decode.QNSend:
		return qp.rxSend(seg)
	case decode.QNReadReq:
		return qp.rxReadRequest(seg)
	default:
		return qp.rxTerminate(seg)
	}
}

// rxRecvBuf returns the receive buffer of the untagged QN 0 message seg
// belongs to: the one in progress, or (on its first segment) the RQ's or
// SRQ's oldest, after the MSN and buffer checks (RFC 5041 §7.2). Sends and
// RFC 7306 Immediate Data each consume one (RFC 7306 §6.3).
func (qp *QP) rxRecvBuf(seg *rxSeg) (*rqe, *fault) {
	h := &seg.h
	if qp.cur != nil && h.MSN != qp.curMSN {
		return nil, ddpFault(decode.TermLayerRDMAP, 2, 0x07, "MSN %d starts before message %d had its L segment", h.MSN, qp.curMSN)
	}
	r := qp.cur
	if r == nil {
		var n int
		if srq := qp.attr.SRQ; srq != nil && h.MSN == qp.recvMSN[0] {
			// A new message takes the SRQ's oldest receive.
			var fired bool
			if r, fired = srq.take(); r != nil {
				n = 1
			}
			if fired {
				qp.dev.unaffiliated(AsyncEvent{Type: EventSRQLimitReached, SRQ: srq})
			}
		} else if srq != nil {
			n = srq.Len()
		} else {
			qp.mu.Lock()
			n = len(qp.rq)
			if n > 0 {
				r = qp.rq[0]
			}
			qp.mu.Unlock()
		}
		if n == 0 && h.MSN == qp.recvMSN[0] {
			return nil, ddpFault(decode.TermLayerDDP, 2, 0x02, "Send MSN %d: no receive buffer posted", h.MSN)
		}
		if h.MSN != qp.recvMSN[0] {
			return nil, ddpFault(decode.TermLayerDDP, 2, 0x03, "Send MSN %d, expected %d (%d buffers posted)", h.MSN, qp.recvMSN[0], n)
		}
		qp.cur, qp.curMSN, qp.curLen = r, h.MSN, 0
	}
	return r, nil
}

func (qp *QP) rxSend(seg *rxSeg) *fault {
	h := &seg.h
	r, f := qp.rxRecvBuf(seg)
	if f != nil {
		return f
	}
	if uint64(h.MO) > r.size {
		f := ddpFault(decode.TermLayerDDP, 2, 0x04, "MO %d beyond the %d-octet receive buffer", h.MO, r.size)
		f.rqStatus = StatusLocalLength
		return f
	}
	if uint64(h.MO)+uint64(seg.plen) > r.size {
		f := ddpFault(decode.TermLayerDDP, 2, 0x05, "Send of %d+ octets into a %d-octet receive buffer", uint64(h.MO)+uint64(seg.plen), r.size)
		f.rqStatus = StatusLocalLength
		return f
	}
	if seg.ctl.RV != decode.RDMAPVersion {
		return ddpFault(decode.TermLayerRDMAP, 2, 0x05, "RDMAP version %d", seg.ctl.RV)
	}
	switch seg.ctl.Opcode {
	case decode.OpSend, decode.OpSendSE, decode.OpSendInv, decode.OpSendSEInv:
	default:
		return ddpFault(decode.TermLayerRDMAP, 2, 0x06, "opcode %v on QN 0", seg.ctl.Opcode)
	}
	// Scatter the payload at MO over the receive buffer, each part under
	// its region's pin: a receive buffer whose region was revoked after it
	// was posted takes nothing (V00 §7.8).
	off, pay := uint64(h.MO), seg.pay
	for i, p := range r.parts {
		if len(pay) == 0 {
			break
		}
		if off >= uint64(len(p)) {
			off -= uint64(len(p))
			continue
		}
		n := min(len(pay), len(p)-int(off))
		if !r.mrs[i].pinKey(r.keys[i]) {
			f := ddpFault(decode.TermLayerDDP, 2, 0x02, "receive buffer's region %v was invalidated", r.keys[i])
			f.rqStatus = StatusInvalidSTag
			return f
		}
		copy(p[off:off+uint64(n)], pay[:n])
		r.mrs[i].unpin()
		pay = pay[n:]
		off = 0
	}
	qp.curLen = max(qp.curLen, uint64(h.MO)+uint64(seg.plen))
	return nil
}

func (qp *QP) rxReadRequest(seg *rxSeg) *fault {
	h := &seg.h
	if h.MSN != qp.recvMSN[1] {
		return ddpFault(decode.TermLayerDDP, 2, 0x03, "Read Request MSN %d, expected %d", h.MSN, qp.recvMSN[1])
	}
	if qp.attr.DisableRemoteRead {
		// V00 uses Invalid QN for "inbound RDMA Read disabled".
		return ddpFault(decode.TermLayerDDP, 2, 0x01, "inbound RDMA Read disabled on this QP")
	}
	qp.mu.Lock()
	busy, ird := qp.irrqBusy, qp.ird
	qp.mu.Unlock()
	if busy >= ird {
		return ddpFault(decode.TermLayerDDP, 2, 0x03, "Read Request beyond IRD %d", ird)
	}
	if seg.ctl.RV != decode.RDMAPVersion {
		return ddpFault(decode.TermLayerRDMAP, 2, 0x05, "RDMAP version %d", seg.ctl.RV)
	}
	if seg.ctl.Opcode != decode.OpReadRequest {
		return ddpFault(decode.TermLayerRDMAP, 2, 0x06, "opcode %v on QN 1", seg.ctl.Opcode)
	}
	if h.MO != 0 {
		return ddpFault(decode.TermLayerDDP, 2, 0x04, "Read Request with MO %d", h.MO)
	}
	if !h.Last || seg.plen != decode.ReadReqHdrLen {
		return ddpFault(decode.TermLayerRDMAP, 2, 0x06, "Read Request of %d octets (L=%v), not one 28-octet segment", seg.plen, h.Last)
	}
	copy(seg.rdma[:], seg.pay)
	seg.hasRR = true
	return nil
}

func (qp *QP) rxTerminate(seg *rxSeg) *fault {
	if seg.ctl.Opcode != decode.OpTerminate {
		return ddpFault(decode.TermLayerRDMAP, 2, 0x06, "opcode %v on QN 2", seg.ctl.Opcode)
	}
	return nil
}

// rxDeliver runs the message-level (RDMAP) part once a valid FPDU was
// placed: receive completions, Read Request validation, Read Response
// completion, Terminate processing.
func (qp *QP) rxDeliver(seg *rxSeg) *fault {
	h := &seg.h
	qp.openGate()
	if seg.rtr {
		return nil
	}
	if h.Tagged {
		if seg.ctl.Opcode == decode.OpWrite {
			if h.Last {
				qp.cnt.rxWrites.Add(1)
			}
			qp.cnt.rxPayload.Add(uint64(seg.plen))
			return nil
		}
		qp.cnt.rxPayload.Add(uint64(seg.plen))
		qp.mu.Lock()
		if len(qp.orq) == 0 {
			qp.unlock()
			return nil
		}
		o := qp.orq[0]
		o.got += uint64(seg.plen)
		if h.Last {
			if o.got != o.size {
				qp.unlock()
				return ddpFault(decode.TermLayerRDMAP, 2, 0x07, "Read Response of %d octets for a Read of %d", o.got, o.size)
			}
			qp.orq[0] = nil
			qp.orq = qp.orq[1:]
			if w := o.wqe; w != nil && w.wr.Opcode == OpReadInv {
				// Invalidate Local STag of the sink after the response is
				// placed and before the Read completes (V00 §7.8, §9.3.1);
				// a failure is a completion error (Fig. 23).
				qp.unlock()
				be := qp.localInvalidate(o.sink)
				qp.mu.Lock()
				if be != nil {
					qp.terminateLocked(localTerm(0x0, 0x0, 0x00, be.reason), w, be.st)
				}
			}
			if o.wqe != nil && !o.wqe.done {
				o.wqe.done = true
				qp.completeSQLocked()
			}
			qp.cnt.rxReadResps.Add(1)
			qp.kickTx() // an ORD slot is free
		}
		qp.unlock()
		return nil
	}
	if is7306(seg.ctl.Opcode) {
		return qp.deliver7306(seg)
	}
	switch h.QN {
	case decode.QNSend:
		if seg.rtr {
			return nil
		}
		qp.cnt.rxPayload.Add(uint64(seg.plen))
		if !h.Last {
			return nil
		}
		r := qp.cur
		wc := WorkCompletion{WRID: r.wr.WRID, Opcode: OpRecv, ByteLen: uint32(qp.curLen), QPNum: qp.num}
		op := seg.ctl.Opcode
		wc.Solicited = op == decode.OpSendSE || op == decode.OpSendSEInv
		if op == decode.OpSendInv || op == decode.OpSendSEInv {
			inv := STag(h.RsvdULP2)
			// The STag is invalidated after Placement and before the
			// receive completes (V00 §8.2.2.1).
			if e := qp.dev.invalidateRemote(inv, qp); e != accOK || inv == 0 {
				f := ddpFault(decode.TermLayerRDMAP, 1, 0x09, "Send with Invalidate of STag %v: %v", inv, e)
				f.rqStatus = StatusInvalidateError
				return f
			}
			wc.Invalidated, wc.InvalidatedSTag = true, inv
		}
		qp.cnt.rxSends.Add(1)
		qp.completeRecv(r, wc)
		return nil
	case decode.QNReadReq:
		var rr decode.ReadRequest
		decode.ParseReadRequest(seg.rdma[:], &rr)
		qp.recvMSN[1]++
		qp.cnt.rxReadReqs.Add(1)
		e := &irrqEntry{req: rr, hdr: seg.hdr}
		if rr.Size > 0 {
			// RDMAP protection checks on the Data Source (RFC 5040 §7.2,
			// V00 Fig. 24); a zero-size Read is not validated (§5.2.1).
			// They run again when the response is sent (revocation).
			if _, _, ae := qp.dev.check(STag(rr.SrcSTag), qp, AccessRemoteRead, rr.SrcTO, uint64(rr.Size)); ae != accOK {
				f := ddpFault(decode.TermLayerRDMAP, 1, readCode(ae), "Read Request source STag 0x%08x TO 0x%x size %d: %v", rr.SrcSTag, rr.SrcTO, rr.Size, ae)
				f.rdma = true
				return f
			}
		}
		if h := qp.attr.OnReadRequest; h != nil {
			h(rr)
		}
		qp.mu.Lock()
		qp.irrq = append(qp.irrq, e)
		qp.irrqBusy++
		qp.kickTx()
		qp.unlock()
		return nil
	default:
		var t decode.Terminate
		qp.recvMSN[2]++
		qp.cnt.rxTerminates.Add(1)
		tbuf := seg.pay[:min(len(seg.pay), 256)]
		if _, err := decode.ParseTerminate(tbuf, &t); err != nil && len(tbuf) < decode.TermCtrlLen {
			t = decode.Terminate{Layer: 0, EType: 0, Code: 0}
		}
		// Keep private copies of the aliased header octets.
		t.TermDDPRaw = append([]byte(nil), t.TermDDPRaw...)
		t.TermRDMARaw = append([]byte(nil), t.TermRDMARaw...)
		ti := TermInfo{Local: false, Cause: t.Cause(), Header: t}
		if alt := decode.ParseTermControlSiw(t.Raw).Cause(); alt.Known && !t.SiwEncoding && alt != ti.Cause {
			ti.SiwCause = &alt
		}
		qp.mu.Lock()
		qp.terminateLocked(ti, qp.headStarted(), StatusRemoteTermination)
		qp.unlock()
		return nil
	}
}

// readCode is the RDMAP Remote Protection Error code of a failed check on
// a Read Request's Data Source (RFC 5040 §4.8).
func readCode(e accessErr) uint8 {
	return map[accessErr]uint8{accInvalidSTag: 0x00, accBounds: 0x01, accRights: 0x02, accPD: 0x03, accWrap: 0x04}[e]
}

// headStarted is the oldest SQ WR in progress, which a received Terminate
// fails with Remote Termination.
func (qp *QP) headStarted() *sqe {
	if len(qp.sq) > 0 && qp.sq[0].started {
		return qp.sq[0]
	}
	return nil
}

// rxFault builds the Terminate for f (RFC 5040 §7.1 and Fig. 10): DDP
// Segment Length and the offending DDP header for DDP errors and RDMAP errors
// on incoming messages, plus the Read Request header for errors on a Read
// Request; nothing for LLP errors.
func (qp *QP) rxFault(seg *rxSeg, f *fault) {
	t := decode.Terminate{Layer: f.layer, EType: f.etype, Code: f.code}
	if f.ddp && seg.hlen > 0 && f.layer != decode.TermLayerLLP {
		t.M, t.D = true, true
		t.HasSegLen, t.HasDDP = true, true
		t.DDPSegmentLength = uint16(seg.plen)
		decode.ParseDDP(seg.hdr[:seg.hlen], &t.TermDDP)
		t.TermDDPRaw = append([]byte(nil), seg.hdr[:seg.hlen]...)
		if f.rdma && seg.hasRR {
			t.R, t.HasRDMA = true, true
			decode.ParseReadRequest(seg.rdma[:], &t.TermRDMA)
			t.TermRDMARaw = append([]byte(nil), seg.rdma[:]...)
		}
	}
	ti := TermInfo{Local: true, Cause: decode.LookupTermCause(f.layer, f.etype, f.code), Header: t, Reason: f.reason}
	qp.mu.Lock()
	if f.rqStatus != StatusSuccess && qp.cur != nil {
		r := qp.cur
		if len(qp.rq) > 0 && qp.rq[0] == r {
			qp.rq[0] = nil
			qp.rq = qp.rq[1:]
		}
		qp.cur = nil
		qp.pushLocked(qp.attr.RecvCQ, WorkCompletion{WRID: r.wr.WRID, Opcode: OpRecv, Status: f.rqStatus, QPNum: qp.num, Err: &TerminateError{Info: ti}})
		qp.termWhy = termCQE // reported in a completion, not as an async error (V00 §6.2.3)
	}
	qp.terminateLocked(ti, nil, 0)
	qp.unlock()
}

// llpEnd handles the end of the byte stream. A FIN on an FPDU boundary with
// no work outstanding is a normal close (RTS → Closing → Idle); with SQ WRs
// or inbound Reads outstanding it is a Bad LLP Close, answered with a
// Terminate 0x0/0x2/0x07 (V00 §6.2, RD-23). Anything else is an LLP failure.
func (qp *QP) llpEnd(err error, boundary bool) error {
	if errors.Is(err, errBadClose) {
		qp.abort(errBadClose, EventBadClose)
		return err
	}
	if !errors.Is(err, io.EOF) || !boundary {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("endpoint: LLP: %w", err)
	}
	qp.mu.Lock()
	qp.remoteFin = true
	if s := qp.s; s != nil && s.tap != nil {
		s.tap.fin(false)
	}
	switch qp.state {
	case StateRTS:
		// Outstanding: SQ WRs not yet handed to the LLP, RDMA Reads waiting
		// for their response, inbound Reads not yet being answered. A
		// message whose octets were written is not: the peer may have read
		// it and closed before the send engine retired the WR.
		if qp.sqNext < len(qp.sq) || qp.orqUser() || len(qp.irrq) > 0 {
			qp.terminateLocked(localTerm(0x0, 0x2, 0x07, "peer closed the LLP with work outstanding (Bad LLP Close)"), qp.headStarted(), StatusLocalTermination)
			qp.unlock()
			return nil
		}
		qp.state = StateClosing
	}
	qp.unlock()
	return nil
}

func (qp *QP) orqUser() bool {
	for _, o := range qp.orq {
		if o.wqe != nil {
			return true
		}
	}
	return false
}

// drain discards what the peer still sends after a Terminate went either
// way, until it closes or the drain deadline passes.
func (qp *QP) drain(s *stream) error {
	s.rr, s.rw = 0, 0
	_, err := io.Copy(io.Discard, s.c)
	if err == nil || errors.Is(err, net.ErrClosed) {
		return nil
	}
	// The final timeout while the peer has not closed is an LLP error
	// (V00 §6.2.3), as is a reset.
	return err
}

// completeRecv completes receive r, the one the untagged message on QN 0
// consumed (a Send, or RFC 7306 Immediate Data): it leaves the RQ, the
// queue's MSN advances, its completion goes to the receive CQ, and the RQ
// limit event fires once when the RQ falls below the limit set
// (V00 §6.3).
func (qp *QP) completeRecv(r *rqe, wc WorkCompletion) {
	qp.mu.Lock()
	if len(qp.rq) > 0 && qp.rq[0] == r {
		qp.rq[0] = nil
		qp.rq = qp.rq[1:]
	}
	qp.cur = nil
	qp.recvMSN[0]++
	qp.pushLocked(qp.attr.RecvCQ, wc)
	if qp.rqLimit > 0 && len(qp.rq) < qp.rqLimit && qp.attr.SRQ == nil {
		qp.rqLimit = 0 // one-shot
		qp.eventLocked(EventRQLimitReached, nil)
	}
	qp.unlock()
}
