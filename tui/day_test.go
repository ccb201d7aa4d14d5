package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdamore/tcell/v2"
	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/internal/testenv"
	pcapbpf "github.com/iwkit/iwkit/pcap/bpf"
)

// TestEscBackToList: Esc in the tree or the octets pane puts the focus
// back on the list (it did nothing on the main page).
func TestEscBackToList(t *testing.T) {
	s := newScreen(t, termCapture(t))
	for _, tabs := range []int{1, 2} {
		for i := 0; i < tabs; i++ {
			s.key(tcell.KeyTab)
		}
		if s.u.App.GetFocus() == s.u.table {
			t.Fatalf("%d Tab: still on the list", tabs)
		}
		s.key(tcell.KeyEscape)
		if s.u.App.GetFocus() != s.u.table || s.u.pane != 0 {
			t.Fatalf("%d Tab, Esc: the focus is not on the list", tabs)
		}
	}
}

// TestFindStartsEmpty: f opens an empty bar (what is typed is the new
// search), not one holding the last search that typing appended to.
func TestFindStartsEmpty(t *testing.T) {
	s := newScreen(t, termCapture(t))
	s.runes("fSend")
	s.key(tcell.KeyEnter)
	s.runes("f")
	if got := s.u.bar.GetText(); got != "" {
		t.Fatalf("find bar opens with %q", got)
	}
	s.runes("Write")
	s.key(tcell.KeyEnter)
	if s.u.List.Search != "Write" {
		t.Fatalf("search is %q, want Write", s.u.List.Search)
	}
}

// TestFilterHistoryUp: with the last filter in the bar, Up recalls the one
// before it (it recalled the filter already shown).
func TestFilterHistoryUp(t *testing.T) {
	s := newScreen(t, termCapture(t))
	for _, f := range []string{"ddp.last", "rdmap.opcode == 0"} {
		s.runes("/")
		s.key(tcell.KeyCtrlU) // the bar opens holding the filter applied
		s.runes(f)
		s.key(tcell.KeyEnter)
		if s.u.barFor != "" {
			t.Fatalf("filter %q: the bar stayed open: %s", f, s.u.msg)
		}
		for fr := s.u.S.Filter(); ; { // the pass runs on its own goroutine
			if _, done, _ := fr.Status(); done {
				break
			}
		}
	}
	s.runes("/")
	if got := s.u.bar.GetText(); got != "rdmap.opcode == 0" {
		t.Fatalf("bar opens with %q", got)
	}
	s.key(tcell.KeyUp)
	if got := s.u.bar.GetText(); got != "ddp.last" {
		t.Fatalf("Up recalls %q, want ddp.last", got)
	}
}

// TestGotoNoRowSays: :N on a frame with no row says so in the status line
// (the message was set but the status line was not redrawn).
func TestGotoNoRowSays(t *testing.T) {
	s := newScreen(t, termCapture(t))
	n := 0
	for f := 1; f < 100; f++ {
		if i := s.u.S.Ix.FindRow(f); i >= 0 && int(s.u.S.Ix.Row(i).First) > f {
			n = f
			break
		}
	}
	if n == 0 {
		t.Fatal("every frame of the capture has a row") // its TCP handshake has none
	}
	next := s.u.S.Ix.Row(s.u.S.Ix.FindRow(n)).First
	s.runes(fmt.Sprintf(":%d", n))
	s.key(tcell.KeyEnter)
	if want := fmt.Sprintf("frame %d has no PDU; showing frame %d", n, next); !strings.Contains(s.text(), want) {
		t.Fatalf("no %q on screen:\n%s", want, s.text())
	}
	s.runes(":999999")
	s.key(tcell.KeyEnter)
	if want := "frame 999999: no PDU there"; !strings.Contains(s.text(), want) {
		t.Fatalf("no %q on screen:\n%s", want, s.text())
	}
}

// TestQuitDialogFocus: the live quit question shows which button has the
// focus, and after Cancel it opens on Quit again (Enter kept meaning
// Cancel: the modal remembered its last button).
func TestQuitDialogFocus(t *testing.T) {
	testenv.NeedRoot(t, "live capture on lo")
	prog, err := pcapbpf.Compile("tcp port 9", layers.LinkTypeEthernet, pcapbpf.Options{Kernel: true})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := Open(Config{Live: &analyze.LiveConfig{Iface: "lo", Filter: prog, Decode: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	s := screenFor(t, sess)
	focused := func() string {
		s.text()
		cells, w, h := s.sim.GetContents()
		for y := 0; y < h; y++ {
			line := ""
			for x := 0; x < w; x++ {
				c := cells[y*w+x]
				_, _, attr := c.Style.Decompose()
				if attr&tcell.AttrReverse != 0 && len(c.Runes) > 0 {
					line += string(c.Runes[0])
				}
			}
			for _, b := range []string{"Quit", "Cancel"} {
				if strings.Contains(line, b) {
					return b
				}
			}
		}
		return ""
	}
	s.runes("q")
	if s.u.page != "quit" {
		t.Fatalf("q on an unsaved live capture: page %q", s.u.page)
	}
	if got := focused(); got != "Quit" {
		t.Fatalf("focused button drawn: %q, want Quit", got)
	}
	s.key(tcell.KeyTab)
	if got := focused(); got != "Cancel" {
		t.Fatalf("after Tab the focused button drawn: %q, want Cancel", got)
	}
	s.key(tcell.KeyEnter)
	if s.u.page != "main" {
		t.Fatalf("Cancel left page %q", s.u.page)
	}
	s.runes("q")
	if got := focused(); got != "Quit" {
		t.Fatalf("second q: focused button %q, want Quit", got)
	}
}

// TestTruncatedStatusFrame: a capture cut inside a record says in the
// status line which frame is damaged, as iwdump does ("frame 25: ...").
func TestTruncatedStatusFrame(t *testing.T) {
	data, err := os.ReadFile("../testdata/siw/rping.pcap")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cut.pcap")
	if err := os.WriteFile(path, data[:3010], 0o644); err != nil { // inside frame 25's record
		t.Fatal(err)
	}
	s := newScreen(t, path)
	if want := "index: frame 25: unexpected EOF"; !strings.Contains(s.text(), want) {
		t.Fatalf("no %q on screen:\n%s", want, s.text())
	}
}

// TestTerminateMagenta: Terminate rows are magenta, as the help's legend
// promises (their own rdmap.terminate error made them red).
func TestTerminateMagenta(t *testing.T) {
	s := newScreen(t, termCapture(t))
	n := 0
	for i := 0; i < s.u.S.Ix.Len(); i++ {
		r := s.u.S.Ix.Row(i)
		if r.Kind == RowFPDU && r.Op == 7 {
			n++
			if c := rowColor(&r); c != palette.Terminate {
				t.Fatalf("Terminate row %d (frame %d) coloured %v", i, r.First, c)
			}
		}
	}
	if n == 0 {
		t.Fatal("no Terminate in the capture")
	}
	if !strings.Contains(HelpText(), "magenta Terminate") {
		t.Fatal("the legend no longer says magenta Terminate")
	}
}
