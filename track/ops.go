package track

import (
	"fmt"

	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
)

// readReq is an outstanding RDMA Read Request.
type readReq struct {
	seq, qn1  uint64
	frame     int
	time      time.Time
	msn       uint32
	rr        decode.ReadRequest
	bound     bool
	done      bool
	rtr       bool
	mismatch  bool
	respFirst int
	respBytes uint64
}

// readQueue holds the Read Requests sent in one direction, oldest first
// (RFC 5040 §5.2.2 rule 20: responses return in request order).
type readQueue struct {
	buf   []readReq
	head  int
	n     int
	limit int

	nextSeq uint64
	// reqUncertain: requests of this direction may have been lost (gap,
	// mid-stream start); requests with seq >= reqMark were seen after it.
	reqUncertain bool
	reqMark      uint64
	// respUncertain: responses to these requests may have been lost.
	respUncertain bool
	// orphans counts the Read Responses that found no request to answer
	// while requests were uncertain; orphanFrame is the frame of the
	// latest. A framer that resynchronises after a gap delivers the
	// octets it held (a Read Request among them) after the other
	// direction's later frames: a request from a frame before an orphan
	// response was answered by it, not outstanding.
	orphans     int
	orphanFrame int
	// respGapFrame is the latest frame at which responses to these
	// requests were lost (a gap or a failed CRC in the other direction):
	// a request from before it may have been answered unseen.
	respGapFrame int
}

// orphan records a Read Response that answered no request we hold.
func (q *readQueue) orphan(frame int) {
	q.orphans++
	q.orphanFrame = max(q.orphanFrame, frame)
}

func (q *readQueue) at(i int) *readReq { return &q.buf[(q.head+i)%len(q.buf)] }

// push appends r; when the queue is at its limit the oldest request is
// dropped and returned.
func (q *readQueue) push(r readReq) (dropped readReq, ok bool) {
	if q.n == len(q.buf) {
		if len(q.buf) < q.limit {
			nb := make([]readReq, min(max(2*len(q.buf), 4), q.limit))
			for i := 0; i < q.n; i++ {
				nb[i] = *q.at(i)
			}
			q.buf, q.head = nb, 0
		} else {
			dropped, ok = *q.at(0), true
			q.pop()
		}
	}
	r.seq = q.nextSeq
	q.nextSeq++
	*q.at(q.n) = r
	q.n++
	return dropped, ok
}

func (q *readQueue) pop() {
	q.head = (q.head + 1) % len(q.buf)
	q.n--
}

func (q *readQueue) find(seq uint64) *readReq {
	if q.n == 0 {
		return nil
	}
	i := seq - q.at(0).seq
	if seq < q.at(0).seq || i >= uint64(q.n) {
		return nil
	}
	return q.at(int(i))
}

func (q *readQueue) firstUnbound() int {
	for i := 0; i < q.n; i++ {
		if r := q.at(i); !r.bound && !r.done {
			return i
		}
	}
	return -1
}

func (q *readQueue) outstanding() int {
	k := 0
	for i := 0; i < q.n; i++ {
		if !q.at(i).done {
			k++
		}
	}
	return k
}

func (q *readQueue) popDone() {
	for q.n > 0 && q.at(0).done {
		q.pop()
	}
}

// atomicReq is an outstanding RFC 7306 Atomic Request.
type atomicReq struct {
	seq, qn1 uint64
	frame    int
	time     time.Time
	msn      uint32
	ar       decode.AtomicRequest
}

// atomicQueue holds the Atomic Requests sent in one direction.
type atomicQueue struct {
	buf           []atomicReq
	head, n       int
	limit         int
	nextSeq       uint64
	reqUncertain  bool
	respUncertain bool
}

func (q *atomicQueue) at(i int) *atomicReq { return &q.buf[(q.head+i)%len(q.buf)] }

func (q *atomicQueue) push(r atomicReq) (dropped bool) {
	if q.n == len(q.buf) {
		if len(q.buf) < q.limit {
			nb := make([]atomicReq, min(max(2*len(q.buf), 4), q.limit))
			for i := 0; i < q.n; i++ {
				nb[i] = *q.at(i)
			}
			q.buf, q.head = nb, 0
		} else {
			q.remove(0)
			dropped = true
		}
	}
	r.seq = q.nextSeq
	q.nextSeq++
	*q.at(q.n) = r
	q.n++
	return dropped
}

// remove drops entry i, keeping the order of the others.
func (q *atomicQueue) remove(i int) {
	for j := i; j > 0; j-- {
		*q.at(j) = *q.at(j - 1)
	}
	q.head = (q.head + 1) % len(q.buf)
	q.n--
}

// startUntagged applies the RDMAP rules at the start of an untagged
// message whose opcode fits its QN.
func (c *conn) startUntagged(at *At, p *decode.PDU, dir Dir, q *queue) {
	s := &p.Seg
	h := &s.DDP
	switch s.RDMAP.Opcode {
	case decode.OpSend, decode.OpSendSE, decode.OpSendInv, decode.OpSendSEInv:
		c.d[dir].sends++
		if (s.RDMAP.Opcode == decode.OpSendInv || s.RDMAP.Opcode == decode.OpSendSEInv) && s.InvalidateSTag == 0 {
			c.finding(finding.RDMAPSTagZero, dir, at, 0, "%s names STag 0: STag 0 cannot be invalidated; Terminate 0x0/0x1/0x09 (RFC 5040 §5.3, V00 §7.2.1)", s.RDMAP.Opcode)
		}
	case decode.OpReadRequest:
		c.readRequest(at, p, dir)
	case decode.OpAtomicRequest:
		c.atomicRequest(at, p, dir)
	case decode.OpAtomicResponse:
		c.atomicResponse(at, p, dir)
	case decode.OpImmData, decode.OpImmDataSE:
		if ulpduLen(p) != decode.DDPUntaggedHdrLen+decode.ImmDataLen || !h.Last || h.MO != 0 {
			c.finding(finding.RDMAPImmediateMalformed, dir, at, 0, "%s with ULPDU_Length %d, MO %d, L=%t: it is one segment of exactly 8 octets after the DDP header (ULPDU_Length 26, RFC 7306 §6.3)", s.RDMAP.Opcode, ulpduLen(p), h.MO, h.Last)
		}
	case decode.OpTerminate:
		c.terminate(at, p, dir)
	}
}

// endUntaggedOp applies the RDMAP rules at the end of an untagged message.
func (c *conn) endUntaggedOp(at *At, dir Dir, m *umsg, state MsgState) {
	st := &c.st.Dir[dir]
	kind := KindOf(m.op)
	switch kind {
	case OpSend:
		if m.rtr {
			kind = OpRTR
			st.Ops.RTRs++
			break
		}
		st.Ops.Sends++
		if m.op == decode.OpSendInv || m.op == decode.OpSendSEInv {
			st.Ops.SendsWithInvalidate++
			// The receiver invalidates the STag after placing the data,
			// before the receive completes (V00 §8.2.2.1): only a
			// delivered message invalidates.
			if state != MsgIncomplete && m.inv != 0 {
				c.invalidate(at, dir.Other(), m.inv)
			}
		}
	case OpImmediate:
		st.Ops.Immediates++
	default:
		return
	}
	if c.t.cfg.OnOperation != nil {
		o := &c.t.op
		*o = Operation{
			Conn: c.id, Dir: dir, Kind: kind, Opcode: m.op, Length: m.payload, MSN: m.msn,
			RequestFrame: m.first, LastRequestFrame: m.last, Start: m.start, End: m.end,
		}
		if m.op == decode.OpSendInv || m.op == decode.OpSendSEInv {
			o.InvalidateSTag = m.inv
		}
		if state == MsgIncomplete {
			o.Status = OpIncomplete
		}
		c.t.cfg.OnOperation(o)
	}
}

// startTagged applies the RDMAP rules at the start of a tagged message.
func (c *conn) startTagged(at *At, dir Dir, m *tmsg, last bool) Mark {
	zero := m.length == 0 && last
	switch m.op {
	case decode.OpWrite:
		// Zero-length accesses are not checked (RFC 5041 §5.2, V00 §7).
		if !zero && !m.rtr {
			c.checkInvalidated(at, dir, dir.Other(), m.stag, "RDMA Write")
		}
	case decode.OpReadResponse:
		return c.bindResponse(at, dir, m, zero)
	}
	return 0
}

// endTaggedOp applies the RDMAP rules at the end of a tagged message.
func (c *conn) endTaggedOp(at *At, dir Dir, m *tmsg, state MsgState) {
	st := &c.st.Dir[dir]
	switch m.op {
	case decode.OpWrite:
		kind := OpWrite
		switch {
		case m.rtr:
			kind = OpRTR
			st.Ops.RTRs++
		default:
			st.Ops.Writes++
			if m.length == 0 {
				st.Ops.ZeroLengthWrites++
			} else {
				c.useSTag(at, dir.Other(), m.stag, RoleWriteSink, m.firstTO, m.length)
			}
		}
		if c.t.cfg.OnOperation != nil {
			o := &c.t.op
			*o = Operation{
				Conn: c.id, Dir: dir, Kind: kind, Opcode: m.op, Length: m.length, STag: m.stag, TO: m.firstTO,
				RequestFrame: m.first, LastRequestFrame: m.last, Start: m.start, End: m.end,
			}
			if state == MsgIncomplete {
				o.Status = OpIncomplete
			}
			c.t.cfg.OnOperation(o)
		}
	case decode.OpReadResponse:
		c.endResponse(at, dir, m, state)
	}
}

// readRequest handles an RDMA Read Request sent in dir (RFC 5040 §5.2.1).
func (c *conn) readRequest(at *At, p *decode.PDU, dir Dir) {
	s := &p.Seg
	h := &s.DDP
	if p.SegErr != nil && c.curPartial {
		return
	}
	if p.SegErr != nil || !h.Last || h.MO != 0 || ulpduLen(p) != decode.DDPUntaggedHdrLen+decode.ReadReqHdrLen {
		c.finding(finding.RDMAPReadRequestMalformed, dir, at, 0, "Read Request with ULPDU_Length %d, MO %d, L=%t: it is one segment of exactly 18+28 octets (RFC 5040 §4.4, §5.2.1)", ulpduLen(p), h.MO, h.Last)
		if p.SegErr != nil || !h.Last || h.MO != 0 {
			return
		}
	}
	rr := s.ReadRequest
	o := dir.Other()
	if rr.Size > 0 {
		if rr.SrcSTag == 0 {
			c.finding(finding.RDMAPSTagZero, dir, at, 0, "Read Request of %d octets from SrcSTag 0: STag 0 is never remotely usable; Terminate 0x0/0x1/0x00 (RFC 5040 §5.2.1, V00 §7.2.1)", rr.Size)
		}
		switch {
		case rr.SrcTO+uint64(rr.Size)-1 < rr.SrcTO:
			c.finding(finding.RDMAPReadTOWrap, dir, at, 0, "Read Request: SrcTO 0x%x + %d octets wraps 2^64; Terminate 0x0/0x1/0x04 (RFC 5040 §5.2.1)", rr.SrcTO, rr.Size)
		case rr.SinkTO+uint64(rr.Size)-1 < rr.SinkTO:
			c.finding(finding.RDMAPReadTOWrap, dir, at, 0, "Read Request: SinkTO 0x%x + %d octets wraps 2^64: the Read Response would wrap its TO (RFC 5041 §7.2 0x1/0x1/0x03)", rr.SinkTO, rr.Size)
		}
		c.checkInvalidated(at, dir, o, rr.SrcSTag, "Read Request (SrcSTag)")
		// The requester names its own sink: an advertisement of it.
		c.advertise(dir, rr.SinkSTag)
	}
	st := &c.st.Dir[dir]
	switch {
	case c.curRTR:
		st.Ops.RTRs++
	default:
		st.Ops.Reads++
		if rr.Size == 0 {
			st.Ops.ZeroLengthReads++
		}
	}
	q := &c.reads[dir]
	qn1 := c.qn1Next[dir]
	c.qn1Next[dir]++
	if q.orphans > 0 {
		if at.Frame < q.orphanFrame {
			// Delivered late (after a resync): its response came first.
			q.orphans--
			r := readReq{qn1: qn1, frame: at.Frame, time: at.Time, msn: h.MSN, rr: rr, rtr: c.curRTR, seq: q.nextSeq}
			q.nextSeq++
			c.opRead(dir, &r, OpIncomplete, at, nil)
			return
		}
		q.orphans = 0
	}
	if old, dropped := q.push(readReq{qn1: qn1, frame: at.Frame, time: at.Time, msn: h.MSN, rr: rr, rtr: c.curRTR}); dropped {
		c.st.Overflow.Reads++
		if c.once(dir, finding.TrackTableOverflow) {
			c.finding(finding.TrackTableOverflow, dir, at, old.frame, "more than %d Read Requests outstanding from the %s: the oldest (frame %d) is dropped unanswered (Limits.OutstandingReads)", q.limit, dir.Sender(), old.frame)
		}
		c.reqDone(dir, &old, OpIncomplete, at)
		// The responder still answers the dropped request first: until a
		// response matches a request we kept, mismatches are expected.
		q.reqUncertain, q.reqMark = true, old.seq+1
	}
	out := q.outstanding()
	if out > st.MaxOutstandingReads {
		st.MaxOutstandingReads = out
	}
	if lim := c.hs.readLimit[dir]; lim >= 0 && out > lim {
		// More outstanding than the responder takes: the oldest, sent
		// before responses were lost, were answered in the loss (when
		// the responses match by STag and TO alone, as with one buffer
		// read again and again, a later response was bound to them).
		for i := 0; i < q.n && out > lim; i++ {
			if r := q.at(i); !r.done && r.frame < q.respGapFrame {
				c.opRead(dir, r, OpIncomplete, at, nil)
				r.done = true
				out--
			}
		}
		q.popDone()
	}
	if lim := c.hs.readLimit[dir]; lim >= 0 && out > lim && !q.respUncertain {
		// Name the frame that announced the limit, and the sender's own
		// ORD when it did not lower it to the peer's IRD: the IRD/ORD
		// mismatch behind the overrun.
		src, mine := c.hs.repFrame, &c.hs.req
		if dir == R2I {
			src, mine = c.hs.reqFrame, &c.hs.rep
		}
		why := ""
		if mine.hasV2 && mine.v2.ORD != decode.MPAv2NoNegotiation && int(mine.v2.ORD) > lim {
			why = fmt.Sprintf("; its own MPA frame announced ORD %d, above that IRD, and it did not lower it (an IRD/ORD mismatch)", mine.v2.ORD)
		}
		c.finding(finding.RDMAPIRDExceeded, dir, at, src, "%d Read Requests outstanding from the %s, but the responder's IRD is %d (announced in the MPA frame of frame %d)%s: the responder Terminates (0x1/0x2/0x03) or stalls (RFC 6581 §9.1, RFC 5040 §6.1)", out, dir.Sender(), lim, src, why)
	}
}

// bindResponse matches the first segment of a Read Response sent in dir
// to the oldest unanswered Read Request of the other direction (RD-15).
func (c *conn) bindResponse(at *At, dir Dir, m *tmsg, zero bool) Mark {
	rd := dir.Other()
	q := &c.reads[rd]
	matches := func(r *readReq) bool {
		if r.rr.Size == 0 {
			// STag and TO of a zero-length Read are not checked (RFC
			// 5040 §5.2.1); the response must be zero-length.
			return true
		}
		return m.stag == r.rr.SinkSTag && m.firstTO == r.rr.SinkTO
	}
	i := q.firstUnbound()
	if i < 0 {
		if q.reqUncertain || c.terminated {
			m.lost = true
			c.st.Dir[dir].UnmatchedUncertain++
			q.orphan(at.Frame)
			return MarkUncertain
		}
		c.finding(finding.RDMAPReadResponseUnmatched, dir, at, 0, "Read Response to STag 0x%x TO 0x%x, but no Read Request from the %s is outstanding (RFC 5040 §5.2.2)", m.stag, m.firstTO, rd.Sender())
		return 0
	}
	r := q.at(i)
	var mark Mark
	switch {
	case matches(r):
		if q.respUncertain {
			q.respUncertain = false
		}
	case q.respUncertain && r.rr.Size > 0 && m.stag == r.rr.SinkSTag && m.firstTO > r.rr.SinkTO && m.firstTO-r.rr.SinkTO < uint64(r.rr.Size):
		// The head of this response was lost (a gap, a failed CRC): this
		// is its tail.
		m.gapHit = true
		r.respBytes = m.firstTO - r.rr.SinkTO
		mark = MarkUncertain
		q.respUncertain = false
	case q.reqUncertain || q.respUncertain:
		j := -1
		for k := i + 1; k < q.n; k++ {
			if x := q.at(k); !x.bound && !x.done && x.rr.Size != 0 && matches(x) {
				j = k
				break
			}
		}
		mark = MarkUncertain
		if j < 0 {
			if q.reqUncertain {
				// The request was lost in the gap.
				m.lost = true
				c.st.Dir[dir].UnmatchedUncertain++
				q.orphan(at.Frame)
				return mark
			}
			c.finding(finding.RDMAPReadResponseMismatch, dir, at, r.frame, "Read Response to STag 0x%x TO 0x%x does not answer the oldest outstanding Read Request (frame %d: SinkSTag 0x%x SinkTO 0x%x): responses return in request order (RFC 5040 §5.2.2)", m.stag, m.firstTO, r.frame, r.rr.SinkSTag, r.rr.SinkTO)
			r.mismatch = true
			break
		}
		// The responses to the skipped requests were lost in a gap.
		for k := i; k < j; k++ {
			x := q.at(k)
			c.opRead(rd, x, OpIncomplete, at, nil)
			x.done = true
		}
		r = q.at(j)
		q.respUncertain = false
	default:
		c.finding(finding.RDMAPReadResponseMismatch, dir, at, r.frame, "Read Response to STag 0x%x TO 0x%x does not answer the oldest outstanding Read Request (frame %d: SinkSTag 0x%x SinkTO 0x%x): responses return in request order (RFC 5040 §5.2.2)", m.stag, m.firstTO, r.frame, r.rr.SinkSTag, r.rr.SinkTO)
		r.mismatch = true
	}
	r.bound = true
	r.respFirst = at.Frame
	m.bound, m.readSeq = true, r.seq
	q.popDone() // r stays: it is not done
	if q.reqUncertain && r.seq >= q.reqMark {
		q.reqUncertain = false
	}
	if r.rr.Size > 0 {
		c.checkInvalidated(at, dir, rd, m.stag, "Read Response (sink)")
	}
	// RFC 7306 §5.4, §7: Read and Atomic Responses leave in the order of
	// their requests on QN 1.
	a := &c.atomics[rd]
	if a.n > 0 && a.at(0).qn1 < r.qn1 && !a.reqUncertain && !a.respUncertain {
		c.finding(finding.RDMAPResponseOrder, dir, at, a.at(0).frame, "Read Response for the Read Request of frame %d leaves before the Atomic Response to the earlier Atomic Request of frame %d: responses follow the QN 1 request order (RFC 7306 §5.4, §7)", r.frame, a.at(0).frame)
	}
	return mark
}

// responseSegment counts a Read Response segment against its request.
func (c *conn) responseSegment(at *At, dir Dir, m *tmsg, n uint64) {
	if !m.bound {
		return
	}
	r := c.reads[dir.Other()].find(m.readSeq)
	if r == nil {
		return
	}
	r.respBytes += n
	if r.respBytes > uint64(r.rr.Size) && !m.warnedLong {
		m.warnedLong = true
		r.mismatch = true
		c.finding(finding.RDMAPReadResponseTooLong, dir, at, r.frame, "Read Response carries %d octets so far, the Read Request (frame %d) asked for %d: a response stays within SinkTO..SinkTO+size (RFC 5040 §5.2.2; DDP base/bounds 0x1/0x1/0x01)", r.respBytes, r.frame, r.rr.Size)
	}
}

// endResponse completes the Read whose response message ends.
func (c *conn) endResponse(at *At, dir Dir, m *tmsg, state MsgState) {
	st := &c.st.Dir[dir]
	st.Ops.ReadResponses++
	if !m.bound {
		return
	}
	rd := dir.Other()
	q := &c.reads[rd]
	r := q.find(m.readSeq)
	if r == nil {
		return
	}
	status := OpOK
	switch {
	case state == MsgIncomplete:
		status = OpIncomplete
	case r.respBytes < uint64(r.rr.Size):
		r.mismatch = true
		c.finding(finding.RDMAPReadResponseShort, dir, at, r.frame, "Read Response ends (L) after %d octets, the Read Request (frame %d) asked for %d (RFC 5040 §5.2.2)", r.respBytes, r.frame, r.rr.Size)
	}
	if r.mismatch && status == OpOK {
		status = OpMismatch
	}
	if status != OpIncomplete {
		if !r.rtr {
			c.st.Dir[rd].Ops.ReadsAnswered++
		}
		c.recordLatency(at.Time.Sub(r.time))
		if r.respBytes > 0 {
			c.useSTag(at, rd, r.rr.SinkSTag, RoleReadSink, r.rr.SinkTO, r.respBytes)
			c.useSTag(at, dir, r.rr.SrcSTag, RoleReadSource, r.rr.SrcTO, r.respBytes)
		}
	}
	c.opRead(rd, r, status, at, m)
	r.done = true
	q.popDone()
}

// reqDone gives up a Read Request (dropped, lost response, unanswered).
func (c *conn) reqDone(dir Dir, r *readReq, status OpStatus, at *At) {
	c.opRead(dir, r, status, at, nil)
	r.done = true
	c.reads[dir].popDone()
}

func (c *conn) opRead(dir Dir, r *readReq, status OpStatus, at *At, m *tmsg) {
	if c.t.cfg.OnOperation == nil {
		return
	}
	o := &c.t.op
	kind := OpRead
	if r.rtr {
		kind = OpRTR
	}
	*o = Operation{
		Conn: c.id, Dir: dir, Kind: kind, Opcode: decode.OpReadRequest, Status: status,
		Length: r.respBytes, Size: r.rr.Size, STag: r.rr.SinkSTag, TO: r.rr.SinkTO,
		SrcSTag: r.rr.SrcSTag, SrcTO: r.rr.SrcTO, MSN: r.msn,
		RequestFrame: r.frame, LastRequestFrame: r.frame, Start: r.time,
	}
	if m != nil {
		o.ResponseFirstFrame, o.ResponseLastFrame, o.End = m.first, m.last, m.end
		if o.HasLatency() { // the value recordLatency took
			o.Latency = m.end.Sub(r.time)
		}
	}
	c.t.cfg.OnOperation(o)
}

// atomicRequest handles an RFC 7306 Atomic Request sent in dir (RD-26).
func (c *conn) atomicRequest(at *At, p *decode.PDU, dir Dir) {
	s := &p.Seg
	h := &s.DDP
	if p.SegErr != nil && c.curPartial {
		return
	}
	if p.SegErr != nil || !h.Last || h.MO != 0 || ulpduLen(p) != decode.DDPUntaggedHdrLen+decode.AtomicReqHdrLen {
		c.finding(finding.RDMAPAtomicMalformed, dir, at, 0, "Atomic Request with ULPDU_Length %d, MO %d, L=%t: it is one segment of exactly 18+52 octets (RFC 7306 §5.2.1)", ulpduLen(p), h.MO, h.Last)
		if p.SegErr != nil || !h.Last || h.MO != 0 {
			return
		}
	}
	ar := s.AtomicRequest
	switch {
	case !ar.AOpCode.Known():
		c.finding(finding.RDMAPAtomicAOpCodeInvalid, dir, at, 0, "Atomic Request AOpCode %d: only FetchAdd (0) and CmpSwap (2) exist, 1 is reserved; the responder must surface an error (RFC 7306 §5.2.1 rule 4)", uint8(ar.AOpCode))
	case ar.Reserved != 0:
		c.finding(finding.RDMAPAtomicFieldIgnored, dir, at, 0, "Atomic Request Reserved 0x%x: 0 on send, ignored on receipt (RFC 7306 §5.2.1)", ar.Reserved)
	case ar.AOpCode == decode.AOpFetchAdd && (ar.CompareData != 0 || ar.CompareMask != ^uint64(0)):
		c.finding(finding.RDMAPAtomicFieldIgnored, dir, at, 0, "FetchAdd with Compare Data 0x%x and Compare Mask 0x%x: sent as 0 and all ones, ignored on receipt (RFC 7306 §5.2.1)", ar.CompareData, ar.CompareMask)
	}
	if ar.RemoteTO%8 != 0 {
		c.finding(finding.RDMAPAtomicMisaligned, dir, at, 0, "Atomic Request target TO 0x%x is not 8-octet aligned: a misaligned target is left unchanged and answered with Terminate 0x0/0x2/0x07 (RFC 7306 §5.1, §8.2; alignment of the buffer base is not visible)", ar.RemoteTO)
	}
	if ar.RemoteSTag == 0 {
		c.finding(finding.RDMAPSTagZero, dir, at, 0, "Atomic Request to STag 0: STag 0 is never remotely usable (V00 §7.2.1)")
	}
	o := dir.Other()
	c.checkInvalidated(at, dir, o, ar.RemoteSTag, "Atomic Request")
	c.useSTag(at, o, ar.RemoteSTag, RoleAtomicTarget, ar.RemoteTO, 8)
	st := &c.st.Dir[dir]
	st.Ops.Atomics++
	q := &c.atomics[dir]
	qn1 := c.qn1Next[dir]
	c.qn1Next[dir]++
	if q.push(atomicReq{qn1: qn1, frame: at.Frame, time: at.Time, msn: h.MSN, ar: ar}) {
		c.st.Overflow.Atomics++
		if c.once(dir, finding.TrackTableOverflow) {
			c.finding(finding.TrackTableOverflow, dir, at, 0, "more than %d Atomic Requests outstanding from the %s: the oldest is dropped (Limits.OutstandingAtomics)", q.limit, dir.Sender())
		}
	}
	if q.n > st.MaxOutstandingAtomics {
		st.MaxOutstandingAtomics = q.n
	}
}

// atomicResponse matches an Atomic Response sent in dir to the oldest
// Atomic Request of the other direction (RD-28).
func (c *conn) atomicResponse(at *At, p *decode.PDU, dir Dir) {
	s := &p.Seg
	h := &s.DDP
	c.st.Dir[dir].Ops.AtomicResponses++
	if p.SegErr != nil && c.curPartial {
		return
	}
	if p.SegErr != nil || !h.Last || h.MO != 0 || ulpduLen(p) != decode.DDPUntaggedHdrLen+decode.AtomicRespHdrLen {
		c.finding(finding.RDMAPAtomicMalformed, dir, at, 0, "Atomic Response with ULPDU_Length %d, MO %d, L=%t: it is one segment of exactly 18+12 octets (RFC 7306 §5.2.2)", ulpduLen(p), h.MO, h.Last)
		if p.SegErr != nil || !h.Last || h.MO != 0 {
			return
		}
	}
	id := s.AtomicResponse.OrigRequestID
	rd := dir.Other()
	q := &c.atomics[rd]
	if q.n == 0 {
		if !q.reqUncertain && !c.terminated {
			c.finding(finding.RDMAPAtomicResponseUnmatched, dir, at, 0, "Atomic Response (Original Request Identifier 0x%x), but no Atomic Request from the %s is outstanding (RFC 7306 §5.2.2)", id, rd.Sender())
		} else {
			c.st.Dir[dir].UnmatchedUncertain++
		}
		return
	}
	j := -1
	for k := 0; k < q.n; k++ {
		if q.at(k).ar.RequestID == id {
			j = k
			break
		}
	}
	uncertain := q.reqUncertain || q.respUncertain
	switch {
	case j == 0:
	case j > 0 && uncertain:
		// responses to older requests were lost in a gap
		for q.n > 0 && j > 0 {
			q.remove(0)
			j--
		}
	case j > 0:
		c.finding(finding.RDMAPAtomicResponseMismatch, dir, at, q.at(0).frame, "Atomic Response answers the Atomic Request of frame %d (ID 0x%x) before the older one of frame %d (ID 0x%x): responses return in request order (RFC 7306 §5.2.2, §5.4)", q.at(j).frame, id, q.at(0).frame, q.at(0).ar.RequestID)
	case uncertain:
		c.st.Dir[dir].UnmatchedUncertain++
		return
	default:
		c.finding(finding.RDMAPAtomicResponseMismatch, dir, at, q.at(0).frame, "Atomic Response Original Request Identifier 0x%x matches no outstanding Atomic Request (oldest: frame %d, ID 0x%x) (RFC 7306 §5.2.2)", id, q.at(0).frame, q.at(0).ar.RequestID)
		j = 0
	}
	r := q.at(j)
	// RFC 7306 §5.4, §7: responses follow the QN 1 request order.
	rq := &c.reads[rd]
	if !rq.reqUncertain && !rq.respUncertain {
		for k := 0; k < rq.n; k++ {
			if x := rq.at(k); !x.done && !x.bound && x.qn1 < r.qn1 {
				c.finding(finding.RDMAPResponseOrder, dir, at, x.frame, "Atomic Response for the Atomic Request of frame %d leaves before the Read Response to the earlier Read Request of frame %d: responses follow the QN 1 request order (RFC 7306 §5.4, §7)", r.frame, x.frame)
				break
			}
		}
	}
	c.st.Dir[rd].Ops.AtomicsAnswered++
	if c.t.cfg.OnOperation != nil {
		o := &c.t.op
		*o = Operation{
			Conn: c.id, Dir: rd, Kind: OpAtomic, Opcode: decode.OpAtomicRequest,
			SrcSTag: r.ar.RemoteSTag, SrcTO: r.ar.RemoteTO, MSN: r.msn, AtomicOp: r.ar.AOpCode, RequestID: r.ar.RequestID,
			RequestFrame: r.frame, LastRequestFrame: r.frame, ResponseFirstFrame: at.Frame, ResponseLastFrame: at.last(),
			Start: r.time, End: at.Time, Latency: at.Time.Sub(r.time),
		}
		if j != 0 || id != r.ar.RequestID {
			o.Status = OpMismatch
		}
		c.t.cfg.OnOperation(o)
	}
	q.remove(j)
	if j == 0 && q.reqUncertain {
		q.reqUncertain = false
	}
	q.respUncertain = false
}
