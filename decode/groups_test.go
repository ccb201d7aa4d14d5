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
