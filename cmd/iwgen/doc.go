package main

//go:generate env IWKIT_UPDATE_DOCS=1 go test -run ^TestDocs$ .

import (
	"fmt"
	"io"

	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/internal/cli"
)

// doc is what iwgen's flags do not say: the source of -h, --help,
// docs/man/iwgen.1, the options of docs/iwgen.md and the completion
// scripts (internal/cli). The built-in scenarios come from gen.
var doc = cli.Command{
	Name:    "iwgen",
	Summary: "write synthetic iWARP captures from scenarios, with impairments and ground truth",
	Synopsis: []string{
		"iwgen [-s NAME | --scenario FILE] -w FILE [--truth FILE] [--seed N] [--count N] [--size SIZE] [impairments]",
		"iwgen --list",
		"iwgen [-s NAME | --scenario FILE] --print yaml|json",
	},
	Description: `iwgen writes a synthetic iWARP capture (MPA/DDP/RDMAP over TCP over Ethernet, IPv4 or IPv6) as pcap, or pcapng when FILE ends in .pcapng, with nanosecond timestamps. The same scenario and seed always give the same octets; -truth writes what is on the wire (FPDUs, impairments, the findings an analyzer must raise) as JSON.

Scenario files are JSON or YAML (by extension) with the fields of gen.Scenario; start from a built-in with -print yaml. Sizes take suffixes: 64KiB, 1.5GB, 10G. Captures of any size stream in constant memory. Random impairments (drop, reorder, duplicate, retransmit, corrupt CRC or headers) are drawn from the seed.`,
	Common: []string{"s", "scenario", "w", "truth", "list", "print", "seed", "count", "size", "version"},
	Examples: []cli.Example{
		{Cmd: "iwgen -s rping --count 10 -w rping.pcap", Text: "rdma-core rping over siw, 10 pings."},
		{Cmd: "iwgen -s bulk-write --msgsize 64KiB --size 2GiB -w bulk.pcapng", Text: "A 2 GiB bulk RDMA Write capture, in constant memory."},
		{Cmd: "iwgen -s hostile -w bad.pcap --truth bad.json", Text: "Every impairment, and what an analyzer must find."},
		{Cmd: "iwgen -s mixed --print yaml > my.yaml", Text: "A scenario file to edit; then --scenario my.yaml."},
	},
	Exit:    cli.StandardExit("an error: a scenario file that cannot be read, a capture that cannot be written"),
	SeeAlso: []string{"iwdump(1)", "iwreplay(1)"},
	Footer: func(w io.Writer) {
		fmt.Fprintln(w, "built-in scenarios:")
		for _, b := range gen.Builtins() {
			fmt.Fprintf(w, "  %-16s %s\n", b[0], b[1])
		}
	},
	Values: map[string][]string{
		"s":        builtinNames(),
		"print":    {"yaml", "json"},
		"packing":  {"one", "pack", "stream"},
		"progress": {"auto", "always", "never"},
		"mpa-rev":  {"0", "1", "2"},
	},
	Operands: "none",
}

func builtinNames() []string {
	var n []string
	for _, b := range gen.Builtins() {
		n = append(n, b[0])
	}
	return n
}
