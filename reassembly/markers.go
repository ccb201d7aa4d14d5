package reassembly

import (
	"encoding/binary"

	"github.com/iwkit/iwkit/decode"
)

// maxFPDUWire bounds the wire size of one FPDU: ULPDU_Length 65535, PAD, CRC
// and the markers such a span can hold. (The marker arithmetic itself is
// decode's: MarkerOffset, WireSpan, FPDUWireLen, AppendUnmarked.)
const maxFPDUWire = 65 << 10

// plausibleHead checks the start of a DDP segment of l octets (u holds at
// least its first 2 octets, and 10 for an untagged one) as the first octets
// of an FPDU found without framing: the DDP and RDMAP versions are the ones
// the direction uses (ver = DV<<2|RV, learnt from its FPDUs; DV "MUST be the
// same for every segment of a stream", draft-differences §7) or, not known
// yet, 0 or 1 and (strict) equal (RFC 5041 §4.1, RFC 5040 §4.1); the opcode
// is assigned, the T flag is the opcode's, the segment holds the headers, and
// an untagged segment names the opcode's queue (RFC 5040 §4.1, RFC 7306
// §4.1). strict adds the reserved fields: zero as every known sender sends
// them, which keeps binary non-iWARP data from passing.
func plausibleHead(u []byte, l int, strict bool, ver int) bool {
	ctrl, rc := u[0], u[1]
	dv, rv := ctrl&decode.DDPDVMask, rc>>6
	switch {
	case ver >= 0:
		if int(dv)<<2|int(rv) != ver {
			return false
		}
	case dv > 1 || rv > 1 || (strict && dv != rv):
		return false
	}
	op := decode.Opcode(rc & decode.RDMAPOpMask)
	tagged := ctrl&decode.DDPFlagT != 0
	if !op.Known() || op.Tagged() != tagged {
		return false
	}
	if strict && (ctrl&decode.DDPRsvdMask != 0 || rc&decode.RDMAPRsvMask != 0) {
		return false
	}
	hl := decode.DDPTaggedHdrLen
	if !tagged {
		hl = decode.DDPUntaggedHdrLen
	}
	if l < hl+op.HeaderLen() {
		return false
	}
	if !tagged && binary.BigEndian.Uint32(u[6:10]) != op.QN() {
		return false
	}
	return true
}

// headNeed is the octets of the DDP segment plausibleHead needs.
func headNeed(u0 byte) int {
	if u0&decode.DDPFlagT != 0 {
		return 2
	}
	return 10
}
