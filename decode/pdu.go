package decode

// CRCStatus is the verdict on an FPDU's CRC field (RFC 5044 §4.4, §8).
type CRCStatus uint8

const (
	// CRCUnknown: whether CRCs are in use is not known (no MPA handshake
	// seen and nothing inferred yet).
	CRCUnknown CRCStatus = iota
	// CRCNotUsed: neither MPA frame set C, so the field may hold anything
	// and MUST NOT be checked (RFC 5044 §7.1.1).
	CRCNotUsed
	// CRCGood: CRC in use and the field matches.
	CRCGood
	// CRCBad: CRC in use and the field does not match; the FPDU is invalid
	// (RFC 5044 §8, MPA error 0x2/0x0/0x02).
	CRCBad
)

func (s CRCStatus) String() string {
	switch s {
	case CRCNotUsed:
		return "unchecked"
	case CRCGood:
		return "good"
	case CRCBad:
		return "bad"
	}
	return "unknown"
}

// CRCUse is what a receiver knows about CRCs on a connection: the MPA
// handshake's C flags (RFC 5044 §7.1.1: CRCs are in use if either the
// Request or the Reply set C), or an inference where no handshake was seen.
type CRCUse uint8

const (
	// CRCUseUnknown: no handshake seen and nothing inferred; the CRC field
	// is not judged.
	CRCUseUnknown CRCUse = iota
	// CRCUseOff: neither MPA frame set C; the field MUST NOT be checked.
	CRCUseOff
	// CRCUseOn: CRCs are in use; the field is checked.
	CRCUseOn
)

// Verdict judges an FPDU's CRC field against the CRC32c computed over the
// FPDU (RFC 5044 §4.4, §8).
func (u CRCUse) Verdict(computed, field uint32) CRCStatus {
	switch {
	case u == CRCUseUnknown:
		return CRCUnknown
	case u == CRCUseOff:
		return CRCNotUsed
	case computed == field:
		return CRCGood
	}
	return CRCBad
}

// PDU is one iWARP protocol data unit as the analyzer shows it: either an
// MPA Request/Reply frame, or an FPDU with the DDP segment it carries decoded
// through RDMAP. It is the value the field table reads.
type PDU struct {
	// IsMPAFrame selects MPA (a Request or Reply frame) over FPDU.
	IsMPAFrame bool
	MPA        MPAFrame

	FPDU        FPDU
	Markers     []MarkerAt // markers found inside the FPDU, if any
	CRCStatus   CRCStatus
	ComputedCRC uint32

	// Seg is the DDP segment decoded through RDMAP; SegErr says why it
	// could not be (the FPDU fields stay valid).
	Seg    Segment
	SegErr error
}

// PayloadLen is the "len" of an FPDU in every face (iwdump's and iwtui's
// summaries, the ddp.payload_length field): the ULP payload octets after
// the DDP and RDMAP headers, as tcpdump's "length" and tshark's "Len="
// count a segment's payload, not its headers. ok is false when there is
// none to count: an MPA frame, or a segment whose headers do not decode.
func (p *PDU) PayloadLen() (n int, ok bool) {
	if p.IsMPAFrame || p.SegErr != nil || len(p.FPDU.ULPDU) == 0 {
		return 0, false
	}
	return len(p.Seg.Payload), true
}

// DecodeFPDU fills p from a marker-free FPDU at the start of b and reports
// the octets it used. crc says whether CRCs are in use on the connection.
// The DDP/RDMAP decode error, if any, is kept in p.SegErr and is not
// returned: the MPA layer was fine.
func DecodeFPDU(b []byte, crc CRCUse, p *PDU) (int, error) {
	// Reset only what this path does not overwrite: zeroing the whole PDU
	// costs as much as decoding a small FPDU. p.MPA is stale but unused.
	p.IsMPAFrame, p.Markers, p.SegErr = false, p.Markers[:0], nil
	n, err := ParseFPDU(b, &p.FPDU)
	if err != nil {
		return 0, err
	}
	p.ComputedCRC = p.FPDU.ComputedCRC()
	p.CRCStatus = crc.Verdict(p.ComputedCRC, p.FPDU.CRC)
	p.SegErr = ParseSegment(p.FPDU.ULPDU, &p.Seg)
	return n, nil
}
