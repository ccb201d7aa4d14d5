package endpoint

import (
	"errors"
	"fmt"

	"github.com/iwkit/iwkit/decode"
)

// Access is a set of memory access rights (V00 §7.4, Fig. 18).
type Access uint8

const (
	AccessLocalRead   Access = 1 << iota // source of Send / RDMA Write, local reads
	AccessLocalWrite                     // receive buffers
	AccessRemoteRead                     // source of inbound RDMA Read Requests
	AccessRemoteWrite                    // sink of inbound RDMA Writes and of Read Responses
	AccessMWBind                         // memory windows may be bound to the region (V00 §7.4)
)

// AccessRemoteAtomic lets a peer's RFC 7306 Atomic Operations target the
// region (RFC 7306 §5: "memory registered for Atomic Operations"); it
// requires Local Write. AccessAll does not include it.
const AccessRemoteAtomic Access = 1 << 7

// AccessAll is every right.
const AccessAll = AccessLocalRead | AccessLocalWrite | AccessRemoteRead | AccessRemoteWrite

func (a Access) String() string {
	s := ""
	for i, n := range [8]string{"LR", "LW", "RR", "RW", "Bind", 7: "Atomic"} {
		if a&(1<<i) != 0 && n != "" {
			if s != "" {
				s += "|"
			}
			s += n
		}
	}
	if s == "" {
		return "none"
	}
	return s
}

// STag is a Steering Tag: a 24-bit index chosen by the endpoint (never 0) in
// the upper bits and an 8-bit key chosen by the consumer in the low bits;
// all 32 bits are checked on every access (V00 §7.2).
type STag uint32

// Index is the 24-bit STag Index.
func (s STag) Index() uint32 { return uint32(s) >> 8 }

// Key is the 8-bit STag Key.
func (s STag) Key() uint8 { return uint8(s) }

func (s STag) String() string { return fmt.Sprintf("0x%08x", uint32(s)) }

// QPState is a state of the verbs QP state machine (V00 §6.2).
type QPState uint8

const (
	StateIdle QPState = iota
	StateRTS
	StateClosing
	StateTerminate
	StateError
)

func (s QPState) String() string {
	switch s {
	case StateIdle:
		return "Idle"
	case StateRTS:
		return "RTS"
	case StateClosing:
		return "Closing"
	case StateTerminate:
		return "Terminate"
	case StateError:
		return "Error"
	}
	return fmt.Sprintf("QPState(%d)", uint8(s))
}

// Opcode is a Send Queue work request type (V00 §9.3.1).
type Opcode uint8

const (
	OpSend      Opcode = iota // Send
	OpSendSE                  // Send with Solicited Event
	OpSendInv                 // Send with Invalidate (of the peer's STag InvalidateSTag)
	OpSendSEInv               // Send with Solicited Event and Invalidate
	OpWrite                   // RDMA Write
	OpRead                    // RDMA Read
	OpRecv                    // a receive (completions only)
	OpBindMW                  // Bind Memory Window (type 2 windows; SendWR.Bind)
	OpLocalInv                // Invalidate Local STag (SendWR.InvalidateSTag, of an MR or a type 2 MW)
	OpFastReg                 // Fast-Register Non-Shared MR (SendWR.FastReg; privileged QPs)
	OpReadInv                 // RDMA Read with Invalidate Local STag: the sink's STag is invalidated before the Read completes
)

func (o Opcode) String() string {
	switch o {
	case OpSend:
		return "Send"
	case OpSendSE:
		return "SendSE"
	case OpSendInv:
		return "SendInv"
	case OpSendSEInv:
		return "SendSEInv"
	case OpWrite:
		return "RDMAWrite"
	case OpRead:
		return "RDMARead"
	case OpRecv:
		return "Recv"
	case OpBindMW:
		return "BindMW"
	case OpLocalInv:
		return "LocalInv"
	case OpFastReg:
		return "FastReg"
	case OpReadInv:
		return "RDMAReadInv"
	}
	return o.string7306()
}

// isRead is an RDMA Read, with or without Invalidate Local STag.
func (o Opcode) isRead() bool { return o == OpRead || o == OpReadInv }

func (o Opcode) rdmap() decode.Opcode {
	switch o {
	case OpSend:
		return decode.OpSend
	case OpSendSE:
		return decode.OpSendSE
	case OpSendInv:
		return decode.OpSendInv
	case OpSendSEInv:
		return decode.OpSendSEInv
	case OpWrite:
		return decode.OpWrite
	case OpRead, OpReadInv:
		return decode.OpReadRequest
	}
	return decode.OpExperimental
}

// Status is the status of a work completion (V00 §9.3.2, §9.5.2).
type Status uint8

const (
	StatusSuccess Status = iota
	StatusFlushed
	StatusInvalidWQE
	StatusLocalQPCatastrophic
	StatusRemoteTermination // a Terminate arrived; QP.Terminate() has it
	StatusInvalidSTag
	StatusBaseBounds
	StatusAccessViolation
	StatusInvalidPD
	StatusWrapError
	StatusInvalidateError // STag to invalidate had invalid PD or rights
	StatusZeroReadResources
	StatusLocalLength // receive buffer too small for the incoming message
	StatusLocalTermination
	StatusInvalidWindow // a Bind or window access that the window's state or type forbids
	// Fast-Register and Invalidate Local STag (V00 §7.6, §9.3.2):
	StatusNotPrivileged       // QP Not In Privileged Mode
	StatusSTagNotInvalid      // STag Not In Invalid State
	StatusInvalidLength       // the length exceeds what the STag was allocated for
	StatusInvalidAccessRights // a rights combination V00 Fig. 18 forbids
	StatusInvalidVA           // Invalid Virtual Address: the range wraps
	StatusInvalidRegion       // not a region this operation applies to (a window, a shared region, not allocated for it)
)

var statusNames = [...]string{"Success", "Flushed", "InvalidWQE", "LocalQPCatastrophic", "RemoteTermination",
	"InvalidSTag", "BaseBounds", "AccessViolation", "InvalidPD", "WrapError", "InvalidateError",
	"ZeroReadResources", "LocalLength", "LocalTermination", "InvalidWindow",
	"NotPrivileged", "STagNotInvalid", "InvalidLength", "InvalidAccessRights", "InvalidVA", "InvalidRegion"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// SGE is one Scatter/Gather element: Length octets at tagged offset Addr of the
// local memory region named by LKey (V00 §8.1.1).
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   STag
}

// SendWR is a Send Queue work request.
type SendWR struct {
	WRID   uint64
	Opcode Opcode
	// SGL is the local data: the gather list of a Send or RDMA Write
	// (Local Read), or the single sink of an RDMA Read (Remote Write, as
	// V00 §7.4.2 requires for Read Response sinks).
	SGL []SGE
	// Signaled requests a completion on success; errors always complete.
	Signaled bool
	// ReadFence holds the request until all earlier RDMA Reads completed.
	ReadFence bool
	// RemoteAddr and RKey name the peer buffer of an RDMA Write or Read.
	RemoteAddr uint64
	RKey       STag
	// InvalidateSTag is the peer STag a Send with Invalidate invalidates,
	// or the local STag an Invalidate Local STag invalidates.
	InvalidateSTag STag
	// LocalFence holds the request until every earlier WR completed (V00
	// §8.2.2; for Invalidate Local STag and Bind).
	LocalFence bool
	// Bind is what a Bind Memory Window request binds.
	Bind *Bind
	// FastReg is what a Fast-Register request registers.
	FastReg *FastReg
	// Atomic are the operands of an RFC 7306 atomic (FetchAdd, CmpSwap).
	Atomic AtomicArgs
	// Imm is the Immediate Data of OpImmData, OpImmDataSE, OpWriteImm and
	// OpSendImm (RFC 7306 §6), sent big-endian.
	Imm uint64
}

// Bind describes a memory window binding (V00 §7.10): Length octets of MR
// starting at tagged offset Addr (the MR must be VA-based and have
// AccessMWBind), with remote rights Access, under the window's new Key.
type Bind struct {
	MW     *MW
	MR     *MR
	Addr   uint64
	Length uint64
	Access Access
	Key    uint8
}

// RecvWR is a Receive Queue work request; receives are always signaled.
type RecvWR struct {
	WRID uint64
	SGL  []SGE
}

// WorkCompletion is one completion queue entry (V00 §8.2.3).
type WorkCompletion struct {
	WRID   uint64
	Opcode Opcode
	Status Status
	// ByteLen is the length of the received message (receives only).
	ByteLen uint32
	// Solicited marks a receive of a Send with Solicited Event.
	Solicited bool
	// Invalidated is set when a Send with Invalidate invalidated
	// InvalidatedSTag before this receive completed.
	Invalidated     bool
	InvalidatedSTag STag
	QPNum           uint32
	// Err explains an error status, when there is more to say.
	Err error
	// WithImm marks a receive consumed by an RFC 7306 Immediate Data
	// message; Imm is its 8 octets (read big-endian) and ByteLen is 0.
	WithImm bool
	Imm     uint64
}

// Errors returned immediately by the verbs (V00's Immediate Errors).
var (
	ErrInvalidState    = errors.New("endpoint: invalid QP state for this operation")
	ErrQueueFull       = errors.New("endpoint: work queue full")
	ErrInvalidWR       = errors.New("endpoint: invalid work request")
	ErrInvalidAccess   = errors.New("endpoint: invalid access rights")
	ErrResourceBusy    = errors.New("endpoint: resource in use")
	ErrClosed          = errors.New("endpoint: closed")
	ErrCQOverflow      = errors.New("endpoint: completion queue overflow")
	ErrInvalidSTag     = errors.New("endpoint: invalid STag")
	ErrTooManyQPs      = errors.New("endpoint: too many resources")
	ErrBadLLPClose     = errors.New("endpoint: peer closed the connection with work outstanding")
	ErrLLPClosed       = errors.New("endpoint: LLP connection closed")
	ErrRemoteTerminate = errors.New("endpoint: peer sent a Terminate")
)

// TermInfo is a Terminate message sent or received by a QP (V00 §9.2.5.2: in
// Terminate and Error the Terminate is readable, with a flag saying whether
// it was local or remote).
type TermInfo struct {
	// Local: this endpoint sent it; otherwise the peer did.
	Local bool
	// Cause names Layer / EType / Code.
	Cause decode.TermCause
	// Header is the decoded Terminate header (with copied DDP and RDMA
	// headers when present). Its Raw slices are private copies.
	Header decode.Terminate
	// Reason says, for a local Terminate, which check failed.
	Reason string
	// SiwCause is the cause as Linux siw's swapped bit-field encoding would
	// read the control word, when that reading is defined and differs
	// (received Terminates only; reference §5.1). A control word without
	// HdrCt bits can be either: siw's "LLP/MPA/No matching RTR" is RFC
	// "RDMAP/Remote Operation/0x07" on the wire.
	SiwCause *decode.TermCause
}

// TerminateError is the error a QP reports after a Terminate went either way.
type TerminateError struct{ Info TermInfo }

func (e *TerminateError) Error() string {
	who := "received"
	if e.Info.Local {
		who = "sent"
	}
	s := fmt.Sprintf("endpoint: Terminate %s: %s (0x%x/0x%x/0x%02x)", who, e.Info.Cause.String(),
		e.Info.Cause.Layer, e.Info.Cause.EType, e.Info.Cause.Code)
	if e.Info.SiwCause != nil {
		s += fmt.Sprintf(" [as siw encodes: %s]", e.Info.SiwCause.String())
	}
	if e.Info.Reason != "" {
		s += ": " + e.Info.Reason
	}
	return s
}

// Is makes errors.Is(err, ErrRemoteTerminate) true for received Terminates.
func (e *TerminateError) Is(target error) bool { return target == ErrRemoteTerminate && !e.Info.Local }
