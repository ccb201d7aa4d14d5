package ulp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/analyze"
)

// The real captures of testdata/ulp (Linux initiators and targets over siw,
// testdata/ulp/README.md): golden outputs, and no ULP finding above note —
// the Linux habits of ulp-reference.md §7 are not errors.
func TestRealCaptures(t *testing.T) {
	files, _ := filepath.Glob("../testdata/ulp/*.pcap")
	n := 0
	for _, f := range files {
		base := filepath.Base(f)
		if strings.HasPrefix(base, "gen_") {
			continue
		}
		n++
		t.Run(base, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			col, _ := analyzeBytes(t, data, analyze.Config{})
			if len(col.lines) == 0 {
				t.Fatalf("no ULP message decoded")
			}
			for _, c := range col.findings {
				if sev := severityOf(c); sev != "?" && sev != "note" {
					t.Errorf("ULP finding %s (%s) on real Linux traffic", c, sev)
				}
			}
			for _, l := range col.lines {
				if strings.Contains(l, "undecoded") {
					t.Errorf("undecoded message in real traffic: %s", l)
				}
			}
			stat := map[string]string{"nvme": "nvme", "nfs": "rpc", "iser": "iscsi", "smb": "smb2"}
			z := ""
			for k, v := range stat {
				if strings.Contains(base, k) {
					z = v
				}
			}
			goldenOf(t, base, data, z, false)
		})
	}
	if n == 0 {
		t.Skip("no real captures in testdata/ulp")
	}
}
