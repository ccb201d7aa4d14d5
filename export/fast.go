package export

import "github.com/iwkit/iwkit/decode"

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

// writeGroup writes group g of p into the row's next columns, each value
// by its decode.GroupKind, of the column's type.
func writeGroup(w *row, g int, p *decode.PDU, v *decode.GroupValues) {
	decode.ReadGroup(g, p, v)
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
