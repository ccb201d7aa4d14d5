package finding

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the list of finding codes in ../docs/findings.md")

const (
	readmeBegin = "<!-- finding codes: generated from finding/codes.go; do not edit -->\n"
	readmeEnd   = "<!-- end of finding codes -->\n"
)

// markdownList is docs/findings.md's list of codes: one table row per code, in
// catalogue order.
func markdownList() string {
	var b strings.Builder
	b.WriteString("| code | severity | raised by | checks | summary |\n|---|---|---|---|---|\n")
	for _, inf := range All() {
		b.WriteString("| `" + inf.Name + "` | " + inf.Severity.String() + " | " + inf.Stage.String() + " | " +
			inf.ChecksText() + " | " + inf.Summary + " |\n")
	}
	return b.String()
}

// TestREADME: docs/findings.md's list of finding codes is the catalogue's.
func TestREADME(t *testing.T) {
	const path = "../docs/findings.md"
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(readme, []byte(readmeBegin))
	j := bytes.Index(readme, []byte(readmeEnd))
	if i < 0 || j < i {
		t.Fatalf("%s: no %q ... %q section", path, readmeBegin, readmeEnd)
	}
	i += len(readmeBegin)
	want := markdownList()
	if string(readme[i:j]) == want {
		return
	}
	if !*update {
		t.Fatalf("%s: the list of finding codes differs from the catalogue (go test ./finding -run TestREADME -update rewrites it)", path)
	}
	out := append(append(append([]byte(nil), readme[:i]...), want...), readme[j:]...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}
