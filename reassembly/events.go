package reassembly

import (
	"net/netip"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
)

// Dir names one direction of a connection: Dir(0) is what Conn.Addr[0]
// sends, Dir(1) what Conn.Addr[1] sends.
type Dir uint8

// The two directions. Addr[0] is the TCP client (the sender of the SYN) when
// the handshake was seen, else the sender of the first segment seen (for a
// SYN-ACK seen first: its receiver).
const (
	DirAB Dir = 0 // from Addr[0] to Addr[1]
	DirBA Dir = 1 // from Addr[1] to Addr[0]
)

// Other returns the opposite direction.
func (d Dir) Other() Dir { return d ^ 1 }

func (d Dir) String() string {
	if d == DirAB {
		return "A>B"
	}
	return "B>A"
}

// Source says how a negotiated parameter is known.
type Source uint8

const (
	// SourceUnknown: not known (yet).
	SourceUnknown Source = iota
	// SourceHandshake: read from the MPA Request/Reply frames.
	SourceHandshake
	// SourceInferred: inferred from the FPDUs (no handshake seen): marker
	// words at 512-spaced positions with consistent FPDUPTRs, CRC fields that
	// match the CRC32c of the FPDU.
	SourceInferred
)

func (s Source) String() string {
	switch s {
	case SourceHandshake:
		return "handshake"
	case SourceInferred:
		return "inferred"
	}
	return "unknown"
}

// Params is what one direction of an iWARP connection uses, as negotiated in
// the MPA handshake (RFC 5044 §7.1.1, RFC 6581) or inferred from the bytes.
type Params struct {
	// Markers: the sender of this direction inserts markers. They were
	// asked for by the M flag in the frame of the *other* direction (the
	// receiver's frame; RFC 5044 §7.1.1).
	Markers       bool
	MarkersSource Source
	// S0 is the TCP sequence number of the direction's first marker, which
	// sits right before its first FPDU (RFC 5044 §4.3). When markers were
	// inferred mid-stream, any marker position (S0 mod 512 is what counts).
	S0 uint32
	// CRC: FPDUs carry a CRC32c that must be checked (C in either frame,
	// RFC 5044 §7.1.1).
	CRC       bool
	CRCSource Source

	// HasFrame: an MPA Request or Reply was seen in this direction; Frame is
	// it (PrivateData is a copy owned by the Conn).
	HasFrame bool
	Frame    decode.MPAFrame
	// FrameSeq is the TCP sequence number of the frame's first octet.
	FrameSeq uint32
}

// crcUse is what the framer knows of CRCs in this direction.
func (p *Params) crcUse() decode.CRCUse {
	switch {
	case p.CRC:
		return decode.CRCUseOn
	case p.CRCSource != SourceUnknown:
		return decode.CRCUseOff
	}
	return decode.CRCUseUnknown
}

// Settled reports whether both markers and CRC are known.
func (p *Params) Settled() bool {
	return p.MarkersSource != SourceUnknown && p.CRCSource != SourceUnknown
}

// Conn is one TCP connection. The assembler owns it: handlers may read it
// during a callback and keep its ID, but must not keep the pointer after
// Closed returns (the value is reused).
type Conn struct {
	// ID numbers connections from 1 in the order they were created (per
	// Assembler; with sharding, IDs are per shard).
	ID uint64
	// Addr[d] is the sender of direction d.
	Addr [2]netip.AddrPort
	// SYN: the connection was seen from its SYN; otherwise it was attached
	// mid-stream.
	SYN bool
	// FirstFrame/FirstTime and LastFrame/LastTime: the first and the latest
	// segment of the connection.
	FirstFrame, LastFrame int
	FirstTime, LastTime   time.Time

	// IWARP: the connection carries MPA (a Request/Reply frame was seen or
	// a chain of FPDUs validated). Events other than Opened are only sent
	// for such connections.
	IWARP bool
	// Initiator is the direction that sent the MPA Request (-1: not seen).
	// RFC 5044 §7.1: unrelated to who sent the SYN.
	Initiator int8
	// Rejected: the MPA Reply had R set; no FPDUs follow (RFC 5044 §7.1.2).
	Rejected bool
	// Params per direction.
	Params [2]Params

	pd [2][]byte // private copies of the frames' Private Data
}

// CloseReason says why a connection ended.
type CloseReason uint8

const (
	CloseFIN     CloseReason = iota + 1 // both directions sent FIN and all data arrived
	CloseRST                            // a RST
	CloseIdle                           // no segment for Config.IdleTimeout
	CloseEnd                            // Flush: end of capture
	CloseEvicted                        // the flow table was full (Config.MaxFlows)
	CloseReused                         // a new SYN or new data reused the 4-tuple
)

func (r CloseReason) String() string {
	switch r {
	case CloseFIN:
		return "fin"
	case CloseRST:
		return "rst"
	case CloseIdle:
		return "idle"
	case CloseEnd:
		return "end"
	case CloseEvicted:
		return "evicted"
	case CloseReused:
		return "reused"
	}
	return "?"
}

// GapReason says why octets of a stream are missing or were skipped.
type GapReason uint8

const (
	// GapAcked: the peer acknowledged octets the capture never saw
	// (capture drop); no retransmission can fill the hole.
	GapAcked GapReason = iota + 1
	// GapBudget: out-of-order data waited longer than the buffer budget
	// allowed (per flow or global); the hole is given up.
	GapBudget
	// GapClose: the hole was still open when the connection closed, idled
	// out or the capture ended.
	GapClose
	// GapSnaplen: the capture cut the frame (snaplen).
	GapSnaplen
	// GapSkipped: the octets were captured but could not be delineated
	// into FPDUs (while looking for the next FPDU boundary).
	GapSkipped
	// GapNoMemory: the octets were captured but dropped because the
	// global memory budget had no room to hold them.
	GapNoMemory
)

func (r GapReason) String() string {
	switch r {
	case GapAcked:
		return "acked-not-captured"
	case GapBudget:
		return "buffer-budget"
	case GapClose:
		return "missing-at-close"
	case GapSnaplen:
		return "snaplen"
	case GapSkipped:
		return "skipped"
	case GapNoMemory:
		return "no-memory"
	}
	return "?"
}

// PDUEvent is an MPA Request/Reply frame or an FPDU. It, and every slice in
// it, is valid only during the callback.
type PDUEvent struct {
	Dir Dir
	// Seq is the TCP sequence number of the first octet (a leading marker
	// included) and Len the octets on the wire (markers included); Offset is
	// the stream offset of Seq (octets since the first octet after the SYN,
	// or since the first octet seen for a mid-stream attach).
	Seq    uint32
	Len    int
	Offset uint64
	// FirstFrame and LastFrame hold the first and last octet; FirstTime and
	// LastTime are their timestamps.
	FirstFrame, LastFrame int
	FirstTime, LastTime   time.Time
	// HasAck says the TCP segment holding the first octet (for a leading
	// marker, the marker's first octet; the first copy delivered, when it
	// was retransmitted) had the ACK flag set; Ack is its acknowledgment
	// number: what the sender had received of the other direction when it
	// sent the PDU.
	HasAck bool
	Ack    uint32
	// Wire is the PDU as on the wire (markers included). It aliases the
	// packet when the PDU lies in one segment, else a reassembly buffer.
	// For a partial FPDU it holds the captured prefix only.
	Wire []byte
	// PDU is the decoded frame or FPDU: for an FPDU, its markers, CRC status
	// and the DDP/RDMAP segment decoded.
	PDU decode.PDU
	// Missing is non-zero for a partial FPDU: that many octets at its end
	// were not captured (gap or snaplen). PDU then holds ULPDU_Length and as
	// much of the ULPDU as was captured, and CRCStatus is CRCUnknown.
	Missing int
	// MarkerErrors counts markers inside the FPDU whose FPDUPTR does not
	// point at its ULPDU_Length (RFC 5044 §8, MPA error 3).
	MarkerErrors int
	// Err is set for an MPA frame that could not be decoded.
	Err error
}

// GapEvent reports octets of a direction that are missing from the capture or
// were skipped by the framer. Nothing is ever dropped silently.
type GapEvent struct {
	Dir    Dir
	Reason GapReason
	Seq    uint32 // first octet of the hole
	Len    uint64 // octets
	Offset uint64 // stream offset of Seq
	// Frame is the frame being processed when the gap was found (0 at
	// Flush).
	Frame int
	// FPDUsLost estimates the FPDUs that lay wholly in the hole, from the
	// direction's mean FPDU size (an FPDU cut by the hole is reported as a
	// partial FPDU instead, when its header was captured).
	FPDUsLost int
}

// ResyncHow says how an FPDU boundary was found.
type ResyncHow uint8

const (
	// ResyncMarker: a marker's FPDUPTR pointed at the boundary (RFC 5044
	// §4.2), confirmed by the FPDU it points at.
	ResyncMarker ResyncHow = iota + 1
	// ResyncChain: a chain of FPDUs with plausible ULPDU_Length and DDP/RDMAP
	// headers (and CRC where in use) validated from the boundary.
	ResyncChain
	// ResyncCRC: fewer FPDUs than the chain length, but each with a
	// matching CRC32c, reaching the end of the available data.
	ResyncCRC
	// ResyncStart: the boundary is the start of the direction's Full
	// Operation Phase (right after its MPA frame), where parameters the
	// handshake did not show had to be inferred.
	ResyncStart
)

func (h ResyncHow) String() string {
	switch h {
	case ResyncMarker:
		return "marker"
	case ResyncChain:
		return "chain"
	case ResyncCRC:
		return "crc"
	case ResyncStart:
		return "start"
	}
	return "?"
}

// ResyncEvent says that FPDU delineation (re)started at Seq: at the start of a
// capture without handshake, or after a gap or a loss of framing.
type ResyncEvent struct {
	Dir    Dir
	How    ResyncHow
	Seq    uint32
	Offset uint64
	Frame  int
	// Chain is the number of FPDUs that validated the boundary.
	Chain int
	// Skipped is the captured octets skipped before Seq (also reported as a
	// GapSkipped event).
	Skipped uint64
}

// RetransEvent reports retransmitted (or overlapping) octets whose content
// differs from what was first received for the same sequence numbers. The
// first copy is the one delivered.
type RetransEvent struct {
	Dir    Dir
	Seq    uint32 // first differing octet
	Len    int    // octets compared from Seq on
	Offset uint64
	Frame  int
}

// FindingEvent is a framing-level anomaly. Its Code is one of the
// catalogue's (package finding) that the reassembler raises:
// finding.MPABadFrame (an MPA key followed by a frame that does not decode,
// PD_Length > 512, RFC 5044 §7.1.1), finding.MPAFramingLost (in sync, an
// FPDU had an impossible ULPDU_Length or a DDP/RDMAP header that cannot be
// right; the framer looks for the next boundary), finding.MPADataAfterReject
// (octets after a rejecting MPA Reply, streaming mode for the ULP, RFC 5044
// §7.1.2 rule 6; not decoded) and finding.TCPLateData (octets for a hole
// already given up and reported as a gap; not delivered).
type FindingEvent struct {
	Dir    Dir
	Code   finding.Code
	Seq    uint32
	Len    int
	Offset uint64
	Frame  int
}

// CloseEvent says a connection ended.
type CloseEvent struct {
	Reason CloseReason
	Frame  int // frame that closed it (0 for idle expiry and Flush)
	Time   time.Time
	// Dir, for CloseRST, is the direction whose segment carried the RST:
	// the side that reset sent it, the other only received it.
	Dir Dir
}

// Handler receives the assembler's events, in stream order per direction.
// Events carry pointers to values the assembler reuses: they are valid only
// during the call. Calls come from the goroutine that calls Feed, Flush or
// Expire; a handler must not call back into the Assembler.
type Handler interface {
	// Opened: the connection was recognized as iWARP (first MPA frame, or
	// first validated FPDU chain). c.Params holds what is known so far.
	Opened(c *Conn)
	// Negotiated: the parameters of direction d were set or changed
	// (handshake completed, or inferred from the FPDUs); see c.Params[d].
	Negotiated(c *Conn, d Dir)
	// PDU: an MPA frame or an FPDU.
	PDU(c *Conn, e *PDUEvent)
	// Gap: octets missing or skipped.
	Gap(c *Conn, e *GapEvent)
	// Resync: FPDU delineation (re)started.
	Resync(c *Conn, e *ResyncEvent)
	// Retransmission: retransmitted octets differ from the first copy.
	Retransmission(c *Conn, e *RetransEvent)
	// Finding: a framing-level anomaly.
	Finding(c *Conn, e *FindingEvent)
	// Closed: the connection ended; no more events for it.
	Closed(c *Conn, e *CloseEvent)
}

// Funcs is a Handler built from optional functions; nil ones ignore the
// event.
type Funcs struct {
	OnOpened         func(c *Conn)
	OnNegotiated     func(c *Conn, d Dir)
	OnPDU            func(c *Conn, e *PDUEvent)
	OnGap            func(c *Conn, e *GapEvent)
	OnResync         func(c *Conn, e *ResyncEvent)
	OnRetransmission func(c *Conn, e *RetransEvent)
	OnFinding        func(c *Conn, e *FindingEvent)
	OnClosed         func(c *Conn, e *CloseEvent)
}

func (f *Funcs) Opened(c *Conn) {
	if f.OnOpened != nil {
		f.OnOpened(c)
	}
}

func (f *Funcs) Negotiated(c *Conn, d Dir) {
	if f.OnNegotiated != nil {
		f.OnNegotiated(c, d)
	}
}

func (f *Funcs) PDU(c *Conn, e *PDUEvent) {
	if f.OnPDU != nil {
		f.OnPDU(c, e)
	}
}

func (f *Funcs) Gap(c *Conn, e *GapEvent) {
	if f.OnGap != nil {
		f.OnGap(c, e)
	}
}

func (f *Funcs) Resync(c *Conn, e *ResyncEvent) {
	if f.OnResync != nil {
		f.OnResync(c, e)
	}
}

func (f *Funcs) Retransmission(c *Conn, e *RetransEvent) {
	if f.OnRetransmission != nil {
		f.OnRetransmission(c, e)
	}
}

func (f *Funcs) Finding(c *Conn, e *FindingEvent) {
	if f.OnFinding != nil {
		f.OnFinding(c, e)
	}
}

func (f *Funcs) Closed(c *Conn, e *CloseEvent) {
	if f.OnClosed != nil {
		f.OnClosed(c, e)
	}
}
