package render

import "strconv"

// TCPHeader is the TCP header of the segment that carried a PDU's last
// octet (or a TCP row's segment), as the detail tree shows it: RFC 9293
// §3.1's fields, and the payload length.
type TCPHeader struct {
	Frame            int
	SrcPort, DstPort uint16
	Seq, Ack         uint32
	Flags            uint8 // FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10, URG 0x20
	Window           uint16
	Len              int
}

// tcpFlags name the flag bits in tcpdump's order.
var tcpFlags = []struct {
	bit  uint8
	name string
}{{0x02, "SYN"}, {0x01, "FIN"}, {0x04, "RST"}, {0x08, "PSH"}, {0x10, "ACK"}, {0x20, "URG"}}

// AppendTCP appends the TCP line of the tree: NodeTCP, whose text is
// "TCP frame 9: 7170 > 55620 seq 1 ack 2 [PSH, ACK] win 512 len 40".
func AppendTCP(dst []Node, h *TCPHeader) []Node {
	return append(dst, Node{Kind: NodeTCP, Frame: h.Frame, tcp: *h})
}

// appendTCPText writes a NodeTCP's line.
func (n *Node) appendTCPText(b []byte) []byte {
	h := &n.tcp
	u := func(b []byte, x uint64) []byte { return strconv.AppendUint(b, x, 10) }
	b = u(append(b, "TCP frame "...), uint64(h.Frame))
	b = u(append(b, ": "...), uint64(h.SrcPort))
	b = u(append(b, " > "...), uint64(h.DstPort))
	b = u(append(b, " seq "...), uint64(h.Seq))
	if h.Flags&0x10 != 0 {
		b = u(append(b, " ack "...), uint64(h.Ack))
	}
	b = append(b, " ["...)
	k := 0
	for _, f := range tcpFlags {
		if h.Flags&f.bit != 0 {
			if k > 0 {
				b = append(b, ", "...)
			}
			b = append(b, f.name...)
			k++
		}
	}
	b = u(append(b, "] win "...), uint64(h.Window))
	return u(append(b, " len "...), uint64(h.Len))
}
