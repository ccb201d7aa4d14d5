package main

import (
	"io"
	"testing"

	"github.com/iwkit/iwkit/internal/cli/clitest"
)

// TestDocs: iwtui's manual page, docs page, completion scripts, -h,
// --help and --version are what its flags and doc make (clitest).
func TestDocs(t *testing.T) {
	clitest.Check(t, func(args []string, stdout, stderr io.Writer) int {
		_, _, code, _ := parse(args, stdout, stderr)
		return code
	})
}
