package decode

// Opcode is the 4-bit RDMAP opcode (RFC 5040 §4.1 Figure 4; RFC 7306 §4.1
// Figure 2 adds 0x8–0xB; RFC 6580 §3.4 leaves 0xC–0xE unassigned and keeps
// 0xF for experimental use).
type Opcode uint8

// RDMAP opcodes.
const (
	OpWrite          Opcode = 0x0 // RDMA Write (RFC 5040 §5.1)
	OpReadRequest    Opcode = 0x1 // RDMA Read Request (RFC 5040 §5.2.1)
	OpReadResponse   Opcode = 0x2 // RDMA Read Response (RFC 5040 §5.2.2)
	OpSend           Opcode = 0x3 // Send (RFC 5040 §5.3)
	OpSendInv        Opcode = 0x4 // Send with Invalidate
	OpSendSE         Opcode = 0x5 // Send with Solicited Event
	OpSendSEInv      Opcode = 0x6 // Send with Solicited Event and Invalidate
	OpTerminate      Opcode = 0x7 // Terminate (RFC 5040 §5.4)
	OpImmData        Opcode = 0x8 // Immediate Data (RFC 7306 §6)
	OpImmDataSE      Opcode = 0x9 // Immediate Data with Solicited Event (RFC 7306 §6)
	OpAtomicRequest  Opcode = 0xA // Atomic Request (RFC 7306 §5.2.1)
	OpAtomicResponse Opcode = 0xB // Atomic Response (RFC 7306 §5.2.2)
	OpExperimental   Opcode = 0xF // reserved for experimental use (RFC 6580 §3.4)
)

// Untagged queue numbers RDMAP uses (RFC 5040 §3.1; RFC 7306 §4.1, §10.2).
const (
	QNSend       = 0 // Send types and Immediate Data
	QNReadReq    = 1 // RDMA Read Requests and Atomic Requests
	QNTerminate  = 2 // Terminate
	QNAtomicResp = 3 // Atomic Responses (RFC 7306)
)

// RDMAP control octet masks (RFC 5040 §4.1).
const (
	RDMAPRVMask  = 0xC0
	RDMAPRsvMask = 0x30
	RDMAPOpMask  = 0x0F
	RDMAPVersion = 1 // RV 01b; RV 00b is the RDMA Consortium RDMAP
)

var opcodeNames = [16]string{
	"RDMA Write",
	"RDMA Read Request",
	"RDMA Read Response",
	"Send",
	"Send with Invalidate",
	"Send with Solicited Event",
	"Send with Solicited Event and Invalidate",
	"Terminate",
	"Immediate Data",
	"Immediate Data with Solicited Event",
	"Atomic Request",
	"Atomic Response",
	"Unassigned (0xC)",
	"Unassigned (0xD)",
	"Unassigned (0xE)",
	"Experimental",
}

var opcodeShort = [16]string{
	"Write", "ReadReq", "ReadResp", "Send", "SendInv", "SendSE", "SendSEInv",
	"Terminate", "Imm", "ImmSE", "AtomicReq", "AtomicResp",
	"Op0xC", "Op0xD", "Op0xE", "Experimental",
}

// String is the message name as RFC 5040 / RFC 7306 spell it.
func (o Opcode) String() string { return opcodeNames[o&0x0F] }

// Short is a compact name for one-line output.
func (o Opcode) Short() string { return opcodeShort[o&0x0F] }

// Known reports an opcode assigned by RFC 5040 or RFC 7306 (0x0–0xB).
func (o Opcode) Known() bool { return o <= OpAtomicResponse }

// Extension reports an RFC 7306 opcode (0x8–0xB).
func (o Opcode) Extension() bool { return o >= OpImmData && o <= OpAtomicResponse }

// Tagged is the T flag the opcode's DDP segments must carry: RDMA Write and
// RDMA Read Response are tagged, everything else untagged (RFC 5040 §4.1
// Figure 4, RFC 7306 §4.1 Figure 2). Unknown opcodes report false.
func (o Opcode) Tagged() bool { return o == OpWrite || o == OpReadResponse }

// QN is the untagged queue the opcode must use: 0 for Sends and Immediate
// Data, 1 for Read Requests and Atomic Requests, 2 for Terminate, 3 for
// Atomic Responses (RFC 5040 §4.1, RFC 7306 §4.1). It is meaningless (0)
// for tagged and unknown opcodes; check Tagged and Known first.
func (o Opcode) QN() uint32 {
	switch o {
	case OpReadRequest, OpAtomicRequest:
		return QNReadReq
	case OpTerminate:
		return QNTerminate
	case OpAtomicResponse:
		return QNAtomicResp
	}
	return QNSend
}

// HeaderLen is the size of the RDMAP header that follows the DDP header:
// 28 for a Read Request (RFC 5040 §4.4), 4 for a Terminate (the minimum:
// the control word, RFC 5040 §4.8), 8 for Immediate Data (RFC 7306 §6.2),
// 52 for an Atomic Request and 12 for an Atomic Response (RFC 7306 §5.2);
// 0 for every other opcode.
func (o Opcode) HeaderLen() int {
	switch o {
	case OpReadRequest:
		return ReadReqHdrLen
	case OpTerminate:
		return TermCtrlLen
	case OpImmData, OpImmDataSE:
		return ImmDataLen
	case OpAtomicRequest:
		return AtomicReqHdrLen
	case OpAtomicResponse:
		return AtomicRespHdrLen
	}
	return 0
}

// RDMAPControl is the RDMAP control octet, octet 1 of the DDP segment
// (RFC 5040 §4.1).
type RDMAPControl struct {
	// RV is the RDMA Version: 1 for RFC 5040, 0 for the RDMA Consortium
	// RDMAP; both are valid (RFC 5040 §4.1).
	RV uint8
	// Rsv is the 2-bit reserved field, 0 on send, ignored on receive.
	Rsv uint8
	// Opcode is the RDMA message type.
	Opcode Opcode
}

// ParseRDMAPControl splits the RDMAP control octet into RV, Rsv and Opcode.
func ParseRDMAPControl(c uint8) RDMAPControl {
	return RDMAPControl{
		RV:     (c & RDMAPRVMask) >> 6,
		Rsv:    (c & RDMAPRsvMask) >> 4,
		Opcode: Opcode(c & RDMAPOpMask),
	}
}

// Octet builds the RDMAP control octet.
func (c RDMAPControl) Octet() uint8 {
	return (c.RV<<6)&RDMAPRVMask | (c.Rsv<<4)&RDMAPRsvMask | uint8(c.Opcode)&RDMAPOpMask
}

// PreIETF reports RDMA Version 00b (RDMA Consortium RDMAP, RFC 5040 §4.1).
func (c RDMAPControl) PreIETF() bool { return c.RV == 0 }
