package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/pcap"
)

type capFrame struct {
	ts   time.Time
	data []byte
	orig int // length on the wire
}

// writeFrames writes frames to a pcap file in dir.
func writeFrames(t *testing.T, dir, name string, frames []capFrame) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := pcap.NewWriter(f, pcap.FormatPcap, layers.LinkTypeEthernet, 65535)
	if err != nil {
		t.Fatal(err)
	}
	for _, fr := range frames {
		if err := w.WriteFrame(fr.ts, fr.data, fr.orig); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return path
}

type frameList []capFrame

func (l *frameList) WriteFrame(ts time.Time, data []byte, orig int) error {
	*l = append(*l, capFrame{ts, bytes.Clone(data), max(orig, len(data))})
	return nil
}

// A capture point can show an ACK before the data it acknowledges (the
// two directions cross different CPUs, as on lo): that is no loss, and
// iwdump must not report one. The same capture with those data segments
// really missing must still report the loss.
func TestCaptureOrderInversion(t *testing.T) {
	sc, err := gen.Builtin("mixed", gen.Params{Seed: 4, Count: 10, Conns: 2})
	if err != nil {
		t.Fatal(err)
	}
	var frames frameList
	if _, err := gen.Run(sc, &frames, nil); err != nil {
		t.Fatal(err)
	}
	// Swap every data segment with an ACK from the other side that
	// follows it and covers it; keep the timestamps in file order.
	swapped := append(frameList(nil), frames...)
	var dropped frameList
	var a, b pcap.Packet
	inverted := 0
	for i := 0; i < len(swapped); i++ {
		if i+1 < len(swapped) &&
			pcap.DecodeTCP(layers.LinkTypeEthernet, swapped[i].data, &a) == nil && len(a.Payload) > 0 &&
			pcap.DecodeTCP(layers.LinkTypeEthernet, swapped[i+1].data, &b) == nil &&
			b.SrcPort == a.DstPort && b.DstPort == a.SrcPort && b.Flags&pcap.TCPAck != 0 &&
			int32(b.Ack-(a.Seq+uint32(len(a.Payload)))) >= 0 {
			swapped[i].data, swapped[i+1].data = swapped[i+1].data, swapped[i].data
			swapped[i].orig, swapped[i+1].orig = swapped[i+1].orig, swapped[i].orig
			inverted++
			if inverted == 5 { // the twin: that data segment never captured
				dropped = append(dropped, swapped[i])
				i++
				continue
			}
			dropped = append(dropped, swapped[i], swapped[i+1])
			i++
			continue
		}
		dropped = append(dropped, swapped[i])
	}
	if inverted < 20 {
		t.Fatalf("only %d ACKs could be put before their data", inverted)
	}
	dir := t.TempDir()
	findings := func(path string) string {
		var out, errb bytes.Buffer
		if code := run([]string{"-r", path, "-Y", "finding.code == \"tcp.gap\" || finding.code == \"track.uncertain_after_gap\" || finding.severity == \"error\""}, &out, &errb); code != exitOK {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		return out.String()
	}
	if got := findings(writeFrames(t, dir, "inverted.pcap", swapped)); got != "" {
		t.Errorf("%d ACKs shown before their data: findings\n%s", inverted, got)
	}
	got := findings(writeFrames(t, dir, "lost.pcap", dropped))
	if !strings.Contains(got, "tcp.gap") || !strings.Contains(got, "track.uncertain_after_gap") {
		t.Errorf("a data segment missing: want a gap reported, got\n%s", got)
	}
}
