package render

import (
	"strconv"
	"strings"
	"sync"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/ulp"
)

// The detail tree of a PDU: one structured list of nodes, built once
// (AppendNodes), that every face presents: iwdump -V prints its field
// nodes (AppendVerbose), iwtui draws every node (AppendText) and lights up
// a node's octets in its hex pane (Node.Off, Node.Len). Field names,
// values, bases and descriptions come from the field tables (decode's,
// and ulp's for the storage protocols), so a word fixed there shows the
// same in every face.

// NodeKind says what a node of the detail tree is.
type NodeKind uint8

const (
	// NodeNote is a line of text without a field: Text.
	NodeNote NodeKind = iota
	// NodeField is a field of decode's table: Name, Value and Desc are
	// the table's.
	NodeField
	// NodeULPField is a field of the storage protocol's message (ulp's
	// table).
	NodeULPField
	// NodeSection is a protocol's line over its fields: Name is the
	// fields' first name component ("ddp"); its octets are theirs.
	NodeSection
	// NodeFraming is the line over the FPDU's framing: markers, CRC
	// verdict, payload (RFC 5044 §4).
	NodeFraming
	// NodeSegError: the DDP segment could not be decoded (Text says why).
	NodeSegError
	// NodePartial: the FPDU was not captured whole; Value.U octets of Aux
	// were (a gap or the snap length).
	NodePartial
	// NodeMarker is a marker inside the FPDU (RFC 5044 §5): Value.U its
	// FPDUPTR, Aux the TCP sequence number of its first octet.
	NodeMarker
	// NodeCRC is the CRC verdict: Value.U the status (decode.CRCStatus,
	// named in Value.S), Aux the field as on the wire <<32 | the CRC32c
	// computed.
	NodeCRC
	// NodeData is the payload after the headers: Value.U octets; Desc is
	// the "data" field's.
	NodeData
	// NodeDecodeError: the PDU could not be decoded (Text says why).
	NodeDecodeError
	// NodeFinding is a finding raised on the PDU's frames: Sev, Code, its
	// message in Text, and Frame the other frame it names (0 none).
	NodeFinding
	// NodeTCP is the TCP header of the segment holding the PDU's last
	// octet (TreeInput.TCP; tcp.go): first, above the PDU's protocols.
	NodeTCP
)

// Node is one line of the detail tree.
type Node struct {
	Kind  NodeKind
	Depth int // 0 for a top line; a field's: the dots in its name
	// Name is the field's name (NodeField, NodeULPField), or the prefix of
	// a section's fields.
	Name  string
	Value decode.Value
	Aux   uint64 // see the kinds
	Text  string // an error's, a note's or a finding's text
	// Off and Len locate the node's octets in the PDU as on the wire
	// (markers included; what iwdump -x dumps); Len 0: none.
	Off, Len int
	// Frame is a frame the node names (a finding's other frame, a
	// command's request), 0 if none.
	Frame int
	// Sev is the severity of a finding, or Error for a node that reports a
	// fault (CRC bad, decode or segment error); HasSev says it has one.
	Sev    finding.Severity
	HasSev bool
	Code   finding.Code // NodeFinding

	field  *decode.Field
	ufield *ulp.Field
	tcp    TCPHeader // NodeTCP
}

// Desc is the description of the node's field, from its table ("" for
// a node of no field).
func (n *Node) Desc() string {
	switch {
	case n.field != nil:
		return n.field.Desc
	case n.ufield != nil:
		return n.ufield.Desc
	}
	return ""
}

// IsField reports whether the node is a field of a field table: what
// iwdump -V prints.
func (n *Node) IsField() bool { return n.Kind == NodeField || n.Kind == NodeULPField }

// TreeInput is what a detail tree is built from.
type TreeInput struct {
	PDU *decode.PDU
	// Seq is the TCP sequence number of the PDU's first octet on the wire
	// (the markers' positions count from it); Wire is the octets captured,
	// Missing those at its end that were not.
	Seq           uint32
	Wire, Missing int
	// Err says the PDU could not be decoded: the tree says so instead of
	// its fields.
	Err error
	// ULP is the storage-protocol message the PDU completes (nil: none);
	// ULPNote, when set instead, says why the message is not shown.
	ULP     *ulp.Message
	ULPNote string
	// Opened are the commands the PDU's Send opened, as the whole
	// capture knows them (iwtui's index): lines linking to each one's
	// response and to the operations that moved its data (ulptree.go).
	// iwdump -V, in one pass, prints a request before they happen.
	Opened []*ulp.Command
	// Findings are the findings raised on the PDU's frames.
	Findings []TreeFinding
	// TCP, when set, is the header of the segment that carried the PDU's
	// last octet: the tree's first line (iwtui; -V prints fields only).
	TCP *TCPHeader
}

// TreeFinding is a finding as the tree shows it; Frame is another frame it
// names (0: none).
type TreeFinding struct {
	Severity finding.Severity
	Code     finding.Code
	Message  string
	Frame    int
}

// AppendNodes appends the detail tree of in.PDU to dst: every field the
// PDU carries under a line per protocol, the FPDU's framing (segment
// error, partial capture, markers, CRC verdict, payload), the storage
// protocol's message and the findings. It reuses dst's room and
// allocates nothing of its own (the field table's getters may: a
// Terminate's cause is named with fmt; a fault's text is its error's).
func AppendNodes(dst []Node, in *TreeInput) []Node {
	if in.TCP != nil {
		dst = AppendTCP(dst, in.TCP)
	}
	base := len(dst)
	if in.Err != nil {
		dst = append(dst, Node{Kind: NodeDecodeError, Text: in.Err.Error(), Sev: finding.Error, HasSev: true})
		return appendFindings(dst, in.Findings)
	}
	p := in.PDU
	m := decode.Present(p)
	fields := decode.Fields()
	shape := fieldShapes()
	sec := ""
	for i := range fields {
		f := &fields[i]
		if !f.In(m) || f.Name == "data" { // the payload: under the framing
			continue
		}
		sh := &shape[i]
		if sh.sec != sec {
			sec = sh.sec
			dst = append(dst, Node{Kind: NodeSection, Name: sec})
		}
		v, _ := f.GetIn(p, m)
		dst = append(dst, Node{Kind: NodeField, Depth: sh.depth, Name: f.Name, Value: v, field: f})
		if f.Base != decode.BaseNone { // derived fields have no octets
			n := &dst[len(dst)-1]
			n.Off, n.Len = in.span(f)
		}
	}
	pay := -1 // the node of the octets a ULP message came in
	if p.IsMPAFrame {
		for i := base; i < len(dst); i++ {
			if dst[i].Name == "mpa.private_data" {
				pay = i
			}
		}
	} else {
		dst = append(dst, Node{Kind: NodeFraming})
		if p.SegErr != nil {
			dst = append(dst, Node{Kind: NodeSegError, Depth: 1, Text: p.SegErr.Error(), Sev: finding.Error, HasSev: true})
		}
		if in.Missing > 0 {
			dst = append(dst, Node{Kind: NodePartial, Depth: 1, Value: decode.Value{Kind: decode.KindUint, U: uint64(in.Wire)}, Aux: uint64(in.Wire + in.Missing)})
		}
		for _, mk := range p.Markers {
			dst = append(dst, Node{Kind: NodeMarker, Depth: 1, Value: decode.Value{Kind: decode.KindUint, U: uint64(mk.Marker.FPDUPTR)}, Aux: uint64(mk.Pos),
				Off: int(mk.Pos - in.Seq), Len: decode.MarkerLen})
		}
		crc := Node{Kind: NodeCRC, Depth: 1, Value: decode.Value{Kind: decode.KindEnum, U: uint64(p.CRCStatus), S: p.CRCStatus.String()},
			Aux: uint64(p.FPDU.CRC)<<32 | uint64(p.ComputedCRC)}
		crc.HasSev = p.CRCStatus == decode.CRCBad
		crc.Sev = finding.Error
		dst = append(dst, crc)
		if f := dataField; f != nil {
			if _, n, sok := f.Span(p); sok {
				d := Node{Kind: NodeData, Depth: 1, Value: decode.Value{Kind: decode.KindUint, U: uint64(n)}, field: f}
				d.Off, d.Len = in.span(f)
				pay = len(dst)
				dst = append(dst, d)
			}
		}
	}
	start := len(dst)
	if in.ULP != nil {
		dst = appendULPNodes(dst, &sec, in.ULP)
	} else if in.ULPNote != "" {
		dst = append(dst, Node{Kind: NodeNote, Text: in.ULPNote})
	}
	dst = appendOpened(dst, in.Opened)
	spanSections(dst[base:])
	// The storage protocol's lines light up the octets its message came
	// in: the FPDU's payload, or an MPA frame's Private Data.
	if pay >= 0 {
		for i := start; i < len(dst); i++ {
			if dst[i].Depth == 0 {
				dst[i].Off, dst[i].Len = dst[pay].Off, dst[pay].Len
			}
		}
	}
	return appendFindings(dst, in.Findings)
}

// shape is what AppendNodes needs of a field's name: its depth (the dots
// in it) and its protocol (the first component).
type shape struct {
	depth int
	sec   string
}

// fieldShapes returns the shapes of decode's fields, by index, worked out
// once (the table is fixed).
var fieldShapes = sync.OnceValue(func() []shape {
	fs := decode.Fields()
	out := make([]shape, len(fs))
	for i := range fs {
		sec, _, _ := strings.Cut(fs[i].Name, ".")
		out[i] = shape{strings.Count(fs[i].Name, "."), sec}
	}
	return out
})

// dataField is decode's "data": the payload after the headers.
var dataField, _ = decode.FieldByName("data")

// span returns where field f's octets are in the wire octets: decode's
// span (marker-free) shifted past every marker before it, cut to what was
// captured.
func (in *TreeInput) span(f *decode.Field) (off, n int) {
	off, n, ok := f.Span(in.PDU)
	if !ok {
		return 0, 0
	}
	for _, m := range in.PDU.Markers {
		if int(m.Pos-in.Seq) <= off {
			off += decode.MarkerLen
		}
	}
	return off, max(0, min(n, in.Wire-off))
}

// appendSection appends the line of a field's protocol before the first
// of its fields (*sec is the protocol of the last one).
func appendSection(dst []Node, sec *string, name string) []Node {
	if s, _, _ := strings.Cut(name, "."); s != *sec {
		*sec = s
		dst = append(dst, Node{Kind: NodeSection, Name: s})
	}
	return dst
}

// spanSections gives each top line that has no octets those of the lines
// under it, so that selecting "DDP" lights up the DDP header.
func spanSections(nodes []Node) {
	for i := range nodes {
		if nodes[i].Depth != 0 || nodes[i].Len > 0 {
			continue
		}
		lo, hi := -1, -1
		for j := i + 1; j < len(nodes) && nodes[j].Depth > 0; j++ {
			if n := &nodes[j]; n.Len > 0 {
				if lo < 0 || n.Off < lo {
					lo = n.Off
				}
				hi = max(hi, n.Off+n.Len)
			}
		}
		if lo >= 0 {
			nodes[i].Off, nodes[i].Len = lo, hi-lo
		}
	}
}

func appendFindings(dst []Node, fs []TreeFinding) []Node {
	for _, f := range fs {
		dst = append(dst, Node{Kind: NodeFinding, Sev: f.Severity, HasSev: true, Code: f.Code, Text: f.Message, Frame: f.Frame})
	}
	return dst
}

// AppendValue appends a field node's value in its field's display form
// (decimal or hex as the table says, enum names, or with numeric their
// numbers).
func (n *Node) AppendValue(b []byte, numeric bool) []byte {
	v := n.Value
	if numeric && v.Kind == decode.KindEnum {
		v.Kind = decode.KindUint
	}
	switch {
	case n.field != nil:
		return n.field.AppendValue(b, v)
	case n.ufield != nil:
		return n.ufield.AppendValue(b, v)
	}
	return b
}

// sectionTitles name the protocol lines by their fields' first name
// component.
var sectionTitles = map[string]string{
	"mpa": "MPA", "ddp": "DDP", "rdmap": "RDMAP", "ulp": "ULP",
	"nvme": "NVMe-oF", "iser": "iSER", "iscsi": "iSCSI", "scsi": "SCSI",
	"smbd": "SMB Direct", "smb2": "SMB2", "rpcrdma": "RPC-over-RDMA", "rpc": "RPC", "nfs": "NFS",
}

// AppendText appends the node's line as the detail pane shows it: a field
// as "name = value", a protocol by its name, the framing facts in words.
func (n *Node) AppendText(b []byte) []byte {
	u := func(b []byte, x uint64) []byte { return strconv.AppendUint(b, x, 10) }
	switch n.Kind {
	case NodeField, NodeULPField:
		b = append(b, n.Name...)
		b = append(b, " = "...)
		return n.AppendValue(b, false)
	case NodeSection:
		if t, ok := sectionTitles[n.Name]; ok {
			return append(b, t...)
		}
		return append(b, strings.ToUpper(n.Name)...)
	case NodeFraming:
		return append(b, "FPDU framing"...)
	case NodeSegError:
		return append(append(b, "segment error: "...), n.Text...)
	case NodePartial:
		b = u(append(b, "partial FPDU: "...), n.Value.U)
		b = u(append(b, " of "...), n.Aux)
		return append(b, " octets captured"...)
	case NodeMarker:
		b = u(append(b, "marker at seq "...), n.Aux)
		return u(append(b, ": FPDUPTR "...), n.Value.U)
	case NodeCRC:
		field, computed := uint32(n.Aux>>32), uint32(n.Aux)
		switch decode.CRCStatus(n.Value.U) {
		case decode.CRCGood:
			return append(appendHex32(append(b, "CRC good ("...), computed), ')')
		case decode.CRCBad:
			b = appendHex32(append(b, "CRC BAD: field "...), field)
			return appendHex32(append(b, ", computed "...), computed)
		}
		return append(append(b, "CRC "...), n.Value.S...)
	case NodeData:
		return append(u(append(b, "data: "...), n.Value.U), " octets"...)
	case NodeDecodeError:
		return append(append(b, "decode error: "...), n.Text...)
	case NodeFinding:
		return append(append(n.AppendFindingHead(b), ": "...), n.Text...)
	case NodeTCP:
		return n.appendTCPText(b)
	}
	return append(b, n.Text...)
}

// AppendFindingHead appends a finding node's severity and code: "error
// ddp.msn_gap".
func (n *Node) AppendFindingHead(b []byte) []byte {
	b = append(b, n.Sev.String()...)
	b = append(b, ' ')
	return append(b, n.Code.String()...)
}

// appendHex32 appends x as 0x and 8 hex digits.
func appendHex32(b []byte, x uint32) []byte {
	b = append(b, "0x"...)
	for s := 28; s >= 0; s -= 4 {
		b = append(b, hexDigits[(x>>s)&0xF])
	}
	return b
}

// AppendVerbose writes iwdump -V's tree: the field nodes, one a line,
// indented four spaces a level, with the field's description.
func AppendVerbose(b []byte, nodes []Node, numeric bool) []byte {
	for i := range nodes {
		n := &nodes[i]
		if !n.IsField() {
			continue
		}
		for range n.Depth {
			b = append(b, "    "...)
		}
		b = append(b, n.Name...)
		b = append(b, " = "...)
		b = n.AppendValue(b, numeric)
		b = append(b, "  ("...)
		b = append(b, n.Desc()...)
		b = append(b, ")\n"...)
	}
	return b
}
