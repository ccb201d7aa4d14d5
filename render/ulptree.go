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
func appendULPNodes(dst []Node, sec *string, m *ulp.Message) []Node {
	dst = appendULPFields(dst, sec, m.Sorted())
	for i := range m.Members {
		mb := &m.Members[i]
		*sec = "smb2"
		dst = append(dst, Node{Kind: NodeNote, Text: "SMB2 compound member " + strconv.Itoa(i+2)})
		dst = appendULPFields(dst, sec, mb.Sorted())
	}
	return dst
}

func appendULPFields(dst []Node, sec *string, fvs []ulp.FV) []Node {
	fs := ulp.Fields()
	for _, fv := range fvs {
		f := &fs[fv.ID]
		dst = appendSection(dst, sec, f.Name)
		n := Node{Kind: NodeULPField, Depth: strings.Count(f.Name, "."), Name: f.Name, Value: fv.V, ufield: f}
		if fv.ID == ulpReqFrame {
			n.Frame = int(fv.V.U)
		}
		dst = append(dst, n)
	}
	return dst
}

var ulpReqFrame = func() ulp.FieldID {
	id, _, ok := ulp.FieldByName("ulp.request_frame")
	if !ok {
		panic("render: ulp has no field ulp.request_frame")
	}
	return id
}()

// AppendULPJSON appends a storage-protocol message's fields as nested
// JSON members, each preceded by a comma: `,"ulp":{...},"nvme":{...}`
// (the dotted names' prefixes are objects, as for decode's fields).
//
// An SMB2 compound's later members follow in an array, each an object of
// the same form: `,"members":[{"smb2":{"member":2,"command":"CLOSE",...}}]`.
func AppendULPJSON(b []byte, m *ulp.Message, numeric bool) []byte {
	b = appendULPJSONFields(b, m.Sorted(), numeric)
	if len(m.Members) == 0 {
		return b
	}
	b = append(jsonComma(b), `"members":[`...)
	for i := range m.Members {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		b = appendULPJSONFields(b, m.Members[i].Sorted(), numeric)
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendULPJSONFields(b []byte, fvs []ulp.FV, numeric bool) []byte {
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
	for range open {
		b = append(b, '}')
	}
	return b
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
