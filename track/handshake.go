package track

import (
	"errors"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
)

// handshake checks one MPA Request or Reply frame (RFC 5044 §7.1.1, RFC
// 6581 §6, §9) and, once both are seen, the pair.
func (c *conn) handshake(at *At, f *decode.MPAFrame) {
	dir := at.Dir & 1
	st := &c.hs
	c.observe(at)
	if !f.Reply {
		if dir != I2R {
			c.finding(finding.MPAKeyInvalid, dir, at, st.reqFrame, "the Responder sent a frame with the Request key %q where the Reply key %q belongs (RFC 5044 §7.1.1)", decode.MPAKeyReq, decode.MPAKeyRep)
			return
		}
		if st.sawReq || c.d[I2R].seen {
			c.finding(finding.MPAFrameUnexpected, dir, at, st.reqFrame, "a second MPA Request (the Initiator already sent one or FPDUs): the MPA exchange happens once per connection (RFC 5044 §7.1)")
			return
		}
		st.sawReq, st.reqFrame, st.reqTime = true, at.Frame, at.Time
		st.req = frameInfoOf(f)
		if f.Rev == 1 && !f.HasV2 {
			c.v1Request(at)
		}
	} else {
		if dir != R2I {
			c.finding(finding.MPAKeyInvalid, dir, at, st.reqFrame, "the Initiator sent a frame with the Reply key %q where the Request key %q belongs (RFC 5044 §7.1.1)", decode.MPAKeyRep, decode.MPAKeyReq)
			return
		}
		if st.sawRep || c.d[R2I].seen {
			c.finding(finding.MPAFrameUnexpected, dir, at, st.repFrame, "a second MPA Reply (the Responder already sent one or FPDUs): the MPA exchange happens once per connection (RFC 5044 §7.1)")
			return
		}
		st.sawRep, st.repFrame = true, at.Frame
		st.rep = frameInfoOf(f)
		st.repHasSeq, st.repEnd = at.HasSeq, at.End
	}
	// The exchange marks the start of full operation: both directions'
	// untagged queues start at MSN 1 (RFC 5041 §5.1) and no request was
	// sent before.
	for i := range c.d {
		if !c.d[i].seen {
			for q := range c.d[i].q {
				c.d[i].q[q] = queue{known: true, next: 1}
			}
			c.reads[i].reqUncertain = false
			c.atomics[i].reqUncertain = false
		}
	}
	c.checkFrame(at, dir, f)
	if st.sawReq && st.sawRep {
		c.settle(at)
	}
}

func frameInfoOf(f *decode.MPAFrame) frameInfo {
	return frameInfo{
		flags: f.Flags, res: f.Res, rev: f.Rev, pd: f.PDLength,
		markers: f.Markers, crc: f.CRC, reject: f.Reject, s: f.Enhanced,
		hasV2: f.HasV2, v2: f.V2,
	}
}

func frameName(f *decode.MPAFrame) string {
	if f.Reply {
		return "Reply"
	}
	return "Request"
}

// checkFrame checks one frame on its own.
func (c *conn) checkFrame(at *At, dir Dir, f *decode.MPAFrame) {
	name := frameName(f)
	switch {
	case f.ERDMA:
		// Alibaba erdma (Linux erdma_cm.c) sends Rev 129 and refuses
		// every other revision; it is a named variant, not an unknown
		// one: one note per connection.
		if c.once(NoDir, finding.MPARevERDMA) {
			c.finding(finding.MPARevERDMA, dir, at, 0, "MPA %s Rev 129: Alibaba erdma's MPA_REVISION_EXT_1, not an RFC revision; an 8-octet extension (cookie 0x%08x, congestion control %d) follows PD_Length, which does not count it; RFC 5044 peers close the connection (§7.1.1)", name, f.ERDMAExt.Cookie, f.ERDMAExt.CC())
		}
	case f.Rev > 2:
		c.finding(finding.MPARevUnknown, dir, at, 0, "MPA %s Rev %d: RFC 5044 senders use 1, RFC 6581 uses 2; a receiver that cannot work with it closes the connection (RFC 5044 §7.1.1)", name, f.Rev)
	case f.Rev == 0 && c.once(NoDir, finding.MPARev0):
		c.finding(finding.MPARev0, dir, at, 0, "MPA %s Rev 0: RDMA Consortium MPA; expect DDP/RDMAP version 0 (or 1 from cxgb3-style peers) with markers and CRC (RFC 5044 App. C)", name)
	}
	if !f.Reply && f.Reject {
		c.finding(finding.MPARequestRejectBit, dir, at, 0, "MPA Request with R set: R is sent as 0 in a Request and not checked (RFC 5044 §7.1.1)")
	}
	if f.PDLength > decode.MPAMaxPDLength {
		c.finding(finding.MPAPDLengthInvalid, dir, at, 0, "MPA %s PD_Length %d exceeds 512: the receiver closes the connection (RFC 5044 §7.1.1)", name, f.PDLength)
	}
	res := f.Res
	if f.Rev >= 2 && res&decode.MPAFlagGSO != 0 {
		res &^= decode.MPAFlagGSO
		c.finding(finding.MPASiwGSO, dir, at, 0, "MPA %s sets 0x08, Linux siw's GSO experiment (MPA_RR_FLAG_GSO_EXP): its sender may send FPDUs larger than one TCP segment", name)
	}
	if res != 0 {
		c.finding(finding.MPAResBits, dir, at, 0, "MPA %s reserved flag bits 0x%02x set: sent as 0, not checked (RFC 5044 §7.1.1, RFC 6581 §6)", name, res)
	}
	if f.Enhanced && (f.Rev < 2 || f.PDLength < decode.MPAv2Len) {
		c.finding(finding.MPAEnhancedInvalid, dir, at, 0, "MPA %s sets S (0x10) with Rev %d and PD_Length %d: S needs Rev >= 2 and the 4-octet IRD/ORD block (RFC 6581 §6)", name, f.Rev, f.PDLength)
	}
	if f.HasV2 && !f.V2.PeerToPeer && (f.V2.ZeroLenSendRTR || f.V2.ZeroLenWriteRTR || f.V2.ZeroLenReadRTR) {
		c.finding(finding.MPARTRBitsIgnored, dir, at, 0, "MPA %s sets RTR types (%s) without A: they are sent as 0 and ignored in the client-server model (RFC 6581 §9.2)", name, rtrTypes(f.V2))
	}
}

func rtrTypes(v decode.MPAv2) string {
	s := ""
	add := func(ok bool, n string) {
		if ok {
			if s != "" {
				s += ", "
			}
			s += n
		}
	}
	add(v.ZeroLenSendRTR, "send")
	add(v.ZeroLenWriteRTR, "write")
	add(v.ZeroLenReadRTR, "read")
	if s == "" {
		return "none"
	}
	return s
}

// settle checks the Request/Reply pair (RFC 6581 §9, §10) and records the
// negotiated parameters.
func (c *conn) settle(at *At) {
	st := &c.hs
	rq, rp := &st.req, &st.rep
	st.crc = rq.crc || rp.crc
	// M in a frame asks for markers in FPDUs sent to that frame's sender
	// (RFC 5044 §7.1.1).
	st.markers[R2I], st.markers[I2R] = rq.markers, rp.markers
	st.gso[I2R] = rq.rev >= 2 && rq.res&decode.MPAFlagGSO != 0
	st.gso[R2I] = rp.rev >= 2 && rp.res&decode.MPAFlagGSO != 0
	st.rejected = rp.reject
	if rp.reject {
		c.finding(finding.MPAReject, R2I, at, st.reqFrame, "MPA Reply rejects the connection (R=1): no FPDUs follow; the TCP connection is left to the ULP (RFC 5044 §7.1.2 rules 2-3)")
	}
	if rq.s != rp.s {
		c.finding(finding.MPAEnhancedMismatch, R2I, at, st.reqFrame, "MPA Request S=%t but Reply S=%t: an RFC 6581 Responder mirrors the Request's form, other Responders close instead of replying (RFC 6581 §10)", rq.s, rp.s)
	}
	st.enhanced = rq.hasV2 && rp.hasV2
	if !st.enhanced {
		return
	}
	a, b := rq.v2, rp.v2
	if a.PeerToPeer != b.PeerToPeer {
		c.finding(finding.MPAP2PMismatch, R2I, at, st.reqFrame, "MPA Request A=%t but Reply A=%t: the Responder must copy A (RFC 6581 §9.2); the Initiator answers with Terminate 0x2/0x0/0x07", a.PeerToPeer, b.PeerToPeer)
	}
	st.p2p = a.PeerToPeer && b.PeerToPeer && !rp.reject
	st.rtrOK = [3]bool{b.ZeroLenSendRTR, b.ZeroLenWriteRTR, b.ZeroLenReadRTR}
	if b.PeerToPeer && !rp.reject && !b.ZeroLenSendRTR && !b.ZeroLenWriteRTR && !b.ZeroLenReadRTR {
		c.finding(finding.MPARTRNoneOffered, R2I, at, st.reqFrame, "peer-to-peer MPA Reply accepts no RTR type (B, C, D all 0): a Reply with A=1 carries at least one (RFC 6581 §9.2)")
	}
	const none = decode.MPAv2NoNegotiation
	switch {
	case a.ORD == none && b.IRD != none:
		c.finding(finding.MPAIRDORDViolation, R2I, at, st.reqFrame, "Request ORD 0x3FFF (no IRD/ORD negotiation) but Reply IRD %d: the Responder must answer 0x3FFF (RFC 6581 §9.1)", b.IRD)
	case a.IRD == none && b.ORD != none:
		c.finding(finding.MPAIRDORDViolation, R2I, at, st.reqFrame, "Request IRD 0x3FFF (no IRD/ORD negotiation) but Reply ORD %d: the Responder must answer 0x3FFF (RFC 6581 §9.1)", b.ORD)
	case a.IRD != none && b.ORD != none && b.ORD > a.IRD && !rp.reject:
		c.finding(finding.MPAIRDORDViolation, R2I, at, st.reqFrame, "Responder ORD %d exceeds Initiator IRD %d: the Responder's ORD must not exceed the Initiator's IRD (RFC 6581 §9.1); the Initiator raises its IRD or sends Terminate 0x2/0x0/0x06", b.ORD, a.IRD)
	}
	// Read Requests sent by the Initiator go to the Responder's IRD; those
	// sent by the Responder to the Initiator's IRD, which it raises to at
	// least the Responder's ORD (RFC 6581 §9.1).
	if b.IRD != none && a.ORD != none {
		st.readLimit[I2R] = int(b.IRD)
	}
	if a.IRD != none && b.ORD != none {
		st.readLimit[R2I] = max(int(a.IRD), int(b.ORD))
	}
}

// badFrame reports an MPA frame the framer could not parse.
func (c *conn) badFrame(at *At, err error) {
	dir := at.Dir & 1
	var de *decode.Error
	field := ""
	if errors.As(err, &de) {
		field = de.Field
	}
	if field == "mpa.key" {
		c.finding(finding.MPAKeyInvalid, dir, at, 0, "MPA frame with an invalid key (%v): the receiver closes the connection and reports locally, no Terminate (RFC 5044 §7.1.1, §7.1.2)", err)
		return
	}
	c.finding(finding.MPAPDLengthInvalid, dir, at, 0, "MPA frame improperly formatted (%v): the receiver closes the connection (RFC 5044 §7.1.1, §7.1.2 rule 9)", err)
}
