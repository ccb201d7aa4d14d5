package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestInCI(t *testing.T) {
	for v, want := range map[string]bool{"": false, "false": false, "0": false, "true": true, "1": true, "yes": true} {
		t.Setenv("CI", v)
		if got := InCI(); got != want {
			t.Errorf("CI=%q: InCI %v", v, got)
		}
	}
}

// TestChild is what TestSkipf runs in a child process: a test that lacks
// something.
func TestChild(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") == "" {
		t.Skip("run by TestSkipf")
	}
	Tool(t, "iwkit-no-such-program")
	t.Error("not stopped")
}

// A missing prerequisite skips with the reason outside CI and fails the
// test with the reason under CI.
func TestSkipf(t *testing.T) {
	for _, c := range []struct {
		ci       string
		wantFail bool
		want     string
	}{
		{"", false, "--- SKIP: TestChild"},
		{"false", false, "--- SKIP: TestChild"},
		{"true", true, "--- FAIL: TestChild"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestChild$", "-test.v")
		cmd.Env = append(os.Environ(), "TESTENV_CHILD=1", "CI="+c.ci)
		out, err := cmd.CombinedOutput()
		if (err != nil) != c.wantFail || !strings.Contains(string(out), c.want) ||
			!strings.Contains(string(out), "iwkit-no-such-program not installed") || strings.Contains(string(out), "not stopped") {
			t.Errorf("CI=%q: %v\n%s", c.ci, err, out)
		}
	}
}
