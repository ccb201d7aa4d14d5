package gen

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net"
	"net/netip"
	"strconv"
)

// TCP flag bits (RFC 9293 §3.1).
const (
	flagFIN = 0x01
	flagSYN = 0x02
	flagRST = 0x04
	flagPSH = 0x08
	flagACK = 0x10
)

const (
	ethHdrLen  = 14
	vlanLen    = 4
	ipv4HdrLen = 20
	ipv6HdrLen = 40
	tcpHdrLen  = 20
	tsOptLen   = 12 // NOP, NOP, Timestamps(10) (RFC 7323 App. A layout)
	tcpWindow  = 65535
)

// endpoint is one side of a connection on the wire.
type endpoint struct {
	mac  [6]byte
	ip   netip.Addr
	port uint16
}

// parseEndpoint reads "ip:port" or "[ip6]:port"; a missing port gets
// defPort.
func parseEndpoint(s string, defPort uint16) (netip.Addr, uint16, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), ap.Port(), nil
	}
	if a, err := netip.ParseAddr(s); err == nil && defPort != 0 {
		return a.Unmap(), defPort, nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return netip.Addr{}, 0, fmt.Errorf("bad endpoint %q: want ip:port", s)
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, 0, fmt.Errorf("bad address in %q", s)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return netip.Addr{}, 0, fmt.Errorf("bad port in %q", s)
	}
	return a.Unmap(), uint16(p), nil
}

func parseMAC(s string) ([6]byte, error) {
	var m [6]byte
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		return m, fmt.Errorf("bad MAC address %q", s)
	}
	copy(m[:], hw)
	return m, nil
}

// macFor derives a locally administered unicast MAC from an address.
func macFor(a netip.Addr) [6]byte {
	b := a.As16()
	return [6]byte{0x02, 0x1b, b[12], b[13], b[14], b[15]}
}

// frameTemplate holds the fixed link and network header octets of one
// direction; buildFrame fills the per-frame fields.
type frameTemplate struct {
	hdr     []byte // Ethernet (+VLAN) + IP header
	ipOff   int
	v6      bool
	pseudo  uint64 // checksum of the pseudo-header addresses and protocol
	src     endpoint
	dst     endpoint
	ipID    uint16
	tcpOpts int // octets of TCP options on non-SYN segments
}

func newTemplate(src, dst endpoint, vlan uint16, ts bool, ipID uint16) *frameTemplate {
	t := &frameTemplate{src: src, dst: dst, v6: src.ip.Is6(), ipID: ipID}
	h := make([]byte, 0, ethHdrLen+vlanLen+ipv6HdrLen)
	h = append(h, dst.mac[:]...)
	h = append(h, src.mac[:]...)
	if vlan != 0 {
		h = append(h, 0x81, 0x00, byte(vlan>>8), byte(vlan))
	}
	if t.v6 {
		h = append(h, 0x86, 0xdd)
	} else {
		h = append(h, 0x08, 0x00)
	}
	t.ipOff = len(h)
	var sum uint64
	if t.v6 {
		h = append(h, 0x60, 0, 0, 0, 0, 0, 6, 64)
		s, d := src.ip.As16(), dst.ip.As16()
		h = append(h, s[:]...)
		h = append(h, d[:]...)
		sum = csumAdd(csumAdd(0, s[:]), d[:])
	} else {
		h = append(h, 0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 6, 0, 0) // DF, TTL 64, TCP
		s, d := src.ip.As4(), dst.ip.As4()
		h = append(h, s[:]...)
		h = append(h, d[:]...)
		sum = csumAdd(csumAdd(0, s[:]), d[:])
	}
	t.pseudo = sum + 6 // protocol TCP
	t.hdr = h
	if ts {
		t.tcpOpts = tsOptLen
	}
	return t
}

// tcpFields are the per-segment TCP header values.
type tcpFields struct {
	seq, ack     uint32
	flags        uint8
	mss          uint16 // MSS option on SYNs
	ts           bool
	tsVal, tsEcr uint32
}

// build appends the whole frame to b: headers from the template, the TCP
// header from f, then payload; IP and TCP checksums computed (RFC 791,
// RFC 9293 §3.1, RFC 8200 §8.1).
func (t *frameTemplate) build(b []byte, f *tcpFields, payload []byte) []byte {
	start := len(b)
	b = append(b, t.hdr...)
	optLen := 0
	if f.flags&flagSYN != 0 {
		optLen = 4
		if f.ts {
			optLen += tsOptLen
		}
	} else if f.ts {
		optLen = tsOptLen
	}
	tcpLen := tcpHdrLen + optLen + len(payload)
	ip := b[start+t.ipOff:]
	if t.v6 {
		binary.BigEndian.PutUint16(ip[4:], uint16(tcpLen))
	} else {
		binary.BigEndian.PutUint16(ip[2:], uint16(ipv4HdrLen+tcpLen))
		binary.BigEndian.PutUint16(ip[4:], t.ipID)
		t.ipID++
		ip[10], ip[11] = 0, 0
		binary.BigEndian.PutUint16(ip[10:], csumFold(csumAdd(0, ip[:ipv4HdrLen])))
	}
	tcpOff := len(b)
	var h [tcpHdrLen + 4 + tsOptLen]byte
	binary.BigEndian.PutUint16(h[0:], t.src.port)
	binary.BigEndian.PutUint16(h[2:], t.dst.port)
	binary.BigEndian.PutUint32(h[4:], f.seq)
	binary.BigEndian.PutUint32(h[8:], f.ack)
	h[12] = byte((tcpHdrLen + optLen) / 4 << 4)
	h[13] = f.flags
	binary.BigEndian.PutUint16(h[14:], tcpWindow)
	o := h[tcpHdrLen:]
	if f.flags&flagSYN != 0 {
		o[0], o[1] = 2, 4
		binary.BigEndian.PutUint16(o[2:], f.mss)
		o = o[4:]
	}
	if f.ts {
		o[0], o[1], o[2], o[3] = 1, 1, 8, 10
		binary.BigEndian.PutUint32(o[4:], f.tsVal)
		binary.BigEndian.PutUint32(o[8:], f.tsEcr)
	}
	b = append(b, h[:tcpHdrLen+optLen]...)
	b = append(b, payload...)
	sum := t.pseudo + uint64(tcpLen)
	sum = csumAdd(sum, b[tcpOff:])
	binary.BigEndian.PutUint16(b[tcpOff+16:], csumFold(sum))
	return b
}

// headerLen is the frame octets before the TCP payload of a non-SYN segment.
func (t *frameTemplate) headerLen() int { return len(t.hdr) + tcpHdrLen + t.tcpOpts }

// csumAdd adds b to an unfolded one's complement sum (RFC 1071). b must
// start at an even offset of the checksummed data; only the last call may
// pass an odd length.
func csumAdd(sum uint64, b []byte) uint64 {
	var carry uint64
	for len(b) >= 32 {
		sum, carry = bits.Add64(sum, binary.BigEndian.Uint64(b), 0)
		sum, carry = bits.Add64(sum, binary.BigEndian.Uint64(b[8:]), carry)
		sum, carry = bits.Add64(sum, binary.BigEndian.Uint64(b[16:]), carry)
		sum, carry = bits.Add64(sum, binary.BigEndian.Uint64(b[24:]), carry)
		sum += carry
		b = b[32:]
	}
	for len(b) >= 8 {
		sum, carry = bits.Add64(sum, binary.BigEndian.Uint64(b), 0)
		sum += carry
		b = b[8:]
	}
	for len(b) >= 2 {
		sum, carry = bits.Add64(sum, uint64(binary.BigEndian.Uint16(b)), 0)
		sum += carry
		b = b[2:]
	}
	if len(b) == 1 {
		sum, carry = bits.Add64(sum, uint64(b[0])<<8, 0)
		sum += carry
	}
	return sum
}

// csumFold folds a 64-bit sum to the 16-bit one's complement checksum.
func csumFold(sum uint64) uint16 {
	sum = (sum >> 32) + (sum & 0xffffffff)
	sum = (sum >> 32) + (sum & 0xffffffff)
	sum = (sum >> 16) + (sum & 0xffff)
	sum = (sum >> 16) + (sum & 0xffff)
	sum = (sum >> 16) + (sum & 0xffff)
	return ^uint16(sum)
}
