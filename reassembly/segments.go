package reassembly

import (
	"time"

	"github.com/iwkit/iwkit/pcap"
)

// SegmentEvent is a TCP segment worth a line of its own beside the PDUs
// (Config.Segments): one that opens or closes a connection (SYN, FIN,
// RST, RFC 9293 §3.5), carries no data (a bare ACK, a window update), or
// whose data is not new or not in order: octets received before (a
// retransmission), octets beyond a hole (out of order: a segment before
// it is missing), or octets that fill a hole late.
// In-order data segments are not reported: their octets come as PDUs.
type SegmentEvent struct {
	Dir   Dir
	Frame int
	Time  time.Time
	// The TCP header (RFC 9293 §3.1): Flags are pcap.TCPFin... .
	Seq, Ack uint32
	Flags    uint8
	Window   uint16
	// Len is the payload octets the IP header announces.
	Len int
	// Retrans is the octets of the payload this direction had received
	// before (all of Len: a retransmission; fewer: an overlap).
	Retrans int
	// OutOfOrder: the payload starts beyond the next octet expected, a
	// hole before it (it is buffered until the hole fills, or reported as
	// a gap).
	OutOfOrder bool
	// Late: the payload fills (the start of) a hole that later octets
	// were received beyond: a segment reordered, or retransmitted after a
	// loss the capture saw (Wireshark calls both retransmissions).
	Late bool
}

// SegmentHandler hears of SegmentEvents. A Handler that implements it
// and an Assembler with Config.Segments set calls Segment for every such
// segment of every flow (the connection need not be iWARP yet: a SYN
// comes before its MPA frames), before the events the segment causes.
type SegmentHandler interface {
	Segment(c *Conn, e *SegmentEvent)
}

// segmentEvent reports segment p of direction d, if it is worth it,
// before the stream takes it in (s.next is what it expected).
func (fl *flow) segmentEvent(d Dir, frame int, ts time.Time, p *pcap.Packet) {
	sh := fl.a.sh
	if sh == nil {
		return
	}
	s := &fl.s[d]
	n := max(p.PayloadLen, len(p.Payload))
	e := &fl.a.evSeg
	*e = SegmentEvent{Dir: d, Frame: frame, Time: ts, Seq: p.Seq, Ack: p.Ack, Flags: p.Flags, Window: p.Window, Len: n}
	if n > 0 && s.started && !s.untracked {
		seq := p.Seq
		if p.Flags&pcap.TCPSyn != 0 {
			seq++
		}
		switch rel := int32(seq - s.next); {
		case rel < 0:
			e.Retrans = min(n, int(-int64(rel)))
		case rel > 0:
			e.OutOfOrder = true
		case len(s.ooo) > 0:
			e.Late = true
		}
	}
	if n > 0 && e.Retrans == 0 && !e.OutOfOrder && !e.Late && p.Flags&(pcap.TCPSyn|pcap.TCPFin|pcap.TCPRst) == 0 {
		return // new data in order: its PDUs say it
	}
	sh.Segment(&fl.c, e)
}
