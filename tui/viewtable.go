package tui

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
)

// viewTable is one of the tables a key away (findings, operations,
// connections, STags, commands). It is virtual: it holds its entries as
// numbers (an operation's index, a finding's) and formats only the lines
// drawn, so a view of a million operations opens as fast as one of ten.
// Its order (sorted by a column, reversed, restricted by the display
// filter) is a permutation of 4 octets an entry, built off the event loop
// when the view is large, the title saying so meanwhile.
type viewTable struct {
	t     *tview.Table
	name  string
	head  []string
	n     int // entries
	fixed int // leading entries that stay on top (the findings' groups)
	cell  func(e, col int) string
	color func(e int) tcell.Color
	jumps func(e int) (jump, blame int)
	// num is column col's sort key of entry e when the column is a
	// number (false: its text sorts it).
	num func(e, col int) (int64, bool)
	// match reports whether the display filter fr passes entry e (nil:
	// every entry does).
	match func(e int, fr *FilterRun) bool
	title string // the title's tail (counts)

	sortCol int  // -1: the entries' own order
	rev     bool // sorted the other way
	defCol  int  // the column the view opens sorted by (-1: none)

	mu    sync.Mutex
	order []int32 // entries shown, in order (nil with ident: 0..n-1)
	ident bool
	busy  string // what a job is doing (shown in the title)
	gen   int    // the job whose order counts
	flt   *FilterRun
}

var viewTitles = map[string]string{
	"findings": " Findings (expert info): Enter goes to the frame, b to the frame it names ",
	"ops":      " RDMA operations: Enter goes to the request, b to the frame a Terminate blames ",
	"cmds":     " Storage-protocol commands: Enter goes to the command, b to its response ",
	"conns":    " Connections ",
	"stags":    " STags: Enter goes to the first frame, b to the invalidation ",
}

func newViewTable(name string) *viewTable {
	v := &viewTable{t: tview.NewTable().SetSelectable(true, false).SetFixed(1, 0), name: name, sortCol: -1, defCol: -1, ident: true}
	v.t.SetContent(&viewContent{v: v})
	v.t.SetBorder(true).SetTitle(viewTitles[name]).SetTitleAlign(tview.AlignLeft)
	v.t.SetSelectedStyle(cursorStyle())
	return v
}

// viewContent is a viewTable as tview's virtual table content.
type viewContent struct {
	tview.TableContentReadOnly
	v *viewTable
}

func (c *viewContent) GetRowCount() int    { return c.v.len() + 1 }
func (c *viewContent) GetColumnCount() int { return len(c.v.head) }

func (c *viewContent) GetCell(row, col int) *tview.TableCell {
	v := c.v
	if col >= len(v.head) {
		return nil
	}
	if row == 0 {
		h := v.head[col]
		if col == v.sortCol && v.userOrder() {
			if v.rev {
				h += "▼"
			} else {
				h += "▲"
			}
		}
		return tview.NewTableCell(h).SetSelectable(false).SetAttributes(tcell.AttrBold)
	}
	e := v.entry(row - 1)
	if e < 0 {
		return nil
	}
	cell := tview.NewTableCell(tview.Escape(v.cell(e, col))).SetTextColor(v.color(e))
	if col == len(v.head)-1 {
		cell.SetExpansion(1)
	}
	return cell
}

// userOrder: the view is not in the order it opens in.
func (v *viewTable) userOrder() bool { return v.sortCol != v.defCol || v.rev }

// len is the number of lines shown.
func (v *viewTable) len() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.ident {
		return v.n
	}
	return len(v.order)
}

// entry is the entry on line i (-1 if none).
func (v *viewTable) entry(i int) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch {
	case i < 0:
		return -1
	case v.ident:
		if i < v.n {
			return i
		}
		return -1
	case i < len(v.order):
		return int(v.order[i])
	}
	return -1
}

// jumpAt is the frame line i names and the frame it blames (0: none).
func (v *viewTable) jumpAt(i int) (jump, blame int) {
	if e := v.entry(i); e >= 0 && v.jumps != nil {
		return v.jumps(e)
	}
	return 0, 0
}

// reset makes the view hold n entries under columns head, in their own
// order; fill functions then set cell, color, jumps, num and match.
func (v *viewTable) reset(n int, head ...string) {
	v.mu.Lock()
	v.gen++
	v.n, v.head, v.fixed, v.order, v.ident, v.busy, v.title = n, head, 0, nil, true, "", ""
	v.mu.Unlock()
	v.num, v.match = nil, nil
	if v.sortCol >= len(head) {
		v.sortCol = -1
	}
}

// bigView: a view of more entries is ordered off the event loop.
var bigView = 50000

// orderView orders the view's entries: by the sort column (ties in the
// entries' own order), reversed if asked, with only those the display
// filter passes. A large view is arranged by a job off the event loop
// (later runs its result on the loop); meanwhile it shows the entries as
// they were and the title says what it is doing.
func (u *UI) orderView(v *viewTable) {
	v.mu.Lock()
	v.gen++
	gen, n, fixed := v.gen, v.n, v.fixed
	v.mu.Unlock()
	col, rev := v.sortCol, v.rev
	fr := u.List.flt
	if v.match == nil {
		fr = nil
	}
	v.flt = fr
	if (col < 0 && !rev && fr == nil) || n == 0 {
		v.mu.Lock()
		v.order, v.ident, v.busy = nil, true, ""
		v.mu.Unlock()
		u.viewTitle(v)
		return
	}
	// What the job reads, taken now: a view filled again meanwhile
	// (another key) gets new functions and a new job.
	match, cols := v.match, viewCols{cell: v.cell, num: v.num}
	job := func() []int32 {
		if fr == nil && col >= 0 && cols.numInOrder(n-fixed, func(i int) int { return fixed + i }, col, rev) {
			return nil // the entries' own order is the column's: no permutation kept
		}
		order := make([]int32, 0, n)
		for e := 0; e < n; e++ {
			if e < fixed || fr == nil || match(e, fr) {
				order = append(order, int32(e))
			}
		}
		if col >= 0 || rev {
			sortEntries(cols, order[min(fixed, len(order)):], col, rev)
		}
		if len(order) == n && isIdent(order) {
			return nil // the entries' own order: no permutation kept
		}
		return order
	}
	apply := func(order []int32) {
		v.mu.Lock()
		if v.gen == gen {
			v.order, v.ident, v.busy = order, order == nil, ""
		}
		v.mu.Unlock()
		u.viewTitle(v)
	}
	if n <= bigView || u.later == nil {
		apply(job())
		return
	}
	what := "sorting"
	if col < 0 {
		what = "filtering"
	}
	v.mu.Lock()
	v.busy = fmt.Sprintf("%s %d lines…", what, n)
	v.mu.Unlock()
	u.viewTitle(v)
	u.jobs.Add(1)
	go func() {
		defer u.jobs.Done()
		order := job()
		u.later(func() { apply(order) })
	}()
}

// isIdent reports whether order is 0, 1, 2, ...
func isIdent(order []int32) bool {
	for i, e := range order {
		if int(e) != i {
			return false
		}
	}
	return true
}

// viewCols are a view's columns as a sort reads them.
type viewCols struct {
	cell func(e, col int) string
	num  func(e, col int) (int64, bool)
}

// sortEntries sorts es by column col of v (numbers as numbers, the rest
// by their text), ties in entry order, reversed if rev.
func sortEntries(v viewCols, es []int32, col int, rev bool) {
	sign := 1
	if rev {
		sign = -1
	}
	if col < 0 {
		slices.Reverse(es)
		return
	}
	if len(es) == 0 {
		return
	}
	if v.num == nil {
		v.num = func(int, int) (int64, bool) { return 0, false }
	}
	if _, isNum := v.num(int(es[0]), col); isNum { // v is a copy
		if v.numInOrder(len(es), func(i int) int { return int(es[i]) }, col, rev) {
			return
		}
		keys := make([]int64, len(es))
		for i, e := range es {
			keys[i], _ = v.num(int(e), col)
		}
		sortKeyed(es, keys, func(a, b int64) int { return cmp.Compare(a, b) * sign })
		return
	}
	keys := make([]string, len(es))
	for i, e := range es {
		keys[i] = v.cell(int(e), col)
	}
	sortKeyed(es, keys, func(a, b string) int { return strings.Compare(a, b) * sign })
}

// numInOrder reports whether the n entries at(0), at(1), ... (in entry
// order) are in the order of number column col already, read as they go
// (no keys kept): a large view often is (the operations by request frame
// on a capture of Writes), and then costs no sort and no copy.
func (v viewCols) numInOrder(n int, at func(i int) int, col int, rev bool) bool {
	if v.num == nil {
		return false
	}
	var prev int64
	for i := 0; i < n; i++ {
		k, ok := v.num(at(i), col)
		if !ok {
			return false
		}
		if i > 0 && (k < prev && !rev || k > prev && rev) {
			return false
		}
		prev = k
	}
	return true
}

// sortKeyed sorts es by cmp of keys (keys[i] is es[i]'s), ties in entry
// order, moving both together in place: a million entries cost their
// keys and no index or copy besides (an order already right, as a large
// view's often is, is checked and left).
func sortKeyed[K any](es []int32, keys []K, cmp func(a, b K) int) {
	k := keyed[K]{es: es, keys: keys, cmp: cmp}
	if !sort.IsSorted(k) {
		sort.Sort(k)
	}
}

type keyed[K any] struct {
	es   []int32
	keys []K
	cmp  func(a, b K) int
}

func (k keyed[K]) Len() int { return len(k.es) }
func (k keyed[K]) Less(i, j int) bool {
	if c := k.cmp(k.keys[i], k.keys[j]); c != 0 {
		return c < 0
	}
	return k.es[i] < k.es[j]
}
func (k keyed[K]) Swap(i, j int) {
	k.es[i], k.es[j] = k.es[j], k.es[i]
	k.keys[i], k.keys[j] = k.keys[j], k.keys[i]
}

// viewTitle sets the title: the view's, its counts, its order, its
// filter and what a job is doing.
func (u *UI) viewTitle(v *viewTable) {
	t := viewTitles[v.name] + v.title
	v.mu.Lock()
	busy, shown := v.busy, v.n
	if !v.ident {
		shown = len(v.order)
	}
	v.mu.Unlock()
	if v.sortCol >= 0 && v.userOrder() {
		t += fmt.Sprintf("sorted by %s", v.head[v.sortCol])
		if v.rev {
			t += " (reversed)"
		}
		t += " "
	}
	if v.flt != nil {
		t += fmt.Sprintf("filter %q: %d of %d ", v.flt.Expr, shown-v.fixed, v.n-v.fixed)
	}
	if busy != "" {
		t += busy + " "
	}
	v.t.SetTitle(t)
}

// sortView sorts the view shown by its next column (s), or reverses it
// (S).
func (u *UI) sortView(next bool) {
	v := u.views[u.page]
	if v == nil {
		return
	}
	if next {
		v.sortCol++
		v.rev = false
		if v.sortCol >= len(v.head) {
			v.sortCol = -1
		}
	} else {
		v.rev = !v.rev
	}
	u.orderView(v)
	v.t.Select(1, 0)
	v.t.ScrollToBeginning()
}

// open shows view v: arranged by its column, first line selected.
func (u *UI) open(v *viewTable) {
	if v.sortCol < 0 {
		v.sortCol = v.defCol
	}
	u.orderView(v)
	if v.len() > 0 {
		v.t.Select(1, 0)
	}
	v.t.ScrollToBeginning()
	u.showPage(v.name)
}

// findView moves the view's cursor to the next line (dir +1 or -1,
// wrapping) with a cell that contains text, as the list's search.
func (u *UI) findView(v *viewTable, text string, dir int) bool {
	m := newSearch(text)
	if m == nil {
		return false
	}
	n := v.len()
	cur, _ := v.t.GetSelection()
	cur--
	for k := 1; k <= n; k++ {
		p := ((cur+dir*k)%n + n) % n
		e := v.entry(p)
		if e < 0 {
			continue
		}
		for c := range v.head {
			if m.matchString(v.cell(e, c)) {
				v.t.Select(p+1, 0)
				return true
			}
		}
	}
	return false
}
