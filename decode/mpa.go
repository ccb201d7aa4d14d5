package decode

import (
	"bytes"
	"encoding/binary"
)

// MPA Request/Reply frame constants (RFC 5044 §7.1.1, RFC 6581 §6, §9).
const (
	// MPAKeyReq and MPAKeyRep are the 16-octet keys that start an MPA
	// Request and an MPA Reply frame. They differ only in the tenth octet
	// (index 9: 'q' = 0x71 vs 'p' = 0x70).
	MPAKeyReq = "MPA ID Req Frame"
	MPAKeyRep = "MPA ID Rep Frame"
	MPAKeyLen = 16
	// MPAFrameHdrLen is the fixed part of a Request/Reply frame: key,
	// flags, Rev, PD_Length.
	MPAFrameHdrLen = 20
	// MPAMaxPDLength is the largest Private Data an MPA frame may carry
	// (RFC 5044 §7.1.1); the RFC 6581 block counts in it.
	MPAMaxPDLength = 512

	// Flags octet (octet 16).
	MPAFlagM = 0x80 // M: the frame's sender wants markers in FPDUs sent to it
	MPAFlagC = 0x40 // C: CRCs wanted (OR-ed over both frames)
	MPAFlagR = 0x20 // R: in a Reply, the connection is rejected
	MPAFlagS = 0x10 // S: Private Data starts with the RFC 6581 block (RFC 6581 §6)
	// MPAFlagGSO is a Res bit used by Linux siw (MPA_RR_FLAG_GSO_EXP, with
	// Rev >= 2): the sender may send FPDUs larger than one TCP segment.
	// Not an RFC flag; it stays in MPAFrame.Res.
	MPAFlagGSO = 0x08
	// mpaResMask is the Res field of RFC 6581 §6 (one bit narrower than
	// RFC 5044's, which included S).
	mpaResMask = 0x0F

	// MPAv2NoNegotiation in IRD or ORD means "no automatic IRD/ORD
	// negotiation, the ULP handles it" (RFC 6581 §9.1).
	MPAv2NoNegotiation = 0x3FFF

	// MPAv2Len is the size of the RFC 6581 enhanced connection
	// establishment block at the start of the Private Data.
	MPAv2Len = 4
	// mpaRev1IRDORDLen is the size of the Rev 1 IRD/ORD variant block.
	mpaRev1IRDORDLen = 8

	// MPARevERDMA is Alibaba erdma's revision (MPA_REVISION_EXT_1 in
	// Linux drivers/infiniband/hw/erdma/erdma_cm.h): not an RFC value. Its
	// Request and Reply carry the 8-octet MPAERDMAExt between PD_Length and
	// the Private Data; PD_Length does not count it.
	MPARevERDMA = 129
	// MPAERDMAExtLen is the size of erdma's extension (struct
	// erdma_mpa_ext: __be32 cookie, __be32 bits).
	MPAERDMAExtLen = 8
	// MPAERDMACCMask is the congestion-control choice in the extension's
	// bits word (MPA_EXT_FLAG_CC, cpu_to_be32(0x0000000f): bits 3:0 of
	// the big-endian word).
	MPAERDMACCMask = 0x0000000F

	mpaV2IRDORDMask = 0x3FFF
	mpaV2A          = 0x8000 // IRD word
	mpaV2B          = 0x4000 // IRD word
	mpaV2C          = 0x8000 // ORD word
	mpaV2D          = 0x4000 // ORD word
)

// mpaKeyCommon is the first 9 octets both keys share ("MPA ID Re"); index 9
// tells them apart and indexes 10..15 are shared again.
var mpaKeyCommon = []byte(MPAKeyReq[:9])

// MPAFrame is an MPA Request or Reply frame (RFC 5044 §7.1.1, enhanced by
// RFC 6581 §6):
//
//	Key(16) | M C R S Res(4) | Rev(8) | PD_Length(16) | Private Data
//
// The frame is sent as plain TCP stream data before Full Operation Phase: no
// ULPDU_Length, no markers, no CRC. Alibaba erdma's Rev 129 frame puts an
// 8-octet extension between PD_Length and the Private Data (see ERDMA).
//
// PrivateData always holds the whole Private Data as on the wire, the RFC 6581
// block or the Rev 1 IRD/ORD block included. When HasV2 is set, Append writes
// the first 4 octets from V2 instead of PrivateData[0:4]; when Rev1IRDORD is
// set, it writes the first 8 octets from Rev1IRD and Rev1ORD. ULPPrivateData
// is the rest. So to build an enhanced frame that carries ULP data u, set
// HasV2, V2 and PrivateData = 4 placeholder octets followed by u (for
// example append(make([]byte, MPAv2Len), u...)).
type MPAFrame struct {
	Reply    bool  // key is "MPA ID Rep Frame" (else "MPA ID Req Frame")
	Flags    uint8 // raw flags octet, as decoded; Append recomputes it
	Markers  bool  // M
	CRC      bool  // C
	Reject   bool  // R
	Enhanced bool  // S (0x10), RFC 6581
	Res      uint8 // reserved bits, Flags & 0x0F (siw's MPAFlagGSO lives here)
	Rev      uint8
	PDLength uint16
	// PrivateData is all PD_Length octets (including a v2 or Rev 1
	// IRD/ORD block); it aliases the input.
	PrivateData []byte
	// V2 is the RFC 6581 block, valid when HasV2.
	V2 MPAv2
	// HasV2 is Enhanced && Rev >= 2 && PDLength >= 4 (RFC 6581 §6). S with
	// Rev < 2 or PD_Length < 4 is decoded without error but HasV2 stays
	// false: Enhanced and Rev still show it.
	HasV2 bool
	// Rev1IRDORD marks the Rev 1 IRD/ORD variant seen with Windows SMB
	// Direct and Chelsio T4 (MS-SMBD App. A; not an RFC format): Rev 1, no
	// S, Private Data starting with IRD (u32, network order) and ORD (u32).
	// It is set only when plausible: Rev == 1, !Enhanced, PDLength >= 8 and
	// both values <= 0xFFFF. Other Rev 1 ULP private data can look like it.
	Rev1IRDORD       bool
	Rev1IRD, Rev1ORD uint32
	// PreIETF is Rev == 0: the RDMA Consortium MPA (RFC 5044 App. C).
	PreIETF bool
	// ERDMA is Rev == MPARevERDMA: Alibaba erdma's frame, whose 8-octet
	// extension ERDMAExt sits between PD_Length and the Private Data
	// (PrivateData does not include it).
	ERDMA    bool
	ERDMAExt MPAERDMAExt
}

// MPAERDMAExt is Alibaba erdma's MPA extension (struct erdma_mpa_ext in
// Linux erdma_cm.h), sent in network order right after PD_Length of a
// Rev 129 Request or Reply:
//
//	Cookie(32) | Bits(32): CC in bits 3:0
//
// The driver fills Cookie from the QP's iWARP cookie and CC from the QP's
// congestion-control algorithm; a peer whose CC differs falls back to a
// compromise algorithm (erdma_accept, erdma_proc_mpareply).
type MPAERDMAExt struct {
	Cookie uint32
	Bits   uint32
}

// CC is the congestion-control choice (MPA_EXT_FLAG_CC).
func (e MPAERDMAExt) CC() uint8 { return uint8(e.Bits & MPAERDMACCMask) }

// MPAExtLen is the number of octets a frame of revision rev carries
// between PD_Length and the Private Data that PD_Length does not count:
// MPAERDMAExtLen for erdma's Rev 129, else 0.
func MPAExtLen(rev uint8) int {
	if rev == MPARevERDMA {
		return MPAERDMAExtLen
	}
	return 0
}

// MPAFrameLen returns the length of the MPA Request/Reply frame whose fixed
// part hdr holds (at least MPAFrameHdrLen octets): 20 + erdma's extension
// (Rev 129) + PD_Length. It does not check the key or PD_Length.
func MPAFrameLen(hdr []byte) int {
	return MPAFrameHdrLen + MPAExtLen(hdr[17]) + int(binary.BigEndian.Uint16(hdr[18:]))
}

// MPAv2 is the RFC 6581 enhanced connection establishment block, sent in
// network order at the start of the Private Data (RFC 6581 §9):
//
//	A | B | IRD(14) | C | D | ORD(14)
type MPAv2 struct {
	PeerToPeer      bool   // A (0x8000 of the IRD word): peer-to-peer model, RTR used
	ZeroLenSendRTR  bool   // B (0x4000 of the IRD word): zero-length Send (FULPDU) RTR
	IRD             uint16 // Inbound RDMA Read Queue Depth (0x3FFF mask)
	ZeroLenWriteRTR bool   // C (0x8000 of the ORD word): zero-length RDMA Write RTR
	ZeroLenReadRTR  bool   // D (0x4000 of the ORD word): zero-length RDMA Read RTR
	ORD             uint16 // Outbound RDMA Read Queue Depth (0x3FFF mask)
}

// IsMPAKey reports whether b starts with one of the two MPA keys
// (RFC 5044 §7.1.1), and whether it is the Reply key.
func IsMPAKey(b []byte) (reply bool, ok bool) {
	if len(b) < MPAKeyLen {
		return false, false
	}
	switch string(b[:MPAKeyLen]) { // no allocation: compiler-optimised comparison
	case MPAKeyReq:
		return false, true
	case MPAKeyRep:
		return true, true
	}
	return false, false
}

// FindMPAKey returns the index of the first complete MPA key in b, or -1.
// The MPA exchange need not start at TCP offset 0: a ULP may run its own
// streaming-mode exchange first (RFC 5044 §7.1, §7.1.3), so a framer scans.
// A key cut by the end of b is not found; a scanner keeps the last
// MPAKeyLen-1 octets.
func FindMPAKey(b []byte) int {
	for i := 0; i+MPAKeyLen <= len(b); {
		j := bytes.Index(b[i:], mpaKeyCommon)
		if j < 0 {
			return -1
		}
		i += j
		if _, ok := IsMPAKey(b[i:]); ok {
			return i
		}
		i++
	}
	return -1
}

// keyPrefixOK reports whether b (shorter than a key) could still become a
// key: every octet present matches one of the two keys.
func keyPrefixOK(b []byte) bool {
	return string(b) == MPAKeyReq[:len(b)] || string(b) == MPAKeyRep[:len(b)]
}

// ParseMPAFrame decodes the MPA Request or Reply frame at b[0] into f and
// returns its length, 20 + PD_Length.
//
// Errors: Malformed "mpa.key" when b does not start with (a prefix of) one of
// the keys; Malformed "mpa.pd_length" when PD_Length > 512 (RFC 5044 §7.1.1:
// the receiver closes the connection); Truncated naming the first field b
// does not hold ("mpa.key", "mpa.flags", "mpa.rev", "mpa.pd_length",
// "mpa.private_data"; Need is 20 for the fixed part, 20 + PD_Length after).
// Rev is not checked and S is not cross-checked: Rev 0 sets PreIETF, S with
// Rev < 2 or a short Private Data leaves HasV2 false. Those are findings for
// the tracker, not decode errors.
func ParseMPAFrame(b []byte, f *MPAFrame) (n int, err error) {
	if len(b) < MPAFrameHdrLen {
		k := min(len(b), MPAKeyLen)
		if !keyPrefixOK(b[:k]) {
			return 0, malformed("mpa", "mpa.key", "not an MPA Request or Reply key")
		}
		field := "mpa.pd_length"
		switch {
		case len(b) < MPAKeyLen:
			field = "mpa.key"
		case len(b) < 17:
			field = "mpa.flags"
		case len(b) < 18:
			field = "mpa.rev"
		}
		return 0, truncated("mpa", field, MPAFrameHdrLen, len(b))
	}
	reply, ok := IsMPAKey(b)
	if !ok {
		return 0, malformed("mpa", "mpa.key", "not an MPA Request or Reply key")
	}
	pdl := binary.BigEndian.Uint16(b[18:])
	if pdl > MPAMaxPDLength {
		return 0, malformed("mpa", "mpa.pd_length", "Private Data longer than 512 octets")
	}
	flags, rev := b[16], b[17]
	ext := MPAExtLen(rev)
	n = MPAFrameHdrLen + ext + int(pdl)
	if len(b) < MPAFrameHdrLen+ext {
		field := "mpa.erdma.bits"
		if len(b) < MPAFrameHdrLen+4 {
			field = "mpa.erdma.cookie"
		}
		return 0, truncated("mpa", field, n, len(b))
	}
	if len(b) < n {
		return 0, truncated("mpa", "mpa.private_data", n, len(b))
	}
	pd := b[MPAFrameHdrLen+ext : n : n]
	*f = MPAFrame{
		Reply:       reply,
		Flags:       flags,
		Markers:     flags&MPAFlagM != 0,
		CRC:         flags&MPAFlagC != 0,
		Reject:      flags&MPAFlagR != 0,
		Enhanced:    flags&MPAFlagS != 0,
		Res:         flags & mpaResMask,
		Rev:         rev,
		PDLength:    pdl,
		PrivateData: pd,
		PreIETF:     rev == 0,
	}
	if ext > 0 {
		f.ERDMA = true
		f.ERDMAExt = MPAERDMAExt{Cookie: binary.BigEndian.Uint32(b[20:]), Bits: binary.BigEndian.Uint32(b[24:])}
	}
	// erdma's Rev 129 carries no RFC 6581 block even with S set: its
	// Private Data is the ULP's (erdma_cm.c never sets S).
	if f.Enhanced && rev >= 2 && !f.ERDMA && pdl >= MPAv2Len {
		f.V2, _ = ParseMPAv2(pd) // cannot fail: len(pd) >= 4
		f.HasV2 = true
	}
	if rev == 1 && !f.Enhanced && pdl >= mpaRev1IRDORDLen {
		ird, ord := binary.BigEndian.Uint32(pd), binary.BigEndian.Uint32(pd[4:])
		if ird <= 0xFFFF && ord <= 0xFFFF {
			f.Rev1IRDORD, f.Rev1IRD, f.Rev1ORD = true, ird, ord
		}
	}
	return n, nil
}

// ULPPrivateData returns the ULP's part of the Private Data: what follows the
// RFC 6581 block when HasV2, what follows the Rev 1 IRD/ORD block when
// Rev1IRDORD, else all of PrivateData.
func (f *MPAFrame) ULPPrivateData() []byte {
	skip := 0
	switch {
	case f.HasV2:
		skip = MPAv2Len
	case f.Rev1IRDORD:
		skip = mpaRev1IRDORDLen
	}
	if len(f.PrivateData) < skip {
		return nil
	}
	return f.PrivateData[skip:]
}

// Append appends the frame: the key chosen by Reply; the flags octet
// recomputed from Markers, CRC, Reject, Enhanced and Res (the Flags field is
// ignored); Rev; PD_Length; and the Private Data. With HasV2 the Private Data
// is V2's block followed by ULPPrivateData (PD_Length = 4 + its length); with
// Rev1IRDORD it is Rev1IRD, Rev1ORD (u32 each, network order) followed by
// ULPPrivateData; otherwise PrivateData as is. With ERDMA (give Rev 129
// too) erdma's extension goes between PD_Length and the Private Data and
// PD_Length does not count it. PD_Length is written as the
// length actually appended, so a frame above 512 octets can be generated on
// purpose; the caller keeps it below 65536.
func (f *MPAFrame) Append(b []byte) []byte {
	if f.Reply {
		b = append(b, MPAKeyRep...)
	} else {
		b = append(b, MPAKeyReq...)
	}
	flags := f.Res & mpaResMask
	if f.Markers {
		flags |= MPAFlagM
	}
	if f.CRC {
		flags |= MPAFlagC
	}
	if f.Reject {
		flags |= MPAFlagR
	}
	if f.Enhanced {
		flags |= MPAFlagS
	}
	ulp := f.ULPPrivateData()
	pdl := len(ulp)
	switch {
	case f.HasV2:
		pdl += MPAv2Len
	case f.Rev1IRDORD:
		pdl += mpaRev1IRDORDLen
	}
	b = append(b, flags, f.Rev, byte(pdl>>8), byte(pdl))
	if f.ERDMA {
		b = binary.BigEndian.AppendUint32(b, f.ERDMAExt.Cookie)
		b = binary.BigEndian.AppendUint32(b, f.ERDMAExt.Bits)
	}
	switch {
	case f.HasV2:
		b = f.V2.Append(b)
	case f.Rev1IRDORD:
		b = binary.BigEndian.AppendUint32(b, f.Rev1IRD)
		b = binary.BigEndian.AppendUint32(b, f.Rev1ORD)
	}
	return append(b, ulp...)
}

// ParseMPAv2 decodes the RFC 6581 §9 block at the start of pd (the Private
// Data of a frame with S set and Rev >= 2). Truncated "mpa.v2.ird" or
// "mpa.v2.ord" when pd is shorter than 4 octets.
func ParseMPAv2(pd []byte) (MPAv2, error) {
	if len(pd) < MPAv2Len {
		field := "mpa.v2.ord"
		if len(pd) < 2 {
			field = "mpa.v2.ird"
		}
		return MPAv2{}, truncated("mpa", field, MPAv2Len, len(pd))
	}
	ird, ord := binary.BigEndian.Uint16(pd), binary.BigEndian.Uint16(pd[2:])
	return MPAv2{
		PeerToPeer:      ird&mpaV2A != 0,
		ZeroLenSendRTR:  ird&mpaV2B != 0,
		IRD:             ird & mpaV2IRDORDMask,
		ZeroLenWriteRTR: ord&mpaV2C != 0,
		ZeroLenReadRTR:  ord&mpaV2D != 0,
		ORD:             ord & mpaV2IRDORDMask,
	}, nil
}

// Append appends the 4-octet block in network order. IRD and ORD are
// masked to 14 bits.
func (v MPAv2) Append(b []byte) []byte {
	ird, ord := v.IRD&mpaV2IRDORDMask, v.ORD&mpaV2IRDORDMask
	if v.PeerToPeer {
		ird |= mpaV2A
	}
	if v.ZeroLenSendRTR {
		ird |= mpaV2B
	}
	if v.ZeroLenWriteRTR {
		ord |= mpaV2C
	}
	if v.ZeroLenReadRTR {
		ord |= mpaV2D
	}
	return append(b, byte(ird>>8), byte(ird), byte(ord>>8), byte(ord))
}
