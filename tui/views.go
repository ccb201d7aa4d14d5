package tui

import (
	"errors"
	"fmt"
	"strconv"
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

func sevColor(s finding.Severity) tcell.Color {
	switch s {
	case finding.Error:
		return palette.Error
	case finding.Warning:
		return palette.Warning
	}
	return palette.Note
}

func secs(rel int64) string { return fmt.Sprintf("%.6f", float64(rel)/1e9) }

func itoa(n int) string { return strconv.Itoa(n) }

// connsMatching is the set of connections with a row fr matches.
func (ix *Index) connsMatching(fr *FilterRun) map[uint32]bool {
	set := map[uint32]bool{}
	for i, n := 0, ix.Len(); i < n; i++ {
		if fr.Match(i) {
			set[ix.Row(i).Conn] = true
		}
	}
	return set
}

// rowMatch: fr passes the PDU row of frame of connection conn.
func (ix *Index) rowMatch(fr *FilterRun, conn, frame int) bool {
	i := ix.RowOf(conn, frame)
	return i >= 0 && fr.Match(i)
}

// fillFindings: as Wireshark's expert info, first the groups, worst
// first, each a count and its first frame; then every finding.
func (u *UI) fillFindings() {
	v := u.views["findings"]
	ix := u.S.Ix
	counts := ix.FindingCounts() // the pipeline's counts, as -z findings
	groups := counts.Codes()
	first := map[finding.Code]int{}
	nf := ix.NumFindings()
	for i := 0; i < nf && len(first) < len(groups); i++ {
		if f := ix.Finding(i); first[f.Code] == 0 {
			first[f.Code] = f.Frame
		}
	}
	g := len(groups)
	if g > 0 {
		g++ // a blank line after the groups
	}
	v.reset(g+nf, "Frame", "Time", "Conn", "Severity", "Code", "Message")
	v.fixed = g
	v.cell = func(e, col int) string {
		if e < g {
			if e == len(groups) {
				return ""
			}
			gr := groups[e]
			return [...]string{itoa(first[gr.Code]), "", "", gr.Code.Severity().String(), gr.Code.String(), fmt.Sprintf("%d× (Enter: the first)", gr.N)}[col]
		}
		f := ix.Finding(e - g)
		switch col {
		case 0:
			return itoa(f.Frame)
		case 1:
			return secs(f.Rel)
		case 2:
			return itoa(f.Conn)
		case 3:
			return f.Severity.String()
		case 4:
			return f.Code.String()
		}
		return f.Message
	}
	v.color = func(e int) tcell.Color {
		switch {
		case e < len(groups):
			return sevColor(groups[e].Code.Severity())
		case e < g:
			return tcell.ColorDefault
		}
		return sevColor(ix.Finding(e - g).Severity)
	}
	v.jumps = func(e int) (int, int) {
		if e < g {
			if e == len(groups) {
				return 0, 0
			}
			return first[groups[e].Code], 0
		}
		f := ix.Finding(e - g)
		if len(f.Frames) > 1 {
			return f.Frame, f.Frames[1]
		}
		return f.Frame, 0
	}
	v.num = func(e, col int) (int64, bool) {
		if e < g {
			return 0, col <= 2
		}
		f := ix.Finding(e - g)
		switch col {
		case 0:
			return int64(f.Frame), true
		case 1:
			return f.Rel, true
		case 2:
			return int64(f.Conn), true
		case 3:
			return int64(f.Severity.Rank()), true
		}
		return 0, false
	}
	v.match = func(e int, fr *FilterRun) bool { return fr.Match(ix.Finding(e - g).Row) }
	v.title = fmt.Sprintf("(%d errors, %d warnings, %d notes) ", counts.Severity(finding.Error), counts.Severity(finding.Warning), counts.Severity(finding.Note))
	u.open(v)
}

// fillOps: the operations (track's) in the order of their requests'
// frames, with the Terminates of the rdmap.terminate findings, which name
// the frame they blame.
func (u *UI) fillOps() {
	v := u.views["ops"]
	ix := u.S.Ix
	type term struct {
		f     Finding
		dir   string
		blame int
	}
	var terms []term
	blames := map[[2]int]int{}
	for i, n := 0, ix.NumFindings(); i < n; i++ {
		f := ix.Finding(i)
		if f.Code != finding.RDMAPTerminate || len(f.Frames) == 0 {
			continue
		}
		t := term{f: f}
		if len(f.Frames) > 1 {
			t.blame = f.Frames[1]
			blames[[2]int{f.Conn, f.Frames[0]}] = t.blame
		}
		if c := ix.Conn(f.Conn); c != nil {
			t.dir = c.DirName(f.Dir)
		}
		terms = append(terms, t)
	}
	nt := len(terms)
	v.reset(nt+ix.NumOps(), "Frame", "Time", "Conn", "Dir", "Operation", "Length", "Latency", "Status", "Detail")
	v.defCol = 0
	v.cell = func(e, col int) string {
		if e < nt {
			t := &terms[e]
			switch col {
			case 0:
				return itoa(t.f.Frames[0])
			case 1:
				return secs(t.f.Rel)
			case 2:
				return itoa(t.f.Conn)
			case 3:
				return t.dir
			case 4:
				return "Terminate"
			case 8:
				if t.blame > 0 {
					return fmt.Sprintf("blames frame %d (b): %s", t.blame, t.f.Message)
				}
				return t.f.Message
			}
			return ""
		}
		o := ix.Op(e - nt)
		switch col {
		case 0:
			return itoa(o.RequestFrame)
		case 1:
			return secs(o.Rel)
		case 2:
			return itoa(o.Conn)
		case 3:
			return o.Dir.String()
		case 4:
			return o.Opcode.String()
		case 5:
			return strconv.FormatUint(o.Length, 10)
		case 6:
			if o.Latency > 0 {
				return o.Latency.Round(time.Microsecond).String()
			}
			return ""
		case 7:
			return o.Status.String()
		}
		switch o.Kind {
		case track.OpRead:
			return fmt.Sprintf("sink stag 0x%x src stag 0x%x size %d, response frames %d-%d", o.STag, o.SrcSTag, o.Size, o.ResponseFirst, o.RespLast)
		case track.OpWrite:
			return fmt.Sprintf("stag 0x%x to 0x%x", o.STag, o.TO)
		case track.OpSend:
			det := fmt.Sprintf("msn %d", o.MSN)
			if o.InvSTag != 0 {
				det += fmt.Sprintf(" invalidates 0x%x", o.InvSTag)
			}
			return det
		case track.OpAtomic:
			return fmt.Sprintf("target stag 0x%x, response frame %d", o.SrcSTag, o.ResponseFirst)
		case track.OpTerminate:
			if b := blames[[2]int{o.Conn, o.RequestFrame}]; b > 0 {
				return fmt.Sprintf("blames frame %d (b)", b)
			}
		}
		return ""
	}
	v.color = func(e int) tcell.Color {
		if e < nt {
			return palette.Terminate
		}
		o := ix.Op(e - nt)
		switch {
		case o.Kind == track.OpTerminate:
			return palette.Terminate
		case o.Status != track.OpOK:
			return palette.Warning
		case o.Kind == track.OpRead:
			return palette.Read
		}
		return tcell.ColorDefault
	}
	v.jumps = func(e int) (int, int) {
		if e < nt {
			return terms[e].f.Frames[0], terms[e].blame
		}
		o := ix.Op(e - nt)
		return o.RequestFrame, blames[[2]int{o.Conn, o.RequestFrame}]
	}
	v.num = func(e, col int) (int64, bool) {
		if e < nt {
			t := &terms[e]
			return [...]int64{int64(t.f.Frames[0]), t.f.Rel, int64(t.f.Conn), 0, 0, 0, 0, 0, 0}[col], col <= 2 || col == 5 || col == 6
		}
		o := ix.Op(e - nt)
		switch col {
		case 0:
			return int64(o.RequestFrame), true
		case 1:
			return o.Rel, true
		case 2:
			return int64(o.Conn), true
		case 5:
			return int64(o.Length), true
		case 6:
			return int64(o.Latency), true
		}
		return 0, false
	}
	v.match = func(e int, fr *FilterRun) bool {
		if e < nt {
			return ix.rowMatch(fr, terms[e].f.Conn, terms[e].f.Frames[0])
		}
		i := ix.OpRow(e - nt)
		return i >= 0 && fr.Match(i)
	}
	u.open(v)
}

func (u *UI) fillConns() {
	v := u.views["conns"]
	ix := u.S.Ix
	counts := ix.FindingCounts()
	conns := ix.Conns()
	v.reset(2*len(conns), "Conn", "Initiator", "Responder", "Dir", "Markers", "CRC", "MPA", "PDUs", "Octets", "CRC bad", "Markers seen", "Findings", "ULP", "Closed")
	v.cell = func(e, col int) string {
		c, d := &conns[e/2], uint8(e%2)
		p := &c.Params[d]
		switch col {
		case 0:
			return itoa(c.ID)
		case 1, 2:
			if d == 1 {
				return ""
			}
			ini, res := c.Addr[0].String(), c.Addr[1].String()
			if c.Initiator == 1 {
				ini, res = res, ini
			}
			if col == 1 {
				return ini
			}
			return res
		case 3:
			return c.DirName(d)
		case 4:
			return fmt.Sprintf("%v (%s)", p.Markers, p.MarkersSource)
		case 5:
			return fmt.Sprintf("%v (%s)", p.CRC, p.CRCSource)
		case 6:
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
			return mpa
		case 7:
			return fmt.Sprint(c.PDUs[d])
		case 8:
			return fmt.Sprint(c.Octets[d])
		case 9:
			return fmt.Sprint(c.CRCBad[d])
		case 10:
			return fmt.Sprint(c.Markers[d])
		case 11:
			return fmt.Sprint(counts.Conn(c.ID))
		case 12:
			return c.Proto
		}
		return c.Closed
	}
	v.color = func(e int) tcell.Color {
		if conns[e/2].CRCBad[e%2] > 0 {
			return palette.Error
		}
		return tcell.ColorDefault
	}
	v.jumps = func(e int) (int, int) {
		if e%2 == 1 {
			return 0, 0
		}
		return conns[e/2].First, 0
	}
	v.num = func(e, col int) (int64, bool) {
		c, d := &conns[e/2], e%2
		switch col {
		case 0:
			return int64(c.ID), true
		case 7:
			return int64(c.PDUs[d]), true
		case 8:
			return int64(c.Octets[d]), true
		case 9:
			return int64(c.CRCBad[d]), true
		case 10:
			return int64(c.Markers[d]), true
		case 11:
			return int64(counts.Conn(c.ID)), true
		}
		return 0, false
	}
	var set map[uint32]bool
	var setFor *FilterRun
	v.match = func(e int, fr *FilterRun) bool {
		if setFor != fr {
			set, setFor = ix.connsMatching(fr), fr
		}
		return set[uint32(conns[e/2].ID)]
	}
	u.open(v)
}

func (u *UI) fillSTags() {
	v := u.views["stags"]
	ix := u.S.Ix
	stags := ix.STags()
	// Owner: the side whose memory the STag names, by the direction it
	// sends in; Adv and Inv: the frames of the advertisement and of the
	// Send with Invalidate; Roles: track's words (track.Role).
	v.reset(len(stags), "Conn", "STag", "Owner", "Adv", "First", "Last", "Uses", "Octets", "Inv", "Roles", "Advertised by")
	opt := func(n int) string {
		if n > 0 {
			return itoa(n)
		}
		return ""
	}
	v.cell = func(e, col int) string {
		s := &stags[e]
		used := s.Uses > 0 // the tracker's entry (else only advertised)
		switch col {
		case 0:
			return itoa(s.Conn)
		case 1:
			return fmt.Sprintf("0x%08x", s.STag)
		case 2:
			if used {
				return s.Owner.String()
			}
			return ""
		case 3:
			return opt(s.Advertised)
		case 4, 5:
			if !used {
				return ""
			}
			if col == 4 {
				return itoa(s.FirstFrame)
			}
			return itoa(s.LastFrame)
		case 6:
			return fmt.Sprint(s.Uses)
		case 7:
			return fmt.Sprint(s.Bytes)
		case 8:
			return opt(s.InvalidatedFrame)
		case 9:
			return s.Roles.String()
		}
		return s.AdvBy
	}
	v.color = func(e int) tcell.Color {
		if stags[e].InvalidatedFrame > 0 {
			return palette.Warning
		}
		return tcell.ColorDefault
	}
	v.jumps = func(e int) (int, int) { return stags[e].FirstFrame, stags[e].InvalidatedFrame }
	v.num = func(e, col int) (int64, bool) {
		s := &stags[e]
		switch col {
		case 0:
			return int64(s.Conn), true
		case 1:
			return int64(s.STag), true
		case 3:
			return int64(s.Advertised), true
		case 4:
			return int64(s.FirstFrame), true
		case 5:
			return int64(s.LastFrame), true
		case 6:
			return int64(s.Uses), true
		case 7:
			return int64(s.Bytes), true
		case 8:
			return int64(s.InvalidatedFrame), true
		}
		return 0, false
	}
	var set map[uint32]bool
	var setFor *FilterRun
	v.match = func(e int, fr *FilterRun) bool {
		if setFor != fr {
			set, setFor = ix.connsMatching(fr), fr
		}
		return set[uint32(stags[e].Conn)]
	}
	u.open(v)
}

func (u *UI) fillCmds() {
	v := u.views["cmds"]
	ix := u.S.Ix
	var rdma map[[2]uint64][]int32
	if ix.NumCmds() > 0 { // a million RDMA Writes and no command: 15 MB for nothing
		rdma = u.rdmaFrames() // commands.go
	}
	v.reset(ix.NumCmds(), "Frame", "Time", "Conn", "Command", "Status", "Latency", "Expected", "Moved", "Inline", "Reads", "Writes", "STags", "Response", "Object", "RDMA frames")
	v.cell = func(e, col int) string {
		c := ix.Cmd(e)
		switch col {
		case 0:
			return itoa(int(c.RequestFrame))
		case 1:
			return secs(c.Rel)
		case 2:
			return itoa(int(c.Conn))
		case 3:
			return c.Label()
		case 4:
			if !c.Answered {
				return "unanswered"
			}
			return c.Status
		case 5:
			if c.Latency > 0 {
				return c.Latency.Round(time.Microsecond).String()
			}
			return ""
		case 6:
			return fmt.Sprint(c.Expected)
		case 7:
			return fmt.Sprint(c.Moved)
		case 8:
			return fmt.Sprint(c.Inline)
		case 9:
			return fmt.Sprint(c.Reads)
		case 10:
			return fmt.Sprint(c.Writes)
		case 11:
			var b []byte
			for k, st := range ix.CmdSTags(&c) {
				if k > 0 {
					b = append(b, ' ')
				}
				b = fmt.Appendf(b, "0x%x", st)
			}
			return string(b)
		case 13:
			return c.Object
		case 14:
			return CmdRDMAFrames(ix, &c, ix.CmdSTags(&c), rdma)
		}
		if c.ResponseFrame > 0 {
			return fmt.Sprintf("frame %d", c.ResponseFrame)
		}
		return ""
	}
	v.color = func(e int) tcell.Color {
		switch c := ix.Cmd(e); {
		case !c.Answered:
			return palette.Warning
		case !c.OK:
			return palette.Error
		}
		return tcell.ColorDefault
	}
	v.jumps = func(e int) (int, int) {
		c := ix.Cmd(e)
		return int(c.RequestFrame), int(c.ResponseFrame)
	}
	v.num = func(e, col int) (int64, bool) {
		c := ix.Cmd(e)
		switch col {
		case 0:
			return int64(c.RequestFrame), true
		case 1:
			return c.Rel, true
		case 2:
			return int64(c.Conn), true
		case 5:
			return int64(c.Latency), true
		case 6:
			return int64(c.Expected), true
		case 7:
			return int64(c.Moved), true
		case 8:
			return int64(c.Inline), true
		case 9:
			return int64(c.Reads), true
		case 10:
			return int64(c.Writes), true
		case 12:
			return int64(c.ResponseFrame), true
		}
		return 0, false
	}
	v.match = func(e int, fr *FilterRun) bool {
		c := ix.Cmd(e)
		return ix.rowMatch(fr, int(c.Conn), int(c.RequestFrame))
	}
	u.open(v)
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
			screen.SetContent(x+10+c, y+row, blocks[min(level, 8)], nil, tcell.StyleDefault.Foreground(palette.Read))
		}
		if errs[c] > 0 {
			screen.SetContent(x+10+c, y+gh, '!', nil, tcell.StyleDefault.Foreground(palette.Error))
		}
	}
	tview.Print(screen, fmt.Sprintf("interval %v, %d columns; findings below the axis", step.Round(time.Microsecond), gw), x+10, y+gh+1, gw, tview.AlignLeft, tcell.ColorDefault)
}
