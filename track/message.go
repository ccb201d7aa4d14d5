package track

import (
	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
)

// untagged reassembles untagged messages by (QN, MSN) and MO and checks
// the MSN sequence (DDP-05, DDP-06, DDP-14, DDP-15; RFC 5041 §5.3).
func (c *conn) untagged(at *At, p *decode.PDU, dir Dir, opOK bool, dlen int) Mark {
	s := &p.Seg
	h := &s.DDP
	d := &c.d[dir]
	q := &d.q[h.QN]
	var mark Mark
	mo := uint64(h.MO)
	n := uint64(dlen)
	end := mo + n
	if end >= 1<<32 {
		c.finding(finding.DDPMOWrap, dir, at, 0, "QN %d MSN %d: MO %d + %d octets reaches 2^32: an untagged message is shorter than 2^32 octets (RFC 5041 §5.3)", h.QN, h.MSN, h.MO, dlen)
	}
	if q.open {
		m := &q.m
		if h.MSN == m.msn {
			m.segs++
			m.last, m.end = at.last(), at.Time
			if (h.RsvdULP != m.ctl || s.InvalidateSTag != m.inv) && !m.warnedInc {
				m.warnedInc = true
				m.state = MsgInconsistent
				c.finding(finding.DDPSegmentInconsistent, dir, at, m.first, "QN %d MSN %d: RsvdULP (RDMAP control 0x%02x, Invalidate STag 0x%x) differs from the message's first segment (frame %d: 0x%02x, 0x%x): it is the same in every segment (RFC 5041 §4.3)", h.QN, h.MSN, h.RsvdULP, s.InvalidateSTag, m.first, m.ctl, m.inv)
			}
			switch {
			case mo == m.nextMO:
			case m.gapHit && mo > m.nextMO:
				// octets lost in a gap
				mark |= MarkUncertain
			case m.moFlag:
				// One finding per message: a segment that goes back after
				// a hole was reported fills the hole (segments sent out of
				// MO order).
			case mo > m.nextMO:
				m.moFlag = true
				m.state = MsgInconsistent
				c.finding(finding.DDPMOGap, dir, at, m.first, "QN %d MSN %d: segment at MO %d, but the message's octets end at %d: %d octets missing; segments are sent in MO order (RFC 5041 §5.3; Terminate 0x1/0x2/0x04)", h.QN, h.MSN, mo, m.nextMO, mo-m.nextMO)
			default:
				m.moFlag = true
				m.state = MsgInconsistent
				c.finding(finding.DDPMOOverlap, dir, at, m.first, "QN %d MSN %d: segment at MO %d overlaps octets already sent (up to MO %d) (RFC 5041 §5.3)", h.QN, h.MSN, mo, m.nextMO)
			}
			if end > m.nextMO {
				m.nextMO = end
			}
			m.length += n
			m.payload += uint64(len(s.Payload))
			m.cut = m.cut || c.curPartial
			if m.gapHit {
				mark |= MarkUncertain
			}
			if h.Last {
				c.endUntagged(at, dir, q, MsgComplete, "")
			}
			return mark
		}
		if !m.gapHit && !q.resync {
			c.finding(finding.DDPLMissing, dir, at, m.first, "QN %d: MSN %d starts while MSN %d (frames %d-%d) has no L segment: the L bit ends every message (RFC 5041 §4.1; V00 'No L bit' 0x0/0x2/0x07)", h.QN, h.MSN, m.msn, m.first, m.last)
		}
		c.endUntagged(at, dir, q, MsgIncomplete, "no L segment")
	}

	// A segment of the message that just ended with its L segment: sent
	// after the L segment, which goes last (RFC 5041 §4.1), typically
	// swapped with it.
	if l := &q.last; l.valid && h.MSN == l.msn && end <= l.end && !(mo == 0 && h.Last) && !q.resync {
		if !l.flagged {
			l.flagged = true
			c.finding(finding.DDPMOGap, dir, at, l.first, "QN %d MSN %d: segment at MO %d after the message's L segment (frames %d-%d): the L segment is sent after all others (RFC 5041 §4.1, §5.3)", h.QN, h.MSN, mo, l.first, l.lastFrame)
		}
		st := &c.st.Dir[dir]
		st.InconsistentMessages++
		return mark
	}

	// A new message.
	state := MsgComplete
	moFlag := false
	gapHit := false
	if d := int32(h.MSN - q.next); q.slack > 0 && !q.resync && q.known && d >= 0 && uint32(d) <= q.slack {
		// Up to slack messages (or the head of this one) were in the
		// FPDUs lost.
		mark |= MarkUncertain
		q.next = h.MSN + 1
		gapHit = mo != 0
		q.slack = 0
	} else if q.resync || !q.known {
		mark |= MarkUncertain
		q.known, q.next, q.resync = true, h.MSN+1, false
		// A message that starts at MO > 0 lost its head in the gap.
		gapHit = mo != 0
	} else {
		q.slack = 0
		diff := int32(h.MSN - q.next)
		switch {
		case diff == 0:
			q.next++
		case diff > 0:
			c.finding(finding.DDPMSNGap, dir, at, 0, "QN %d: MSN %d where %d was expected: %d message(s) missing; MSNs start at 1 and grow by one per message (RFC 5041 §5.1, §5.3; Terminate 0x1/0x2/0x03)", h.QN, h.MSN, q.next, uint32(diff))
			q.next = h.MSN + 1
		default:
			c.finding(finding.DDPMSNRepeat, dir, at, 0, "QN %d: MSN %d again (expected %d): each message takes the next MSN (RFC 5041 §5.1, §5.3; Terminate 0x1/0x2/0x03)", h.QN, h.MSN, q.next)
		}
		if mo != 0 {
			state, moFlag = MsgInconsistent, true
			c.finding(finding.DDPMOGap, dir, at, 0, "QN %d MSN %d starts at MO %d: a message's first segment has MO 0, segments go in MO order (RFC 5041 §5.3; Terminate 0x1/0x2/0x04)", h.QN, h.MSN, mo)
		}
	}
	// A Terminate may cut a message short: it goes out after the last
	// complete segment (RFC 5040 §7.1 rule 5, V00 §6.4 note 1).
	if s.RDMAP.Opcode != decode.OpTerminate {
		c.checkInterleave(at, dir, false, h.QN, 0)
	}
	q.open = true
	d.nOpenU++
	q.m = umsg{
		op: s.RDMAP.Opcode, ctl: h.RsvdULP, inv: s.InvalidateSTag, qn: h.QN, msn: h.MSN,
		nextMO: end, length: n, payload: uint64(len(s.Payload)), segs: 1,
		first: at.Frame, last: at.last(), start: at.Time, end: at.Time,
		state: state, gapHit: gapHit, opOK: opOK, rtr: c.curRTR, cut: c.curPartial, moFlag: moFlag,
	}
	if opOK {
		c.startUntagged(at, p, dir, q)
	}
	if h.Last {
		c.endUntagged(at, dir, q, MsgComplete, "")
	}
	return mark
}

// checkInterleave warns when a new message starts while another one of
// the same direction has not seen its L segment (DDP-15). Messages hit
// by a gap are left out: their L segment may be lost.
func (c *conn) checkInterleave(at *At, dir Dir, tagged bool, qn uint32, stag uint32) {
	d := &c.d[dir]
	if d.nOpenU == 0 && d.nOpenT == 0 {
		return
	}
	for i := range d.q {
		if m := &d.q[i]; m.open && !m.m.gapHit && (tagged || uint32(i) != qn) {
			c.finding(finding.DDPInterleaved, dir, at, m.m.first, "a new %s message starts while QN %d MSN %d (frame %d) has no L segment yet: messages are interleaved (RFC 5041 §5.3; implementations send one message at a time)", kindName(tagged), i, m.m.msn, m.m.first)
			return
		}
	}
	for i := range d.tg {
		if m := &d.tg[i]; m.active && !m.gapHit {
			c.finding(finding.DDPInterleaved, dir, at, m.first, "a new %s message starts while the tagged message to STag 0x%x (frame %d) has no L segment yet: messages are interleaved (RFC 5041 §5.3; implementations send one message at a time)", kindName(tagged), m.stag, m.first)
			return
		}
	}
}

func kindName(tagged bool) string {
	if tagged {
		return "tagged"
	}
	return "untagged"
}

// settleMessage decides how an ending message counts (tagged or untagged
// alike) and adds it to the direction's statistics: a message already found
// inconsistent stays so, and one that would be complete but was hit by a
// gap or cut by the capture is incomplete.
func (c *conn) settleMessage(dir Dir, op decode.Opcode, was MsgState, gapHit, cut bool, state MsgState, reason string, size uint64) (MsgState, string) {
	if was == MsgInconsistent {
		state = MsgInconsistent
	}
	switch {
	case state == MsgComplete && gapHit:
		state, reason = MsgIncomplete, "gap"
	case state == MsgComplete && cut:
		state, reason = MsgIncomplete, "octets not captured"
	}
	st := &c.st.Dir[dir]
	st.Messages[opIndex(op)]++
	switch state {
	case MsgComplete:
		st.MsgSizes.add(size)
	case MsgIncomplete:
		st.IncompleteMessages++
	case MsgInconsistent:
		st.InconsistentMessages++
	}
	return state, reason
}

// endUntagged ends the open message of q.
func (c *conn) endUntagged(at *At, dir Dir, q *queue, state MsgState, reason string) {
	m := &q.m
	q.open = false
	c.d[dir].nOpenU--
	q.last = lastMsg{valid: state == MsgComplete || state == MsgInconsistent, msn: m.msn, end: m.nextMO, first: m.first, lastFrame: m.last, flagged: m.moFlag}
	state, reason = c.settleMessage(dir, m.op, m.state, m.gapHit, m.cut, state, reason, m.payload)
	if m.opOK {
		c.endUntaggedOp(at, dir, m, state)
	}
	if c.t.cfg.OnMessage != nil {
		r := &c.t.msg
		*r = Message{
			Conn: c.id, Dir: dir, Opcode: m.op, QN: m.qn, MSN: m.msn,
			Length: m.length, Segments: m.segs, FirstFrame: m.first, LastFrame: m.last,
			Start: m.start, End: m.end, State: state, Reason: reason,
		}
		if m.op == decode.OpSendInv || m.op == decode.OpSendSEInv {
			r.InvalidateSTag = m.inv
		}
		c.t.cfg.OnMessage(r)
	}
}

// tagged reassembles tagged messages by STag and TO (DDP-08, DDP-11,
// DDP-14, DDP-15; RFC 5041 §5.2).
func (c *conn) tagged(at *At, p *decode.PDU, dir Dir, opOK bool, dlen int) Mark {
	s := &p.Seg
	h := &s.DDP
	d := &c.d[dir]
	n := uint64(dlen)
	var mark Mark
	if n > 0 && h.TO+n-1 < h.TO {
		c.finding(finding.DDPTOWrap, dir, at, 0, "%s to STag 0x%x: TO 0x%x + %d octets wraps 2^64; Terminate 0x1/0x1/0x03 (RFC 5041 §7.2)", s.RDMAP.Opcode, h.STag, h.TO, dlen)
	}
	var m *tmsg
	if d.nOpenT > 0 {
		for i := range d.tg {
			x := &d.tg[i]
			if x.active && x.stag == h.STag && (x.nextTO == h.TO || (x.gapHit && h.TO > x.nextTO)) {
				m = x
				break
			}
		}
	}
	if m != nil {
		if m.gapHit {
			mark |= MarkUncertain
		}
		m.segs++
		m.last, m.end = at.last(), at.Time
		if h.RsvdULP != m.ctl && !m.warnedInc {
			m.warnedInc = true
			m.state = MsgInconsistent
			c.finding(finding.DDPSegmentInconsistent, dir, at, m.first, "tagged message to STag 0x%x: RDMAP control 0x%02x differs from its first segment's 0x%02x (frame %d): RsvdULP is the same in every segment (RFC 5041 §4.2)", h.STag, h.RsvdULP, m.ctl, m.first)
		}
		if n > 0 && h.STag == 0 && !m.stagZero {
			m.stagZero = true
			c.finding(finding.DDPSTagZero, dir, at, m.first, "%s of %d octets to STag 0: STag 0 is never remotely usable; Terminate 0x1/0x1/0x00 (V00 §7.2.1, RFC 5041 §7.2)", m.op, dlen)
		}
		m.nextTO = h.TO + n
		m.length += n
		m.cut = m.cut || c.curPartial
		if m.op == decode.OpReadResponse && m.opOK {
			c.responseSegment(at, dir, m, n)
		}
		if h.Last {
			c.endTagged(at, dir, m, MsgComplete, "")
		}
		return mark
	}

	// A new tagged message. An open one to the same STag that does not
	// continue here has a TO discontinuity (DDP-15).
	warned := false
	for i := 0; d.nOpenT > 0 && i < len(d.tg); i++ {
		x := &d.tg[i]
		if x.active && x.stag == h.STag {
			if !x.gapHit {
				warned = true
				c.finding(finding.DDPInterleaved, dir, at, x.first, "STag 0x%x: segment at TO 0x%x while the open message (frames %d-%d) continues at TO 0x%x: TO discontinuity (RFC 5041 §5.2)", h.STag, h.TO, x.first, x.last, x.nextTO)
			}
			c.endTagged(at, dir, x, MsgIncomplete, "TO discontinuity")
		}
	}
	if !warned {
		c.checkInterleave(at, dir, true, 0, h.STag)
	}
	m = c.tagSlot(at, dir)
	d.nOpenT++
	*m = tmsg{
		active: true, op: s.RDMAP.Opcode, ctl: h.RsvdULP, stag: h.STag,
		firstTO: h.TO, nextTO: h.TO + n, length: n, segs: 1,
		first: at.Frame, last: at.last(), start: at.Time, end: at.Time,
		opOK: opOK, rtr: c.curRTR, cut: c.curPartial,
	}
	if n > 0 && h.STag == 0 {
		m.stagZero = true
		c.finding(finding.DDPSTagZero, dir, at, 0, "%s of %d octets to STag 0: STag 0 is never remotely usable; Terminate 0x1/0x1/0x00 (V00 §7.2.1, RFC 5041 §7.2)", s.RDMAP.Opcode, dlen)
	}
	if opOK {
		mark |= c.startTagged(at, dir, m, h.Last)
		if m.op == decode.OpReadResponse {
			c.responseSegment(at, dir, m, n)
		}
	}
	if h.Last {
		c.endTagged(at, dir, m, MsgComplete, "")
	}
	return mark
}

// tagSlot returns a free open-message slot, ending the oldest open message
// when the table is full.
func (c *conn) tagSlot(at *At, dir Dir) *tmsg {
	d := &c.d[dir]
	if d.nOpenT == 0 {
		return &d.tg[0]
	}
	var oldest *tmsg
	for i := range d.tg {
		x := &d.tg[i]
		if !x.active {
			return x
		}
		if oldest == nil || x.first < oldest.first {
			oldest = x
		}
	}
	c.st.Overflow.OpenMessages++
	if c.once(dir, finding.TrackTableOverflow) {
		c.finding(finding.TrackTableOverflow, dir, at, oldest.first, "more than %d tagged messages open at once in the %s direction: the oldest (frame %d) is given up as incomplete (Limits.OpenTagged)", len(d.tg), dir, oldest.first)
	}
	c.endTagged(at, dir, oldest, MsgIncomplete, "open-message table full")
	return oldest
}

// endTagged ends an open tagged message.
func (c *conn) endTagged(at *At, dir Dir, m *tmsg, state MsgState, reason string) {
	m.active = false
	c.d[dir].nOpenT--
	state, reason = c.settleMessage(dir, m.op, m.state, m.gapHit, m.cut, state, reason, m.length)
	if m.opOK {
		c.endTaggedOp(at, dir, m, state)
	}
	if c.t.cfg.OnMessage != nil {
		r := &c.t.msg
		*r = Message{
			Conn: c.id, Dir: dir, Opcode: m.op, Tagged: true, STag: m.stag, TO: m.firstTO,
			Length: m.length, Segments: m.segs, FirstFrame: m.first, LastFrame: m.last,
			Start: m.start, End: m.end, State: state, Reason: reason,
		}
		c.t.cfg.OnMessage(r)
	}
}

// flushMessages ends every open message of c (end of capture or retire).
func (c *conn) flushMessages(reason string) {
	for dir := range c.d {
		d := &c.d[dir]
		at := At{Conn: c.id, Dir: Dir(dir)}
		for i := range d.q {
			if q := &d.q[i]; q.open {
				at.Frame, at.Time = q.m.last, q.m.end
				c.endUntagged(&at, Dir(dir), q, MsgIncomplete, reason)
			}
		}
		for i := range d.tg {
			if m := &d.tg[i]; m.active {
				at.Frame, at.Time = m.last, m.end
				c.endTagged(&at, Dir(dir), m, MsgIncomplete, reason)
			}
		}
	}
}
