package pcap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/internal/frame"
)

// TCP flag bits (RFC 9293 §3.1).
const (
	TCPFin = 0x01
	TCPSyn = 0x02
	TCPRst = 0x04
	TCPPsh = 0x08
	TCPAck = 0x10
	TCPUrg = 0x20
)

// Packet is a TCP segment taken out of a frame. Payload aliases the frame.
type Packet struct {
	Src, Dst         netip.Addr
	SrcPort, DstPort uint16
	Seq, Ack         uint32
	Flags            uint8
	Window           uint16
	MSS              uint16 // MSS option (SYN segments), 0 when absent
	HasTS            bool
	TSVal, TSEcr     uint32 // RFC 7323 timestamps, when HasTS
	VLANs            [2]uint16
	NVLAN            int
	Payload          []byte
	// PayloadLen is the TCP payload length the IP header announces; it is
	// larger than len(Payload) when the capture cut the frame (snaplen).
	PayloadLen int
}

// Truncated reports whether part of the TCP payload was not captured.
func (p *Packet) Truncated() bool { return len(p.Payload) < p.PayloadLen }

// ErrNotTCP says the frame holds no TCP segment (ARP, UDP, an IP fragment
// other than the first, ...). It is not damage: callers skip the frame.
var ErrNotTCP = errors.New("not a TCP segment")

// DecodeError says where a frame that should hold a TCP segment is damaged.
type DecodeError struct {
	Layer  string
	Reason string
}

func (e *DecodeError) Error() string { return e.Layer + ": " + e.Reason }

func short(layer string, need, have int) error {
	return &DecodeError{Layer: layer, Reason: fmt.Sprintf("truncated: need %d octets, have %d", need, have)}
}

// Ethernet types and IP protocol numbers used below.
const (
	etherIPv4  = 0x0800
	etherIPv6  = 0x86DD
	etherVLAN  = 0x8100
	etherQinQ  = 0x88A8
	etherQinQ2 = 0x9100
)

// DecodeTCP parses link, network and TCP headers of one frame into p. It
// handles Ethernet (with up to two VLAN tags), Linux cooked capture v1/v2,
// BSD loopback, and raw IPv4/IPv6; IPv4 options and IPv6 extension headers.
// It does not allocate.
func DecodeTCP(lt layers.LinkType, data []byte, p *Packet) error {
	p.NVLAN = 0
	var ethType uint16
	switch lt {
	case layers.LinkTypeEthernet:
		if len(data) < 14 {
			return short("ethernet", 14, len(data))
		}
		ethType = frame.Ethernet(data).Type()
		data = data[14:]
		for ethType == etherVLAN || ethType == etherQinQ || ethType == etherQinQ2 {
			if len(data) < 4 {
				return short("vlan", 4, len(data))
			}
			if p.NVLAN < len(p.VLANs) {
				p.VLANs[p.NVLAN] = binary.BigEndian.Uint16(data) & 0x0FFF
				p.NVLAN++
			}
			ethType = binary.BigEndian.Uint16(data[2:])
			data = data[4:]
		}
	case layers.LinkTypeLinuxSLL:
		if len(data) < 16 {
			return short("sll", 16, len(data))
		}
		ethType = binary.BigEndian.Uint16(data[14:])
		data = data[16:]
	case layers.LinkTypeLinuxSLL2:
		if len(data) < 20 {
			return short("sll2", 20, len(data))
		}
		ethType = binary.BigEndian.Uint16(data[0:])
		data = data[20:]
	case layers.LinkTypeNull, layers.LinkTypeLoop:
		if len(data) < 4 {
			return short("loopback", 4, len(data))
		}
		data = data[4:]
		ethType = ipVersionType(data)
	case layers.LinkTypeRaw, 12, 14, layers.LinkTypeIPv4, layers.LinkTypeIPv6:
		ethType = ipVersionType(data)
	default:
		return &DecodeError{Layer: "link", Reason: fmt.Sprintf("unsupported link type %d (%s)", int(lt), lt)}
	}
	switch ethType {
	case etherIPv4:
		return decodeIPv4(data, p)
	case etherIPv6:
		return decodeIPv6(data, p)
	}
	return ErrNotTCP
}

func ipVersionType(b []byte) uint16 {
	if len(b) == 0 {
		return 0
	}
	switch b[0] >> 4 {
	case 4:
		return etherIPv4
	case 6:
		return etherIPv6
	}
	return 0
}

func decodeIPv4(b []byte, p *Packet) error {
	if len(b) < 20 {
		return short("ipv4", 20, len(b))
	}
	ip := frame.IPv4(b)
	ihl := ip.HeaderLen()
	if ihl < frame.IPv4MinLen {
		return &DecodeError{Layer: "ipv4", Reason: fmt.Sprintf("header length %d < 20", ihl)}
	}
	if len(b) < ihl {
		return short("ipv4", ihl, len(b))
	}
	total := int(ip.TotalLength())
	if ip.Protocol() != frame.ProtocolTCP || ip.FragmentOffset() != 0 {
		return ErrNotTCP // not TCP, or a non-first fragment
	}
	p.Src, p.Dst = ip.Src(), ip.Dst()
	// total 0 happens with TSO on the capturing host: take what is there.
	if total == 0 {
		total = len(b)
	}
	if total < ihl {
		return &DecodeError{Layer: "ipv4", Reason: fmt.Sprintf("total length %d < header length %d", total, ihl)}
	}
	end := total
	if end > len(b) {
		end = len(b)
	}
	return decodeTCP(b[ihl:end], total-ihl, p)
}

// IPv6 extension headers that may sit between the fixed header and TCP.
const (
	ip6HopByHop = 0
	ip6Routing  = 43
	ip6Fragment = 44
	ip6DestOpts = 60
	ip6Mobility = 135
	ip6NoNext   = 59
)

func decodeIPv6(b []byte, p *Packet) error {
	if len(b) < 40 {
		return short("ipv6", 40, len(b))
	}
	ip := frame.IPv6(b)
	plen, next := int(ip.PayloadLength()), ip.NextHeader()
	p.Src, p.Dst = ip.Src(), ip.Dst()
	if plen == 0 { // jumbogram or TSO: take what is there
		plen = len(b) - 40
	}
	end := 40 + plen
	if end > len(b) {
		end = len(b)
	}
	rest := b[40:end]
	for {
		switch next {
		case frame.ProtocolTCP:
			return decodeTCP(rest, plen, p)
		case ip6HopByHop, ip6Routing, ip6DestOpts, ip6Mobility:
			if len(rest) < 8 {
				return short("ipv6.ext", 8, len(rest))
			}
			l := (int(rest[1]) + 1) * 8
			if len(rest) < l {
				return short("ipv6.ext", l, len(rest))
			}
			next, rest, plen = rest[0], rest[l:], plen-l
		case ip6Fragment:
			if len(rest) < 8 {
				return short("ipv6.frag", 8, len(rest))
			}
			if binary.BigEndian.Uint16(rest[2:])&0xFFF8 != 0 {
				return ErrNotTCP // non-first fragment
			}
			next, rest, plen = rest[0], rest[8:], plen-8
		default:
			return ErrNotTCP
		}
	}
}

func decodeTCP(b []byte, segLen int, p *Packet) error {
	if len(b) < 20 {
		return short("tcp", 20, len(b))
	}
	t := frame.TCP(b)
	p.SrcPort, p.DstPort = t.SrcPort(), t.DstPort()
	p.Seq, p.Ack = t.Seq(), t.Ack()
	off := t.DataOffset()
	p.Flags, p.Window = t.Flags(), t.Window()
	if off < 20 {
		return &DecodeError{Layer: "tcp", Reason: fmt.Sprintf("data offset %d < 20", off)}
	}
	if len(b) < off {
		return short("tcp", off, len(b))
	}
	p.MSS, p.HasTS = 0, false
	parseTCPOptions(b[20:off], p)
	p.Payload = b[off:]
	p.PayloadLen = segLen - off
	if p.PayloadLen < len(p.Payload) {
		// Ethernet padding after a short IP packet is not TCP payload.
		p.Payload = p.Payload[:max(p.PayloadLen, 0)]
	}
	if p.PayloadLen < 0 {
		p.PayloadLen = 0
	}
	return nil
}

// parseTCPOptions reads MSS (kind 2) and timestamps (kind 8); a malformed
// option list ends the scan, as a receiver would ignore it.
func parseTCPOptions(o []byte, p *Packet) {
	for len(o) > 0 {
		switch o[0] {
		case 0:
			return
		case 1:
			o = o[1:]
			continue
		}
		if len(o) < 2 || int(o[1]) < 2 || int(o[1]) > len(o) {
			return
		}
		l := int(o[1])
		switch {
		case o[0] == 2 && l == 4:
			p.MSS = binary.BigEndian.Uint16(o[2:])
		case o[0] == 8 && l == 10:
			p.HasTS = true
			p.TSVal = binary.BigEndian.Uint32(o[2:])
			p.TSEcr = binary.BigEndian.Uint32(o[6:])
		}
		o = o[l:]
	}
}
