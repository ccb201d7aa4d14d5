package iograph

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"

	"github.com/iwkit/iwkit/render"
	"github.com/iwkit/iwkit/ulp"
)

// The flow-control windows over time (issue 27, "plots"): each queue's
// windows as ulp keeps them (ulp window.go, Queue.Windows), a step line
// per queue and window, in three plots by what the axis counts.

// WindowGroup is one plot of windows: its title, what its Y axis counts,
// and the windows it draws (ulp.WinSMBDClient...).
type WindowGroup struct {
	Title, Y string
	Wins     []int
}

// WindowGroups are the window plots --plot draws, each when some queue
// has one of its windows.
var WindowGroups = []WindowGroup{
	{"Credits per queue: SMB Direct, SMB2 (granted, unused), RPC-over-RDMA; iSCSI window size",
		"credits (commands the peer may send)", []int{ulp.WinSMBDClient, ulp.WinSMBDServer, ulp.WinSMB2Credits, ulp.WinRPCCredits, ulp.WinISCSICmdSN}},
	{"iSCSI CmdSN sent against the window ExpCmdSN .. MaxCmdSN, per queue (RFC 7143 §4.2.2.1)",
		"CmdSN − the queue's first ExpCmdSN", []int{ulp.WinISCSIExpCmdSN, ulp.WinISCSIMaxCmdSN, ulp.WinISCSICmdSNSent}},
	{"SMB2 MessageIds granted (CreditResponse) and used (MessageId + CreditCharge), per queue",
		"MessageId", []int{ulp.WinSMB2Granted, ulp.WinSMB2Used}},
	{"NVMe SQ head (SQHD of the completions) and tail (commands submitted), per queue",
		"SQ entry", []int{ulp.WinNVMeSQHead, ulp.WinNVMeSQTail}},
}

// WindowLine is one line of a window plot.
type WindowLine struct {
	Queue *ulp.Queue
	Win   int
	// Base is subtracted from a serial window's values (ulp.Serial): the
	// queue's first ExpCmdSN (or CmdSN), so the axis reads offsets, with
	// RFC 1982 wrap-around.
	Base uint32
}

// Label names the line in the legend.
func (l WindowLine) Label() string {
	return l.Queue.Key.Proto.String() + " " + render.QueueLabel(l.Queue.Key) + " " + ulp.WindowNames[l.Win]
}

// WindowLines are the lines of group g in s: per queue (the ones with the
// most changes first, then by name), each window of g it has; at most
// MaxLines, and the number there were.
func WindowLines(s *ulp.Stats, g WindowGroup) ([]WindowLine, int) {
	if s == nil {
		return nil, 0
	}
	changes := func(q *ulp.Queue) int {
		n := 0
		for _, w := range g.Wins {
			n += len(q.Windows[w].Series)
		}
		return n
	}
	var qs []*ulp.Queue
	for _, q := range s.Queues {
		if changes(q) > 0 {
			qs = append(qs, q)
		}
	}
	slices.SortStableFunc(qs, func(a, b *ulp.Queue) int {
		return cmp.Or(cmp.Compare(changes(b), changes(a)), cmp.Compare(a.Key.Conn, b.Key.Conn), cmp.Compare(a.Key.Name, b.Key.Name))
	})
	var ls []WindowLine
	total := 0
	for _, q := range qs {
		var base uint32
		for _, w := range g.Wins {
			if ser := q.Windows[w].Series; ulp.Serial[w] && len(ser) > 0 {
				base = uint32(ser[0].Value)
				break
			}
		}
		for _, w := range g.Wins {
			if len(q.Windows[w].Series) == 0 {
				continue
			}
			total++
			if len(ls) < MaxLines {
				ls = append(ls, WindowLine{Queue: q, Win: w, Base: base})
			}
		}
	}
	return ls, total
}

// Value is a window value as the line draws it.
func (l WindowLine) Value(v int64) float64 {
	if ulp.Serial[l.Win] {
		return float64(int32(uint32(v) - l.Base))
	}
	return float64(v)
}

// Steps is the line's window series as a step line (seconds since start
// on X): each value holds from its change to the next, the last to the
// queue's end.
func (l WindowLine) Steps(start time.Time) plotter.XYs {
	ser := l.Queue.Windows[l.Win].Series
	return stepLine(len(ser), func(i int) (time.Time, float64) { return ser[i].Time, l.Value(ser[i].Value) }, start, l.Queue.Depth.End())
}

// stepLine draws n changes (time and value of change i) as steps from
// start's seconds on, the last held to end.
func stepLine(n int, at func(i int) (time.Time, float64), start, end time.Time) plotter.XYs {
	pts := make(plotter.XYs, 0, 2*n)
	prev := 0.0
	for i := range n {
		t, v := at(i)
		x := t.Sub(start).Seconds()
		if i > 0 {
			pts = append(pts, plotter.XY{X: x, Y: prev})
		}
		pts = append(pts, plotter.XY{X: x, Y: v})
		prev = v
	}
	if n > 0 {
		pts = append(pts, plotter.XY{X: end.Sub(start).Seconds(), Y: prev})
	}
	return pts
}

// windowPlots draws the window groups that have lines.
func windowPlots(c *Collector, s *ulp.Stats) []*plot.Plot {
	var ps []*plot.Plot
	for _, g := range WindowGroups {
		ls, total := WindowLines(s, g)
		if len(ls) == 0 {
			continue
		}
		p := plot.New()
		p.Title.Text = g.Title
		if total > len(ls) {
			p.Title.Text += fmt.Sprintf(" (%d of %d lines: the busiest queues)", len(ls), total)
		}
		p.X.Label.Text = "seconds since the first frame"
		p.Y.Label.Text = g.Y
		p.Y.Tick.Marker = IntTicks{}
		p.Y.Min = 0 // the axis shows 0, and below it a negative (overdrawn) window
		queue := map[*ulp.Queue]int{}
		for _, l := range ls {
			line, err := plotter.NewLine(l.Steps(c.Start))
			if err != nil {
				continue
			}
			if _, ok := queue[l.Queue]; !ok {
				queue[l.Queue] = len(queue)
			}
			line.Color = plotutil.Color(queue[l.Queue]) // a colour per queue, a dash per window
			line.Dashes = plotutil.Dashes(slices.Index(g.Wins, l.Win))
			p.Add(line)
			p.Legend.Add(l.Label(), line)
		}
		p.Legend.Top = true
		legendRoom(p, len(ls))
		ps = append(ps, p)
	}
	return ps
}
