package decode

import "encoding/binary"

// DDP header constants (RFC 5041 §4.1–§4.3).
const (
	// DDPTaggedHdrLen is the size of a tagged DDP header: control, RsvdULP,
	// STag, TO (RFC 5041 §4.2).
	DDPTaggedHdrLen = 14
	// DDPUntaggedHdrLen is the size of an untagged DDP header: control,
	// RsvdULP (40 bits), QN, MSN, MO (RFC 5041 §4.3).
	DDPUntaggedHdrLen = 18

	// DDPFlagT is the Tagged flag of the DDP control octet (RFC 5041 §4.1).
	DDPFlagT = 0x80
	// DDPFlagL is the Last flag of the DDP control octet (RFC 5041 §4.1).
	DDPFlagL = 0x40
	// DDPRsvdMask covers the 4 reserved bits of the DDP control octet,
	// 0 on send and not checked on receive (RFC 5041 §4.1).
	DDPRsvdMask = 0x3C
	// DDPDVMask covers the 2-bit DDP Version (RFC 5041 §4.1).
	DDPDVMask = 0x03
	// DDPVersion is the DDP Version of RFC 5041. DV 0 is the RDMA
	// Consortium (pre-IETF) DDP.
	DDPVersion = 1
)

// DDPHeader is a tagged or untagged DDP header (RFC 5041 §4). Octet 1, the
// first octet of RsvdULP, belongs to the ULP; for RDMAP it is the RDMAP
// control octet (RFC 5040 §4.1).
type DDPHeader struct {
	// Tagged is the T flag: tagged buffer model, 14-octet header.
	Tagged bool
	// Last is the L flag: last segment of a DDP message.
	Last bool
	// Rsvd is the 4-bit reserved field of the control octet
	// ((ctrl & 0x3C) >> 2).
	Rsvd uint8
	// DV is the DDP Version: 1 for RFC 5041, 0 for pre-IETF DDP.
	DV uint8
	// RsvdULP is octet 1, RsvdULP[0:7] = the RDMAP control octet.
	RsvdULP uint8

	// STag is the Data Sink Steering Tag (tagged only, octets 2–5).
	STag uint32
	// TO is the Tagged Offset (tagged only, octets 6–13).
	TO uint64

	// RsvdULP2 is RsvdULP[8:39] (untagged only, octets 2–5); RDMAP puts
	// the Invalidate STag there (RFC 5040 §4.1).
	RsvdULP2 uint32
	// QN is the Queue Number (untagged only, octets 6–9).
	QN uint32
	// MSN is the Message Sequence Number (untagged only, octets 10–13).
	MSN uint32
	// MO is the Message Offset (untagged only, octets 14–17).
	MO uint32
}

// ddpHdrLenFor gives the DDP header length implied by a DDP control octet
// (RFC 5041 §4.1: the T flag selects the header format).
func ddpHdrLenFor(ctrl uint8) int {
	if ctrl&DDPFlagT != 0 {
		return DDPTaggedHdrLen
	}
	return DDPUntaggedHdrLen
}

// ddpTruncField names the first DDP header field that a header of have
// octets does not hold completely.
func ddpTruncField(tagged bool, have int) string {
	switch {
	case have < 1:
		return "ddp.tagged" // the control octet
	case have < 2:
		return "ddp.rsvdulp" // RsvdULP[0:7], the RDMAP control octet
	case tagged && have < 6:
		return "ddp.stag"
	case tagged:
		return "ddp.to"
	case have < 6:
		return "ddp.rsvdulp" // RsvdULP[8:39]
	case have < 10:
		return "ddp.qn"
	case have < 14:
		return "ddp.msn"
	}
	return "ddp.mo"
}

// ParseDDP decodes the DDP header at b[0] into h and returns its length,
// 14 (tagged) or 18 (untagged) as the T flag says (RFC 5041 §4.1–§4.3).
// It does not judge field values: DV 0 (pre-IETF), non-zero Rsvd and
// the like are decoded as they are, for the tracker to report.
func ParseDDP(b []byte, h *DDPHeader) (n int, err error) {
	if len(b) < 1 {
		return 0, truncated("ddp", "ddp.tagged", DDPTaggedHdrLen, len(b))
	}
	ctrl := b[0]
	n = ddpHdrLenFor(ctrl)
	tagged := n == DDPTaggedHdrLen
	if len(b) < n {
		return 0, truncated("ddp", ddpTruncField(tagged, len(b)), n, len(b))
	}
	*h = DDPHeader{
		Tagged:  tagged,
		Last:    ctrl&DDPFlagL != 0,
		Rsvd:    (ctrl & DDPRsvdMask) >> 2,
		DV:      ctrl & DDPDVMask,
		RsvdULP: b[1],
	}
	if tagged {
		h.STag = binary.BigEndian.Uint32(b[2:6])
		h.TO = binary.BigEndian.Uint64(b[6:14])
	} else {
		h.RsvdULP2 = binary.BigEndian.Uint32(b[2:6])
		h.QN = binary.BigEndian.Uint32(b[6:10])
		h.MSN = binary.BigEndian.Uint32(b[10:14])
		h.MO = binary.BigEndian.Uint32(b[14:18])
	}
	return n, nil
}

// Len is the header length on the wire: 14 tagged, 18 untagged.
func (h *DDPHeader) Len() int {
	if h.Tagged {
		return DDPTaggedHdrLen
	}
	return DDPUntaggedHdrLen
}

// Control is the DDP control octet built from T, L, Rsvd and DV
// (RFC 5041 §4.1).
func (h *DDPHeader) Control() uint8 {
	c := (h.Rsvd<<2)&DDPRsvdMask | h.DV&DDPDVMask
	if h.Tagged {
		c |= DDPFlagT
	}
	if h.Last {
		c |= DDPFlagL
	}
	return c
}

// Append encodes the header: the tagged fields when Tagged, else the
// untagged ones; the fields of the other format are not written.
func (h *DDPHeader) Append(b []byte) []byte {
	b = append(b, h.Control(), h.RsvdULP)
	if h.Tagged {
		b = binary.BigEndian.AppendUint32(b, h.STag)
		return binary.BigEndian.AppendUint64(b, h.TO)
	}
	b = binary.BigEndian.AppendUint32(b, h.RsvdULP2)
	b = binary.BigEndian.AppendUint32(b, h.QN)
	b = binary.BigEndian.AppendUint32(b, h.MSN)
	return binary.BigEndian.AppendUint32(b, h.MO)
}

// PreIETF reports DDP Version 0, the RDMA Consortium DDP that an RFC 5044
// App. C "permissive" peer may fall back to (RFC 5041 §4.1 requires 1).
func (h *DDPHeader) PreIETF() bool { return h.DV == 0 }
