package decode

import (
	"encoding/binary"
	"testing"
)

// TestSpanReadsTheField: for every fixed-size whole-octet field of a few
// FPDUs, the octets Span names hold the field's value.
func TestSpanReadsTheField(t *testing.T) {
	segs := map[string][]byte{
		"read request": append((&DDPHeader{Last: true, DV: 1, QN: 1, MSN: 7, RsvdULP: 0x41}).Append(nil),
			0, 0, 0, 0x11, 0, 0, 0, 0, 0, 0, 0x22, 0x22, 0, 0, 0x10, 0, 0, 0, 0, 0x33, 0, 0, 0, 0, 0, 0, 0x44, 0x44),
		"tagged write": append((&DDPHeader{Tagged: true, Last: true, DV: 1, STag: 0xabcd, TO: 0x1122334455, RsvdULP: 0x40}).Append(nil), 1, 2, 3),
	}
	for name, seg := range segs {
		wire := AppendFPDU(nil, seg, true)
		var p PDU
		if _, err := DecodeFPDU(wire, CRCUseOn, &p); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.SegErr != nil {
			t.Fatalf("%s: %v", name, p.SegErr)
		}
		m := Present(&p)
		checked := 0
		for i := range fieldTable {
			f := &fieldTable[i]
			v, ok := f.GetIn(&p, m)
			off, n, sok := f.Span(&p)
			if f.Base == BaseNone && f.Name != "data" {
				if sok {
					t.Errorf("%s: derived field %s has a span", name, f.Name)
				}
				continue
			}
			if ok && !sok && v.Kind == KindBytes && len(v.B) == 0 {
				continue // nothing to light up
			}
			if ok != sok {
				t.Errorf("%s: %s: carried %v, span %v", name, f.Name, ok, sok)
				continue
			}
			if !ok {
				continue
			}
			if off+n > len(wire) {
				t.Errorf("%s: %s: span %d+%d beyond %d octets", name, f.Name, off, n, len(wire))
				continue
			}
			b := wire[off : off+n]
			switch {
			case f.Name == "mpa.crc":
				if binary.BigEndian.Uint32(b) != uint32(v.U) && binary.LittleEndian.Uint32(b) != uint32(v.U) {
					t.Errorf("%s: crc span % x, value %#x", name, b, v.U)
				}
			case v.Kind == KindUint && f.Mask == 0 && f.Size > 0:
				var got uint64
				for _, c := range b {
					got = got<<8 | uint64(c)
				}
				if got != v.U {
					t.Errorf("%s: %s: span % x reads %#x, field %#x", name, f.Name, b, got, v.U)
				}
				checked++
			case v.Kind == KindBytes && f.Size != 0:
				if string(b) != string(v.B) {
					t.Errorf("%s: %s: span % x, field % x", name, f.Name, b, v.B)
				}
			}
		}
		if checked < 3 {
			t.Errorf("%s: only %d fields checked", name, checked)
		}
	}
}
