package decode

import "encoding/binary"

// Marker constants (RFC 5044 §4.2-4.3).
const (
	// MarkerLen is the size of a marker: Reserved(2) | FPDUPTR(2).
	MarkerLen = 4
	// MarkerSpacing is the marker period in TCP stream octets, counting
	// the marker octets themselves (508 other octets between two markers).
	MarkerSpacing = 512
)

// Marker is an MPA marker (RFC 5044 §4.2).
//
// Stream positions: markers are placed by TCP sequence number (RFC 5044
// §4.3), so positions here are uint32 and every computation is modulo 2^32.
// As 2^32 is a multiple of 512, (pos - s0) % 512 is correct across a
// sequence-number wrap. s0 is the stream position of a direction's first
// marker, which sits immediately before that direction's first FPDU of Full
// Operation Phase (RFC 5044 §4.3).
//
// An FPDU that starts at stream position pos occupies, on the wire:
//
//   - a leading marker, if pos is a marker position. A marker that falls
//     exactly between two FPDUs belongs to the following one, has FPDUPTR 0
//     and is covered by that FPDU's CRC (RFC 5044 §4.3, §4.4 rule 2);
//   - ULPDU_Length, ULPDU and PAD, with a marker wherever the stream reaches
//     a marker position; such a marker's FPDUPTR is the distance in stream
//     octets (earlier markers included) from the first octet of ULPDU_Length
//     to the first octet of the marker (RFC 5044 §4.2, Figure 4);
//   - a marker immediately after the PAD, if the stream is at a marker
//     position there; it is covered by this FPDU's CRC (RFC 5044 §4.4 rule 1)
//     and points back at ULPDU_Length like the others;
//   - the CRC, computed over every octet from pos up to the CRC field.
//
// A marker right after the CRC belongs to the next FPDU. Since FPDUs are
// multiples of 4 octets and s0 is an FPDU start, (pos - s0) is a multiple of
// 4 on a conforming stream and markers never split a field or fall inside the
// CRC. The functions here still give a defined, self-consistent result on
// other alignments (a marker octet is never taken for FPDU data, and marker
// octets inside the CRC field are not covered by the CRC) so that they never
// fail on arbitrary input.
type Marker struct {
	// Reserved is zero on send and ignored on receive, but covered by the
	// CRC.
	Reserved uint16
	// FPDUPTR is the back-pointer to the containing FPDU's ULPDU_Length
	// field, in stream octets; 0 when the marker lies between two FPDUs.
	// The two low bits are sent as 0 and must be treated as 0 on receipt.
	FPDUPTR uint16
}

// ParseMarker decodes the marker at b[0:4]. Truncated "mpa.marker" if b is
// shorter.
func ParseMarker(b []byte) (Marker, error) {
	if len(b) < MarkerLen {
		return Marker{}, truncated("mpa", "mpa.marker", MarkerLen, len(b))
	}
	return Marker{Reserved: binary.BigEndian.Uint16(b), FPDUPTR: binary.BigEndian.Uint16(b[2:])}, nil
}

// Append appends the 4 marker octets (network order).
func (m Marker) Append(b []byte) []byte {
	return append(b, byte(m.Reserved>>8), byte(m.Reserved), byte(m.FPDUPTR>>8), byte(m.FPDUPTR))
}

// HeaderPos returns the stream position of the ULPDU_Length field of the FPDU
// a marker at stream position at points to: at+4 when FPDUPTR is 0 (the
// marker lies between FPDUs and the next FPDU header follows it), otherwise
// at - FPDUPTR with the two low bits taken as 0 (RFC 5044 §4.2-4.3). Receivers
// use it to find FPDUs after a loss; confirm with ULPDU_Length and the CRC.
func (m Marker) HeaderPos(at uint32) uint32 {
	if m.FPDUPTR == 0 {
		return at + MarkerLen
	}
	return at - uint32(m.FPDUPTR&^3)
}

// MarkerOffset returns the offset of stream position pos inside its
// 512-octet marker period; 0..3 are the octets of a marker (RFC 5044 §4.3:
// markers at every pos with (pos - s0) mod 512 == 0, modulo 2^32).
func MarkerOffset(pos, s0 uint32) uint32 { return (pos - s0) % MarkerSpacing }

// IsMarkerPos reports whether a marker starts at stream position pos:
// (pos - s0) mod 512 == 0 (RFC 5044 §4.3), modulo 2^32.
func IsMarkerPos(pos, s0 uint32) bool { return MarkerOffset(pos, s0) == 0 }

// NextMarkerPos returns the first marker position at or after pos (wrapping
// past 2^32 like TCP sequence numbers).
func NextMarkerPos(pos, s0 uint32) uint32 {
	if off := MarkerOffset(pos, s0); off != 0 {
		return pos + (MarkerSpacing - off)
	}
	return pos
}

// MarkerPositions appends to dst the positions of the markers that start in
// the stream range [from, to), taken modulo 2^32 (to-from is the range size;
// from == to is empty).
func MarkerPositions(dst []uint32, s0, from, to uint32) []uint32 {
	span := uint64(to - from)
	for d := uint64(NextMarkerPos(from, s0) - from); d < span; d += MarkerSpacing {
		dst = append(dst, from+uint32(d))
	}
	return dst
}

// ExpectedFPDUPTR returns the FPDUPTR a conforming sender writes into the
// marker at stream position markerPos inside the FPDU that starts at stream
// position fpduPos: 0 for the FPDU's leading marker (markerPos == fpduPos),
// else the distance from the ULPDU_Length field (after the leading marker, if
// any) to the marker (RFC 5044 §4.2-4.3). The 16-bit field cannot hold
// distances above 65535 (an FPDU with markers and a ULPDU near 64 KiB); the
// value is then truncated to 16 bits.
func ExpectedFPDUPTR(markerPos, fpduPos, s0 uint32) uint16 {
	if markerPos == fpduPos {
		return 0
	}
	return uint16(markerPos - headerPos(fpduPos, s0))
}

// leadLen returns how many marker octets the FPDU that starts at pos begins
// with: 4 if pos is a marker position, 4-off if pos is (improperly) inside
// a marker, else 0.
func leadLen(pos, s0 uint32) int {
	if off := MarkerOffset(pos, s0); off < MarkerLen {
		return int(MarkerLen - off)
	}
	return 0
}

// headerPos is the stream position of the ULPDU_Length field of the FPDU that
// starts at pos.
func headerPos(pos, s0 uint32) uint32 { return pos + uint32(leadLen(pos, s0)) }

// WireSpan returns how many stream octets, starting at stream position p,
// hold k non-marker octets, marker octets before each of them included. It
// stops right after the k-th non-marker octet (a marker that starts there is
// not counted). WireSpan(p, s0, 0) == 0. A receiver uses it to know how
// much of the stream holds a field before it has the whole FPDU (RFC 5044
// §4.2: markers are inserted into the stream regardless of FPDU content).
func WireSpan(p, s0 uint32, k int) int {
	if k <= 0 {
		return 0
	}
	w := 0
	off := int(MarkerOffset(p, s0))
	if off < MarkerLen {
		w = MarkerLen - off
		off = MarkerLen
	}
	if avail := MarkerSpacing - off; k <= avail {
		return w + k
	} else {
		w += avail
		k -= avail
	}
	// At a marker: each period holds a marker and 508 octets (closed form:
	// the resync scan computes this for every candidate FPDU).
	const per = MarkerSpacing - MarkerLen
	q := (k - 1) / per
	return w + q*MarkerSpacing + MarkerLen + k - q*per
}

// FPDUWireLen returns the stream octets of an FPDU with ULPDU_Length
// ulpduLen that starts at stream position pos on a marker-enabled stream
// (see Marker for the stream model): leading marker, ULPDU_Length, ULPDU,
// PAD, a marker between PAD and CRC, the CRC (RFC 5044 §4.3-4.4). The next
// FPDU starts at pos+FPDUWireLen(pos, s0, ulpduLen); ParseFPDUWithMarkers
// returns the same n.
func FPDUWireLen(pos, s0 uint32, ulpduLen int) int {
	return fpduSpans(pos, s0, ulpduLen).n
}

// spans are the ends, in wire octets from an FPDU's first octet, of the
// parts of an FPDU on a marker-enabled stream.
type spans struct {
	ulpduEnd int
	padEnd   int
	covEnd   int // the marker between PAD and CRC, if any: CRC coverage ends here
	n        int // the CRC: the whole FPDU
}

func fpduSpans(pos, s0 uint32, l int) spans {
	var s spans
	logical := ULPDULenLen + l
	s.ulpduEnd = WireSpan(pos, s0, logical)
	s.padEnd = WireSpan(pos, s0, logical+PadLen(l))
	s.covEnd = s.padEnd
	if IsMarkerPos(pos+uint32(s.padEnd), s0) {
		s.covEnd += MarkerLen // marker between PAD and CRC, covered by the CRC
	}
	s.n = s.covEnd + WireSpan(pos+uint32(s.covEnd), s0, CRCLen)
	return s
}

// AppendUnmarked appends to dst the first k non-marker octets of wire, a
// span of stream octets that starts at stream position pos (fewer when
// wire ends before them): the start of an FPDU's content, with its markers
// taken out, before the whole FPDU is there. It allocates only when dst must
// grow.
func AppendUnmarked(dst, wire []byte, pos, s0 uint32, k int) []byte {
	if w := WireSpan(pos, s0, k); w < len(wire) {
		wire = wire[:w]
	}
	dst, _ = stripMarkers(dst, nil, false, wire, pos, s0)
	return dst
}

// markerWord is the value of the marker at stream position m inside the FPDU
// that starts at fpduPos, as 4 wire octets in a uint32.
func markerWord(m, fpduPos, s0 uint32) uint32 {
	return uint32(ExpectedFPDUPTR(m, fpduPos, s0))
}

// appendWithMarkers appends the non-marker octets src to b as they appear in
// the stream from stream position *p on, inserting the marker octets of every
// marker position reached before an octet of src (the value from markerWord).
// It advances *p by the octets appended.
func appendWithMarkers(b, src []byte, p *uint32, fpduPos, s0 uint32) []byte {
	for len(src) > 0 {
		off := MarkerOffset(*p, s0)
		if off < MarkerLen {
			// Marker octets off..3 of the marker that starts at *p-off.
			var w [MarkerLen]byte
			binary.BigEndian.PutUint32(w[:], markerWord(*p-off, fpduPos, s0))
			b = append(b, w[off:]...)
			*p += MarkerLen - off
			off = MarkerLen
		}
		c := min(len(src), int(MarkerSpacing-off))
		b = append(b, src[:c]...)
		src = src[c:]
		*p += uint32(c)
	}
	return b
}

// AppendFPDUWithMarkers appends one FPDU carrying ulpdu as it appears on a
// marker-enabled stream starting at stream position pos, with s0 the
// direction's first marker position (see Marker for the stream model):
// leading marker (FPDUPTR 0) if pos is a marker position, ULPDU_Length,
// ulpdu, zero PAD, markers wherever the stream reaches a marker position
// before the CRC (each pointing back at ULPDU_Length), then the CRC32c over
// all of that when crc is true, else a zero CRC field (RFC 5044 §4.1-4.4). It returns the stream position after the FPDU, where
// the next FPDU starts. The caller keeps len(ulpdu) <= 65535.
func AppendFPDUWithMarkers(b []byte, pos, s0 uint32, ulpdu []byte, crc bool) ([]byte, uint32) {
	start := len(b)
	p := pos
	// The leading marker lies between FPDUs: FPDUPTR 0 (RFC 5044 §4.3). On a
	// misaligned pos inside a marker, only its remaining octets are written.
	if l := leadLen(pos, s0); l > 0 {
		b = append(b, zeroMarker[MarkerLen-l:]...)
		p += uint32(l)
	}
	hdr := [ULPDULenLen]byte{byte(len(ulpdu) >> 8), byte(len(ulpdu))}
	b = appendWithMarkers(b, hdr[:], &p, pos, s0)
	b = appendWithMarkers(b, ulpdu, &p, pos, s0)
	b = appendWithMarkers(b, zeroPad[:PadLen(len(ulpdu))], &p, pos, s0)
	// A marker between PAD and CRC is part of this FPDU and covered by its
	// CRC (RFC 5044 §4.4 rule 1).
	if IsMarkerPos(p, s0) {
		b = Marker{FPDUPTR: ExpectedFPDUPTR(p, pos, s0)}.Append(b)
		p += MarkerLen
	}
	var c uint32
	if crc {
		c = CRC32c(b[start:])
	}
	var cw [CRCLen]byte
	PutCRC(cw[:], c)
	b = appendWithMarkers(b, cw[:], &p, pos, s0)
	return b, p
}

var zeroMarker [MarkerLen]byte

// MarkerAt is a marker found in the stream, with the stream position of its
// first octet.
type MarkerAt struct {
	Pos    uint32
	Marker Marker
}

// StripMarkers removes the markers from wire, a span of stream octets that
// starts at stream position pos: it appends the non-marker octets to dst and
// every marker that lies wholly inside wire (with its position) to marks.
// Octets of a marker cut by either end of wire are dropped as well but not
// reported. It allocates only when dst or marks must grow.
func StripMarkers(dst []byte, marks []MarkerAt, wire []byte, pos, s0 uint32) ([]byte, []MarkerAt) {
	return stripMarkers(dst, marks, true, wire, pos, s0)
}

// stripMarkers is StripMarkers; with record false it leaves marks alone (and
// so never allocates for them).
func stripMarkers(dst []byte, marks []MarkerAt, record bool, wire []byte, pos, s0 uint32) ([]byte, []MarkerAt) {
	p := pos
	for len(wire) > 0 {
		off := MarkerOffset(p, s0)
		if off < MarkerLen {
			if record && off == 0 && len(wire) >= MarkerLen {
				marks = append(marks, MarkerAt{Pos: p, Marker: Marker{
					Reserved: binary.BigEndian.Uint16(wire),
					FPDUPTR:  binary.BigEndian.Uint16(wire[2:]),
				}})
			}
			skip := min(int(MarkerLen-off), len(wire))
			wire = wire[skip:]
			p += uint32(skip)
			continue
		}
		c := min(len(wire), int(MarkerSpacing-off))
		dst = append(dst, wire[:c]...)
		wire = wire[c:]
		p += uint32(c)
	}
	return dst, marks
}

// ParseFPDUWithMarkers decodes one FPDU from a marker-enabled stream: wire
// starts at the FPDU's first octet, at stream position pos, and s0 is the
// direction's first marker position (see Marker for the stream model). It
// returns
//
//   - n: wire octets the FPDU occupies, markers included (the next FPDU
//     starts at pos+n);
//   - crc: the CRC32c computed over the wire octets from wire[0] up to the
//     CRC field, markers included (RFC 5044 §4.4); compare with f.CRC when
//     CRCs are in use;
//   - outMarks: marks with every marker of this FPDU appended (leading,
//     inner, and between PAD and CRC), as found on the wire; check them with
//     ExpectedFPDUPTR;
//   - f: ULPDU_Length, ULPDU, PAD and the CRC field. ULPDU and Pad alias wire
//     when no marker falls between ULPDU_Length and the end of PAD, and
//     otherwise alias scratch, to which the marker-free ULPDU_Length, ULPDU
//     and PAD are appended (scratch[:0]); pass a scratch with enough capacity
//     (FPDULen(65535)) to stay allocation-free.
//
// Errors are those of ParseFPDU: Truncated naming the first field wire does
// not hold ("mpa.ulpdu_length", "mpa.ulpdu", "mpa.pad", "mpa.marker" for a
// marker between PAD and CRC, "mpa.crc"; Need is the wire octets known to be
// needed), Malformed "mpa.ulpdu_length" for a length below 14.
func ParseFPDUWithMarkers(wire []byte, pos, s0 uint32, scratch []byte, f *FPDU, marks []MarkerAt) (n int, crc uint32, outMarks []MarkerAt, err error) {
	lead := leadLen(pos, s0)
	hdrEnd := WireSpan(pos, s0, ULPDULenLen)
	if len(wire) < hdrEnd {
		return 0, 0, marks, truncated("mpa", "mpa.ulpdu_length", hdrEnd, len(wire))
	}
	var l uint16
	if hdrEnd-lead == ULPDULenLen {
		l = binary.BigEndian.Uint16(wire[lead:])
	} else {
		// Only on a misaligned pos: a marker splits ULPDU_Length.
		var h [ULPDULenLen + MarkerLen]byte
		hb, _ := stripMarkers(h[:0], nil, false, wire[lead:hdrEnd], pos+uint32(lead), s0)
		l = uint16(hb[0])<<8 | uint16(hb[1])
	}
	if l < minULPDU {
		return 0, 0, marks, malformed("mpa", "mpa.ulpdu_length", "shorter than a DDP header (14 octets)")
	}
	logical := ULPDULenLen + int(l)
	pad := PadLen(int(l))
	sp := fpduSpans(pos, s0, int(l))
	ulpduEnd, padEnd, covEnd := sp.ulpduEnd, sp.padEnd, sp.covEnd
	n = sp.n
	switch {
	case len(wire) < ulpduEnd:
		return 0, 0, marks, truncated("mpa", "mpa.ulpdu", n, len(wire))
	case len(wire) < padEnd:
		return 0, 0, marks, truncated("mpa", "mpa.pad", n, len(wire))
	case len(wire) < covEnd:
		return 0, 0, marks, truncated("mpa", "mpa.marker", n, len(wire))
	case len(wire) < n:
		return 0, 0, marks, truncated("mpa", "mpa.crc", n, len(wire))
	}

	f.ULPDULength = l
	if padEnd-lead == logical+pad {
		// No marker between ULPDU_Length and the end of PAD.
		f.ULPDU = wire[lead+ULPDULenLen : lead+logical : lead+logical]
		f.Pad = wire[lead+logical : padEnd : padEnd]
	} else {
		s, _ := stripMarkers(scratch[:0], nil, false, wire[lead:padEnd], pos+uint32(lead), s0)
		f.ULPDU = s[ULPDULenLen:logical:logical]
		f.Pad = s[logical : logical+pad : logical+pad]
	}
	if n-covEnd == CRCLen {
		f.CRC = WireCRC(wire[covEnd:])
	} else {
		// Only on a misaligned pos: a marker inside the CRC field.
		var c [CRCLen + MarkerLen]byte
		cb, _ := stripMarkers(c[:0], nil, false, wire[covEnd:n], pos+uint32(covEnd), s0)
		f.CRC = WireCRC(cb)
	}
	crc = CRC32c(wire[:covEnd])

	// Markers wholly inside the FPDU (a marker cut at pos by a misaligned
	// start is not reported).
	for d := uint64(NextMarkerPos(pos, s0) - pos); d+MarkerLen <= uint64(n); d += MarkerSpacing {
		m := wire[d:]
		marks = append(marks, MarkerAt{Pos: pos + uint32(d), Marker: Marker{
			Reserved: binary.BigEndian.Uint16(m),
			FPDUPTR:  binary.BigEndian.Uint16(m[2:]),
		}})
	}
	return n, crc, marks, nil
}
