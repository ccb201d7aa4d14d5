package analyze

// The flow-sharded engine (Config.Workers > 1). One goroutine reads the
// capture and hands frames out in chunks; each of N shards owns the flows
// the dispatcher gives it (by flow hash, see dispatcher) with its own
// Assembler, Tracker and consumer; a merger (outMerger) writes the shards'
// output back in frame order.
//
// What a frame costs does not grow with N: the reader decodes each frame's
// link, IP and TCP headers once, and lists for each shard the frames it
// takes a step at (chunk.steps): its own, and the few at which the
// capture's clock ticks (reassembly.Clock, once a second of capture time),
// where every shard expires its idle flows. A shard walks only its list;
// the merger looks at the owner of each frame, and at every shard only at
// the ticks. A chunk holds more frames as N grows, so that what a chunk
// costs each shard (a channel receive, a wait) stays a fixed share of a
// frame.
//
// The output is the one of a single shard, octet for octet:
//   - at the ticks every shard advances its clock (Assembler.Advance), so
//     idle flows expire at the same frame as with one Assembler; what
//     expiring connections print is cut into blocks (Config.Removing) that
//     the merger orders as one Assembler would, least recently active
//     first;
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
// A FrameConsumer still sees every frame in every shard (its contract):
// that costs a call per frame per shard.
//
// What stays per shard: the flow-table and memory budgets of reassembly and
// the connection limits of track, which act only under memory pressure.

import (
	"bufio"
	"io"
	"net/netip"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/internal/writev"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/reassembly"
	"github.com/iwkit/iwkit/track"
	"github.com/iwkit/iwkit/ulp"
)

// Chunk sizes. A chunk holds up to chunkFramesPerShard frames per shard
// (at least minChunkFrames) and arenaPerFrame octets of frame data per
// frame it may hold (at least minChunkArena): what a chunk costs each
// shard (a wake-up) is spread over a number of frames that does not
// shrink as shards are added. Chunks in flight: 2N+2 for few shards, at
// most what fits in inFlightArena octets of arenas (at least 3: one being
// read, one being decoded, one being written).
const (
	minChunkFrames      = 256
	chunkFramesPerShard = 128
	minChunkArena       = 512 << 10 // smaller arenas stay in cache: see BENCHMARKS.md
	arenaPerFrame       = 2 << 10
	maxInArena          = 1 << 18 // frames larger than this get their own buffer
	inFlightArena       = 64 << 20
	flowBucketBits      = 12 // 4096 buckets: see dispatcher
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
	// p0 is the first patch of the block (RunOrdered) or the first
	// record kept (Run): a shard has one or the other.
	p0 int
}

// shardOut is what one shard printed for one chunk (or at the end).
type shardOut struct {
	buf     []byte
	ends    []int // ends[k]: end of the output for the shard's step k (chunk.steps)
	patches []connPatch
	starts  []connEvent
	opened  []connEvent
	ended   []connEvent
	blocks  []endBlock // connections expired (in a chunk), or ended (at the end)
	// Run: the records the shard raised (at offsets of buf, which holds
	// an octet for each), and the copies they point to (keep.go).
	recs []keptRecord
	keep keeper
	// prepared: what a Splitter's Preparer made of the records it took.
	prepared []byte
	// frames is the chunk's frame data (its arena, whole): a PDU that
	// lies in one segment lies there, and stays there until the merger is
	// done with the chunk, so its copy need not copy it.
	frames []byte
}

func (o *shardOut) reset() {
	o.buf, o.ends, o.patches, o.blocks = o.buf[:0], o.ends[:0], o.patches[:0], o.blocks[:0]
	o.starts, o.opened, o.ended = o.starts[:0], o.opened[:0], o.ended[:0]
	if o.recs != nil {
		o.recs = o.recs[:0]
		o.keep.reset()
		o.prepared = o.prepared[:0]
	}
}

// cut ends the open block and starts one.
func (o *shardOut) cut(b endBlock) {
	o.close()
	b.start, b.end, b.p0 = len(o.buf), -1, len(o.patches)+len(o.recs)
	o.blocks = append(o.blocks, b)
}

// close ends the open block, if any.
func (o *shardOut) close() {
	if n := len(o.blocks); n > 0 && o.blocks[n-1].end < 0 {
		o.blocks[n-1].end = len(o.buf)
	}
}

// chunk is a run of consecutive frames.
type chunk struct {
	frames []pcap.Frame
	pkts   []pcap.Packet // their TCP segments, decoded by the reader
	errs   []error       // or why they hold none
	owner  []int32       // shard owning each frame
	// steps[s] lists, in order, the frames (indices in the chunk) shard s
	// takes a step at: those it owns, and the ticks.
	steps [][]int32
	ticks []int32   // frames at which the capture's clock ticks: every shard steps there
	first time.Time // time of the capture's first frame (the origin of Record.Rel)
	arena []byte    // the frames' data
	out   []shardOut
	wg    sync.WaitGroup // one per shard
}

func (c *chunk) reset() {
	c.frames, c.pkts, c.errs, c.owner, c.arena = c.frames[:0], c.pkts[:0], c.errs[:0], c.owner[:0], c.arena[:0]
	c.ticks = c.ticks[:0]
	for i := range c.steps {
		c.steps[i] = c.steps[i][:0]
	}
}

// dispatcher is the reader's side: it puts frames in chunks, decodes
// their TCP headers and gives each flow to a shard.
//
// Flows go to shards by bucket: a flow's hash (the same both ways) picks
// one of the buckets, and a bucket belongs to the shard it was
// first given to, round robin in order of first use. A few connections
// (the common case of a bulk capture) thus spread evenly over the shards,
// which a plain hash modulo N leaves to chance; many spread as the hash
// does. The table is fixed in size: no state per flow.
type dispatcher struct {
	n         int
	frames    int // frames per chunk
	arena     int // octets of arena per chunk
	clock     reassembly.Clock
	first     time.Time
	seen      bool
	buckets   [1 << flowBucketBits]int32 // shard+1; 0: not given yet
	nextShard int32
	last      pcap.Packet // addresses and ports of the last flow given
	lastShard int32
	reset     resetShards // listeners a reset just ended a connection to
}

// resetShards remembers, for the peers of a connection a TCP reset ended,
// the shard that owned it: the next connection the same host opens to the
// same listener goes to that shard. Linux cxgb4 retries an MPA v2 attempt
// its peer reset with MPA v1 from a new source port (c4iw_reconnect); the
// tracker links the two (track/fallback.go), which it can do only when
// one shard sees both. Without resets (a bulk capture) nothing is
// remembered and flows spread as before. Fixed in size: the oldest entry
// goes first.
type resetShards struct {
	keys  [resetShardsCap]peerPort
	shard [resetShardsCap]int32
	n     int // entries used
	next  int // the next to replace once full
}

const resetShardsCap = 64

// peerPort is a host and a listener (an address and port) it connects to.
type peerPort struct {
	host     netip.Addr
	listener netip.Addr
	port     uint16
}

func (r *resetShards) add(k peerPort, shard int32) {
	for i := 0; i < r.n; i++ {
		if r.keys[i] == k {
			r.shard[i] = shard
			return
		}
	}
	i := r.n
	if r.n < resetShardsCap {
		r.n++
	} else {
		i, r.next = r.next, (r.next+1)%resetShardsCap
	}
	r.keys[i], r.shard[i] = k, shard
}

func (r *resetShards) lookup(k peerPort) (int32, bool) {
	for i := 0; i < r.n; i++ {
		if r.keys[i] == k {
			return r.shard[i], true
		}
	}
	return 0, false
}

func newDispatcher(n int) *dispatcher {
	d := &dispatcher{n: n, frames: max(minChunkFrames, chunkFramesPerShard*n)}
	d.arena = max(minChunkArena, d.frames*arenaPerFrame)
	return d
}

func (d *dispatcher) newChunk() *chunk {
	c := &chunk{
		frames: make([]pcap.Frame, 0, d.frames),
		pkts:   make([]pcap.Packet, 0, d.frames),
		errs:   make([]error, 0, d.frames),
		owner:  make([]int32, 0, d.frames),
		steps:  make([][]int32, d.n),
		arena:  make([]byte, 0, d.arena),
		out:    make([]shardOut, d.n),
	}
	for i := range c.steps {
		c.steps[i] = make([]int32, 0, 2*d.frames/d.n)
	}
	return c
}

// shard returns the shard owning p's flow. The flow of the frame before
// is remembered: a burst of one connection (or its ACKs) is not hashed.
//
// A new flow whose first segment is a SYN to a listener a reset just ended
// a connection to, from the same host, goes where that connection went
// (resetShards); other new flows go to the shards in turn.
func (d *dispatcher) shard(p *pcap.Packet) int32 {
	l := &d.last
	if p.SrcPort == l.SrcPort && p.DstPort == l.DstPort && p.Src == l.Src && p.Dst == l.Dst ||
		p.SrcPort == l.DstPort && p.DstPort == l.SrcPort && p.Src == l.Dst && p.Dst == l.Src {
		if p.Flags&pcap.TCPRst != 0 {
			d.resetSeen(p, d.lastShard)
		}
		return d.lastShard
	}
	b := &d.buckets[reassembly.FlowHash(p)>>(64-flowBucketBits)]
	if *b == 0 {
		s, ok := int32(0), false
		if p.Flags&(pcap.TCPSyn|pcap.TCPAck) == pcap.TCPSyn && d.reset.n > 0 {
			s, ok = d.reset.lookup(peerPort{p.Src, p.Dst, p.DstPort})
		}
		if !ok {
			s = d.nextShard
			d.nextShard = (d.nextShard + 1) % int32(d.n)
		}
		*b = s + 1
	}
	d.last.Src, d.last.Dst, d.last.SrcPort, d.last.DstPort = p.Src, p.Dst, p.SrcPort, p.DstPort
	d.lastShard = *b - 1
	if p.Flags&pcap.TCPRst != 0 {
		d.resetSeen(p, d.lastShard)
	}
	return d.lastShard
}

// resetSeen remembers the shard of a flow a reset ends, for either end as
// the listener: which end accepted the connection is not known here.
func (d *dispatcher) resetSeen(p *pcap.Packet, shard int32) {
	d.reset.add(peerPort{p.Src, p.Dst, p.DstPort}, shard)
	d.reset.add(peerPort{p.Dst, p.Src, p.SrcPort}, shard)
}

// pinner is a Source that can read frames straight into a chunk's arena
// (pcap.Reader.Pin, for classic pcap).
type pinner interface {
	Pin(buf []byte) bool
}

// slot returns a place at the end of c.frames for the source to read the
// next frame into (the frame is not copied again: a copy of the struct
// just written, field by field, is a stall on every frame).
func (c *chunk) slot() *pcap.Frame {
	if n := len(c.frames); n < cap(c.frames) {
		c.frames = c.frames[:n+1] // the source sets every field
	} else {
		c.frames = append(c.frames, pcap.Frame{})
	}
	return &c.frames[len(c.frames)-1]
}

// next reads the source's next frame into a slot of c (taken back when
// the source has none).
func (c *chunk) next(src Source) (*pcap.Frame, error) {
	fr := c.slot()
	err := src.Next(fr)
	if err != nil {
		c.frames = c.frames[:len(c.frames)-1]
	}
	return fr, err
}

// add takes the frame the source read into c's last slot and decodes its
// TCP segment, which tells the shard that owns it (frames without one go
// to shard 0, which notes the damaged ones). Unless the source read it
// into c.arena (pinned), its data is copied there. It reports whether
// the chunk is full.
func (d *dispatcher) add(c *chunk, pinned bool) bool {
	i := int32(len(c.frames) - 1)
	f := &c.frames[i]
	if !d.seen {
		d.first, d.seen = f.Timestamp, true
	}
	if i == 0 {
		c.first = d.first
	}
	switch {
	case pinned:
	case len(f.Data) > maxInArena:
		f.Data = append([]byte(nil), f.Data...)
	default:
		n := len(c.arena)
		c.arena = append(c.arena, f.Data...)
		f.Data = c.arena[n:len(c.arena):len(c.arena)]
	}
	if int(i) < cap(c.pkts) {
		c.pkts = c.pkts[:i+1] // DecodeTCP sets every field a decoded segment uses
	} else {
		c.pkts = append(c.pkts, pcap.Packet{})
	}
	p := &c.pkts[i]
	err := pcap.DecodeTCP(f.LinkType, f.Data, p)
	owner := int32(0)
	if err == nil {
		owner = d.shard(p)
	}
	c.errs = append(c.errs, err)
	c.owner = append(c.owner, owner)
	if d.clock.Advance(f.Timestamp) {
		c.ticks = append(c.ticks, i)
		for s := range c.steps {
			c.steps[s] = append(c.steps[s], i)
		}
	} else {
		c.steps[owner] = append(c.steps[owner], i)
	}
	return !pinned && (len(c.frames) == d.frames || cap(c.arena)-len(c.arena) < maxInArena)
}

// shard owns the flows the dispatcher gives it.
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
	h := s.h
	for c := range in {
		out := &c.out[s.id]
		out.reset()
		out.frames = c.arena[:cap(c.arena)]
		s.use(out)
		if !h.seen {
			h.first, h.seen = c.first, true
		}
		steps := c.steps[s.id]
		if h.fc != nil { // it sees every frame
			k := 0
			for i := range c.frames {
				h.fc.Frame(&c.frames[i])
				if k < len(steps) && int(steps[k]) == i {
					s.step(c, i)
					k++
				}
			}
		} else {
			for _, i := range steps {
				s.step(c, int(i))
			}
		}
		h.last = c.frames[len(c.frames)-1].Timestamp
		c.wg.Done()
		// Yield the core: the merger this Done may have woken, and the
		// reader the merger wakes in turn, are queued on this shard's P
		// (Go runs a goroutine woken by another next on the waker's P),
		// where they would wait until this shard ran out of chunks; the
		// reader then filled chunks in bursts while the shards starved
		// in turn. With the yield, 2 shards went from 1.70-1.79x one
		// worker to 1.85-1.95x on 1 M frames (BENCHMARKS.md, item 9).
		runtime.Gosched()
	}
	// The end of the capture, cut into blocks per connection.
	out := &s.end
	s.use(out)
	h.asm.Flush()
	last := -1
	h.beforeFinding = func(conn int) {
		if conn != last {
			out.cut(endBlock{phase: phaseFinish, key: int64(conn)})
			last = conn
		}
	}
	h.finishing = true
	h.trackFinish()
	h.ulpFinish()
	h.beforeFinding = nil
	out.close()
}

// step is what the shard does at frame i of c: expire idle flows at a
// tick, then feed the frame if it is the shard's own.
func (s *shard) step(c *chunk, i int) {
	h, a, out := s.h, s.h.asm, s.cur
	fr := &c.frames[i]
	s.idx = i
	h.last = fr.Timestamp
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

// outMerger writes the shards' output in frame order with global connection
// numbers (RunOrdered), or hands the records they kept to c (Run).
type outMerger struct {
	c       Consumer      // Run: records go to c
	fc      FrameConsumer // c, when it wants frames
	bc      Batcher       // c, when it wants to know where batches end
	w       *bufio.Writer
	vw      *writev.Writer       // Output.Direct: writes are queued, then go to vw
	queued  [][]byte             // what the chunk at hand writes, in order
	digits  []byte               // the connection numbers queued holds
	iwarp   map[[2]uint64]uint64 // {shard, shard's number} -> global number
	pending map[[2]uint64]uint64 // the same for the others, while they last
	next    uint64
	refs    []blockRef
	cur     []cursor   // per shard, in the chunk at hand
	nums    []numCache // per shard
	// slim and slimConn are the record and connection a taken record is
	// handed in (keep.go).
	slim     Record
	slimConn reassembly.Conn
}

// numCache is the global number of the connection a shard printed last,
// in decimal: records come in runs of one connection, and a map lookup
// per record is a tenth of what the merger costs.
type numCache struct {
	local  uint64
	ok     bool
	digits []byte
	global uint64
}

// cursor is where the merger is in one shard's output for a chunk.
type cursor struct {
	from                              int // in shardOut.buf: written up to here
	patch, start, open, end, block, k int // next patch, events, block, step
}

func newMerger(n int) *outMerger {
	return &outMerger{iwarp: map[[2]uint64]uint64{}, pending: map[[2]uint64]uint64{}, nums: make([]numCache, n)}
}

func (m *outMerger) global(shard int, local uint64) uint64 {
	k := [2]uint64{uint64(shard), local}
	if g, ok := m.iwarp[k]; ok {
		return g
	}
	return m.pending[k]
}

// events applies the connection events of shard s at frame i, from *k on.
func (m *outMerger) events(evs []connEvent, s, i int, k *int, apply func(k [2]uint64)) {
	for ; at(evs, *k, i); *k++ {
		apply([2]uint64{uint64(s), evs[*k].local})
	}
}

// at reports whether evs has an event at frame i, from k on. The merger
// asks before it calls events: most frames start, open and end no
// connection, and it looks at every frame.
func at(evs []connEvent, k, i int) bool { return k < len(evs) && evs[k].frame == i }

// emit writes o.buf[from:to] with the connection numbers patched in,
// starting at patch *pi. With Run it hands out the records kept there
// instead, *pi counting them.
func (m *outMerger) emit(o *shardOut, shard, from, to int, pi *int) {
	if m.c != nil {
		for ; *pi < len(o.recs) && o.recs[*pi].off < to; *pi++ {
			m.hand(o, &o.recs[*pi], shard)
		}
		return
	}
	for *pi < len(o.patches) && o.patches[*pi].off < to {
		p := o.patches[*pi]
		m.write(o.buf[from:p.off])
		m.globalCached(shard, p.local)
		c := &m.nums[shard]
		if m.vw != nil { // c.digits may change before queued is written
			n := len(m.digits)
			m.digits = append(m.digits, c.digits...)
			m.write(m.digits[n:])
		} else {
			m.write(c.digits)
		}
		from = p.off
		*pi++
	}
	m.write(o.buf[from:to])
}

// write writes b, or with Output.Direct queues it (to the last
// buffer there when b follows it in memory: a run of one shard's
// output).
func (m *outMerger) write(b []byte) {
	if m.vw == nil {
		m.w.Write(b)
		return
	}
	if len(b) == 0 {
		return
	}
	if k := len(m.queued) - 1; k >= 0 {
		last := m.queued[k]
		if n := len(last); len(b) <= cap(last)-n && &last[:n+1][n] == &b[0] {
			m.queued[k] = last[:n+len(b)]
			return
		}
	}
	m.queued = append(m.queued, b)
}

// flush writes what is queued, after what w holds: before the shards'
// buffers it points into are used again.
func (m *outMerger) flush() {
	if m.vw == nil || len(m.queued) == 0 {
		return
	}
	if m.w.Buffered() > 0 {
		m.w.Flush()
	}
	rest, err := m.vw.Write(m.queued)
	if err != nil { // w reports it, as it would have
		m.vw = nil
		for _, b := range rest {
			m.w.Write(b)
		}
	}
	clear(m.queued)
	m.queued, m.digits = m.queued[:0], m.digits[:0]
}

// blockRef is a block of one shard in the merger's order.
type blockRef struct {
	shard int
	b     endBlock
	key   int64
}

// chunk writes one chunk's output once every shard is done with it: at
// each frame, what its owner printed; at a tick, what every shard did.
func (m *outMerger) chunk(c *chunk) {
	c.wg.Wait()
	if m.bc != nil {
		defer m.bc.Batch()
	}
	if m.fc == nil && c.quiet() {
		return
	}
	if len(m.cur) != len(c.out) {
		m.cur = make([]cursor, len(c.out))
	}
	clear(m.cur)
	t := 0
	for i := range c.frames {
		if m.fc != nil {
			m.fc.Frame(&c.frames[i])
		}
		if t < len(c.ticks) && int(c.ticks[t]) == i {
			t++
			m.tick(c, i)
			continue
		}
		s := int(c.owner[i])
		m.opening(c, s, i)
		m.frame(c, s, i)
	}
	m.flush()
}

// quiet reports whether no shard printed anything for c or started,
// took or ended a connection in it, and the clock did not tick: the
// merger has nothing to write or number (most chunks with -q).
func (c *chunk) quiet() bool {
	if len(c.ticks) > 0 {
		return false
	}
	for i := range c.out {
		o := &c.out[i]
		if len(o.buf) > 0 || len(o.starts) > 0 || len(o.opened) > 0 || len(o.ended) > 0 || len(o.blocks) > 0 {
			return false
		}
	}
	return true
}

// opening numbers the connections shard s started at frame i, and keeps
// the numbers of those it took for iWARP.
func (m *outMerger) opening(c *chunk, s, i int) {
	o, cur := &c.out[s], &m.cur[s]
	if !at(o.starts, cur.start, i) && !at(o.opened, cur.open, i) {
		return
	}
	m.events(o.starts, s, i, &cur.start, func(k [2]uint64) {
		m.next++
		m.pending[k] = m.next
	})
	m.events(o.opened, s, i, &cur.open, func(k [2]uint64) {
		m.iwarp[k] = m.pending[k]
		delete(m.pending, k)
	})
}

// frame writes what shard s printed at its step at frame i, then forgets
// the connections that ended there.
func (m *outMerger) frame(c *chunk, s, i int) {
	o, cur := &c.out[s], &m.cur[s]
	if end := o.ends[cur.k]; end > cur.from {
		m.emit(o, s, cur.from, end, &cur.patch)
		cur.from = end
	}
	cur.k++
	if !at(o.ended, cur.end, i) {
		return
	}
	m.events(o.ended, s, i, &cur.end, func(k [2]uint64) {
		delete(m.pending, k)
		if c := &m.nums[s]; c.local == k[1] {
			c.ok = false
		}
	})
}

// tick writes frame i, a tick of the clock: the connections that expired
// there in every shard, least recently active first, then what each shard
// printed for the frame.
func (m *outMerger) tick(c *chunk, i int) {
	for s := range c.out {
		m.opening(c, s, i)
	}
	m.refs = m.refs[:0]
	for s := range c.out {
		o, cur := &c.out[s], &m.cur[s]
		for ; cur.block < len(o.blocks) && o.blocks[cur.block].frame == i; cur.block++ {
			m.refs = append(m.refs, blockRef{shard: s, b: o.blocks[cur.block], key: o.blocks[cur.block].key})
		}
	}
	if len(m.refs) > 1 {
		sortRefs(m.refs, func(a, b *blockRef) bool { return a.key < b.key })
	}
	for _, r := range m.refs {
		cur := &m.cur[r.shard]
		m.emit(&c.out[r.shard], r.shard, r.b.start, r.b.end, &cur.patch)
		cur.from = r.b.end
	}
	for s := range c.out {
		m.frame(c, s, i)
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
	m.flush()
	if m.bc != nil {
		m.bc.Batch()
	}
}

// mergerDone, set by tests, sees the merger at the end.
var mergerDone func(*outMerger)

// runSharded is Run and RunOrdered over n shards, m merging what they
// raise.
func runSharded(src Source, cfg *Config, n int, m *outMerger, newConsumer func(int, *Out) Consumer) (*Report, error) {
	shards := make([]*shard, n)
	ins := make([]chan *chunk, n)
	var shardsDone sync.WaitGroup
	d := newDispatcher(n)
	inFlight := max(3, min(2*n+2, inFlightArena/d.arena)) // bounds memory
	for i := range shards {
		shards[i] = newShard(i, n, cfg, newConsumer)
		ins[i] = make(chan *chunk, inFlight)
		shardsDone.Add(1)
		go shards[i].run(ins[i], &shardsDone)
	}
	free := make(chan *chunk, inFlight)
	merge := make(chan *chunk, inFlight)
	merged := make(chan struct{})
	go func() {
		for c := range merge {
			m.chunk(c)
			free <- c
		}
		close(merged)
	}()

	pin, _ := src.(pinner)
	var derr error
	allocated, frames := 0, 0
	for done := false; !done; {
		var c *chunk
		select {
		case c = <-free:
		default:
			if allocated < inFlight {
				c = d.newChunk()
				allocated++
			} else {
				c = <-free
			}
		}
		c.reset()
		// A pinned chunk ends when its arena is full (ErrBufferFull).
		pinned := pin != nil && pin.Pin(c.arena[:cap(c.arena)])
		for full := false; !full; {
			if cfg.Count > 0 && frames >= cfg.Count {
				done = true
				break
			}
			fr, err := c.next(src)
			if err == pcap.ErrBufferFull {
				break
			}
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
			full = d.add(c, pinned)
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
	r := &Report{Conns: map[int]*reassembly.Conn{}, Worst: -1, ULP: &ulp.Stats{}, Discovery: &ulp.Discovery{}, Findings: &finding.Tally{}}
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
		r.Panics += s.h.x.n
		trackers[i] = s.h.t
		global := func(id int) int { return int(m.global(i, uint64(id))) }
		r.ULP.Merge(&s.h.u.stats, global)
		r.Discovery.Merge(&s.h.u.disc, global)
		r.Findings.Merge(&s.h.findings, global)
	}
	sort.Slice(r.ConnStats, func(i, j int) bool { return r.ConnStats[i].Conn < r.ConnStats[j].Conn })
	r.Stats = track.MergedStats(trackers...)
	return r
}

func appendUint(b []byte, x uint64) []byte { return strconv.AppendUint(b, x, 10) }
