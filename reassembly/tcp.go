package reassembly

import (
	"net/netip"
	"time"

	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/pcap"
)

// This file is the TCP layer: the flow table and one byte stream per
// direction. Sequence numbers are 32-bit and wrap; every comparison is done
// on the signed 32-bit difference (RFC 9293 §3.4), and each stream also
// counts an absolute 64-bit offset. Data goes to the framer in order, one
// segment (or the part of it not seen before) at a time, so the framer knows
// segment boundaries and which frame every octet came from.

// maxWin bounds how far (either way) a sequence number may lie from the
// stream's next expected one and still belong to the same connection.
const maxWin = 1 << 30

type flowKey struct{ lo, hi netip.AddrPort }

func keyOf(src, dst netip.AddrPort) flowKey {
	if src.Compare(dst) < 0 {
		return flowKey{src, dst}
	}
	return flowKey{dst, src}
}

// flow is one connection on a 4-tuple (a reused 4-tuple gets a new Conn in
// the same flow).
type flow struct {
	a    *Assembler
	key  flowKey
	c    Conn
	s    [2]stream
	fr   [2]framer
	prev *flow // LRU list
	next *flow
	// oprev/onext link flows holding out-of-order data, oldest first.
	oprev, onext *flow
	inOOO        bool

	declared bool // a port of Config.Ports
	closed   bool // FIN/RST seen and done: a tombstone until it idles out
	lastSeen time.Time
}

// stream is one direction's TCP byte stream.
type stream struct {
	started bool
	syn     bool
	isn     uint32
	next    uint32 // next expected sequence number
	nextOff uint64 // stream offset of next
	fin     bool
	finSeq  uint32 // sequence number of the FIN
	done    bool   // all data up to the FIN delivered
	rst     bool
	hasAck  bool
	ack     uint32 // highest ACK from the peer for this stream
	// ooo holds out-of-order pieces, sorted, disjoint, all after next.
	ooo      []oooSeg
	oooBytes int
	// hist is a ring of the last delivered octets (len a power of two),
	// to compare retransmissions with; nil when not kept.
	hist     []byte
	histFrom uint64 // stream offset of the first octet recorded
	// lastGap is the last hole given up [from, to) (stream offsets): octets
	// arriving for it are late, not retransmitted.
	lastGap [2]uint64
	// untracked: the framer does not want this direction's payload (not
	// iWARP); only sequence numbers are followed.
	untracked bool
}

type oooSeg struct {
	seq   uint32
	data  []byte // pooled
	miss  int    // octets after data that the capture cut (snaplen)
	frame int
	ts    time.Time
	// ack/hasAck: the segment's acknowledgment number and ACK flag.
	ack    uint32
	hasAck bool
}

func (s *oooSeg) span() int { return len(s.data) + s.miss }

func (a *Assembler) lookup(frame int, ts time.Time, p *pcap.Packet) (*flow, Dir) {
	src := netip.AddrPortFrom(p.Src, p.SrcPort)
	dst := netip.AddrPortFrom(p.Dst, p.DstPort)
	fl := a.last
	if fl == nil || !((fl.c.Addr[0] == src && fl.c.Addr[1] == dst) || (fl.c.Addr[1] == src && fl.c.Addr[0] == dst)) {
		fl = a.flows[keyOf(src, dst)]
	}
	if fl == nil {
		if len(a.flows) >= a.cfg.MaxFlows {
			a.stats.MaxFlowsReached++
			a.stats.FlowsEvicted++
			a.remove(a.lru.prev, CloseEvicted, frame)
		}
		fl = a.newFlow(keyOf(src, dst))
		a.flows[fl.key] = fl
		fl.start(src, dst, frame, ts, p)
	} else {
		d := fl.dirOf(src)
		if fl.reused(d, p) {
			a.stats.StreamRestartsOK++
			fl.close(CloseReused, frame)
			fl.start(src, dst, frame, ts, p)
		}
	}
	a.last = fl
	a.touch(fl)
	fl.lastSeen = ts
	return fl, fl.dirOf(src)
}

func (a *Assembler) newFlow(k flowKey) *flow {
	var fl *flow
	if n := len(a.freeFlows); n > 0 {
		fl = a.freeFlows[n-1]
		a.freeFlows = a.freeFlows[:n-1]
	} else {
		fl = new(flow)
	}
	fl.a = a
	fl.key = k
	fl.next, fl.prev = fl, fl
	return fl
}

// start (re)initializes fl for a new connection whose first segment is p.
func (fl *flow) start(src, dst netip.AddrPort, frame int, ts time.Time, p *pcap.Packet) {
	a := fl.a
	a.nextID++
	a.stats.Flows++
	fl.c = Conn{ID: a.nextID, Addr: [2]netip.AddrPort{src, dst}, Initiator: -1,
		FirstFrame: frame, FirstTime: ts, LastFrame: frame, LastTime: ts}
	if p.Flags&(pcap.TCPSyn|pcap.TCPAck) == pcap.TCPSyn|pcap.TCPAck {
		// A SYN-ACK seen first: its receiver is the client.
		fl.c.Addr = [2]netip.AddrPort{dst, src}
	}
	fl.c.SYN = p.Flags&pcap.TCPSyn != 0
	if a.cfg.Started != nil {
		a.cfg.Started(&fl.c)
	}
	fl.s = [2]stream{}
	fl.closed = false
	fl.declared = a.ports != nil && (a.ports[src.Port()] || a.ports[dst.Port()])
	for d := range fl.fr {
		fl.fr[d].init(fl, Dir(d))
	}
}

func (fl *flow) dirOf(src netip.AddrPort) Dir {
	if fl.c.Addr[0] == src {
		return DirAB
	}
	return DirBA
}

// reused reports whether segment p, in direction d, starts a new connection
// on the flow's 4-tuple: a SYN with a new ISN where the direction already
// started, or (after FIN/RST) data that is not a late retransmission, or
// data far outside the stream's sequence space.
func (fl *flow) reused(d Dir, p *pcap.Packet) bool {
	s := &fl.s[d]
	if p.Flags&pcap.TCPRst != 0 {
		return false
	}
	if p.Flags&pcap.TCPSyn != 0 {
		if s.syn && p.Seq == s.isn {
			return false // retransmitted SYN
		}
		if !s.started && !fl.closed {
			// The other direction's SYN opened the flow; this is the SYN-ACK.
			return p.Flags&pcap.TCPAck == 0 && fl.s[d.Other()].started && fl.s[d.Other()].nextOff > 0
		}
		return true
	}
	if !s.started {
		return fl.closed
	}
	if p.PayloadLen == 0 && p.Flags&pcap.TCPFin == 0 {
		return false
	}
	rel := int64(int32(p.Seq - s.next))
	if fl.closed {
		// After FIN/RST only old data (retransmissions) and what was in
		// flight when a RST went out belong here; a new connection reusing
		// the 4-tuple without a SYN seen starts elsewhere in sequence space.
		return rel > 1<<24 || rel < -maxWin
	}
	return rel > maxWin || rel < -maxWin
}

// segment processes one segment of direction d.
func (fl *flow) segment(d Dir, frame int, ts time.Time, p *pcap.Packet) {
	a := fl.a
	fl.c.LastFrame, fl.c.LastTime = frame, ts
	fl.segmentEvent(d, frame, ts, p) // segments.go: before the stream takes it in
	if fl.closed {
		a.stats.IgnoredSegments++
		return
	}
	s := &fl.s[d]
	if p.Flags&pcap.TCPRst != 0 {
		s.rst = true
		fl.close(CloseRST, frame)
		fl.closed = true
		return
	}
	seq := p.Seq
	if p.Flags&pcap.TCPSyn != 0 {
		seq++ // the SYN occupies one sequence number
		if !s.started {
			s.started, s.syn, s.isn = true, true, p.Seq
			s.next = seq
			fl.fr[d].reset(seq)
		}
	} else if !s.started {
		// Mid-stream attach.
		s.started = true
		s.next = seq
		fl.fr[d].reset(seq)
	}
	if p.Flags&pcap.TCPAck != 0 {
		fl.noteAck(d.Other(), p.Ack, frame)
	}
	if p.PayloadLen > 0 || len(p.Payload) > 0 {
		plen := max(p.PayloadLen, len(p.Payload))
		fl.data(d, seq, p.Payload, plen-len(p.Payload), frame, ts, p.Ack, p.Flags&pcap.TCPAck != 0)
	}
	if p.Flags&pcap.TCPFin != 0 && !s.fin {
		s.fin = true
		s.finSeq = seq + uint32(max(p.PayloadLen, len(p.Payload)))
	}
	fl.checkDone(frame)
}

// checkDone marks a direction done when it delivered everything up to its
// FIN (or the peer acknowledged the FIN, so what is missing was received but
// not captured), and closes the connection when both are.
func (fl *flow) checkDone(frame int) {
	for d := range fl.s {
		s := &fl.s[d]
		if !s.fin || s.done {
			continue
		}
		if s.hasAck && int32(s.ack-s.finSeq) > 0 && !s.untracked {
			for len(s.ooo) > 0 {
				fl.fillHole(Dir(d), GapAcked, frame)
			}
			if rel := int32(s.finSeq - s.next); rel > 0 {
				fl.gap(Dir(d), uint64(rel), GapAcked, frame)
			}
		}
		if s.next == s.finSeq && len(s.ooo) == 0 || s.untracked && int32(s.next-s.finSeq) >= 0 {
			s.done = true
		}
	}
	if fl.s[0].done && fl.s[1].done {
		fl.close(CloseFIN, frame)
		fl.closed = true
	}
}

// noteAck records an acknowledgment from the peer of stream d; when it
// covers the start of buffered out-of-order data, the hole before it was
// received by the peer but not captured, and will never be filled.
func (fl *flow) noteAck(d Dir, ack uint32, frame int) {
	s := &fl.s[d]
	if !s.started {
		return
	}
	if rel := int32(ack - s.next); rel > maxWin || rel < -maxWin {
		return
	}
	if s.hasAck && int32(ack-s.ack) <= 0 {
		return
	}
	s.hasAck, s.ack = true, ack
	for len(s.ooo) > 0 && int32(ack-s.ooo[0].seq) >= 0 {
		fl.fillHole(d, GapAcked, frame)
	}
}

// data handles payload b of direction d at sequence number seq, followed by
// miss octets the capture cut; ack/hasAck are the segment's acknowledgment
// number and ACK flag.
func (fl *flow) data(d Dir, seq uint32, b []byte, miss int, frame int, ts time.Time, ack uint32, hasAck bool) {
	a := fl.a
	s := &fl.s[d]
	n := len(b) + miss
	if s.untracked {
		a.stats.UntrackedBytes += uint64(len(b))
		if end := seq + uint32(n); int32(end-s.next) > 0 {
			s.nextOff += uint64(end - s.next)
			s.next = end
		}
		return
	}
	rel := int32(seq - s.next)
	if rel < 0 {
		old := int(-int64(rel))
		if old >= n {
			fl.retrans(d, seq, b, frame)
			return
		}
		if old <= len(b) {
			fl.retrans(d, seq, b[:old], frame)
			b = b[old:]
		} else {
			fl.retrans(d, seq, b, frame)
			miss -= old - len(b)
			b = b[len(b):]
		}
		seq = s.next
		rel = 0
	}
	if rel > 0 {
		fl.buffer(d, seq, b, miss, frame, ts, ack, hasAck)
		return
	}
	fl.deliver(d, b, miss, frame, ts, ack, hasAck)
	fl.drain(d, frame)
}

// deliver passes in-order octets to the framer and advances the stream.
func (fl *flow) deliver(d Dir, b []byte, miss int, frame int, ts time.Time, ack uint32, hasAck bool) {
	s := &fl.s[d]
	if len(b) > 0 {
		s.record(b, s.nextOff)
		s.next += uint32(len(b))
		s.nextOff += uint64(len(b))
		fl.fr[d].data(b, frame, ts, ack, hasAck)
	}
	if miss > 0 {
		fl.gap(d, uint64(miss), GapSnaplen, frame)
	}
}

// gap reports n missing octets at the stream's next position and skips them.
func (fl *flow) gap(d Dir, n uint64, reason GapReason, frame int) {
	s := &fl.s[d]
	seq := s.next
	s.lastGap = [2]uint64{s.nextOff, s.nextOff + n}
	s.next += uint32(n)
	s.nextOff += n
	s.histFrom = s.nextOff // the ring has nothing for the hole
	fl.fr[d].gap(seq, n, reason, frame)
}

// drain delivers buffered segments that have become in order.
func (fl *flow) drain(d Dir, frame int) {
	s := &fl.s[d]
	for len(s.ooo) > 0 {
		g := &s.ooo[0]
		rel := int32(g.seq - s.next)
		if rel > 0 {
			break
		}
		seg := *g
		copy(s.ooo, s.ooo[1:])
		s.ooo[len(s.ooo)-1] = oooSeg{}
		s.ooo = s.ooo[:len(s.ooo)-1]
		s.oooBytes -= len(seg.data)
		b, miss := seg.data, seg.miss
		if old := int(-rel); old > 0 {
			if old <= len(b) {
				fl.retrans(d, seg.seq, b[:old], seg.frame)
				b = b[old:]
			} else {
				miss -= old - len(b)
				b = b[len(b):]
				if miss < 0 {
					miss = 0
				}
			}
		}
		fl.deliver(d, b, miss, seg.frame, seg.ts, seg.ack, seg.hasAck)
		fl.a.pool.put(seg.data)
	}
	if len(fl.s[0].ooo) == 0 && len(fl.s[1].ooo) == 0 {
		fl.a.oooUnlink(fl)
	}
}

// fillHole gives up the first hole of stream d: reports it as a gap and
// delivers what follows it.
func (fl *flow) fillHole(d Dir, reason GapReason, frame int) {
	s := &fl.s[d]
	if len(s.ooo) == 0 {
		return
	}
	if reason == GapBudget {
		fl.a.stats.BudgetGaps++
	}
	if n := s.ooo[0].seq - s.next; int32(n) > 0 {
		fl.gap(d, uint64(n), reason, frame)
	}
	fl.drain(d, frame)
}

// buffer keeps an out-of-order segment (the parts of it not buffered yet).
func (fl *flow) buffer(d Dir, seq uint32, b []byte, miss int, frame int, ts time.Time, ack uint32, hasAck bool) {
	a := fl.a
	s := &fl.s[d]
	// Walk the existing pieces; store the parts of [seq, seq+len(b)) they
	// do not cover, comparing the parts they do.
	for len(b) > 0 {
		i := s.firstEndingAfter(seq)
		if i < len(s.ooo) {
			g := &s.ooo[i]
			if rel := int32(g.seq - seq); rel <= 0 {
				// seq lies inside piece i: compare the overlap, skip it.
				k := min(len(b), int(g.seq+uint32(g.span())-seq))
				fl.compareOOO(d, g, seq, b[:k], frame)
				b, seq = b[k:], seq+uint32(k)
				continue
			} else if int(rel) < len(b) {
				// Store the part before piece i.
				if !fl.store(d, i, seq, b[:rel], 0, frame, ts, ack, hasAck) {
					return
				}
				b, seq = b[rel:], seq+uint32(rel)
				continue
			}
		}
		if !fl.store(d, i, seq, b, miss, frame, ts, ack, hasAck) {
			return
		}
		miss, b = 0, nil
	}
	for s.oooBytes > a.cfg.FlowBufferLimit && len(s.ooo) > 0 {
		fl.fillHole(d, GapBudget, frame)
	}
}

// firstEndingAfter returns the index of the first buffered piece that ends
// after seq (the pieces are sorted and disjoint, so their ends increase).
func (s *stream) firstEndingAfter(seq uint32) int {
	lo, hi := 0, len(s.ooo)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if g := &s.ooo[m]; int32(g.seq+uint32(g.span())-seq) <= 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// store inserts one piece at index i, copying b into a pooled buffer. When the
// memory budget has no room it first gives up the oldest holes of other
// flows, then of this one; it reports false (and drops the piece, which then
// lies in a later gap) when there is still no room.
func (fl *flow) store(d Dir, i int, seq uint32, b []byte, miss int, frame int, ts time.Time, ack uint32, hasAck bool) bool {
	a := fl.a
	s := &fl.s[d]
	buf := a.pool.get(len(b))
	for buf == nil {
		victim := a.ooo.onext
		if victim == fl {
			victim = fl.onext
		}
		if victim == &a.ooo {
			break
		}
		victim.giveUpOldest(frame)
		buf = a.pool.get(len(b))
	}
	if buf == nil && len(b) <= maxBuf {
		// Give up our own holes before this piece.
		for buf == nil && len(s.ooo) > 0 && int32(s.ooo[0].seq-seq) < 0 {
			fl.fillHole(d, GapBudget, frame)
			buf = a.pool.get(len(b))
		}
		if int32(s.next-seq) >= 0 {
			// The piece became in order.
			if buf != nil {
				a.pool.put(buf)
			}
			fl.data(d, seq, b, miss, frame, ts, ack, hasAck)
			return false
		}
		// Recompute the insertion index after the holes were filled.
		i = 0
		for i < len(s.ooo) && int32(s.ooo[i].seq-seq) < 0 {
			i++
		}
	}
	if buf == nil {
		a.stats.NoMemoryBytes += uint64(len(b))
		return false
	}
	buf = append(buf, b...)
	s.ooo = append(s.ooo, oooSeg{})
	copy(s.ooo[i+1:], s.ooo[i:])
	s.ooo[i] = oooSeg{seq: seq, data: buf, miss: miss, frame: frame, ts: ts, ack: ack, hasAck: hasAck}
	s.oooBytes += len(b)
	a.stats.OOOSegments++
	a.stats.OOOBytesBuffered += uint64(len(b))
	if !fl.inOOO {
		a.oooLink(fl)
	}
	return true
}

// giveUpOldest gives up the first hole of each direction holding data.
func (fl *flow) giveUpOldest(frame int) {
	for d := range fl.s {
		if len(fl.s[d].ooo) > 0 {
			fl.fillHole(Dir(d), GapBudget, frame)
		}
	}
	if fl.inOOO && len(fl.s[0].ooo) == 0 && len(fl.s[1].ooo) == 0 {
		fl.a.oooUnlink(fl)
	}
}

// record keeps delivered octets in the retransmission history ring.
func (s *stream) record(b []byte, off uint64) {
	if s.hist == nil {
		return
	}
	m := uint64(len(s.hist) - 1)
	if len(b) > len(s.hist) {
		off += uint64(len(b) - len(s.hist))
		b = b[len(b)-len(s.hist):]
	}
	i := off & m
	n := copy(s.hist[i:], b)
	copy(s.hist, b[n:])
}

// retrans handles octets b at seq that were delivered before: counts them
// and compares them with the history.
func (fl *flow) retrans(d Dir, seq uint32, b []byte, frame int) {
	s := &fl.s[d]
	if len(b) == 0 {
		return
	}
	if off := s.nextOff - uint64(s.next-seq); off < s.lastGap[1] && off+uint64(len(b)) > s.lastGap[0] {
		// Octets for a hole already reported as a gap.
		fl.a.stats.LateBytes += uint64(len(b))
		fl.fr[d].finding(finding.TCPLateData, seq, len(b), off, frame)
		return
	}
	fl.a.stats.RetransBytes += uint64(len(b))
	if s.hist == nil {
		return
	}
	back := uint64(s.next - seq) // octets from seq to next
	if limit := min(uint64(len(s.hist)), s.nextOff-s.histFrom); back > limit {
		// Only the tail is still in the ring.
		skip := back - limit
		if skip >= uint64(len(b)) {
			return
		}
		b, seq, back = b[skip:], seq+uint32(skip), limit
	}
	off := s.nextOff - back
	m := uint64(len(s.hist) - 1)
	for j := range b {
		if s.hist[(off+uint64(j))&m] != b[j] {
			fl.inconsistent(d, seq+uint32(j), len(b)-j, off+uint64(j), frame)
			return
		}
	}
}

// compareOOO compares octets b at seq with the buffered piece g they
// overlap.
func (fl *flow) compareOOO(d Dir, g *oooSeg, seq uint32, b []byte, frame int) {
	fl.a.stats.RetransBytes += uint64(len(b))
	at := int(seq - g.seq)
	for j := range b {
		if at+j >= len(g.data) {
			return // the cut part of the piece
		}
		if g.data[at+j] != b[j] {
			s := &fl.s[d]
			fl.inconsistent(d, seq+uint32(j), len(b)-j, s.nextOff+uint64(seq+uint32(j)-s.next), frame)
			return
		}
	}
}

func (fl *flow) inconsistent(d Dir, seq uint32, n int, off uint64, frame int) {
	a := fl.a
	if !fl.c.IWARP {
		return
	}
	a.stats.InconsistentRetran++
	a.evRetrans = RetransEvent{Dir: d, Seq: seq, Len: n, Offset: off, Frame: frame}
	a.h.Retransmission(&fl.c, &a.evRetrans)
}

// close ends the connection: missing data is reported, the framers finish,
// Closed is sent (for iWARP connections) and buffers go back to the pool. The
// flow stays in the table (as a tombstone, or for start to reuse).
func (fl *flow) close(reason CloseReason, frame int) {
	if fl.closed {
		return
	}
	a := fl.a
	if reason != CloseRST {
		// After a RST nothing more is coming; otherwise report the holes.
		for d := range fl.s {
			fl.finish(Dir(d), frame)
		}
	} else {
		for d := range fl.s {
			s := &fl.s[d]
			for len(s.ooo) > 0 {
				fl.fillHole(Dir(d), GapClose, frame)
			}
		}
	}
	for d := range fl.fr {
		fl.fr[d].end(frame)
	}
	if fl.c.IWARP {
		a.evClose = CloseEvent{Reason: reason, Frame: frame, Time: fl.c.LastTime}
		if reason == CloseRST && fl.s[DirBA].rst && !fl.s[DirAB].rst {
			a.evClose.Dir = DirBA
		}
		a.h.Closed(&fl.c, &a.evClose)
	}
	if a.cfg.Ended != nil {
		a.cfg.Ended(&fl.c)
	}
	for d := range fl.s {
		s := &fl.s[d]
		for i := range s.ooo {
			a.pool.put(s.ooo[i].data)
		}
		s.ooo = s.ooo[:0]
		s.oooBytes = 0
		a.pool.put(s.hist)
		s.hist = nil
		fl.fr[d].release()
	}
	a.oooUnlink(fl)
	fl.closed = true
}

// finish reports the data still missing in direction d: holes before
// buffered data, and the tail up to the FIN or to what the peer acknowledged.
func (fl *flow) finish(d Dir, frame int) {
	s := &fl.s[d]
	if !s.started || s.untracked {
		return
	}
	for len(s.ooo) > 0 {
		fl.fillHole(d, GapClose, frame)
	}
	var end uint32
	switch {
	case s.fin:
		end = s.finSeq
	case s.hasAck:
		end = s.ack
		if end-s.next == 1 {
			end = s.next // the peer acknowledged a FIN we did not see
		}
	default:
		return
	}
	if rel := int32(end - s.next); rel > 0 {
		fl.gap(d, uint64(rel), GapClose, frame)
	}
}

// remove closes the flow and takes it out of the table.
func (a *Assembler) remove(fl *flow, reason CloseReason, frame int) {
	if a.cfg.Removing != nil {
		a.cfg.Removing(&fl.c, reason)
	}
	fl.close(reason, frame)
	delete(a.flows, fl.key)
	fl.prev.next, fl.next.prev = fl.next, fl.prev
	fl.next, fl.prev = nil, nil
	if a.last == fl {
		a.last = nil
	}
	fl.c = Conn{}
	fl.s = [2]stream{}
	a.freeFlows = append(a.freeFlows, fl)
}

func (a *Assembler) touch(fl *flow) {
	if a.lru.next == fl {
		return
	}
	if fl.next != nil && fl.next != fl {
		fl.prev.next, fl.next.prev = fl.next, fl.prev
	}
	fl.next, fl.prev = a.lru.next, &a.lru
	a.lru.next.prev = fl
	a.lru.next = fl
}

func (a *Assembler) oooLink(fl *flow) {
	fl.inOOO = true
	fl.onext, fl.oprev = &a.ooo, a.ooo.oprev
	a.ooo.oprev.onext = fl
	a.ooo.oprev = fl
}

func (a *Assembler) oooUnlink(fl *flow) {
	if !fl.inOOO {
		return
	}
	fl.inOOO = false
	fl.oprev.onext, fl.onext.oprev = fl.onext, fl.oprev
	fl.onext, fl.oprev = nil, nil
}
