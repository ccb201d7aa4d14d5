package ulp

import (
	"strconv"
	"strings"

	"github.com/iwkit/iwkit/decode"
)

// Field is one field of the ULP field table: the companion of decode's
// table, resolved the same way by display filters, NDJSON and -V (names
// are dotted paths; a prefix is one nested JSON object).
type Field struct {
	Name string
	Kind decode.FieldKind
	Hex  bool
	Desc string
}

// AppendValue appends v in the field's display form (as decode.Field does).
func (f *Field) AppendValue(b []byte, v decode.Value) []byte {
	df := decode.Field{Kind: f.Kind, Hex: f.Hex}
	return df.AppendValue(b, v)
}

// FieldID names a field of the table.
type FieldID uint16

var fieldTable []Field

func def(name string, k decode.FieldKind, hex bool, desc string) FieldID {
	fieldTable = append(fieldTable, Field{Name: name, Kind: k, Hex: hex, Desc: desc})
	return FieldID(len(fieldTable) - 1)
}

// Fields returns the ULP field table (do not modify it).
func Fields() []Field { return fieldTable }

var fieldIndex map[string]FieldID

// FieldByName finds a field of the ULP table.
func FieldByName(name string) (FieldID, *Field, bool) {
	if fieldIndex == nil {
		m := make(map[string]FieldID, len(fieldTable))
		for i := range fieldTable {
			m[fieldTable[i].Name] = FieldID(i)
		}
		fieldIndex = m
	}
	id, ok := fieldIndex[name]
	if !ok {
		return 0, nil, false
	}
	return id, &fieldTable[id], true
}

func init() { FieldByName("") } // build the index before any concurrent use

// Fields common to every ULP message: the protocol, and for a response, the
// command it completes with what the linking found.
var (
	fULP         = def("ulp.proto", decode.KindEnum, false, "storage protocol decoded: nvme, iser, smbd, rpcrdma")
	fULPUndec    = def("ulp.undecoded", decode.KindUint, false, "octets of a Send the protocol's decoder did not recognise (shown as payload, not an error)")
	fULPCommand  = def("ulp.command", decode.KindString, false, "the command this response completes")
	fULPReqFrame = def("ulp.request_frame", decode.KindUint, false, "frame of the command's Send")
	fULPLatency  = def("ulp.latency_ns", decode.KindUint, false, "command latency: its Send's last segment to the response's last segment, nanoseconds")
	fULPExpected = def("ulp.expected", decode.KindUint, false, "octets the command said it would move by RDMA (SGL/EDTL/descriptor/chunk length)")
	fULPMoved    = def("ulp.rdma_octets", decode.KindUint, false, "octets moved by the RDMA Writes and Read Responses on the command's STags")
	fULPReads    = def("ulp.rdma_reads", decode.KindUint, false, "RDMA Read Requests against the command's STags")
	fULPWrites   = def("ulp.rdma_writes", decode.KindUint, false, "RDMA Write messages into the command's STags")
	fULPInline   = def("ulp.inline", decode.KindUint, false, "data octets carried in the Sends themselves (in-capsule, immediate, inline)")
)

// Prefixes are the protocol names a display filter may use alone, as
// tshark's "-Y nvme": true on the messages that carry a field under it.
var Prefixes = []string{"ulp", "nvme", "iser", "iscsi", "scsi", "smbd", "smb2", "rpcrdma", "rpc", "nfs"}

// Has says whether the message carries a field named prefix.*.
func (m *Message) Has(prefix string) bool {
	for _, fv := range m.F {
		n := fieldTable[fv.ID].Name
		if len(n) > len(prefix) && n[len(prefix)] == '.' && n[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}

// FV is one field's value in a Message.
type FV struct {
	ID FieldID
	V  decode.Value
}

// Message is one decoded ULP message: the MPA private data of a Request or
// Reply, or a complete Send. It is reused: valid only during the call that
// returned it (the analyze record's lifetime).
type Message struct {
	Proto Proto
	// F holds the fields present, in the order they were decoded.
	F []FV
	// Summary is the text line's ULP part, e.g. "NVMe Write cid 12 nsid 1
	// lba 2048 len 8 key 0x48bc2e02".
	Summary []byte
	// Cmd is the command this message completes, if any.
	Cmd *Command
}

func (m *Message) reset(p Proto) {
	m.Proto, m.F, m.Summary, m.Cmd = p, m.F[:0], m.Summary[:0], nil
	m.F = append(m.F, FV{fULP, decode.Value{Kind: decode.KindEnum, U: uint64(p), S: p.String()}})
}

// Get returns field id's value, false when the message does not carry it.
func (m *Message) Get(id FieldID) (decode.Value, bool) {
	for i := range m.F {
		if m.F[i].ID == id {
			return m.F[i].V, true
		}
	}
	return decode.Value{}, false
}

func (m *Message) u(id FieldID, x uint64) {
	m.F = append(m.F, FV{id, decode.Value{Kind: decode.KindUint, U: x}})
}
func (m *Message) b(id FieldID, x bool) {
	v := decode.Value{Kind: decode.KindBool}
	if x {
		v.U = 1
	}
	m.F = append(m.F, FV{id, v})
}
func (m *Message) e(id FieldID, x uint64, name string) {
	m.F = append(m.F, FV{id, decode.Value{Kind: decode.KindEnum, U: x, S: name}})
}
func (m *Message) s(id FieldID, x string) {
	m.F = append(m.F, FV{id, decode.Value{Kind: decode.KindString, S: x}})
}

// sum appends to the summary.
func (m *Message) sum(parts ...string) {
	for _, p := range parts {
		m.Summary = append(m.Summary, p...)
	}
}
func (m *Message) sumU(label string, x uint64) {
	m.Summary = append(m.Summary, ' ')
	m.Summary = append(m.Summary, label...)
	m.Summary = append(m.Summary, ' ')
	m.Summary = strconv.AppendUint(m.Summary, x, 10)
}
func (m *Message) sumX(label string, x uint64) {
	m.Summary = append(m.Summary, ' ')
	m.Summary = append(m.Summary, label...)
	m.Summary = append(m.Summary, " 0x"...)
	m.Summary = strconv.AppendUint(m.Summary, x, 16)
}

// Sorted returns the fields in table order (insertion sort in place: a
// message has a few dozen fields at most).
func (m *Message) Sorted() []FV {
	f := m.F
	for i := 1; i < len(f); i++ {
		for j := i; j > 0 && f[j].ID < f[j-1].ID; j-- {
			f[j], f[j-1] = f[j-1], f[j]
		}
	}
	return f
}

// addLink adds the linking fields of a completed command.
func (m *Message) addLink(c *Command) {
	m.Cmd = c
	m.s(fULPCommand, c.Name)
	m.u(fULPReqFrame, uint64(c.RequestFrame))
	m.u(fULPLatency, uint64(c.Latency))
	if c.Expected > 0 {
		m.u(fULPExpected, c.Expected)
	}
	m.u(fULPMoved, c.Moved)
	if c.Reads > 0 {
		m.u(fULPReads, uint64(c.Reads))
	}
	if c.Writes > 0 {
		m.u(fULPWrites, uint64(c.Writes))
	}
	if c.Inline > 0 {
		m.u(fULPInline, c.Inline)
	}
	m.Summary = append(m.Summary, " ("...)
	m.Summary = append(m.Summary, c.Name...)
	if c.Moved > 0 || c.Expected > 0 {
		m.Summary = append(m.Summary, ", "...)
		m.Summary = strconv.AppendUint(m.Summary, c.Moved, 10)
		m.Summary = append(m.Summary, " octets by RDMA"...)
	}
	m.Summary = append(m.Summary, ", "...)
	m.Summary = appendDur(m.Summary, c.Latency)
	m.Summary = append(m.Summary, ')')
}

// AppendJSON appends the message's fields as nested JSON members, each
// preceded by a comma: `,"ulp":{...},"nvme":{...}`. strs writes a JSON
// string (the caller's escaper).
func (m *Message) AppendJSON(b []byte, numeric bool, str func([]byte, string) []byte) []byte {
	var open []string // path of the objects open
	for _, fv := range m.Sorted() {
		f := &fieldTable[fv.ID]
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
			b = comma(b)
			b = append(b, '"')
			b = append(b, d...)
			b = append(b, `":{`...)
			open = append(open, d)
		}
		b = comma(b)
		b = append(b, '"')
		b = append(b, parts[len(parts)-1]...)
		b = append(b, `":`...)
		b = appendJSONValue(b, f, fv.V, numeric, str)
	}
	for range open {
		b = append(b, '}')
	}
	return b
}

func comma(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] != '{' {
		return append(b, ',')
	}
	return b
}

func appendJSONValue(b []byte, f *Field, v decode.Value, numeric bool, str func([]byte, string) []byte) []byte {
	switch v.Kind {
	case decode.KindBool:
		if v.U != 0 {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case decode.KindUint:
		return strconv.AppendUint(b, v.U, 10)
	case decode.KindEnum:
		if numeric {
			return strconv.AppendUint(b, v.U, 10)
		}
		return str(b, v.S)
	case decode.KindString:
		return str(b, v.S)
	case decode.KindBytes:
		b = append(b, '"')
		b = f.AppendValue(b, v)
		return append(b, '"')
	}
	return append(b, "null"...)
}
