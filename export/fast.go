package export

import "github.com/iwkit/iwkit/decode"

// The specialized pdus writer. The generic walk calls the field table's
// getter per field and switches on the column type; for the FPDUs that
// make up bulk traffic that was the largest part of the export's own
// CPU. Here the common field groups (the same as iwdump's NDJSON encoder
// specializes, render/json_fast.go) are written by straight-line code
// that reads the decode.PDU directly. A group lists the fields it writes,
// which must be consecutive in the table; a PDU kind uses the fast path
// only if its fields are exactly a sequence of groups, else the generic
// walk. TestFastMatchesGeneric holds every group to the table's getters.

// A pduGroup is a run of consecutive field-table fields that write puts
// in order, one row method per column, of the column's type.
type pduGroup struct {
	names []string
	first int // index of the first in pduFields; -1 if a name is missing or out of order
	write func(w *row, p *decode.PDU)
}

var pduGroups = resolvePDUGroups([]pduGroup{
	{names: []string{"mpa.ulpdu_length", "mpa.pad", "mpa.crc"}, write: func(w *row, p *decode.PDU) {
		w.u32(uint32(p.FPDU.ULPDULength))
		w.bytes(p.FPDU.Pad)
		w.u32(p.FPDU.CRC)
	}},
	{names: []string{"mpa.crc_computed"}, write: func(w *row, p *decode.PDU) {
		w.u32(p.ComputedCRC)
	}},
	{names: []string{"mpa.crc_status", "mpa.markers"}, write: func(w *row, p *decode.PDU) {
		w.str(p.CRCStatus.String())
		w.u32(uint32(len(p.Markers)))
	}},
	{names: []string{"ddp.tagged", "ddp.last", "ddp.rsvd", "ddp.dv"}, write: func(w *row, p *decode.PDU) {
		h := &p.Seg.DDP
		w.bool(h.Tagged)
		w.bool(h.Last)
		w.u32(uint32(h.Rsvd))
		w.u32(uint32(h.DV))
	}},
	{names: []string{"ddp.stag", "ddp.to"}, write: func(w *row, p *decode.PDU) {
		w.u32(p.Seg.DDP.STag)
		w.u64(p.Seg.DDP.TO)
	}},
	{names: []string{"ddp.rsvdulp", "ddp.qn", "ddp.msn", "ddp.mo"}, write: func(w *row, p *decode.PDU) {
		h := &p.Seg.DDP
		w.u32(uint32(h.RsvdULP2))
		w.u32(h.QN)
		w.u32(h.MSN)
		w.u32(h.MO)
	}},
	{names: []string{"ddp.payload_length"}, write: func(w *row, p *decode.PDU) {
		w.u32(uint32(len(p.Seg.Payload)))
	}},
	{names: []string{"rdmap.rv", "rdmap.rsv", "rdmap.opcode"}, write: func(w *row, p *decode.PDU) {
		c := &p.Seg.RDMAP
		w.u32(uint32(c.RV))
		w.u32(uint32(c.Rsv))
		w.str(c.Opcode.String())
	}},
	{names: []string{"rdmap.inval_stag"}, write: func(w *row, p *decode.PDU) {
		w.u32(p.Seg.InvalidateSTag)
	}},
	{names: []string{"rdmap.sink_stag", "rdmap.sink_to", "rdmap.read_size", "rdmap.src_stag", "rdmap.src_to"}, write: func(w *row, p *decode.PDU) {
		r := &p.Seg.ReadRequest
		w.u32(r.SinkSTag)
		w.u64(r.SinkTO)
		w.u32(r.Size)
		w.u32(r.SrcSTag)
		w.u64(r.SrcTO)
	}},
	{names: []string{"rdmap.imm_data"}, write: func(w *row, p *decode.PDU) {
		w.bytes(p.Seg.ImmData[:])
	}},
	{names: []string{"rdmap.atomic.opcode", "rdmap.atomic.request_id", "rdmap.atomic.remote_stag", "rdmap.atomic.remote_to",
		"rdmap.atomic.add_swap_data", "rdmap.atomic.add_swap_mask", "rdmap.atomic.compare_data", "rdmap.atomic.compare_mask"}, write: func(w *row, p *decode.PDU) {
		r := &p.Seg.AtomicRequest
		w.str(r.AOpCode.String())
		w.u32(r.RequestID)
		w.u32(r.RemoteSTag)
		w.u64(r.RemoteTO)
		w.u64(r.AddSwapData)
		w.u64(r.AddSwapMask)
		w.u64(r.CompareData)
		w.u64(r.CompareMask)
	}},
	{names: []string{"rdmap.atomic.orig_request_id", "rdmap.atomic.orig_value"}, write: func(w *row, p *decode.PDU) {
		r := &p.Seg.AtomicResponse
		w.u32(r.OrigRequestID)
		w.u64(r.OrigValue)
	}},
	{names: []string{"rdmap.pre_ietf", "rdmap.extension"}, write: func(w *row, p *decode.PDU) {
		w.bool(p.Seg.DDP.DV == 0 || p.Seg.RDMAP.RV == 0)
		w.bool(p.Seg.RDMAP.Opcode.Extension())
	}},
})

// resolvePDUGroups finds each group's first field. A group whose names
// are not consecutive fields of the table is disabled (its PDUs take the
// generic walk): TestPDUGroupsResolve notices.
func resolvePDUGroups(groups []pduGroup) []pduGroup {
	index := map[string]int{}
	for i := range pduFields {
		index[pduFields[i].f.Name] = i
	}
	for g := range groups {
		groups[g].first = -1
		i0, ok := index[groups[g].names[0]]
		for k, name := range groups[g].names {
			if i, found := index[name]; !found || i != i0+k {
				ok = false
			}
		}
		if ok {
			groups[g].first = i0
		}
	}
	return groups
}

// pduPlan is how a PDU kind (a Present mask) is written: the fields it
// carries, and the groups that write exactly those, if any.
type pduPlan struct {
	present []int
	fast    []*pduGroup
}

// useFast is false in the test that compares the fast path with the
// generic walk.
var useFast = true

func newPDUPlan(m decode.Mask) *pduPlan {
	pl := &pduPlan{}
	for i := range pduFields {
		if pduFields[i].f.In(m) {
			pl.present = append(pl.present, i)
		}
	}
	rest := pl.present
	for g := range pduGroups {
		grp := &pduGroups[g]
		if grp.first < 0 || len(rest) < len(grp.names) || rest[0] != grp.first || rest[len(grp.names)-1] != grp.first+len(grp.names)-1 {
			continue
		}
		pl.fast = append(pl.fast, grp)
		rest = rest[len(grp.names):]
	}
	if len(rest) > 0 || !useFast {
		pl.fast = nil
	}
	return pl
}
