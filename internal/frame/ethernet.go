package frame

import "encoding/binary"

// Ethernet II header layout (IEEE 802.3 §3.1.1) and the 802.1Q tag.
const (
	EthernetLen = 14 // destination MAC, source MAC, EtherType
	VLANTagLen  = 4  // TPID 0x8100, TCI (IEEE 802.1Q §9.6)

	EtherTypeIPv4 = 0x0800
	EtherTypeIPv6 = 0x86dd
	EtherTypeVLAN = 0x8100 // C-VLAN tag
)

// Ethernet is a view of an Ethernet II header.
type Ethernet []byte

// Type is the EtherType (or the TPID of a VLAN tag that follows).
func (e Ethernet) Type() uint16 { return binary.BigEndian.Uint16(e[12:]) }

// Encode writes the header.
func (e Ethernet) Encode(dst, src [6]byte, etherType uint16) {
	copy(e[0:6], dst[:])
	copy(e[6:12], src[:])
	binary.BigEndian.PutUint16(e[12:], etherType)
}

// AppendVLAN appends the rest of an 802.1Q tag to an Ethernet header whose
// type is EtherTypeVLAN: the TCI (VLAN ID vid, priority 0, DEI 0) and the
// EtherType of what follows the tag.
func AppendVLAN(b []byte, vid uint16, etherType uint16) []byte {
	return append(b, byte(vid>>8), byte(vid), byte(etherType>>8), byte(etherType))
}
