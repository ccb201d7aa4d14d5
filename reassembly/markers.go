package reassembly

import (
	"encoding/binary"

	"github.com/iwkit/iwkit/decode"
)

// Marker arithmetic the framer needs before it holds a whole FPDU: how many
// stream octets an FPDU occupies, and its first non-marker octets. decode
// keeps the equivalents private; these follow its stream model (see
// decode.Marker): positions are TCP sequence numbers, markers sit at every
// position p with (p - s0) mod 512 == 0.

// maxFPDUWire bounds the wire size of one FPDU: ULPDU_Length 65535, PAD, CRC
// and the markers such a span can hold.
const maxFPDUWire = 65 << 10

func markerOff(pos, s0 uint32) uint32 { return (pos - s0) % decode.MarkerSpacing }

// leadLen is the marker octets an FPDU that starts at pos begins with.
func leadLen(pos, s0 uint32) int {
	if off := markerOff(pos, s0); off < decode.MarkerLen {
		return int(decode.MarkerLen - off)
	}
	return 0
}

// wireSpan returns how many stream octets, from position p, hold k
// non-marker octets (markers before each of them included).
func wireSpan(p, s0 uint32, k int) int {
	w := 0
	for k > 0 {
		off := int(markerOff(p+uint32(w), s0))
		if off < decode.MarkerLen {
			w += decode.MarkerLen - off
			off = decode.MarkerLen
		}
		avail := decode.MarkerSpacing - off
		if k <= avail {
			return w + k
		}
		w += avail
		k -= avail
	}
	return w
}

// fpduWireLen returns the stream octets of an FPDU with ULPDU_Length l that
// starts at p on a stream with markers: leading marker, ULPDU_Length, ULPDU,
// PAD, a marker between PAD and CRC, the CRC (RFC 5044 §4.3-4.4).
func fpduWireLen(p, s0 uint32, l int) int {
	logical := decode.ULPDULenLen + l + decode.PadLen(l)
	padEnd := wireSpan(p, s0, logical)
	covEnd := padEnd
	if decode.IsMarkerPos(p+uint32(padEnd), s0) {
		covEnd += decode.MarkerLen
	}
	return covEnd + wireSpan(p+uint32(covEnd), s0, decode.CRCLen)
}

// logical appends to dst up to k non-marker octets of w, a span of stream
// octets starting at position p.
func logical(dst, w []byte, p, s0 uint32, k int) []byte {
	i := 0
	for i < len(w) && len(dst) < k {
		off := markerOff(p+uint32(i), s0)
		if off < decode.MarkerLen {
			i += int(decode.MarkerLen - off)
			continue
		}
		c := min(len(w)-i, int(decode.MarkerSpacing-off), k-len(dst))
		dst = append(dst, w[i:i+c]...)
		i += c
	}
	return dst
}

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
