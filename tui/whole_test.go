package tui

import (
	"strings"
	"testing"

	"github.com/gdamore/tcell/v2"
)

// TestWholeLine: at 80 columns a long finding message is cut with "…" in
// the findings view; x shows it whole (wrapped), Esc goes back to the view.
func TestWholeLine(t *testing.T) {
	path := termCapture(t)
	s, err := Open(Config{File: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Wait()
	sc := screenSized(t, s, 80, 24)
	long := ""
	for _, f := range s.Ix.Findings() {
		if len(f.Message) > len(long) {
			long = f.Message
		}
	}
	if len(long) < 60 {
		t.Fatalf("the capture's longest finding message has %d characters", len(long))
	}
	sc.runes("e")
	v := sc.u.views["findings"].t
	for r := 1; r < v.GetRowCount(); r++ { // select the finding with the long message
		if c := v.GetCell(r, v.GetColumnCount()-1); c != nil && strings.Contains(c.Text, long) {
			v.Select(r, 0)
			break
		}
	}
	if strings.Contains(sc.text(), long) {
		t.Fatal("the message is not cut at 80 columns: the test shows nothing")
	}
	sc.runes("x")
	if sc.u.page != "whole" {
		t.Fatalf("x: page %q", sc.u.page)
	}
	var inside []string // the window's lines, between its borders
	for _, ln := range strings.Split(sc.text(), "\n") {
		if a, b := strings.Index(ln, "║"), strings.LastIndex(ln, "║"); a >= 0 && b > a {
			inside = append(inside, ln[a+len("║"):b])
		}
	}
	flat := strings.Join(strings.Fields(strings.Join(inside, " ")), " ")
	if !strings.Contains(flat, strings.Join(strings.Fields(long), " ")) {
		t.Fatalf("the whole message %q is not in the window:\n%s", long, sc.text())
	}
	sc.key(tcell.KeyEscape)
	if sc.u.page != "findings" || sc.u.App.GetFocus() != v {
		t.Fatalf("Esc: page %q", sc.u.page)
	}
}
