package tui

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/reassembly"
	"github.com/iwkit/iwkit/render"
)

// Detail is one row decoded again from its frames: the PDU as on the wire
// and the lines of its tree, each with the wire octets it names.
type Detail struct {
	Row   Row
	Wire  []byte // the PDU's octets on the wire, markers included
	PDU   decode.PDU
	Lines []Line
	Err   error
}

// Line is one line of the detail tree: a node of render's tree (its
// octets in Detail.Wire, the frame it links to, its severity) and the
// text the pane shows for it.
type Line struct {
	render.Node
	Text string
}

// loader decodes rows again from the frame store; it keeps its buffers.
type loader struct {
	ix *Index
	// run runs the pipeline as the index did over src (Session.rerun);
	// the ULP layer is decoded again with it.
	run func(src analyze.Source, c analyze.Consumer) error
	// async, when set, hands a function to the screen's goroutine (after
	// a replay on another); nil: replays run in Load.
	async     func(func())
	replaying bool
	ulp       *ulpCache
	nodes     []render.Node
	buf       []byte
	wire      []byte
	have      []bool
	scr       []byte
	mk        []decode.MarkerAt
	tcp       render.TCPHeader // gather's: the last segment of the PDU's octets
}

// Load decodes row i: it reads frames First..Last, keeps the TCP payload
// of the row's direction, cuts it to [Seq, End) and decodes it with the
// connection's parameters (markers, CRC) as the pipeline did.
func (l *loader) Load(i int) *Detail {
	ix := l.ix
	r := ix.Row(i)
	d := &Detail{Row: r}
	if r.Kind == RowTCP {
		return l.loadTCP(r) // tcp.go
	}
	if r.Kind == RowFinding {
		d.Lines = append(l.findingLines(ix.Finding(int(r.Aux))), ix.commentLines(int(r.First), int(r.Last))...)
		return d
	}
	c := ix.Conn(int(r.Conn))
	if c == nil {
		d.Err = fmt.Errorf("connection %d unknown", r.Conn)
		return d
	}
	if err := l.gather(c, &r); err != nil {
		d.Err = err
		return d
	}
	d.Wire = append([]byte(nil), l.wire...)
	l.decode(d, c)
	in := render.TreeInput{PDU: &d.PDU, Seq: r.Seq, Wire: len(d.Wire), Missing: int(r.End-r.Seq) - len(d.Wire), Err: d.Err}
	if l.tcp.Frame > 0 {
		in.TCP = &l.tcp // the segment of the PDU's last octet
	}
	if ix.HasULP(i) {
		in.ULP, in.ULPNote = l.ulpMessage(c, i, &r)
		in.Opened = ix.openedBy(c.ID, int(r.Last)) // commands.go
	}
	d.Lines = l.lines(d, c, &in)
	return d
}

// gather fills l.wire with the octets [Seq, End) of the row's direction.
func (l *loader) gather(c *ConnInfo, r *Row) error {
	n := int(r.End - r.Seq)
	l.wire = append(l.wire[:0], make([]byte, n)...)
	l.have = append(l.have[:0], make([]bool, n)...)
	src, dst := c.Addr[r.Dir], c.Addr[1-r.Dir]
	var f pcap.Frame
	var p pcap.Packet
	var err error
	got := 0
	l.tcp = render.TCPHeader{}
	for fr := int(r.First); fr <= int(r.Last); fr++ {
		if l.buf, err = l.ix.store.read(fr, &f, l.buf); err != nil {
			return err
		}
		if pcap.DecodeTCP(f.LinkType, f.Data, &p) != nil {
			continue
		}
		if p.Src != src.Addr() || p.SrcPort != src.Port() || p.Dst != dst.Addr() || p.DstPort != dst.Port() {
			continue
		}
		if int32(p.Seq+uint32(len(p.Payload))-r.Seq) > 0 && int32(r.End-p.Seq) > 0 {
			l.tcp = tcpHeader(fr, &p) // holds octets of the PDU
		}
		// The part of the segment inside [Seq, End), modulo 2^32.
		for k := range p.Payload {
			o := int(p.Seq + uint32(k) - r.Seq)
			if o >= 0 && o < n && !l.have[o] && uint32(o) < r.End-r.Seq {
				l.wire[o], l.have[o] = p.Payload[k], true
				got++
			}
		}
	}
	// A partial FPDU: keep the captured prefix.
	k := 0
	for k < n && l.have[k] {
		k++
	}
	l.wire = l.wire[:k]
	if k == 0 {
		return fmt.Errorf("frames %d-%d hold none of the PDU's octets", r.First, r.Last)
	}
	return nil
}

// decode decodes l.wire as the framer did (reassembly's emitFPDU).
func (l *loader) decode(d *Detail, c *ConnInfo) {
	p := &d.PDU
	w := d.Wire
	if d.Row.Kind == RowMPA {
		p.IsMPAFrame = true
		if _, err := decode.ParseMPAFrame(w, &p.MPA); err != nil {
			d.Err = err
		}
		return
	}
	prm := &c.Params[d.Row.Dir]
	partial := len(w) < int(d.Row.End-d.Row.Seq)
	if prm.Markers {
		if partial {
			var lb []byte
			lb, l.mk = decode.StripMarkers(l.scr[:0], l.mk[:0], w, d.Row.Seq, prm.S0)
			p.Markers = append([]decode.MarkerAt(nil), l.mk...)
			l.partial(p, lb)
			return
		}
		_, crc, marks, err := decode.ParseFPDUWithMarkers(w, d.Row.Seq, prm.S0, nil, &p.FPDU, nil)
		if err != nil {
			d.Err = err
			return
		}
		p.Markers, p.ComputedCRC = marks, crc
	} else {
		if partial {
			l.partial(p, w)
			return
		}
		if _, err := decode.ParseFPDU(w, &p.FPDU); err != nil {
			d.Err = err
			return
		}
		// As the framer: without markers, the CRC32c is computed only
		// when CRCs are in use (with markers, removing them computes it).
		if prm.CRC {
			p.ComputedCRC = p.FPDU.ComputedCRC()
		}
	}
	switch {
	case !prm.CRC && prm.CRCSource != reassembly.SourceUnknown:
		p.CRCStatus = decode.CRCNotUsed
	case !prm.CRC:
		p.CRCStatus = decode.CRCUnknown
	case p.ComputedCRC == p.FPDU.CRC:
		p.CRCStatus = decode.CRCGood
	default:
		p.CRCStatus = decode.CRCBad
	}
	p.SegErr = decode.ParseSegment(p.FPDU.ULPDU, &p.Seg)
}

// partial decodes the captured prefix lb (markers removed) of an FPDU.
func (l *loader) partial(p *decode.PDU, lb []byte) {
	if len(lb) >= decode.ULPDULenLen {
		n := int(binary.BigEndian.Uint16(lb))
		p.FPDU.ULPDULength = uint16(n)
		u := append([]byte(nil), lb[decode.ULPDULenLen:min(len(lb), decode.ULPDULenLen+n)]...)
		p.FPDU.ULPDU = u
		p.SegErr = decode.ParseSegment(u, &p.Seg)
	}
	p.CRCStatus = decode.CRCUnknown
}

// lines builds the tree: the connection and frames, then render's tree
// of the PDU (every field the PDU carries as iwdump -V names them, under a
// line per protocol, its framing, the storage-protocol message it
// completes and the findings raised on its frames), with the operation
// the PDU belongs to before the findings.
func (l *loader) lines(d *Detail, c *ConnInfo, in *render.TreeInput) []Line {
	r := &d.Row
	frames := fmt.Sprintf("frame %d", r.Last)
	if r.First != r.Last {
		frames = fmt.Sprintf("frames %d-%d", r.First, r.Last)
	}
	out := []Line{note(0, 0, "%s  conn %d %s  %s > %s  seq %d-%d (%d octets on the wire)", frames, c.ID, c.DirName(r.Dir), c.Addr[r.Dir], c.Addr[1-r.Dir], r.Seq, r.End, r.End-r.Seq)}
	out = append(out, l.ix.commentLines(int(r.First), int(r.Last))...) // pcapng packet comments
	// Findings raised on this PDU's frames.
	ix := l.ix
	ix.mu.RLock()
	for _, f := range ix.findings {
		if f.Conn == int(r.Conn) && int(r.First) <= f.Frame && f.Frame <= int(r.Last) {
			tf := render.TreeFinding{Severity: f.Severity, Code: f.Code, Message: f.Message}
			if len(f.Frames) > 1 {
				tf.Frame = f.Frames[1]
			}
			in.Findings = append(in.Findings, tf)
		}
	}
	ix.mu.RUnlock()
	l.nodes = render.AppendNodes(l.nodes[:0], in)
	tree := l.nodes[:len(l.nodes)-len(in.Findings)] // the findings go last
	var b []byte
	add := func(nodes []render.Node) {
		for _, n := range nodes {
			b = b[:0]
			if n.Kind == render.NodeFinding && n.Frame > 0 {
				b = n.AppendFindingHead(b)
				b = fmt.Appendf(b, " [Enter: frame %d]: %s", n.Frame, n.Text)
			} else {
				b = n.AppendText(b)
			}
			out = append(out, Line{Node: n, Text: string(b)})
		}
	}
	add(tree)
	// The operation the PDU belongs to.
	if o, ok := l.ix.OpOf(r); ok {
		t := fmt.Sprintf("operation: %s of %d octets, request frame %d", o.Opcode, o.Length, o.RequestFrame)
		if o.ResponseFirst > 0 {
			t += fmt.Sprintf(", response frames %d-%d", o.ResponseFirst, o.RespLast)
		}
		if o.Latency > 0 {
			t += fmt.Sprintf(", latency %v", o.Latency)
		}
		t += fmt.Sprintf(", %s [Enter: the request]", o.Status)
		out = append(out, note(0, o.RequestFrame, "%s", t))
	}
	add(l.nodes[len(tree):])
	return out
}

// note makes a line of the pane's own (a note node), linked to frame.
func note(depth, frame int, format string, a ...any) Line {
	t := fmt.Sprintf(format, a...)
	return Line{Node: render.Node{Kind: render.NodeNote, Depth: depth, Text: t, Frame: frame}, Text: t}
}

func (l *loader) findingLines(f Finding) []Line {
	out := []Line{
		note(0, 0, "finding %s (%s)", f.Code, f.Severity),
		note(1, 0, "%s", f.Message),
		note(1, f.Frame, "frame %d, connection %d", f.Frame, f.Conn),
	}
	out[0].Sev, out[0].HasSev = f.Severity, true
	for i, fr := range f.Frames {
		what := "raised at"
		if i > 0 {
			what = "names"
		}
		out = append(out, note(1, fr, "%s frame %d  [Enter: go there]", what, fr))
	}
	return out
}

// LineAt returns the tree line whose octets hold wire offset off: the
// narrowest one (a bit field over its octet), -1 if none.
func (d *Detail) LineAt(off int) int {
	best := -1
	for i, ln := range d.Lines {
		if ln.Len > 0 && ln.Off <= off && off < ln.Off+ln.Len {
			if best < 0 || ln.Len < d.Lines[best].Len {
				best = i
			}
		}
	}
	return best
}

func sortSTags(s []STagUse) {
	sort.Slice(s, func(i, j int) bool {
		if s[i].Conn != s[j].Conn {
			return s[i].Conn < s[j].Conn
		}
		if s[i].FirstFrame != s[j].FirstFrame {
			return s[i].FirstFrame < s[j].FirstFrame
		}
		if s[i].STag != s[j].STag {
			return s[i].STag < s[j].STag
		}
		return s[i].Owner < s[j].Owner
	})
}
