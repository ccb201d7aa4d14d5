package tui

import (
	"bytes"
	"encoding/base64"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/gdamore/tcell/v2"
)

// ttyBuf is a terminal for tcell's real terminfo screen: what tcell
// writes to the tty is kept; reads wait until it is closed.
type ttyBuf struct {
	mu   sync.Mutex
	out  bytes.Buffer
	quit chan struct{}
	once sync.Once
}

func (t *ttyBuf) Start() error        { return nil }
func (t *ttyBuf) Stop() error         { return nil }
func (t *ttyBuf) Drain() error        { return nil }
func (t *ttyBuf) NotifyResize(func()) {}
func (t *ttyBuf) WindowSize() (tcell.WindowSize, error) {
	return tcell.WindowSize{Width: 120, Height: 40}, nil
}
func (t *ttyBuf) Read(b []byte) (int, error) { <-t.quit; return 0, io.EOF }
func (t *ttyBuf) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.out.Write(b)
}
func (t *ttyBuf) Close() error { t.once.Do(func() { close(t.quit) }); return nil }
func (t *ttyBuf) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.out.String()
}

// osc52 is the sequence that sets the clipboard to text.
func osc52(text string) string {
	return "\x1b]52;c;" + base64.StdEncoding.EncodeToString([]byte(text)) + "\x1b\\"
}

// TestCopyOSC52: y on a tree field, on the list, in the octets and Y
// write OSC 52 with the base64 of the field's "name = value", the list
// line, the hex dump and the tree to the terminal, through tcell's tty.
func TestCopyOSC52(t *testing.T) {
	t.Setenv("TERM", "xterm-256color")
	s := newScreen(t, termCapture(t))
	tty := &ttyBuf{quit: make(chan struct{})}
	scr, err := tcell.NewTerminfoScreenFromTty(tty)
	if err != nil {
		t.Fatal(err)
	}
	if err := scr.Init(); err != nil {
		t.Fatal(err)
	}
	// Not Fini: its shutdown waits on tcell's own loops; closing the tty
	// ends the reader.
	defer tty.Close()
	s.u.keepScreen(scr)

	s.runes("jjjjjjjjjj") // down the list to an FPDU
	s.runes("y")
	i := s.u.List.RowAt(s.u.List.Cursor)
	r := s.u.S.Ix.Row(i)
	line := string(s.u.S.Ix.appendLine(nil, i, &r))
	if !strings.Contains(tty.String(), osc52(line)) {
		t.Fatalf("y on the list: no OSC 52 of %q in %q", line, tty.String())
	}
	s.key(tcell.KeyTab)
	s.runes("jjjjj") // a field of the tree
	s.runes("y")
	row, _ := s.u.tree.GetSelection()
	field := s.u.detail.Lines[s.u.treeLine(row)].Text
	if !strings.Contains(field, " = ") || !strings.Contains(tty.String(), osc52(field)) {
		t.Fatalf("y on the tree field %q: no OSC 52 of it in %q", field, tty.String())
	}
	if !strings.Contains(s.u.msg, "copied the tree line") {
		t.Errorf("status %q", s.u.msg)
	}
	s.runes("Y")
	if !strings.Contains(tty.String(), "\x1b]52;c;"+base64.StdEncoding.EncodeToString([]byte(s.u.detail.Lines[0].Text))[:16]) {
		t.Errorf("Y: no OSC 52 of the tree in %q", tty.String())
	}
	s.key(tcell.KeyTab) // the octets
	s.runes("y")
	dump := hexDump(s.u.detail.Wire)
	if !strings.HasPrefix(dump, "0000  ") || !strings.Contains(tty.String(), osc52(dump)) {
		t.Fatalf("y on the octets: no OSC 52 of %q", dump)
	}
}
