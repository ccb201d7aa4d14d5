package decode

// Span reports where field f's octets are in p: offset and length counted
// from the first octet of the MPA frame, or of the marker-free FPDU (its
// ULPDU_Length field). It is what lights up a field in a hex view. Bit
// fields span the octet(s) that hold them; derived fields (Base none) and
// fields p does not carry have no span. Markers are not counted: a caller
// showing the octets as on the wire shifts offsets past each marker. It
// does not allocate.
func (f *Field) Span(p *PDU) (off, n int, ok bool) {
	if !condFuncs[f.cond](p) {
		return 0, 0, false
	}
	base := 0
	switch f.Base {
	case BaseMPAFrame, BaseFPDU:
	case BaseSegment:
		base = ULPDULenLen
	default:
		if f.Name == "data" { // the payload after the headers
			u := p.FPDU.ULPDU
			return ULPDULenLen + len(u) - len(p.Seg.Payload), len(p.Seg.Payload), len(p.Seg.Payload) > 0
		}
		return 0, 0, false
	}
	off, n = f.Offset, f.Size
	if off < 0 { // after the ULPDU: PAD, then the CRC
		off = ULPDULenLen + int(p.FPDU.ULPDULength)
		if f.Name == "mpa.crc" {
			off += len(p.FPDU.Pad)
		} else if n = len(p.FPDU.Pad); n == 0 {
			return 0, 0, false
		}
	}
	switch {
	case n == 0:
		n = 1 // a bit field: the octet holding it
	case n < 0: // runs to the end of what it names
		switch f.Name {
		case "mpa.private_data":
			n = len(p.MPA.PrivateData)
			off += MPAExtLen(p.MPA.Rev) // erdma's extension comes first
		case "rdmap.term.ddp_header":
			n = len(p.Seg.Terminate.TermDDPRaw)
		default:
			return 0, 0, false
		}
	}
	return base + off, n, n > 0
}
