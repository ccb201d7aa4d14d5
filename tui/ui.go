package tui

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/render"
	"github.com/rivo/tview"
)

// UI is the screen: the PDU list, the detail tree and the hex pane, the
// status line and the bar (filter, search, go to, write), and the views a
// key away. Everything here runs on tview's event goroutine; the index is
// built on another and only QueueUpdateDraw crosses over (batched by a
// ticker, never one redraw per packet).
type UI struct {
	S        *Session
	App      *tview.Application
	List     *List
	pages    *tview.Pages
	viewFlex map[string]*tview.Flex // each view over the bar (a view's search)
	cols     []int                  // the list's columns shown (indexes in columns), in order
	settings Settings               // kept between runs (Use); saved when persist
	persist  bool
	// LoadNext is the file :load asked for: the screen stopped so that
	// the command opens it (cmd/iwtui).
	LoadNext  string
	findIn    string // where the search of the bar looks: list, view, tree, octets
	main      *tview.Flex
	table     *tview.Table
	tree      *tview.Table
	hex       *hexView
	status    *tview.TextView
	bar       *tview.InputField
	barFor    string
	help      *tview.TextView
	quitModal *tview.Modal
	split     *tview.Flex // the detail and octets panes
	whole     *tview.TextView
	wholeFrom string // the page x opened the whole-line window over
	layout    Layout
	views     map[string]*viewTable
	graph     *ioGraph
	page      string
	panes     []tview.Primitive
	pane      int

	loader  *loader
	detail  *Detail
	fold    Fold   // detail lines folded, by key
	desc    string // the description of the field selected in the tree
	vis     []int  // the detail lines shown, by tree row
	dRow    int
	msg     string
	paused  bool
	histPos int
	saved   bool
	// overwrite is the existing file the last w/W Enter asked about: a
	// second Enter on the same name replaces it.
	overwrite string
	stop      chan struct{}
	once      sync.Once
	lastLen   int
	lastGen   uint64
	// later runs f on the event loop (nil before Run: at once); jobs
	// counts the jobs off it (a large view's order) not yet handed over.
	later func(f func())
	jobs  sync.WaitGroup
	// pending: what later handed over on a screen without the event
	// loop (the benchmarks, deferLater)
	pendMu  sync.Mutex
	pending []func()
	scr     tcell.Screen // the screen drawn on (clip.go)
	follow  *followView  // follow.go
}

// deferLater makes later queue its functions for settle (a screen
// driven without tview's event loop, as the benchmarks drive it).
func (u *UI) deferLater() {
	u.later = func(f func()) {
		u.pendMu.Lock()
		u.pending = append(u.pending, f)
		u.pendMu.Unlock()
	}
}

// nodeColor colours a detail line by its node: by severity (a finding, a
// bad CRC, a decode error), then a link to another frame.
func nodeColor(n *render.Node) tcell.Color {
	switch {
	case n.HasSev && n.Sev == finding.Error:
		return palette.Error
	case n.HasSev && n.Sev == finding.Warning:
		return palette.Warning
	case n.Frame > 0:
		return palette.Link
	}
	return tcell.ColorDefault
}

// rowColor colours a row: a Terminate magenta (as the legend says: its
// own rdmap.terminate error would make it red like every error), then by
// finding severity, then by opcode.
func rowColor(r *Row) tcell.Color {
	if !colouring {
		return tcell.ColorDefault
	}
	switch {
	case r.Kind == RowTCP:
		return tcpColor(r) // tcp.go
	case r.Kind == RowFPDU && decode.Opcode(r.Op) == decode.OpTerminate:
		return palette.Terminate
	case r.Sev == finding.Error.Rank() || r.Flags&FlagCRCBad != 0:
		return palette.Error
	case r.Sev == finding.Warning.Rank():
		return palette.Warning
	case r.Kind == RowFinding:
		return palette.Note
	case r.Kind == RowMPA:
		return palette.MPA
	}
	switch decode.Opcode(r.Op) {
	case decode.OpReadRequest, decode.OpReadResponse:
		return palette.Read
	case decode.OpWrite:
		return palette.Write
	}
	return tcell.ColorDefault
}

// colWidths are the widths of the number, time, connection and direction
// columns, set once: up to 9,999,999 frames, 99,999 s, 99,999 connections.
var colWidths = []int{8, 12, 5, 3}

// timeWidths are the time column's widths by format (-t): wide enough for
// what the format writes.
var timeWidths = map[string]int{"a": 15, "ad": 26, "e": 17}

// colWidth is the width of column c (0: as wide as its text).
func (u *UI) colWidth(c int) int {
	if c == 1 {
		if w, ok := timeWidths[u.S.Ix.timeFormat]; ok {
			return w
		}
	}
	if c < len(colWidths) {
		return colWidths[c]
	}
	return 0
}

// listContent is the list as a virtual table over the index.
type listContent struct {
	tview.TableContentReadOnly
	u *UI
}

func (c *listContent) GetRowCount() int    { return c.u.List.Len() + 1 }
func (c *listContent) GetColumnCount() int { return len(c.u.cols) }

func (c *listContent) GetCell(row, at int) *tview.TableCell {
	if at >= len(c.u.cols) {
		return nil
	}
	col := c.u.cols[at] // the columns chosen, in their order
	w := c.u.colWidth(col)
	if row == 0 {
		h := columns[col]
		if w > len(h) {
			h = strings.Repeat(" ", w-len(h)) + h
		}
		return tview.NewTableCell(h).SetSelectable(false).SetAttributes(tcell.AttrBold)
	}
	i := c.u.List.RowAt(row - 1)
	if i < 0 {
		return nil
	}
	ix := c.u.S.Ix
	r := ix.Row(i)
	text := ix.Cell(i, &r, col)
	if col == 0 && c.u.List.Marks[i] {
		text = "*" + text
	}
	if col == 0 && ix.Commented(&r) {
		text = commentMark + text // comments.go
	}
	if col == 0 && !palette.Colour && row-1 == c.u.List.Cursor {
		text = "▶" + text // without colour, the cursor is marked too
	}
	if len(text) < w {
		// Fixed widths: columns do not shift as larger numbers scroll in.
		text = strings.Repeat(" ", w-len(text)) + text
	}
	cell := tview.NewTableCell(tview.Escape(text)) // "TCP [SYN]" is no style tag
	// The user's colouring rules first (colours.go), then the built-in.
	if fg, bg, ok := c.u.S.userStyle(i); ok {
		cell.SetTextColor(fg).SetBackgroundColor(bg)
	} else {
		cell.SetTextColor(rowColor(&r))
	}
	if col == 4 {
		cell.SetExpansion(1)
	}
	return cell
}

// New builds the screen over a session.
func New(s *Session) *UI {
	applyStyles()
	u := &UI{S: s, App: tview.NewApplication(), List: newList(s.Ix), views: map[string]*viewTable{}, fold: Fold{}, stop: make(chan struct{}), cols: []int{0, 1, 2, 3, 4}}
	u.loader = &loader{ix: s.Ix, run: s.rerun}
	u.dRow = -1

	u.table = tview.NewTable().SetContent(&listContent{u: u}).SetFixed(1, 0).SetSelectable(true, false)
	// The list's rows grow under the table as the index does (not only at
	// Refresh), so any draw may be the one that would chase the end.
	u.App.SetBeforeDrawFunc(func(scr tcell.Screen) bool {
		u.keepScreen(scr) // clip.go
		u.keepOffset(u.List.Cursor >= u.List.Len()-1)
		return false
	})
	u.table.SetBorder(true).SetTitle(" Packets ").SetTitleAlign(tview.AlignLeft)
	u.table.SetSelectionChangedFunc(func(row, col int) {
		if row >= 1 {
			u.List.Cursor = row - 1
		}
		u.showDetail()
	})
	u.table.SetSelectedStyle(cursorStyle())

	u.tree = tview.NewTable().SetSelectable(true, false)
	u.tree.SetBorder(true).SetTitle(" Detail ").SetTitleAlign(tview.AlignLeft)
	u.tree.SetSelectedStyle(cursorStyle())
	u.tree.SetSelectionChangedFunc(func(row, col int) { u.lineSelected(u.treeLine(row)) })

	u.hex = newHexView()
	u.hex.onCursor = func(off int) {
		if u.detail == nil {
			return
		}
		if i := u.detail.LineAt(off); i >= 0 {
			ln := u.detail.Lines[i]
			u.detail.Unfold(u.fold, i)
			u.drawTree(i)
			u.hex.hiOff, u.hex.hiLen = ln.Off, ln.Len
			u.hex.cursor = off
		}
	}

	u.status = tview.NewTextView().SetDynamicColors(true)
	u.bar = tview.NewInputField()
	u.bar.SetFieldBackgroundColor(tcell.ColorDefault).SetFieldTextColor(tcell.ColorDefault)
	u.bar.SetChangedFunc(u.barChanged)
	u.bar.SetDoneFunc(u.barDone)
	u.bar.SetInputCapture(u.barKeys)

	u.layout = Layout{List: 5}
	u.split = tview.NewFlex().AddItem(u.tree, 0, 1, false).AddItem(u.hex, hexWidth, 0, false)
	u.main = tview.NewFlex().SetDirection(tview.FlexRow).
		AddItem(u.table, 0, 5, true).
		AddItem(u.split, 0, 4, false).
		AddItem(u.bar, 0, 0, false).
		AddItem(u.status, 1, 0, false)
	u.panes = []tview.Primitive{u.table, u.tree, u.hex}

	u.help = tview.NewTextView().SetText(HelpText())
	u.help.SetBorder(true).SetTitle(" Help ")
	u.graph = newIOGraph(s.Ix)

	u.pages = tview.NewPages().AddPage("main", &mainPage{Flex: u.main, u: u}, true, true)
	u.viewFlex = map[string]*tview.Flex{}
	for _, name := range []string{"findings", "ops", "cmds", "conns", "stags"} {
		v := newViewTable(name)
		u.views[name] = v
		f := tview.NewFlex().SetDirection(tview.FlexRow).AddItem(v.t, 0, 1, true).AddItem(u.bar, 0, 0, false)
		u.viewFlex[name] = f
		u.pages.AddPage(name, f, true, false)
	}
	u.pages.AddPage("graph", u.graph, true, false)
	u.follow = newFollowView()
	u.follow.SetInputCapture(u.followKeys)
	u.pages.AddPage("follow", u.follow, true, false)
	u.pages.AddPage("help", u.help, true, false)
	u.page = "main"
	u.quitModal = tview.NewModal().SetText("The live capture is not saved (w writes it). Quit anyway?").
		AddButtons([]string{"Quit", "Cancel"}).
		SetButtonStyle(tcell.StyleDefault).
		SetButtonActivatedStyle(tcell.StyleDefault.Reverse(true).Bold(true)).
		SetDoneFunc(func(i int, label string) {
			if label == "Quit" {
				u.App.Stop()
				return
			}
			u.pages.HidePage("quit")
			u.showPage("main")
		})
	u.pages.AddPage("quit", u.quitModal, true, false)
	u.pages.AddPage("whole", u.newWhole(), true, false)

	u.App.SetRoot(u.pages, true).EnableMouse(true)
	u.App.SetInputCapture(u.keys)
	u.Refresh()
	u.table.Select(1, 0)
	return u
}

// Run shows the screen until the user quits.
func (u *UI) Run() error {
	go u.ticker()
	// From here on a storage-protocol replay runs off the event loop;
	// when it is done the detail is shown again with its tree.
	u.loader.async = func(f func()) {
		u.App.QueueUpdateDraw(func() {
			f()
			u.dRow = -1
			u.showDetail()
		})
	}
	u.later = func(f func()) { u.App.QueueUpdateDraw(f) }
	err := u.App.Run()
	u.once.Do(func() { close(u.stop) })
	return err
}

// ticker batches redraws: at most ten a second, and only when the index,
// the filter or the live counters moved; the first ones come soon, so
// the first screen does not wait for a tick.
func (u *UI) ticker() {
	var last [6]uint64
	for i := 0; ; i++ {
		d := 100 * time.Millisecond
		if i < 10 {
			d = 10 * time.Millisecond
		}
		select {
		case <-u.stop:
			return
		case <-time.After(d):
		}
		read, _, done, _ := u.S.Ix.Progress()
		var gen uint64
		if fr := u.S.Filter(); fr != nil {
			gen = fr.Gen()
		}
		_, drops, _ := u.S.Drops()
		now := [6]uint64{uint64(u.S.Ix.Len()), uint64(read), gen, drops, b2u(done), u.S.colourGen()}
		if now != last {
			last = now
			u.App.QueueUpdateDraw(u.Refresh)
		}
	}
}

// keepOffset keeps the list where it is: tview's Table follows the end
// once it was drawn shorter than the screen (its trackEnd), and the first
// screen of a capture being indexed would chase the index to the end.
// Only a live capture's list, with the cursor on its last row, follows its
// end (Refresh).
func (u *UI) keepOffset(atEnd bool) {
	if !u.S.Live() || !atEnd {
		r, c := u.table.GetOffset()
		u.table.SetOffset(r, c)
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// Refresh takes in new rows (unless paused) and updates the status line.
func (u *UI) Refresh() {
	atEnd := u.List.Cursor >= u.List.Len()-1
	if !u.paused {
		u.List.Refresh()
		if u.S.Live() && atEnd && u.List.Len() > 0 && u.page == "main" && u.App.GetFocus() == u.table {
			u.List.Cursor = u.List.Len() - 1
			u.table.Select(u.List.Cursor+1, 0)
		}
	}
	u.keepOffset(atEnd)
	if r, _ := u.table.GetSelection(); r != u.List.Cursor+1 && u.List.Len() > 0 {
		u.table.Select(u.List.Cursor+1, 0) // shows the detail
	}
	if u.detail == nil && u.List.Len() > 0 {
		u.showDetail()
	}
	u.status.SetText(u.statusText())
}

func (u *UI) statusText() string {
	ix := u.S.Ix
	read, total, done, err := ix.Progress()
	var b strings.Builder
	fmt.Fprintf(&b, "[::b]%s[::-]  ", tview.Escape(u.S.Name))
	rows := ix.Len()
	if u.List.TCP() {
		rows += ix.TCPLen() // tcp.go
	}
	fmt.Fprintf(&b, "rows %d/%d", u.List.Len(), rows)
	if fr := u.S.Filter(); fr != nil && u.List.flt != nil {
		n, fdone, ferr := fr.Status()
		fmt.Fprintf(&b, "  filter %q %d", fr.Expr, n)
		if ferr != nil {
			fmt.Fprintf(&b, " [red]%s[-]", tview.Escape(ferr.Error()))
		} else if !fdone {
			b.WriteString(" (searching)")
		}
	}
	if f := u.List.follow; f.On {
		fmt.Fprintf(&b, "  follow %s", f)
		if c := ix.Conn(int(f.Conn)); c != nil && f.Queue {
			fmt.Fprintf(&b, " (%s)", c.DirName(f.Dir))
		}
	}
	switch {
	case err != nil && err != errCancelled:
		fmt.Fprintf(&b, "  [red]index: %s[-]", tview.Escape(err.Error()))
	case !done && total > 0:
		fmt.Fprintf(&b, "  indexing %d%%", read*100/total)
	case !done && u.S.Live():
		b.WriteString("  capturing") // the frames received follow
	case !done:
		fmt.Fprintf(&b, "  indexing %d MB", read>>20)
	case ix.Len() == 0:
		fmt.Fprintf(&b, "  [yellow]%s[-]", tview.Escape(ix.Empty()))
	}
	if recv, drop, ok := u.S.Drops(); ok {
		fmt.Fprintf(&b, "  live: %d received, %d dropped by kernel", recv, drop)
	}
	if u.paused {
		b.WriteString("  [::r]PAUSED[::-]")
	}
	if len(u.List.Marks) > 0 {
		fmt.Fprintf(&b, "  marks %d", len(u.List.Marks))
	}
	if u.msg != "" {
		b.WriteString("  ")
		b.WriteString(u.msg)
	}
	b.WriteString("  [::d]? help[::-]")
	if u.msg == "" && u.desc != "" && u.App.GetFocus() == u.tree {
		fmt.Fprintf(&b, "  %s", tview.Escape(u.desc))
	}
	return themed(b.String())
}

// showDetail decodes the selected row again and fills tree and hex.
func (u *UI) showDetail() {
	i := u.List.RowAt(u.List.Cursor)
	if i < 0 {
		u.detail, u.dRow, u.vis = nil, -1, nil
		u.tree.Clear()
		u.hex.SetData(nil)
		return
	}
	if i == u.dRow && u.detail != nil {
		return
	}
	d := u.loader.Load(i)
	u.detail, u.dRow = d, i
	u.drawTree(0)
	u.tree.ScrollToBeginning()
	u.hex.SetData(d.Wire)
	u.lineSelected(0)
}

// drawTree fills the tree with the detail lines not folded away and
// selects line sel (or the line it is folded under).
func (u *UI) drawTree(sel int) {
	d := u.detail
	u.tree.Clear()
	u.vis = d.Visible(u.fold)
	row := 0
	for k, i := range u.vis {
		ln := &d.Lines[i]
		mark := "  "
		if d.HasChildren(i) {
			mark = "▾ "
			if u.fold[ln.Key()] {
				mark = "▸ "
			}
		}
		text := strings.Repeat("  ", ln.Depth) + mark + ln.Text
		c := tview.NewTableCell(tview.Escape(text)).SetExpansion(1)
		c.SetTextColor(nodeColor(&ln.Node))
		u.tree.SetCell(k, 0, c)
		if i <= sel {
			row = k
		}
	}
	u.tree.Select(row, 0)
}

// treeLine is the detail line on tree row row (-1 if none).
func (u *UI) treeLine(row int) int {
	if u.detail == nil || row < 0 || row >= len(u.vis) {
		return -1
	}
	return u.vis[row]
}

// foldLine folds (how -1), unfolds (+1) or toggles (0) the selected
// tree line; folding a line without children folds its parent.
func (u *UI) foldLine(how int) {
	r, _ := u.tree.GetSelection()
	i := u.treeLine(r)
	if i < 0 {
		return
	}
	d := u.detail
	if !d.HasChildren(i) {
		if how >= 0 {
			return
		}
		if i = d.Parent(i); i < 0 {
			return
		}
	}
	k := d.Lines[i].Key()
	switch {
	case how < 0:
		u.fold[k] = true
	case how > 0:
		delete(u.fold, k)
	case u.fold[k]:
		delete(u.fold, k)
	default:
		u.fold[k] = true
	}
	u.drawTree(i)
	u.lineSelected(i)
}

// lineSelected lights up the octets of detail line i.
func (u *UI) lineSelected(i int) {
	if u.detail == nil || i < 0 || i >= len(u.detail.Lines) {
		return
	}
	ln := u.detail.Lines[i]
	if ln.Len > 0 {
		u.hex.Highlight(ln.Off, ln.Len)
	} else {
		u.hex.hiLen = 0
	}
	u.desc = ln.Desc()
	u.status.SetText(u.statusText())
}

// GoFrame selects the row of frame n (the first at or after it) in the
// list, clearing the filter and follow if they hide it.
func (u *UI) GoFrame(n int) bool {
	i := u.S.Ix.FindRow(n)
	if i < 0 {
		u.msg = fmt.Sprintf("[red]frame %d: no PDU there[-]", n)
		return false
	}
	if first := int(u.S.Ix.Row(i).First); first > n {
		// A frame of TCP alone (a handshake, an ACK) has no row: say so
		// and show the next PDU.
		u.msg = fmt.Sprintf("frame %d has no PDU; showing frame %d", n, first)
	}
	u.List.GoRow(i)
	if u.List.RowAt(u.List.Cursor) != i {
		u.List.SetFilter(nil)
		u.List.SetFollow(Follow{})
		u.S.ApplyFilter("")
		u.List.GoRow(i)
		u.msg = "filter cleared to show the frame"
	}
	u.showPage("main")
	u.App.SetFocus(u.table)
	u.pane = 0
	u.table.Select(u.List.Cursor+1, 0)
	u.showDetail()
	return true
}

func (u *UI) showPage(name string) {
	u.page = name
	u.pages.SwitchToPage(name)
	switch name {
	case "main":
		u.App.SetFocus(u.panes[u.pane])
	case "graph":
		u.App.SetFocus(u.graph)
	case "follow":
		u.App.SetFocus(u.follow)
	case "help":
		u.App.SetFocus(u.help)
	default:
		u.App.SetFocus(u.views[name].t)
	}
}

// where is the key context of the page and pane in focus.
func (u *UI) where() string {
	switch {
	case u.page == "main" && u.App.GetFocus() == u.tree:
		return "tree"
	case u.page == "main", u.page == "graph", u.page == "help":
		return u.page
	}
	return "views"
}

// keys is the one dispatcher over the key table.
func (u *UI) keys(ev *tcell.EventKey) *tcell.EventKey {
	if u.App.GetFocus() == u.bar || u.page == "quit" {
		return ev
	}
	if u.page == "whole" {
		return u.wholeKeys(ev)
	}
	if u.page == "follow" && ev.Key() == tcell.KeyRune && strings.ContainsRune("dnp", ev.Rune()) {
		return ev // the follow view's own keys (followKeys): direction, pages
	}
	a := Lookup(ev, u.where())
	if u.page == "help" && a != ActQuit && a != ActHelp && a != ActBack {
		return ev
	}
	if a == ActNone {
		return ev
	}
	u.msg = ""
	u.Do(a)
	u.status.SetText(u.statusText())
	return nil
}

// Do performs an action of the key table.
func (u *UI) Do(a Action) {
	switch a {
	case ActFilter:
		u.openBar("filter", "Filter: ", u.filterText())
	case ActHelp:
		if u.page == "help" {
			u.showPage("main")
		} else {
			u.showPage("help")
		}
	case ActQuit:
		if u.page != "main" {
			u.showPage("main")
			return
		}
		if u.S.Live() && !u.saved {
			// The capture lives in a temporary file that goes at exit.
			u.pages.ShowPage("quit")
			u.page = "quit"
			u.quitModal.SetFocus(0) // Quit, whatever was chosen the last time
			u.App.SetFocus(u.quitModal)
			return
		}
		u.App.Stop()
	case ActNextPane, ActPrevPane:
		d := 1
		if a == ActPrevPane {
			d = len(u.panes) - 1
		}
		u.pane = (u.pane + d) % len(u.panes)
		u.App.SetFocus(u.panes[u.pane])
	case ActGoto:
		u.openBar("goto", "Go to frame (or load FILE, recent, columns NAME..., time r|a|ad|e): ", "")
	case ActFind:
		if u.page != "main" && u.views[u.page] == nil {
			return
		}
		u.findIn = u.findCtx()
		label := "Find: "
		if u.findIn != "list" {
			label = "Find in the " + u.findIn + ": "
		}
		u.openBar("find", label, "") // a new search; n and N repeat the last
	case ActFindNext, ActFindPrev:
		d := 1
		if a == ActFindPrev {
			d = -1
		}
		u.find(u.findCtx(), u.List.Search, d)
	case ActSort, ActSortReverse:
		u.sortView(a == ActSort)
	case ActTheme:
		nextTheme()
		u.restyle()
		u.msg = "theme " + palette.Name
	case ActColouring:
		colouring = !colouring
		u.msg = "colouring rules off"
		if colouring {
			u.msg = "colouring rules on"
		}
	case ActMark:
		u.List.ToggleMark()
	case ActNextMark, ActPrevMark:
		d := 1
		if a == ActPrevMark {
			d = -1
		}
		if u.List.NextMark(d) {
			u.table.Select(u.List.Cursor+1, 0)
		} else {
			u.msg = "no marks"
		}
	case ActFollowConn, ActFollowQueue:
		if u.List.follow.On {
			u.List.SetFollow(Follow{})
		} else if i := u.List.RowAt(u.List.Cursor); i >= 0 {
			r := u.S.Ix.Row(i)
			if r.Conn != 0 {
				u.List.SetFollow(Follow{On: true, Conn: r.Conn, Queue: a == ActFollowQueue, Dir: r.Dir, Q: r.Queue})
			}
		}
		u.table.Select(u.List.Cursor+1, 0)
		u.dRow = -1
		u.showDetail()
	case ActFindings:
		u.fillFindings()
	case ActOps:
		u.fillOps()
	case ActConns:
		u.fillConns()
	case ActSTags:
		u.fillSTags()
	case ActGraph:
		u.showPage("graph")
	case ActWrite:
		u.openBar("write", "Write shown rows to: ", "")
	case ActFollowStream:
		u.openFollow() // follow.go
	case ActCopy:
		u.copySelection() // clip.go
	case ActCopyTree:
		u.copyTree()
	case ActTCP:
		u.List.SetTCP(!u.List.TCP())
		u.table.Select(u.List.Cursor+1, 0)
		u.dRow = -1
		u.showDetail()
	case ActWriteFindings:
		u.openBar("writefindings", "Write pcapng with findings as comments to: ", "")
	case ActWriteConn:
		if i := u.List.RowAt(u.List.Cursor); i >= 0 {
			u.openBar("writeconn", fmt.Sprintf("Write connection %d to: ", u.S.Ix.Row(i).Conn), "")
		}
	case ActPause:
		u.paused = !u.paused
	case ActBack:
		if u.page != "main" {
			u.showPage("main")
		} else if u.pane != 0 {
			u.pane = 0 // from the tree or the octets, back to the list
			u.App.SetFocus(u.panes[0])
		}
	case ActToggle:
		r, _ := u.tree.GetSelection()
		if i := u.treeLine(r); i >= 0 && !u.detail.HasChildren(i) && u.detail.Lines[i].Frame > 0 {
			u.GoFrame(u.detail.Lines[i].Frame)
		} else {
			u.foldLine(0)
		}
	case ActFold:
		u.foldLine(-1)
	case ActUnfold:
		u.foldLine(+1)
	case ActGraphUnit:
		u.graph.octets = !u.graph.octets
	case ActGraphConn:
		u.graph.nextConn()
	case ActCmds:
		u.fillCmds()
	case ActWhole:
		u.showWhole()
	case ActZoom, ActArrange, ActGrowList, ActShrinkList:
		u.layoutAction(a)
	case ActJump, ActBlame:
		if v := u.views[u.page]; v != nil {
			r, _ := v.t.GetSelection()
			fr, blame := v.jumpAt(r - 1)
			if a == ActBlame {
				fr = blame
			}
			if fr > 0 {
				u.GoFrame(fr)
			} else if a == ActBlame {
				u.msg = "no blamed frame on this line"
			}
		}
	}
}

func (u *UI) filterText() string {
	if u.List.flt != nil {
		return u.List.flt.Expr
	}
	return ""
}

func (u *UI) openBar(mode, label, text string) {
	u.barFor = mode
	u.bar.SetLabel(label).SetText(text)
	u.histPos = len(u.List.History)
	if h := u.List.History; mode == "filter" && len(h) > 0 && h[len(h)-1] == text {
		u.histPos-- // the bar shows the newest entry already: Up goes to the one before
	}
	if f := u.viewFlex[u.page]; f != nil && mode == "find" {
		f.ResizeItem(u.bar, 1, 0) // a view's search: the bar under the view
	} else {
		u.main.ResizeItem(u.bar, 1, 0)
		u.showPage("main")
	}
	u.App.SetFocus(u.bar)
	u.barChanged(text)
}

func (u *UI) closeBar() {
	u.main.ResizeItem(u.bar, 0, 0)
	for _, f := range u.viewFlex {
		f.ResizeItem(u.bar, 0, 0)
	}
	u.bar.SetFieldTextColor(tcell.ColorDefault)
	u.barFor = ""
	if v := u.views[u.page]; v != nil {
		u.App.SetFocus(v.t)
		return
	}
	u.App.SetFocus(u.panes[u.pane])
}

// restyle gives the tables the theme's cursor (after T).
func (u *UI) restyle() {
	applyStyles()
	u.table.SetSelectedStyle(cursorStyle())
	u.tree.SetSelectedStyle(cursorStyle())
	for _, v := range u.views {
		v.t.SetSelectedStyle(cursorStyle())
	}
	u.help.SetText(HelpText())
	if u.detail != nil {
		r, _ := u.tree.GetSelection()
		u.drawTree(u.treeLine(r))
	}
}

// barChanged checks a filter as it is typed.
func (u *UI) barChanged(text string) {
	if u.barFor != "filter" {
		return
	}
	if strings.TrimSpace(text) == "" {
		u.bar.SetFieldTextColor(tcell.ColorDefault)
		u.msg = ""
		u.status.SetText(u.statusText())
		return
	}
	if _, err := CheckFilter(text); err != nil {
		u.bar.SetFieldTextColor(palette.Error)
		u.msg = FilterErrorText(err)
	} else {
		u.bar.SetFieldTextColor(palette.Good)
		u.msg = "[green]ok[-]"
	}
	u.status.SetText(u.statusText())
}

func (u *UI) barKeys(ev *tcell.EventKey) *tcell.EventKey {
	if u.barFor != "filter" || len(u.List.History) == 0 {
		return ev
	}
	switch ev.Key() {
	case tcell.KeyUp:
		u.histPos = max(u.histPos-1, 0)
	case tcell.KeyDown:
		u.histPos = min(u.histPos+1, len(u.List.History))
	default:
		return ev
	}
	if u.histPos < len(u.List.History) {
		u.bar.SetText(u.List.History[u.histPos])
	} else {
		u.bar.SetText("")
	}
	return nil
}

func (u *UI) barDone(key tcell.Key) {
	mode, text := u.barFor, strings.TrimSpace(u.bar.GetText())
	if key != tcell.KeyEnter {
		u.msg = ""
		u.overwrite = ""
		u.closeBar()
		return
	}
	switch mode {
	case "filter":
		fr, err := u.S.ApplyFilter(text)
		if err != nil {
			return // the bar stays open with the error shown
		}
		u.List.AddHistory(text)
		u.settings.addFilter(text)
		u.saveSettings()
		u.List.SetFilter(fr)
		u.msg = ""
	case "find":
		u.List.Search = text
		if u.findIn != "list" {
			u.closeBar()
			u.find(u.findIn, text, 1)
			u.status.SetText(u.statusText())
			return
		}
		u.find("list", text, 1)
	case "goto":
		n, err := strconv.Atoi(text)
		if err != nil {
			u.msg = u.command(text)
			if u.page == "whole" {
				u.main.ResizeItem(u.bar, 0, 0)
				u.barFor = ""
				return
			}
		} else {
			u.closeBar()
			u.GoFrame(n)
			u.status.SetText(u.statusText())
			return
		}
	case "write", "writeconn", "writefindings":
		if text == "" {
			break
		}
		// An existing file is replaced only when asked twice (Enter again on
		// the same name), as a save dialog asks before it overwrites.
		if Exists(text) && u.overwrite != text {
			u.overwrite = text
			u.msg = "[yellow]" + tview.Escape(text) + " exists: Enter again to overwrite it, Esc to cancel[-]"
			u.status.SetText(u.statusText())
			return
		}
		u.overwrite = ""
		var n, c int
		var err error
		switch mode {
		case "write":
			n, err = WriteRows(u.S.Ix, u.List, text)
		case "writefindings":
			n, c, err = WriteFindings(u.S.Ix, text) // comments.go
		default:
			r := u.S.Ix.Row(u.List.RowAt(u.List.Cursor))
			n, err = WriteConn(u.S.Ix, int(r.Conn), text)
		}
		switch {
		case err != nil:
			u.msg = "[red]" + tview.Escape(err.Error()) + "[-]"
		case mode == "writefindings":
			u.msg = fmt.Sprintf("wrote %d frames, %d with findings as comments, to %s", n, c, tview.Escape(text))
		default:
			u.msg = fmt.Sprintf("wrote %d frames to %s", n, tview.Escape(text))
		}
		u.saved = u.saved || err == nil
	}
	u.closeBar()
	u.table.Select(u.List.Cursor+1, 0)
	u.dRow = -1
	u.showDetail()
	u.status.SetText(u.statusText())
}

// ApplyFilter applies a display filter as the bar's Enter does.
func (u *UI) ApplyFilter(expr string) error {
	fr, err := u.S.ApplyFilter(expr)
	if err != nil {
		return err
	}
	u.List.AddHistory(expr)
	u.settings.addFilter(expr)
	u.saveSettings()
	u.List.SetFilter(fr)
	return nil
}
