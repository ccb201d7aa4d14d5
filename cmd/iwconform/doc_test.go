package main

import (
	"testing"

	"github.com/iwkit/iwkit/internal/cli/clitest"
)

// TestDocs: iwconform's manual page, docs page, completion scripts, -h,
// --help and --version are what its flags and doc make (clitest).
func TestDocs(t *testing.T) { clitest.Check(t, run) }
