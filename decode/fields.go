package decode

import (
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"strconv"
)

// FieldKind is the type of a field's value.
type FieldKind uint8

const (
	KindBool   FieldKind = iota + 1 // 0 or 1 in Value.U
	KindUint                        // Value.U
	KindEnum                        // Value.U with its name in Value.S
	KindString                      // Value.S
	KindBytes                       // Value.B
	// KindTime is a time in nanoseconds, Value.U holding an int64 (a
	// record's times: since the first frame, or since the epoch); display
	// filters compare it as a number of seconds (`time > 1.5`).
	KindTime
	// KindAddr is an IP address, Value.B its 16 octets (IPv4 as
	// IPv4-mapped IPv6, RFC 4291 §2.5.5.2); display filters compare it
	// with an address or a prefix (`ip.addr == 10.0.0.0/8`).
	KindAddr
)

func (k FieldKind) String() string {
	if int(k) >= len(kindNames) {
		return "?"
	}
	return kindNames[k]
}

var kindNames = [...]string{"", "bool", "uint", "enum", "string", "bytes", "time", "addr"}

// Value is one field's value in a PDU. It never owns memory: S points at
// static names and B aliases the PDU's octets.
type Value struct {
	Kind FieldKind
	U    uint64
	S    string
	B    []byte
}

// Base says what a field's Offset counts from.
type Base uint8

const (
	BaseNone     Base = iota // derived, not a wire field
	BaseMPAFrame             // first octet of the MPA Request/Reply frame
	BaseFPDU                 // first octet of the (marker-free) FPDU
	BaseSegment              // first octet of the DDP segment (ULPDU)
)

func (b Base) String() string {
	return [...]string{"derived", "mpa-frame", "fpdu", "ddp-segment"}[b]
}

// Field describes one field of the shared field table: the name used by
// text output, JSON, the display filter and the TUI; its type; where it sits
// on the wire; and what it means. Offset is -1 where the position varies.
type Field struct {
	Name   string
	Kind   FieldKind
	Hex    bool // display in hexadecimal
	Base   Base
	Offset int
	Size   int    // octets; 0 for a sub-octet bit field
	Mask   uint64 // bit mask within Size (or the octet at Offset), 0 = whole
	Desc   string
	cond   cond
	val    func(p *PDU) Value
}

// Get returns the field's value in p, and false when p does not carry it.
func (f *Field) Get(p *PDU) (Value, bool) {
	if !condFuncs[f.cond](p) {
		return Value{}, false
	}
	return f.val(p), true
}

// JSONHex reports whether JSON writes the field's values as strings of
// 0x-hex ("0xff1c000000001000") rather than numbers: the 64-bit fields
// shown in hex (Tagged Offsets, addresses, atomic operands). A JSON
// number past 2^53 is rounded by every reader that takes numbers as IEEE
// doubles (JavaScript, jq 1.6); a string is not. The text is the field's
// display form (AppendValue).
func (f *Field) JSONHex() bool { return WideHex(f.Kind, f.Hex, f.Size) }

// WideHex is the JSONHex rule for a field of kind k, shown in hex or not,
// size octets wide on the wire (the ULP field table's fields use it too).
func WideHex(k FieldKind, hex bool, size int) bool { return k == KindUint && hex && size == 8 }

// AppendValue appends v as text in the field's display form: decimal or
// 0x-hex numbers, enum names, quoted strings not, bytes as hex.
func (f *Field) AppendValue(b []byte, v Value) []byte {
	switch v.Kind {
	case KindBool:
		return strconv.AppendUint(b, v.U, 10)
	case KindUint:
		if f.Hex {
			b = append(b, "0x"...)
			return strconv.AppendUint(b, v.U, 16)
		}
		return strconv.AppendUint(b, v.U, 10)
	case KindEnum, KindString:
		return append(b, v.S...)
	case KindBytes:
		return hex.AppendEncode(b, v.B)
	case KindTime:
		return AppendTime(b, v)
	case KindAddr:
		return AddrOf(v).AppendTo(b)
	}
	return b
}

// AppendTime appends a KindTime value in seconds with 9 decimals (as
// tshark's frame.time_relative).
func AppendTime(b []byte, v Value) []byte {
	ns := int64(v.U)
	if ns < 0 {
		b = append(b, '-')
		ns = -ns
	}
	b = strconv.AppendInt(b, ns/1e9, 10)
	frac := strconv.AppendInt(nil, ns%1e9+1e9, 10) // "1" and 9 digits
	return append(append(b, '.'), frac[1:]...)
}

// AddrOf is the address of a KindAddr value (IPv4 unmapped); the zero
// Addr for any other.
func AddrOf(v Value) netip.Addr {
	if v.Kind != KindAddr || len(v.B) != 16 {
		return netip.Addr{}
	}
	return netip.AddrFrom16([16]byte(v.B)).Unmap()
}

func vBool(x bool) Value {
	if x {
		return Value{Kind: KindBool, U: 1}
	}
	return Value{Kind: KindBool}
}
func vUint[T uint8 | uint16 | uint32 | uint64 | int](x T) Value {
	return Value{Kind: KindUint, U: uint64(x)}
}

// Presence predicates.
func isMPA(p *PDU) bool  { return p.IsMPAFrame }
func isFPDU(p *PDU) bool { return !p.IsMPAFrame }

// crcJudged: an FPDU whose CRC the receiver computed, CRCs being in use.
func crcJudged(p *PDU) bool {
	return !p.IsMPAFrame && (p.CRCStatus == CRCGood || p.CRCStatus == CRCBad)
}

// hasDDP: the ULPDU is long enough for the DDP header its T bit announces,
// so ParseSegment filled p.Seg.DDP even if a later header failed.
func hasDDP(p *PDU) bool {
	u := p.FPDU.ULPDU
	if p.IsMPAFrame || len(u) == 0 {
		return false
	}
	if u[0]&DDPFlagT != 0 {
		return len(u) >= DDPTaggedHdrLen
	}
	return len(u) >= DDPUntaggedHdrLen
}
func tagged(p *PDU) bool   { return hasDDP(p) && p.Seg.DDP.Tagged }
func untagged(p *PDU) bool { return hasDDP(p) && !p.Seg.DDP.Tagged }

// hasOp: the segment decoded whole and carries one of the opcodes.
func hasOp(p *PDU, o ...Opcode) bool {
	if !hasDDP(p) || p.SegErr != nil {
		return false
	}
	for _, x := range o {
		if p.Seg.RDMAP.Opcode == x {
			return true
		}
	}
	return false
}

func isTerm(p *PDU) bool     { return hasOp(p, OpTerminate) }
func hasV2(p *PDU) bool      { return p.IsMPAFrame && p.MPA.HasV2 }
func hasRev1(p *PDU) bool    { return p.IsMPAFrame && p.MPA.Rev1IRDORD }
func hasERDMA(p *PDU) bool   { return p.IsMPAFrame && p.MPA.ERDMA }
func termDDP(p *PDU) bool    { return isTerm(p) && p.Seg.Terminate.HasDDP }
func termTagged(p *PDU) bool { return termDDP(p) && p.Seg.Terminate.TermDDP.Tagged }
func termUntag(p *PDU) bool  { return termDDP(p) && !p.Seg.Terminate.TermDDP.Tagged }
func termRDMA(p *PDU) bool   { return isTerm(p) && p.Seg.Terminate.HasRDMA }
func atomicReq(p *PDU) bool  { return hasOp(p, OpAtomicRequest) }
func atomicResp(p *PDU) bool { return hasOp(p, OpAtomicResponse) }

// cond names the condition under which a PDU carries a field. Evaluating
// the conditions once per PDU (Present) lets a writer that walks the whole
// table skip absent fields without testing each.
type cond uint8

const (
	cMPA cond = iota
	cV2
	cRev1
	cERDMA
	cFPDU
	cCRC // an FPDU whose CRC was computed and judged
	cDDP
	cTagged
	cUntagged
	cSegOK
	cSendInv
	cReadReq
	cImm
	cAtomicReq
	cAtomicResp
	cTerm
	cTermSegLen
	cTermDDP
	cTermTagged
	cTermUntag
	cTermRDMA
	numConds
)

var condFuncs = [numConds]func(p *PDU) bool{
	cMPA: isMPA, cV2: hasV2, cRev1: hasRev1, cERDMA: hasERDMA, cFPDU: isFPDU, cCRC: crcJudged, cDDP: hasDDP, cTagged: tagged, cUntagged: untagged,
	cSegOK:     func(p *PDU) bool { return hasDDP(p) && p.SegErr == nil },
	cSendInv:   func(p *PDU) bool { return hasOp(p, OpSendInv, OpSendSEInv) },
	cReadReq:   func(p *PDU) bool { return hasOp(p, OpReadRequest) },
	cImm:       func(p *PDU) bool { return hasOp(p, OpImmData, OpImmDataSE) },
	cAtomicReq: atomicReq, cAtomicResp: atomicResp, cTerm: isTerm,
	cTermSegLen: func(p *PDU) bool { return isTerm(p) && p.Seg.Terminate.HasSegLen },
	cTermDDP:    termDDP, cTermTagged: termTagged, cTermUntag: termUntag, cTermRDMA: termRDMA,
}

// Mask is the set of conditions a PDU meets (see Present).
type Mask uint32

// Present evaluates once which groups of fields p carries. It decides the
// conditions directly rather than through condFuncs: that loop re-tests
// hasDDP and the opcode for every condition, and Present runs once per PDU
// on every output path (tests check both agree).
func Present(p *PDU) Mask {
	if p.IsMPAFrame {
		m := Mask(1 << cMPA)
		if p.MPA.HasV2 {
			m |= 1 << cV2
		}
		if p.MPA.Rev1IRDORD {
			m |= 1 << cRev1
		}
		if p.MPA.ERDMA {
			m |= 1 << cERDMA
		}
		return m
	}
	m := Mask(1 << cFPDU)
	if crcJudged(p) {
		m |= 1 << cCRC
	}
	if !hasDDP(p) {
		return m
	}
	m |= 1 << cDDP
	if p.Seg.DDP.Tagged {
		m |= 1 << cTagged
	} else {
		m |= 1 << cUntagged
	}
	if p.SegErr != nil {
		return m
	}
	return m | 1<<cSegOK | opConds(p)
}

// opConds is the part of the Present mask that depends on the RDMAP
// opcode of a segment that decoded whole.
func opConds(p *PDU) Mask {
	switch p.Seg.RDMAP.Opcode {
	case OpSendInv, OpSendSEInv:
		return 1 << cSendInv
	case OpReadRequest:
		return 1 << cReadReq
	case OpImmData, OpImmDataSE:
		return 1 << cImm
	case OpAtomicRequest:
		return 1 << cAtomicReq
	case OpAtomicResponse:
		return 1 << cAtomicResp
	case OpTerminate:
		return termConds(&p.Seg.Terminate)
	}
	return 0
}

// termConds is the Present mask of a Terminate message.
func termConds(t *Terminate) Mask {
	m := Mask(1 << cTerm)
	if t.HasSegLen {
		m |= 1 << cTermSegLen
	}
	if t.HasDDP {
		m |= 1 << cTermDDP
		if t.TermDDP.Tagged {
			m |= 1 << cTermTagged
		} else {
			m |= 1 << cTermUntag
		}
	}
	if t.HasRDMA {
		m |= 1 << cTermRDMA
	}
	return m
}

// presentSlow is Present by definition: every condition function in turn.
// Tests hold Present to it.
func presentSlow(p *PDU) Mask {
	var m Mask
	for c := cond(0); c < numConds; c++ {
		if condFuncs[c](p) {
			m |= 1 << c
		}
	}
	return m
}

// In reports whether a PDU whose Present mask is m carries the field:
// what a writer that lays out its output once per mask needs, without a
// PDU at hand.
func (f *Field) In(m Mask) bool { return m&(1<<f.cond) != 0 }

// GetIn returns the field's value in p given p's Present mask: the cheap
// path for walking the whole table over one PDU.
func (f *Field) GetIn(p *PDU, m Mask) (Value, bool) {
	if !f.In(m) {
		return Value{}, false
	}
	return f.val(p), true
}

// fld builds a table row.
func fld(name string, kind FieldKind, hex bool, base Base, off, size int, mask uint64, desc string,
	c cond, val func(*PDU) Value) Field {
	return Field{Name: name, Kind: kind, Hex: hex, Base: base, Offset: off, Size: size, Mask: mask, Desc: desc, cond: c, val: val}
}

var fieldTable = []Field{
	// MPA Request/Reply frames (RFC 5044 §7.1.1, RFC 6581 §6, §9).
	fld("mpa.type", KindEnum, false, BaseMPAFrame, 0, 16, 0, `frame type from the key: "request" ("MPA ID Req Frame") or "reply" ("MPA ID Rep Frame")`, cMPA,
		func(p *PDU) Value {
			if p.MPA.Reply {
				return Value{Kind: KindEnum, U: 1, S: "reply"}
			}
			return Value{Kind: KindEnum, U: 0, S: "request"}
		}),
	fld("mpa.key", KindString, false, BaseMPAFrame, 0, 16, 0, `the 16-octet key, "MPA ID Req Frame" or "MPA ID Rep Frame"`, cMPA,
		func(p *PDU) Value {
			if p.MPA.Reply {
				return Value{Kind: KindString, S: MPAKeyRep}
			}
			return Value{Kind: KindString, S: MPAKeyReq}
		}),
	fld("mpa.flags", KindUint, true, BaseMPAFrame, 16, 1, 0, "the flags octet: M 0x80, C 0x40, R 0x20, S 0x10, reserved 0x0F", cMPA, func(p *PDU) Value { return vUint(p.MPA.Flags) }),
	fld("mpa.m", KindBool, false, BaseMPAFrame, 16, 0, MPAFlagM, "M: the frame's sender wants markers in the FPDUs sent to it", cMPA, func(p *PDU) Value { return vBool(p.MPA.Markers) }),
	fld("mpa.c", KindBool, false, BaseMPAFrame, 16, 0, MPAFlagC, "C: CRC32c wanted; CRC is used both ways if either frame sets it", cMPA, func(p *PDU) Value { return vBool(p.MPA.CRC) }),
	fld("mpa.r", KindBool, false, BaseMPAFrame, 16, 0, MPAFlagR, "R: in a Reply, the Responder rejects the connection", cMPA, func(p *PDU) Value { return vBool(p.MPA.Reject) }),
	fld("mpa.s", KindBool, false, BaseMPAFrame, 16, 0, MPAFlagS, "S (RFC 6581 enhanced): Private Data starts with the IRD/ORD block", cMPA, func(p *PDU) Value { return vBool(p.MPA.Enhanced) }),
	fld("mpa.res", KindUint, true, BaseMPAFrame, 16, 0, 0x0F, "reserved flag bits (0x08 is siw's GSO experiment)", cMPA, func(p *PDU) Value { return vUint(p.MPA.Res) }),
	fld("mpa.rev", KindUint, false, BaseMPAFrame, 17, 1, 0, "MPA revision: 0 RDMA Consortium, 1 RFC 5044, 2 RFC 6581", cMPA, func(p *PDU) Value { return vUint(p.MPA.Rev) }),
	fld("mpa.pre_ietf", KindBool, false, BaseNone, -1, 0, 0, "Rev 0: pre-IETF RDMA Consortium MPA", cMPA, func(p *PDU) Value { return vBool(p.MPA.PreIETF) }),
	fld("mpa.pd_length", KindUint, false, BaseMPAFrame, 18, 2, 0, "octets of Private Data, at most 512", cMPA, func(p *PDU) Value { return vUint(p.MPA.PDLength) }),
	// Alibaba erdma's extension after PD_Length (Linux erdma_cm.h, struct erdma_mpa_ext; Rev 129).
	fld("mpa.erdma.cookie", KindUint, true, BaseMPAFrame, 20, 4, 0, "erdma (Rev 129) extension: the sender QP's iWARP cookie", cERDMA, func(p *PDU) Value { return vUint(p.MPA.ERDMAExt.Cookie) }),
	fld("mpa.erdma.bits", KindUint, true, BaseMPAFrame, 24, 4, 0, "erdma (Rev 129) extension: the bits word (congestion control in bits 3:0)", cERDMA, func(p *PDU) Value { return vUint(p.MPA.ERDMAExt.Bits) }),
	fld("mpa.erdma.cc", KindUint, false, BaseMPAFrame, 24, 4, MPAERDMACCMask, "erdma (Rev 129) extension: congestion-control algorithm of the sender's QP; peers that differ fall back to a compromise", cERDMA, func(p *PDU) Value { return vUint(p.MPA.ERDMAExt.CC()) }),
	fld("mpa.private_data", KindBytes, false, BaseMPAFrame, 20, -1, 0, "Private Data, including the RFC 6581 block", cMPA, func(p *PDU) Value { return Value{Kind: KindBytes, B: p.MPA.PrivateData} }),
	fld("mpa.v2.p2p", KindBool, false, BaseMPAFrame, 20, 0, 0x80, "A: peer-to-peer connection model (an RTR follows)", cV2, func(p *PDU) Value { return vBool(p.MPA.V2.PeerToPeer) }),
	fld("mpa.v2.send_rtr", KindBool, false, BaseMPAFrame, 20, 0, 0x40, "B: zero-length Send RTR", cV2, func(p *PDU) Value { return vBool(p.MPA.V2.ZeroLenSendRTR) }),
	fld("mpa.v2.ird", KindUint, false, BaseMPAFrame, 20, 2, 0x3FFF, "IRD of the frame's sender (0x3FFF: no negotiation)", cV2, func(p *PDU) Value { return vUint(p.MPA.V2.IRD) }),
	fld("mpa.v2.write_rtr", KindBool, false, BaseMPAFrame, 22, 0, 0x80, "C: zero-length RDMA Write RTR", cV2, func(p *PDU) Value { return vBool(p.MPA.V2.ZeroLenWriteRTR) }),
	fld("mpa.v2.read_rtr", KindBool, false, BaseMPAFrame, 22, 0, 0x40, "D: zero-length RDMA Read RTR", cV2, func(p *PDU) Value { return vBool(p.MPA.V2.ZeroLenReadRTR) }),
	fld("mpa.v2.ord", KindUint, false, BaseMPAFrame, 22, 2, 0x3FFF, "ORD of the frame's sender (0x3FFF: no negotiation)", cV2, func(p *PDU) Value { return vUint(p.MPA.V2.ORD) }),
	fld("mpa.rev1.ird", KindUint, false, BaseMPAFrame, 20, 4, 0, "IRD of the Rev 1 IRD/ORD Private Data variant (MS-SMBD, Chelsio T4)", cRev1, func(p *PDU) Value { return vUint(p.MPA.Rev1IRD) }),
	fld("mpa.rev1.ord", KindUint, false, BaseMPAFrame, 24, 4, 0, "ORD of the Rev 1 IRD/ORD Private Data variant", cRev1, func(p *PDU) Value { return vUint(p.MPA.Rev1ORD) }),

	// FPDU framing (RFC 5044 §4).
	fld("mpa.ulpdu_length", KindUint, false, BaseFPDU, 0, 2, 0, "ULPDU_Length: octets of the DDP segment (no PAD, CRC or markers)", cFPDU, func(p *PDU) Value { return vUint(p.FPDU.ULPDULength) }),
	fld("mpa.pad", KindBytes, false, BaseFPDU, -1, -1, 0, "PAD octets (0-3) that make the FPDU a multiple of 4", cFPDU, func(p *PDU) Value { return Value{Kind: KindBytes, B: p.FPDU.Pad} }),
	fld("mpa.crc", KindUint, true, BaseFPDU, -1, 4, 0, "CRC field as on the wire (CRC32c, least significant octet first)", cFPDU, func(p *PDU) Value { return vUint(p.FPDU.CRC) }),
	// Only where CRCs are in use (mpa.crc_status good or bad): otherwise
	// a receiver computes none (RFC 5044 §7.1.1), and no face shows one.
	fld("mpa.crc_computed", KindUint, true, BaseNone, -1, 4, 0, "CRC32c computed over the FPDU, markers and PAD included", cCRC, func(p *PDU) Value { return vUint(p.ComputedCRC) }),
	fld("mpa.crc_status", KindEnum, false, BaseNone, -1, 0, 0, `"good", "bad", "unchecked" (CRC not negotiated) or "unknown"`, cFPDU,
		func(p *PDU) Value { return Value{Kind: KindEnum, U: uint64(p.CRCStatus), S: p.CRCStatus.String()} }),
	fld("mpa.markers", KindUint, false, BaseNone, -1, 0, 0, "number of markers inside the FPDU", cFPDU, func(p *PDU) Value { return vUint(len(p.Markers)) }),

	// DDP (RFC 5041 §4).
	fld("ddp.tagged", KindBool, false, BaseSegment, 0, 0, DDPFlagT, "T: tagged buffer model", cDDP, func(p *PDU) Value { return vBool(p.Seg.DDP.Tagged) }),
	fld("ddp.last", KindBool, false, BaseSegment, 0, 0, DDPFlagL, "L: last segment of the DDP message", cDDP, func(p *PDU) Value { return vBool(p.Seg.DDP.Last) }),
	fld("ddp.rsvd", KindUint, true, BaseSegment, 0, 0, DDPRsvdMask, "reserved control bits", cDDP, func(p *PDU) Value { return vUint(p.Seg.DDP.Rsvd) }),
	fld("ddp.dv", KindUint, false, BaseSegment, 0, 0, DDPDVMask, "DDP version: 1 RFC 5041, 0 pre-IETF", cDDP, func(p *PDU) Value { return vUint(p.Seg.DDP.DV) }),
	fld("ddp.stag", KindUint, true, BaseSegment, 2, 4, 0, "Data Sink STag", cTagged, func(p *PDU) Value { return vUint(p.Seg.DDP.STag) }),
	fld("ddp.to", KindUint, true, BaseSegment, 6, 8, 0, "Tagged Offset of the segment's first payload octet", cTagged, func(p *PDU) Value { return vUint(p.Seg.DDP.TO) }),
	fld("ddp.rsvdulp", KindUint, true, BaseSegment, 2, 4, 0, "RsvdULP octets 2-5 (RDMAP Invalidate STag)", cUntagged, func(p *PDU) Value { return vUint(p.Seg.DDP.RsvdULP2) }),
	fld("ddp.qn", KindUint, false, BaseSegment, 6, 4, 0, "Queue Number: 0 Send, 1 Read/Atomic Request, 2 Terminate, 3 Atomic Response", cUntagged, func(p *PDU) Value { return vUint(p.Seg.DDP.QN) }),
	fld("ddp.msn", KindUint, false, BaseSegment, 10, 4, 0, "Message Sequence Number (first message on a queue: 1)", cUntagged, func(p *PDU) Value { return vUint(p.Seg.DDP.MSN) }),
	fld("ddp.mo", KindUint, false, BaseSegment, 14, 4, 0, "Message Offset of the segment's first payload octet", cUntagged, func(p *PDU) Value { return vUint(p.Seg.DDP.MO) }),
	fld("ddp.payload_length", KindUint, false, BaseNone, -1, 0, 0, "ULP payload octets after the DDP and RDMAP headers", cSegOK,
		func(p *PDU) Value { n, _ := p.PayloadLen(); return vUint(n) }),

	// RDMAP (RFC 5040 §4, RFC 7306).
	fld("rdmap.rv", KindUint, false, BaseSegment, 1, 0, 0xC0, "RDMAP version: 1 RFC 5040, 0 pre-IETF", cDDP, func(p *PDU) Value { return vUint(p.Seg.RDMAP.RV) }),
	fld("rdmap.rsv", KindUint, true, BaseSegment, 1, 0, 0x30, "reserved control bits", cDDP, func(p *PDU) Value { return vUint(p.Seg.RDMAP.Rsv) }),
	fld("rdmap.opcode", KindEnum, false, BaseSegment, 1, 0, 0x0F, `operation, e.g. "RDMA Read Request" (compare by name or number)`, cDDP,
		func(p *PDU) Value {
			return Value{Kind: KindEnum, U: uint64(p.Seg.RDMAP.Opcode), S: p.Seg.RDMAP.Opcode.String()}
		}),
	fld("rdmap.inval_stag", KindUint, true, BaseSegment, 2, 4, 0, "Invalidate STag of Send with Invalidate", cSendInv, func(p *PDU) Value { return vUint(p.Seg.InvalidateSTag) }),
	fld("rdmap.sink_stag", KindUint, true, BaseSegment, 18, 4, 0, "Read Request: Data Sink STag", cReadReq, func(p *PDU) Value { return vUint(p.Seg.ReadRequest.SinkSTag) }),
	fld("rdmap.sink_to", KindUint, true, BaseSegment, 22, 8, 0, "Read Request: Data Sink Tagged Offset", cReadReq, func(p *PDU) Value { return vUint(p.Seg.ReadRequest.SinkTO) }),
	fld("rdmap.read_size", KindUint, false, BaseSegment, 30, 4, 0, "Read Request: RDMA Read Message Size", cReadReq, func(p *PDU) Value { return vUint(p.Seg.ReadRequest.Size) }),
	fld("rdmap.src_stag", KindUint, true, BaseSegment, 34, 4, 0, "Read Request: Data Source STag", cReadReq, func(p *PDU) Value { return vUint(p.Seg.ReadRequest.SrcSTag) }),
	fld("rdmap.src_to", KindUint, true, BaseSegment, 38, 8, 0, "Read Request: Data Source Tagged Offset", cReadReq, func(p *PDU) Value { return vUint(p.Seg.ReadRequest.SrcTO) }),
	fld("rdmap.imm_data", KindBytes, false, BaseSegment, 18, 8, 0, "Immediate Data (RFC 7306 §6)", cImm, func(p *PDU) Value { return Value{Kind: KindBytes, B: p.Seg.ImmData[:]} }),

	fld("rdmap.atomic.opcode", KindEnum, false, BaseSegment, 18, 4, 0xF, "AOpCode: FetchAdd or CmpSwap (RFC 7306 §5.2.1)", cAtomicReq,
		func(p *PDU) Value {
			return Value{Kind: KindEnum, U: uint64(p.Seg.AtomicRequest.AOpCode), S: p.Seg.AtomicRequest.AOpCode.String()}
		}),
	fld("rdmap.atomic.request_id", KindUint, true, BaseSegment, 22, 4, 0, "Request Identifier", cAtomicReq, func(p *PDU) Value { return vUint(p.Seg.AtomicRequest.RequestID) }),
	fld("rdmap.atomic.remote_stag", KindUint, true, BaseSegment, 26, 4, 0, "Remote STag", cAtomicReq, func(p *PDU) Value { return vUint(p.Seg.AtomicRequest.RemoteSTag) }),
	fld("rdmap.atomic.remote_to", KindUint, true, BaseSegment, 30, 8, 0, "Remote Tagged Offset (64-bit aligned target)", cAtomicReq, func(p *PDU) Value { return vUint(p.Seg.AtomicRequest.RemoteTO) }),
	fld("rdmap.atomic.add_swap_data", KindUint, true, BaseSegment, 38, 8, 0, "Add Data (FetchAdd) or Swap Data (CmpSwap)", cAtomicReq, func(p *PDU) Value { return vUint(p.Seg.AtomicRequest.AddSwapData) }),
	fld("rdmap.atomic.add_swap_mask", KindUint, true, BaseSegment, 46, 8, 0, "Add Mask or Swap Mask", cAtomicReq, func(p *PDU) Value { return vUint(p.Seg.AtomicRequest.AddSwapMask) }),
	fld("rdmap.atomic.compare_data", KindUint, true, BaseSegment, 54, 8, 0, "Compare Data (CmpSwap)", cAtomicReq, func(p *PDU) Value { return vUint(p.Seg.AtomicRequest.CompareData) }),
	fld("rdmap.atomic.compare_mask", KindUint, true, BaseSegment, 62, 8, 0, "Compare Mask (CmpSwap)", cAtomicReq, func(p *PDU) Value { return vUint(p.Seg.AtomicRequest.CompareMask) }),
	fld("rdmap.atomic.orig_request_id", KindUint, true, BaseSegment, 18, 4, 0, "Atomic Response: Original Request Identifier", cAtomicResp, func(p *PDU) Value { return vUint(p.Seg.AtomicResponse.OrigRequestID) }),
	fld("rdmap.atomic.orig_value", KindUint, true, BaseSegment, 22, 8, 0, "Atomic Response: Original Remote Data Value", cAtomicResp, func(p *PDU) Value { return vUint(p.Seg.AtomicResponse.OrigValue) }),

	// Terminate (RFC 5040 §4.8).
	fld("rdmap.term.layer", KindEnum, false, BaseSegment, 18, 0, 0xF0, "Layer that detected the error: RDMAP, DDP, LLP (MPA)", cTerm,
		func(p *PDU) Value {
			c := p.Seg.Terminate.Cause()
			return Value{Kind: KindEnum, U: uint64(c.Layer), S: c.LayerName}
		}),
	fld("rdmap.term.etype", KindEnum, false, BaseSegment, 18, 0, 0x0F, "Error Type within the layer", cTerm,
		func(p *PDU) Value {
			c := p.Seg.Terminate.Cause()
			return Value{Kind: KindEnum, U: uint64(c.EType), S: c.ETypeName}
		}),
	fld("rdmap.term.code", KindEnum, false, BaseSegment, 19, 1, 0, "Error Code within the layer and type", cTerm,
		func(p *PDU) Value {
			c := p.Seg.Terminate.Cause()
			return Value{Kind: KindEnum, U: uint64(c.Code), S: c.CodeName}
		}),
	fld("rdmap.term.cause", KindString, false, BaseNone, -1, 0, 0, "Layer/EType/Code in words", cTerm, func(p *PDU) Value { return Value{Kind: KindString, S: p.Seg.Terminate.Cause().Short()} }),
	fld("rdmap.term.known", KindBool, false, BaseNone, -1, 0, 0, "the Layer/EType/Code combination is defined by RFC 5040/5041/5044/6581", cTerm, func(p *PDU) Value { return vBool(p.Seg.Terminate.Cause().Known) }),
	fld("rdmap.term.raw", KindUint, true, BaseSegment, 18, 4, 0, "Terminate Control word as on the wire (big-endian)", cTerm,
		func(p *PDU) Value { return vUint(binary.BigEndian.Uint32(p.Seg.Terminate.Raw[:])) }),
	fld("rdmap.term.m", KindBool, false, BaseSegment, 20, 0, TermM, "M: DDP Segment Length valid", cTerm, func(p *PDU) Value { return vBool(p.Seg.Terminate.M) }),
	fld("rdmap.term.d", KindBool, false, BaseSegment, 20, 0, TermD, "D: Terminated DDP header (and DDP Segment Length) present", cTerm, func(p *PDU) Value { return vBool(p.Seg.Terminate.D) }),
	fld("rdmap.term.r", KindBool, false, BaseSegment, 20, 0, TermR, "R: Terminated RDMA (Read Request) header present", cTerm, func(p *PDU) Value { return vBool(p.Seg.Terminate.R) }),
	fld("rdmap.term.reserved", KindUint, true, BaseSegment, 20, 2, 0x1FFF, "13 reserved bits", cTerm, func(p *PDU) Value { return vUint(p.Seg.Terminate.Reserved) }),
	fld("rdmap.term.siw_encoding", KindBool, false, BaseNone, -1, 0, 0, "control word written in Linux siw's swapped encoding and decoded to the intended values", cTerm, func(p *PDU) Value { return vBool(p.Seg.Terminate.SiwEncoding) }),
	fld("rdmap.term.ddp_seg_len", KindUint, false, BaseSegment, 22, 2, 0, "DDP Segment Length of the offending segment", cTermSegLen,
		func(p *PDU) Value { return vUint(p.Seg.Terminate.DDPSegmentLength) }),
	fld("rdmap.term.ddp_header", KindBytes, false, BaseSegment, 24, -1, 0, "copy of the offending segment's DDP header", cTermDDP, func(p *PDU) Value { return Value{Kind: KindBytes, B: p.Seg.Terminate.TermDDPRaw} }),
	fld("rdmap.term.ddp.tagged", KindBool, false, BaseSegment, 24, 0, DDPFlagT, "copied DDP header: T", cTermDDP, func(p *PDU) Value { return vBool(p.Seg.Terminate.TermDDP.Tagged) }),
	fld("rdmap.term.ddp.last", KindBool, false, BaseSegment, 24, 0, DDPFlagL, "copied DDP header: L", cTermDDP, func(p *PDU) Value { return vBool(p.Seg.Terminate.TermDDP.Last) }),
	fld("rdmap.term.ddp.opcode", KindEnum, false, BaseSegment, 25, 0, 0x0F, "copied DDP header: RDMAP opcode", cTermDDP,
		func(p *PDU) Value {
			o := ParseRDMAPControl(p.Seg.Terminate.TermDDP.RsvdULP).Opcode
			return Value{Kind: KindEnum, U: uint64(o), S: o.String()}
		}),
	fld("rdmap.term.ddp.stag", KindUint, true, BaseSegment, 26, 4, 0, "copied DDP header: STag", cTermTagged, func(p *PDU) Value { return vUint(p.Seg.Terminate.TermDDP.STag) }),
	fld("rdmap.term.ddp.to", KindUint, true, BaseSegment, 30, 8, 0, "copied DDP header: TO", cTermTagged, func(p *PDU) Value { return vUint(p.Seg.Terminate.TermDDP.TO) }),
	fld("rdmap.term.ddp.qn", KindUint, false, BaseSegment, 30, 4, 0, "copied DDP header: QN", cTermUntag, func(p *PDU) Value { return vUint(p.Seg.Terminate.TermDDP.QN) }),
	fld("rdmap.term.ddp.msn", KindUint, false, BaseSegment, 34, 4, 0, "copied DDP header: MSN", cTermUntag, func(p *PDU) Value { return vUint(p.Seg.Terminate.TermDDP.MSN) }),
	fld("rdmap.term.ddp.mo", KindUint, false, BaseSegment, 38, 4, 0, "copied DDP header: MO", cTermUntag, func(p *PDU) Value { return vUint(p.Seg.Terminate.TermDDP.MO) }),
	fld("rdmap.term.rdma_header", KindBytes, false, BaseSegment, 42, 28, 0, "copy of the offending Read Request header", cTermRDMA, func(p *PDU) Value { return Value{Kind: KindBytes, B: p.Seg.Terminate.TermRDMARaw} }),
	fld("rdmap.term.read.sink_stag", KindUint, true, BaseSegment, 42, 4, 0, "copied Read Request: Data Sink STag", cTermRDMA, func(p *PDU) Value { return vUint(p.Seg.Terminate.TermRDMA.SinkSTag) }),
	fld("rdmap.term.read.sink_to", KindUint, true, BaseSegment, 46, 8, 0, "copied Read Request: Data Sink TO", cTermRDMA, func(p *PDU) Value { return vUint(p.Seg.Terminate.TermRDMA.SinkTO) }),
	fld("rdmap.term.read.size", KindUint, false, BaseSegment, 54, 4, 0, "copied Read Request: size", cTermRDMA, func(p *PDU) Value { return vUint(p.Seg.Terminate.TermRDMA.Size) }),
	fld("rdmap.term.read.src_stag", KindUint, true, BaseSegment, 58, 4, 0, "copied Read Request: Data Source STag", cTermRDMA, func(p *PDU) Value { return vUint(p.Seg.Terminate.TermRDMA.SrcSTag) }),
	fld("rdmap.term.read.src_to", KindUint, true, BaseSegment, 62, 8, 0, "copied Read Request: Data Source TO", cTermRDMA, func(p *PDU) Value { return vUint(p.Seg.Terminate.TermRDMA.SrcTO) }),

	fld("rdmap.pre_ietf", KindBool, false, BaseNone, -1, 0, 0, "DDP DV 0 or RDMAP RV 0: pre-IETF RDMA Consortium protocol", cDDP, func(p *PDU) Value { return vBool(p.Seg.DDP.DV == 0 || p.Seg.RDMAP.RV == 0) }),
	fld("rdmap.extension", KindBool, false, BaseNone, -1, 0, 0, "RFC 7306 opcode (Immediate Data, Atomics)", cDDP, func(p *PDU) Value { return vBool(p.Seg.RDMAP.Opcode.Extension()) }),
	fld("data", KindBytes, false, BaseNone, -1, -1, 0, "ULP payload", cSegOK, func(p *PDU) Value { return Value{Kind: KindBytes, B: p.Seg.Payload} }),
}

var fieldIndex = func() map[string]int {
	m := make(map[string]int, len(fieldTable))
	for i, f := range fieldTable {
		m[f.Name] = i
	}
	return m
}()

// Fields returns the whole field table in display order. Callers must not
// modify it.
func Fields() []Field { return fieldTable }

// FieldByName looks a field up by its dotted name.
func FieldByName(name string) (*Field, bool) {
	i, ok := fieldIndex[name]
	if !ok {
		return nil, false
	}
	return &fieldTable[i], true
}
