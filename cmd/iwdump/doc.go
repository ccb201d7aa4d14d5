package main

//go:generate env IWKIT_UPDATE_DOCS=1 go test -run ^TestDocs$ .

import (
	"github.com/iwkit/iwkit/internal/cli"
	"github.com/iwkit/iwkit/internal/exitcode"
	"github.com/iwkit/iwkit/render"
)

// doc is what iwdump's flags do not say: the source of -h, --help,
// docs/man/iwdump.1, the options of docs/iwdump.md and the completion
// scripts (internal/cli).
var doc = cli.Command{
	Name:    "iwdump",
	Summary: "dump and analyse iWARP (MPA, DDP, RDMAP) and its storage protocols in captures or live traffic",
	Synopsis: []string{
		"iwdump [-nqVx] [-c N] [-t r|a|ad|e] [-Y FILTER] [-T text|json] [-z STAT]... [--fail-on SEVERITY] [--workers N] {-r FILE [-r FILE]... | -i IFACE [-w FILE]} [capture filter]",
		"iwdump -r FILE -T fields -e FIELD [-e FIELD]... [-E OPTION]...",
		"iwdump -G fields",
		"iwdump --export DIR [--each] [--jobs N] {-r FILE [-r FILE]... | FILE...}",
	},
	Description: `iwdump reads pcap and pcapng files (plain or gzip-compressed, several merged in time order) or captures live (pure-Go AF_PACKET, -i any included) and prints iWARP as tcpdump prints TCP, with tshark's depth: one line per PDU (MPA Request/Reply, Send, RDMA Write, Read Request and Response, Terminate, RFC 7306 atomics), the field tree (-V), the octets (-x), NDJSON (-T json), tshark's -T fields, and statistics tables (-z).

It runs a streaming TCP reassembler and MPA framer (markers, CRC, retransmissions, loss with resynchronisation, captures that start mid-stream), tracks each connection's RDMA semantics (MSN, MO, Read matching, STags, Terminates in context) and decodes the storage protocols that ride on iWARP: NVMe-oF, iSER with iSCSI, SMB Direct with SMB2, RPC-over-RDMA with ONC RPC and NFS. What it finds wrong is reported as findings, inline and counted by -z findings; their codes are in docs/findings.md.

The arguments after the flags are a capture filter in pcap-filter syntax, compiled to classic BPF in Go: in the kernel with -i, on every frame with -r. -Y takes a display filter over the field names -G fields lists (docs/fields.md). --export writes Parquet tables for iwsql, DuckDB, Spark, Trino and ClickHouse (docs/export.md). The output does not depend on --workers.`,
	Common: []string{"r", "i", "w", "c", "n", "V", "x", "Y", "T", "e", "z", "fail-on", "export"},
	Examples: []cli.Example{
		{Cmd: "iwdump -r testdata/siw/rping.pcap", Text: "Print one line per PDU of a capture."},
		{Cmd: "iwdump -r capture.pcap -V -Y 'rdmap.opcode == \"Terminate\"'", Text: "Print the full field tree of every Terminate."},
		{Cmd: "iwdump -i eth0 -w nvmeof.pcapng 'tcp port 4420 and host 10.0.0.2'", Text: "Capture NVMe-oF traffic live, decode it and write it to a file."},
		{Cmd: "iwdump -r capture.pcap -q -z conv,findings,latency", Text: "Print only the connection, finding and Read-latency tables."},
		{Cmd: "iwdump -r capture.pcap -T fields -E header=y -e frame -e rdmap.opcode -e ddp.msn", Text: "Print chosen fields per frame, as tshark -T fields does."},
		{Cmd: "iwdump --export lake -r capture.pcap && iwsql lake 'SELECT code, count(*) FROM findings GROUP BY code'", Text: "Export the capture to Parquet and query it."},
	},
	Exit: append(cli.StandardExit("failure: unreadable or damaged file (everything before the damage is printed first), missing file or interface, capture error"),
		cli.Exit{Code: exitcode.Findings, Text: "--fail-on SEVERITY: a finding of that severity or worse was raised"},
		cli.Exit{Code: exitcode.DecoderPanic, Text: "a decoder panicked on the input; the panic was contained as an internal.decoder_panic finding and the rest of the output is complete (takes precedence over 4)"}),
	SeeAlso: []string{"iwtui(1)", "iwsql(1)", "iwreplay(1)", "iwgen(1)", "tcpdump(8)", "tshark(1)", "pcap-filter(7)"},
	Values: map[string][]string{
		"z":         render.StatNames,
		"t":         render.TimeFormats,
		"T":         {"text", "json", "fields"},
		"fail-on":   {"error", "warning", "note"},
		"progress":  {"auto", "always", "never"},
		"format":    {"pcap", "pcapng"},
		"E":         {"header=y", "header=n", "separator=/t", "separator=/s", "separator=,", "occurrence=f", "occurrence=l", "occurrence=a", "aggregator=,", "quote=d", "quote=s", "quote=n", "escape=y", "escape=n"},
		"G":         {"fields"},
		"decode-as": cli.DecodeAsValues(),
	},
	Fields: func() []string { return cli.ReadGlossary(render.WriteGlossary).Names() },
}
