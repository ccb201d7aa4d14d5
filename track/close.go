package track

import (
	"fmt"

	"github.com/iwkit/iwkit/finding"
)

// gap reports capture loss in dir.
func (c *conn) gap(at *At, octets, fpdus int, skipped bool) {
	dir := at.Dir & 1
	st := &c.st.Dir[dir]
	c.observe(at)
	if fpdus > 0 {
		st.FPDUsLost += uint64(fpdus)
	}
	c.lose(dir)
	if skipped {
		st.Skips++
		st.SkippedOctets += uint64(max(octets, 0))
	} else {
		st.Gaps++
		st.GapOctets += uint64(max(octets, 0))
	}
	what := "octets"
	switch {
	case octets > 0 && fpdus > 0:
		what = fmt.Sprintf("%d octets (%d FPDUs)", octets, fpdus)
	case octets > 0:
		what = fmt.Sprintf("%d octets", octets)
	case fpdus > 0:
		what = fmt.Sprintf("%d FPDUs", fpdus)
	}
	c.finding(finding.TrackUncertainAfterGap, dir, at, 0, "capture lost %s from the %s: MSN/MO checks on its queues, TO continuity of its open tagged messages, Read/Atomic matching in both directions and IRD accounting are relaxed until they resynchronise", what, dir.Sender())
}

// lose makes the state of dir uncertain: FPDUs were lost (a gap) or are
// unusable (a CRC failure).
func (c *conn) lose(dir Dir) { c.loseN(dir, -1) }

// loseN is lose when exactly n FPDUs are known lost (n < 0: unknown). With
// a known count the untagged queues need no full resynchronisation: the
// next message on each may skip at most n MSNs (RFC 5041 §5.1) and the
// check goes on.
func (c *conn) loseN(dir Dir, n int) {
	d := &c.d[dir]
	for i := range d.q {
		q := &d.q[i]
		if n < 0 || !q.known {
			q.resync = true
		} else if !q.resync {
			q.slack += uint32(n)
		}
		if q.open {
			q.m.gapHit = true
		}
	}
	for i := range d.tg {
		if d.tg[i].active {
			d.tg[i].gapHit = true
		}
	}
	d.histGap = true
	// Requests sent in dir may be lost; so may responses sent in dir to
	// the other direction's requests.
	r := &c.reads[dir]
	r.reqUncertain, r.reqMark = true, r.nextSeq
	c.atomics[dir].reqUncertain = true
	c.reads[dir^1].respUncertain = true
	c.reads[dir^1].respGapFrame = c.lastFrame
	c.atomics[dir^1].respUncertain = true
}

// close records a FIN or RST (MPA-22, RD-23, RD-24).
func (c *conn) close(at *At, kind CloseKind) {
	dir := at.Dir & 1
	if at.HasSeq {
		// the FIN takes one sequence number
		fin := *at
		fin.End = at.Seq + 1
		c.observe(&fin)
	}
	f := &c.fin[dir]
	if f.seen {
		return
	}
	if !c.closedAny() {
		c.t.enqueue(&c.t.closedQ, &c.t.closedHead, c.id)
	}
	*f = finState{seen: true, kind: kind, frame: at.Frame, hasSeq: at.HasSeq, seq: at.Seq,
		readSeq: c.reads[dir].nextSeq, atoSeq: c.atomics[dir].nextSeq}
	if kind == CloseRST {
		c.rst = true
		c.st.Closed = "RST"
	} else if c.st.Closed == "" {
		c.st.Closed = "FIN"
	}
	c.finding(finding.MPALLPClosed, dir, at, 0, "%s from the %s: MPA reports 'TCP connection closed, terminated or lost' (0x2/0x0/0x01) to DDP (RFC 5044 §8)", kind, dir.Sender())
	if kind == CloseRST && c.hs.sawReq && !c.hs.sawRep {
		c.resetInSetup(at, dir)
	}
}

// resetInSetup: dir reset the connection after the MPA Request and before
// the Reply. The Initiator's connect fails (rdma_cm reports
// RDMA_CM_EVENT_REJECTED or _UNREACHABLE, rping "connect error"). A
// Responder that resets an enhanced (Rev 2) Request is typically an RFC 5044
// one that cannot parse it (RFC 6581 §10): the Initiator may retry with MPA
// v1, which fallback.go links.
func (c *conn) resetInSetup(at *At, dir Dir) {
	st := &c.hs
	why := "the Initiator gave up waiting for the Reply (an MPA timer, or the application closed)"
	if dir == R2I {
		why = "the Responder refused the Request without a rejecting Reply (RFC 5044 §7.1.2 wants a Reply with R=1)"
		if st.req.hasV2 {
			why = "the Responder refused the MPA v2 (RFC 6581) Request without a Reply, as an RFC 5044-only peer does (RFC 6581 §10): an Initiator may retry with MPA v1"
		}
	}
	c.finding(finding.MPAResetInSetup, dir, at, st.reqFrame, "the %s reset the connection %v after the MPA Request (frame %d) and before any Reply: %s; the Initiator's connect fails",
		dir.Sender(), at.Time.Sub(st.reqTime), st.reqFrame, why)
	if st.req.hasV2 && c.hasPeers {
		c.t.abortedV2(c, at)
	}
}

// finalize ends a connection: open messages end incomplete, requests never
// answered are reported (RD-13, RD-23, RD-28).
func (c *conn) finalize() {
	if c.finalized {
		return
	}
	c.finalized = true
	c.flushMessages("capture ended")
	for i := range c.reads {
		dir := Dir(i)
		q := &c.reads[dir]
		first, count, beforeFIN, zero := 0, 0, 0, 0
		fin := &c.fin[dir]
		for k := 0; k < q.n; k++ {
			r := q.at(k)
			if r.done {
				continue
			}
			if count == 0 {
				first = r.frame
			}
			count++
			if r.rr.Size == 0 {
				zero++
			}
			if fin.seen && fin.kind == CloseFIN && r.seq < fin.readSeq {
				beforeFIN++
			}
			status := OpUnanswered
			if c.terminated {
				status = OpTerminated
			}
			at := At{Conn: c.id, Dir: dir, Frame: r.frame, Time: r.time}
			c.opRead(dir, r, status, &at, nil)
			r.done = true
		}
		q.popDone()
		a := &c.atomics[dir]
		afirst, acount := 0, a.n
		if a.n > 0 {
			afirst = a.at(0).frame
		}
		if c.terminated || count+acount == 0 {
			continue
		}
		switch {
		case beforeFIN > 0:
			at := At{Conn: c.id, Dir: dir, Frame: fin.frame}
			c.finding(finding.RDMAPBadLLPClose, dir, &at, first, "the %s sent FIN with %d Read Request(s) unanswered (the oldest: frame %d): the peer's inbound Read queue was not empty, a 'Bad LLP Close' answered by Terminate 0x0/0x2/0x07 (V00 §6.2)", dir.Sender(), beforeFIN, first)
		case count > 0:
			at := At{Conn: c.id, Dir: dir, Frame: first}
			why := "every Read Request gets a Read Response (RFC 5040 §5.2.1)"
			if zero > 0 {
				why = fmt.Sprintf("%d of them of size 0, which still need a zero-length Read Response (RFC 5040 §5.2.1)", zero)
			}
			c.finding(finding.RDMAPRequestUnanswered, dir, &at, 0, "%d Read Request(s) from the %s never answered in the capture (the oldest: frame %d); %s", count, dir.Sender(), first, why)
		}
		if acount > 0 {
			at := At{Conn: c.id, Dir: dir, Frame: afirst}
			c.finding(finding.RDMAPRequestUnanswered, dir, &at, 0, "%d Atomic Request(s) from the %s never answered in the capture (the oldest: frame %d): every valid request gets one response (RFC 7306 §5.2.1)", acount, dir.Sender(), afirst)
		}
	}
	if c.t.cfg.OnConnEnd != nil {
		c.t.cfg.OnConnEnd(c.snapshot())
	}
}
