package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gdamore/tcell/v2"
	"github.com/iwkit/iwkit/gen"
)

// TestFollowStream: F shows the selected row's connection as its MPA
// stream: every PDU's boundary (seq range, frames), its octets in hex and
// ASCII as on the wire, markers in reverse (read-heavy puts markers
// toward the responder); d shows one direction, then the other; n and p
// page; q goes back.
func TestFollowStream(t *testing.T) {
	path := genCapture(t, t.TempDir(), "read-heavy", "rh.pcap", gen.Params{Seed: 3, Count: 80})
	s := newScreen(t, path)
	// A PDU row with markers in it.
	i := -1
	for k := 0; k < s.u.S.Ix.Len() && i < 0; k++ {
		if len(s.u.loader.Load(k).PDU.Markers) > 0 {
			i = k
		}
	}
	if i < 0 {
		t.Fatal("no FPDU with markers in the capture")
	}
	s.u.List.GoRow(i)
	s.u.table.Select(s.u.List.Cursor+1, 0)
	r := s.u.S.Ix.Row(i)
	s.runes("F")
	if s.u.page != "follow" {
		t.Fatalf("F: page %q", s.u.page)
	}
	text := s.u.follow.GetText(true)
	c := s.u.S.Ix.Conn(int(r.Conn))
	head := fmt.Sprintf("── %s ", c.DirName(r.Dir))
	if !strings.Contains(text, head) || !strings.Contains(text, fmt.Sprintf("seq %d-%d", r.Seq, r.End)) {
		t.Fatalf("no boundary of the selected PDU (%s seq %d-%d) in:\n%.600s", head, r.Seq, r.End, text)
	}
	d := s.u.loader.Load(i)
	if !strings.Contains(text, fmt.Sprintf("0000  %02x %02x %02x %02x", d.Wire[0], d.Wire[1], d.Wire[2], d.Wire[3])) {
		t.Fatalf("the PDU's octets are not shown:\n%.600s", text)
	}
	if !strings.Contains(text, "markers") || !strings.Contains(s.u.follow.GetText(false), "[::r]") {
		t.Errorf("no marker shown:\n%.1200s", text)
	}
	if s.u.follow.next < 0 {
		t.Fatal("one page holds the whole stream: n is not tested")
	}
	s.runes("n")
	if len(s.u.follow.pages) != 2 || s.u.follow.GetText(true) == text {
		t.Fatal("n did not page")
	}
	s.runes("p")
	if s.u.follow.GetText(true) != text {
		t.Fatal("p did not come back")
	}
	for _, want := range []string{"i2r", "r2i"} {
		s.runes("d")
		got := s.u.follow.GetText(true)
		other := map[string]string{"i2r": "r2i", "r2i": "i2r"}[want]
		if !strings.Contains(got, "── "+want+" ") || strings.Contains(got, "── "+other+" ") {
			t.Errorf("d: want %s only:\n%.400s", want, got)
		}
	}
	s.key(tcell.KeyEscape)
	if s.u.page != "main" {
		t.Fatalf("Esc: page %q", s.u.page)
	}
}
