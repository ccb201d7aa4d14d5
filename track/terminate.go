package track

import (
	"fmt"
	"strings"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
)

// terminate decodes a Terminate sent in dir in its context (RFC 5040 §4.8,
// §5.4, §7.1; RD-17..RD-21, RD-25, MPA-23).
func (c *conn) terminate(at *At, p *decode.PDU, dir Dir) {
	s := &p.Seg
	t := &s.Terminate
	c.st.Dir[dir].Ops.Terminates++
	ts := &c.term[dir]
	if ts.sent {
		c.finding(finding.RDMAPTerminateRepeat, dir, at, ts.frame, "a second Terminate from the %s (the first: frame %d): one Terminate per stream direction (RFC 5040 §5.4)", dir.Sender(), ts.frame)
	} else {
		ts.sent, ts.frame, ts.hasSeq, ts.end = true, at.Frame, at.HasSeq, at.End
	}
	c.terminated = true
	if o := &c.term[dir^1]; o.sent && o.frame != at.Frame {
		switch {
		case at.HasAck && o.hasSeq:
			if seqGE(at.Ack, o.end) {
				c.finding(finding.RDMAPTermAfterTerminate, dir, at, o.frame, "the %s answered the Terminate of frame %d with a Terminate (its ACK covers it): a received Terminate is never answered with one (V00 §6.2.2.3)", dir.Sender(), o.frame)
			}
		default:
			c.finding(finding.RDMAPTermAfterTerminate, dir, at, o.frame, "the %s sent a Terminate after the one of frame %d from its peer (by capture order; without ACKs they may have crossed): a received Terminate is never answered with one (V00 §6.2.2.3)", dir.Sender(), o.frame)
		}
	}

	rep := &c.t.tr
	*rep = TerminateReport{Conn: c.id, Dir: dir, Frame: at.Frame, Time: at.Time}
	ctl := t.Control()
	cause := t.Cause()
	rfc := decode.ParseTermControl(t.Raw)
	rep.Siw = t.SiwEncoding
	v00 := rfc.Cause()
	if t.SiwEncoding && !v00.Known && v00.Layer == decode.TermLayerRDMAP && v00.EType == 2 && (v00.Code == 2 || v00.Code == 3) && !rfc.M && !rfc.D && !rfc.R {
		// 02 02 / 02 03 without flags: siw's reading (LLP CRC / marker
		// error) or a 2003-era device writing V00's 16-bit LLP codes
		// (draft-differences §5). Keep siw's only if the context allows it.
		if ok, _ := c.plausible(cause, dir); !ok {
			rep.Siw = false
			ctl, cause = rfc, v00
		}
	}
	if rep.Siw {
		c.finding(finding.MPASiwTerminateEncoding, dir, at, 0, "Terminate control word % x is in Linux siw's bit-field encoding (Layer/EType nibbles swapped, M/D/R in 0x01/0x02/0x04 of octet 2; reference §5.1): read as %s%s; the RFC 5040 reading would be %s%s", t.Raw[:], cause, flagStr(ctl), rfc.Cause(), flagStr(rfc))
	} else if siw := decode.ParseTermControlSiw(t.Raw); siw != rfc && siw.Reserved == 0 && !siw.M && !siw.D && !siw.R && !rfc.M && !rfc.D && !rfc.R && siw.Cause().Known && cause.Known {
		// Both readings are defined and neither carries headers: only the
		// context can tell (decode.ParseTerminate).
		rp, why := c.plausible(rfc.Cause(), dir)
		sp, _ := c.plausible(siw.Cause(), dir)
		switch {
		case !rp && sp:
			rep.Siw, rep.Ambiguous, rep.Alt = true, true, rfc.Cause()
			ctl, cause = siw, siw.Cause()
			c.finding(finding.MPASiwTerminateEncoding, dir, at, 0, "Terminate control word % x is ambiguous: RFC 5040 reads %s, Linux siw's encoding (reference §5.1) reads %s; took siw's, since %s", t.Raw[:], rfc.Cause(), siw.Cause(), why)
		case rp && sp:
			rep.Ambiguous, rep.Alt = true, siw.Cause()
			c.finding(finding.MPASiwTerminateEncoding, dir, at, 0, "Terminate control word % x is ambiguous: RFC 5040 reads %s, Linux siw's encoding (reference §5.1) reads %s; both fit the context, kept the RFC reading", t.Raw[:], rfc.Cause(), siw.Cause())
		}
	}
	rep.Cause, rep.M, rep.D, rep.R = cause, ctl.M, ctl.D, ctl.R

	// RD-20: is the Terminate well formed?
	h := &s.DDP
	switch {
	case p.SegErr != nil && c.curPartial:
	case p.SegErr != nil:
		c.finding(finding.RDMAPTerminateMalformed, dir, at, 0, "Terminate ends before the headers its M/D/R bits announce (%v) (RFC 5040 §4.8)", p.SegErr)
	case !h.Last || h.MO != 0:
		c.finding(finding.RDMAPTerminateMalformed, dir, at, 0, "Terminate in a segment with MO %d, L=%t: it is a single untagged message (RFC 5040 §4.8, §5.4)", h.MO, h.Last)
	case len(s.Payload) > 0:
		c.finding(finding.RDMAPTerminateMalformed, dir, at, 0, "%d octets after the headers the Terminate's M/D/R bits announce (RFC 5040 §4.8)", len(s.Payload))
	}
	if !cause.Known {
		if cause.Layer == decode.TermLayerRDMAP && cause.EType == 2 && (cause.Code == 2 || cause.Code == 3) {
			what := "CRC error"
			if cause.Code == 3 {
				what = "bad FPDU"
			}
			c.finding(finding.RDMAPTerminateV00Code, dir, at, 0, "Terminate code 0x0/0x2/0x%02x is undefined in RFC 5040; it is probably the 2003 verbs draft's 16-bit LLP code 0x020%d (%s), RFC 5044's 0x2/0x0/0x%02x (draft-differences.md §5)", cause.Code, cause.Code, what, cause.Code)
		} else {
			c.finding(finding.RDMAPTerminateMalformed, dir, at, 0, "Terminate cause %s is not defined (RFC 5040 §4.8, RFC 5041 §7.2, RFC 5044 §8, RFC 6581 §8)", cause)
		}
	}
	if ctl.Reserved != 0 && c.once(dir, finding.RDMAPRsvNonzero) {
		c.finding(finding.RDMAPRsvNonzero, dir, at, 0, "Terminate Reserved bits 0x%04x: 0 on send, ignored on receive (RFC 5040 §4.8)", ctl.Reserved)
	}
	noHeaders := (cause.Layer == decode.TermLayerRDMAP && cause.EType == 0) || cause.Layer == decode.TermLayerLLP
	var cop decode.Opcode
	if t.HasDDP {
		cop = decode.ParseRDMAPControl(t.TermDDP.RsvdULP).Opcode
	}
	switch {
	case noHeaders && (ctl.D || ctl.R):
		c.finding(finding.RDMAPTerminateMalformed, dir, at, 0, "%s Terminate carries headers (D=%t R=%t): local catastrophic and LLP errors copy none (RFC 5040 §7.1 Fig. 10, V00 §6.4)", cause.Short(), ctl.D, ctl.R)
	case ctl.R && cause.Layer == decode.TermLayerDDP:
		c.finding(finding.RDMAPTerminateMalformed, dir, at, 0, "DDP-layer Terminate with R set: DDP errors copy the DDP header only (RFC 5040 §7.1 Fig. 10)")
	case t.HasRDMA && t.HasDDP && (t.TermDDP.Tagged || t.TermDDP.QN != decode.QNReadReq || cop != decode.OpReadRequest):
		if cop == decode.OpAtomicRequest || cop == decode.OpAtomicResponse || cop == decode.OpImmData || cop == decode.OpImmDataSE {
			c.finding(finding.RDMAPTerminateMalformed, dir, at, 0, "Terminate for an %s sets R: errors on RFC 7306 messages copy the DDP header only (RFC 7306 §8.1)", cop)
		} else {
			c.finding(finding.RDMAPTerminateMalformed, dir, at, 0, "Terminate sets R but the copied DDP header is a %s, not a Read Request (RFC 5040 §4.8)", cop)
		}
	case ctl.R && !t.HasRDMA && t.HasDDP && !rep.Siw && cop != decode.OpSendInv && cop != decode.OpSendSEInv:
		c.finding(finding.RDMAPTerminateMalformed, dir, at, 0, "Terminate sets R but no Read Request header follows the copied %s header (RFC 5040 §4.8)", cop)
	}

	// RD-21: link to the blamed segment.
	if t.HasDDP && p.SegErr == nil {
		c.blame(at, dir, t, cause, rep)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Terminate from the %s: %s", dir.Sender(), cause)
	if !cause.AnyCode && cause.Note != "" {
		fmt.Fprintf(&b, " (%s)", cause.Note)
	}
	switch rep.Verdict {
	case VerdictNoHeader:
		b.WriteString("; no header copied")
	case VerdictUnmatched, VerdictUnknown:
		b.WriteString("; the blamed segment is not in the capture")
	default:
		fmt.Fprintf(&b, "; blames the %s of frame %d: %s", rep.BlamedOpcode, rep.BlamedFrame, rep.Verdict)
		if rep.Reason != "" {
			fmt.Fprintf(&b, " (%s)", rep.Reason)
		}
	}
	if rep.SiwReadMSN {
		b.WriteString("; the copied MSN holds the Read size, as siw writes it")
	}
	if cause.Layer == decode.TermLayerRDMAP && cause.EType == 2 && cause.Code == 6 && rep.BlamedOpcode.Extension() && rep.BlamedFrame != 0 {
		b.WriteString("; the peer does not implement RFC 7306 (RFC 7306 §1.1)")
	}
	b.WriteString("; outstanding operations become indeterminate (RFC 5040 §6.2.1)")
	c.finding(finding.RDMAPTerminate, dir, at, rep.BlamedFrame, "%s", b.String())
	c.noReceive(at, dir, cause, rep)
	if c.t.cfg.OnTerminate != nil {
		c.t.cfg.OnTerminate(rep)
	}
}

func flagStr(c decode.TermControl) string {
	s := ""
	if c.M {
		s += " M"
	}
	if c.D {
		s += " D"
	}
	if c.R {
		s += " R"
	}
	return s
}

// plausible says whether a Terminate cause fits the connection's state:
// LLP causes name conditions the capture can rule out.
func (c *conn) plausible(cause decode.TermCause, dir Dir) (bool, string) {
	if cause.Layer != decode.TermLayerLLP {
		return true, ""
	}
	hs := &c.hs
	hsSeen := hs.sawReq && hs.sawRep
	switch cause.Code {
	case 2:
		if hsSeen && !hs.crc {
			return false, "no CRC was negotiated, so an MPA CRC error cannot occur"
		}
	case 3:
		if hsSeen && !hs.markers[dir^1] {
			return false, "no markers were negotiated toward its sender, so a marker error cannot occur"
		}
	case 4, 5, 6, 7:
		if !c.curFirst {
			return false, fmt.Sprintf("%s is a start-up error (RFC 6581 §9) but FPDUs already flowed", cause.Short())
		}
		if cause.Code >= 5 && hsSeen && !hs.enhanced {
			return false, fmt.Sprintf("%s belongs to RFC 6581 enhanced setup, which this connection did not use", cause.Short())
		}
	}
	return true, ""
}

// blame finds the segment a Terminate's copied DDP header names among
// those sent to the Terminate's sender, and judges it.
func (c *conn) blame(at *At, dir Dir, t *decode.Terminate, cause decode.TermCause, rep *TerminateReport) {
	od := dir.Other()
	d := &c.d[od]
	cp := &t.TermDDP
	var best *histEntry
	n := uint64(len(d.hist))
	reason := ""
	for k := uint64(0); k < n && k < d.histN; k++ {
		e := &d.hist[(d.histN-1-k)%n]
		switch {
		case cp.Tagged:
			if e.hdr.Tagged && e.hdr.STag == cp.STag && e.hdr.TO == cp.TO {
				best = e
			}
		case t.HasRDMA:
			// Match a Read Request by its header: a partly served one
			// comes back with SinkTO/SrcTO advanced and the size reduced
			// (RFC 5040 §4.8).
			a, b := &e.rr, &t.TermRDMA
			done := uint64(a.Size) - uint64(b.Size)
			if e.op == decode.OpReadRequest && !e.hdr.Tagged && a.SinkSTag == b.SinkSTag && a.SrcSTag == b.SrcSTag && b.Size <= a.Size && a.SinkTO+done == b.SinkTO && a.SrcTO+done == b.SrcTO {
				best = e
			}
		default:
			if !e.hdr.Tagged && e.hdr.QN == cp.QN && e.hdr.MSN == cp.MSN && e.hdr.MO == cp.MO {
				best = e
			}
		}
		if best != nil {
			break
		}
	}
	if best == nil {
		if d.histGap || d.histN > n {
			rep.Verdict = VerdictUnknown
			return
		}
		rep.Verdict = VerdictUnmatched
		c.finding(finding.RDMAPTerminateBlameUnmatched, dir, at, 0, "the Terminate copies a %s header that matches no segment the %s sent (RFC 5040 §7.1): a corrupted copy, or a segment the capture missed", copyDesc(cp, t), od.Sender())
		return
	}
	rep.BlamedFrame, rep.BlamedOpcode = best.frame, best.op
	if t.HasRDMA && !cp.Tagged && cp.MSN != best.hdr.MSN {
		if cp.MSN == t.TermRDMA.Size || cp.MSN == best.rr.Size {
			rep.SiwReadMSN = true
		} else {
			reason = fmt.Sprintf("the copied MSN %d differs from the Read Request's MSN %d", cp.MSN, best.hdr.MSN)
		}
	}
	v, why := judge(cause, t, best)
	if reason != "" {
		v, why = VerdictInconsistent, reason
	}
	if v != VerdictInconsistent && t.M && t.HasSegLen {
		sl := int(t.DDPSegmentLength)
		if sl != best.ulpdu && sl != best.dlen && sl != best.plen {
			v, why = VerdictInconsistent, fmt.Sprintf("DDP Segment Length %d matches neither the blamed segment's ULPDU (%d), DDP payload (%d) nor ULP payload (%d)", sl, best.ulpdu, best.dlen, best.plen)
		}
	}
	rep.Verdict, rep.Reason = v, why
	if v == VerdictInconsistent {
		c.finding(finding.RDMAPTerminateInconsistent, dir, at, best.frame, "the Terminate (%s) blames the %s of frame %d, but %s (RFC 5040 §7.1)", cause.Short(), best.op, best.frame, why)
	}
}

func copyDesc(cp *decode.DDPHeader, t *decode.Terminate) string {
	op := decode.ParseRDMAPControl(cp.RsvdULP).Opcode
	if cp.Tagged {
		return fmt.Sprintf("%s (STag 0x%x TO 0x%x)", op, cp.STag, cp.TO)
	}
	if t.HasRDMA {
		return fmt.Sprintf("%s (QN %d MSN %d, SinkSTag 0x%x SrcSTag 0x%x size %d)", op, cp.QN, cp.MSN, t.TermRDMA.SinkSTag, t.TermRDMA.SrcSTag, t.TermRDMA.Size)
	}
	return fmt.Sprintf("%s (QN %d MSN %d MO %d)", op, cp.QN, cp.MSN, cp.MO)
}

// judge says whether the blamed segment e fits the Terminate's cause.
func judge(cause decode.TermCause, t *decode.Terminate, e *histEntry) (Verdict, string) {
	op := e.op
	hdr := &e.hdr
	flagged := func(codes ...finding.Code) bool {
		for _, k := range codes {
			if e.flagged == k {
				return true
			}
		}
		return false
	}
	consistent := func() (Verdict, string) {
		return VerdictConsistent, "the capture shows it: " + e.flagged.String()
	}
	switch cause.Layer {
	case decode.TermLayerDDP:
		switch cause.EType {
		case 1: // tagged buffer
			if !hdr.Tagged {
				return VerdictInconsistent, "a tagged-buffer error blames an untagged segment"
			}
			switch cause.Code {
			case 0x00:
				if flagged(finding.DDPSTagZero, finding.RDMAPSTagInvalidatedUse) {
					return consistent()
				}
			case 0x01:
				if flagged(finding.RDMAPReadResponseTooLong) {
					return consistent()
				}
			case 0x03:
				if flagged(finding.DDPTOWrap) {
					return consistent()
				}
				return VerdictInconsistent, fmt.Sprintf("TO 0x%x + %d octets does not wrap", hdr.TO, e.dlen)
			case 0x04:
				if hdr.DV == decode.DDPVersion {
					return VerdictInconsistent, "the blamed segment has DDP Version 1"
				}
				return VerdictConsistent, "the blamed segment's DDP Version is not 1"
			}
		case 2: // untagged buffer
			if hdr.Tagged {
				return VerdictInconsistent, "an untagged-buffer error blames a tagged segment"
			}
			switch cause.Code {
			case 0x01:
				switch {
				case hdr.QN > decode.QNAtomicResp:
					return VerdictConsistent, fmt.Sprintf("QN %d is invalid", hdr.QN)
				case hdr.QN == decode.QNReadReq:
					return VerdictPlausible, "QN 1: inbound RDMA Read (or atomics) may be disabled at the peer"
				case hdr.QN == decode.QNAtomicResp:
					return VerdictPlausible, "QN 3: the peer may not implement RFC 7306"
				}
				return VerdictInconsistent, fmt.Sprintf("QN %d is valid for RDMAP", hdr.QN)
			case 0x02, 0x03:
				if flagged(finding.DDPMSNGap, finding.DDPMSNRepeat) {
					return consistent()
				}
			case 0x04:
				if flagged(finding.DDPMOGap, finding.DDPMOOverlap, finding.DDPMOWrap) {
					return consistent()
				}
			case 0x06:
				if hdr.DV == decode.DDPVersion {
					return VerdictInconsistent, "the blamed segment has DDP Version 1"
				}
				return VerdictConsistent, "the blamed segment's DDP Version is not 1"
			}
		}
	case decode.TermLayerRDMAP:
		switch cause.EType {
		case 1: // remote protection
			switch op {
			case decode.OpReadRequest, decode.OpSendInv, decode.OpSendSEInv, decode.OpAtomicRequest:
			default:
				return VerdictInconsistent, fmt.Sprintf("Remote Protection errors come from Read Requests and Sends with Invalidate, not from a %s (RFC 5040 §4.8 Fig. 10)", op)
			}
			switch cause.Code {
			case 0x00:
				if flagged(finding.RDMAPSTagZero, finding.RDMAPSTagInvalidatedUse) {
					return consistent()
				}
			case 0x04:
				if op == decode.OpReadRequest {
					if flagged(finding.RDMAPReadTOWrap) {
						return consistent()
					}
					return VerdictInconsistent, "the Read Request's TO + size does not wrap"
				}
			}
		case 2: // remote operation
			switch cause.Code {
			case 0x05:
				if decode.ParseRDMAPControl(hdr.RsvdULP).RV == decode.RDMAPVersion {
					return VerdictInconsistent, "the blamed segment has RDMAP Version 1"
				}
				return VerdictConsistent, "the blamed segment's RDMAP Version is not 1"
			case 0x06:
				if flagged(finding.RDMAPOpcodeUnexpected, finding.RDMAPOpcodeMismatch, finding.RDMAPReadResponseUnmatched, finding.RDMAPAtomicResponseUnmatched) {
					return consistent()
				}
				if op.Extension() {
					return VerdictPlausible, "the peer does not implement RFC 7306"
				}
			}
		}
	}
	if e.flagged != 0 {
		return VerdictConsistent, "the capture shows an error in it: " + e.flagged.String()
	}
	return VerdictPlausible, "the cause depends on state a capture cannot show"
}

// noReceive says in plain words what a DDP "Invalid MSN - no buffer
// available" Terminate (RFC 5041 §7.2, untagged buffer error 0x02) almost
// always means: the receiver had no receive posted when a Send arrived
// (Linux siw terminates so on an empty receive queue). The sender's Send,
// and everything after it, completes in error (rping and perftest report a
// failed work completion), and the connection is over.
func (c *conn) noReceive(at *At, dir Dir, cause decode.TermCause, rep *TerminateReport) {
	if cause.Layer != decode.TermLayerDDP || cause.EType != 2 || cause.Code != 0x02 {
		return
	}
	send := "a Send"
	if rep.BlamedFrame != 0 && rep.BlamedOpcode.QN() == decode.QNSend {
		send = fmt.Sprintf("the %s of frame %d", rep.BlamedOpcode, rep.BlamedFrame)
	}
	c.finding(finding.RDMAPNoReceivePosted, dir, at, rep.BlamedFrame, "no receive posted: the %s had no receive buffer for %s from the %s, so it Terminated (DDP untagged buffer error, Invalid MSN - no buffer available, RFC 5041 §7.2); the sender's Send completes in error and the connection ends. The receiving application must post receives (ibv_post_recv) before its peer sends",
		dir.Sender(), send, (dir ^ 1).Sender())
}
