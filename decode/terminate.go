package decode

import "encoding/binary"

// Terminate header constants (RFC 5040 §4.8 Figures 7–8).
const (
	// TermCtrlLen is the Terminate Control (19 bits) + Reserved (13 bits)
	// word.
	TermCtrlLen = 4
	// TermSegLenLen is the DDP Segment Length field, present iff D.
	TermSegLenLen = 2
	// TermM, TermD and TermR are the HdrCt bits in octet 2 of the control
	// word (IETF bits 16, 17, 18): DDP Segment Length valid, DDP header
	// included, RDMA header included.
	TermM = 0x80
	TermD = 0x40
	TermR = 0x20
	// TermReservedMask covers the 13 reserved bits of octets 2–3.
	TermReservedMask = 0x1FFF
)

// Linux siw writes the control word through little-endian C bit-fields
// (drivers/infiniband/sw/siw/iwarp.h, struct iwarp_terminate): octet 0 is
// EType<<4 | Layer, octet 1 the code, and M/D/R land in the low bits of
// octet 2, its 13 reserved bits in the rest of octets 2–3.
const (
	termSiwM = 0x01
	termSiwD = 0x02
	termSiwR = 0x04
)

// TermControl is one reading of the 4-octet Terminate Control word.
type TermControl struct {
	Layer, EType, Code uint8
	M, D, R            bool
	// Reserved is the 13-bit reserved field: 0 on send, ignored on receive.
	Reserved uint16
}

// ParseTermControl reads the control word as RFC 5040 §4.8 lays it out:
// Layer (bits 0–3), EType (4–7), Error Code (8–15), M, D, R (16–18),
// Reserved (19–31).
func ParseTermControl(raw [4]byte) TermControl {
	return TermControl{
		Layer:    raw[0] >> 4,
		EType:    raw[0] & 0x0F,
		Code:     raw[1],
		M:        raw[2]&TermM != 0,
		D:        raw[2]&TermD != 0,
		R:        raw[2]&TermR != 0,
		Reserved: binary.BigEndian.Uint16(raw[2:4]) & TermReservedMask,
	}
}

// ParseTermControlSiw reads the control word as Linux siw on a
// little-endian host writes it (reference §5.1): Layer and EType nibbles
// swapped, M/D/R in 0x01/0x02/0x04 of octet 2, Reserved in the other 13
// bits. siw always sends Reserved 0.
func ParseTermControlSiw(raw [4]byte) TermControl {
	return TermControl{
		Layer:    raw[0] & 0x0F,
		EType:    raw[0] >> 4,
		Code:     raw[1],
		M:        raw[2]&termSiwM != 0,
		D:        raw[2]&termSiwD != 0,
		R:        raw[2]&termSiwR != 0,
		Reserved: uint16(raw[2])>>3 | uint16(raw[3])<<5,
	}
}

// Append writes the control word in the RFC 5040 layout.
func (c TermControl) Append(b []byte) []byte {
	o2 := uint8(c.Reserved>>8) & 0x1F
	if c.M {
		o2 |= TermM
	}
	if c.D {
		o2 |= TermD
	}
	if c.R {
		o2 |= TermR
	}
	return append(b, c.Layer<<4|c.EType&0x0F, c.Code, o2, uint8(c.Reserved))
}

// Cause names the reading's Layer / EType / Code.
func (c TermControl) Cause() TermCause { return LookupTermCause(c.Layer, c.EType, c.Code) }

// Terminate is the Terminate header that follows the untagged DDP header
// of a Terminate message (RFC 5040 §4.8 Figure 7, App. A.6).
//
// Presence of the optional parts. RFC 5040 §4.8 says of the DDP Segment
// Length "It MUST be valid if the M bit is set. It MUST be present when the
// D bit is set", Figure 10 has a single column "Terminate Includes DDP
// Header and DDP Segment Length", and Figures 7 and 16 mark the field
// "(if any)". So the field comes and goes with D: present iff D, valid iff
// M. M without D leaves it absent. The copied DDP header is 14 or 18
// octets as its own T bit says (RFC 5040 §4.8: "112 bits for Tagged
// Messages and 144 bits for Untagged Messages"). The 28-octet copied Read
// Request header follows when R is set.
//
// What the DDP Segment Length holds is "the length handed up by the DDP
// layer when the error was detected" (§4.8); siw writes the offending
// segment's payload length (ULPDU_Length minus its DDP/RDMAP headers).
type Terminate struct {
	// Layer, EType and Code name the cause (RFC 5040 §4.8 Figure 9). For a
	// siw-encoded Terminate they hold the values siw meant.
	Layer, EType, Code uint8
	// M, D, R are the HdrCt bits: DDP Segment Length valid, DDP header
	// included, RDMA (Read Request) header included.
	M, D, R bool
	// Reserved is the 13-bit reserved field of the reading chosen.
	Reserved uint16
	// Raw is the control word as on the wire.
	Raw [4]byte
	// SiwEncoding is set when the control word was decoded from Linux
	// siw's swapped encoding (see ParseTerminate).
	SiwEncoding bool

	// HasSegLen reports the DDP Segment Length field (present iff D).
	HasSegLen        bool
	DDPSegmentLength uint16
	// HasDDP reports the copied DDP header of the offending segment,
	// decoded into TermDDP; TermDDPRaw aliases its octets in the input.
	HasDDP     bool
	TermDDP    DDPHeader
	TermDDPRaw []byte
	// HasRDMA reports the copied Read Request header, decoded into
	// TermRDMA; TermRDMARaw aliases its octets in the input.
	HasRDMA     bool
	TermRDMA    ReadRequest
	TermRDMARaw []byte
}

// Control returns the control word values in use (the intended ones for a
// siw-encoded Terminate).
func (t *Terminate) Control() TermControl {
	return TermControl{Layer: t.Layer, EType: t.EType, Code: t.Code, M: t.M, D: t.D, R: t.R, Reserved: t.Reserved}
}

// Cause names the Terminate's Layer / EType / Code.
func (t *Terminate) Cause() TermCause { return LookupTermCause(t.Layer, t.EType, t.Code) }

// Len is the encoded size of the header as the Has* fields describe it.
func (t *Terminate) Len() int {
	n := TermCtrlLen
	if t.HasSegLen {
		n += TermSegLenLen
	}
	if t.HasDDP {
		n += t.TermDDP.Len()
	}
	if t.HasRDMA {
		n += ReadReqHdrLen
	}
	return n
}

// parseTermBody decodes the parts after the control word as the reading c
// says, into t (which holds only Raw on entry), and returns the octets of
// b consumed, control word included.
func parseTermBody(b []byte, c TermControl, t *Terminate) (int, error) {
	t.Layer, t.EType, t.Code = c.Layer, c.EType, c.Code
	t.M, t.D, t.R, t.Reserved = c.M, c.D, c.R, c.Reserved
	n := TermCtrlLen
	if c.D {
		if len(b) < n+TermSegLenLen {
			return 0, truncated("rdmap", "rdmap.term.ddp_seg_len", n+TermSegLenLen, len(b))
		}
		t.HasSegLen = true
		t.DDPSegmentLength = binary.BigEndian.Uint16(b[n:])
		n += TermSegLenLen
		if len(b) < n+1 {
			return 0, truncated("rdmap", "rdmap.term.ddp_header", n+DDPTaggedHdrLen, len(b))
		}
		// The copy's length comes from its own T bit, never from EType
		// (Wireshark's guess) or from the opcode.
		hl := ddpHdrLenFor(b[n])
		if len(b) < n+hl {
			return 0, truncated("rdmap", "rdmap.term.ddp_header", n+hl, len(b))
		}
		_, _ = ParseDDP(b[n:n+hl], &t.TermDDP) // cannot fail: hl octets are there
		t.HasDDP = true
		t.TermDDPRaw = b[n : n+hl : n+hl]
		n += hl
	}
	if c.R {
		// siw sets R on every RDMAP Remote Protection error but attaches
		// only the DDP header when the offending message was not a Read
		// Request (reference §5.2; RFC 5040 Figure 10 also asks for "the
		// RDMA header" of Send with Invalidate, which has none). Accept R
		// with nothing after a copied non-Read-Request DDP header.
		if len(b) == n && t.HasDDP && ParseRDMAPControl(t.TermDDP.RsvdULP).Opcode != OpReadRequest {
			return n, nil
		}
		if len(b) < n+ReadReqHdrLen {
			return 0, truncated("rdmap", "rdmap.term.rdma_header", n+ReadReqHdrLen, len(b))
		}
		readReqFrom(b[n:], &t.TermRDMA)
		t.HasRDMA = true
		t.TermRDMARaw = b[n : n+ReadReqHdrLen : n+ReadReqHdrLen]
		n += ReadReqHdrLen
	}
	return n, nil
}

// termScore ranks a successful reading: one that accounts for every octet
// of the Terminate's ULPDU beats one that leaves octets over, then a
// defined cause beats an undefined one, then zero reserved bits win.
func termScore(c TermControl, n, total int) int {
	s := 0
	if n == total {
		s += 4
	}
	if LookupTermCause(c.Layer, c.EType, c.Code).Known {
		s += 2
	}
	if c.Reserved == 0 {
		s++
	}
	return s
}

// ParseTerminate decodes the Terminate header at b[0], where b is the rest
// of the Terminate's ULPDU after its 18-octet DDP header (RFC 5040 §4.8),
// and returns the octets consumed. Octets after the header are left to the
// caller (ParseSegment puts them in Payload).
//
// The control word is read both as RFC 5040 lays it out and as Linux siw
// writes it (ParseTermControlSiw). The siw reading is a candidate only when
// siw could have written the octets (its 13 reserved bits zero, i.e.
// octet 2 & 0xF8 == 0 and octet 3 == 0) and it differs from the RFC
// reading; it is taken, with SiwEncoding set, only when it scores higher:
// first, the headers it implies (D: segment length + DDP copy sized by its
// T bit; R: Read Request copy) end exactly at the end of b where the RFC
// reading's do not; then, it names a defined cause where the RFC reading
// does not; then, its reserved bits are zero where the RFC reading's are
// not (M/D/R in octet 2's low bits with 0xE0 clear). Ties keep the RFC
// reading. So RFC-conformant Terminates with any HdrCt bit set (octet 2 &
// 0xE0 != 0) are never taken for siw's, and a control word without flags
// is taken for siw's only when the swap turns an undefined cause into a
// defined one (e.g. 02 02 00 00: RDMAP/Remote Operation/0x02, undefined,
// vs siw's LLP/MPA/CRC error). Without flags and with both readings
// defined (siw's 20 06 00 00, Unexpected OpCode, reads as RFC 6581
// Insufficient IRD) a stateless decoder cannot tell; it keeps the RFC
// reading and ParseTermControlSiw(t.Raw) gives the other one.
func ParseTerminate(b []byte, t *Terminate) (int, error) {
	if len(b) < TermCtrlLen {
		return 0, truncated("rdmap", "rdmap.term.raw", TermCtrlLen, len(b))
	}
	raw := [4]byte(b[:4])
	rfc := ParseTermControl(raw)
	*t = Terminate{Raw: raw}
	n, err := parseTermBody(b, rfc, t)

	siw := ParseTermControlSiw(raw)
	if siw.Reserved != 0 || siw == rfc {
		return n, err
	}
	var ts Terminate
	ts.Raw = raw
	ns, errs := parseTermBody(b, siw, &ts)
	if errs != nil {
		return n, err
	}
	if err == nil && termScore(siw, ns, len(b)) <= termScore(rfc, n, len(b)) {
		return n, nil
	}
	ts.SiwEncoding = true
	*t = ts
	return ns, nil
}

// Append encodes the header in the RFC 5040 layout (never siw's): the
// control word from Layer, EType, Code, M, D, R and Reserved, then the DDP
// Segment Length if HasSegLen, TermDDP if HasDDP and TermRDMA if HasRDMA.
// The Raw slices are not used.
func (t *Terminate) Append(b []byte) []byte {
	b = t.Control().Append(b)
	if t.HasSegLen {
		b = binary.BigEndian.AppendUint16(b, t.DDPSegmentLength)
	}
	if t.HasDDP {
		b = t.TermDDP.Append(b)
	}
	if t.HasRDMA {
		b = t.TermRDMA.Append(b)
	}
	return b
}
