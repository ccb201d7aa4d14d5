//go:build cgo

package main

import (
	"io"
	"testing"

	"github.com/iwkit/iwkit/internal/cli/clitest"
)

// TestDocs: iwsql's manual page, docs page, completion scripts, -h,
// --help and --version are what its flags and doc make (clitest).
func TestDocs(t *testing.T) {
	clitest.Check(t, func(args []string, stdout, stderr io.Writer) int { return run(args, nil, stdout, stderr) })
}
