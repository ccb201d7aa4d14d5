//go:build linux

package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"
	pcapbpf "github.com/iwkit/iwkit/pcap/bpf"
)

// TestLiveLoopbackIWARP on "any": iWARP traffic on lo captured on every
// interface at once, as Linux cooked frames, the capture filter applied in
// user space; each FPDU decoded exactly once (the outgoing copy of each
// loopback packet is dropped), -w holds the cooked frames and decodes the
// same.
func TestLiveAnyIWARP(t *testing.T) {
	checkLiveIWARP(t, "any", "listening on any, link-type LINUX_SLL (Linux cooked v1)", layers.LinkTypeLinuxSLL)
}

// -D lists "any" last, as tcpdump -D does; -d prints the user-space
// program for cooked frames.
func TestListInterfacesAny(t *testing.T) {
	var out, errb bytes.Buffer
	if c := run([]string{"-D"}, &out, &errb); c != exitOK {
		t.Fatalf("exit %d: %s", c, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; !strings.HasSuffix(last, ".any (Pseudo-device that captures on all interfaces) [Up, Running]") {
		t.Errorf("-D: last line %q", last)
	}
	out.Reset()
	if c := run([]string{"-i", "any", "-ddd", "tcp port 80"}, &out, &errb); c != exitOK {
		t.Fatalf("-d: exit %d: %s", c, errb.String())
	}
	want, _ := pcapbpf.Compile("tcp port 80", layers.LinkTypeLinuxSLL, pcapbpf.Options{})
	if out.String() != pcapbpf.FormatProgram(want) {
		t.Errorf("-i any -ddd:\n%s", out.String())
	}
}
