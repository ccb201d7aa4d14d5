// Package reassembly turns captured TCP segments into iWARP PDUs: a flow
// table with one byte stream per direction (absolute, wrap-safe sequence
// numbers; segment boundaries kept; bounded out-of-order buffering;
// retransmission and overlap trimming; explicit gaps; mid-stream attach),
// and on top of it an MPA framer per direction that finds the MPA
// Request/Reply anywhere in the stream, records what was negotiated, and
// delineates FPDUs by ULPDU_Length, stripping markers and checking CRC32c
// where the direction uses them (RFC 5044 §4, §7; RFC 6581).
//
// Where the capture loses bytes, or starts without the handshake, the framer
// finds the next FPDU boundary itself: from a marker's FPDUPTR when markers
// are in use, otherwise from candidate offsets accepted only when a chain of
// FPDUs validates (ULPDU_Length, DDP/RDMAP header, CRC32c), inferring markers
// and CRC from the bytes when no handshake told. Every skipped region is
// reported.
//
// The API is streaming: Feed one TCP segment at a time, receive events
// through a Handler. One goroutine drives an Assembler; FlowHash lets a
// dispatcher spread flows over several Assemblers (analyze's sharded
// engine does). The package knows no RDMA state (MSN,
// MO, STags are track/'s).
//
// Events of one direction come in stream order. For a connection: Opened
// (when it is recognized as iWARP), then MPA frames, Negotiated per
// direction, FPDUs, Gap, Resync, Retransmission and Finding events as they
// happen, and Closed last. Nothing is reported for connections that are not
// iWARP. A Gap that cuts an FPDU whose header was captured comes with that
// FPDU as a partial PDUEvent (Missing > 0); every octet of a recognized
// direction is accounted for by an MPA frame, an FPDU or a Gap from its first MPA frame or first FPDU boundary on.
//
// Flows are keyed by the two IP address/port pairs; VLAN tags are not part of
// the key (the same connection seen tagged and untagged is one flow).
//
// Memory: the buffers (out-of-order data, FPDUs gathered across segments,
// resync windows, retransmission history) come from one pool bounded by
// Config.MemoryBudget, plus up to a quarter of it kept in free lists; flow
// state is about 1.2 KiB per flow, at most Config.MaxFlows flows; one 65 KiB
// scratch buffer per Assembler. With the defaults that is under 70 MiB
// whatever the input. In steady state (in-order data, FPDUs whole in a
// segment or spanning several) Feed allocates nothing.
package reassembly

import (
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/pcap"
)

// Config tunes an Assembler. The zero value gives the defaults.
type Config struct {
	// Ports declares TCP ports that carry iWARP: on a flow to or from one
	// of them the framer never gives up looking for MPA. iWARP has no port
	// of its own (445 SMB Direct, 4420 NVMe-oF, 3260 iSER, 20049 NFS/RDMA,
	// ...); detection is by content on every port regardless.
	Ports []uint16
	// MaxFlows bounds the flow table (default 16384). When it is full the
	// least recently used flow is closed (CloseEvicted).
	MaxFlows int
	// MemoryBudget bounds the octets of all buffers together: out-of-order
	// segments, FPDUs that span segments, resync windows and
	// retransmission history (default 32 MiB; up to a quarter more is kept
	// in free lists for reuse). When it is reached, the
	// oldest out-of-order data is given up (GapBudget) and octets that
	// cannot be held are reported as GapNoMemory.
	MemoryBudget int64
	// FlowBufferLimit bounds the out-of-order octets buffered per
	// direction (default 4 MiB); beyond it the first hole is given up.
	FlowBufferLimit int
	// IdleTimeout closes flows without a segment for that long, in capture
	// time (default 5 minutes; negative: never).
	IdleTimeout time.Duration
	// ChainLength is the number of consecutive valid FPDUs that accept a
	// candidate boundary when neither a marker nor CRCs vouch for it
	// (default 3).
	ChainLength int
	// DetectLimit is the octets per direction examined for MPA (a key or an
	// FPDU chain) before a flow is taken as not iWARP (default 64 KiB;
	// four times that while a candidate FPDU chain is under way).
	DetectLimit int
	// ResyncWindow bounds the octets held per direction while looking for
	// an FPDU boundary (default 256 KiB, at most 1 GiB); older ones are
	// reported skipped.
	ResyncWindow int
	// RetransCheck is the octets of delivered data kept per direction of
	// an iWARP connection to compare in-order retransmissions with (0: no
	// comparison, the default; 64 KiB is a good value). Copying every
	// delivered octet costs about a quarter of the per-frame budget, so it
	// is opt-in. Retransmissions of data still buffered out of order are
	// always compared.
	RetransCheck int
	// MaxULPDU rejects candidate FPDUs with a larger ULPDU_Length while
	// resyncing (default 65535: any).
	MaxULPDU int
	// Started, when set, is called as each connection is created (with its
	// new ID), iWARP or not, before any other event of it. A program that
	// shards flows over several Assemblers uses it to number connections
	// globally, in the order a single Assembler would have.
	Started func(c *Conn)
	// Ended, when set, is called when a connection ends (FIN, RST, reuse
	// of its 4-tuple, or removal from the table), iWARP or not, after its
	// last event. With Started it lets a sharding program forget
	// connections that printed nothing.
	Ended func(c *Conn)
	// Removing, when set, is called before a connection leaves the table
	// for reason (CloseIdle, CloseEvicted, CloseEnd), ahead of the events
	// its closing raises. Idle connections go least recently active first,
	// at Flush most recently active first: a sharding program uses it to
	// put the shards' events in the order one Assembler raises them.
	Removing func(c *Conn, reason CloseReason)
	// Segments: tell a Handler that is a SegmentHandler of the segments
	// that open or close connections, carry no data, or carry data that
	// is not new (SegmentEvent); iwtui's TCP rows.
	Segments bool
}

func (c *Config) defaults() {
	if c.MaxFlows <= 0 {
		c.MaxFlows = 16384
	}
	if c.MemoryBudget <= 0 {
		c.MemoryBudget = 32 << 20
	}
	if c.FlowBufferLimit <= 0 {
		c.FlowBufferLimit = 4 << 20
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 5 * time.Minute
	}
	if c.ChainLength <= 0 {
		c.ChainLength = 3
	}
	if c.DetectLimit <= 0 {
		c.DetectLimit = 64 << 10
	}
	if c.ResyncWindow <= 0 {
		c.ResyncWindow = 256 << 10
	}
	if c.ResyncWindow < 2*maxFPDUWire {
		c.ResyncWindow = 2 * maxFPDUWire
	}
	if c.ResyncWindow > 1<<30 {
		c.ResyncWindow = 1 << 30 // the resync's candidate offsets are int32
	}
	if c.MaxULPDU <= 0 || c.MaxULPDU > 0xFFFF {
		c.MaxULPDU = 0xFFFF
	}
}

// Stats counts what the assembler saw and what it had to drop.
type Stats struct {
	Packets      uint64 // segments fed
	PayloadBytes uint64 // TCP payload octets fed (captured)

	Flows        uint64 // flows created (connections, iWARP or not)
	IWARPConns   uint64 // connections recognized as iWARP
	FlowsActive  int    // flows in the table now
	FlowsEvicted uint64 // closed because the table was full
	FlowsExpired uint64 // closed by IdleTimeout

	MPAFrames    uint64
	FPDUs        uint64
	PartialFPDUs uint64 // FPDUs reported with Missing octets
	CRCBad       uint64

	RetransBytes       uint64 // octets received again (trimmed)
	InconsistentRetran uint64 // RetransEvents
	OOOSegments        uint64 // segments (pieces) buffered out of order
	OOOBytesBuffered   uint64 // octets buffered out of order (cumulative)

	Gaps             uint64 // GapEvents of reasons other than GapSkipped
	GapBytes         uint64
	SkippedBytes     uint64 // GapSkipped octets
	Resyncs          uint64
	BudgetGaps       uint64 // holes given up for the buffer budgets
	NoMemoryBytes    uint64 // octets dropped for the memory budget
	LateBytes        uint64 // octets that arrived for a hole already given up
	UntrackedBytes   uint64 // payload of flows not (or no longer) taken for iWARP
	MemoryInUse      int64  // buffer octets held now
	MemoryPeak       int64
	MemoryDenied     uint64 // buffer requests refused by the budget
	MaxFlowsReached  uint64
	IgnoredSegments  uint64 // segments of closed flows (late ACKs, retransmissions)
	StreamRestartsOK uint64 // 4-tuples reused by a new connection
}

// Add adds o's counters to s, as for the Assemblers of several shards;
// MemoryPeak becomes the sum of the peaks (an upper bound).
func (s *Stats) Add(o Stats) {
	s.Packets += o.Packets
	s.PayloadBytes += o.PayloadBytes
	s.Flows += o.Flows
	s.IWARPConns += o.IWARPConns
	s.FlowsActive += o.FlowsActive
	s.FlowsEvicted += o.FlowsEvicted
	s.FlowsExpired += o.FlowsExpired
	s.MPAFrames += o.MPAFrames
	s.FPDUs += o.FPDUs
	s.PartialFPDUs += o.PartialFPDUs
	s.CRCBad += o.CRCBad
	s.RetransBytes += o.RetransBytes
	s.InconsistentRetran += o.InconsistentRetran
	s.OOOSegments += o.OOOSegments
	s.OOOBytesBuffered += o.OOOBytesBuffered
	s.Gaps += o.Gaps
	s.GapBytes += o.GapBytes
	s.SkippedBytes += o.SkippedBytes
	s.Resyncs += o.Resyncs
	s.BudgetGaps += o.BudgetGaps
	s.NoMemoryBytes += o.NoMemoryBytes
	s.LateBytes += o.LateBytes
	s.UntrackedBytes += o.UntrackedBytes
	s.MemoryInUse += o.MemoryInUse
	s.MemoryPeak += o.MemoryPeak
	s.MemoryDenied += o.MemoryDenied
	s.MaxFlowsReached += o.MaxFlowsReached
	s.IgnoredSegments += o.IgnoredSegments
	s.StreamRestartsOK += o.StreamRestartsOK
}

// Assembler is a flow table with the MPA framers on top. It is not safe for
// concurrent use: one goroutine feeds it (see FlowHash to use several).
type Assembler struct {
	cfg   Config
	h     Handler
	sh    SegmentHandler // h, with Config.Segments (segments.go)
	evSeg SegmentEvent
	flows map[flowKey]*flow
	last  *flow
	lru   flow // sentinel of the LRU list (lru.next: most recent)
	ooo   flow // sentinel of the list of flows holding out-of-order data
	pool  pool
	stats Stats

	clock     Clock
	nextID    uint64
	ports     map[uint16]bool
	freeFlows []*flow

	// Reused event values (valid during a callback only).
	evPDU     PDUEvent
	evGap     GapEvent
	evResync  ResyncEvent
	evRetrans RetransEvent
	evFinding FindingEvent
	evClose   CloseEvent

	fp      decode.FPDU       // candidate FPDU while resyncing
	scratch []byte            // marker-free copy of an FPDU with markers
	marks   []decode.MarkerAt // markers of the FPDU at hand
	pkt     pcap.Packet       // for FeedFrame

	// work counts the resync's effort: FPDU candidates examined plus the
	// octets parsed and checksummed for them. Tests bound it by the input
	// (no wall clock).
	work uint64
}

// New returns an Assembler that sends its events to h.
func New(cfg Config, h Handler) *Assembler {
	cfg.defaults()
	a := &Assembler{cfg: cfg, h: h, flows: make(map[flowKey]*flow)}
	if cfg.Segments {
		a.sh, _ = h.(SegmentHandler)
	}
	a.lru.next, a.lru.prev = &a.lru, &a.lru
	a.ooo.onext, a.ooo.oprev = &a.ooo, &a.ooo
	a.pool.budget = cfg.MemoryBudget
	a.pool.freeMax = cfg.MemoryBudget / 4
	if len(cfg.Ports) > 0 {
		a.ports = make(map[uint16]bool, len(cfg.Ports))
		for _, p := range cfg.Ports {
			a.ports[p] = true
		}
	}
	a.scratch = make([]byte, 0, maxFPDUWire)
	a.marks = make([]decode.MarkerAt, 0, maxFPDUWire/decode.MarkerSpacing+2)
	return a
}

// Stats returns the counters.
func (a *Assembler) Stats() Stats {
	s := a.stats
	s.FlowsActive = len(a.flows)
	s.MemoryInUse = a.pool.inUse
	s.MemoryPeak = a.pool.peak
	s.MemoryDenied = a.pool.denied
	return s
}

// FeedFrame decodes the frame down to TCP and feeds it. Frames that hold no
// TCP segment are skipped (pcap.ErrNotTCP is returned); damaged ones return
// the decode error.
func (a *Assembler) FeedFrame(f *pcap.Frame) error {
	if err := pcap.DecodeTCP(f.LinkType, f.Data, &a.pkt); err != nil {
		return err
	}
	a.Feed(f.Number, f.Timestamp, &a.pkt)
	return nil
}

// Feed processes one TCP segment: frame is its frame number (reported back in
// events), ts its capture time. p and its payload are only read during the
// call.
func (a *Assembler) Feed(frame int, ts time.Time, p *pcap.Packet) {
	a.stats.Packets++
	a.stats.PayloadBytes += uint64(len(p.Payload))
	a.Advance(ts)
	fl, d := a.lookup(frame, ts, p)
	if fl == nil {
		return
	}
	fl.segment(d, frame, ts, p)
}

// Advance moves capture time to ts (if later) and, once a second of it
// (Clock), expires idle flows. Feed calls it; a program sharding one
// capture over several Assemblers calls it at the frames another shard
// owns where its own Clock over all frames ticks, so that every shard
// expires flows at the frame a single Assembler would have.
func (a *Assembler) Advance(ts time.Time) {
	if a.clock.Advance(ts) && a.cfg.IdleTimeout > 0 {
		a.Expire(ts)
	}
}

// Clock is the capture time an Assembler keeps: the latest timestamp seen,
// and when the next expiry pass is due. A dispatcher sharding one capture
// over several Assemblers runs its own Clock over every frame: the frames
// at which it ticks are the only ones at which an Assembler fed a subset
// of the frames needs Advance besides its own (at any other frame, no
// Assembler of the set expires anything).
type Clock struct {
	now, next time.Time
}

// Advance moves the clock to ts if later, and reports whether idle flows
// are due for expiry: once a second of capture time. It is on every
// frame's path: two comparisons, and an addition when it ticks.
func (c *Clock) Advance(ts time.Time) bool {
	if !ts.After(c.now) {
		return false
	}
	c.now = ts
	if ts.Before(c.next) {
		return false
	}
	c.next = ts.Add(time.Second)
	return true
}

// Expire closes the flows idle for Config.IdleTimeout before now. Feed calls
// it as capture time advances; a live source calls it from its own clock.
func (a *Assembler) Expire(now time.Time) {
	if a.cfg.IdleTimeout <= 0 {
		return
	}
	limit := now.Add(-a.cfg.IdleTimeout)
	for {
		fl := a.lru.prev
		if fl == &a.lru || !fl.lastSeen.Before(limit) {
			return
		}
		if !fl.closed {
			a.stats.FlowsExpired++
		}
		a.remove(fl, CloseIdle, 0)
	}
}

// Flush ends the capture: every flow is closed (CloseEnd) after its missing
// data is reported and its framers had a last try at the data they hold.
func (a *Assembler) Flush() {
	for {
		fl := a.lru.next
		if fl == &a.lru {
			break
		}
		a.remove(fl, CloseEnd, 0)
	}
	a.last = nil
}

// FlowHash returns a hash of the packet's flow that is the same for both
// directions.
func FlowHash(p *pcap.Packet) uint64 {
	return mix64(endpointHash(p.Src, p.SrcPort) + endpointHash(p.Dst, p.DstPort))
}

// endpointHash folds an address and port into a word; FlowHash adds the
// two ends' words (the same both ways) and mixes the sum. A dispatcher
// hashes every frame: this stays a few multiplications.
func endpointHash(a netip.Addr, port uint16) uint64 {
	b := a.As16()
	return binary.LittleEndian.Uint64(b[:8])*0x9e3779b97f4a7c15 ^
		binary.LittleEndian.Uint64(b[8:])*0xc2b2ae3d27d4eb4f ^ uint64(port)*0x165667b19e3779f9
}

// mix64 is murmur3's 64-bit finalizer.
func mix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}
