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

// pduGroups are decode.FieldGroups, each with its writer (pduWriters,
// in the same order).
var pduGroups = resolvePDUGroups(withWriters(pduWriters))

// pduWriters write decode.FieldGroups, one a group, in order: one row
// method per column, of the column's type.
var pduWriters = []func(w *row, p *decode.PDU){
	// mpa.ulpdu_length, mpa.pad, mpa.crc
	func(w *row, p *decode.PDU) {
		w.u32(uint32(p.FPDU.ULPDULength))
		w.bytes(p.FPDU.Pad)
		w.u32(p.FPDU.CRC)
	},
	// mpa.crc_computed
	func(w *row, p *decode.PDU) {
		w.u32(p.ComputedCRC)
	},
	// mpa.crc_status, mpa.markers
	func(w *row, p *decode.PDU) {
		w.str(p.CRCStatus.String())
		w.u32(uint32(len(p.Markers)))
	},
	// ddp.tagged, ddp.last, ddp.rsvd, ddp.dv
	func(w *row, p *decode.PDU) {
		h := &p.Seg.DDP
		w.bool(h.Tagged)
		w.bool(h.Last)
		w.u32(uint32(h.Rsvd))
		w.u32(uint32(h.DV))
	},
	// ddp.stag, ddp.to
	func(w *row, p *decode.PDU) {
		w.u32(p.Seg.DDP.STag)
		w.u64(p.Seg.DDP.TO)
	},
	// ddp.rsvdulp, ddp.qn, ddp.msn, ddp.mo
	func(w *row, p *decode.PDU) {
		h := &p.Seg.DDP
		w.u32(uint32(h.RsvdULP2))
		w.u32(h.QN)
		w.u32(h.MSN)
		w.u32(h.MO)
	},
	// ddp.payload_length
	func(w *row, p *decode.PDU) {
		w.u32(uint32(len(p.Seg.Payload)))
	},
	// rdmap.rv, rdmap.rsv, rdmap.opcode
	func(w *row, p *decode.PDU) {
		c := &p.Seg.RDMAP
		w.u32(uint32(c.RV))
		w.u32(uint32(c.Rsv))
		w.str(c.Opcode.String())
	},
	// rdmap.inval_stag
	func(w *row, p *decode.PDU) {
		w.u32(p.Seg.InvalidateSTag)
	},
	// rdmap.sink_stag, ...
	func(w *row, p *decode.PDU) {
		r := &p.Seg.ReadRequest
		w.u32(r.SinkSTag)
		w.u64(r.SinkTO)
		w.u32(r.Size)
		w.u32(r.SrcSTag)
		w.u64(r.SrcTO)
	},
	// rdmap.imm_data
	func(w *row, p *decode.PDU) {
		w.bytes(p.Seg.ImmData[:])
	},
	// rdmap.atomic.opcode, ...
	func(w *row, p *decode.PDU) {
		r := &p.Seg.AtomicRequest
		w.str(r.AOpCode.String())
		w.u32(r.RequestID)
		w.u32(r.RemoteSTag)
		w.u64(r.RemoteTO)
		w.u64(r.AddSwapData)
		w.u64(r.AddSwapMask)
		w.u64(r.CompareData)
		w.u64(r.CompareMask)
	},
	// rdmap.atomic.orig_request_id, rdmap.atomic.orig_value
	func(w *row, p *decode.PDU) {
		r := &p.Seg.AtomicResponse
		w.u32(r.OrigRequestID)
		w.u64(r.OrigValue)
	},
	// rdmap.pre_ietf, rdmap.extension
	func(w *row, p *decode.PDU) {
		w.bool(p.Seg.DDP.DV == 0 || p.Seg.RDMAP.RV == 0)
		w.bool(p.Seg.RDMAP.Opcode.Extension())
	},
}

// withWriters pairs decode.FieldGroups with their writers; none when the
// lists differ in length (every PDU takes the generic walk:
// TestPDUGroupsResolve notices).
func withWriters(ws []func(w *row, p *decode.PDU)) []pduGroup {
	var gs []pduGroup
	for i, names := range decode.FieldGroups {
		if len(ws) == len(decode.FieldGroups) {
			gs = append(gs, pduGroup{names: names, write: ws[i]})
		}
	}
	return gs
}

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
