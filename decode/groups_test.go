package decode

import "testing"

// TestFieldGroups: every group is a run of consecutive table fields with
// one presence condition, the groups in table order.
func TestFieldGroups(t *testing.T) {
	index := map[string]int{}
	for i := range fieldTable {
		index[fieldTable[i].Name] = i
	}
	last := -1
	for _, g := range FieldGroups {
		first, ok := index[g[0]]
		if !ok || first <= last {
			t.Fatalf("group %v: first field at %d (ok %v), after %d", g, first, ok, last)
		}
		for k, name := range g {
			i, ok := index[name]
			if !ok || i != first+k || fieldTable[i].cond != fieldTable[first].cond {
				t.Fatalf("group %v: %s at %d (ok %v), not consecutive or of another condition", g, name, i, ok)
			}
			last = i
		}
	}
}

// TestReadGroup: ReadGroup reads each group's fields in order, each of
// the kind GroupKinds says, which is the field's (GroupHex64 exactly for
// the fields JSON writes as hex strings), with the value the field
// table's getter reads, over a PDU whose every field read by a group
// holds a value of its own.
func TestReadGroup(t *testing.T) {
	index := map[string]int{}
	for i := range fieldTable {
		index[fieldTable[i].Name] = i
	}
	var p PDU
	p.FPDU.ULPDULength, p.FPDU.Pad, p.FPDU.CRC, p.FPDU.ULPDU = 0x1234, []byte{0xa1, 0xa2}, 0xdeadbeef, make([]byte, 64)
	p.ComputedCRC, p.CRCStatus, p.Markers = 0xfeedface, 2, make([]MarkerAt, 3)
	d := &p.Seg.DDP
	d.Tagged, d.Last, d.Rsvd, d.DV, d.STag, d.TO = true, true, 5, 1, 0x1000_0001, 0xff1c_0000_0000_1000
	d.RsvdULP2, d.QN, d.MSN, d.MO = 7, 1, 42, 8192
	p.Seg.Payload = make([]byte, 33)
	p.Seg.RDMAP.RV, p.Seg.RDMAP.Rsv, p.Seg.RDMAP.Opcode = 1, 2, OpReadRequest
	p.Seg.InvalidateSTag = 0x77
	p.Seg.ReadRequest = ReadRequest{SinkSTag: 11, SinkTO: 1 << 60, Size: 4096, SrcSTag: 12, SrcTO: 1<<63 | 5}
	p.Seg.ImmData = [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	p.Seg.AtomicRequest = AtomicRequest{AOpCode: AOpCmpSwap, RequestID: 9, RemoteSTag: 10, RemoteTO: 1 << 62,
		AddSwapData: 3, AddSwapMask: 4, CompareData: 5, CompareMask: 6}
	p.Seg.AtomicResponse = AtomicResponse{OrigRequestID: 13, OrigValue: 1<<61 | 1}
	if len(GroupKinds) != len(FieldGroups) {
		t.Fatalf("%d groups of kinds, %d of names", len(GroupKinds), len(FieldGroups))
	}
	kindOf := map[GroupKind]FieldKind{GroupUint: KindUint, GroupHex64: KindUint, GroupBool: KindBool, GroupOctets: KindBytes,
		GroupCRCStatus: KindEnum, GroupOpcode: KindEnum, GroupAtomicOp: KindEnum}
	for g, names := range FieldGroups {
		var v GroupValues
		ReadGroup(g, &p, &v)
		if len(GroupKinds[g]) != len(names) {
			t.Fatalf("group %d %v: %d kinds", g, names, len(GroupKinds[g]))
		}
		for k, name := range names {
			f := &fieldTable[index[name]]
			want := f.val(&p)
			kind := GroupKinds[g][k]
			if kindOf[kind] != f.Kind || (kind == GroupHex64) != f.JSONHex() {
				t.Errorf("%s: group kind %d, the table's kind %d hex %v", name, kind, f.Kind, f.JSONHex())
			}
			if kind == GroupOctets {
				if string(v.B) != string(want.B) {
					t.Errorf("%s: read %x, the table has %x", name, v.B, want.B)
				}
			} else if v.U[k] != want.U {
				t.Errorf("%s: read %#x, the table has %#x", name, v.U[k], want.U)
			}
		}
	}
}
