package frame

import (
	"encoding/binary"
	"net/netip"
)

// ProtocolTCP is TCP's number in IPv4's Protocol and IPv6's Next Header.
const ProtocolTCP = 6

// IPv4MinLen is an IPv4 header without options (RFC 791 §3.1).
const IPv4MinLen = 20

// IPv4 is a view of an IPv4 header (RFC 791 §3.1).
type IPv4 []byte

// IPv4Fields are the fields Encode writes; the rest are 0 (no options, no
// TOS, checksum to be filled).
type IPv4Fields struct {
	TotalLength uint16
	ID          uint16
	DontFrag    bool
	TTL         uint8
	Protocol    uint8
	Src, Dst    netip.Addr // IPv4 addresses
}

// Encode writes a 20-octet header with a zero checksum.
func (b IPv4) Encode(f *IPv4Fields) {
	b[0], b[1] = 0x45, 0 // version 4, IHL 5
	binary.BigEndian.PutUint16(b[2:], f.TotalLength)
	binary.BigEndian.PutUint16(b[4:], f.ID)
	b[6], b[7] = 0, 0
	if f.DontFrag {
		b[6] = 0x40
	}
	b[8], b[9] = f.TTL, f.Protocol
	b[10], b[11] = 0, 0
	s, d := f.Src.As4(), f.Dst.As4()
	copy(b[12:16], s[:])
	copy(b[16:20], d[:])
}

func (b IPv4) HeaderLen() int          { return int(b[0]&0x0f) * 4 }
func (b IPv4) TotalLength() uint16     { return binary.BigEndian.Uint16(b[2:]) }
func (b IPv4) SetTotalLength(v uint16) { binary.BigEndian.PutUint16(b[2:], v) }
func (b IPv4) ID() uint16              { return binary.BigEndian.Uint16(b[4:]) }
func (b IPv4) SetID(v uint16)          { binary.BigEndian.PutUint16(b[4:], v) }
func (b IPv4) DontFrag() bool          { return b[6]&0x40 != 0 }
func (b IPv4) FragmentOffset() uint16  { return binary.BigEndian.Uint16(b[6:]) & 0x1fff }
func (b IPv4) Protocol() uint8         { return b[9] }
func (b IPv4) Checksum() uint16        { return binary.BigEndian.Uint16(b[10:]) }
func (b IPv4) SetChecksum(v uint16)    { binary.BigEndian.PutUint16(b[10:], v) }
func (b IPv4) Src() netip.Addr         { return netip.AddrFrom4([4]byte(b[12:16])) }
func (b IPv4) Dst() netip.Addr         { return netip.AddrFrom4([4]byte(b[16:20])) }

// CalculateChecksum is the header checksum the header should carry: the
// Internet checksum of the header with the checksum field taken as 0
// (RFC 791 §3.1).
func (b IPv4) CalculateChecksum() uint16 {
	h := b[:b.HeaderLen()]
	sum := ChecksumAdd(ChecksumAdd(0, h[:10]), h[12:])
	return ChecksumFold(sum)
}

// IPv6Len is the fixed IPv6 header (RFC 8200 §3).
const IPv6Len = 40

// IPv6 is a view of the fixed IPv6 header (RFC 8200 §3).
type IPv6 []byte

// IPv6Fields are the fields Encode writes (traffic class and flow label 0).
type IPv6Fields struct {
	PayloadLength uint16
	NextHeader    uint8
	HopLimit      uint8
	Src, Dst      netip.Addr
}

// Encode writes the fixed header.
func (b IPv6) Encode(f *IPv6Fields) {
	b[0], b[1], b[2], b[3] = 0x60, 0, 0, 0
	binary.BigEndian.PutUint16(b[4:], f.PayloadLength)
	b[6], b[7] = f.NextHeader, f.HopLimit
	s, d := f.Src.As16(), f.Dst.As16()
	copy(b[8:24], s[:])
	copy(b[24:40], d[:])
}

func (b IPv6) PayloadLength() uint16     { return binary.BigEndian.Uint16(b[4:]) }
func (b IPv6) SetPayloadLength(v uint16) { binary.BigEndian.PutUint16(b[4:], v) }
func (b IPv6) NextHeader() uint8         { return b[6] }
func (b IPv6) Src() netip.Addr           { return netip.AddrFrom16([16]byte(b[8:24])) }
func (b IPv6) Dst() netip.Addr           { return netip.AddrFrom16([16]byte(b[24:40])) }

// PseudoHeaderSum is the unfolded sum of the parts of the TCP/UDP
// pseudo-header that do not change per segment: the addresses and the
// protocol (RFC 9293 §3.1, RFC 8200 §8.1). Add the transport length and
// the segment itself.
func PseudoHeaderSum(src, dst netip.Addr, protocol uint8) uint64 {
	var sum uint64
	if src.Is4() {
		s, d := src.As4(), dst.As4()
		sum = ChecksumAdd(ChecksumAdd(0, s[:]), d[:])
	} else {
		s, d := src.As16(), dst.As16()
		sum = ChecksumAdd(ChecksumAdd(0, s[:]), d[:])
	}
	return sum + uint64(protocol)
}
