package oracle

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// The expected tshark outputs committed in testdata/siw/tshark-VERSION are
// what the installed tshark says today: regenerated with the same script
// and compared octet for octet, so that they cannot drift from the
// captures or from the commands that made them.
func TestExpectedOutputs(t *testing.T) {
	bin := Tshark(t)
	v, err := exec.Command(bin, "-v").Output()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`TShark \(Wireshark\) ([0-9.]+)`).FindSubmatch(v)
	if m == nil {
		t.Fatalf("tshark -v: %q", v)
	}
	version := string(m[1])
	committed, _ := filepath.Glob("../../testdata/siw/tshark-*")
	if len(committed) == 0 {
		t.Fatal("no testdata/siw/tshark-* directory")
	}
	want := filepath.Join("../../testdata/siw", "tshark-"+version)
	if _, err := os.Stat(want); err != nil {
		// Another tshark decodes differently: there is nothing to compare.
		t.Skipf("expected outputs are for %v, tshark here is %s: regenerate with testdata/siw/make-expected.sh", committed, version)
	}
	if files, _ := filepath.Glob(filepath.Join(want, "*")); len(files) < 25 {
		t.Errorf("only %d expected outputs in %s", len(files), want)
	}
	// Two captures (one with CRCs, one with a Terminate) are enough to see
	// drift; every tshark run costs about a second of start-up.
	got := t.TempDir()
	cmd := exec.Command("../../testdata/siw/make-expected.sh", got)
	cmd.Env = append(os.Environ(), "CAPTURES=crc_rping term_read_badstag", "JSON_CAPTURES=term_read_badstag")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make-expected.sh: %v\n%s", err, out)
	}
	made, _ := filepath.Glob(filepath.Join(got, "*"))
	if len(made) != 9 {
		t.Errorf("make-expected.sh made %d files, want 9", len(made))
	}
	for _, f := range made {
		b, _ := os.ReadFile(f)
		a, err := os.ReadFile(filepath.Join(want, filepath.Base(f)))
		if err != nil {
			t.Errorf("%s: not committed: %v", filepath.Base(f), err)
			continue
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from what tshark %s says now (regenerate with testdata/siw/make-expected.sh if the change is meant)", filepath.Base(f), version)
		}
	}
}
