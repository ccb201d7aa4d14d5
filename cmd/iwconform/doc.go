package main

//go:generate env IWKIT_UPDATE_DOCS=1 go test -run ^TestDocs$ .

import (
	"github.com/iwkit/iwkit/endpoint/conform"
	"github.com/iwkit/iwkit/internal/cli"
	"github.com/iwkit/iwkit/internal/exitcode"
)

// doc is what iwconform's flags do not say: the source of -h, --help,
// docs/man/iwconform.1, the options of docs/iwconform.md and the
// completion scripts (internal/cli).
var doc = cli.Command{
	Name:    "iwconform",
	Summary: "conformance and fault-injection suite for iWARP peers, and an rping target",
	Synopsis: []string{
		"iwconform [--crc] [--markers] [--p2p] [--mpa-rev 1|2|129] [--run PREFIX,...] [--json] [--junit FILE] [--repeat N] [--pcap-dir DIR] HOST:PORT",
		"iwconform --listen [flags] [ADDR:]PORT",
		"iwconform --serve [ADDR:]PORT [-v] [--rfc7306]",
		"iwconform --fuzz DIR [--fuzz-inputs N] [--fuzz-time D] [--seed N] [--restart-cmd CMD] HOST:PORT",
		"iwconform --replay CASE [--fuzz DIR] HOST:PORT",
		"iwconform --list",
	},
	Description: `iwconform runs a conformance and fault-injection suite against any iWARP peer: each case opens a new connection, sends one fault (a bad CRC, a wrong DDP or RDMAP version, an STag or offset out of bounds, a Read Request beyond IRD, a missing RTR, ...) and checks the peer's reaction against the RFC clause it names: a Terminate with the right layer, error type and code, a close, or completions with the right values. A target is any rping server (rping -s -P, or iwconform --serve): cases that need a valid STag learn it from rping's first exchange.

Each case's row gives its id, the clause, what was sent, what was expected, what came back and a verdict (pass, fail, skip, error, not-run), as a table, as JSON (--json) or as JUnit XML (--junit). A target that stops answering fails the case that killed it, and the run stops. With --serve it is itself an rping-compatible target built on iwkit's endpoint. The cases and siw's results are in docs/iwconform.md.`,
	Common: []string{"crc", "p2p", "mpa-rev", "run", "list", "json", "junit", "listen", "serve", "timeout", "version"},
	Examples: []cli.Example{
		{Cmd: "iwconform --serve 7175", Text: "Serve an iwkit rping target, any number of connections."},
		{Cmd: "iwconform --crc 127.0.0.1:7175", Text: "Run the suite against it, with MPA CRCs, and print the table."},
		{Cmd: "iwconform --json --run ddp-,rdmap- --junit results.xml HOST:PORT", Text: "Run the DDP and RDMAP cases, one JSON object per case, and write JUnit XML for CI."},
		{Cmd: "iwconform --list", Text: "List the cases."},
	},
	Exit: []cli.Exit{
		{Code: exitcode.OK, Text: "every selected case passed or was skipped (also -h, --help, --version, --list)"},
		{Code: exitcode.Failure, Text: "a case failed, was an error or was not run, or the run could not start (cannot listen, cannot write --junit)"},
		{Code: exitcode.Usage, Text: "usage: a bad flag or argument, --run selecting no case"},
	},
	SeeAlso: []string{"iwperf(1)", "iwreplay(1)", "rping(1)"},
	Values: map[string][]string{
		"run":     caseIDs(),
		"mpa-rev": {"1", "2", "129"},
	},
	Operands: "none",
}

func caseIDs() []string {
	var ids []string
	for _, c := range conform.Cases() {
		ids = append(ids, c.ID)
	}
	return ids
}
