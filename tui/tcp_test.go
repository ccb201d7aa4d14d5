package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/pcap"
)

// segFrames collects the frames of the segment records a row is kept for.
type segFrames struct{ frames []int }

func (s *segFrames) Record(r *analyze.Record) {
	if keptSegment(r) {
		s.frames = append(s.frames, r.Frame)
	}
}

// TestTCPRows: T shows a row per TCP segment the pipeline reports (SYN,
// FIN, RST, bare ACKs, retransmissions, out of order), interleaved with
// the PDU rows in frame order; the tree of a TCP row and of a PDU row has
// the TCP line; a display filter on the endpoints selects TCP rows too;
// T again shows the PDU rows alone, as before.
func TestTCPRows(t *testing.T) {
	file := "../testdata/gen/impaired/example.pcapng"
	s, err := Open(Config{File: file})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Wait()
	src, _, err := analyze.OpenFiles([]string{file})
	if err != nil {
		t.Fatal(err)
	}
	want := &segFrames{}
	analyze.Run(src, analyze.Config{Workers: 1, Segments: true}, want)
	src.Close()
	if len(want.frames) == 0 || s.Ix.TCPLen() != len(want.frames) {
		t.Fatalf("%d TCP rows, the pipeline reports %d segments", s.Ix.TCPLen(), len(want.frames))
	}
	l := newList(s.Ix)
	pdus := l.Len()
	l.SetTCP(true)
	if l.Len() != pdus+len(want.frames) {
		t.Fatalf("with TCP: %d rows, want %d + %d", l.Len(), pdus, len(want.frames))
	}
	var got []int
	last, kinds := 0, map[string]int{}
	for p := 0; p < l.Len(); p++ {
		i := l.RowAt(p)
		r := s.Ix.Row(i)
		if r.Kind == RowTCP {
			got = append(got, int(r.Last))
			sum := s.Ix.Cell(i, &r, 4)
			for _, k := range []string{"[SYN]", "[SYN, ACK]", "FIN", "retransmission", "out of order", "late"} {
				if strings.Contains(sum, k) {
					kinds[k]++
				}
			}
		}
		if r.Kind != RowFinding && int(r.Last) < last {
			t.Errorf("row %d (frame %d) after frame %d", p, r.Last, last)
		}
		if r.Kind != RowFinding {
			last = int(r.Last)
		}
	}
	if len(got) != len(want.frames) {
		t.Fatalf("TCP rows at frames %v, want %v", got, want.frames)
	}
	for k, n := range map[string]int{"[SYN]": 1, "[SYN, ACK]": 1, "FIN": 2, "retransmission": 1, "out of order": 1, "late": 1} {
		if kinds[k] < n {
			t.Errorf("%d TCP rows say %q, want at least %d (%v)", kinds[k], k, n, kinds)
		}
	}
	// The trees: a TCP row's, and a PDU row's first line after the head.
	ld := &loader{ix: s.Ix, run: s.rerun}
	first := l.RowAt(0)
	if r := s.Ix.Row(first); r.Kind != RowTCP || r.Op&pcap.TCPSyn == 0 {
		t.Fatalf("first row %+v, want the SYN", r)
	}
	d := ld.Load(first)
	if len(d.Lines) < 2 || !strings.HasPrefix(d.Lines[1].Text, "TCP frame 1: ") || !strings.Contains(d.Lines[1].Text, "[SYN] win ") {
		t.Fatalf("SYN row tree: %+v", d.Lines)
	}
	d = ld.Load(0) // the first PDU row: the MPA Request
	if len(d.Lines) < 2 || !strings.HasPrefix(d.Lines[1].Text, "TCP frame ") || !strings.Contains(d.Lines[1].Text, " ack ") {
		t.Fatalf("PDU row tree: %+v", d.Lines)
	}
	// A filter on the endpoints shows TCP rows too; GoRow finds its row.
	port := s.Ix.Conn(int(s.Ix.Row(0).Conn)).Addr[1].Port()
	fr, err := s.ApplyFilter(fmt.Sprintf("tcp.dstport == %d && frame.time_relative >= 0", port))
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, done, _ := fr.Status(); done {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	l.SetFilter(fr)
	tcpShown := 0
	for p := 0; p < l.Len(); p++ {
		if s.Ix.Row(l.RowAt(p)).Kind == RowTCP {
			tcpShown++
		}
	}
	if tcpShown == 0 || l.Len() == 0 {
		t.Fatalf("filter with TCP: %d rows, %d TCP", l.Len(), tcpShown)
	}
	l.SetFilter(nil)
	mid := l.RowAt(l.Len() / 2)
	l.GoRow(mid)
	if l.RowAt(l.Cursor) != mid {
		t.Fatalf("GoRow(%d) went to %d", mid, l.RowAt(l.Cursor))
	}
	l.SetTCP(false)
	if l.Len() != pdus || !l.all {
		t.Fatalf("TCP off: %d rows (all %v), want %d", l.Len(), l.all, pdus)
	}
}
