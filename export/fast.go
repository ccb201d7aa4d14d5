package export

import (
	"encoding/binary"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/decode"
)

// The specialized pdus writer. The generic walk calls the field table's
// getter per field and switches on the column type; for the FPDUs that
// make up bulk traffic that was the largest part of the export's own
// CPU. Here decode.ReadGroup reads the common field groups (those
// iwdump's NDJSON encoder specializes too, render/json_fast.go) straight
// from the decode.PDU, and writeGroup puts them in the row. A group's fields must be consecutive
// in the table; a PDU kind uses the fast path only if its fields are
// exactly a sequence of groups, else the generic walk.
// TestFastMatchesGeneric holds every group to the table's getters.

// A pduGroup is a run of consecutive field-table fields, written in
// order, one row method per column, of the column's type.
type pduGroup struct {
	names []string
	group int // index into decode.FieldGroups
	first int // index of the first in pduFields; -1 if a name is missing or out of order
}

// pduGroups are decode.FieldGroups, resolved.
var pduGroups = resolvePDUGroups(groupsOf(decode.FieldGroups))

func groupsOf(names [][]string) []pduGroup {
	gs := make([]pduGroup, len(names))
	for i := range names {
		gs[i] = pduGroup{names: names[i], group: i}
	}
	return gs
}

// writeGroup writes the values v of group g into the row's next
// columns, each by its decode.GroupKind, of the column's type.
func writeGroup(w *row, g int, v *decode.GroupValues) {
	for k, kind := range decode.GroupKinds[g] {
		x := v.U[k]
		switch kind {
		case decode.GroupUint:
			w.u32(uint32(x))
		case decode.GroupHex64:
			w.u64(x)
		case decode.GroupBool:
			w.bool(x != 0)
		case decode.GroupOctets:
			w.bytes(v.B)
		case decode.GroupCRCStatus:
			w.str(decode.CRCStatus(x).String())
		case decode.GroupOpcode:
			w.str(decode.Opcode(x).String())
		case decode.GroupAtomicOp:
			w.str(decode.AtomicOp(x).String())
		}
	}
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

// The pdus rows on the shards (analyze.Splitter). A PDU whose kind takes
// the fast path is read on the shard that raised it, where it lies in
// cache and in parallel with the other shards: the Exporter's Record then
// only writes the values into the columns. The values go as the groups'
// values: for each group, its index, then each value by its GroupKind
// (eight octets; the one GroupOctets field as a length and its octets).
// Operations go as their opVals. Other PDUs (the generic walk) and the
// other records come whole.

// pduPreparer prepares the pdus rows of one shard (or, with one worker,
// of the Exporter itself).
type pduPreparer struct {
	masks map[decode.Mask]*pduPlan // how a PDU is written, by Present mask
}

func newPDUPreparer() *pduPreparer { return &pduPreparer{masks: map[decode.Mask]*pduPlan{}} }

// plan is how a PDU with Present mask m is written (cached by mask: a
// capture has a few dozen kinds of PDU).
func (pp *pduPreparer) plan(m decode.Mask) *pduPlan {
	if pl, ok := pp.masks[m]; ok {
		return pl
	}
	pl := newPDUPlan(m)
	if len(pp.masks) < 4096 {
		pp.masks[m] = pl
	}
	return pl
}

// Prepare appends the values of a PDU's row after its head and first
// frame (analyze.Preparer): its sequence, length and missing octets, and
// its groups.
func (pp *pduPreparer) Prepare(r *analyze.Record, b []byte) ([]byte, bool) {
	if r.Kind == analyze.KindOperation {
		v := opValues(r.Op)
		return analyze.AppendValue(b, &v), true
	}
	if r.Kind != analyze.KindPDU {
		return b, false
	}
	ev := r.PDU
	p := &ev.PDU
	pl := pp.plan(decode.Present(p))
	if pl.fast == nil {
		return b, false
	}
	b = binary.LittleEndian.AppendUint32(b, ev.Seq)
	b = binary.LittleEndian.AppendUint32(b, uint32(ev.Len))
	b = binary.LittleEndian.AppendUint32(b, uint32(ev.Missing))
	var v decode.GroupValues
	for _, g := range pl.fast {
		decode.ReadGroup(g.group, p, &v)
		b = append(b, byte(g.group))
		for k, kind := range decode.GroupKinds[g.group] {
			if kind == decode.GroupOctets {
				b = binary.LittleEndian.AppendUint32(b, uint32(len(v.B)))
				b = append(b, v.B...)
				continue
			}
			b = binary.LittleEndian.AppendUint64(b, v.U[k])
		}
	}
	return b, true
}

// writePrepared writes what Prepare made of a PDU into the row, after
// its head and first frame.
func writePrepared(w *row, b []byte) {
	le := binary.LittleEndian
	w.u32(le.Uint32(b))
	w.u32(le.Uint32(b[4:]))
	w.u32(le.Uint32(b[8:]))
	b = b[12:]
	var v decode.GroupValues
	for len(b) > 0 {
		g := int(b[0])
		b = b[1:]
		for k, kind := range decode.GroupKinds[g] {
			if kind == decode.GroupOctets {
				n := le.Uint32(b)
				v.B, b = b[4:4+n:4+n], b[4+n:]
				continue
			}
			v.U[k], b = le.Uint64(b), b[8:]
		}
		w.skip(pduBase + pduGroups[g].first)
		writeGroup(w, g, &v)
	}
	w.skip(len(Pdus.Cols))
}
