package version

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLineMatchesGoVersionM builds a real binary that prints Read().Line
// and checks it against what `go version -m` reads from the same binary:
// the module version, the revision and the modified flag.
func TestLineMatchesGoVersionM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "vprobe")
	build := exec.Command("go", "build", "-o", bin, "./testdata/vprobe")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(string(out))
	m, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var ver, rev, modified string
	for _, l := range strings.Split(string(m), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 3 && f[0] == "mod":
			ver = f[2]
		case len(f) >= 2 && strings.HasPrefix(f[1], "vcs.revision="):
			rev = strings.TrimPrefix(f[1], "vcs.revision=")
		case len(f) >= 2 && strings.HasPrefix(f[1], "vcs.modified="):
			modified = strings.TrimPrefix(f[1], "vcs.modified=")
		}
	}
	if ver == "" {
		t.Fatalf("go version -m shows no mod line:\n%s", m)
	}
	if !strings.HasPrefix(line, "vprobe (iwkit) "+ver) {
		t.Fatalf("line %q does not carry the module version %q", line, ver)
	}
	if rev != "" {
		want := "revision " + rev[:12]
		if modified == "true" {
			want += "+dirty"
		}
		if !strings.Contains(line, want) {
			t.Fatalf("line %q does not carry %q", line, want)
		}
	}
}

func TestBuild(t *testing.T) {
	for _, c := range []struct {
		in   Info
		want string
	}{
		{Info{}, ""},
		{Info{Revision: "0123456789abcdef0123"}, "0123456789ab"},
		{Info{Revision: "0123456789abcdef0123", Modified: true}, "0123456789ab+dirty"},
	} {
		if got := c.in.Build(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.in, got, c.want)
		}
	}
	if got := (Info{Version: "v1.2.3", Revision: "abc"}).String(); got != "v1.2.3 (abc)" {
		t.Errorf("String: %q", got)
	}
}
