package track

import (
	"sort"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/percentile"
)

// conn is the state of one connection.
type conn struct {
	t  *Tracker
	id int

	hs handshake
	// peers: the Initiator host and the Responder listener (Peers).
	peers    peerKey
	hasPeers bool
	d        [2]dirState
	reads    [2]readQueue   // indexed by the requester's direction
	atomics  [2]atomicQueue // indexed by the requester's direction
	qn1Next  [2]uint64      // combined QN 1 request order (RFC 7306 §5.4)
	// lastFrame is the latest frame of the connection the tracker was told
	// of (events of the two directions can come out of frame order).
	lastFrame int
	stags     stagTable
	term      [2]termState
	fin       [2]finState
	rst       bool
	mss       [2]int

	// terminated: a Terminate was seen; outstanding operations are
	// indeterminate (RFC 5040 §6.2.1).
	terminated bool
	notedNoHS  bool

	// per-PDU scratch
	curFirst   bool // the PDU is its direction's first FPDU
	curRTR     bool // the PDU is the peer-to-peer RTR
	curPartial bool // the PDU is a partial FPDU (At.Missing)
	segActive  bool
	segFlag    finding.Code // first error raised on the segment being processed

	st        ConnStats
	lat       percentile.Dist // Read latencies
	codeCount [finding.NumCodes]uint32
	onceBits  [3][(finding.NumCodes + 63) / 64]uint64
	finalized bool
	retired   bool
}

// handshake is what the MPA frames said (RFC 5044 §7.1, RFC 6581).
type handshake struct {
	sawReq, sawRep     bool
	req, rep           frameInfo
	reqFrame, repFrame int
	reqTime            time.Time
	repEnd             uint32
	repHasSeq          bool
	enhanced           bool    // both frames carry the RFC 6581 block
	p2p                bool    // and both set A
	rtrOK              [3]bool // Reply's B (Send), C (Write), D (Read)
	crc                bool
	markers            [2]bool // markers in FPDUs sent in each direction
	gso                [2]bool // siw GSO bit from the sender of each direction
	rejected           bool
	// readLimit is the IRD of the responder to Read Requests sent in each
	// direction (-1 unknown).
	readLimit [2]int
	rtr       string
}

type frameInfo struct {
	flags, res, rev uint8
	pd              uint16
	markers, crc    bool
	reject, s       bool
	hasV2           bool
	v2              decode.MPAv2
}

// dirState is what one direction's sender did.
type dirState struct {
	seen        bool // an FPDU was seen
	firstFrame  int
	firstHasSeq bool
	firstSeq    uint32
	firstEnd    uint32
	firstTime   time.Time
	s0          uint32 // marker phase (RFC 5044 §4.3), when s0Known
	s0Known     bool

	verSet           bool
	dv, rv           uint8 // the stream's versions
	inBadDV, inBadRV bool  // the last segment had other versions
	prevL            bool  // the last segment ended its message

	q      [4]queue // untagged queues QN 0..3
	tg     []tmsg   // open tagged messages (cap Limits.OpenTagged)
	nOpenU int      // open untagged messages
	nOpenT int      // active entries of tg

	hist    []histEntry // ring of sent segments, for Terminate blame
	histN   uint64
	histGap bool // a gap or a CRC failure left a hole in hist

	afterError bool
	errorFrame int

	badCRC      bool // the last FPDU failed its CRC
	badCRCSeq   uint32
	badCRCValid bool
	badCRCFrame int

	sends uint64 // Send-type messages started (possible STag advertisements)

	// seenEnd is the end of the octets seen in this direction (TCP
	// sequence numbers), or acknowledged by the peer.
	endKnown bool
	seenEnd  uint32

	// the last segment on an invalid QN, to report each message once
	badQNValid      bool
	badQN, badQNMSN uint32
}

// queue is one untagged queue (RFC 5041 §5.3).
type queue struct {
	known  bool   // next is the expected MSN
	next   uint32 // MSN of the next new message
	resync bool   // a gap (or a mid-stream start) left the queue unknown
	slack  uint32 // MSNs the next message may skip: FPDUs lost, known count
	open   bool
	m      umsg
	last   lastMsg // the message that ended last
}

// lastMsg remembers the last ended message of a queue, to recognise its
// segments that come after its L segment.
type lastMsg struct {
	valid            bool
	flagged          bool
	msn              uint32
	end              uint64
	first, lastFrame int
}

// umsg is an open untagged message.
type umsg struct {
	op          decode.Opcode
	ctl         uint8
	inv         uint32
	qn, msn     uint32
	nextMO      uint64
	length      uint64
	payload     uint64
	segs        int
	first, last int
	start, end  time.Time
	state       MsgState
	gapHit      bool
	warnedInc   bool
	rtr         bool
	opOK        bool // the opcode fits T and QN: RDMAP semantics apply
	cut         bool // a segment was not captured whole (At.Missing)
	moFlag      bool // DDP-06 already reported
}

// tmsg is an open tagged message.
type tmsg struct {
	active      bool
	op          decode.Opcode
	ctl         uint8
	stag        uint32
	firstTO     uint64
	nextTO      uint64
	length      uint64
	segs        int
	first, last int
	start, end  time.Time
	state       MsgState
	gapHit      bool
	warnedInc   bool
	warnedLong  bool
	stagZero    bool
	rtr         bool
	bound       bool // a Read Response bound to a request
	readSeq     uint64
	lost        bool // a Read Response answering a request lost in a gap
	opOK        bool
	cut         bool
}

// histEntry remembers a sent segment for Terminate blame (RD-21).
type histEntry struct {
	frame   int
	hdr     decode.DDPHeader
	rr      decode.ReadRequest
	op      decode.Opcode
	ulpdu   int
	dlen    int // DDP payload (after the DDP header)
	plen    int // ULP payload (after the RDMAP header)
	flagged finding.Code
}

type termState struct {
	sent   bool
	frame  int
	hasSeq bool
	end    uint32
	noted  bool
}

type finState struct {
	seen    bool
	kind    CloseKind
	frame   int
	hasSeq  bool
	seq     uint32
	readSeq uint64 // reads[dir].nextSeq when the FIN was sent
	atoSeq  uint64
}

func newConn(t *Tracker, id int) *conn {
	c := &conn{t: t, id: id}
	c.hs.readLimit = [2]int{-1, -1}
	for i := range c.d {
		d := &c.d[i]
		d.tg = make([]tmsg, t.lim.OpenTagged)
		// Without a handshake the queues start unknown: the capture may
		// have started mid-stream (draft-differences §7 rule 5).
		for q := range d.q {
			d.q[q].resync = true
		}
	}
	for i := range c.reads {
		c.reads[i].limit = t.lim.OutstandingReads
		c.atomics[i].limit = t.lim.OutstandingAtomics
		// Until the handshake is seen, responses may answer requests
		// sent before the capture started.
		c.reads[i].reqUncertain = true
		c.atomics[i].reqUncertain = true
	}
	c.stags.limit = t.lim.STags
	return c
}

func (c *conn) closedAny() bool { return c.rst || c.fin[0].seen || c.fin[1].seen }

func (c *conn) era() Era {
	e := Era{
		Handshake: c.hs.sawReq && c.hs.sawRep,
		ReqRev:    c.hs.req.rev,
		RepRev:    c.hs.rep.rev,
		Enhanced:  c.hs.enhanced,
		P2P:       c.hs.p2p,
		Markers:   c.hs.markers,
		CRC:       c.hs.crc,
		Ext7306:   c.codeCount[finding.RDMAPExtension] > 0,
	}
	for i := range c.d {
		e.DV[i], e.RV[i] = -1, -1
		if c.d[i].verSet {
			e.DV[i], e.RV[i] = int8(c.d[i].dv), int8(c.d[i].rv)
		}
	}
	return e
}

func (c *conn) negotiated() Negotiated {
	n := Negotiated{IRD: [2]int{-1, -1}, ORD: [2]int{-1, -1}, RTR: c.hs.rtr, Rejected: c.hs.rejected}
	if c.hs.req.hasV2 {
		n.IRD[I2R], n.ORD[I2R] = int(c.hs.req.v2.IRD), int(c.hs.req.v2.ORD)
	}
	if c.hs.rep.hasV2 {
		n.IRD[R2I], n.ORD[R2I] = int(c.hs.rep.v2.IRD), int(c.hs.rep.v2.ORD)
	}
	return n
}

// retire finalises c and drops its state, keeping a statistics summary.
func (t *Tracker) retire(c *conn) {
	if c.retired {
		return
	}
	c.finalize()
	c.retired = true
	s := c.snapshot()
	t.total.dir[0].add(&s.Dir[0])
	t.total.dir[1].add(&s.Dir[1])
	t.total.overflow.add(&s.Overflow)
	if len(t.retired) < t.lim.RetainedConns {
		t.retired = append(t.retired, s)
	} else {
		t.retiredDropped++
	}
	delete(t.conns, c.id)
	if t.last == c {
		t.last = nil
	}
}

func sortConnStats(s []ConnStats) {
	sort.Slice(s, func(i, j int) bool { return s[i].Conn < s[j].Conn })
}

// seqGE reports a >= b in TCP sequence space.
func seqGE(a, b uint32) bool { return int32(a-b) >= 0 }
