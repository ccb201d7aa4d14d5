package render

import (
	"os"
	"testing"

	"github.com/iwkit/iwkit/decode"
)

// TestAppendNodesAllocs: over every PDU of every committed capture,
// building the detail tree into a reused slice allocates nothing of its
// own (beyond the field table's getters), and
// the tree's field nodes are the fields decode's table says the PDU
// carries, in table order, each after the line of its protocol.
func TestAppendNodesAllocs(t *testing.T) {
	var pdus []decode.PDU
	for _, path := range testdataCaptures(t) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		pdus = append(pdus, readPDUs(t, f)...)
		f.Close()
	}
	var nodes []Node
	fields := decode.Fields()
	checked := 0
	for k := range pdus {
		p := &pdus[k]
		in := TreeInput{PDU: p, Wire: 1 << 20}
		nodes = AppendNodes(nodes[:0], &in)
		m := decode.Present(p)
		j := 0
		sec := ""
		for _, n := range nodes {
			switch n.Kind {
			case NodeSection:
				sec = n.Name
			case NodeField:
				for j < len(fields) && (!fields[j].In(m) || fields[j].Name == "data") {
					j++
				}
				if j == len(fields) || fields[j].Name != n.Name {
					t.Fatalf("PDU %d: node %s, table's next field present %d", k, n.Name, j)
				}
				if v, _ := fields[j].Get(p); string(n.AppendValue(nil, false)) != string(fields[j].AppendValue(nil, v)) || n.Desc() != fields[j].Desc {
					t.Fatalf("PDU %d: node %s value or description differs from the table's", k, n.Name)
				}
				if n.Name[:len(sec)] != sec || n.Name[len(sec)] != '.' {
					t.Fatalf("PDU %d: node %s under section %s", k, n.Name, sec)
				}
				j++
			}
		}
		for j < len(fields) && (!fields[j].In(m) || fields[j].Name == "data") {
			j++
		}
		if j != len(fields) {
			t.Fatalf("PDU %d: field %s present but no node", k, fields[j].Name)
		}
		if p.SegErr != nil {
			continue
		}
		checked++
		if raceEnabled {
			continue
		}
		// The tree adds none to what the table's getters allocate (a
		// Terminate's cause is named with fmt there).
		table := testing.AllocsPerRun(5, func() {
			for i := range fields {
				fields[i].GetIn(p, m)
			}
		})
		if a := testing.AllocsPerRun(5, func() { nodes = AppendNodes(nodes[:0], &in) }); a != table {
			t.Fatalf("PDU %d: %v allocations a tree, %v the field table's: %s", k, a, table, p.AppendSummary(nil))
		}
	}
	if checked < 1000 {
		t.Fatalf("%d PDUs checked", checked)
	}
}
