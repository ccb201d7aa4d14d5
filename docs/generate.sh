#!/bin/sh
# Rewrites every part of docs/ that the source owns, from the source:
#   docs/man/*.1, the "Options" block of docs/<command>.md and
#   docs/completion/{bash,zsh}/*   each command's flags and cli.Command (cmd/*/doc.go)
#   docs/fields.md's list          iwdump -G fields (decode and ulp field tables)
#   docs/findings.md's list        finding/codes.go
#   docs/parquet.md's schema       export.Tables
# Each of these is checked by a test that fails when it drifts; run this
# after changing a flag, a field, a finding code or a column, and commit
# what it changes. (go generate ./cmd/... does the first two.)
set -eu
cd "$(dirname "$0")/.."
IWKIT_UPDATE_DOCS=1 go test -count=1 -run '^TestDocs$' ./cmd/...
go test -count=1 -run '^TestREADME$' ./finding -update
IWKIT_UPDATE_README=1 go test -count=1 -run '^TestSchemaDoc$' ./export
