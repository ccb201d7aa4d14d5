package filter

import (
	"testing"

	"github.com/iwkit/iwkit/decode"
)

// A record with a field that occurs several times (the commands of an
// SMB2 compound): comparisons hold on any occurrence, != on all.
type multiRec []string

func TestMultiOccurrence(t *testing.T) {
	resolve := func(name string) (Getter[multiRec], decode.FieldKind, bool) {
		if name != "cmd" {
			return nil, 0, false
		}
		return func(r multiRec) (decode.Value, bool) {
			if len(r) == 0 {
				return decode.Value{}, false
			}
			return decode.Value{Kind: decode.KindEnum, S: r[0]}, true
		}, decode.KindEnum, true
	}
	multi := func(name string) Nth[multiRec] {
		return func(r multiRec, i int) (decode.Value, bool) {
			if i >= len(r) {
				return decode.Value{}, false
			}
			return decode.Value{Kind: decode.KindEnum, S: r[i]}, true
		}
	}
	compound := multiRec{"CREATE", "QUERY_INFO", "CLOSE"}
	single := multiRec{"READ"}
	none := multiRec{}
	cases := []struct {
		expr                        string
		compound, single, none, old bool // old: without multi, on compound
	}{
		{`cmd == "CLOSE"`, true, false, false, false},
		{`cmd == "CREATE"`, true, false, false, true},
		{`cmd != "CLOSE"`, false, true, false, true},
		{`cmd != "WRITE"`, true, true, false, true},
		{`!(cmd == "CLOSE")`, false, true, true, true},
		{`cmd contains "INFO"`, true, false, false, false},
		{`cmd`, true, true, false, true},
	}
	for _, c := range cases {
		f, err := CompileMulti(c.expr, resolve, multi)
		if err != nil {
			t.Fatal(err)
		}
		if g := f.Match(compound); g != c.compound {
			t.Errorf("%s on %v: %v", c.expr, compound, g)
		}
		if g := f.Match(single); g != c.single {
			t.Errorf("%s on %v: %v", c.expr, single, g)
		}
		if g := f.Match(none); g != c.none {
			t.Errorf("%s on none: %v", c.expr, g)
		}
		o, _ := Compile(c.expr, resolve)
		if g := o.Match(compound); g != c.old {
			t.Errorf("%s without multi on %v: %v", c.expr, compound, g)
		}
	}
}
