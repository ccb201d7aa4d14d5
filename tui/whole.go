package tui

import (
	"strings"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
)

// The whole line: a row of the list, a line of the tree or of a view is cut
// with "…" where the pane is narrower than it (long finding messages are);
// x shows the selected line whole, wrapped, in a window of its own.

// selectedTable is the table whose selected line x shows: the focused pane
// of the main page (the list or the tree), or the view shown.
func (u *UI) selectedTable() *tview.Table {
	if v := u.views[u.page]; v != nil {
		return v.t
	}
	if u.page == "main" && u.App.GetFocus() == u.tree {
		return u.tree
	}
	if u.page == "main" {
		return u.table
	}
	return nil
}

// wholeLine is the selected line of t, a cell a line, each after its
// column's name where t has a header row (cells not selectable).
func wholeLine(t *tview.Table) string {
	row, _ := t.GetSelection()
	if row < 0 || row >= t.GetRowCount() {
		return ""
	}
	var b strings.Builder
	for c := 0; c < t.GetColumnCount(); c++ {
		cell := t.GetCell(row, c)
		if cell == nil || strings.TrimSpace(cell.Text) == "" {
			continue
		}
		if h := t.GetCell(0, c); row > 0 && h != nil && h.NotSelectable && strings.TrimSpace(h.Text) != "" {
			b.WriteString(strings.TrimSpace(h.Text))
			b.WriteString(": ")
		}
		b.WriteString(strings.TrimSpace(cell.Text))
		b.WriteString("\n")
	}
	return b.String()
}

// showWhole opens the window with the selected line whole; Esc, q or x
// closes it.
func (u *UI) showWhole() {
	t := u.selectedTable()
	if t == nil {
		return
	}
	text := wholeLine(t)
	if text == "" {
		return
	}
	u.showText(" The whole line: Esc, q or x closes ", text)
}

// showText opens the window with text (the whole line, the recent
// files) under title.
func (u *UI) showText(title, text string) {
	u.whole.SetTitle(title)
	u.whole.SetText(text).ScrollToBeginning()
	u.wholeFrom = u.page
	u.pages.ShowPage("whole")
	u.page = "whole"
	u.App.SetFocus(u.whole)
}

// newWhole makes the window: a bordered text view, wrapped, centred over
// the page it was opened from.
func (u *UI) newWhole() tview.Primitive {
	u.whole = tview.NewTextView().SetDynamicColors(true).SetWrap(true).SetWordWrap(true)
	u.whole.SetBorder(true).SetTitle(" The whole line: Esc, q or x closes ").SetTitleAlign(tview.AlignLeft)
	return tview.NewFlex().
		AddItem(nil, 0, 1, false).
		AddItem(tview.NewFlex().SetDirection(tview.FlexRow).
			AddItem(nil, 0, 1, false).
			AddItem(u.whole, 0, 3, true).
			AddItem(nil, 0, 1, false), 0, 8, true).
		AddItem(nil, 0, 1, false)
}

// wholeKeys handles a key while the window is open: Esc, q and x close
// it, the rest scroll it.
func (u *UI) wholeKeys(ev *tcell.EventKey) *tcell.EventKey {
	if ev.Key() == tcell.KeyEscape || (ev.Key() == tcell.KeyRune && (ev.Rune() == 'q' || ev.Rune() == 'x')) {
		u.closeWhole()
		return nil
	}
	return ev
}

// closeWhole goes back to the page the window was opened from.
func (u *UI) closeWhole() {
	u.pages.HidePage("whole")
	u.showPage(u.wholeFrom)
	if u.wholeFrom == "main" {
		u.App.SetFocus(u.panes[u.pane])
	}
}
