package decode

// FieldGroups are the runs of fields that the specialized writers write
// with straight-line code (render's NDJSON fast path, export's Parquet
// pdus writer): each a run of consecutive fields of the table, in table
// order, that share one presence condition, so a PDU carries all of a
// group or none. A PDU kind whose fields are a sequence of groups takes
// the fast path; MPA frames and Terminates are left to the table walk.
// ReadGroup reads each group's values from a PDU for both writers; the
// groups are listed here once so that a change of the table (a field
// added, a condition split) is made in one place and the tests of both
// writers see it.
var FieldGroups = [][]string{
	{"mpa.ulpdu_length", "mpa.pad", "mpa.crc"},
	{"mpa.crc_computed"},
	{"mpa.crc_status", "mpa.markers"},
	{"ddp.tagged", "ddp.last", "ddp.rsvd", "ddp.dv"},
	{"ddp.stag", "ddp.to"},
	{"ddp.rsvdulp", "ddp.qn", "ddp.msn", "ddp.mo"},
	{"ddp.payload_length"},
	{"rdmap.rv", "rdmap.rsv", "rdmap.opcode"},
	{"rdmap.inval_stag"},
	{"rdmap.sink_stag", "rdmap.sink_to", "rdmap.read_size", "rdmap.src_stag", "rdmap.src_to"},
	{"rdmap.imm_data"},
	{"rdmap.atomic.opcode", "rdmap.atomic.request_id", "rdmap.atomic.remote_stag", "rdmap.atomic.remote_to",
		"rdmap.atomic.add_swap_data", "rdmap.atomic.add_swap_mask", "rdmap.atomic.compare_data", "rdmap.atomic.compare_mask"},
	{"rdmap.atomic.orig_request_id", "rdmap.atomic.orig_value"},
	{"rdmap.pre_ietf", "rdmap.extension"},
}

// A GroupKind is how a group's field is written: the type a writer gives
// its value.
type GroupKind uint8

const (
	GroupUint      GroupKind = iota // at most 32 bits, shown in decimal: GroupValues.U
	GroupHex64                      // a 64-bit address, TO or operand (Field.JSONHex): U
	GroupBool                       // a flag: U is 0 or 1
	GroupOctets                     // octets shown in hex (PAD, Immediate Data): GroupValues.B
	GroupCRCStatus                  // mpa.crc_status: U, a CRCStatus
	GroupOpcode                     // rdmap.opcode: U, an Opcode
	GroupAtomicOp                   // rdmap.atomic.opcode: U, an AtomicOp
)

// GroupKinds are the kinds of the fields of each of FieldGroups, in
// order.
var GroupKinds = [][]GroupKind{
	{GroupUint, GroupOctets, GroupUint},
	{GroupUint},
	{GroupCRCStatus, GroupUint},
	{GroupBool, GroupBool, GroupUint, GroupUint},
	{GroupUint, GroupHex64},
	{GroupUint, GroupUint, GroupUint, GroupUint},
	{GroupUint},
	{GroupUint, GroupUint, GroupOpcode},
	{GroupUint},
	{GroupUint, GroupHex64, GroupUint, GroupUint, GroupHex64},
	{GroupOctets},
	{GroupAtomicOp, GroupUint, GroupUint, GroupHex64, GroupHex64, GroupHex64, GroupHex64, GroupHex64},
	{GroupUint, GroupHex64},
	{GroupBool, GroupBool},
}

// GroupValues are the values of one group's fields as ReadGroup reads
// them: field k's in U[k], or in B for the group's one GroupOctets field.
type GroupValues struct {
	U [8]uint64
	B []byte
}

// ReadGroup reads the values of the fields of group g (an index into
// FieldGroups) from p into v: the one reader of the groups, which the
// NDJSON fast path (render) and the Parquet pdus writer (export) write
// each by GroupKinds. It reads the PDU's struct directly, with no
// presence test: the caller knows p carries the group (decode.Present).
// A loop over the values rather than calls into a writer: Go calls a
// type parameter's methods indirectly, which doubled the cost of the
// NDJSON fields.
func ReadGroup(g int, p *PDU, v *GroupValues) {
	u := &v.U
	switch g {
	case 0: // mpa.ulpdu_length, mpa.pad, mpa.crc (RFC 5044 §4.1)
		u[0], v.B, u[2] = uint64(p.FPDU.ULPDULength), p.FPDU.Pad, uint64(p.FPDU.CRC)
	case 1: // mpa.crc_computed
		u[0] = uint64(p.ComputedCRC)
	case 2: // mpa.crc_status, mpa.markers
		u[0], u[1] = uint64(p.CRCStatus), uint64(len(p.Markers))
	case 3: // ddp.tagged, ddp.last, ddp.rsvd, ddp.dv (RFC 5041 §4.1)
		h := &p.Seg.DDP
		u[0], u[1], u[2], u[3] = b2u(h.Tagged), b2u(h.Last), uint64(h.Rsvd), uint64(h.DV)
	case 4: // ddp.stag, ddp.to (RFC 5041 §4.2)
		u[0], u[1] = uint64(p.Seg.DDP.STag), p.Seg.DDP.TO
	case 5: // ddp.rsvdulp, ddp.qn, ddp.msn, ddp.mo (RFC 5041 §4.3)
		h := &p.Seg.DDP
		u[0], u[1], u[2], u[3] = uint64(h.RsvdULP2), uint64(h.QN), uint64(h.MSN), uint64(h.MO)
	case 6: // ddp.payload_length
		u[0] = uint64(len(p.Seg.Payload))
	case 7: // rdmap.rv, rdmap.rsv, rdmap.opcode (RFC 5040 §4.1)
		c := &p.Seg.RDMAP
		u[0], u[1], u[2] = uint64(c.RV), uint64(c.Rsv), uint64(c.Opcode)
	case 8: // rdmap.inval_stag
		u[0] = uint64(p.Seg.InvalidateSTag)
	case 9: // the RDMA Read Request header (RFC 5040 §4.4)
		r := &p.Seg.ReadRequest
		u[0], u[1], u[2], u[3], u[4] = uint64(r.SinkSTag), r.SinkTO, uint64(r.Size), uint64(r.SrcSTag), r.SrcTO
	case 10: // rdmap.imm_data (RFC 7306 §6.2)
		v.B = p.Seg.ImmData[:]
	case 11: // the Atomic Operation Request (RFC 7306 §5.2.1)
		r := &p.Seg.AtomicRequest
		u[0], u[1], u[2], u[3] = uint64(r.AOpCode), uint64(r.RequestID), uint64(r.RemoteSTag), r.RemoteTO
		u[4], u[5], u[6], u[7] = r.AddSwapData, r.AddSwapMask, r.CompareData, r.CompareMask
	case 12: // the Atomic Operation Response (RFC 7306 §5.2.2)
		r := &p.Seg.AtomicResponse
		u[0], u[1] = uint64(r.OrigRequestID), r.OrigValue
	case 13: // rdmap.pre_ietf, rdmap.extension
		u[0], u[1] = b2u(p.Seg.DDP.DV == 0 || p.Seg.RDMAP.RV == 0), b2u(p.Seg.RDMAP.Opcode.Extension())
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
