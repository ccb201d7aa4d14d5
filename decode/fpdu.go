package decode

import "encoding/binary"

// FPDU framing constants (RFC 5044 §4).
const (
	// ULPDULenLen is the size of the ULPDU_Length field that starts every
	// FPDU (RFC 5044 §4.1).
	ULPDULenLen = 2
	// MinMULPDU is the floor of MULPDU: MPA never offers DDP less than 128
	// octets, even when EMSS is smaller (RFC 5044 §4.5).
	MinMULPDU = 128
	// minULPDU is the smallest ULPDU this package accepts: a tagged DDP
	// header (RFC 5041 §4.2). Every DDP segment carries at least that.
	minULPDU = 14
	// maxULPDU is the largest ULPDU_Length the 16-bit field can hold.
	maxULPDU = 0xFFFF
)

// PadLen returns the number of PAD octets after a ULPDU of ulpduLen octets:
// the PAD makes ULPDU_Length + ULPDU + PAD a multiple of 4, so that the whole
// FPDU is (RFC 5044 §4.1).
func PadLen(ulpduLen int) int { return (4 - (ulpduLen+ULPDULenLen)&3) & 3 }

// FPDULen returns the size on the wire of a marker-free FPDU carrying a
// ULPDU of ulpduLen octets: ULPDU_Length, ULPDU, PAD and CRC, i.e.
// roundup4(ulpduLen+2) + 4 (RFC 5044 §4.1).
func FPDULen(ulpduLen int) int { return ULPDULenLen + ulpduLen + PadLen(ulpduLen) + CRCLen }

// MULPDU returns the largest ULPDU that fits one FPDU in an empty TCP segment
// of emss octets (RFC 5044 §4.5):
//
//	with markers:    EMSS - (6 + 4*ceil(EMSS/512) + EMSS mod 4)
//	without markers: EMSS - (6 + EMSS mod 4)
//
// The marker term is the worst case. The result is never below MinMULPDU
// (128): MPA must not shrink MULPDU below 128 even when EMSS is smaller, and
// then need not follow the segment alignment rules (RFC 5044 §4.5).
func MULPDU(emss int, markers bool) int {
	if emss < MinMULPDU {
		return MinMULPDU
	}
	m := emss - (ULPDULenLen + CRCLen + emss%4)
	if markers {
		m -= MarkerLen * ((emss + MarkerSpacing - 1) / MarkerSpacing)
	}
	return max(m, MinMULPDU)
}

// FPDU is one marker-free MPA FPDU (RFC 5044 §4.1):
//
//	ULPDU_Length(2) | ULPDU (one DDP segment) | PAD(0..3) | CRC(4)
//
// ULPDU and Pad alias the input of the parser.
type FPDU struct {
	// ULPDULength is the ULPDU_Length field: octets of the ULPDU only, not
	// counting itself, PAD, CRC or markers.
	ULPDULength uint16
	// ULPDU is the DDP segment.
	ULPDU []byte
	// Pad is the 0..3 PAD octets: zero on send, ignored on receive except
	// by the CRC (RFC 5044 §4.1). Non-zero PAD is not an error.
	Pad []byte
	// CRC is the CRC field as read from the wire (least significant octet
	// first). When CRCs were not negotiated it may hold anything and must
	// not be checked (RFC 5044 §4.1, §7.1.1).
	CRC uint32
}

// ParseFPDU decodes the marker-free FPDU that starts at b[0] into f and
// returns the octets it occupies, FPDULen(ULPDULength). It does not check the
// CRC (see CRCOK): whether CRCs are in use is negotiated per connection.
//
// Errors: Truncated naming the first field b does not hold completely
// ("mpa.ulpdu_length", "mpa.ulpdu", "mpa.pad", "mpa.crc"; Need is the octets
// known to be needed). Malformed "mpa.ulpdu_length" when ULPDU_Length < 14:
// every DDP segment has at least a 14-octet tagged header (RFC 5041 §4.2), so
// such a length means the framing is lost.
func ParseFPDU(b []byte, f *FPDU) (n int, err error) {
	if len(b) < ULPDULenLen {
		return 0, truncated("mpa", "mpa.ulpdu_length", ULPDULenLen, len(b))
	}
	l := binary.BigEndian.Uint16(b)
	if l < minULPDU {
		return 0, malformed("mpa", "mpa.ulpdu_length", "shorter than a DDP header (14 octets)")
	}
	ulpduEnd := ULPDULenLen + int(l)
	padEnd := ulpduEnd + PadLen(int(l))
	n = padEnd + CRCLen
	switch {
	case len(b) < ulpduEnd:
		return 0, truncated("mpa", "mpa.ulpdu", n, len(b))
	case len(b) < padEnd:
		return 0, truncated("mpa", "mpa.pad", n, len(b))
	case len(b) < n:
		return 0, truncated("mpa", "mpa.crc", n, len(b))
	}
	f.ULPDULength = l
	f.ULPDU = b[ULPDULenLen:ulpduEnd:ulpduEnd]
	f.Pad = b[ulpduEnd:padEnd:padEnd]
	f.CRC = WireCRC(b[padEnd:])
	return n, nil
}

// ComputedCRC returns the CRC32c of a marker-free FPDU over ULPDU_Length,
// ULPDU and PAD (RFC 5044 §4.4), recomputed from the fields: ULPDULength as
// two octets in network order, then ULPDU, then Pad. It does not allocate.
func (f *FPDU) ComputedCRC() uint32 {
	hdr := [ULPDULenLen]byte{byte(f.ULPDULength >> 8), byte(f.ULPDULength)}
	crc := crc32cSmall(0, hdr[:])
	crc = CRC32cUpdate(crc, f.ULPDU)
	return crc32cSmall(crc, f.Pad)
}

// CRCOK reports whether the CRC field matches ComputedCRC. Only meaningful
// when CRCs are in use on the connection (C=1 in either MPA frame, RFC 5044
// §7.1.1); for FPDUs that carried markers use ParseFPDUWithMarkers, whose CRC
// covers the markers.
func (f *FPDU) CRCOK() bool { return f.ComputedCRC() == f.CRC }

// Append appends f as it is, without fixing anything: ULPDULength, ULPDU,
// Pad and CRC exactly as they are set (so a generator can write a wrong
// length, non-zero PAD or a bad CRC). The inverse of ParseFPDU; use
// AppendFPDU to build a correct FPDU.
func (f *FPDU) Append(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, f.ULPDULength)
	b = append(b, f.ULPDU...)
	b = append(b, f.Pad...)
	return appendCRC(b, f.CRC)
}

// zeroPad is the PAD source for encoders.
var zeroPad [3]byte

// AppendFPDU appends a correct marker-free FPDU carrying ulpdu: ULPDU_Length,
// ulpdu, zero PAD, and the CRC32c over them when crc is true, else a zero CRC
// field (RFC 5044 §4.1, §4.4; Linux siw sends 0 when CRCs are off). The
// caller keeps len(ulpdu) <= 65535; a longer ulpdu gets a wrapped length.
func AppendFPDU(b []byte, ulpdu []byte, crc bool) []byte {
	start := len(b)
	b = binary.BigEndian.AppendUint16(b, uint16(len(ulpdu)))
	b = append(b, ulpdu...)
	b = append(b, zeroPad[:PadLen(len(ulpdu))]...)
	var c uint32
	if crc {
		c = CRC32c(b[start:])
	}
	return appendCRC(b, c)
}
