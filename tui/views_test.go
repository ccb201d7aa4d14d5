package tui

import (
	"strconv"
	"strings"
	"testing"

	"github.com/gdamore/tcell/v2"
	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/gen"
)

// viewLines is the text of column col of the view's lines, in order.
func viewLines(v *viewTable, col int) []string {
	var out []string
	for i := 0; i < v.len(); i++ {
		out = append(out, v.cell(v.entry(i), col))
	}
	return out
}

// TestViewSort (issue 29 misses 5): s sorts a view by its next column (a
// number as a number), S reverses, and after the last column s goes back
// to the view's own order; the title and the header say so.
func TestViewSort(t *testing.T) {
	s := newScreen(t, genCapture(t, t.TempDir(), "mixed", "m.pcap", gen.Params{Seed: 4, Conns: 3, Count: 6}))
	s.runes("o")
	v := s.u.views["ops"]
	own := viewLines(v, 0)
	if len(own) < 20 {
		t.Fatalf("%d operations", len(own))
	}
	// The operations open in request-frame order.
	for i := 1; i < len(own); i++ {
		a, _ := strconv.Atoi(own[i-1])
		b, _ := strconv.Atoi(own[i])
		if a > b {
			t.Fatalf("line %d: frame %d after %d", i, b, a)
		}
	}
	s.runes("ss") // from Frame (the own order): Time, then Conn
	if v.sortCol != 2 {
		t.Fatalf("sort column %d after ss, want 2 (Conn)", v.sortCol)
	}
	conns := viewLines(v, 2)
	for i := 1; i < len(conns); i++ {
		a, _ := strconv.Atoi(conns[i-1])
		b, _ := strconv.Atoi(conns[i])
		if a > b {
			t.Fatalf("sorted by Conn: line %d conn %d after %d", i, b, a)
		}
	}
	if !strings.Contains(s.text(), "sorted by Conn") || !strings.Contains(s.text(), "Conn▲") {
		t.Fatalf("title or header does not say the order:\n%s", s.text())
	}
	s.runes("S")
	rev := viewLines(v, 2)
	if rev[0] != conns[len(conns)-1] || rev[len(rev)-1] != conns[0] || !strings.Contains(s.text(), "(reversed)") {
		t.Fatalf("S did not reverse: first %s last %s", rev[0], rev[len(rev)-1])
	}
	s.runes("sS") // Dir, by its text, reversed
	dirs := viewLines(v, 3)
	for i := 1; i < len(dirs); i++ {
		if dirs[i-1] < dirs[i] {
			t.Fatalf("sorted by Dir reversed: %q before %q", dirs[i-1], dirs[i])
		}
	}
	for v.sortCol != -1 {
		s.runes("s")
	}
	s.runes("s") // wraps to the first column: the own order again
	if got := viewLines(v, 0); strings.Join(got, " ") != strings.Join(own, " ") {
		t.Fatal("back to the first column: not the view's own order")
	}
}

// TestViewFilterAndFind: the display filter applies to the views (each
// keeps the lines whose row it passes, and says so), and f searches the
// view shown (text, /regexp/), n the next match.
func TestViewFilterAndFind(t *testing.T) {
	s := newScreen(t, genCapture(t, t.TempDir(), "mixed", "m.pcap", gen.Params{Seed: 4, Conns: 3, Count: 6}))
	s.runes("o")
	all := s.u.views["ops"].len()
	s.key(tcell.KeyEscape)
	if err := s.u.ApplyFilter(`rdmap.opcode == 0`); err != nil {
		t.Fatal(err)
	}
	s.u.S.Filter()
	for {
		if _, done, _ := s.u.S.Filter().Status(); done {
			break
		}
	}
	s.u.Refresh()
	s.runes("o")
	v := s.u.views["ops"]
	ops := viewLines(v, 4)
	if len(ops) == 0 || len(ops) >= all {
		t.Fatalf("filtered operations view: %d lines of %d", len(ops), all)
	}
	for _, o := range ops {
		if o != decode.OpWrite.String() {
			t.Fatalf("filter Write: an operation %q shown", o)
		}
	}
	if !strings.Contains(s.text(), `filter "rdmap.opcode == 0": `+strconv.Itoa(len(ops))+" of "+strconv.Itoa(all)) {
		t.Fatalf("the title does not say the filter:\n%s", s.text())
	}
	// The connections view: only connections with a Write.
	s.runes("C")
	if n := s.u.views["conns"].len(); n == 0 {
		t.Fatal("filtered connections view empty")
	}
	s.key(tcell.KeyEscape)
	s.u.ApplyFilter("")
	s.u.List.SetFilter(nil)
	s.runes("o")
	v.t.Select(1, 0)
	s.runes("f/read req/")
	s.key(tcell.KeyEnter)
	r, _ := v.t.GetSelection()
	if got := v.cell(v.entry(r-1), 4); got != decode.OpReadRequest.String() {
		t.Fatalf("f /read req/: line %d is a %q", r, got)
	}
	s.runes("n")
	r2, _ := v.t.GetSelection()
	if r2 == r || v.cell(v.entry(r2-1), 4) != decode.OpReadRequest.String() {
		t.Fatalf("n: line %d (%q), was %d", r2, v.cell(v.entry(r2-1), 4), r)
	}
	s.runes("fno such operation")
	s.key(tcell.KeyEnter)
	if !strings.Contains(s.u.msg, "not found in the view") {
		t.Fatalf("no match: %q", s.u.msg)
	}
}

// TestFindTreeAndOctets: f in the tree finds a line (folded or not), f in
// the octets finds text, hex octets (0x...) and a /regexp/, and lights up
// what it found.
func TestFindTreeAndOctets(t *testing.T) {
	s := newScreen(t, termCapture(t))
	s.key(tcell.KeyDown)
	s.key(tcell.KeyDown) // an MPA frame: "MPA ID Req Frame" in its octets
	s.key(tcell.KeyTab)  // the tree
	s.runes("h")         // fold the line's protocol
	s.runes("fmpa.pd_length")
	s.key(tcell.KeyEnter)
	r, _ := s.u.tree.GetSelection()
	if i := s.u.treeLine(r); i < 0 || !strings.Contains(s.u.detail.Lines[i].Text, "mpa.pd_length") {
		t.Fatalf("f in the tree: row %d", r)
	}
	s.key(tcell.KeyTab) // the octets
	wire := s.u.detail.Wire
	for _, c := range []struct{ find, want string }{
		{"ID Re", "ID Re"},
		{"0x46 72 61", "Fra"},
		{"/fr.me/", "Frame"},
	} {
		s.u.hex.cursor = 0
		s.runes("f" + c.find)
		s.key(tcell.KeyEnter)
		off, n := s.u.hex.hiOff, s.u.hex.hiLen
		if off+n > len(wire) || !strings.EqualFold(string(wire[off:off+n]), c.want) {
			t.Fatalf("f %s in the octets: lit %d+%d %q, want %q", c.find, off, n, wire[off:min(off+n, len(wire))], c.want)
		}
	}
}

// TestViewOrderOffLoop: a view larger than bigView opens at once in its
// entries' order, the title saying it is sorting, and takes its order
// when the job off the event loop hands it over.
func TestViewOrderOffLoop(t *testing.T) {
	defer func(n int) { bigView = n }(bigView)
	bigView = 10
	s := newScreen(t, genCapture(t, t.TempDir(), "mixed", "m.pcap", gen.Params{Seed: 4, Conns: 3, Count: 6}))
	s.u.deferLater()
	s.runes("o")
	v := s.u.views["ops"]
	if !strings.Contains(v.t.GetTitle(), "sorting") {
		t.Fatalf("title while sorting: %q", v.t.GetTitle())
	}
	s.u.settle()
	if strings.Contains(v.t.GetTitle(), "sorting") {
		t.Fatalf("title after the job: %q", v.t.GetTitle())
	}
	frames := viewLines(v, 0)
	for i := 1; i < len(frames); i++ {
		a, _ := strconv.Atoi(frames[i-1])
		b, _ := strconv.Atoi(frames[i])
		if a > b {
			t.Fatalf("line %d: frame %d after %d", i, b, a)
		}
	}
	s.runes("sS") // a second job replaces the first's order
	s.runes("s")
	s.u.settle()
	if v.sortCol != 2 || v.rev {
		t.Fatalf("sort column %d reversed %v", v.sortCol, v.rev)
	}
}
