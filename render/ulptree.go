package render

import (
	"strconv"
	"strings"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/ulp"
)

// The storage protocol's part of the detail tree and of the NDJSON
// object: ulp decodes the message into fields of its table (names,
// kinds, bases, descriptions); render builds the tree nodes and writes
// the JSON, as it does for decode's fields.

// appendULPNodes appends the nodes of a storage-protocol message's fields,
// in table order, under a line per protocol (*sec as in appendSection).
// The field naming the command's request frame links to it.
//
// An SMB2 compound's later members follow, each under a line of its own
// with its occurrence of the fields ([MS-SMB2] §3.2.4.1.4).
//
// A response's command lists the operations that moved its data (ulp's
// Command.RDMA) at the end of its ulp.* fields: a ulp.rdma.op line per
// operation with its STag, TO, length and frames under it, each frame a
// link (as Wireshark's "[Response in: N]").
func appendULPNodes(dst []Node, sec *string, m *ulp.Message) []Node {
	dst = appendULPFields(dst, sec, m.Sorted(), m.OwnCmd())
	for i := range m.Members {
		mb := &m.Members[i]
		*sec = "smb2"
		dst = append(dst, Node{Kind: NodeNote, Text: "SMB2 compound member " + strconv.Itoa(i+2)})
		dst = appendULPFields(dst, sec, mb.Sorted(), mb.Cmd)
	}
	return dst
}

func appendULPFields(dst []Node, sec *string, fvs []ulp.FV, cmd *ulp.Command) []Node {
	fs := ulp.Fields()
	for _, fv := range fvs {
		f := &fs[fv.ID]
		if cmd != nil && *sec == "ulp" && !strings.HasPrefix(f.Name, "ulp.") {
			dst, cmd = appendXferNodes(dst, cmd), nil // the ulp.* fields end
		}
		dst = appendSection(dst, sec, f.Name)
		dst = append(dst, ulpNode(f, fv, strings.Count(f.Name, ".")))
	}
	if cmd != nil && *sec == "ulp" {
		dst = appendXferNodes(dst, cmd)
	}
	return dst
}

func ulpNode(f *ulp.Field, fv ulp.FV, depth int) Node {
	n := Node{Kind: NodeULPField, Depth: depth, Name: f.Name, Value: fv.V, ufield: f}
	if ulp.IsFrameField(fv.ID) {
		n.Frame = int(fv.V.U)
	}
	return n
}

// appendXferNodes appends a ulp.rdma.op line (depth 1) per operation of
// cmd, its fields under it (depth 2); the op line links to its first
// frame.
func appendXferNodes(dst []Node, cmd *ulp.Command) []Node {
	fs := ulp.Fields()
	var buf [8]ulp.FV
	for i := range cmd.RDMA {
		x := &cmd.RDMA[i]
		for k, fv := range x.XferFields(buf[:0]) {
			n := ulpNode(&fs[fv.ID], fv, 2)
			if k == 0 {
				n.Depth, n.Frame = 1, x.Frame
			}
			dst = append(dst, n)
		}
	}
	return dst
}

// AppendULPJSON appends a storage-protocol message's fields as nested
// JSON members, each preceded by a comma: `,"ulp":{...},"nvme":{...}`
// (the dotted names' prefixes are objects, as for decode's fields).
//
// An SMB2 compound's later members follow in an array, each an object of
// the same form: `,"members":[{"smb2":{"member":2,"command":"CLOSE",...}}]`.
//
// A response's command's operations (ulp.rdma.*) are an array in the
// "ulp" object: `"ulp":{...,"rdma":[{"op":"RDMA Write","stag":…,"frame":14,…}]}`.
func AppendULPJSON(b []byte, m *ulp.Message, numeric bool) []byte {
	b = appendULPJSONFields(b, m.Sorted(), numeric, m.OwnCmd())
	if len(m.Members) == 0 {
		return b
	}
	b = append(jsonComma(b), `"members":[`...)
	for i := range m.Members {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		b = appendULPJSONFields(b, m.Members[i].Sorted(), numeric, m.Members[i].Cmd)
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendULPJSONFields(b []byte, fvs []ulp.FV, numeric bool, cmd *ulp.Command) []byte {
	fs := ulp.Fields()
	var open []string // path of the objects open
	for _, fv := range fvs {
		f := &fs[fv.ID]
		parts := strings.Split(f.Name, ".")
		dirs := parts[:len(parts)-1]
		k := 0
		for k < len(open) && k < len(dirs) && open[k] == dirs[k] {
			k++
		}
		if cmd != nil && k == 0 && len(open) == 1 && open[0] == "ulp" {
			b, cmd = appendXferJSON(b, cmd, numeric), nil // the "ulp" object ends
		}
		for len(open) > k {
			b = append(b, '}')
			open = open[:len(open)-1]
		}
		for _, d := range dirs[k:] {
			b = jsonComma(b)
			b = append(b, '"')
			b = append(b, d...)
			b = append(b, `":{`...)
			open = append(open, d)
		}
		b = jsonComma(b)
		b = append(b, '"')
		b = append(b, parts[len(parts)-1]...)
		b = append(b, `":`...)
		b = appendULPJSONValue(b, f, fv.V, numeric)
	}
	if cmd != nil && len(open) == 1 && open[0] == "ulp" {
		b = appendXferJSON(b, cmd, numeric)
	}
	for range open {
		b = append(b, '}')
	}
	return b
}

// appendXferJSON appends `,"rdma":[{...},...]`: cmd's operations, each an
// object of its ulp.rdma.* fields (nothing when it has none).
func appendXferJSON(b []byte, cmd *ulp.Command, numeric bool) []byte {
	if len(cmd.RDMA) == 0 {
		return b
	}
	fs := ulp.Fields()
	var buf [8]ulp.FV
	b = append(jsonComma(b), `"rdma":[`...)
	for i := range cmd.RDMA {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		for k, fv := range cmd.RDMA[i].XferFields(buf[:0]) {
			f := &fs[fv.ID]
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, f.Name[strings.LastIndexByte(f.Name, '.')+1:]...)
			b = append(b, `":`...)
			b = appendULPJSONValue(b, f, fv.V, numeric)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

func jsonComma(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] != '{' {
		return append(b, ',')
	}
	return b
}

func appendULPJSONValue(b []byte, f *ulp.Field, v decode.Value, numeric bool) []byte {
	switch v.Kind {
	case decode.KindBool:
		if v.U != 0 {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case decode.KindUint:
		if decode.WideHex(f.Kind, f.Hex, f.Size) { // "0x…": no reader rounds it
			b = append(b, '"')
			b = f.AppendValue(b, v)
			return append(b, '"')
		}
		return strconv.AppendUint(b, v.U, 10)
	case decode.KindEnum:
		if numeric {
			return strconv.AppendUint(b, v.U, 10)
		}
		return AppendJSONString(b, v.S)
	case decode.KindString:
		return AppendJSONString(b, v.S)
	case decode.KindBytes:
		b = append(b, '"')
		b = f.AppendValue(b, v)
		return append(b, '"')
	}
	return append(b, "null"...)
}

// appendOpened appends, under a request, a line per command it opened
// linking to the command's response (as Wireshark's "[Response in: N]"),
// and under it a line per operation that moved the command's data,
// linking to the operation's first frame: notes, not fields (the fields
// are on the response, ulp.rdma.*).
func appendOpened(dst []Node, cmds []*ulp.Command) []Node {
	for _, c := range cmds {
		n := Node{Kind: NodeNote, Text: c.Name + ": no response in the capture"}
		if c.Answered {
			n.Text, n.Frame = c.Name+": response in frame "+strconv.Itoa(c.ResponseFrame), c.ResponseFrame
		}
		dst = append(dst, n)
		for i := range c.RDMA {
			x := &c.RDMA[i]
			dst = append(dst, Node{Kind: NodeNote, Depth: 1, Text: xferText(x), Frame: x.Frame})
		}
		if c.RDMADropped > 0 {
			dst = append(dst, Node{Kind: NodeNote, Depth: 1, Text: strconv.Itoa(c.RDMADropped) + " more operations not kept"})
		}
	}
	return dst
}

// xferText words an operation with its frames: "RDMA Write, frames
// 14-17", "RDMA Read, Read Request in frame 32, Read Responses in frames
// 33-49", "Send, frame 12".
func xferText(x *ulp.Xfer) string {
	frames := func(b []byte, a, z int) []byte {
		if z <= a {
			return strconv.AppendInt(append(b, "frame "...), int64(a), 10)
		}
		b = strconv.AppendInt(append(b, "frames "...), int64(a), 10)
		return strconv.AppendInt(append(b, '-'), int64(z), 10)
	}
	b := append([]byte(x.Kind.String()), ", "...)
	if x.Kind != ulp.XferRead {
		return string(frames(b, x.Frame, x.LastFrame))
	}
	b = frames(append(b, "Read Request in "...), x.Frame, x.Frame)
	if x.ResponseFrame == 0 {
		return string(append(b, ", no Read Response"...))
	}
	return string(frames(append(b, ", Read Responses in "...), x.ResponseFrame, x.ResponseLastFrame))
}
