package replay

import (
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/iwkit/iwkit/gen"
)

// atomicCapture generates a capture of RFC 7306 traffic: the Responder
// advertises a word in a Send, the Initiator FetchAdds and CmpSwaps it
// (one swap, one miss), and both send Immediate Data.
func atomicCapture(t *testing.T) string {
	t.Helper()
	stag, to, all := uint32(0x00123401), uint64(0x7f0000001000), ^uint64(0)
	adv := make([]byte, 12)
	binary.BigEndian.PutUint32(adv, stag)
	binary.BigEndian.PutUint64(adv[4:], to)
	at := func(op gen.Op) gen.Op {
		op.STag, op.TO, op.Dir = &stag, &to, "i2r"
		return op
	}
	sc := &gen.Scenario{Connections: []gen.Connection{{Ops: []gen.Op{
		{Op: gen.OpNameSend, Dir: "i2r", Size: 8}, // the Responder sends only after the Initiator's first FPDU
		{Op: gen.OpNameSend, Dir: "r2i", Payload: adv},
		at(gen.Op{Op: gen.OpNameFetchAdd, AddSwap: 5, Orig: 100}),
		at(gen.Op{Op: gen.OpNameFetchAdd, AddSwap: 1, Orig: 105}),
		at(gen.Op{Op: gen.OpNameCmpSwap, AddSwap: 7, Mask: all, Compare: 106, CompareMask: &all, Orig: 106}),
		at(gen.Op{Op: gen.OpNameCmpSwap, AddSwap: 9, Mask: all, Compare: 1, CompareMask: &all, Orig: 7}),
		{Op: gen.OpNameImm, Dir: "i2r", Imm: 0x1122334455667788},
		{Op: gen.OpNameImmSE, Dir: "r2i", Imm: 0x42},
		{Op: gen.OpNameSend, Dir: "i2r", Size: 16},
	}}}}
	path := filepath.Join(t.TempDir(), "atomics.pcap")
	if _, err := gen.WriteFile(path, sc, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

// Both sides of an RFC 7306 capture replayed against each other: the
// atomics are performed again on a word that starts as the capture's
// first original value, every Atomic Response returns the captured value,
// and the Immediate Data arrives as captured.
func TestStatefulAtomics(t *testing.T) {
	path := atomicCapture(t)
	s := mustLoad(t, path)
	kinds := map[MsgKind]int{}
	for _, m := range s.Msgs {
		kinds[m.Kind]++
	}
	if kinds[MsgAtomic] != 4 || kinds[MsgAtomicResponse] != 4 || kinds[MsgImmediate] != 2 {
		t.Fatalf("script kinds %v", kinds)
	}
	ini, resp := both(t, path, 0, nil)
	for _, r := range []*Result{ini, resp} {
		if len(r.Differences) != 0 || r.Matched != r.Operations {
			t.Errorf("%v: %d operations, %d matched, %v", r.Side, r.Operations, r.Matched, r.Differences)
		}
	}
	if c := ini.Counters[0]; c.TxAtomicReqs != 4 || c.RxAtomicResps != 4 || c.TxImmData != 1 || c.RxImmData != 1 {
		t.Fatalf("initiator counters %+v", c)
	}
	if c := resp.Counters[0]; c.RxAtomicReqs != 4 || c.TxAtomicResps != 4 {
		t.Fatalf("responder counters %+v", c)
	}
}

// A side whose capture says otherwise is caught: a Responder whose word
// held another value makes the Initiator see another original value, and
// other Immediate Data is reported at its frame.
func TestStatefulAtomicsAltered(t *testing.T) {
	path := atomicCapture(t)
	nth := func(s *Script, side Side, kind MsgKind, n int) *Msg { return nthMsg(t, s, side, kind, n) }
	for _, c := range []struct {
		name string
		edit func(s *Script) *Msg // returns the message the other side must blame
	}{
		{"original value", func(s *Script) *Msg {
			m := nth(s, Responder, MsgAtomicResponse, 0)
			m.OrigValue = 99
			return m
		}},
		{"immediate data", func(s *Script) *Msg {
			m := nth(s, Responder, MsgImmediate, 0)
			m.Imm ^= 1
			return m
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := mustLoad(t, path)
			m := c.edit(s)
			ini, _ := pair(t, mustLoad(t, path), s)
			if len(ini.Differences) == 0 || ini.Differences[0].Frame != m.Frame || ini.Differences[0].Kind != "differs" {
				t.Fatalf("initiator differences %v, want the first at frame %d", ini.Differences, m.Frame)
			}
		})
	}
}
