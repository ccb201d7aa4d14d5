package tui

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/reassembly"
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

// Line is one line of the detail tree. Off/Len locate its octets in
// Detail.Wire (Len 0: none); Field is the field-table entry, if any.
type Line struct {
	Depth    int
	Text     string
	Desc     string // the field's description (ULP fields)
	Field    *decode.Field
	Off, Len int
	Frame    int // a frame the line names (Enter jumps there), 0 if none
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
	buf       []byte
	wire      []byte
	have      []bool
	scr       []byte
	mk        []decode.MarkerAt
}

// Load decodes row i: it reads frames First..Last, keeps the TCP payload
// of the row's direction, cuts it to [Seq, End) and decodes it with the
// connection's parameters (markers, CRC) as the pipeline did.
func (l *loader) Load(i int) *Detail {
	ix := l.ix
	r := ix.Row(i)
	d := &Detail{Row: r}
	if r.Kind == RowFinding {
		d.Lines = l.findingLines(ix.Finding(int(r.Aux)))
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
	var u []Line
	if ix.HasULP(i) {
		u = l.ulpLines(c, i, &r)
	}
	d.Lines = l.lines(d, c, u)
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
		p.ComputedCRC = p.FPDU.ComputedCRC()
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

// wireOff maps an offset in the marker-free PDU to one in the wire octets:
// every marker at or before it on the wire shifts it by 4.
func wireOff(p *decode.PDU, seq uint32, off int) int {
	for _, m := range p.Markers {
		if int(m.Pos-seq) <= off {
			off += decode.MarkerLen
		}
	}
	return off
}

// lines builds the tree: the connection and frames, every field the PDU
// carries (as iwdump -V names them) under a line per protocol, its
// markers, the CRC verdict, the storage-protocol message it completes
// (ulpLines, iwdump -V's lines) and the findings raised on it.
func (l *loader) lines(d *Detail, c *ConnInfo, ulpLines []Line) []Line {
	r := &d.Row
	var out []Line
	add := func(depth int, f *decode.Field, off, n int, format string, a ...any) {
		out = append(out, Line{Depth: depth, Text: fmt.Sprintf(format, a...), Field: f, Off: off, Len: n})
	}
	frames := fmt.Sprintf("frame %d", r.Last)
	if r.First != r.Last {
		frames = fmt.Sprintf("frames %d-%d", r.First, r.Last)
	}
	add(0, nil, 0, 0, "%s  conn %d %s  %s > %s  seq %d-%d (%d octets on the wire)", frames, c.ID, c.DirName(r.Dir), c.Addr[r.Dir], c.Addr[1-r.Dir], r.Seq, r.End, r.End-r.Seq)
	if d.Err != nil {
		add(0, nil, 0, 0, "decode error: %v", d.Err)
		return out
	}
	p := &d.PDU
	m := decode.Present(p)
	fields := decode.Fields()
	var b []byte
	section := ""
	for i := range fields {
		f := &fields[i]
		v, ok := f.GetIn(p, m)
		if !ok || f.Name == "data" {
			continue
		}
		b = append(b[:0], f.Name...)
		b = append(b, " = "...)
		b = f.AppendValue(b, v)
		off, n, sok := f.Span(p)
		if sok {
			w := wireOff(p, r.Seq, off)
			n = min(n, len(d.Wire)-w)
			if n < 0 {
				n = 0
			}
			off = w
		} else {
			off, n = 0, 0
		}
		out = appendSectioned(out, &section, Line{Depth: strings.Count(f.Name, "."), Text: string(b), Field: f, Off: off, Len: n})
	}
	if !p.IsMPAFrame {
		add(0, nil, 0, 0, "FPDU framing")
		if p.SegErr != nil {
			add(1, nil, 0, 0, "segment error: %v", p.SegErr)
		}
		if len(d.Wire) < int(r.End-r.Seq) {
			add(1, nil, 0, 0, "partial FPDU: %d of %d octets captured", len(d.Wire), r.End-r.Seq)
		}
		for _, mk := range p.Markers {
			o := int(mk.Pos - r.Seq)
			add(1, nil, o, decode.MarkerLen, "marker at seq %d: FPDUPTR %d", mk.Pos, mk.Marker.FPDUPTR)
		}
		switch p.CRCStatus {
		case decode.CRCGood:
			add(1, nil, 0, 0, "CRC good (0x%08x)", p.ComputedCRC)
		case decode.CRCBad:
			add(1, nil, 0, 0, "CRC BAD: field 0x%08x, computed 0x%08x", p.FPDU.CRC, p.ComputedCRC)
		default:
			add(1, nil, 0, 0, "CRC %s", p.CRCStatus)
		}
		if f, ok := decode.FieldByName("data"); ok {
			if off, n, sok := f.Span(p); sok {
				w := wireOff(p, r.Seq, off)
				out = append(out, Line{Depth: 1, Text: fmt.Sprintf("data: %d octets", n), Field: f, Off: w, Len: max(0, min(n, len(d.Wire)-w))})
			}
		}
	}
	start := len(out)
	for _, ln := range ulpLines {
		out = appendSectioned(out, &section, ln)
	}
	spanSections(out)
	// The storage protocols' lines light up the octets their message came
	// in: the PDU's payload (Private Data of an MPA frame).
	for _, pay := range out[:start] {
		if f := pay.Field; f != nil && (f.Name == "data" || f.Name == "mpa.private_data") {
			for i := start; i < len(out); i++ {
				if out[i].Depth == 0 {
					out[i].Off, out[i].Len = pay.Off, pay.Len
				}
			}
		}
	}
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
		out = append(out, Line{Text: t, Frame: o.RequestFrame})
	}
	// Findings raised on this PDU's frames.
	ix := l.ix
	ix.mu.RLock()
	var fs []Finding
	for _, f := range ix.findings {
		if f.Conn == int(r.Conn) && int(r.First) <= f.Frame && f.Frame <= int(r.Last) {
			fs = append(fs, f)
		}
	}
	ix.mu.RUnlock()
	for _, f := range fs {
		ln := Line{Depth: 0, Text: fmt.Sprintf("%s %s: %s", f.Severity, f.Code, f.Message)}
		if len(f.Frames) > 1 {
			ln.Frame = f.Frames[1]
			ln.Text = fmt.Sprintf("%s %s [Enter: frame %d]: %s", f.Severity, f.Code, f.Frames[1], f.Message)
		}
		out = append(out, ln)
	}
	return out
}

func (l *loader) findingLines(f Finding) []Line {
	out := []Line{
		{Text: fmt.Sprintf("finding %s (%s)", f.Code, f.Severity)},
		{Depth: 1, Text: f.Message},
		{Depth: 1, Text: fmt.Sprintf("frame %d, connection %d", f.Frame, f.Conn), Frame: f.Frame},
	}
	for i, fr := range f.Frames {
		what := "raised at"
		if i > 0 {
			what = "names"
		}
		out = append(out, Line{Depth: 1, Text: fmt.Sprintf("%s frame %d  [Enter: go there]", what, fr), Frame: fr})
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
