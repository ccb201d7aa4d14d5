package main

//go:generate env IWKIT_UPDATE_DOCS=1 go test -run ^TestDocs$ .

import "github.com/iwkit/iwkit/internal/cli"

// doc is what iwreplay's flags do not say: the source of -h, --help,
// docs/man/iwreplay.1, the options of docs/iwreplay.md and the completion
// scripts (internal/cli).
var doc = cli.Command{
	Name:    "iwreplay",
	Summary: "replay iWARP captures onto an interface, or one side of them statefully against a live peer",
	Synopsis: []string{
		"iwreplay -i IFACE [--pps N | --mbps N | --multiplier X | --topspeed] [--loop N] [--limit N] [--duration S] [--preload] [--stats S] FILE",
		"iwreplay {--connect HOST:PORT | --listen [ADDR:]PORT} [--conn N] [--assume LIST] [--decode-as PORT[=proto]] [--multiplier X | --topspeed] [--timeout S] [--mask RULES] [--pcap FILE] [--json] FILE",
	},
	Description: `Stateless, iwreplay sends the frames of a capture onto an Ethernet interface as captured, with tcpreplay's flags, pacing and closing report, through a pure-Go AF_PACKET socket (no libpcap; root or CAP_NET_RAW).

Stateful (--connect or --listen), it plays one side of the capture's iWARP connections through the iwkit endpoint against a live peer, over a real TCP connection: it negotiates MPA as the capture did, sends what that side sent, and compares what the peer does with the capture, operation by operation. Differences are reported, as text or JSON.`,
	Common: []string{"i", "pps", "mbps", "multiplier", "topspeed", "loop", "connect", "listen", "json", "version"},
	Examples: []cli.Example{
		{Cmd: "iwreplay -i veth0 --pps 10000 --loop 5 testdata/siw/ib_write_bw_4096.pcap", Text: "Send a capture's frames onto veth0 at 10000 packets per second, five times."},
		{Cmd: "iwreplay --listen 7170 testdata/siw/rping.pcap", Text: "Play the responder's side of an rping capture (rping -s) for a live client."},
		{Cmd: "iwreplay --connect 10.0.2.15:7170 -t testdata/siw/rping.pcap", Text: "Play the initiator's side (rping -c) against a live server, as fast as it answers."},
	},
	Exit:    cli.StandardExit("failure: a packet could not be sent, the capture cannot be read, or the stateful replay found a difference"),
	SeeAlso: []string{"iwdump(1)", "iwconform(1)", "tcpreplay(1)"},
}
