package track

import (
	"errors"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
)

// pdu processes one FPDU. MPA-level checks come first, then DDP checks
// per segment, then RDMAP checks on messages (receiver-checks.md:
// "Processing order matters").
func (c *conn) pdu(at *At, p *decode.PDU) Mark {
	dir := at.Dir & 1
	d := &c.d[dir]
	st := &c.st.Dir[dir]
	var mark Mark
	if d.afterError {
		mark |= MarkAfterError
		st.AfterError++
	}
	if c.term[dir].sent {
		mark |= MarkAfterTerminate
		st.AfterTerminate++
	}
	st.FPDUs++
	st.ULPDUOctets += uint64(ulpduLen(p))

	c.observe(at)
	first := !d.seen
	if first {
		d.seen = true
		d.firstFrame, d.firstTime = at.Frame, at.Time
		d.firstHasSeq, d.firstSeq, d.firstEnd = at.HasSeq, at.Seq, at.End
	}
	c.curFirst = first

	if !c.hs.sawReq && !c.hs.sawRep && !c.notedNoHS {
		c.notedNoHS = true
		c.finding(finding.TrackNoHandshake, NoDir, at, 0, "FPDUs without an MPA Request/Reply: the capture started mid-stream or the peers started directly; MSNs and request matching start from what is seen (draft-differences.md §7)")
	}
	if c.hs.rejected && c.once(dir, finding.MPAFPDUAfterReject) {
		c.finding(finding.MPAFPDUAfterReject, dir, at, c.hs.repFrame, "FPDU from the %s after the Reply (frame %d) rejected the connection: both ends leave MPA, the stream is the ULP's (RFC 5044 §7.1.2 rules 2-3)", dir.Sender(), c.hs.repFrame)
	}
	c.framing(at, p, dir, d, first)

	c.curPartial = at.Missing > 0
	crc := p.CRCStatus
	if c.curPartial {
		crc = decode.CRCUnknown // the CRC field was not captured
	}
	switch crc {
	case decode.CRCBad:
		st.CRCBad++
		c.finding(finding.MPACRCBad, dir, at, 0, "MPA CRC 0x%08x on the wire, 0x%08x computed: the FPDU is invalid; MPA reports error 0x2/0x0/0x02 or drops it silently so that TCP retransmits (RFC 5044 §4.4, §8)", p.FPDU.CRC, p.ComputedCRC)
		d.badCRC, d.badCRCValid, d.badCRCSeq, d.badCRCFrame = true, at.HasSeq, at.Seq, at.Frame
		// Nothing in a corrupt FPDU can be trusted: treat it as lost.
		c.loseN(dir, 1)
		return mark | MarkCRCBad
	case decode.CRCGood:
		st.CRCGood++
	}
	if d.badCRC {
		d.badCRC = false
		if d.badCRCValid && at.HasSeq && at.Seq == d.badCRCSeq {
			c.finding(finding.MPACRCRetransmitted, dir, at, d.badCRCFrame, "the FPDU that failed its CRC in frame %d was retransmitted with a good CRC: the receiver dropped it silently and TCP recovered (RFC 5044 §8)", d.badCRCFrame)
			if d.afterError && d.errorFrame == d.badCRCFrame {
				d.afterError = false
			}
		}
	}

	isTerm := !p.Seg.DDP.Tagged && p.Seg.RDMAP.Opcode == decode.OpTerminate
	c.curRTR = false
	if first {
		c.startup(at, p, dir, isTerm)
	}
	o := dir.Other()
	if at.HasAck {
		if ts := &c.term[o]; ts.sent && ts.hasSeq && seqGE(at.Ack, ts.end) && !isTerm && c.once(dir, finding.RDMAPSentAfterPeerTerminate) {
			c.finding(finding.RDMAPSentAfterPeerTerminate, dir, at, ts.frame, "the %s keeps sending after receiving the Terminate of frame %d (its ACK covers it): allowed, it MAY stop (RFC 5040 §5.4)", dir.Sender(), ts.frame)
		}
		if f := &c.fin[o]; f.seen && f.kind == CloseFIN && f.hasSeq && seqGE(at.Ack, f.seq+1) && !isTerm && c.once(dir, finding.RDMAPDataAfterClose) {
			c.finding(finding.RDMAPDataAfterClose, dir, at, f.frame, "the %s sends data after receiving the FIN of frame %d (its ACK covers it): the closing side resets with 'Bad Close' (V00 §6.2, Closing state)", dir.Sender(), f.frame)
		}
	}

	loseAfter := false
	if p.SegErr != nil && c.curPartial {
		// The headers were cut by the capture, not by the sender: what
		// they held is unknown, as after a gap.
		var de *decode.Error
		if !errors.As(p.SegErr, &de) || de.Layer == "ddp" {
			c.lose(dir)
			return mark | MarkUncertain
		}
		loseAfter = true
	}
	if p.SegErr != nil {
		var de *decode.Error
		if !errors.As(p.SegErr, &de) || de.Layer == "ddp" {
			hl := decode.DDPUntaggedHdrLen
			if len(p.FPDU.ULPDU) > 0 && p.FPDU.ULPDU[0]&decode.DDPFlagT != 0 {
				hl = decode.DDPTaggedHdrLen
			}
			c.finding(finding.MPAULPDUTooShort, dir, at, 0, "ULPDU_Length %d is shorter than the %d-octet DDP header (RFC 5041 §4; V00 'segment size invalid' 0x1/0x0/0x00)", ulpduLen(p), hl)
			return mark
		}
	}
	mark |= c.segment(at, p, dir)
	if loseAfter {
		c.lose(dir)
		mark |= MarkUncertain
	}
	return mark
}

// framing checks PAD, markers and MULPDU (MPA-18..21).
func (c *conn) framing(at *At, p *decode.PDU, dir Dir, d *dirState, first bool) {
	for _, b := range p.FPDU.Pad {
		if b != 0 {
			if c.once(dir, finding.MPAPadNonzero) {
				c.finding(finding.MPAPadNonzero, dir, at, 0, "FPDU PAD holds % x: zero on send, ignored on receive except by the CRC (RFC 5044 §4.1)", p.FPDU.Pad)
			}
			break
		}
	}
	hs := &c.hs
	// Markers sit at s0 + k*512, s0 being where the direction's first FPDU
	// starts (RFC 5044 §4.3); only s0 mod 512 matters. Known from the
	// first FPDU after an MPA exchange, else from the first marker seen.
	if !d.s0Known && at.HasSeq {
		switch {
		case first && hs.sawReq && hs.sawRep:
			d.s0, d.s0Known = at.Seq, true
		case len(p.Markers) > 0:
			d.s0, d.s0Known = p.Markers[0].Pos, true
		}
	}
	s0 := d.s0
	posKnown := at.HasSeq && d.s0Known
	if len(p.Markers) > 0 {
		if hs.sawReq && hs.sawRep && !hs.markers[dir] && c.once(dir, finding.MPAMarkersUnexpected) {
			c.finding(finding.MPAMarkersUnexpected, dir, at, 0, "markers in FPDUs from the %s, whose peer did not ask for them (M=0): MPA must not add markers then (RFC 5044 §7.1.1)", dir.Sender())
		}
		for i := range p.Markers {
			m := &p.Markers[i]
			if m.Marker.Reserved != 0 && c.once(dir, finding.MPAMarkerReserved) {
				c.finding(finding.MPAMarkerReserved, dir, at, 0, "marker at stream position %d has Reserved 0x%04x: zero on send, ignored on receive (RFC 5044 §4.2)", m.Pos, m.Marker.Reserved)
			}
			if posKnown {
				if want := decode.ExpectedFPDUPTR(m.Pos, at.Seq, s0); m.Marker.FPDUPTR&^3 != want {
					c.finding(finding.MPAMarkerMismatch, dir, at, 0, "marker at stream position %d has FPDUPTR %d, but the FPDU starting at %d needs %d: MPA error 0x2/0x0/0x03 (RFC 5044 §4.2-4.3, §8)", m.Pos, m.Marker.FPDUPTR, at.Seq, want)
				}
			}
		}
	} else if hs.markers[dir] && posKnown && at.End != at.Seq {
		if next := decode.NextMarkerPos(at.Seq, s0); int32(next-at.End) < 0 && c.once(dir, finding.MPAMarkersMissing) {
			c.finding(finding.MPAMarkersMissing, dir, at, 0, "no marker in the FPDU at %d..%d although the %s's peer asked for markers and one is due at %d (RFC 5044 §4.3, §7.1.1)", at.Seq, at.End, dir.Sender(), next)
		}
	}
	if mss := c.mss[dir]; mss > 0 && !hs.gso[dir] {
		if lim := decode.MULPDU(mss, hs.markers[dir]); ulpduLen(p) > lim && c.once(dir, finding.MPAULPDUExceedsMULPDU) {
			c.finding(finding.MPAULPDUExceedsMULPDU, dir, at, 0, "ULPDU of %d octets exceeds the MULPDU %d of an EMSS of %d (RFC 5044 §4.5): the FPDU cannot fit one TCP segment", ulpduLen(p), lim, mss)
		}
	}
}

// startup checks the first FPDU of a direction against the MPA start-up
// rules (RFC 5044 §7.1.2 rules 3-4, RFC 6581 §5, §9.3).
func (c *conn) startup(at *At, p *decode.PDU, dir Dir, isTerm bool) {
	hs := &c.hs
	if !hs.sawReq && !hs.sawRep {
		return
	}
	if dir == I2R {
		switch {
		case !hs.sawRep:
			c.finding(finding.MPAFPDUBeforeReply, dir, at, hs.reqFrame, "the Initiator sent an FPDU before the MPA Reply was seen: it enters full operation only after receiving a valid Reply (RFC 5044 §7.1.2 rule 3)")
		case at.HasAck && hs.repHasSeq && !seqGE(at.Ack, hs.repEnd):
			c.finding(finding.MPAFPDUBeforeReply, dir, at, hs.repFrame, "the Initiator sent its first FPDU with ACK %d, short of the end of the Reply (frame %d, %d): it had not received the Reply (RFC 5044 §7.1.2 rule 3)", at.Ack, hs.repFrame, hs.repEnd)
		}
		// A Terminate may replace the RTR (RFC 6581 §9.2-9.3: Insufficient
		// IRD resources, no matching RTR).
		if hs.p2p && !isTerm {
			c.checkRTR(at, p)
		}
		return
	}
	i := &c.d[I2R]
	code, what := finding.MPAResponderSentFirst, "the Initiator's first FPDU"
	rule := "RFC 5044 §7.1.2 rule 4"
	if hs.p2p {
		code, what, rule = finding.MPAFPDUBeforeRTR, "the Initiator's RTR", "RFC 5044 §7.1.2 rule 4, RFC 6581 §5"
	}
	switch {
	case !i.seen && !i.histGap:
		c.finding(code, dir, at, 0, "the Responder sent an FPDU before %s was seen: it must receive and validate one first (%s)", what, rule)
	case i.seen && at.HasAck && i.firstHasSeq && !seqGE(at.Ack, i.firstEnd):
		c.finding(code, dir, at, i.firstFrame, "the Responder's first FPDU carries ACK %d, short of the end of %s (frame %d, %d): it had not received it (%s)", at.Ack, what, i.firstFrame, i.firstEnd, rule)
	}
}

// checkRTR checks the peer-to-peer Initiator's first FPDU (MPA-14, MPA-12).
func (c *conn) checkRTR(at *At, p *decode.PDU) {
	s := &p.Seg
	h := &s.DDP
	op := s.RDMAP.Opcode
	dlen := ulpduLen(p) - h.Len()
	kind := -1
	switch {
	case p.SegErr != nil:
	case h.Tagged && op == decode.OpWrite && dlen == 0 && h.Last:
		kind = 1
	case !h.Tagged && (op == decode.OpSend || op == decode.OpSendSE) && h.QN == 0 && h.MSN == 1 && h.MO == 0 && h.Last && dlen == 0:
		kind = 0
	case !h.Tagged && op == decode.OpReadRequest && h.QN == 1 && h.MSN == 1 && h.Last && s.ReadRequest.Size == 0:
		kind = 2
	}
	if kind < 0 {
		c.finding(finding.MPARTRMissing, I2R, at, c.hs.repFrame, "peer-to-peer: the Initiator's first FPDU is a %s of %d octets, not a zero-length RTR (Send QN 0 MSN 1, Write, or Read Request of size 0) (RFC 6581 §5, §9.3)", opName(p), dlen)
		return
	}
	names := [3]string{"send", "write", "read"}
	c.hs.rtr = names[kind]
	c.curRTR = true
	if !c.hs.rtrOK[kind] {
		var b decode.MPAv2
		b.ZeroLenSendRTR, b.ZeroLenWriteRTR, b.ZeroLenReadRTR = c.hs.rtrOK[0], c.hs.rtrOK[1], c.hs.rtrOK[2]
		c.finding(finding.MPARTRTypeMismatch, I2R, at, c.hs.repFrame, "peer-to-peer: the Initiator sent a zero-length %s RTR, but the Reply (frame %d) accepts only %s (RFC 6581 §9.2)", names[kind], c.hs.repFrame, rtrTypes(b))
	}
}

func opName(p *decode.PDU) string {
	if p.SegErr != nil && ulpduLen(p) < decode.DDPTaggedHdrLen {
		return "segment"
	}
	return p.Seg.RDMAP.Opcode.String()
}

// segment runs the DDP and RDMAP checks of one segment.
func (c *conn) segment(at *At, p *decode.PDU, dir Dir) Mark {
	s := &p.Seg
	h := &s.DDP
	st := &c.st.Dir[dir]
	op := s.RDMAP.Opcode
	dlen := ulpduLen(p) - h.Len()
	plen := len(s.Payload)
	st.Segments[opIndex(op)]++
	st.PayloadOctets += uint64(plen)
	st.Octets[opIndex(op)] += uint64(plen)
	c.segActive, c.segFlag = true, 0

	if ts := &c.term[dir]; ts.sent && !(op == decode.OpTerminate && !h.Tagged) && c.once(dir, finding.RDMAPAfterTerminate) {
		c.finding(finding.RDMAPAfterTerminate, dir, at, ts.frame, "the %s sent a %s after its own Terminate (frame %d): after a Terminate nothing more is sent on the stream (RFC 5040 §5.4)", dir.Sender(), op, ts.frame)
	}
	c.versions(at, dir, h.DV, s.RDMAP.RV)
	c.d[dir].prevL = h.Last
	if h.Rsvd != 0 && c.once(dir, finding.DDPRsvdNonzero) {
		c.finding(finding.DDPRsvdNonzero, dir, at, 0, "DDP control Rsvd bits 0x%x set: 0 on send, not checked on receive (RFC 5041 §4.1)", h.Rsvd)
	}
	if s.RDMAP.Rsv != 0 && c.once(dir, finding.RDMAPRsvNonzero) {
		c.finding(finding.RDMAPRsvNonzero, dir, at, 0, "RDMAP control Rsv bits 0x%x set: 0 on send, ignored on receive (RFC 5040 §4.1)", s.RDMAP.Rsv)
	}
	opOK := true
	switch {
	case !op.Known():
		what := "unassigned"
		if op == decode.OpExperimental {
			what = "reserved for experimental use"
		}
		c.finding(finding.RDMAPOpcodeUnexpected, dir, at, 0, "RDMAP opcode 0x%x is %s: the receiver answers Terminate 0x0/0x2/0x06 Unexpected OpCode (RFC 5040 §4.1, RFC 6580 §3.4)", uint8(op), what)
		opOK = false
	case op.Extension():
		if c.once(NoDir, finding.RDMAPExtension) {
			c.finding(finding.RDMAPExtension, dir, at, 0, "RFC 7306 extension in use (%s): not negotiated on the wire; a peer without it answers Terminate 0x0/0x2/0x06 (RFC 7306 §1.1)", op)
		}
	}
	var mark Mark
	if h.Tagged {
		if opOK && !op.Tagged() {
			c.finding(finding.RDMAPOpcodeMismatch, dir, at, 0, "%s in a tagged DDP segment (STag 0x%x): it is an untagged message (RFC 5040 §4.1 Fig. 4, RFC 7306 §4.1)", op, h.STag)
			opOK = false
		}
		mark = c.tagged(at, p, dir, opOK, dlen)
	} else {
		if h.QN > decode.QNAtomicResp {
			// once per message
			d := &c.d[dir]
			if !(d.badQNValid && d.badQN == h.QN && d.badQNMSN == h.MSN && h.MO != 0) {
				c.finding(finding.DDPQNInvalid, dir, at, 0, "untagged segment on QN %d: RDMAP uses QN 0 (Send), 1 (Read/Atomic Request), 2 (Terminate), 3 (Atomic Response); Terminate 0x1/0x2/0x01 (RFC 5040 §3.1, RFC 7306 §10.2)", h.QN)
			}
			d.badQNValid, d.badQN, d.badQNMSN = true, h.QN, h.MSN
			if opOK {
				c.stray(at, p, dir)
			}
		} else {
			if opOK && (op.Tagged() || op.QN() != h.QN) {
				if op.Tagged() {
					c.finding(finding.RDMAPOpcodeMismatch, dir, at, 0, "%s in an untagged DDP segment (QN %d): it is a tagged message (RFC 5040 §4.1 Fig. 4)", op, h.QN)
				} else {
					c.finding(finding.RDMAPOpcodeMismatch, dir, at, 0, "%s on QN %d: it belongs on QN %d (RFC 5040 §4.1, RFC 7306 §4.1 Fig. 2)", op, h.QN, op.QN())
					c.stray(at, p, dir)
				}
				opOK = false
			}
			if opOK && op != decode.OpSendInv && op != decode.OpSendSEInv && s.InvalidateSTag != 0 && c.once(dir, finding.RDMAPInvSTagNonzero) {
				c.finding(finding.RDMAPInvSTagNonzero, dir, at, 0, "%s carries Invalidate STag 0x%x: only Send with Invalidate uses the field; 0 on send, ignored on receive (RFC 5040 §4.1, RFC 7306 §4.1)", op, s.InvalidateSTag)
			}
			mark = c.untagged(at, p, dir, opOK, dlen)
		}
	}
	if mark&MarkUncertain != 0 {
		st.Uncertain++
	}
	c.segActive = false
	c.remember(at, p, dir, dlen, plen)
	return mark
}

// versions checks DV and RV (DDP-01, RD-01, draft-differences §7). The
// stream's versions are 1 after an IETF MPA exchange, else what its first
// segment carries; each run of segments with other versions is reported
// once.
func (c *conn) versions(at *At, dir Dir, dv, rv uint8) {
	d := &c.d[dir]
	// A new message restarts the run: each message with other versions is
	// reported (a receiver rejects each).
	starts := d.prevL
	if d.verSet {
		bad := dv != d.dv
		if bad && (!d.inBadDV || starts) {
			c.finding(finding.DDPDVInvalid, dir, at, 0, "DDP Version %d where the stream uses %d: it is the same for every segment (RFC 5041 §4.1); Terminate 0x1/0x1/0x04 or 0x1/0x2/0x06", dv, d.dv)
		}
		d.inBadDV = bad
		bad = rv != d.rv
		if bad && (!d.inBadRV || starts) {
			c.finding(finding.RDMAPRVInvalid, dir, at, 0, "RDMAP Version %d where the stream uses %d (RFC 5040 §4.1); Terminate 0x0/0x2/0x05", rv, d.rv)
		}
		d.inBadRV = bad
		return
	}
	hs := &c.hs
	ietf := hs.sawReq && hs.sawRep && hs.req.rev >= 1 && hs.rep.rev >= 1
	d.verSet, d.dv, d.rv = true, dv, rv
	switch {
	case dv > 1:
		c.finding(finding.DDPDVInvalid, dir, at, 0, "DDP Version %d: only 1 (RFC 5041) and 0 (RDMA Consortium) exist; Terminate 0x1/0x1/0x04 or 0x1/0x2/0x06 (RFC 5041 §4.1, §7.2)", dv)
		d.dv = 1
	case dv == 0 && ietf:
		c.finding(finding.DDPDVInvalid, dir, at, 0, "DDP Version 0 (RDMA Consortium) after an MPA Rev %d/%d exchange: RFC 5041 §4.1 requires 1 (draft-differences §7)", hs.req.rev, hs.rep.rev)
		d.dv = 1
	default:
		if o := &c.d[dir^1]; o.verSet && dv != o.dv {
			c.finding(finding.DDPDVInvalid, dir, at, o.firstFrame, "DDP Version %d here but %d in the other direction: both directions use one version (RFC 5041 §4.1, RFC 5044 App. C)", dv, o.dv)
		}
	}
	switch {
	case rv > 1:
		c.finding(finding.RDMAPRVInvalid, dir, at, 0, "RDMAP Version %d: only 01b (RFC 5040) and 00b (RDMA Consortium) exist; Terminate 0x0/0x2/0x05 (RFC 5040 §4.1, §7.2)", rv)
		d.rv = 1
	case rv == 0 && ietf:
		c.finding(finding.RDMAPRVInvalid, dir, at, 0, "RDMAP Version 00b (RDMA Consortium) after an MPA Rev %d/%d exchange; Terminate 0x0/0x2/0x05 (draft-differences §7)", hs.req.rev, hs.rep.rev)
		d.rv = 1
	case dv <= 1 && rv != dv:
		c.finding(finding.RDMAPRVInvalid, dir, at, 0, "RDMAP Version %d with DDP Version %d: the two versions switch together (RFC 5044 App. C, draft-differences §7)", rv, dv)
	}
	d.inBadDV, d.inBadRV = dv != d.dv, rv != d.rv
}

// remember records a sent segment for Terminate blame.
func (c *conn) remember(at *At, p *decode.PDU, dir Dir, dlen, plen int) {
	d := &c.d[dir]
	// The history grows as segments come (up to Limits.History) and then
	// wraps: a connection with a few segments does not hold 256 entries
	// (30 KB per direction, 3 GB for 100,000 connections).
	if n := uint64(len(d.hist)); d.histN == n && int(n) < c.t.lim.History {
		nh := make([]histEntry, min(max(2*int(n), 8), c.t.lim.History))
		copy(nh, d.hist)
		d.hist = nh
	}
	e := &d.hist[d.histN%uint64(len(d.hist))]
	d.histN++
	s := &p.Seg
	e.frame = at.Frame
	e.hdr = s.DDP
	e.op = s.RDMAP.Opcode
	e.ulpdu, e.dlen, e.plen = ulpduLen(p), dlen, plen
	e.flagged = c.segFlag
	if e.op == decode.OpReadRequest && !s.DDP.Tagged {
		e.rr = s.ReadRequest
	}
}

// ulpduLen is the FPDU's ULPDU length: ULPDU_Length, which for a partial
// FPDU (At.Missing) exceeds the octets captured.
func ulpduLen(p *decode.PDU) int {
	n := len(p.FPDU.ULPDU)
	if l := int(p.FPDU.ULPDULength); l > n {
		return l
	}
	return n
}

// stray applies the RDMAP semantics of a single-segment request, response
// or Terminate that came on the wrong queue: it was reported, but it is on
// the wire, and the peer may answer it (or its answer may be expected), so
// matching goes on as if it had come on its own queue. Without this one
// bad header would cascade into unmatched responses.
func (c *conn) stray(at *At, p *decode.PDU, dir Dir) {
	h := &p.Seg.DDP
	if p.SegErr != nil || !h.Last || h.MO != 0 {
		return
	}
	switch p.Seg.RDMAP.Opcode {
	case decode.OpReadRequest:
		c.readRequest(at, p, dir)
	case decode.OpAtomicRequest:
		c.atomicRequest(at, p, dir)
	case decode.OpAtomicResponse:
		c.atomicResponse(at, p, dir)
	case decode.OpTerminate:
		c.terminate(at, p, dir)
	}
}

// observe follows the TCP sequence space each direction has shown. An ACK
// beyond the octets the capture holds of the other direction means either
// that the capture lost them or that it shows them after the ACK (a capture
// point that reorders the two directions, as a multi-CPU host does on lo).
// The framer tells which, and reports a real loss as a gap (Gap); until it
// does, the other direction's queues become uncertain, silently, so that a
// response to a request the capture lost does not look unmatched.
func (c *conn) observe(at *At) {
	dir := at.Dir & 1
	c.lastFrame = max(c.lastFrame, at.Frame, at.LastFrame)
	if at.HasAck && !c.hs.rejected {
		o := &c.d[dir^1]
		if o.endKnown && int32(at.Ack-o.seenEnd) > 0 {
			o.seenEnd = at.Ack
			c.lose(dir ^ 1)
		}
	}
	if at.HasSeq {
		d := &c.d[dir]
		if !d.endKnown || int32(at.End-d.seenEnd) > 0 {
			d.seenEnd, d.endKnown = at.End, true
		}
	}
}
