package tui

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdamore/tcell/v2"
	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/render"
	"github.com/rivo/tview"
)

var update = flag.Bool("update", false, "rewrite the golden screens in testdata/")

// screen drives a UI on a tcell.SimulationScreen without tview's event
// loop: keys go through the same dispatcher (the key table, then the
// focused widget), and each snapshot draws the whole screen.
type screen struct {
	t    *testing.T
	u    *UI
	sim  tcell.SimulationScreen
	w, h int
}

const screenW, screenH = 120, 36

func newScreen(t *testing.T, path string) *screen {
	s, err := Open(Config{File: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	s.Wait()
	s.Name = filepath.Base(path) // not the temporary directory
	return screenFor(t, s)
}

// screenFor puts session s on a simulated screen of the default size.
func screenFor(t *testing.T, s *Session) *screen { return screenSized(t, s, screenW, screenH) }

// screenSized puts session s on a simulated screen of w×h cells.
func screenSized(t *testing.T, s *Session, w, h int) *screen {
	u := New(s)
	sim := tcell.NewSimulationScreen("UTF-8")
	if err := sim.Init(); err != nil {
		t.Fatal(err)
	}
	sim.SetSize(w, h)
	u.App.SetScreen(sim)
	sim.SetSize(w, h)
	sim.Show() // the size takes effect here
	u.Refresh()
	return &screen{t: t, u: u, sim: sim, w: w, h: h}
}

func (s *screen) key(k tcell.Key) { s.send(tcell.NewEventKey(k, 0, tcell.ModNone)) }

func (s *screen) runes(text string) {
	for _, r := range text {
		s.send(tcell.NewEventKey(tcell.KeyRune, r, tcell.ModNone))
	}
}

func (s *screen) send(ev *tcell.EventKey) {
	if ev = s.u.keys(ev); ev == nil {
		return
	}
	if p := s.u.App.GetFocus(); p != nil {
		if h := p.InputHandler(); h != nil {
			h(ev, func(p tview.Primitive) { s.u.App.SetFocus(p) })
		}
	}
}

// text draws the screen and returns it as lines of text.
func (s *screen) text() string {
	s.u.pages.SetRect(0, 0, s.w, s.h)
	s.sim.Clear()
	s.u.pages.Draw(s.sim)
	s.sim.Show()
	cells, w, h := s.sim.GetContents()
	var b strings.Builder
	for y := 0; y < h; y++ {
		var line []rune
		for x := 0; x < w; x++ {
			c := cells[y*w+x]
			if len(c.Runes) > 0 {
				line = append(line, c.Runes[0])
			} else {
				line = append(line, ' ')
			}
		}
		b.WriteString(strings.TrimRight(string(line), " "))
		b.WriteByte('\n')
	}
	return b.String()
}

// golden compares the screen with testdata/name.golden.
func (s *screen) golden(name string) string {
	s.t.Helper()
	got := s.text()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			s.t.Fatal(err)
		}
		return got
	}
	want, err := os.ReadFile(path)
	if err != nil {
		s.t.Fatalf("%v (run go test ./tui -run Screen -update)", err)
	}
	if got != string(want) {
		s.t.Errorf("screen %s differs from %s:\n%s", name, path, got)
	}
	return got
}

func termCapture(t *testing.T) string {
	return genCapture(t, t.TempDir(), "every-terminate", "term.pcap", gen.Params{Seed: 1})
}

// TestScreens: a golden screen for each view and key path.
func TestScreens(t *testing.T) {
	path := termCapture(t)
	cases := []struct {
		name string
		keys func(s *screen)
	}{
		{"list", func(s *screen) {}},
		{"help", func(s *screen) { s.runes("?") }},
		{"filter-error", func(s *screen) { s.runes("/rdmap.opcode == ") }},
		{"filter-ok-typing", func(s *screen) { s.runes(`/rdmap.opcode == "Terminate"`) }},
		{"findings", func(s *screen) { s.runes("e") }},
		{"operations", func(s *screen) { s.runes("o") }},
		{"connections", func(s *screen) { s.runes("C") }},
		{"stags", func(s *screen) { s.runes("t") }},
		{"iograph", func(s *screen) { s.runes("i") }},
		{"iograph-octets-conn", func(s *screen) { s.runes("ivcc") }},
		{"tree-fold", func(s *screen) {
			s.runes(":254")
			s.key(tcell.KeyEnter)
			s.key(tcell.KeyTab)
			s.runes("jjhjhj ") // past the TCP line: MPA folded, DDP folded, RDMAP toggled
		}},
		{"tree-field", func(s *screen) {
			s.runes("jjjjjjjjjj") // down the list to an FPDU
			s.key(tcell.KeyTab)
			s.runes("jjjjj") // past the TCP line
		}},
		{"follow-conn", func(s *screen) { s.runes("jjjc") }},
		{"write-prompt", func(s *screen) { s.runes("w") }},
		{"pause", func(s *screen) { s.runes("p") }},
		{"views-back", func(s *screen) { s.runes("o"); s.key(tcell.KeyEscape); s.runes("e"); s.runes("q") }},
		{"search", func(s *screen) {
			s.runes("fmsn 1 L len 70")
			s.key(tcell.KeyEnter)
		}},
		{"marks", func(s *screen) { s.runes("jjmjjjjm'") }},
		{"follow-queue", func(s *screen) { s.runes(":254"); s.key(tcell.KeyEnter); s.runes("u") }},
		{"goto", func(s *screen) {
			s.runes(":254")
			s.key(tcell.KeyEnter)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newScreen(t, path)
			tc.keys(s)
			s.golden(tc.name)
		})
	}
}

// TestULPScreens: the storage-protocol layers on the real Linux captures:
// the NVMe-oF fields under the PDU's, the command they complete (Enter on
// ulp.request_frame goes to the command), the commands view, and the
// STags advertised by the commands (and by rping's Send).
func TestULPScreens(t *testing.T) {
	for _, name := range []string{"nvmeof", "iser", "smb_direct", "nfs42_rdma"} {
		t.Run(name, func(t *testing.T) {
			s := newScreen(t, "../testdata/ulp/"+name+".pcap")
			// The first response: its tree links to its command.
			resp, link := -1, 0
			for p := 0; p < s.u.List.Len() && resp < 0; p++ {
				i := s.u.List.RowAt(p)
				if !s.u.S.Ix.HasULP(i) {
					continue
				}
				for _, ln := range s.u.loader.Load(i).Lines {
					if ln.Key() == "ulp.request_frame" {
						resp, link = p, ln.Frame
					}
				}
			}
			if resp < 0 || link == 0 {
				t.Fatal("no response linked to its command")
			}
			s.u.List.Cursor = resp
			s.u.Refresh()
			s.key(tcell.KeyTab)
			for _, sec := range []string{"MPA", "DDP", "RDMAP", "FPDU framing"} {
				s.u.fold[sec] = true
			}
			s.u.drawTree(0)
			s.golden("ulp-tree-" + name)
			for k := 0; k < len(s.u.vis); k++ {
				if s.u.detail.Lines[s.u.vis[k]].Key() == "ulp.request_frame" {
					s.u.tree.Select(k, 0)
				}
			}
			s.key(tcell.KeyEnter)
			r := s.u.S.Ix.Row(s.u.List.RowAt(s.u.List.Cursor))
			if int(r.First) > link || link > int(r.Last) || !s.u.S.Ix.HasULP(s.u.List.RowAt(s.u.List.Cursor)) {
				t.Fatalf("Enter on ulp.request_frame %d: row of frames %d-%d", link, r.First, r.Last)
			}
			s.runes("U")
			s.golden("ulp-commands-" + name)
			if s.u.views["cmds"].t.GetRowCount() < 2 {
				t.Fatal("no commands")
			}
			s.runes("t")
			got := s.golden("ulp-stags-" + name)
			if !strings.Contains(got, "id ") {
				t.Fatal("no STag advertised by a command")
			}
		})
	}
}

// TestRpingAdvertisement: rping Sends its buffer's STag; the STags view
// shows the Send as the advertisement of the STag the Reads and Writes use.
func TestRpingAdvertisement(t *testing.T) {
	s := newScreen(t, "../testdata/siw/crc_rping.pcap")
	s.runes("t")
	got := s.golden("stags-rping")
	n := 0
	for _, st := range s.u.S.Ix.STags() {
		if st.Uses > 0 && st.Advertised > 0 && st.Advertised < st.FirstFrame && strings.HasPrefix(st.AdvBy, "rping Send") {
			n++
		}
	}
	if n == 0 {
		t.Fatalf("no used STag advertised by an rping Send before its first use:\n%s", got)
	}
}

// TestListStaysAtTop: a list drawn shorter than the screen (a few rows
// indexed, or a follow) does not chase the end when rows come in: the
// selected row stays on the screen.
func TestListStaysAtTop(t *testing.T) {
	s := newScreen(t, termCapture(t))
	s.runes("jjjc") // follow connection 2: a few rows
	s.text()
	s.runes("c") // all rows again
	s.u.Refresh()
	got := s.text()
	i := s.u.List.RowAt(s.u.List.Cursor)
	r := s.u.S.Ix.Row(i)
	if !strings.Contains(got, fmt.Sprintf("%8d %12s", r.Last, s.u.S.Ix.Cell(i, &r, 1))) {
		t.Fatalf("row of frame %d is not on the screen:\n%s", r.Last, got)
	}
	if off, _ := s.u.table.GetOffset(); off != 0 {
		t.Fatalf("list scrolled to row %d", off)
	}
}

// TestFilterApplied: Enter applies the filter; the list shows exactly the
// Terminates, and Esc on a bad filter keeps the list.
func TestFilterApplied(t *testing.T) {
	s := newScreen(t, termCapture(t))
	total := s.u.List.Len()
	s.runes(`/rdmap.opcode == "Terminate"`)
	s.key(tcell.KeyEnter)
	fr := s.u.S.Filter()
	for { // the pass runs on its own goroutine
		if _, done, _ := fr.Status(); done {
			break
		}
	}
	s.u.Refresh()
	n := s.u.List.Len()
	if n == 0 || n >= total {
		t.Fatalf("filter shows %d of %d rows", n, total)
	}
	for p := 0; p < n; p++ {
		r := s.u.S.Ix.Row(s.u.List.RowAt(p))
		if r.Kind != RowFPDU || r.Op != 7 {
			t.Fatalf("row %d shown is not a Terminate: %+v", p, r)
		}
	}
	s.golden("filter-applied")
	if got := s.u.List.History; len(got) != 1 || got[0] != `rdmap.opcode == "Terminate"` {
		t.Fatalf("history %q", got)
	}
	// A bad filter: Enter keeps the bar open and the list as it was.
	s.runes("/")
	s.key(tcell.KeyCtrlU)
	s.runes("rdmap.opcode ==")
	s.key(tcell.KeyEnter)
	if s.u.App.GetFocus() != s.u.bar || s.u.List.Len() != n {
		t.Fatal("a bad filter was applied")
	}
	s.key(tcell.KeyEscape)
	// Up in the bar recalls the history.
	s.runes("/")
	s.key(tcell.KeyCtrlU)
	s.key(tcell.KeyUp)
	if s.u.bar.GetText() != `rdmap.opcode == "Terminate"` {
		t.Fatalf("history recall %q", s.u.bar.GetText())
	}
}

// TestJumpToBlamedFrame: from a Terminate in the operations view, b goes
// to the row of the frame it blames.
func TestJumpToBlamedFrame(t *testing.T) {
	s := newScreen(t, termCapture(t))
	s.runes("o")
	v := s.u.views["ops"]
	row := -1
	for i := 0; i < v.len(); i++ {
		if _, b := v.jumpAt(i); b > 0 {
			row = i
			break
		}
	}
	if row < 0 {
		t.Fatal("no Terminate with a blamed frame")
	}
	v.t.Select(row+1, 0)
	s.runes("b")
	if s.u.page != "main" {
		t.Fatalf("page %s after b", s.u.page)
	}
	r := s.u.S.Ix.Row(s.u.List.RowAt(s.u.List.Cursor))
	_, want := v.jumpAt(row)
	if int(r.First) > want || want > int(r.Last) {
		t.Fatalf("cursor on frames %d-%d, want frame %d", r.First, r.Last, want)
	}
}

// TestHexFollowsTree: selecting a field lights up its octets, and moving
// in the hex selects the field there.
func TestHexFollowsTree(t *testing.T) {
	s := newScreen(t, termCapture(t))
	s.runes(":254")
	s.key(tcell.KeyEnter)
	s.key(tcell.KeyTab) // tree
	d := s.u.detail
	want := -1
	for i, ln := range d.Lines {
		if ln.Kind == render.NodeField && ln.Name == "ddp.msn" {
			want = i
		}
	}
	if want < 0 {
		t.Fatal("no ddp.msn line")
	}
	for i := 0; i < want; i++ {
		s.runes("j")
	}
	ln := d.Lines[want]
	if s.u.hex.hiOff != ln.Off || s.u.hex.hiLen != 4 {
		t.Fatalf("hex lights %d+%d, ddp.msn is at %d+4", s.u.hex.hiOff, s.u.hex.hiLen, ln.Off)
	}
	s.key(tcell.KeyTab) // hex
	s.key(tcell.KeyLeft)
	// One octet before the MSN is the QN's last octet.
	r, _ := s.u.tree.GetSelection()
	if ln := d.Lines[s.u.treeLine(r)]; ln.Kind != render.NodeField || ln.Name != "ddp.qn" {
		t.Fatalf("hex left of the MSN selects %q", d.Lines[s.u.treeLine(r)].Text)
	}
	// Folded away, the field unfolds when the hex selects it.
	s.key(tcell.KeyTab) // list
	s.key(tcell.KeyTab) // tree
	s.key(tcell.KeyLeft)
	if !s.u.fold["DDP"] {
		t.Fatalf("Left on a DDP field does not fold DDP: %v", s.u.fold)
	}
	s.key(tcell.KeyTab) // hex: its cursor on the DDP header's first octet
	s.key(tcell.KeyRight)
	s.key(tcell.KeyLeft)
	r, _ = s.u.tree.GetSelection()
	if ln := d.Lines[s.u.treeLine(r)]; s.u.fold["DDP"] || ln.Kind != render.NodeField || !strings.HasPrefix(ln.Name, "ddp.") {
		t.Fatalf("hex on the MSN: fold %v, line %q", s.u.fold, d.Lines[s.u.treeLine(r)].Text)
	}
}

// TestKeyTable: every action has one key, the help lists every row, and
// no key means two things in one place.
func TestKeyTable(t *testing.T) {
	seen := map[Action]bool{}
	help := HelpText()
	type at struct {
		k     tcell.Key
		r     rune
		where string
	}
	used := map[at]Action{}
	for _, k := range Keys {
		if !strings.Contains(help, k.Names) || !strings.Contains(help, k.Help) {
			t.Errorf("help lacks %q", k.Names)
		}
		if k.Action == ActNone {
			continue
		}
		seen[k.Action] = true
		for _, where := range []string{"main", "tree", "views", "graph"} {
			if k.Where != "all" && k.Where != where && !(k.Where == "main" && where == "tree") {
				continue
			}
			for _, r := range k.Runes {
				if prev, ok := used[at{tcell.KeyRune, r, where}]; ok && prev != k.Action {
					t.Errorf("%q means two actions in %s", r, where)
				}
				used[at{tcell.KeyRune, r, where}] = k.Action
				if got := Lookup(tcell.NewEventKey(tcell.KeyRune, r, 0), where); got != k.Action {
					t.Errorf("Lookup(%q, %s) = %d, want %d", r, where, got, k.Action)
				}
			}
			for _, kk := range k.Keys {
				if prev, ok := used[at{kk, 0, where}]; ok && prev != k.Action {
					t.Errorf("%v means two actions in %s", kk, where)
				}
				used[at{kk, 0, where}] = k.Action
				if got := Lookup(tcell.NewEventKey(kk, 0, 0), where); got != k.Action {
					t.Errorf("Lookup(%v, %s) = %d, want %d", kk, where, got, k.Action)
				}
			}
		}
	}
	for a := ActFilter; a < numActions; a++ {
		if !seen[a] {
			t.Errorf("action %d has no key", a)
		}
	}
	// termshark's habits.
	for r, a := range map[rune]Action{'/': ActFilter, '?': ActHelp, 'q': ActQuit} {
		if Lookup(tcell.NewEventKey(tcell.KeyRune, r, 0), "main") != a {
			t.Errorf("%q is not termshark's", r)
		}
	}
	if Lookup(tcell.NewEventKey(tcell.KeyTab, 0, 0), "main") != ActNextPane {
		t.Error("Tab does not move between panes")
	}
}

// TestHexMouse: a click on an octet's hex digits or on its character
// moves the cursor there.
func TestHexMouse(t *testing.T) {
	h := newHexView()
	h.SetRect(0, 0, 80, 10)
	data := make([]byte, 100)
	h.SetData(data)
	var got []int
	h.onCursor = func(off int) { got = append(got, off) }
	click := func(x, y int) {
		ev := tcell.NewEventMouse(x, y, tcell.Button1, 0)
		h.MouseHandler()(tview.MouseLeftClick, ev, func(tview.Primitive) {})
	}
	// Inner rect starts at (1, 1): line 0 is offsets 0-15.
	click(1+6+3*3, 1)       // hex of octet 3
	click(1+6+3*9+1, 2)     // hex of octet 9 on line 1 (after the middle gap): 25
	click(1+6+16*3+2+15, 3) // character of octet 15 on line 2: 47
	want := []int{3, 25, 47}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("clicks went to %v, want %v", got, want)
	}
}
