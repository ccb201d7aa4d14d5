package main

import (
	"testing"

	"github.com/iwkit/iwkit/internal/cli"
	"github.com/iwkit/iwkit/internal/cli/clitest"
	"github.com/iwkit/iwkit/render"
)

// TestDocs: iwdump's manual page, docs page, completion scripts, -h,
// --help and --version are what its flags and doc make (clitest), and
// docs/fields.md lists every field -G fields does.
func TestDocs(t *testing.T) {
	clitest.Check(t, run)
	clitest.CheckBlock(t, "docs/fields.md", cli.FieldsBegin, cli.FieldsEnd, cli.ReadGlossary(render.WriteGlossary).Markdown())
}
