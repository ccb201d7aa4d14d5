package frame

import "net/netip"

// Endpoint is one side of a connection on the wire.
type Endpoint struct {
	MAC  [6]byte
	Addr netip.AddrPort
}

// Template holds the octets every frame of one direction of a TCP
// connection starts with (Ethernet, an optional 802.1Q tag, the IPv4 or
// IPv6 header) and the part of the TCP checksum that does not change, and
// appends whole frames. IPv4 headers carry DF and TTL 64, IPv6 headers hop
// limit 64.
type Template struct {
	hdr              []byte
	ipOff            int
	v6               bool
	pseudo           uint64 // pseudo-header addresses and protocol
	srcPort, dstPort uint16
}

// NewTemplate prepares the frames from src to dst (both IPv4 or both
// IPv6), tagged with VLAN ID vlan when it is not 0.
func NewTemplate(src, dst Endpoint, vlan uint16) *Template {
	sa, da := src.Addr.Addr(), dst.Addr.Addr()
	t := &Template{v6: sa.Is6(), srcPort: src.Addr.Port(), dstPort: dst.Addr.Port()}
	etherType := uint16(EtherTypeIPv4)
	ipLen := IPv4MinLen
	if t.v6 {
		etherType, ipLen = EtherTypeIPv6, IPv6Len
	}
	h := make([]byte, EthernetLen, EthernetLen+VLANTagLen+IPv6Len)
	if vlan != 0 {
		Ethernet(h).Encode(dst.MAC, src.MAC, EtherTypeVLAN)
		h = AppendVLAN(h, vlan, etherType)
	} else {
		Ethernet(h).Encode(dst.MAC, src.MAC, etherType)
	}
	t.ipOff = len(h)
	h = h[:t.ipOff+ipLen]
	if t.v6 {
		IPv6(h[t.ipOff:]).Encode(&IPv6Fields{NextHeader: ProtocolTCP, HopLimit: 64, Src: sa, Dst: da})
	} else {
		IPv4(h[t.ipOff:]).Encode(&IPv4Fields{DontFrag: true, TTL: 64, Protocol: ProtocolTCP, Src: sa, Dst: da})
	}
	t.hdr = h
	t.pseudo = PseudoHeaderSum(sa, da, ProtocolTCP)
	return t
}

// HeaderLen is the octets before the TCP header: link and IP headers.
func (t *Template) HeaderLen() int { return len(t.hdr) }

// Segment are the per-segment values of a frame.
type Segment struct {
	Seq, Ack uint32
	Flags    uint8
	Window   uint16
	// MSS, when not 0, is announced in an MSS option on SYN segments.
	MSS uint16
	// Timestamps adds the Timestamps option (RFC 7323) with TSVal, TSEcr.
	Timestamps   bool
	TSVal, TSEcr uint32
	// IPID is the IPv4 Identification (unused for IPv6).
	IPID uint16
}

// Append appends the frame of one TCP segment carrying payload to b: the
// template's headers with their lengths set, the TCP header from s with
// its options, the payload; the IPv4 header checksum and the TCP checksum
// computed (RFC 791 §3.1, RFC 9293 §3.1, RFC 8200 §8.1).
func (t *Template) Append(b []byte, s *Segment, payload []byte) []byte {
	start := len(b)
	b = append(b, t.hdr...)
	optLen := 0
	if s.Flags&TCPFlagSYN != 0 && s.MSS != 0 {
		optLen = TCPOptionMSSLen
	}
	if s.Timestamps {
		optLen += TCPTimestampsLen
	}
	tcpLen := TCPMinLen + optLen + len(payload)
	if ip := b[start+t.ipOff:]; t.v6 {
		IPv6(ip).SetPayloadLength(uint16(tcpLen))
	} else {
		v4 := IPv4(ip)
		v4.SetTotalLength(uint16(IPv4MinLen + tcpLen))
		v4.SetID(s.IPID)
		v4.SetChecksum(Checksum(v4[:IPv4MinLen])) // the template's field is 0
	}
	tcpOff := len(b)
	b = append(b, make([]byte, TCPMinLen)...)
	TCP(b[tcpOff:]).Encode(&TCPFields{SrcPort: t.srcPort, DstPort: t.dstPort, Seq: s.Seq, Ack: s.Ack,
		DataOffset: TCPMinLen + optLen, Flags: s.Flags, Window: s.Window})
	if s.Flags&TCPFlagSYN != 0 && s.MSS != 0 {
		b = AppendMSS(b, s.MSS)
	}
	if s.Timestamps {
		b = AppendTimestamps(b, s.TSVal, s.TSEcr)
	}
	b = append(b, payload...)
	seg := TCP(b[tcpOff:])
	seg.SetChecksum(ChecksumFold(ChecksumAdd(t.pseudo+uint64(tcpLen), seg)))
	return b
}
