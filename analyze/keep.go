package analyze

// What Run's sharded engine keeps of a record between the shard that
// raised it and the merger that hands it out in capture order. A record
// and what it points to are only valid during the call that raised it
// (the reassembly's buffers, the tracker's and the ULP decoders' records
// are reused), so the shard copies it, deeply, into memory of the chunk's
// output; the merger patches the shard's connection numbers to the global
// ones and hands the copy out. The copies live until the chunk is reused.
// A record a Splitter's Preparer took is not copied: the shard keeps its
// slimRecord beside what the Preparer made of it (Splitter).

import (
	"net/netip"
	"time"
	"unsafe"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/reassembly"
	"github.com/iwkit/iwkit/track"
	"github.com/iwkit/iwkit/ulp"
)

// recorder is a shard's consumer under Run: it keeps a copy of each
// record, and an octet in the shard's output for it, so that the
// merger's ranges of output (what a frame, an expiring connection, the end
// of the capture raised) say which records to hand out.
type recorder struct {
	out  *Out
	prep Preparer // the Splitter's, when the consumer is one
}

// keptRecord is a record kept at offset off of the shard's output: a
// copy (r), or, when the Preparer took it, what Record gets of it besides
// what the Preparer made of it, prepared[p0:p1] of the shard's output.
type keptRecord struct {
	off    int
	r      *Record
	p0, p1 int
	taken  bool // by the Preparer: s holds the record
	s      slimRecord
}

// slimRecord is what a taken record keeps (Splitter): the record's place
// and time, and of its connection its number (the shard's) and what
// names its ends. A copy of the whole record and connection was ~830
// octets, written by the shard and read by the merger for every record:
// on 2 M small frames it cost more than what the index does with them.
type slimRecord struct {
	Time                  time.Time
	Rel                   time.Duration
	Frame                 int
	FirstFrame, LastFrame int
	conn                  uint64 // the shard's number (hasConn)
	Addr                  [2]netip.AddrPort
	connLast              int // the connection's LastFrame, LastTime
	connLastTime          time.Time
	Seq, End              uint32
	Kind                  Kind
	Dir                   reassembly.Dir
	HasSeq                bool
	hasConn, iwarp        bool
	initiator             int8
}

func (k *recorder) Record(r *Record) {
	o := k.out.sink
	// The kept record is written where it stays (a copy of one built
	// aside was a third of what this cost).
	if n := len(o.recs); n < cap(o.recs) {
		o.recs = o.recs[:n+1]
	} else {
		o.recs = append(o.recs, keptRecord{})
	}
	kr := &o.recs[len(o.recs)-1]
	kr.off, kr.r, kr.taken = len(o.buf), nil, false
	o.buf = append(o.buf, 0)
	if k.prep != nil {
		n := len(o.prepared)
		b, ok := k.prep.Prepare(r, o.prepared)
		if ok {
			o.prepared = b
			kr.p0, kr.p1, kr.taken = n, len(b), true
			kr.s = slimRecord{Time: r.Time, Rel: r.Rel, Frame: r.Frame, FirstFrame: r.FirstFrame, LastFrame: r.LastFrame,
				Seq: r.Seq, End: r.End, Kind: r.Kind, Dir: r.Dir, HasSeq: r.HasSeq}
			if c := r.Conn; c != nil {
				kr.s.conn, kr.s.Addr, kr.s.hasConn, kr.s.iwarp, kr.s.initiator = c.ID, c.Addr, true, c.IWARP, c.Initiator
				kr.s.connLast, kr.s.connLastTime = c.LastFrame, c.LastTime
			}
			return
		}
		o.prepared = b[:n]
	}
	kr.r = o.keep.record(r, o.frames)
}

// hand gives the consumer a record shard kept, under the global
// connection numbers.
func (m *outMerger) hand(o *shardOut, k *keptRecord, shard int) {
	if k.taken {
		m.handSlim(o, k, shard)
		return
	}
	r := k.r
	if r.Conn != nil {
		r.Conn.ID = m.globalCached(shard, r.Conn.ID)
	}
	if t := r.Finding.Track; t != nil {
		t.Conn = int(m.globalCached(shard, uint64(t.Conn)))
	}
	if r.Op != nil {
		r.Op.Conn = int(m.globalCached(shard, uint64(r.Op.Conn)))
	}
	if r.Term != nil {
		r.Term.Conn = int(m.globalCached(shard, uint64(r.Term.Conn)))
	}
	m.c.Record(r)
}

// handSlim gives the consumer a taken record (Splitter): its slimRecord
// in the merger's one Record and connection, and what the Preparer made.
func (m *outMerger) handSlim(o *shardOut, k *keptRecord, shard int) {
	s := &k.s
	r := &m.slim
	*r = Record{Kind: s.Kind, Frame: s.Frame, Time: s.Time, Rel: s.Rel, Dir: s.Dir, FirstFrame: s.FirstFrame, LastFrame: s.LastFrame,
		HasSeq: s.HasSeq, Seq: s.Seq, End: s.End}
	if s.hasConn {
		c := &m.slimConn
		c.ID, c.Addr, c.IWARP, c.Initiator = m.globalCached(shard, s.conn), s.Addr, s.iwarp, s.initiator
		c.LastFrame, c.LastTime = s.connLast, s.connLastTime
		r.Conn, r.Src, r.Dst = c, s.Addr[s.Dir], s.Addr[s.Dir.Other()]
	}
	r.Prepared = o.prepared[k.p0:k.p1:k.p1]
	if r.Prepared == nil {
		r.Prepared = noOctets
	}
	m.c.Record(r)
}

// noOctets is what a Preparer made of a record it took without appending
// anything: Prepared is not nil.
var noOctets = []byte{}

// globalCached is global, remembering the last connection of each shard:
// records come in runs of one connection (numCache).
func (m *outMerger) globalCached(shard int, local uint64) uint64 {
	c := &m.nums[shard]
	if !c.ok || c.local != local {
		c.local, c.global, c.ok = local, m.global(shard, local), true
		c.digits = appendUint(c.digits[:0], c.global)
	}
	return c.global
}

// slab hands out values that do not move: blocks of slabBlock, reused
// after reset.
type slab[T any] struct {
	blocks [][]T
	b, i   int
}

const slabBlock = 128

func (s *slab[T]) next() *T {
	if s.b < len(s.blocks) && s.i == len(s.blocks[s.b]) {
		s.b, s.i = s.b+1, 0
	}
	if s.b == len(s.blocks) {
		s.blocks = append(s.blocks, make([]T, slabBlock))
	}
	p := &s.blocks[s.b][s.i]
	s.i++
	return p
}

func (s *slab[T]) reset() { s.b, s.i = 0, 0 }

// keepVal returns a copy of *p in s (nil for nil).
func keepVal[T any](s *slab[T], p *T) *T {
	if p == nil {
		return nil
	}
	q := s.next()
	*q = *p
	return q
}

// flat holds copies of slices, packed in blocks that do not move.
type flat[T any] struct {
	blocks [][]T
	b      int
}

const flatBlock = 64 << 10

// copy returns a copy of p (nil when p is empty).
func (f *flat[T]) copy(p []T) []T {
	if len(p) == 0 {
		return nil
	}
	for ; ; f.b++ {
		if f.b == len(f.blocks) {
			f.blocks = append(f.blocks, make([]T, 0, max(flatBlock/int(unsafe.Sizeof(p[0])), len(p))))
		}
		blk := f.blocks[f.b]
		if n := len(blk); cap(blk)-n >= len(p) {
			blk = append(blk, p...)
			f.blocks[f.b] = blk
			return blk[n:len(blk):len(blk)]
		}
	}
}

func (f *flat[T]) reset() {
	for i := range f.blocks[:min(f.b+1, len(f.blocks))] {
		f.blocks[i] = f.blocks[i][:0]
	}
	f.b = 0
}

// keeper holds the copies of one shard's records for one chunk.
type keeper struct {
	recs     slab[Record]
	conns    slab[reassembly.Conn]
	pdus     slab[reassembly.PDUEvent]
	findings slab[track.Finding]
	ops      slab[track.Operation]
	terms    slab[track.TerminateReport]
	closes   slab[reassembly.CloseEvent]
	gaps     slab[reassembly.GapEvent]
	resyncs  slab[reassembly.ResyncEvent]
	msgs     slab[ulp.Message]
	cmds     slab[ulp.Command]
	octets   flat[byte]
	ints     flat[int]
	fvs      flat[ulp.FV]
	markers  flat[decode.MarkerAt]
	stags    flat[track.STagInfo]
}

func (k *keeper) reset() {
	k.recs.reset()
	k.conns.reset()
	k.pdus.reset()
	k.findings.reset()
	k.ops.reset()
	k.terms.reset()
	k.closes.reset()
	k.gaps.reset()
	k.resyncs.reset()
	k.msgs.reset()
	k.cmds.reset()
	k.octets.reset()
	k.ints.reset()
	k.fvs.reset()
	k.markers.reset()
	k.stags.reset()
}

// conn copies a connection.
func (k *keeper) conn(rc *reassembly.Conn) *reassembly.Conn {
	c := keepVal(&k.conns, rc)
	for d := range c.Params {
		f := &c.Params[d].Frame
		f.PrivateData = k.octets.copy(f.PrivateData)
	}
	return c
}

// record returns a deep copy of r; octets that lie in frames (the chunk's
// frame data, which outlives the copy) are not copied.
func (k *keeper) record(r *Record, frames []byte) *Record {
	c := keepVal(&k.recs, r)
	if r.Kind == KindOperation {
		c.stags, c.h = k.stags.copy(r.STags()), nil
	}
	if r.Conn != nil {
		c.Conn = k.conn(r.Conn)
	}
	if r.PDU != nil {
		c.PDU = k.pdu(r.PDU, frames)
	}
	if t := r.Finding.Track; t != nil {
		c.Finding.Track = keepVal(&k.findings, t)
		c.Finding.Track.Frames = k.ints.copy(t.Frames)
	}
	c.Op = keepVal(&k.ops, r.Op)
	c.Term = keepVal(&k.terms, r.Term)
	c.Close = keepVal(&k.closes, r.Close)
	c.Gap = keepVal(&k.gaps, r.Gap)
	c.Resync = keepVal(&k.resyncs, r.Resync)
	c.Cmd = keepVal(&k.cmds, r.Cmd)
	if m := r.ULP; m != nil {
		cm := keepVal(&k.msgs, m)
		cm.F = k.fvs.copy(m.F)
		for i := range cm.F {
			cm.F[i].V.B = k.octets.copy(cm.F[i].V.B)
		}
		cm.Summary = k.octets.copy(m.Summary)
		cm.Cmd = keepVal(&k.cmds, m.Cmd)
		if len(m.Members) > 0 { // an SMB2 compound: its members' fields too
			cm.Members = make([]ulp.Member, len(m.Members))
			for i := range m.Members {
				cm.Members[i].F = k.fvs.copy(m.Members[i].F)
			}
		}
		c.ULP = cm
	}
	return c
}

// pdu copies a PDU event: the wire octets once (unless they lie in
// frames), and every slice of the decoded PDU that lies in them (or in the
// ULPDU, which a PDU with markers holds apart) rebased onto the copy.
func (k *keeper) pdu(e *reassembly.PDUEvent, frames []byte) *reassembly.PDUEvent {
	c := keepVal(&k.pdus, e)
	wire := e.Wire
	if _, ok := octetsIn(wire, frames); !ok {
		wire = k.octets.copy(e.Wire)
	}
	c.Wire = wire
	p, q := &e.PDU, &c.PDU
	q.Markers = k.markers.copy(p.Markers)
	q.MPA.PrivateData = k.rebase(p.MPA.PrivateData, e.Wire, wire)
	q.FPDU.ULPDU = k.rebase(p.FPDU.ULPDU, e.Wire, wire)
	q.FPDU.Pad = k.rebase(p.FPDU.Pad, e.Wire, wire)
	u, cu := p.FPDU.ULPDU, q.FPDU.ULPDU
	q.Seg.Payload = k.rebase2(p.Seg.Payload, u, cu, e.Wire, wire)
	q.Seg.Terminate.TermDDPRaw = k.rebase2(p.Seg.Terminate.TermDDPRaw, u, cu, e.Wire, wire)
	q.Seg.Terminate.TermRDMARaw = k.rebase2(p.Seg.Terminate.TermRDMARaw, u, cu, e.Wire, wire)
	return c
}

// rebase returns s in cp, the copy of base, when s lies in base; else a
// copy of s.
func (k *keeper) rebase(s, base, cp []byte) []byte {
	if off, ok := octetsIn(s, base); ok {
		return cp[off : off+len(s) : off+len(s)]
	}
	return k.octets.copy(s)
}

// rebase2 is rebase over two bases, tried in turn.
func (k *keeper) rebase2(s, base, cp, base2, cp2 []byte) []byte {
	if off, ok := octetsIn(s, base); ok {
		return cp[off : off+len(s) : off+len(s)]
	}
	return k.rebase(s, base2, cp2)
}

// octetsIn reports whether the octets of s lie in base, and where.
func octetsIn(s, base []byte) (int, bool) {
	if len(s) == 0 || len(base) == 0 {
		return 0, false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	b := uintptr(unsafe.Pointer(unsafe.SliceData(base)))
	if p < b || p+uintptr(len(s)) > b+uintptr(len(base)) {
		return 0, false
	}
	return int(p - b), true
}
