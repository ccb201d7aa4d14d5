package analyze

import (
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/internal/oracle"
	"github.com/iwkit/iwkit/pcap"
)

type segCollector struct {
	frames map[string][]int // by what the segment is
	pdus   int
}

func (c *segCollector) Record(r *Record) {
	switch r.Kind {
	case KindPDU:
		c.pdus++
	case KindSegment:
		s := &r.Seg
		if r.Conn == nil || r.Frame != s.Frame || r.Src != r.Conn.Addr[s.Dir] {
			c.frames["bad"] = append(c.frames["bad"], r.Frame)
		}
		add := func(k string) { c.frames[k] = append(c.frames[k], r.Frame) }
		switch {
		case s.Flags&(pcap.TCPSyn|pcap.TCPFin|pcap.TCPRst) != 0:
			add("synfinrst")
		case s.Len == 0:
			add("ack")
		}
		if s.Retrans > 0 || s.Late {
			add("retrans") // tshark's tcp.analysis.retransmission: either
		}
		if s.OutOfOrder {
			add("ooo")
		}
	}
}

// TestSegments: with Config.Segments the pipeline hands out the TCP
// segments that open or close a connection, carry no data, or carry data
// already received (retransmissions) or beyond a hole: the frames tshark
// finds so (flags, tcp.len == 0, tcp.analysis), on one worker and
// sharded alike; without it, none.
func TestSegments(t *testing.T) {
	bin := oracle.Tshark(t)
	file := "../testdata/gen/impaired/example.pcapng"
	tshark := func(display string) []int {
		out, err := exec.Command(bin, "-r", file, "-n", "-Y", display, "-T", "fields", "-e", "frame.number").Output()
		if err != nil {
			t.Fatalf("tshark -Y %s: %v", display, err)
		}
		var fr []int
		for _, l := range strings.Fields(string(out)) {
			n, _ := strconv.Atoi(l)
			fr = append(fr, n)
		}
		return fr
	}
	want := map[string][]int{
		"synfinrst": tshark("tcp.flags.syn == 1 || tcp.flags.fin == 1 || tcp.flags.reset == 1"),
		"ack":       tshark("tcp.len == 0 && tcp.flags.syn == 0 && tcp.flags.fin == 0 && tcp.flags.reset == 0"),
		"retrans":   tshark("tcp.analysis.retransmission"),
		"ooo":       tshark("tcp.analysis.lost_segment || tcp.analysis.out_of_order"),
	}
	if len(want["synfinrst"]) == 0 || len(want["ack"]) == 0 || len(want["retrans"]) == 0 || len(want["ooo"]) == 0 {
		t.Fatalf("the capture lacks a kind of segment: %v", want)
	}
	for _, workers := range []int{1, 2} {
		src, _, err := OpenFiles([]string{file})
		if err != nil {
			t.Fatal(err)
		}
		c := &segCollector{frames: map[string][]int{}}
		if _, err := Run(src, Config{Workers: workers, Segments: true}, c); err != nil {
			t.Fatal(err)
		}
		src.Close()
		for k, w := range want {
			g := c.frames[k]
			sort.Ints(g)
			if fmt.Sprint(g) != fmt.Sprint(w) {
				t.Errorf("workers %d: %s segments at frames %v, tshark %v", workers, k, g, w)
			}
		}
		if len(c.frames["bad"]) > 0 {
			t.Errorf("workers %d: segment records without their connection or direction at frames %v", workers, c.frames["bad"])
		}
		if c.pdus == 0 {
			t.Fatal("no PDUs")
		}
	}
	src, _, _ := OpenFiles([]string{file})
	defer src.Close()
	c := &segCollector{frames: map[string][]int{}}
	Run(src, Config{Workers: 1}, c)
	if len(c.frames) != 0 {
		t.Errorf("segments without Config.Segments: %v", c.frames)
	}
}
