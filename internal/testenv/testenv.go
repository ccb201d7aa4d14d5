// Package testenv is how iwkit's tests say what they need from the
// machine: root, a program such as tshark or tcpdump, a network device.
// Where something is missing a test is skipped with the reason, except in
// CI (the CI environment variable set to anything but "false" or "0"),
// where test.sh has installed the programs and runs as root: there a
// missing prerequisite means a test that should have run did not, and the
// test fails with the reason instead.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// InCI reports whether the tests run in CI, where nothing may be skipped
// for want of the machine.
func InCI() bool {
	v := os.Getenv("CI")
	return v != "" && v != "false" && v != "0"
}

// Skipf skips t, saying why, or fails it under CI. Use it for what the
// machine lacks, not for -short or an opt-in variable.
func Skipf(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("%s (CI is set: the machine must provide it)", msg)
	}
	t.Skip(msg)
}

// NeedRoot skips t (fails it under CI) unless the process runs as root;
// why says what root is needed for.
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Skipf(t, "%s needs root; not root", why)
	}
}

// Tool returns the path of the program name, or skips t (fails it under
// CI) when it is not installed.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Skipf(t, "%s not installed (./test.sh installs it)", name)
	}
	return p
}
