package ulp_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/ulp"
)

// dupChecker reports a ULP field a message carries twice (the -V tree
// printed iscsi.final twice on Login PDUs, and the JSON object had the
// key twice: issue 27).
type dupChecker struct{ dups []string }

func (d *dupChecker) Record(r *analyze.Record) {
	if r.Kind != analyze.KindPDU || r.ULP == nil {
		return
	}
	seen := map[ulp.FieldID]bool{}
	for _, f := range r.ULP.F {
		if seen[f.ID] {
			d.dups = append(d.dups, fmt.Sprintf("frame %d: %s twice", r.Frame, ulp.Fields()[f.ID].Name))
		}
		seen[f.ID] = true
	}
}

func TestNoFieldTwice(t *testing.T) {
	files, _ := filepath.Glob("../testdata/ulp/*.pcap")
	if len(files) == 0 {
		t.Fatal("no captures in testdata/ulp")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src, err := pcap.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		d := &dupChecker{}
		if _, err := analyze.Run(src, analyze.Config{}, d); err != nil {
			t.Fatal(err)
		}
		for i, s := range d.dups {
			if i == 5 {
				t.Errorf("%s: … %d in all", f, len(d.dups))
				break
			}
			t.Errorf("%s: %s", f, s)
		}
	}
}
