package main

//go:generate env IWKIT_UPDATE_DOCS=1 go test -run ^TestDocs$ .

import (
	"io"

	"github.com/iwkit/iwkit/internal/cli"
	"github.com/iwkit/iwkit/internal/exitcode"
	"github.com/iwkit/iwkit/render"
	"github.com/iwkit/iwkit/tui"
)

// doc is what iwtui's flags do not say: the source of -h, --help,
// docs/man/iwtui.1, the options of docs/iwtui.md and the completion
// scripts (internal/cli). The keys come from tui's one key table.
var doc = cli.Command{
	Name:    "iwtui",
	Summary: "terminal inspector of iWARP captures and live traffic",
	Synopsis: []string{
		"iwtui [-Y FILTER] [--decode-as PORT[=PROTO]]... FILE [capture filter]",
		"iwtui [-Y FILTER] {-r FILE [-r FILE]... | -i IFACE [-s SNAPLEN] [-p] [-B KiB]} [capture filter]",
	},
	Description: `iwtui shows a capture as termshark shows one to a Wireshark user: the list of PDUs and findings, the field tree of the selected row and its octets, with findings, RDMA operations, connections, STags, storage-protocol commands and an I/O graph a key away. It reads pcap and pcapng files (plain or gzip-compressed, several merged in time order) or captures live, and uses the same capture input flags, capture filters and display filters as iwdump.

It is built for ssh sessions and big captures: the first screen shows at once and the index is built in the background (on the sharded pipeline for files of 64 MiB or more). It needs a terminal on standard output; for text output use iwdump.`,
	Common: []string{"r", "i", "Y", "decode-as", "D", "version"},
	Examples: []cli.Example{
		{Cmd: "iwtui testdata/siw/rping.pcap", Text: "Inspect a capture; ? lists the keys, q quits."},
		{Cmd: "iwtui -Y 'finding.severity == \"error\"' capture.pcap", Text: "Open a capture showing only its errors."},
		{Cmd: "iwtui -i eth0 'tcp port 4420'", Text: "Inspect NVMe-oF traffic live."},
	},
	Exit: append(cli.StandardExit("the capture cannot be opened or read, or the interface cannot capture"),
		cli.Exit{Code: exitcode.NotATerminal, Text: "standard output is not a terminal (use iwdump for text)"}),
	SeeAlso: []string{"iwdump(1)", "termshark(1)", "pcap-filter(7)"},
	Footer:  func(w io.Writer) { io.WriteString(w, tui.HelpText()+"\n") },
	Values: map[string][]string{
		"decode-as": cli.DecodeAsValues(),
	},
	Fields: func() []string { return cli.ReadGlossary(render.WriteGlossary).Names() },
}
