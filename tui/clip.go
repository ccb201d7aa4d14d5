package tui

import (
	"fmt"
	"strings"

	"github.com/gdamore/tcell/v2"
)

// Copying to the clipboard by OSC 52 (xterm's "Manipulate Selection
// Data": ESC ] 52 ; c ; base64 ST): the terminal sets its own clipboard,
// so it works over ssh and inside tmux (set-clipboard on) where no X or
// Wayland clipboard is near. tcell writes the sequence through its tty
// (Screen.SetClipboard) on terminals it knows as xterm-like.
//
// y copies what the focused pane has selected: the list's line, the
// tree's line (a field: "name = value"), the octets as a hex dump; Y
// copies the whole tree.

// copyText puts text on the clipboard and says what was copied.
func (u *UI) copyText(what, text string) {
	if u.scr == nil || text == "" {
		u.msg = "[red]nothing to copy[-]"
		return
	}
	u.scr.SetClipboard([]byte(text))
	u.msg = fmt.Sprintf("copied %s (%d octets) to the clipboard (OSC 52)", what, len(text))
}

// copySelection copies what the focused pane has selected (y).
func (u *UI) copySelection() {
	switch u.App.GetFocus() {
	case u.tree:
		r, _ := u.tree.GetSelection()
		if i := u.treeLine(r); i >= 0 {
			u.copyText("the tree line", u.detail.Lines[i].Text)
			return
		}
	case u.hex:
		if u.detail != nil && len(u.detail.Wire) > 0 {
			u.copyText(fmt.Sprintf("%d octets", len(u.detail.Wire)), hexDump(u.detail.Wire))
			return
		}
	default:
		if i := u.List.RowAt(u.List.Cursor); i >= 0 {
			r := u.S.Ix.Row(i)
			u.copyText("the list line", string(u.S.Ix.appendLine(nil, i, &r)))
			return
		}
	}
	u.copyText("", "")
}

// copyTree copies the whole tree of the selected row, indented (Y).
func (u *UI) copyTree() {
	if u.detail == nil {
		u.copyText("", "")
		return
	}
	var b strings.Builder
	for _, ln := range u.detail.Lines {
		b.WriteString(strings.Repeat("  ", ln.Depth))
		b.WriteString(ln.Text)
		b.WriteByte('\n')
	}
	u.copyText("the tree", b.String())
}

// hexDump is octets as the hex pane and iwdump -x show them: offset, 16
// octets in hex, the printable ones.
func hexDump(b []byte) string {
	var s strings.Builder
	appendFollowDump(&s, b, nil, "")
	return s.String()
}

// keepScreen remembers the screen the application draws on (the
// clipboard is written through it).
func (u *UI) keepScreen(s tcell.Screen) { u.scr = s }
