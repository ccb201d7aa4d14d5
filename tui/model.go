package tui

import (
	"fmt"
	"strconv"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/render"
)

// Follow restricts the list to one connection, or one queue of it.
type Follow struct {
	On    bool
	Conn  uint32
	Queue bool // also Dir and Queue
	Dir   uint8
	Q     uint8
}

func (f Follow) match(r *Row) bool {
	if !f.On {
		return true
	}
	if r.Conn != f.Conn {
		return false
	}
	return !f.Queue || (r.Dir == f.Dir && r.Queue == f.Q && r.Kind != RowFinding)
}

func (f Follow) String() string {
	if !f.On {
		return ""
	}
	if f.Queue {
		return fmt.Sprintf("conn %d %s", f.Conn, queueName(f.Q))
	}
	return fmt.Sprintf("conn %d", f.Conn)
}

func queueName(q uint8) string {
	switch q {
	case 0:
		return "QN 0 (Send)"
	case 1:
		return "QN 1 (Read Request)"
	case 2:
		return "QN 2 (Terminate)"
	case 3:
		return "QN 3 (Atomic Response)"
	case QueueTagged:
		return "tagged"
	}
	return "other"
}

// List is the view state of the PDU list: which rows are shown (display
// filter and follow), the selection, marks, search and filter history. It
// is plain Go; the table widget reads it.
type List struct {
	ix     *Index
	flt    *FilterRun
	follow Follow
	sel    []int32 // rows shown; nil with no filter and no follow: all
	all    bool
	seen   int    // rows of the index examined for sel
	tcp    bool   // the TCP rows are shown too (T; tcp.go)
	seenT  int    // TCP rows examined for sel
	gen    uint64 // flt.Gen() when sel was built
	Cursor int    // position in the shown rows
	Marks  map[int]bool
	// History of display filters applied, oldest first.
	History []string
	Search  string
}

func newList(ix *Index) *List { return &List{ix: ix, all: true, Marks: map[int]bool{}} }

// SetFilter shows only the rows fr matches (nil: all).
func (l *List) SetFilter(fr *FilterRun) {
	l.flt = fr
	l.rebuild()
}

// SetFollow restricts the list to a connection or queue.
func (l *List) SetFollow(f Follow) {
	l.follow = f
	l.rebuild()
}

func (l *List) rebuild() {
	cur := l.RowAt(l.Cursor)
	l.sel, l.seen, l.seenT = l.sel[:0], 0, 0
	l.all = l.flt == nil && !l.follow.On && !l.tcp
	l.Refresh()
	if cur >= 0 {
		l.GoRow(cur)
	}
}

// Refresh takes in rows indexed (or matched) since the last call.
func (l *List) Refresh() {
	if l.all {
		return
	}
	anchor := -1
	if l.flt != nil {
		if g := l.flt.Gen(); g != l.gen {
			// The pass matched rows anywhere below its cut: start over,
			// keeping the cursor on its row.
			anchor = l.RowAt(l.Cursor)
			l.gen = g
			l.sel, l.seen, l.seenT = l.sel[:0], 0, 0
		}
	}
	if anchor >= 0 {
		defer l.GoRow(anchor)
	}
	l.ix.mu.RLock()
	defer l.ix.mu.RUnlock()
	n, m := l.ix.rows.Len(), 0
	if l.tcp {
		m = l.ix.tcp.Len()
	}
	i, j := l.seen, l.seenT
	for {
		// A TCP row goes before the PDU row its Aux numbers (tcp.go).
		if j < m && int(l.ix.tcp.At(j).Aux) <= i {
			if l.follow.match(l.ix.tcp.At(j)) && (l.flt == nil || l.flt.Match(tcpBase+j)) {
				l.sel = append(l.sel, int32(tcpBase+j))
			}
			j++
			continue
		}
		if i >= n {
			break
		}
		if l.follow.match(l.ix.rows.At(i)) && (l.flt == nil || l.flt.Match(i)) {
			l.sel = append(l.sel, int32(i))
		}
		i++
	}
	l.seen, l.seenT = n, j
}

// SetTCP shows the TCP rows too, or not (tcp.go).
func (l *List) SetTCP(on bool) {
	l.tcp = on
	l.rebuild()
}

// TCP reports whether the TCP rows are shown.
func (l *List) TCP() bool { return l.tcp }

// before reports whether index row a comes before index row b in the
// list: a TCP row before the PDU row its Aux numbers, TCP rows in their
// order.
func (l *List) before(a, b int) bool {
	key := func(i int) (int, int) {
		if i >= tcpBase {
			return 2 * int(l.ix.Row(i).Aux), i - tcpBase
		}
		return 2*i + 1, 0
	}
	a1, a2 := key(a)
	b1, b2 := key(b)
	return a1 < b1 || a1 == b1 && a2 < b2
}

// Len is the number of rows shown.
func (l *List) Len() int {
	if l.all {
		return l.ix.Len()
	}
	return len(l.sel)
}

// RowAt maps a shown position to its index row (-1 if none).
func (l *List) RowAt(pos int) int {
	if pos < 0 || pos >= l.Len() {
		return -1
	}
	if l.all {
		return pos
	}
	return int(l.sel[pos])
}

// GoRow moves the cursor to index row i, or the first shown after it.
func (l *List) GoRow(i int) {
	if l.all {
		l.Cursor = min(max(i, 0), max(l.Len()-1, 0))
		return
	}
	lo, hi := 0, len(l.sel)
	for lo < hi {
		m := (lo + hi) / 2
		if l.before(int(l.sel[m]), i) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	l.Cursor = min(lo, max(len(l.sel)-1, 0))
}

// Move moves the cursor by delta, within the list.
func (l *List) Move(delta int) {
	l.Cursor = min(max(l.Cursor+delta, 0), max(l.Len()-1, 0))
}

// ToggleMark marks or unmarks the row under the cursor.
func (l *List) ToggleMark() {
	if r := l.RowAt(l.Cursor); r >= 0 {
		if l.Marks[r] {
			delete(l.Marks, r)
		} else {
			l.Marks[r] = true
		}
	}
}

// NextMark moves to the next marked row shown (dir +1 or -1), wrapping.
func (l *List) NextMark(dir int) bool {
	n := l.Len()
	for k := 1; k <= n; k++ {
		p := ((l.Cursor+dir*k)%n + n) % n
		if l.Marks[l.RowAt(p)] {
			l.Cursor = p
			return true
		}
	}
	return false
}

// Find moves to the next shown row (dir +1 or -1, from the cursor,
// wrapping) whose summary line contains text, case-insensitively.
func (l *List) Find(text string, dir int) bool {
	m := newSearch(text)
	return m != nil && l.find(m, dir)
}

// find moves to the next shown row whose summary line m matches.
func (l *List) find(m *search, dir int) bool {
	n := l.Len()
	var b []byte
	for k := 1; k <= n; k++ {
		p := ((l.Cursor+dir*k)%n + n) % n
		r := l.ix.Row(l.RowAt(p))
		b = l.ix.appendLine(b[:0], l.RowAt(p), &r)
		if m.matchString(string(b)) {
			l.Cursor = p
			return true
		}
	}
	return false
}

// AddHistory records an applied filter (most recent last, no repeats).
func (l *List) AddHistory(expr string) {
	if expr == "" {
		return
	}
	for i, h := range l.History {
		if h == expr {
			l.History = append(l.History[:i], l.History[i+1:]...)
			break
		}
	}
	l.History = append(l.History, expr)
}

// Columns of the list.
var columns = []string{"No.", "Time", "Conn", "Dir", "Summary"}

// FindingCounts are the counts of the findings by code and connection:
// the pipeline's (analyze.Report.Findings, as iwdump -z and the export
// show them) once the capture is indexed, the same count of the findings
// indexed so far before. The caller must not modify it.
func (ix *Index) FindingCounts() *finding.Tally {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.report != nil && ix.report.Findings != nil {
		return ix.report.Findings
	}
	return ix.tally.Clone() // the indexer goes on adding to ix.tally
}

// Cell returns the text of column c of index row i (r).
func (ix *Index) Cell(i int, r *Row, c int) string {
	switch c {
	case 0:
		if r.Kind == RowFinding {
			// The frame that raised it, as the findings view and iwdump
			// number it (its row spans the frames of the PDU it is about).
			ix.mu.RLock()
			n := ix.findings[r.Aux].Frame
			ix.mu.RUnlock()
			return strconv.Itoa(n)
		}
		return strconv.FormatUint(uint64(r.Last), 10)
	case 1:
		ix.mu.RLock()
		first, format := ix.first, ix.timeFormat
		ix.mu.RUnlock()
		rel := time.Duration(r.Rel)
		return string(render.AppendTime(nil, format, first.Add(rel), rel)) // as iwdump -t
	case 2:
		if r.Conn == 0 {
			return "-"
		}
		return strconv.FormatUint(uint64(r.Conn), 10)
	case 3:
		if r.Conn == 0 {
			return ""
		}
		ix.mu.RLock()
		c := ix.conns[int(r.Conn)]
		ix.mu.RUnlock()
		if c == nil {
			return ""
		}
		return c.DirName(r.Dir)
	case 4:
		return string(ix.appendSummary(nil, i, r))
	}
	return ""
}

func (ix *Index) appendLine(b []byte, i int, r *Row) []byte {
	for c := 0; c < 4; c++ {
		b = append(b, ix.Cell(i, r, c)...)
		b = append(b, ' ')
	}
	return ix.appendSummary(b, i, r)
}

// appendSummary writes the summary column of row i (r) from its own
// fields, and the storage-protocol message it completes.
func (ix *Index) appendSummary(b []byte, i int, r *Row) []byte {
	return ix.appendULPSummary(ix.appendRowSummary(b, r), i)
}

func (ix *Index) appendRowSummary(b []byte, r *Row) []byte {
	switch r.Kind {
	case RowFinding:
		ix.mu.RLock()
		f := ix.findings[r.Aux]
		ix.mu.RUnlock()
		b = append(b, f.Severity.String()...)
		b = append(b, ' ')
		b = append(b, f.Code.String()...)
		b = append(b, ": "...)
		return append(b, f.Message...)
	case RowTCP:
		return appendTCPSummary(b, r) // tcp.go
	case RowMPA:
		if r.Flags&FlagReply != 0 {
			b = append(b, "MPA Reply"...)
		} else {
			b = append(b, "MPA Request"...)
		}
		if r.Flags&FlagReject != 0 {
			b = append(b, " REJECT"...)
		}
		b = append(b, " pd_length "...)
		return strconv.AppendUint(b, uint64(r.ULen), 10)
	}
	if r.Flags&FlagSegErr != 0 && r.Queue == QueueOther {
		b = append(b, "FPDU (headers do not decode)"...)
	} else {
		b = append(b, decode.Opcode(r.Op).String()...)
		if r.Flags&FlagTagged != 0 {
			b = append(b, " stag 0x"...)
			b = strconv.AppendUint(b, uint64(r.Aux), 16)
		} else {
			b = append(b, " qn "...)
			b = strconv.AppendUint(b, uint64(r.Queue), 10)
			b = append(b, " msn "...)
			b = strconv.AppendUint(b, uint64(r.Aux), 10)
		}
		if r.Flags&FlagLast != 0 {
			b = append(b, " L"...)
		}
	}
	if r.Flags&FlagSegErr != 0 {
		b = append(b, " ulpdu_length "...)
	} else {
		b = append(b, " len "...) // the payload, as iwdump's summary says it
	}
	b = strconv.AppendUint(b, uint64(r.ULen), 10)
	switch {
	case r.Flags&FlagCRCBad != 0:
		b = append(b, " CRC BAD"...)
	case r.Flags&FlagPartial != 0:
		b = append(b, " partial"...)
	}
	return b
}
