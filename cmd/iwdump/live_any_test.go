//go:build linux

package main

import (
	"bytes"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/pcap"
)

// TestLiveLoopbackIWARP on "any": iWARP traffic on lo captured on every
// interface at once, as Linux cooked frames, the capture filter applied in
// user space; each FPDU decoded exactly once (the outgoing copy of each
// loopback packet is dropped), -w holds the cooked frames and decodes the
// same.
func TestLiveAnyIWARP(t *testing.T) {
	needLiveCapture(t)
	const n = 300
	peers := newIWARPPeers(t)
	defer peers.ln.Close()
	other, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	file := filepath.Join(t.TempDir(), "any.pcapng")
	args := []string{"-i", "any", "-T", "json", "-w", file, "-z", "conv", "tcp", "port", fmt.Sprint(peers.port)}
	stdout, stderr, code := runLive(t, args, func() {
		u, _ := net.DialUDP("udp4", nil, other.LocalAddr().(*net.UDPAddr))
		for i := 0; i < 50; i++ {
			u.Write([]byte("not iwarp"))
		}
		u.Close()
		peers.run(t, n)
	})
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	t.Logf("stderr:\n%s", stderr)
	for _, want := range []string{"listening on any, link-type LINUX_SLL (Linux cooked v1)", "packets captured", "packets received by filter", "0 packets dropped by kernel"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "not decoded") {
		t.Errorf("the decoder fell behind:\n%s", stderr)
	}
	if !strings.Contains(stdout, "live capture on any") {
		t.Errorf("-z conv lacks the capture statistics")
	}
	var ndjson []byte
	for _, line := range strings.SplitAfter(stdout, "\n") {
		if strings.HasPrefix(line, "{") {
			ndjson = append(ndjson, line...)
		}
	}
	seen, mpa := countPDUs(t, ndjson)
	checkEachOnce(t, seen, mpa, n)

	r, err := pcap.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	frames := 0
	var f pcap.Frame
	var p pcap.Packet
	for r.Next(&f) == nil {
		frames++
		if f.LinkType != layers.LinkTypeLinuxSLL {
			t.Fatalf("frame %d: link type %v in -w", f.Number, f.LinkType)
		}
		if err := pcap.DecodeTCP(f.LinkType, f.Data, &p); err != nil || (int(p.SrcPort) != peers.port && int(p.DstPort) != peers.port) {
			t.Errorf("frame %d in -w is not the test connection (%v)", f.Number, err)
		}
	}
	r.Close()
	if !strings.Contains(stderr, fmt.Sprintf("%d packets captured", frames)) {
		t.Errorf("%d frames in %s; stderr says:\n%s", frames, file, stderr)
	}
	var out, errb bytes.Buffer
	if c := run([]string{"-r", file, "-T", "json"}, &out, &errb); c != exitOK {
		t.Fatalf("-r %s: exit %d: %s", file, c, errb.String())
	}
	seen2, mpa2 := countPDUs(t, out.Bytes())
	checkEachOnce(t, seen2, mpa2, n)
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
	want, _ := pcap.CompileFilter("tcp port 80", layers.LinkTypeLinuxSLL, pcap.FilterOptions{})
	if out.String() != pcap.FormatProgram(want) {
		t.Errorf("-i any -ddd:\n%s", out.String())
	}
}
