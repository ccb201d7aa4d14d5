package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestVersionInExport builds iwdump as a user would (go build stamps the
// module version and the VCS revision) and checks that --version and the
// export say the same: the captures table's iwkit_version and every
// Parquet file's created_by carry the version and the revision that
// --version prints (before issue 30: "iwkit version (build )").
func TestVersionInExport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds iwdump")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "iwdump")
	if out, err := exec.Command("go", "build", "-buildvcs=auto", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	line, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^iwdump \(iwkit\) ([^\s,]+)(?:, revision ([0-9a-f]+(?:\+dirty)?))?`).FindStringSubmatch(string(line))
	if m == nil {
		t.Fatalf("--version: %q", line)
	}
	ver, rev := m[1], m[2]
	want, wantBy := ver, "iwkit version "+ver
	if rev != "" {
		want += " (" + rev + ")"
		wantBy += " (build " + rev + ")"
	}
	lake := filepath.Join(dir, "lake")
	if out, err := exec.Command(bin, "--export", lake, "-r", "../../testdata/siw/rping.pcap").CombinedOutput(); err != nil {
		t.Fatalf("--export: %v\n%s", err, out)
	}
	parts, _ := filepath.Glob(filepath.Join(lake, "*", "capture=*", "*.parquet"))
	if len(parts) < 6 {
		t.Fatalf("%d Parquet files in the export", len(parts))
	}
	for _, p := range parts {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		pf, err := parquet.OpenFile(f, st.Size())
		if err != nil {
			t.Fatal(err)
		}
		if got := pf.Metadata().CreatedBy; got != wantBy {
			t.Errorf("%s: created_by %q, want %q", p, got, wantBy)
		}
		f.Close()
	}
	caps, _ := filepath.Glob(filepath.Join(lake, "captures", "capture=*", "*.parquet"))
	rows, err := parquet.ReadFile[struct {
		V string `parquet:"iwkit_version"`
	}](caps[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].V != want {
		t.Errorf("captures.iwkit_version %v, want %q (what --version says)", rows, want)
	}
}
