package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gdamore/tcell/v2"
)

// TestLayoutSizes: golden main screens at 80×24, 120×40 and 200×50 with a
// PDU selected. At 80 columns the octets go under the detail, so the
// detail keeps the page's width (it was 3 columns wide beside a fixed
// 75-column octets pane).
func TestLayoutSizes(t *testing.T) {
	path := termCapture(t)
	for _, sz := range [][2]int{{80, 24}, {120, 40}, {200, 50}} {
		s, err := Open(Config{File: path})
		if err != nil {
			t.Fatal(err)
		}
		s.Wait()
		s.Name = "term.pcap"
		sc := screenSized(t, s, sz[0], sz[1])
		sc.runes("jjjjjjjjjj") // down the list to an FPDU
		sc.golden(fmt.Sprintf("layout-%dx%d", sz[0], sz[1]))
		_, _, tw, _ := sc.u.tree.GetRect()
		if tw < minTreeWidth {
			t.Errorf("%dx%d: the detail pane is %d columns wide", sz[0], sz[1], tw)
		}
		_, _, hw, hh := sc.u.hex.GetRect()
		if hw < hexWidth || hh < 3 {
			t.Errorf("%dx%d: the octets pane is %dx%d", sz[0], sz[1], hw, hh)
		}
		s.Close()
	}
}

// TestLayoutKeys: \ zooms the focused pane and back, | cycles the
// arrangement, + and - move the list's border.
func TestLayoutKeys(t *testing.T) {
	s := newScreen(t, termCapture(t))
	s.runes("jjjjjjjjjj")
	s.text()
	_, _, _, listH := s.u.table.GetRect()

	s.runes("\\")
	s.text()
	if _, _, _, h := s.u.table.GetRect(); h <= listH {
		t.Fatalf("zoomed list is %d lines, was %d", h, listH)
	}
	if _, _, w, h := s.u.tree.GetRect(); w > 0 && h > 0 {
		t.Fatalf("zoomed list: the detail pane is still %dx%d", w, h)
	}
	s.key(tcell.KeyTab) // the zoom follows the focus: the detail fills the page
	s.text()
	if _, _, _, h := s.u.tree.GetRect(); h < screenH-4 {
		t.Fatalf("zoomed detail is %d lines", h)
	}
	if _, _, _, h := s.u.table.GetRect(); h > 0 {
		t.Fatalf("zoomed detail: the list still has %d lines", h)
	}
	s.runes("\\")
	s.key(tcell.KeyEscape)
	s.text()
	if _, _, _, h := s.u.table.GetRect(); h != listH {
		t.Fatalf("after the zoom the list is %d lines, was %d", h, listH)
	}

	s.runes("|") // side by side
	s.text()
	_, ty, _, _ := s.u.tree.GetRect()
	_, hy, _, _ := s.u.hex.GetRect()
	if ty != hy {
		t.Fatalf("side by side: detail at row %d, octets at row %d", ty, hy)
	}
	s.runes("|") // stacked
	if !strings.Contains(s.text(), "panes: stacked") {
		t.Fatal("no word of the arrangement in the status line")
	}
	_, ty, _, _ = s.u.tree.GetRect()
	_, hy, _, _ = s.u.hex.GetRect()
	if hy <= ty {
		t.Fatalf("stacked: detail at row %d, octets at row %d", ty, hy)
	}

	s.runes("+++")
	s.text()
	_, _, _, grown := s.u.table.GetRect()
	s.runes("------")
	s.text()
	_, _, _, shrunk := s.u.table.GetRect()
	if !(grown > listH && shrunk < listH) {
		t.Fatalf("list %d lines, after + %d, after - %d", listH, grown, shrunk)
	}
}
