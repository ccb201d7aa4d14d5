package tui

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/filter"
	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/iograph"
	"github.com/iwkit/iwkit/track"
	"github.com/rivo/tview"
)

// CheckFilter compiles a display filter; its error names the column.
func CheckFilter(expr string) (any, error) {
	f, err := analyze.CompileFilter(expr)
	return f, err
}

// FilterErrorText words a filter error for the status line: the column,
// the message, and the expression with the octet at the column shown in
// reverse video (tview colour tags).
func FilterErrorText(err error) string {
	var fe *filter.Error
	if !errors.As(err, &fe) {
		return "[red]" + tview.Escape(err.Error()) + "[-]"
	}
	src, col := fe.Src, min(fe.Column, len(fe.Src))
	at, rest := " ", ""
	if col < len(src) {
		at, rest = src[col:col+1], src[col+1:]
	}
	return fmt.Sprintf("[red]column %d: %s[-]  %s[red::r]%s[-::-]%s", fe.Column+1, tview.Escape(fe.Msg),
		tview.Escape(src[:col]), tview.Escape(at), tview.Escape(rest))
}

// viewTable is one of the tables a key away (findings, operations,
// connections, STags); each line may name a frame to jump to, and a
// frame it blames.
type viewTable struct {
	t     *tview.Table
	jump  []int
	blame []int
}

var viewTitles = map[string]string{
	"findings": " Findings (expert info): Enter goes to the frame, b to the frame it names ",
	"ops":      " RDMA operations: Enter goes to the request, b to the frame a Terminate blames ",
	"cmds":     " Storage-protocol commands: Enter goes to the command, b to its response ",
	"conns":    " Connections ",
	"stags":    " STags: Enter goes to the first frame, b to the invalidation ",
}

func newViewTable(name string) *viewTable {
	v := &viewTable{t: tview.NewTable().SetSelectable(true, false).SetFixed(1, 0)}
	v.t.SetBorder(true).SetTitle(viewTitles[name]).SetTitleAlign(tview.AlignLeft)
	v.t.SetSelectedStyle(tcell.StyleDefault.Reverse(true))
	return v
}

func (v *viewTable) reset(head ...string) {
	v.t.Clear()
	v.jump, v.blame = v.jump[:0], v.blame[:0]
	for c, h := range head {
		v.t.SetCell(0, c, tview.NewTableCell(h).SetSelectable(false).SetAttributes(tcell.AttrBold))
	}
}

func (v *viewTable) add(color tcell.Color, jump, blame int, cells ...string) {
	r := v.t.GetRowCount()
	for c, s := range cells {
		cell := tview.NewTableCell(tview.Escape(s)).SetTextColor(color)
		if c == len(cells)-1 {
			cell.SetExpansion(1)
		}
		v.t.SetCell(r, c, cell)
	}
	v.jump = append(v.jump, jump)
	v.blame = append(v.blame, blame)
}

func (v *viewTable) done() {
	if v.t.GetRowCount() > 1 {
		v.t.Select(1, 0)
	}
	v.t.ScrollToBeginning()
}

func sevColor(s finding.Severity) tcell.Color {
	switch s {
	case finding.Error:
		return tcell.ColorRed
	case finding.Warning:
		return tcell.ColorOlive
	}
	return tcell.ColorTeal
}

func secs(rel int64) string { return fmt.Sprintf("%.6f", float64(rel)/1e9) }

func (u *UI) fillFindings() {
	v := u.views["findings"]
	v.reset("Frame", "Time", "Conn", "Severity", "Code", "Message")
	fs := u.S.Ix.Findings()
	counts := u.S.Ix.FindingCounts() // the pipeline's counts, as -z findings
	// As Wireshark's expert info: first the groups, worst first, each a
	// count and its first frame; then every finding.
	first := map[finding.Code]int{}
	for _, f := range fs {
		if _, ok := first[f.Code]; !ok {
			first[f.Code] = f.Frame
		}
	}
	groups := counts.Codes()
	for _, g := range groups {
		sev := g.Code.Severity()
		v.add(sevColor(sev), first[g.Code], 0, fmt.Sprint(first[g.Code]), "", "", sev.String(), g.Code.String(), fmt.Sprintf("%d× (Enter: the first)", g.N))
	}
	if len(groups) > 0 {
		v.add(tcell.ColorDefault, 0, 0, "", "", "", "", "", "")
	}
	for _, f := range fs {
		blame := 0
		if len(f.Frames) > 1 {
			blame = f.Frames[1]
		}
		v.add(sevColor(f.Severity), f.Frame, blame, fmt.Sprint(f.Frame), secs(f.Rel), fmt.Sprint(f.Conn), f.Severity.String(), f.Code.String(), f.Message)
	}
	v.t.SetTitle(fmt.Sprintf("%s(%d errors, %d warnings, %d notes) ", viewTitles["findings"], counts.Severity(finding.Error), counts.Severity(finding.Warning), counts.Severity(finding.Note)))
	v.done()
}

func (u *UI) fillOps() {
	v := u.views["ops"]
	v.reset("Frame", "Time", "Conn", "Dir", "Operation", "Length", "Latency", "Status", "Detail")
	ix := u.S.Ix
	// Terminates blame a frame: the rdmap.terminate finding names it.
	blames := map[[2]int]int{}
	for _, f := range ix.Findings() {
		if f.Code == finding.RDMAPTerminate && len(f.Frames) > 1 {
			blames[[2]int{f.Conn, f.Frames[0]}] = f.Frames[1]
		}
	}
	type entry struct {
		frame int
		color tcell.Color
		jump  int
		blame int
		cells []string
	}
	var es []entry
	// Terminates, from the tracker's rdmap.terminate findings: the first
	// frame is the Terminate, the second the one it blames.
	for _, f := range ix.Findings() {
		if f.Code != finding.RDMAPTerminate || len(f.Frames) == 0 {
			continue
		}
		blame, det := 0, f.Message
		if len(f.Frames) > 1 {
			blame = f.Frames[1]
			det = fmt.Sprintf("blames frame %d (b): %s", blame, f.Message)
		}
		dir := ""
		if c := ix.Conn(f.Conn); c != nil {
			dir = c.DirName(f.Dir)
		}
		es = append(es, entry{f.Frames[0], tcell.ColorPurple, f.Frames[0], blame,
			[]string{fmt.Sprint(f.Frames[0]), secs(f.Rel), fmt.Sprint(f.Conn), dir, "Terminate", "", "", "", det}})
	}
	for _, o := range ix.Ops() {
		lat := ""
		if o.Latency > 0 {
			lat = o.Latency.Round(time.Microsecond).String()
		}
		var det string
		switch o.Kind {
		case track.OpRead:
			det = fmt.Sprintf("sink stag 0x%x src stag 0x%x size %d, response frames %d-%d", o.STag, o.SrcSTag, o.Size, o.ResponseFirst, o.RespLast)
		case track.OpWrite:
			det = fmt.Sprintf("stag 0x%x to 0x%x", o.STag, o.TO)
		case track.OpSend:
			det = fmt.Sprintf("msn %d", o.MSN)
			if o.InvSTag != 0 {
				det += fmt.Sprintf(" invalidates 0x%x", o.InvSTag)
			}
		case track.OpAtomic:
			det = fmt.Sprintf("target stag 0x%x, response frame %d", o.SrcSTag, o.ResponseFirst)
		}
		blame := blames[[2]int{o.Conn, o.RequestFrame}]
		color := tcell.ColorDefault
		switch {
		case o.Kind == track.OpTerminate:
			color = tcell.ColorPurple
			if blame > 0 {
				det = fmt.Sprintf("blames frame %d (b)", blame)
			}
		case o.Status != track.OpOK:
			color = tcell.ColorOlive
		case o.Kind == track.OpRead:
			color = tcell.ColorGreen
		}
		es = append(es, entry{o.RequestFrame, color, o.RequestFrame, blame, []string{fmt.Sprint(o.RequestFrame), secs(o.Rel), fmt.Sprint(o.Conn), o.Dir.String(),
			o.Opcode.String(), fmt.Sprint(o.Length), lat, o.Status.String(), det}})
	}
	sort.SliceStable(es, func(i, j int) bool { return es[i].frame < es[j].frame })
	for _, e := range es {
		v.add(e.color, e.jump, e.blame, e.cells...)
	}
	v.done()
}

func (u *UI) fillConns() {
	v := u.views["conns"]
	counts := u.S.Ix.FindingCounts()
	v.reset("Conn", "Initiator", "Responder", "Dir", "Markers", "CRC", "MPA", "PDUs", "Octets", "CRC bad", "Markers seen", "Findings", "ULP", "Closed")
	for _, c := range u.S.Ix.Conns() {
		for d := uint8(0); d < 2; d++ {
			p := &c.Params[d]
			mpa := "-"
			if p.HasFrame {
				f := &p.Frame
				mpa = fmt.Sprintf("rev %d", f.Rev)
				if f.HasV2 {
					mpa += fmt.Sprintf(" IRD %d ORD %d", f.V2.IRD, f.V2.ORD)
				}
				if f.Reject {
					mpa += " REJECT"
				}
			}
			ini, res := c.Addr[0].String(), c.Addr[1].String()
			if c.Initiator == 1 {
				ini, res = res, ini
			}
			color := tcell.ColorDefault
			if c.CRCBad[d] > 0 {
				color = tcell.ColorRed
			}
			first := c.First
			if d == 1 {
				ini, res, first = "", "", 0
			}
			v.add(color, first, 0, fmt.Sprint(c.ID), ini, res, c.DirName(d),
				fmt.Sprintf("%v (%s)", p.Markers, p.MarkersSource), fmt.Sprintf("%v (%s)", p.CRC, p.CRCSource), mpa,
				fmt.Sprint(c.PDUs[d]), fmt.Sprint(c.Octets[d]), fmt.Sprint(c.CRCBad[d]), fmt.Sprint(c.Markers[d]), fmt.Sprint(counts.Conn(c.ID)), c.Proto, c.Closed)
		}
	}
	v.done()
}

func (u *UI) fillSTags() {
	v := u.views["stags"]
	// Owner: the side whose memory the STag names, by the direction it
	// sends in; Adv and Inv: the frames of the advertisement and of the
	// Send with Invalidate; Roles: track's words (track.Role).
	v.reset("Conn", "STag", "Owner", "Adv", "First", "Last", "Uses", "Octets", "Inv", "Roles", "Advertised by")
	for _, s := range u.S.Ix.STags() {
		inv, adv, first, last, owner := "", "", "", "", ""
		color := tcell.ColorDefault
		if s.InvalidatedFrame > 0 {
			inv = fmt.Sprint(s.InvalidatedFrame)
			color = tcell.ColorOlive
		}
		if s.Advertised > 0 {
			adv = fmt.Sprint(s.Advertised)
		}
		if s.Uses > 0 { // the tracker's entry (else only advertised)
			first, last, owner = fmt.Sprint(s.FirstFrame), fmt.Sprint(s.LastFrame), s.Owner.String()
		}
		v.add(color, s.FirstFrame, s.InvalidatedFrame, fmt.Sprint(s.Conn), fmt.Sprintf("0x%08x", s.STag), owner, adv, first, last,
			fmt.Sprint(s.Uses), fmt.Sprint(s.Bytes), inv, s.Roles.String(), s.AdvBy)
	}
	v.done()
}

// ioGraph draws PDUs or ULPDU octets per interval over the capture, of
// every connection or one, with a line of findings under it, in block
// characters.
type ioGraph struct {
	*tview.Box
	ix     *Index
	octets bool // octets, else PDUs
	conn   int  // 0: every connection
}

func newIOGraph(ix *Index) *ioGraph {
	g := &ioGraph{Box: tview.NewBox(), ix: ix}
	g.SetBorder(true).SetTitleAlign(tview.AlignLeft)
	return g
}

// nextConn shows the next connection (after the last: all of them).
func (g *ioGraph) nextConn() {
	next := 0
	for _, c := range g.ix.Conns() {
		if c.ID > g.conn {
			next = c.ID
			break
		}
	}
	g.conn = next
}

// Buckets counts PDUs, payload octets and error findings of connection conn
// (0: all) in n intervals of the capture (package iograph bins them, as
// for iwdump --plot); it returns them and the interval length.
func (ix *Index) Buckets(n, conn int) (pdus, octets, errs []int, step time.Duration) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var end int64
	for i := 0; i < ix.rows.Len(); i++ {
		end = max(end, ix.rows.At(i).Rel)
	}
	step = time.Duration(end/int64(n) + 1) // every row within n intervals
	b := iograph.New(3, n, step)
	for i := 0; i < ix.rows.Len(); i++ {
		r := ix.rows.At(i)
		if conn != 0 && int(r.Conn) != conn {
			continue
		}
		at := time.Duration(r.Rel)
		if r.Kind == RowFinding {
			if r.Sev == finding.Error.Rank() {
				b.Add(2, at, 1)
			}
			continue
		}
		b.Add(0, at, 1)
		if r.Kind == RowFPDU && r.Flags&FlagSegErr == 0 {
			b.Add(1, at, float64(r.ULen)) // payload octets, as iwdump --plot counts them
		}
	}
	ints := func(s []float64) []int {
		v := make([]int, n)
		for i := range v {
			v[i] = int(s[i])
		}
		return v
	}
	return ints(b.Padded(0, n)), ints(b.Padded(1, n)), ints(b.Padded(2, n)), step
}

var blocks = []rune(" ▁▂▃▄▅▆▇█")

func (g *ioGraph) Draw(screen tcell.Screen) {
	unit, of := "PDUs", "all connections"
	if g.octets {
		unit = "payload octets"
	}
	if g.conn != 0 {
		of = fmt.Sprintf("connection %d", g.conn)
	}
	g.SetTitle(fmt.Sprintf(" I/O graph: %s per interval, %s (v: PDUs/octets, c: connection; red: error findings) ", unit, of))
	g.DrawForSubclass(screen, g)
	x, y, w, h := g.GetInnerRect()
	if w < 12 || h < 4 {
		return
	}
	gw, gh := w-10, h-3
	pdus, octets, errs, step := g.ix.Buckets(gw, g.conn)
	vals := pdus
	if g.octets {
		vals = octets
	}
	peak := 1
	for _, p := range vals {
		peak = max(peak, p)
	}
	tview.Print(screen, fmt.Sprint(peak), x, y, 9, tview.AlignRight, tcell.ColorDefault)
	tview.Print(screen, "0", x, y+gh-1, 9, tview.AlignRight, tcell.ColorDefault)
	for c, p := range vals {
		eighths := p * gh * 8 / peak
		for row := 0; row < gh; row++ {
			level := eighths - (gh-1-row)*8
			if level <= 0 {
				continue
			}
			screen.SetContent(x+10+c, y+row, blocks[min(level, 8)], nil, tcell.StyleDefault.Foreground(tcell.ColorGreen))
		}
		if errs[c] > 0 {
			screen.SetContent(x+10+c, y+gh, '!', nil, tcell.StyleDefault.Foreground(tcell.ColorRed))
		}
	}
	tview.Print(screen, fmt.Sprintf("interval %v, %d columns; findings below the axis", step.Round(time.Microsecond), gw), x+10, y+gh+1, gw, tview.AlignLeft, tcell.ColorDefault)
}
