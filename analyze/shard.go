package analyze

// The flow-sharded engine (Config.Workers > 1). One goroutine reads the capture and
// hands frames out in chunks; each of N shards owns the flows whose
// 4-tuple hashes to it (reassembly.Shard) with its own Assembler, Tracker
// and consumer; a merger (outMerger) writes the shards' output back in frame
// order.
//
// The output is the one of a single shard, octet for octet:
//   - every shard sees every frame: it reassembles the frames it owns and
//     only advances its clock on the others (Assembler.Advance), so idle
//     flows expire at the same frame; what expiring connections print is
//     cut into blocks (Config.Removing) that the merger orders as one
//     Assembler would, least recently active first;
//   - a shard numbers its connections by itself; it leaves a place for the
//     connection number in what it prints and reports the frame at which
//     each connection started, was taken for iWARP and ended
//     (Config.Started, Handler.Opened, Config.Ended). The merger, reading
//     frames in order, numbers connections as a single Assembler would,
//     keeps the numbers of iWARP connections (the -z tables list them) and
//     forgets the others when they end, so that its memory follows the
//     flows in the table, not all the flows of the capture;
//   - at the end, each connection's last events are cut into blocks that
//     the merger orders as one Assembler's Flush (most recently active
//     first) and one Tracker's Finish (by connection number) would.
//
// What stays per shard: the flow-table and memory budgets of reassembly and
// the connection limits of track, which act only under memory pressure.

import (
	"bufio"
	"io"
	"sort"
	"strconv"
	"sync"

	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/reassembly"
	"github.com/iwkit/iwkit/track"
	"github.com/iwkit/iwkit/ulp"
)

const (
	chunkFrames = 256     // frames per chunk handed to the shards
	chunkArena  = 1 << 20 // octets of frame data per chunk
	maxInArena  = 1 << 18 // frames larger than this get their own buffer
)

// connPatch is a place in a shard's output where a connection number goes.
type connPatch struct {
	off   int    // offset in shardOut.buf
	local uint64 // the shard's number for the connection
}

// connEvent tells that at frame (an index in the chunk) a connection
// started, was taken for iWARP or ended.
type connEvent struct {
	frame int
	local uint64
}

// Block phases at the end of the capture, in output order.
const (
	phaseFlush  = iota // Assembler.Flush: key is the connection's last frame
	phaseFinish        // Tracker.Finish: key is the connection (shard's number)
)

// endBlock is what one connection printed as it expired or at the end
// of the capture.
type endBlock struct {
	frame      int // expiry: index in the chunk of the frame at hand
	phase      int // end of capture: phaseFlush or phaseFinish
	key        int64
	start, end int // in shardOut.buf; end -1 while open
	p0         int // first patch of the block
}

// shardOut is what one shard printed for one chunk (or at the end).
type shardOut struct {
	buf     []byte
	ends    []int // ends[i]: end of the output for the chunk's frame i
	patches []connPatch
	starts  []connEvent
	opened  []connEvent
	ended   []connEvent
	blocks  []endBlock // connections expired (in a chunk), or ended (at the end)
}

func (o *shardOut) reset() {
	o.buf, o.ends, o.patches, o.blocks = o.buf[:0], o.ends[:0], o.patches[:0], o.blocks[:0]
	o.starts, o.opened, o.ended = o.starts[:0], o.opened[:0], o.ended[:0]
}

// cut ends the open block and starts one.
func (o *shardOut) cut(b endBlock) {
	o.close()
	b.start, b.end, b.p0 = len(o.buf), -1, len(o.patches)
	o.blocks = append(o.blocks, b)
}

// close ends the open block, if any.
func (o *shardOut) close() {
	if n := len(o.blocks); n > 0 && o.blocks[n-1].end < 0 {
		o.blocks[n-1].end = len(o.buf)
	}
}

// chunk is a run of consecutive frames, seen by every shard.
type chunk struct {
	frames []pcap.Frame
	pkts   []pcap.Packet // their TCP segments, decoded by the reader
	errs   []error       // or why they hold none
	owner  []int32       // shard owning each frame
	arena  []byte        // the frames' data
	out    []shardOut
	wg     sync.WaitGroup // one per shard
}

func (c *chunk) reset() {
	c.frames, c.pkts, c.errs, c.owner, c.arena = c.frames[:0], c.pkts[:0], c.errs[:0], c.owner[:0], c.arena[:0]
}

// add copies fr into the chunk and decodes its TCP segment, which tells
// the shard that owns it (frames without one go to shard 0, which notes
// the damaged ones). It reports whether the chunk is full.
func (c *chunk) add(fr *pcap.Frame, shards int) bool {
	f := *fr
	if len(f.Data) > maxInArena {
		f.Data = append([]byte(nil), f.Data...)
	} else {
		n := len(c.arena)
		c.arena = append(c.arena, f.Data...)
		f.Data = c.arena[n:len(c.arena):len(c.arena)]
	}
	c.frames = append(c.frames, f)
	c.pkts = append(c.pkts, pcap.Packet{})
	p := &c.pkts[len(c.pkts)-1]
	err := pcap.DecodeTCP(f.LinkType, f.Data, p)
	owner := 0
	if err == nil {
		owner = reassembly.Shard(p, shards)
	}
	c.errs = append(c.errs, err)
	c.owner = append(c.owner, int32(owner))
	return len(c.frames) == chunkFrames || cap(c.arena)-len(c.arena) < maxInArena
}

// shard owns the flows that hash to it.
type shard struct {
	id  int
	h   *handler
	out Out       // the consumer's output; its sink is cur
	cur *shardOut // the output of the chunk at hand
	idx int       // index in the chunk of the frame at hand
	end shardOut
}

func newShard(id, n int, cfg *Config, newConsumer func(int, *Out) Consumer) *shard {
	s := &shard{id: id}
	rc, lim, keep := cfg.limits(n)
	s.h = newHandler(newConsumer(id, &s.out), lim, keep)
	s.h.ulpSetup(cfg)
	rc.Started = func(c *reassembly.Conn) { s.cur.starts = append(s.cur.starts, s.event(c)) }
	rc.Ended = func(c *reassembly.Conn) { s.cur.ended = append(s.cur.ended, s.event(c)) }
	rc.Removing = s.removing
	s.h.asm = reassembly.New(rc, shardHandler{s.h, s})
	return s
}

func (s *shard) event(c *reassembly.Conn) connEvent { return connEvent{frame: s.idx, local: c.ID} }

// shardHandler is the shard's handler, telling the merger of the
// connections taken for iWARP.
type shardHandler struct {
	*handler
	s *shard
}

func (h shardHandler) Opened(c *reassembly.Conn) {
	h.s.cur.opened = append(h.s.cur.opened, h.s.event(c))
	h.handler.Opened(c)
}

// removing cuts what a connection prints as it expires or ends into a
// block of its own.
func (s *shard) removing(c *reassembly.Conn, reason reassembly.CloseReason) {
	switch reason {
	case reassembly.CloseIdle:
		s.cur.cut(endBlock{frame: s.idx, key: int64(c.LastFrame)})
	case reassembly.CloseEnd:
		s.cur.cut(endBlock{phase: phaseFlush, key: int64(c.LastFrame)})
	}
}

func (s *shard) use(out *shardOut) {
	s.cur, s.out.sink = out, out
}

// run processes chunks until in is closed, then the end of the capture.
func (s *shard) run(in <-chan *chunk, done *sync.WaitGroup) {
	defer done.Done()
	h, a := s.h, s.h.asm
	for c := range in {
		out := &c.out[s.id]
		out.reset()
		s.use(out)
		for i := range c.frames {
			fr := &c.frames[i]
			s.idx = i
			h.frame(fr)
			a.Advance(fr.Timestamp) // expiry first, as Feed would
			out.close()
			if int(c.owner[i]) == s.id {
				if err := c.errs[i]; err == nil {
					a.Feed(fr.Number, fr.Timestamp, &c.pkts[i])
				} else {
					h.undecodable(fr, err)
				}
			}
			out.ends = append(out.ends, len(out.buf))
		}
		c.wg.Done()
	}
	// The end of the capture, cut into blocks per connection.
	out := &s.end
	s.use(out)
	a.Flush()
	last := -1
	h.beforeFinding = func(conn int) {
		if conn != last {
			out.cut(endBlock{phase: phaseFinish, key: int64(conn)})
			last = conn
		}
	}
	h.finishing = true
	h.t.Finish()
	h.ulpFinish()
	h.beforeFinding = nil
	out.close()
}

// outMerger writes the shards' output in frame order with global connection
// numbers.
type outMerger struct {
	w       *bufio.Writer
	iwarp   map[[2]uint64]uint64 // {shard, shard's number} -> global number
	pending map[[2]uint64]uint64 // the same for the others, while they last
	next    uint64
	num     []byte
	refs    []blockRef
}

func (m *outMerger) global(shard int, local uint64) uint64 {
	k := [2]uint64{uint64(shard), local}
	if g, ok := m.iwarp[k]; ok {
		return g
	}
	return m.pending[k]
}

// events applies the connection events of shard s at frame i, from *at on.
func (m *outMerger) events(evs []connEvent, s, i int, at *int, apply func(k [2]uint64)) {
	for ; *at < len(evs) && evs[*at].frame == i; *at++ {
		apply([2]uint64{uint64(s), evs[*at].local})
	}
}

// emit writes o.buf[from:to] with the connection numbers patched in,
// starting at patch *pi.
func (m *outMerger) emit(o *shardOut, shard, from, to int, pi *int) {
	for *pi < len(o.patches) && o.patches[*pi].off < to {
		p := o.patches[*pi]
		m.w.Write(o.buf[from:p.off])
		m.num = appendUint(m.num[:0], m.global(shard, p.local))
		m.w.Write(m.num)
		from = p.off
		*pi++
	}
	m.w.Write(o.buf[from:to])
}

// blockRef is a block of one shard in the merger's order.
type blockRef struct {
	shard int
	b     endBlock
	key   int64
}

// chunk writes one chunk's output once every shard is done with it.
func (m *outMerger) chunk(c *chunk) {
	c.wg.Wait()
	n := len(c.out)
	var from, pi, si, oi, ei, bi [MaxWorkers]int
	for i := range c.frames {
		own := int(c.owner[i])
		o := &c.out[own]
		m.events(o.starts, own, i, &si[own], func(k [2]uint64) {
			m.next++
			m.pending[k] = m.next
		})
		m.events(o.opened, own, i, &oi[own], func(k [2]uint64) {
			m.iwarp[k] = m.pending[k]
			delete(m.pending, k)
		})
		// Connections that expired at this frame, least recently active
		// first, then what the owner printed for the frame.
		m.refs = m.refs[:0]
		for s := 0; s < n; s++ {
			for o := &c.out[s]; bi[s] < len(o.blocks) && o.blocks[bi[s]].frame == i; bi[s]++ {
				m.refs = append(m.refs, blockRef{shard: s, b: o.blocks[bi[s]], key: o.blocks[bi[s]].key})
			}
		}
		if len(m.refs) > 1 {
			sortRefs(m.refs, func(a, b *blockRef) bool { return a.key < b.key })
		}
		for _, r := range m.refs {
			m.emit(&c.out[r.shard], r.shard, r.b.start, r.b.end, &pi[r.shard])
			from[r.shard] = r.b.end
		}
		for s := 0; s < n; s++ {
			o := &c.out[s]
			if end := o.ends[i]; end > from[s] {
				m.emit(o, s, from[s], end, &pi[s])
				from[s] = end
			}
			// After the frame's output: connections that ended here.
			m.events(o.ended, s, i, &ei[s], func(k [2]uint64) { delete(m.pending, k) })
		}
	}
}

func sortRefs(refs []blockRef, less func(a, b *blockRef) bool) {
	sort.SliceStable(refs, func(i, j int) bool { return less(&refs[i], &refs[j]) })
}

// end writes the shards' end-of-capture blocks in one Assembler's and one
// Tracker's order.
func (m *outMerger) end(shards []*shard) {
	var refs []blockRef
	for _, s := range shards {
		for _, b := range s.end.blocks {
			r := blockRef{shard: s.id, b: b, key: -b.key} // Flush: most recent first
			if b.phase == phaseFinish {
				r.key = int64(m.global(s.id, uint64(b.key)))
			}
			refs = append(refs, r)
		}
	}
	sortRefs(refs, func(a, b *blockRef) bool {
		if a.b.phase != b.b.phase {
			return a.b.phase < b.b.phase
		}
		return a.key < b.key
	})
	for _, r := range refs {
		pi := r.b.p0
		m.emit(&shards[r.shard].end, r.shard, r.b.start, r.b.end, &pi)
	}
}

// mergerDone, set by tests, sees the merger at the end.
var mergerDone func(*outMerger)

// runSharded is Run over n shards.
func runSharded(src Source, cfg *Config, n int, w *bufio.Writer, newConsumer func(int, *Out) Consumer) (*Report, error) {
	shards := make([]*shard, n)
	ins := make([]chan *chunk, n)
	var shardsDone sync.WaitGroup
	maxChunks := 2*n + 2 // bounds memory: chunks in flight
	for i := range shards {
		shards[i] = newShard(i, n, cfg, newConsumer)
		ins[i] = make(chan *chunk, maxChunks)
		shardsDone.Add(1)
		go shards[i].run(ins[i], &shardsDone)
	}
	free := make(chan *chunk, maxChunks)
	merge := make(chan *chunk, maxChunks)
	m := &outMerger{w: w, iwarp: map[[2]uint64]uint64{}, pending: map[[2]uint64]uint64{}}
	merged := make(chan struct{})
	go func() {
		for c := range merge {
			m.chunk(c)
			free <- c
		}
		close(merged)
	}()

	var fr pcap.Frame
	var derr error
	allocated, frames := 0, 0
	for done := false; !done; {
		var c *chunk
		select {
		case c = <-free:
		default:
			if allocated < maxChunks {
				c = &chunk{arena: make([]byte, 0, chunkArena), out: make([]shardOut, n)}
				allocated++
			} else {
				c = <-free
			}
		}
		c.reset()
		for full := false; !full; {
			if cfg.Count > 0 && frames >= cfg.Count {
				done = true
				break
			}
			err := src.Next(&fr)
			if err != nil {
				if err != io.EOF {
					derr = err
				}
				done = true
				break
			}
			frames++
			if cfg.Progress != nil {
				cfg.Progress(fr.CapLen + 16)
			}
			full = c.add(&fr, n)
		}
		if len(c.frames) == 0 {
			free <- c
			continue
		}
		c.wg.Add(n)
		for _, in := range ins {
			in <- c
		}
		merge <- c
	}
	for _, in := range ins {
		close(in)
	}
	close(merge)
	<-merged
	shardsDone.Wait()
	m.end(shards)
	if mergerDone != nil {
		mergerDone(m)
	}
	return m.report(shards), derr
}

// report merges the shards' tables under the global connection numbers.
func (m *outMerger) report(shards []*shard) *Report {
	r := &Report{Conns: map[int]*reassembly.Conn{}, Worst: -1, ULP: &ulp.Stats{}}
	trackers := make([]*track.Tracker, len(shards))
	for i, s := range shards {
		for id, c := range s.h.conns {
			r.Conns[int(m.global(i, uint64(id)))] = c
		}
		r.ConnsDropped += s.h.dropped
		for _, cs := range s.h.t.AllConnStats() {
			cs.Conn = int(m.global(i, uint64(cs.Conn)))
			r.ConnStats = append(r.ConnStats, cs)
		}
		r.Asm.Add(s.h.asm.Stats())
		r.Worst = max(r.Worst, s.h.worst)
		trackers[i] = s.h.t
		r.ULP.Merge(&s.h.u.stats)
	}
	sort.Slice(r.ConnStats, func(i, j int) bool { return r.ConnStats[i].Conn < r.ConnStats[j].Conn })
	r.Stats = track.MergedStats(trackers...)
	return r
}

func appendUint(b []byte, x uint64) []byte { return strconv.AppendUint(b, x, 10) }
