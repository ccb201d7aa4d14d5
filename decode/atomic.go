package decode

import "encoding/binary"

// RFC 7306 header sizes.
const (
	// AtomicReqHdrLen is the Atomic Request header (RFC 7306 §5.2.1 Fig. 4).
	AtomicReqHdrLen = 52
	// AtomicRespHdrLen is the Atomic Response header (RFC 7306 §5.2.2
	// Fig. 6; the "32 bytes" of the §4 prose is a slip).
	AtomicRespHdrLen = 12
	// ImmDataLen is the Immediate Data header: exactly 8 octets of data
	// (RFC 7306 §6.2 Fig. 7).
	ImmDataLen = 8
)

// AtomicOp is the 4-bit Atomic Operation Code (RFC 7306 §5.2.1 Fig. 5,
// §10.1): 0 FetchAdd, 1 reserved, 2 CmpSwap, 3–15 unassigned.
type AtomicOp uint8

// Atomic Operation Codes.
const (
	AOpFetchAdd AtomicOp = 0x0
	AOpCmpSwap  AtomicOp = 0x2
)

// String names the operation; unassigned codes read "Unassigned (0xN)".
func (a AtomicOp) String() string {
	switch a {
	case AOpFetchAdd:
		return "FetchAdd"
	case AOpCmpSwap:
		return "CmpSwap"
	case 1:
		return "Reserved (0x1)"
	}
	return aopUnassigned[a&0x0F]
}

var aopUnassigned = [16]string{
	"Unassigned (0x0)", "Unassigned (0x1)", "Unassigned (0x2)", "Unassigned (0x3)",
	"Unassigned (0x4)", "Unassigned (0x5)", "Unassigned (0x6)", "Unassigned (0x7)",
	"Unassigned (0x8)", "Unassigned (0x9)", "Unassigned (0xA)", "Unassigned (0xB)",
	"Unassigned (0xC)", "Unassigned (0xD)", "Unassigned (0xE)", "Unassigned (0xF)",
}

// Known reports an assigned Atomic Operation Code (FetchAdd or CmpSwap).
func (a AtomicOp) Known() bool { return a == AOpFetchAdd || a == AOpCmpSwap }

// AtomicRequest is the RFC 7306 Atomic Request header (§5.2.1 Fig. 4–5).
type AtomicRequest struct {
	// Reserved is the 28-bit "Reserved (Not Used)" field in front of the
	// AOpCode: 0 on send, ignored on receive.
	Reserved uint32
	// AOpCode is the low 4 bits of the first word.
	AOpCode AtomicOp
	// RequestID is chosen by the requesting RNIC and echoed in the response.
	RequestID uint32
	// RemoteSTag and RemoteTO name the 64-bit-aligned target.
	RemoteSTag uint32
	RemoteTO   uint64
	// AddSwapData is the Add Data (FetchAdd) or Swap Data (CmpSwap).
	AddSwapData uint64
	// AddSwapMask is the Add Mask (FetchAdd) or Swap Mask (CmpSwap).
	AddSwapMask uint64
	// CompareData and CompareMask are meaningful for CmpSwap only.
	CompareData uint64
	CompareMask uint64
}

func atomicReqTruncField(have int) string {
	switch {
	case have < 4:
		return "rdmap.atomic.opcode"
	case have < 8:
		return "rdmap.atomic.request_id"
	case have < 12:
		return "rdmap.atomic.remote_stag"
	case have < 20:
		return "rdmap.atomic.remote_to"
	case have < 28:
		return "rdmap.atomic.add_swap_data"
	case have < 36:
		return "rdmap.atomic.add_swap_mask"
	case have < 44:
		return "rdmap.atomic.compare_data"
	}
	return "rdmap.atomic.compare_mask"
}

// ParseAtomicRequest decodes the 52-octet Atomic Request header at b[0]
// (RFC 7306 §5.2.1) and returns 52. An unassigned AOpCode is decoded, not
// rejected: the responder's error has no code of its own (§5.2.1 rule 4).
func ParseAtomicRequest(b []byte, r *AtomicRequest) (int, error) {
	if len(b) < AtomicReqHdrLen {
		return 0, truncated("rdmap", atomicReqTruncField(len(b)), AtomicReqHdrLen, len(b))
	}
	w := binary.BigEndian.Uint32(b[0:4])
	*r = AtomicRequest{
		Reserved:    w >> 4,
		AOpCode:     AtomicOp(w & 0x0F),
		RequestID:   binary.BigEndian.Uint32(b[4:8]),
		RemoteSTag:  binary.BigEndian.Uint32(b[8:12]),
		RemoteTO:    binary.BigEndian.Uint64(b[12:20]),
		AddSwapData: binary.BigEndian.Uint64(b[20:28]),
		AddSwapMask: binary.BigEndian.Uint64(b[28:36]),
		CompareData: binary.BigEndian.Uint64(b[36:44]),
		CompareMask: binary.BigEndian.Uint64(b[44:52]),
	}
	return AtomicReqHdrLen, nil
}

// Append encodes the 52-octet Atomic Request header (Reserved is written
// from its low 28 bits).
func (r *AtomicRequest) Append(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, r.Reserved<<4|uint32(r.AOpCode&0x0F))
	b = binary.BigEndian.AppendUint32(b, r.RequestID)
	b = binary.BigEndian.AppendUint32(b, r.RemoteSTag)
	b = binary.BigEndian.AppendUint64(b, r.RemoteTO)
	b = binary.BigEndian.AppendUint64(b, r.AddSwapData)
	b = binary.BigEndian.AppendUint64(b, r.AddSwapMask)
	b = binary.BigEndian.AppendUint64(b, r.CompareData)
	return binary.BigEndian.AppendUint64(b, r.CompareMask)
}

// AtomicResponse is the RFC 7306 Atomic Response header (§5.2.2 Fig. 6).
type AtomicResponse struct {
	// OrigRequestID is the Request Identifier of the answered request.
	OrigRequestID uint32
	// OrigValue is the target's value before the operation.
	OrigValue uint64
}

// ParseAtomicResponse decodes the 12-octet Atomic Response header at b[0]
// (RFC 7306 §5.2.2) and returns 12.
func ParseAtomicResponse(b []byte, r *AtomicResponse) (int, error) {
	if len(b) < AtomicRespHdrLen {
		field := "rdmap.atomic.orig_value"
		if len(b) < 4 {
			field = "rdmap.atomic.orig_request_id"
		}
		return 0, truncated("rdmap", field, AtomicRespHdrLen, len(b))
	}
	r.OrigRequestID = binary.BigEndian.Uint32(b[0:4])
	r.OrigValue = binary.BigEndian.Uint64(b[4:12])
	return AtomicRespHdrLen, nil
}

// Append encodes the 12-octet Atomic Response header.
func (r *AtomicResponse) Append(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, r.OrigRequestID)
	return binary.BigEndian.AppendUint64(b, r.OrigValue)
}

// ParseImmData copies the 8 octets of Immediate Data at b[0] (RFC 7306
// §6.2) into d and returns 8. RFC 7306 §6.3 makes the receiver check that
// the message holds exactly 8 octets; that check belongs to the caller,
// which sees the whole ULPDU.
func ParseImmData(b []byte, d *[ImmDataLen]byte) (int, error) {
	if len(b) < ImmDataLen {
		return 0, truncated("rdmap", "rdmap.imm_data", ImmDataLen, len(b))
	}
	copy(d[:], b[:ImmDataLen])
	return ImmDataLen, nil
}
