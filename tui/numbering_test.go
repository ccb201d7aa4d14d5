package tui

import (
	"strconv"
	"strings"
	"testing"
)

// TestFindingRowNumber (issue 29 bug 7): a finding's row in the list is
// numbered by the frame that raised it, as the findings view and iwdump
// number it, not by the last frame of the PDU it blames (a Terminate in
// frame 9 that blames frame 8 is row 9).
func TestFindingRowNumber(t *testing.T) {
	sc := newScreen(t, termCapture(t))
	ix := sc.u.S.Ix
	differ := 0
	for i := 0; i < ix.Len(); i++ {
		r := ix.Row(i)
		if r.Kind != RowFinding {
			continue
		}
		f := ix.Finding(int(r.Aux))
		if got := ix.Cell(i, &r, 0); got != strconv.Itoa(f.Frame) {
			t.Fatalf("row %d (%s): numbered %s, raised by frame %d", i, f.Code, got, f.Frame)
		}
		if int(r.Last) != f.Frame {
			differ++
		}
	}
	if differ == 0 {
		t.Fatal("no finding about a PDU of frames before the one that raised it: the test proves nothing")
	}
	// The list as drawn says the same.
	for i := 0; i < ix.Len(); i++ {
		if r := ix.Row(i); r.Kind == RowFinding {
			f := ix.Finding(int(r.Aux))
			if got := strings.TrimSpace(sc.u.table.GetCell(i+1, 0).Text); got != strconv.Itoa(f.Frame) {
				t.Fatalf("list row %d drawn as %q, raised by frame %d", i, got, f.Frame)
			}
		}
	}
}
