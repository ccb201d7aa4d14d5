//go:build cgo

package main

//go:generate env IWKIT_UPDATE_DOCS=1 go test -run ^TestDocs$ .

import (
	"github.com/iwkit/iwkit/export"
	"github.com/iwkit/iwkit/internal/cli"
)

// doc is what iwsql's flags do not say: the source of -h, --help,
// docs/man/iwsql.1, the options of docs/iwsql.md and the completion
// scripts (internal/cli). The completion offers the export's tables and
// columns (export.Tables).
var doc = cli.Command{
	Name:    "iwsql",
	Summary: "SQL over iwdump's Parquet exports, with embedded DuckDB",
	Synopsis: []string{
		"iwsql [-o text|csv|json] [--captures NAME,...|GLOB] DIR ['SELECT ...']",
		"iwsql [-o text|csv|json] -r FILE [-r FILE]... ['SELECT ...']",
		"iwsql check [--repair] DIR",
	},
	Description: `iwsql queries the Parquet tables that iwdump --export writes (connections, pdus, operations, findings, commands, captures) with embedded DuckDB. The tables are views over the live copy of every committed capture set, so a query sees each set exactly once whatever writers are doing; --captures names the sets a query needs, and the other sets' files are not opened. With -r it exports the files to a temporary directory first. Without a query it opens a prompt: statements end with ';', and .tables, .schema TABLE and .quit work.

iwsql check finds garbage and damage in an export directory (duplicate commits, unfinished commits, orphans, unreadable parts); with --repair it removes them or moves unreadable parts to DIR/.quarantine. The schema, a contract, is in docs/parquet.md; everyday queries are in docs/iwsql.md. iwsql is the one iwkit command built with cgo.`,
	Common: []string{"o", "captures", "r", "version"},
	Examples: []cli.Example{
		{Cmd: "iwsql lake 'SELECT code, count(*) AS n FROM findings GROUP BY code ORDER BY n DESC'", Text: "Count the findings of every capture set in the export lake by code."},
		{Cmd: "iwsql -o csv --captures 'site1-*' lake 'SELECT * FROM connections'", Text: "The connections of the capture sets whose names match site1-*, as CSV."},
		{Cmd: "iwsql -r capture.pcap 'SELECT opcode, count(*) FROM pdus GROUP BY opcode'", Text: "Export one capture to a temporary directory and query it."},
		{Cmd: "iwsql check --repair lake", Text: "Find and repair garbage and damage in an export."},
	},
	Exit:    cli.StandardExit("an I/O or SQL error, or iwsql check found problems it did not repair"),
	SeeAlso: []string{"iwdump(1)", "duckdb(1)"},
	Values: map[string][]string{
		"o": {"text", "csv", "json"},
	},
	Fields:   tableWords,
	Operands: "dir-fields",
}

// tableWords are the export's table and column names: what a query names.
func tableWords() []string {
	var w []string
	for _, tb := range export.Tables {
		w = append(w, tb.Name)
		for _, c := range tb.Cols {
			w = append(w, c.Name)
		}
	}
	return w
}
