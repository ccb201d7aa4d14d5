package tui

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/rivo/tview"
)

// search is what f looks for, in the list, a view, the tree or the
// octets: text (case-insensitive), a regular expression written /re/, or
// octets written 0x followed by hex digits (spaces and colons allowed:
// 0x00 0a, 0x00:0a). In text (the list, views, the tree) hex octets are
// looked for as their hex digits; in the octets pane text and regular
// expressions match the octets themselves.
type search struct {
	text string         // lower case
	re   *regexp.Regexp // /re/
	hex  []byte         // 0x...
}

// newSearch parses what was typed (nil: nothing to look for, or a bad
// expression, whose error is returned).
func newSearch(s string) *search {
	m, _ := parseSearch(s)
	return m
}

func parseSearch(s string) (*search, error) {
	switch {
	case s == "":
		return nil, nil
	case len(s) >= 2 && s[0] == '/' && s[len(s)-1] == '/':
		re, err := regexp.Compile("(?i)" + s[1:len(s)-1])
		if err != nil {
			return nil, err
		}
		return &search{re: re}, nil
	case len(s) > 2 && (strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X")):
		digits := strings.NewReplacer(" ", "", ":", "", "-", "").Replace(s[2:])
		if b, err := hex.DecodeString(digits); err == nil && len(b) > 0 {
			return &search{hex: b, text: strings.ToLower(s)}, nil
		}
	}
	return &search{text: strings.ToLower(s)}, nil
}

// matchString reports whether s holds what is looked for.
func (m *search) matchString(s string) bool {
	switch {
	case m.re != nil:
		return m.re.MatchString(s)
	case m.hex != nil:
		l := strings.ToLower(s)
		return strings.Contains(l, hex.EncodeToString(m.hex)) || strings.Contains(l, m.text)
	}
	return strings.Contains(strings.ToLower(s), m.text)
}

// matchOctets returns the offset and length of the first match in b at
// or after from (-1 if none).
func (m *search) matchOctets(b []byte, from int) (int, int) {
	if from < 0 || from > len(b) {
		return -1, 0
	}
	switch {
	case m.re != nil:
		if loc := m.re.FindIndex(b[from:]); loc != nil && loc[1] > loc[0] {
			return from + loc[0], loc[1] - loc[0]
		}
		return -1, 0
	case m.hex != nil:
		if i := bytes.Index(b[from:], m.hex); i >= 0 {
			return from + i, len(m.hex)
		}
		return -1, 0
	}
	if i := bytes.Index(bytes.ToLower(b[from:]), []byte(m.text)); i >= 0 {
		return from + i, len(m.text)
	}
	return -1, 0
}

// findCtx is where f and n look: the view shown, or the pane in focus.
func (u *UI) findCtx() string {
	switch {
	case u.views[u.page] != nil:
		return "view"
	case u.page == "main" && u.App.GetFocus() == u.tree:
		return "tree"
	case u.page == "main" && u.App.GetFocus() == u.hex:
		return "octets"
	}
	return "list"
}

// find moves to the next match of text (dir +1 or -1, wrapping) in the
// list, the view shown, the tree or the octets; the status line says when
// there is none or the expression is bad.
func (u *UI) find(where, text string, dir int) {
	if text == "" {
		return
	}
	m, err := parseSearch(text)
	if err != nil {
		u.msg = "[red]" + tview.Escape(err.Error()) + "[-]"
		return
	}
	found := false
	switch where {
	case "view":
		if v := u.views[u.page]; v != nil {
			found = u.findView(v, text, dir)
		}
	case "tree":
		found = u.findTree(m, dir)
	case "octets":
		found = u.findOctets(m, dir)
	default:
		if found = u.List.find(m, dir); found {
			u.table.Select(u.List.Cursor+1, 0)
		}
	}
	if !found {
		u.msg = fmt.Sprintf("%q not found in the %s", text, where)
	}
}

// findTree selects the next detail line (unfolding what hides it) whose
// text matches.
func (u *UI) findTree(m *search, dir int) bool {
	d := u.detail
	if d == nil || len(d.Lines) == 0 {
		return false
	}
	r, _ := u.tree.GetSelection()
	cur := max(u.treeLine(r), 0)
	n := len(d.Lines)
	for k := 1; k <= n; k++ {
		i := ((cur+dir*k)%n + n) % n
		if m.matchString(d.Lines[i].Text) {
			d.Unfold(u.fold, i)
			u.drawTree(i)
			u.lineSelected(i)
			return true
		}
	}
	return false
}

// findOctets moves the octets' cursor to the next match (after the
// cursor, or before it), lighting it up and selecting its field.
func (u *UI) findOctets(m *search, dir int) bool {
	d := u.detail
	if d == nil || len(d.Wire) == 0 {
		return false
	}
	var offs, lens []int
	for from := 0; from <= len(d.Wire); {
		off, n := m.matchOctets(d.Wire, from)
		if off < 0 {
			break
		}
		offs, lens = append(offs, off), append(lens, n)
		from = off + 1
	}
	if len(offs) == 0 {
		return false
	}
	cur := u.hex.cursor
	k := 0
	if dir > 0 {
		for k < len(offs) && offs[k] <= cur {
			k++
		}
		k %= len(offs)
	} else {
		k = len(offs) - 1
		for k >= 0 && offs[k] >= cur {
			k--
		}
		if k < 0 {
			k = len(offs) - 1
		}
	}
	if u.hex.onCursor != nil {
		u.hex.onCursor(offs[k]) // selects the field there
	}
	u.hex.Highlight(offs[k], lens[k])
	return true
}
