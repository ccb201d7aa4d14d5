package tui

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/iwkit/iwkit/track"
)

// The storage-protocol commands view (U): one line per command, sorted by
// a key (s cycles the keys, S reverses), restricted to the commands whose
// request or response the display filter shows, searched (f, then n), and
// each line listing the RDMA frames that moved its data (the Writes into
// and the Read Requests and Responses on its STags, track's operations).

// CmdSortKey is a key the commands view sorts by. A fact of the command
// that ulp exposes (a latency phase, a queue) becomes a key by adding a
// row here.
type CmdSortKey struct {
	Name string
	Cmp  func(a, b *Cmd) int
}

// CmdSortKeys are the keys s cycles through, the first the default.
var CmdSortKeys = []CmdSortKey{
	{"frame", func(a, b *Cmd) int { return cmp.Compare(a.RequestFrame, b.RequestFrame) }},
	{"latency", func(a, b *Cmd) int { return cmp.Compare(a.Latency, b.Latency) }},
	{"octets", func(a, b *Cmd) int { return cmp.Compare(a.Moved+uint64(a.Inline), b.Moved+uint64(b.Inline)) }},
	{"command", func(a, b *Cmd) int {
		return cmp.Or(cmp.Compare(a.Proto, b.Proto), strings.Compare(a.Name, b.Name))
	}},
	{"status", func(a, b *Cmd) int {
		return cmp.Or(cmp.Compare(b2i(a.OK), b2i(b.OK)), strings.Compare(a.Status, b.Status))
	}},
	{"object", func(a, b *Cmd) int { return strings.Compare(a.Object, b.Object) }},
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// cmdView is the commands view's state.
type cmdView struct {
	key  int  // CmdSortKeys index
	desc bool // reversed
	find string
	rows []Cmd // as shown
}

// SortCmds sorts commands by key k (CmdSortKeys), reversed if desc; ties
// keep the order of the requests.
func SortCmds(cs []Cmd, k int, desc bool) {
	key := CmdSortKeys[k%len(CmdSortKeys)].Cmp
	slices.SortStableFunc(cs, func(a, b Cmd) int {
		c := key(&a, &b)
		if desc {
			c = -c
		}
		return cmp.Or(c, cmp.Compare(a.RequestFrame, b.RequestFrame))
	})
}

// rdmaFrames lists, per connection and STag, the RDMA operations on it
// (track's, as the operations view shows them): Writes, and Read Requests
// by their Data Source STag.
func (u *UI) rdmaFrames() map[[2]uint64][]Op {
	m := map[[2]uint64][]Op{}
	for _, op := range u.S.Ix.Ops() {
		switch op.Kind {
		case track.OpWrite:
			k := [2]uint64{uint64(op.Conn), uint64(op.STag)}
			m[k] = append(m[k], op)
		case track.OpRead:
			k := [2]uint64{uint64(op.Conn), uint64(op.SrcSTag)}
			m[k] = append(m[k], op)
		}
	}
	return m
}

// CmdRDMAFrames words the RDMA frames of command c: "W 14-17" for a
// Write's segments, "R 32→33-49" for a Read Request and its Responses,
// those on its STags between its request and its response.
func CmdRDMAFrames(c *Cmd, stags []uint32, ops map[[2]uint64][]Op) string {
	var b strings.Builder
	end := int(c.ResponseFrame)
	if end == 0 {
		end = 1<<31 - 1
	}
	for _, st := range stags {
		for _, op := range ops[[2]uint64{uint64(c.Conn), uint64(st)}] {
			if op.RequestFrame < int(c.RequestFrame) || op.RequestFrame > end {
				continue
			}
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			if op.Kind == track.OpWrite {
				fmt.Fprintf(&b, "W %s", span(op.RequestFrame, op.RequestLast))
			} else {
				fmt.Fprintf(&b, "R %d→%s", op.RequestFrame, span(op.ResponseFirst, op.RespLast))
			}
		}
	}
	return b.String()
}

func span(a, b int) string {
	if b <= a {
		return fmt.Sprint(a)
	}
	return fmt.Sprintf("%d-%d", a, b)
}

// filteredFrames is the frames of the rows the applied display filter
// shows, nil when none is applied.
func (u *UI) filteredFrames() map[int]bool {
	fr := u.S.Filter()
	if fr == nil || fr.Expr == "" {
		return nil
	}
	m := map[int]bool{}
	for i, n := 0, u.S.Ix.Len(); i < n; i++ {
		if fr.Match(i) {
			r := u.S.Ix.Row(i)
			m[int(r.Last)] = true
		}
	}
	return m
}

func (u *UI) fillCmds() {
	v := u.views["cmds"]
	cv := &u.cmdv
	v.reset("Frame", "Time", "Conn", "Command", "Object", "Status", "Latency", "Expected", "Moved", "Inline", "Reads", "Writes", "STags", "RDMA frames", "Response")
	cs := u.S.Ix.Cmds()
	if shown := u.filteredFrames(); shown != nil {
		cs = slices.DeleteFunc(cs, func(c Cmd) bool { return !shown[int(c.RequestFrame)] && !shown[int(c.ResponseFrame)] })
	}
	SortCmds(cs, cv.key, cv.desc)
	cv.rows = cs
	ops := u.rdmaFrames()
	for i := range cs {
		c := &cs[i]
		color, status, lat, resp := tcell.ColorDefault, c.Status, "", ""
		switch {
		case !c.Answered:
			color, status = tcell.ColorOlive, "unanswered"
		case !c.OK:
			color = tcell.ColorRed
		}
		if c.Latency > 0 {
			lat = c.Latency.Round(time.Microsecond).String()
		}
		if c.ResponseFrame > 0 {
			resp = fmt.Sprintf("frame %d", c.ResponseFrame)
		}
		ss := u.S.Ix.CmdSTags(c)
		stags := ""
		for k, st := range ss {
			if k > 0 {
				stags += " "
			}
			stags += fmt.Sprintf("0x%x", st)
		}
		v.add(color, int(c.RequestFrame), int(c.ResponseFrame), fmt.Sprint(c.RequestFrame), secs(c.Rel), fmt.Sprint(c.Conn), c.Label(), c.Object, status, lat,
			fmt.Sprint(c.Expected), fmt.Sprint(c.Moved), fmt.Sprint(c.Inline), fmt.Sprint(c.Reads), fmt.Sprint(c.Writes), stags, CmdRDMAFrames(c, ss, ops), resp)
	}
	dir := "↑"
	if cv.desc {
		dir = "↓"
	}
	title := fmt.Sprintf("%s[sort %s %s, s/S; f find] ", viewTitles["cmds"], CmdSortKeys[cv.key%len(CmdSortKeys)].Name, dir)
	if fr := u.S.Filter(); fr != nil && fr.Expr != "" {
		title += fmt.Sprintf("[filter: %d of %d] ", len(cs), len(u.S.Ix.Cmds()))
	}
	v.t.SetTitle(title)
	v.done()
}

// findCmd selects the next command line (after the selected one, from
// the top again) holding the search text; false when none does.
func (u *UI) findCmd() bool {
	v := u.views["cmds"]
	cv := &u.cmdv
	if cv.find == "" || len(cv.rows) == 0 {
		return false
	}
	at, _ := v.t.GetSelection()
	n := len(cv.rows)
	for k := 1; k <= n; k++ {
		i := (at - 1 + k) % n
		c := &cv.rows[i]
		line := strings.ToLower(strings.Join([]string{c.Label(), c.Object, c.Status}, " "))
		if strings.Contains(line, strings.ToLower(cv.find)) {
			v.t.Select(i+1, 0)
			return true
		}
	}
	return false
}

// cmdAction performs the commands view's keys.
func (u *UI) cmdAction(a Action) {
	cv := &u.cmdv
	switch a {
	case ActCmdSort:
		cv.key = (cv.key + 1) % len(CmdSortKeys)
	case ActCmdReverse:
		cv.desc = !cv.desc
	case ActCmdFind:
		u.openBar("cmdfind", "Find command: ", cv.find)
		return
	case ActCmdNext:
		if !u.findCmd() {
			u.msg = fmt.Sprintf("%q not found", cv.find)
		}
		return
	}
	u.fillCmds()
}

// cmdFound ends the find bar of the commands view.
func (u *UI) cmdFound(text string) {
	u.cmdv.find = text
	u.showPage("cmds")
	if !u.findCmd() {
		u.msg = fmt.Sprintf("%q not found", text)
	}
}
