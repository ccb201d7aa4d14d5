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
	// Size is the field's width on the wire in octets (0: not fixed):
	// what tshark pads a hex value to in -T fields, and its FT_ type.
	Size int
	// List says the text value is a list of items separated by spaces
	// (nfs.ops: one item per COMPOUND operation); tshark's field output
	// shows each item as one occurrence, as it repeats nfs.opcode.
	List bool
	// itemStart, for a List whose items hold spaces, says whether a
	// space-separated token begins an item.
	itemStart func(tok string) bool
}

// Items calls yield with each item of a List field's value s (with s
// itself for any other field).
func (f *Field) Items(s string, yield func(item string)) {
	if !f.List {
		yield(s)
		return
	}
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' {
			continue
		}
		next := s[i+1:]
		if j := strings.IndexByte(next, ' '); j >= 0 {
			next = next[:j]
		}
		if f.itemStart == nil || f.itemStart(next) {
			yield(s[start:i])
			start = i + 1
		}
	}
	if start < len(s) {
		yield(s[start:])
	}
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

func init() {
	for name, n := range wireSize {
		_, f, ok := FieldByName(name)
		if !ok {
			panic("ulp: wireSize names no field " + name)
		}
		f.Size = n
	}
	lists := map[string]func(string) bool{
		"nfs.ops":          nil,
		"smb2.descriptors": nil,
		// key=value pairs: a value may hold a space (TargetAlias)
		"iscsi.keys": func(tok string) bool { return strings.IndexByte(tok, '=') > 0 },
		// "read pos 124 0x2000b:65536@0x300000200 write 0x1000a:..."
		"rpcrdma.chunks": func(tok string) bool { return tok == "read" || tok == "write" || tok == "reply" },
	}
	for name, start := range lists {
		_, f, ok := FieldByName(name)
		if !ok {
			panic("ulp: lists names no field " + name)
		}
		f.List, f.itemStart = true, start
	}
}

// wireSize are the octets of the fields that have a fixed width on the
// wire (the specifications' layouts: NVMe Base and Fabrics, RFC 7143 and
// RFC 7145, MS-SMBD and MS-SMB2, RFC 8166 and RFC 5531); the others are
// 64-bit counts or text.
var wireSize = map[string]int{
	"iser.cm.flags": 1, "iser.write_stag": 4, "iser.write_va": 8, "iser.read_stag": 4, "iser.read_va": 8,
	"iscsi.dsl": 4, "iscsi.lun": 8, "iscsi.itt": 4, "iscsi.edtl": 4, "iscsi.cmdsn": 4, "iscsi.statsn": 4,
	"iscsi.maxcmdsn": 4, "iscsi.response": 1, "iscsi.residual": 4, "iscsi.login.tsih": 2,
	"iscsi.login.status_class": 1, "iscsi.login.status_detail": 1, "scsi.asc": 2,
	"nvme.recfmt": 2, "nvme.qid": 2, "nvme.hrqsize": 2, "nvme.hsqsize": 2, "nvme.crqsize": 2, "nvme.psdt": 1,
	"nvme.fuse": 1, "nvme.cid": 2, "nvme.nsid": 4, "nvme.sgl.addr": 8, "nvme.sgl.len": 4, "nvme.sgl.key": 4,
	"nvme.slba": 8, "nvme.cns": 1, "nvme.numd": 4, "nvme.fid": 1, "nvme.prop.offset": 4,
	"nvme.prop.size": 1, "nvme.prop.value": 8, "nvme.sqsize": 2, "nvme.cattr": 1, "nvme.kato": 4,
	"nvme.connect.cntlid": 2, "nvme.dw0": 4, "nvme.dw1": 4, "nvme.cntlid": 2, "nvme.sqhd": 2, "nvme.sqid": 2,
	"nvme.sct": 1, "nvme.sc": 1,
	"rpcrdma.cm.version": 1, "rpcrdma.cm.send_size": 4, "rpcrdma.cm.recv_size": 4, "rpcrdma.xid": 4,
	"rpcrdma.vers": 4, "rpcrdma.credits": 4, "rpcrdma.handle": 4, "rpc.xid": 4, "rpc.version": 4,
	"nfs.minorversion": 4, "nfs.offset": 8, "nfs.count": 4, "nfs.stable": 4,
	"smbd.min_version": 2, "smbd.max_version": 2, "smbd.negotiated_version": 2, "smbd.credits_requested": 2,
	"smbd.credits_granted": 2, "smbd.status": 4, "smbd.max_read_write_size": 4, "smbd.preferred_send_size": 4,
	"smbd.max_receive_size": 4, "smbd.max_fragmented_size": 4, "smbd.flags": 2, "smbd.remaining": 4,
	"smbd.data_offset": 4, "smbd.data_length": 4,
	"smb2.msg_id": 8, "smb2.session_id": 8, "smb2.tree_id": 4, "smb2.async_id": 8, "smb2.credits": 2,
	"smb2.flags": 4, "smb2.credit_charge": 2, "smb2.length": 4, "smb2.offset": 8, "smb2.remaining_bytes": 4, "smb2.token": 4,
	"smb2.data_length": 4, "smb2.data_remaining": 4, "smb2.count": 4,
	"smb2.max_read_size": 4, "smb2.max_write_size": 4,
	// named values
	"iser.opcode": 1, "iscsi.opcode": 1, "scsi.opcode": 1, "scsi.status": 1, "scsi.sense_key": 1,
	"nvme.reject_status": 2, "nvme.opcode": 1, "nvme.fctype": 1, "nvme.lid": 1, "nvme.status": 2,
	"rpcrdma.proc": 4, "rpcrdma.err": 4, "rpc.msg_type": 4, "rpc.program": 4, "rpc.procedure": 4,
	"rpc.auth_flavor": 4, "rpc.reply_stat": 4, "rpc.accept_stat": 4, "nfs.procedure": 4, "nfs.status": 4,
	"smb2.command": 2, "smb2.status": 4, "smb2.channel": 4,
}

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
	// The latency's phases (phase.go): on a response whose command moved
	// data of its own; the three sum to ulp.latency_ns.
	fULPQueue    = def("ulp.phase_queue_ns", decode.KindUint, false, "target queueing: the command Send's last segment to the first data operation (the target's first Read Request or RDMA Write, or the first data Send), nanoseconds")
	fULPTransfer = def("ulp.phase_transfer_ns", decode.KindUint, false, "transfer: the first data operation to the last data segment (last Read Response, RDMA Write or data Send), nanoseconds")
	fULPBackend  = def("ulp.phase_backend_ns", decode.KindUint, false, "target backend: the last data segment to the response's last segment, nanoseconds")
	// The operations that moved the command's data (rdma.go): one group
	// of ulp.rdma.* per operation, in the order they began, after the
	// message's fields (Command.RDMA; not in Message.F).
	fULPRDMADropped = def("ulp.rdma_dropped", decode.KindUint, false, "operations of the command not listed under ulp.rdma (beyond 64 a command, or the connection's bound)")
	fRDMAOp         = def("ulp.rdma.op", decode.KindString, false, "an operation that moved the command's data: RDMA Write (into its STag), RDMA Read (a Read Request from its STag and the Read Responses), Send (data carried in a Send: in-capsule, immediate, unsolicited Data-Out, inline)")
	fRDMASTag       = def("ulp.rdma.stag", decode.KindUint, true, "the command's STag the operation used: the RDMA Write's Data Sink STag, the Read Request's Data Source STag")
	fRDMATO         = def("ulp.rdma.to", decode.KindUint, true, "Tagged Offset of the operation's first octet in that STag (the Write's first segment's TO, the Read Request's Data Source TO)")
	fRDMALength     = def("ulp.rdma.length", decode.KindUint, false, "octets the operation moved (an RDMA Read: its Read Responses')")
	fRDMAFrame      = def("ulp.rdma.frame", decode.KindUint, false, "first frame of the operation: the RDMA Write's or Send's first segment, the Read Request")
	fRDMALastFrame  = def("ulp.rdma.last_frame", decode.KindUint, false, "last frame of the RDMA Write or Send")
	fRDMARespFrame  = def("ulp.rdma.response_frame", decode.KindUint, false, "first frame of the RDMA Read's Read Responses")
	fRDMARespLast   = def("ulp.rdma.response_last_frame", decode.KindUint, false, "last frame of the RDMA Read's Read Responses")
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
	// Members are the messages of an SMB2 compound after the first
	// (the NextCommand chain, [MS-SMB2] §3.2.4.1.4): each has its own
	// occurrence of the fields the first has in F (smb2.command,
	// smb2.msg_id, ...). A display filter matches a field in any of them;
	// -V, JSON ("members") and -T fields show every occurrence.
	Members []Member
	into    int // fields go to F (0) or to Members[into-1]
}

// Member is one message of a compound after the first: its fields, in the
// order decoded.
type Member struct {
	F []FV
	// Cmd is the command the member completes, if any.
	Cmd *Command
}

// Sorted returns the member's fields in the order decoded: its position
// (smb2.member), its smb2.* fields, then what the linking found (ulp.*)
// for a response.
func (mb *Member) Sorted() []FV { return mb.F }

func (m *Message) reset(p Proto) {
	m.Proto, m.F, m.Summary, m.Cmd = p, m.F[:0], m.Summary[:0], nil
	m.Members, m.into = m.Members[:0], 0
	m.F = append(m.F, FV{fULP, decode.Value{Kind: decode.KindEnum, U: uint64(p), S: p.String()}})
}

// member directs the fields that follow to a new member (true), or back
// to the message (false).
func (m *Message) member(on bool) {
	if !on {
		m.into = 0
		return
	}
	n := len(m.Members)
	if n < cap(m.Members) {
		m.Members = m.Members[:n+1]
		m.Members[n].F, m.Members[n].Cmd = m.Members[n].F[:0], nil
	} else {
		m.Members = append(m.Members, Member{})
	}
	m.into = n + 1
}

// Nth returns occurrence i (from 0) of field id: the message's, then each
// member's in order; false past the last.
func (m *Message) Nth(id FieldID, i int) (decode.Value, bool) {
	if isXferField(id) {
		return m.xferNth(id, i)
	}
	v, ok := m.Get(id)
	if ok {
		if i == 0 {
			return v, true
		}
		i--
	}
	for k := range m.Members {
		for _, fv := range m.Members[k].F {
			if fv.ID == id {
				if i == 0 {
					return fv.V, true
				}
				i--
			}
		}
	}
	return decode.Value{}, false
}

func (m *Message) add(fv FV) {
	if m.into == 0 {
		m.F = append(m.F, fv)
		return
	}
	mb := &m.Members[m.into-1]
	mb.F = append(mb.F, fv)
}

// Get returns field id's value, false when the message does not carry it.
func (m *Message) Get(id FieldID) (decode.Value, bool) {
	if isXferField(id) {
		return m.xferNth(id, 0)
	}
	for i := range m.F {
		if m.F[i].ID == id {
			return m.F[i].V, true
		}
	}
	return decode.Value{}, false
}

func (m *Message) u(id FieldID, x uint64) {
	m.add(FV{id, decode.Value{Kind: decode.KindUint, U: x}})
}
func (m *Message) b(id FieldID, x bool) {
	v := decode.Value{Kind: decode.KindBool}
	if x {
		v.U = 1
	}
	m.add(FV{id, v})
}
func (m *Message) e(id FieldID, x uint64, name string) {
	m.add(FV{id, decode.Value{Kind: decode.KindEnum, U: x, S: name}})
}
func (m *Message) s(id FieldID, x string) {
	m.add(FV{id, decode.Value{Kind: decode.KindString, S: x}})
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
func (m *Message) Sorted() []FV { return sortFV(m.F) }

func sortFV(f []FV) []FV {
	for i := 1; i < len(f); i++ {
		for j := i; j > 0 && f[j].ID < f[j-1].ID; j-- {
			f[j], f[j-1] = f[j-1], f[j]
		}
	}
	return f
}

// addLink adds the linking fields of a completed command; the message's
// first completed command is its Cmd and goes into the summary too (a
// compound member's adds its fields only).
func (m *Message) addLink(c *Command) {
	first := m.Cmd == nil
	if first {
		m.Cmd = c
	}
	if m.into > 0 {
		m.Members[m.into-1].Cmd = c
	}
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
	if c.Phased {
		m.u(fULPQueue, uint64(c.Queue))
		m.u(fULPTransfer, uint64(c.Transfer))
		m.u(fULPBackend, uint64(c.Backend))
	}
	if c.RDMADropped > 0 {
		m.u(fULPRDMADropped, uint64(c.RDMADropped))
	}
	if !first {
		return
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
