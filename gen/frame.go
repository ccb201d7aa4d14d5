package gen

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/iwkit/iwkit/internal/frame"
)

// TCP flag bits (RFC 9293 §3.1).
const (
	flagFIN = frame.TCPFlagFIN
	flagSYN = frame.TCPFlagSYN
	flagRST = frame.TCPFlagRST
	flagPSH = frame.TCPFlagPSH
	flagACK = frame.TCPFlagACK
)

const (
	tsOptLen  = frame.TCPTimestampsLen // NOP, NOP, Timestamps(10) (RFC 7323 App. A layout)
	tcpWindow = 65535
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

// frameTemplate builds the frames of one direction (frame.Template) and
// numbers their IPv4 Identification.
type frameTemplate struct {
	t       *frame.Template
	ipID    uint16
	tcpOpts int // octets of TCP options on non-SYN segments
}

func newTemplate(src, dst endpoint, vlan uint16, ts bool, ipID uint16) *frameTemplate {
	t := &frameTemplate{ipID: ipID, t: frame.NewTemplate(
		frame.Endpoint{MAC: src.mac, Addr: netip.AddrPortFrom(src.ip, src.port)},
		frame.Endpoint{MAC: dst.mac, Addr: netip.AddrPortFrom(dst.ip, dst.port)}, vlan)}
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

// build appends the whole frame to b.
func (t *frameTemplate) build(b []byte, f *tcpFields, payload []byte) []byte {
	s := frame.Segment{Seq: f.seq, Ack: f.ack, Flags: f.flags, Window: tcpWindow, MSS: f.mss,
		Timestamps: f.ts, TSVal: f.tsVal, TSEcr: f.tsEcr, IPID: t.ipID}
	t.ipID++
	return t.t.Append(b, &s, payload)
}

// headerLen is the frame octets before the TCP payload of a non-SYN segment.
func (t *frameTemplate) headerLen() int { return t.t.HeaderLen() + frame.TCPMinLen + t.tcpOpts }
