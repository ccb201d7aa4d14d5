package track

import (
	"time"

	"github.com/iwkit/iwkit/decode"
)

// MsgState is how a DDP message ended.
type MsgState uint8

const (
	// MsgComplete: every segment from MO/TO start to the L segment seen,
	// contiguous.
	MsgComplete MsgState = iota
	// MsgIncomplete: a gap hit it, its L segment never came, or the
	// capture ended first.
	MsgIncomplete
	// MsgInconsistent: its segments contradict each other (MO holes or
	// overlaps, differing RsvdULP).
	MsgInconsistent
)

func (s MsgState) String() string {
	switch s {
	case MsgComplete:
		return "complete"
	case MsgIncomplete:
		return "incomplete"
	case MsgInconsistent:
		return "inconsistent"
	}
	return "unknown"
}

// MarshalText makes a MsgState print as its name in JSON.
func (s MsgState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Message is one DDP message (RFC 5041 §5): untagged, named by (QN, MSN),
// reassembled by MO; or tagged, named by STag, reassembled by TO.
type Message struct {
	Conn   int
	Dir    Dir
	Opcode decode.Opcode
	Tagged bool
	// QN and MSN name an untagged message.
	QN, MSN uint32
	// STag and TO (of the first segment) name a tagged message.
	STag uint32
	TO   uint64
	// InvalidateSTag is the STag a Send with Invalidate invalidates.
	InvalidateSTag uint32
	// Length is the DDP payload octets seen (RDMAP headers of Read
	// Requests, Terminates and atomics included, as DDP counts them).
	Length                uint64
	Segments              int
	FirstFrame, LastFrame int
	Start, End            time.Time
	State                 MsgState
	// Reason says why a message is not complete.
	Reason string
}

// OpKind is the type of an RDMA operation.
type OpKind uint8

const (
	OpWrite OpKind = iota + 1
	OpSend
	OpRead
	OpAtomic
	OpImmediate
	OpTerminate
	OpRTR
)

func (k OpKind) String() string {
	switch k {
	case OpWrite:
		return "write"
	case OpSend:
		return "send"
	case OpRead:
		return "read"
	case OpAtomic:
		return "atomic"
	case OpImmediate:
		return "immediate"
	case OpTerminate:
		return "terminate"
	case OpRTR:
		return "rtr"
	}
	return "unknown"
}

// MarshalText makes an OpKind print as its name in JSON.
func (k OpKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// KindOf is the kind of operation the messages of opcode op make (RFC
// 5040 §4.1, RFC 7306): a Read Request and its Read Response make a Read,
// an Atomic Request and its Response an Atomic. A Send or Write that is an
// MPA RTR (RFC 6581) is reported as OpRTR, which the opcode alone does not
// tell. 0 for opcodes that make no operation.
func KindOf(op decode.Opcode) OpKind {
	switch op {
	case decode.OpWrite:
		return OpWrite
	case decode.OpReadRequest, decode.OpReadResponse:
		return OpRead
	case decode.OpSend, decode.OpSendInv, decode.OpSendSE, decode.OpSendSEInv:
		return OpSend
	case decode.OpAtomicRequest, decode.OpAtomicResponse:
		return OpAtomic
	case decode.OpImmData, decode.OpImmDataSE:
		return OpImmediate
	case decode.OpTerminate:
		return OpTerminate
	}
	return 0
}

// OpStatus is how an operation ended.
type OpStatus uint8

const (
	// OpOK: complete and consistent with the wire rules.
	OpOK OpStatus = iota
	// OpMismatch: the response does not fit the request (STag, TO, size,
	// request identifier).
	OpMismatch
	// OpUnanswered: no response in the capture.
	OpUnanswered
	// OpTerminated: a Terminate on the connection left it indeterminate
	// (RFC 5040 §6.2.1).
	OpTerminated
	// OpIncomplete: a gap hit it.
	OpIncomplete
)

func (s OpStatus) String() string {
	switch s {
	case OpOK:
		return "ok"
	case OpMismatch:
		return "mismatch"
	case OpUnanswered:
		return "unanswered"
	case OpTerminated:
		return "terminated"
	case OpIncomplete:
		return "incomplete"
	}
	return "unknown"
}

// MarshalText makes an OpStatus print as its name in JSON.
func (s OpStatus) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Operation is one RDMA operation: a Write or Send (one message), a Read
// (Read Request and Read Response), an Atomic (request and response), an
// Immediate Data, an RTR or a Terminate.
type Operation struct {
	Conn int
	// Dir is the direction of the request (or the only message).
	Dir    Dir
	Kind   OpKind
	Opcode decode.Opcode
	Status OpStatus
	// Length is the payload: Write/Send octets, Read Response octets.
	Length uint64
	// Size is the requested RDMA Read size.
	Size uint32
	// STag/TO: the Write's sink, or the Read's sink (SinkSTag, SinkTO).
	STag uint32
	TO   uint64
	// SrcSTag/SrcTO: the Read's source, or the atomic target.
	SrcSTag uint32
	SrcTO   uint64
	// InvalidateSTag is the STag a Send with Invalidate invalidated.
	InvalidateSTag uint32
	// MSN is the request's MSN (untagged requests and Sends).
	MSN uint32
	// AtomicOp and RequestID for atomics.
	AtomicOp  decode.AtomicOp
	RequestID uint32
	// RequestFrame is the first frame of the request (or message);
	// ResponseFirstFrame/ResponseLastFrame those of the response.
	RequestFrame, LastRequestFrame        int
	ResponseFirstFrame, ResponseLastFrame int
	Start, End                            time.Time
	// Latency is from the request to the response's L segment, for the
	// Reads and Atomics whose response was seen whole (HasLatency).
	Latency time.Duration
}

// HasLatency reports whether the operation carries a latency: a Read (an
// RTR's included) or Atomic answered to its response's L segment with no
// gap in it. The Reads that do are the samples of the read-latency
// distribution (ConnStats.ReadLatency, iwdump -z latency); the export
// writes operations.latency_ns for exactly these.
func (o *Operation) HasLatency() bool {
	return o.ResponseLastFrame > 0 && o.Status != OpIncomplete && (o.Kind == OpRead || o.Kind == OpRTR || o.Kind == OpAtomic)
}

// Verdict says whether the capture supports a Terminate's blame.
type Verdict uint8

const (
	// VerdictNoHeader: the Terminate copies no header (Local
	// Catastrophic, LLP errors, or headers not included).
	VerdictNoHeader Verdict = iota
	// VerdictConsistent: the blamed segment was found and the capture
	// shows the fault (e.g. a Read Response longer than requested).
	VerdictConsistent
	// VerdictPlausible: the blamed segment was found and fits the cause,
	// which depends on state a capture cannot show (STag tables, posted
	// receive buffers).
	VerdictPlausible
	// VerdictInconsistent: the blamed segment was found but does not fit
	// the cause (Reason says why).
	VerdictInconsistent
	// VerdictUnmatched: no segment sent to the Terminate's sender matches
	// the copied header.
	VerdictUnmatched
	// VerdictUnknown: no match, but a gap or the history limit may hide it.
	VerdictUnknown
)

func (v Verdict) String() string {
	switch v {
	case VerdictNoHeader:
		return "no header"
	case VerdictConsistent:
		return "consistent"
	case VerdictPlausible:
		return "plausible"
	case VerdictInconsistent:
		return "inconsistent"
	case VerdictUnmatched:
		return "unmatched"
	case VerdictUnknown:
		return "unknown"
	}
	return "?"
}

// MarshalText makes a Verdict print as its name in JSON.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// TerminateReport is a Terminate decoded in context (RFC 5040 §4.8, §7.1).
type TerminateReport struct {
	Conn  int
	Dir   Dir
	Frame int
	Time  time.Time
	// Cause is the reading used: RFC 5040's, or Linux siw's when Siw.
	Cause   decode.TermCause
	M, D, R bool
	Siw     bool
	// Ambiguous: both readings of the control word are defined; Cause is
	// the one the context favours (or the RFC's when it cannot tell), Alt
	// the other.
	Ambiguous bool
	Alt       decode.TermCause
	// BlamedFrame is the frame of the segment the copied DDP header (and
	// Read Request header) names, 0 if none.
	BlamedFrame  int
	BlamedOpcode decode.Opcode
	Verdict      Verdict
	Reason       string
	// SiwReadMSN: the copied DDP header's MSN holds the Read size, as
	// siw writes it, not the Read Request's MSN.
	SiwReadMSN bool
}
