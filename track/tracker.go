package track

import (
	"sort"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/percentile"
)

// At says where and when a unit (an MPA frame, an FPDU, a gap, a FIN) was
// seen. Conn and Dir are required; the TCP fields are optional and enable
// the checks that need them (ACK-based ordering MPA-07/08/15, RD-19, RD-22,
// RD-24; marker positions MPA-18/19; CRC retransmissions MPA-16).
type At struct {
	// Conn identifies the TCP connection; the caller assigns the numbers
	// (a reused 4-tuple after a new SYN is a new connection).
	Conn int
	// Dir is the direction: I2R from the MPA Initiator (the Request's
	// sender). Before a Request is seen, callers use the TCP client.
	Dir Dir
	// Frame is the capture frame holding the unit's first octet and
	// LastFrame the one holding its last (0: same as Frame).
	Frame, LastFrame int
	// Time is the capture time of LastFrame (when the unit was complete).
	Time time.Time

	// HasSeq says Seq and End are set: the TCP sequence numbers of the
	// unit's first octet on the wire (a leading marker included) and of
	// the octet after its last. For Close, Seq is the FIN's sequence
	// number.
	HasSeq   bool
	Seq, End uint32
	// HasAck says Ack is set: the acknowledgment number carried by the
	// TCP segment that holds the unit's first octet. It tells what its
	// sender had received of the other direction when it sent the unit
	// (and, beyond what the capture holds, that the capture lost octets).
	HasAck bool
	Ack    uint32

	// Missing, for an FPDU, is the octets at its end that the capture
	// lost (a gap or the snaplen cut it): the PDU holds the captured
	// prefix, its ULPDU_Length the announced size, and its CRC is not
	// checked.
	Missing int
}

func (a *At) last() int {
	if a.LastFrame != 0 {
		return a.LastFrame
	}
	return a.Frame
}

// Mark flags a PDU with what the tracker knows about its context; iwdump
// may print them next to the PDU.
type Mark uint8

const (
	// MarkUncertain: a capture gap before it leaves its queue's state
	// unknown; checks on it were relaxed.
	MarkUncertain Mark = 1 << iota
	// MarkAfterError: an earlier segment in this direction broke a rule a
	// conforming receiver checks; the receiver drops everything after it
	// (DDP-16, RFC 5041 §7.1; RFC 5044 §8).
	MarkAfterError
	// MarkAfterTerminate: this direction already sent a Terminate (RD-17).
	MarkAfterTerminate
	// MarkCRCBad: the FPDU failed its CRC and was not analysed further.
	MarkCRCBad
)

// CloseKind says how a direction of the TCP connection ended.
type CloseKind uint8

const (
	// CloseFIN is a graceful close (FIN) sent in At.Dir.
	CloseFIN CloseKind = iota + 1
	// CloseRST is a reset sent in At.Dir.
	CloseRST
)

func (k CloseKind) String() string {
	switch k {
	case CloseFIN:
		return "FIN"
	case CloseRST:
		return "RST"
	}
	return "close"
}

// Limits bounds the tracker's memory. Zero fields take the defaults.
type Limits struct {
	// Conns is the number of live connections kept; beyond it, closed and
	// then least recently active connections are retired (default 4096:
	// a connection's state is about 8 KB, and the whole pipeline stays
	// within 100 MB).
	Conns int
	// OutstandingReads and OutstandingAtomics cap the request queues per
	// direction (default 4096 and 1024).
	OutstandingReads   int
	OutstandingAtomics int
	// STags caps the STag table per connection (default 1024).
	STags int
	// OpenTagged caps the tagged messages open at once per direction
	// (default 8).
	OpenTagged int
	// History is the number of sent segments remembered per direction to
	// link Terminates to the segment they blame (default 256).
	History int
	// FindingsPerCode caps findings of one code per connection (default 100).
	FindingsPerCode int
	// StoredFindings caps the findings kept when Config.OnFinding is nil
	// (default 100000).
	StoredFindings int
	// RetainedConns caps the per-connection statistics kept for retired
	// connections (default 4096).
	RetainedConns int
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.Conns, 4096)
	def(&l.OutstandingReads, 4096)
	def(&l.OutstandingAtomics, 1024)
	def(&l.STags, 1024)
	def(&l.OpenTagged, 8)
	def(&l.History, 256)
	def(&l.FindingsPerCode, 100)
	def(&l.StoredFindings, 100000)
	def(&l.RetainedConns, 4096)
	return l
}

// Config sets the tracker's outputs and limits. The record callbacks get
// pointers to values the tracker reuses: copy what you keep.
type Config struct {
	// OnFinding receives findings as they are raised, in input order. When
	// nil, findings are kept and returned by Findings.
	OnFinding func(*Finding)
	// OnMessage receives each DDP message when it ends: complete (L
	// segment), incomplete (gap, missing L, end of capture) or
	// inconsistent.
	OnMessage func(*Message)
	// OnOperation receives each RDMA operation when it completes (a Write
	// or Send at its L segment, a Read at its response's L segment) or is
	// given up (unanswered at the end, terminated).
	OnOperation func(*Operation)
	// OnTerminate receives each Terminate decoded in context.
	OnTerminate func(*TerminateReport)
	// OnConnEnd receives a connection's statistics when it is finalised
	// (by Finish, or when evicted to stay within Limits.Conns); its STag
	// table is still available through STags during the call.
	OnConnEnd func(ConnStats)
	Limits    Limits
}

// Tracker follows iWARP connections through their MPA frames and FPDUs and
// reports RDMA messages, operations, STags, Terminates, statistics and
// findings. It does no I/O and is not safe for concurrent use.
type Tracker struct {
	cfg   Config
	lim   Limits
	conns map[int]*conn
	last  *conn
	// eviction order: connections by creation and by close
	createdQ, closedQ       []int
	createdHead, closedHead int

	retired        []ConnStats
	retiredDropped uint64
	total          aggregate
	latency        percentile.Dist // Read latencies of every connection

	findings        []Finding
	findingsDropped uint64
	suppressed      uint64
	byCode          [finding.NumCodes]uint64
	bySeverity      [3]uint64

	msg Message
	op  Operation
	tr  TerminateReport

	fallback fallbacks // aborted MPA v2 attempts (fallback.go)
}

// New returns a Tracker.
func New(cfg Config) *Tracker {
	t := &Tracker{cfg: cfg, lim: cfg.Limits.withDefaults()}
	t.conns = make(map[int]*conn)
	return t
}

func (t *Tracker) conn(id int) *conn {
	if c := t.last; c != nil && c.id == id {
		return c
	}
	c := t.conns[id]
	if c == nil {
		if len(t.conns) >= t.lim.Conns {
			t.evict()
		}
		c = newConn(t, id)
		t.conns[id] = c
		t.total.conns++
		t.enqueue(&t.createdQ, &t.createdHead, id)
	}
	t.last = c
	return c
}

// evict retires one connection: the one that closed first, else the one
// created first. Both queues are compacted as they go, so eviction costs
// O(1) amortised however many connections a capture holds.
func (t *Tracker) evict() {
	for t.closedHead < len(t.closedQ) {
		id := t.closedQ[t.closedHead]
		t.closedHead++
		if c := t.conns[id]; c != nil && c.closedAny() {
			t.total.evicted++
			t.retire(c)
			return
		}
	}
	for t.createdHead < len(t.createdQ) {
		id := t.createdQ[t.createdHead]
		t.createdHead++
		if c := t.conns[id]; c != nil {
			t.total.evicted++
			t.retire(c)
			return
		}
	}
}

// enqueue appends id to a queue, dropping consumed and stale entries when
// the queue has grown well beyond the live connections.
func (t *Tracker) enqueue(q *[]int, head *int, id int) {
	if len(*q)-*head > 2*len(t.conns)+64 || *head > len(*q)/2 && *head > 64 {
		keep := (*q)[:0]
		for _, x := range (*q)[*head:] {
			if t.conns[x] != nil {
				keep = append(keep, x)
			}
		}
		*q, *head = keep, 0
	}
	*q = append(*q, id)
}

// Handshake feeds an MPA Request or Reply frame (RFC 5044 §7.1.1, RFC 6581).
func (t *Tracker) Handshake(at At, f *decode.MPAFrame) {
	c := t.conn(at.Conn)
	c.handshake(&at, f)
}

// BadFrame reports an MPA Request/Reply frame the framer found but could
// not parse: err is the decode error (decode.ParseMPAFrame), e.g.
// Malformed "mpa.key" or "mpa.pd_length". MPA-01, MPA-04.
func (t *Tracker) BadFrame(at At, err error) {
	c := t.conn(at.Conn)
	c.badFrame(&at, err)
}

// PDU feeds one FPDU (or an MPA frame, which is passed to Handshake). The
// tracker copies what it keeps: p may be reused after the call. The result
// marks the PDU's context.
func (t *Tracker) PDU(at At, p *decode.PDU) Mark {
	if p.IsMPAFrame {
		t.Handshake(at, &p.MPA)
		return 0
	}
	c := t.conn(at.Conn)
	return c.pdu(&at, p)
}

// Gap reports octets of direction at.Dir that the capture lost (octets 0
// when unknown) and, when the framer knows, how many FPDUs they held
// (fpdusLost < 0: unknown). Checks on the affected queues become
// uncertain until they resynchronise; one note says so.
func (t *Tracker) Gap(at At, octets int, fpdusLost int) {
	c := t.conn(at.Conn)
	c.gap(&at, octets, fpdusLost, false)
}

// Skipped is Gap for captured octets the framer passed over while it
// looked for an FPDU boundary (reassembly.GapSkipped): the same
// uncertainty, counted apart (DirStats.Skips), so that Gaps counts what
// reassembly.Stats.Gaps counts: holes in the captured TCP stream.
func (t *Tracker) Skipped(at At, octets int, fpdusLost int) {
	c := t.conn(at.Conn)
	c.gap(&at, octets, fpdusLost, true)
}

// Retransmission counts octets of direction at.Dir the framer saw again
// (TCP retransmission or overlap, already trimmed). Statistics only.
func (t *Tracker) Retransmission(at At, octets int) {
	c := t.conn(at.Conn)
	st := &c.st.Dir[at.Dir&1]
	st.Retransmissions++
	st.RetransOctets += uint64(octets)
}

// MSS tells the tracker the effective MSS of the segments sent in dir (the
// peer's SYN MSS option), for the MULPDU check (MPA-21, RFC 5044 §4.5).
func (t *Tracker) MSS(conn int, dir Dir, mss int) {
	c := t.conn(conn)
	c.mss[dir&1] = mss
}

// Close reports a FIN or RST sent in at.Dir (at.Seq: the FIN's sequence
// number, when HasSeq). MPA-22, RD-23, RD-24.
func (t *Tracker) Close(at At, kind CloseKind) {
	c := t.conn(at.Conn)
	c.close(&at, kind)
}

// Forget retires a connection whose flow the reassembly gave up (evicted
// from a full table or idle): nothing more will come for it. Its open
// messages and unanswered requests are finalised now and its state is
// dropped, keeping a statistics summary (Limits.RetainedConns).
func (t *Tracker) Forget(conn int) {
	if c := t.conns[conn]; c != nil {
		t.retire(c)
	}
}

// Finish ends the input: every connection is finalised (open messages
// reported incomplete, unanswered requests reported) in connection order.
// Statistics and STag tables stay available.
func (t *Tracker) Finish() {
	ids := make([]int, 0, len(t.conns))
	for id := range t.conns {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		t.conns[id].finalize()
	}
}

// Findings returns the findings kept when Config.OnFinding is nil.
func (t *Tracker) Findings() []Finding { return t.findings }
