package tui

import (
	"fmt"
	"strconv"

	"github.com/gdamore/tcell/v2"
	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/render"
)

// The TCP layer (T): rows for the TCP segments the reassembler reports
// (analyze.KindSegment: SYN, FIN, RST, bare ACKs, retransmissions, out of
// order and late segments), interleaved with the PDU rows where the
// pipeline handed them out. The index keeps them apart from the PDU and
// finding rows (Index.tcp), so a row number of those stays what the
// pipeline's record order makes it; a TCP row's index number is
// tcpBase + its place among the TCP rows.

// RowTCP is a TCP segment row (Index.tcp).
const RowTCP uint8 = 16

// tcpBase is the index number of the first TCP row.
const tcpBase = 1 << 30 // sel holds int32: a billion PDU rows, as many TCP rows

// TCP row facts, in Row.Flags (what the reassembler said of the segment).
const (
	TCPRetrans uint8 = 1 << iota // all its payload was received before
	TCPOverlap                   // part of it was
	TCPOutOfOrder
	TCPLate
)

// keptSegment says whether a segment record gets a row: every segment of
// a connection taken for iWARP, and the SYN, FIN and RST of any (the
// handshake comes before the MPA frames that make it iWARP). The indexer
// and a filter pass decide alike from the record alone.
func keptSegment(r *analyze.Record) bool {
	return r.Kind == analyze.KindSegment && r.Conn != nil &&
		(r.Conn.IWARP || r.Seg.Flags&(pcap.TCPSyn|pcap.TCPFin|pcap.TCPRst) != 0)
}

// segment indexes a segment record (the caller holds ix.mu).
func (x *indexer) segment(r *analyze.Record) {
	ix := x.ix
	var row Row
	if b := r.Prepared; b != nil { // the shard made it (rowPreparer)
		analyze.ReadValue(&row, b)
	} else {
		row = makeSegmentRow(r)
	}
	row.Conn = uint32(r.Conn.ID)
	row.Aux = uint32(ix.rows.Len()) // the PDU and finding rows before it
	ix.tcp.Append(row)
}

// makeSegmentRow is a segment record's row but for its connection's
// number and Aux, which only the indexer knows.
func makeSegmentRow(r *analyze.Record) Row {
	s := &r.Seg
	row := Row{Rel: int64(r.Rel), First: uint32(s.Frame), Last: uint32(s.Frame), Seq: s.Seq, End: s.Seq + uint32(s.Len),
		Dir: uint8(s.Dir), Kind: RowTCP, Op: s.Flags, ULen: s.Window, Queue: QueueOther}
	switch {
	case s.Retrans >= s.Len && s.Len > 0:
		row.Flags |= TCPRetrans
	case s.Retrans > 0:
		row.Flags |= TCPOverlap
	}
	if s.OutOfOrder {
		row.Flags |= TCPOutOfOrder
	}
	if s.Late {
		row.Flags |= TCPLate
	}
	return row
}

// TCPLen is the number of TCP rows indexed so far.
func (ix *Index) TCPLen() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.tcp.Len()
}

// tcpRow returns index row i >= tcpBase (the caller holds ix.mu).
func (ix *Index) tcpRow(i int) Row { return *ix.tcp.At(i - tcpBase) }

// tcpFlagNames are the TCP flags in the order tcpdump prints them.
var tcpFlagNames = []struct {
	bit  uint8
	name string
}{{pcap.TCPSyn, "SYN"}, {pcap.TCPFin, "FIN"}, {pcap.TCPRst, "RST"}, {pcap.TCPPsh, "PSH"}, {pcap.TCPAck, "ACK"}, {pcap.TCPUrg, "URG"}}

func appendTCPFlags(b []byte, f uint8) []byte {
	b = append(b, '[')
	n := 0
	for _, fl := range tcpFlagNames {
		if f&fl.bit != 0 {
			if n > 0 {
				b = append(b, ", "...)
			}
			b = append(b, fl.name...)
			n++
		}
	}
	return append(b, ']')
}

// appendTCPSummary is a TCP row's summary: "TCP [SYN, ACK] seq 1 win
// 512 len 0", then what the reassembler said of it.
func appendTCPSummary(b []byte, r *Row) []byte {
	b = appendTCPFlags(append(b, "TCP "...), r.Op)
	b = strconv.AppendUint(append(b, " seq "...), uint64(r.Seq), 10)
	b = strconv.AppendUint(append(b, " win "...), uint64(r.ULen), 10)
	b = strconv.AppendUint(append(b, " len "...), uint64(r.End-r.Seq), 10)
	return appendTCPFacts(b, r.Flags)
}

func appendTCPFacts(b []byte, f uint8) []byte {
	switch {
	case f&TCPRetrans != 0:
		b = append(b, " retransmission"...)
	case f&TCPOverlap != 0:
		b = append(b, " overlaps data received"...)
	}
	if f&TCPOutOfOrder != 0 {
		b = append(b, " out of order (a hole before it)"...)
	}
	if f&TCPLate != 0 {
		b = append(b, " late (fills a hole)"...)
	}
	return b
}

// tcpColor colours a TCP row: a RST or a retransmission, out-of-order or
// late segment yellow (a warning's), the rest grey.
func tcpColor(r *Row) tcell.Color {
	if r.Op&pcap.TCPRst != 0 || r.Flags != 0 {
		return tcell.ColorOlive
	}
	return tcell.ColorGray
}

// tcpHeader is the TCP header of a frame's segment as render's tree
// shows it.
func tcpHeader(frame int, p *pcap.Packet) render.TCPHeader {
	return render.TCPHeader{Frame: frame, SrcPort: p.SrcPort, DstPort: p.DstPort, Seq: p.Seq, Ack: p.Ack, Flags: p.Flags, Window: p.Window, Len: max(p.PayloadLen, len(p.Payload))}
}

// loadTCP is the detail of a TCP row: its frame read again, the TCP line
// of render's tree, and what the reassembler said of the segment; the
// octets are the whole frame's.
func (l *loader) loadTCP(r Row) *Detail {
	d := &Detail{Row: r}
	var f pcap.Frame
	var p pcap.Packet
	var err error
	if l.buf, err = l.ix.store.read(int(r.Last), &f, l.buf); err != nil {
		d.Err = err
		d.Lines = []Line{note(0, 0, "frame %d: %v", r.Last, err)}
		return d
	}
	if err := pcap.DecodeTCP(f.LinkType, f.Data, &p); err != nil {
		d.Err = err
		d.Lines = []Line{note(0, 0, "frame %d: %v", r.Last, err)}
		return d
	}
	d.Wire = append([]byte(nil), f.Data...)
	c := l.ix.Conn(int(r.Conn))
	head := fmt.Sprintf("frame %d  conn %d  %s:%d > %s:%d", r.Last, r.Conn, p.Src, p.SrcPort, p.Dst, p.DstPort)
	if c != nil {
		head = fmt.Sprintf("frame %d  conn %d %s  %s > %s", r.Last, r.Conn, c.DirName(r.Dir), c.Addr[r.Dir], c.Addr[1-r.Dir])
	}
	d.Lines = append(d.Lines, note(0, 0, "%s", head))
	d.Lines = append(d.Lines, l.ix.commentLines(int(r.First), int(r.Last))...)
	h := tcpHeader(int(r.Last), &p)
	for _, n := range render.AppendTCP(nil, &h) {
		d.Lines = append(d.Lines, Line{Node: n, Text: string(n.AppendText(nil))})
	}
	if r.Flags != 0 {
		d.Lines = append(d.Lines, note(1, 0, "reassembly:%s", appendTCPFacts(nil, r.Flags)))
	}
	return d
}
