package main

//go:generate env IWKIT_UPDATE_DOCS=1 go test -run ^TestDocs$ .

import (
	"fmt"
	"io"
	"strings"

	// iwcli: the tests of this package have a func cli.
	iwcli "github.com/iwkit/iwkit/internal/cli"
)

// doc is what iwperf's flags do not say: the source of -h, --help,
// docs/man/iwperf.1, the options of docs/iwperf.md and the completion
// scripts (internal/cli).
var doc = iwcli.Command{
	Name:    "iwperf",
	Summary: "measure iWARP bandwidth and latency through iwkit's endpoint, with perftest's habits",
	Synopsis: []string{
		"iwperf TEST [HOST] [flags]",
	},
	Description: `iwperf measures iWARP through iwkit's own soft-iWARP endpoint over TCP, with perftest's habits: one test per invocation, the server without a host, the client with one, perftest's flag letters, long names and defaults, and perftest's report (or JSON). A server started with any test name serves every test except rping; rping must be given on both sides.

The tests are perftest's bandwidth and latency tests for RDMA Write, Send, RDMA Read and RFC 7306 atomics, rdma-core's rping exchange (against rping -s, or as its server), and stress, a verified random mix of operations on many connections, repeatable from its seed. With --perftest it speaks perftest's own exchange with ib_write_bw and its kin.`,
	Common: []string{"s", "a", "n", "D", "q", "b", "p", "crc", "markers", "out_json", "version"},
	Examples: []iwcli.Example{
		{Cmd: "iwperf write_bw", Text: "Server: wait for one client's run, then exit."},
		{Cmd: "iwperf write_bw 127.0.0.1 -s 65536 -n 5000 --crc", Text: "Client: 5000 RDMA Writes of 64 KiB with MPA CRCs."},
		{Cmd: "iwperf send_lat HOST -a --plot lat.svg", Text: "Send latency over every size from 2 octets to 8 MiB, drawn."},
		{Cmd: "iwperf stress HOST -D 60 -q 16 --seed 7", Text: "A verified random mix on 16 connections for a minute; the same seed gives the same operations."},
	},
	Exit:    iwcli.StandardExit("the run failed: no connection, a peer error, a verification error"),
	SeeAlso: []string{"iwconform(1)", "ib_write_bw(1)", "rping(1)"},
	Footer: func(w io.Writer) {
		fmt.Fprintf(w, "TEST: %s\nwithout HOST: server; with HOST: client\n", strings.Join(tests, ", "))
	},
	Values: map[string][]string{
		"":            tests,
		"A":           {"FETCH_AND_ADD", "CMP_AND_SWAP"},
		"atomic_type": {"FETCH_AND_ADD", "CMP_AND_SWAP"},
		"mpa-rev":     {"1", "2"},
	},
	Operands: "words",
}
