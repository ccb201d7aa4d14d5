package iograph

import (
	"cmp"
	"image/color"
	"io"
	"math"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/iwkit/iwkit/render"
	"github.com/iwkit/iwkit/ulp"
)

// MaxLines bounds the lines of one plot (commands, queues): the ones with
// the most commands, or the deepest queues.
const MaxLines = 8

// Write draws what iwdump --plot shows into w (PNG when png, else SVG):
// the I/O graph, the RDMA Read latency distribution, and for storage
// traffic the command latency distribution per command, the depth of
// each queue over time (s: the run's ULP statistics, ulp depth.go) and its
// flow-control windows (windows.go).
func Write(w io.Writer, c *Collector, s *ulp.Stats, png bool) error {
	plots := []*plot.Plot{ioPlot(c), readPlot(c)}
	if p := commandPlot(c); p != nil {
		plots = append(plots, p)
	}
	if p := depthPlot(c, s); p != nil {
		plots = append(plots, p)
	}
	plots = append(plots, windowPlots(c, s)...) // windows.go
	wd, h := 24*vg.Centimeter, vg.Length(len(plots))*10*vg.Centimeter
	var cv vg.CanvasWriterTo
	if png {
		cv = vgimg.PngCanvas{Canvas: vgimg.New(wd, h)}
	} else {
		cv = vgsvg.New(wd, h)
	}
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadY: vg.Centimeter / 2, PadTop: vg.Centimeter / 4, PadBottom: vg.Centimeter / 4, PadLeft: vg.Centimeter / 4, PadRight: vg.Centimeter / 2}
	grid := make([][]*plot.Plot, len(plots))
	for i, p := range plots {
		grid[i] = []*plot.Plot{p}
	}
	canvases := plot.Align(grid, tiles, draw.New(cv))
	for i, p := range plots {
		p.Draw(canvases[i][0])
	}
	_, err := cv.WriteTo(w)
	return err
}

func ioPlot(c *Collector) *plot.Plot {
	bins := c.IO
	if bins == nil {
		bins = New(2, 1, time.Millisecond) // no frames
	}
	p := plot.New()
	p.Title.Text = "iWARP I/O"
	p.X.Label.Text = "seconds since the first frame"
	p.Y.Label.Text = "ULP payload Mbit/s (per " + bins.Width.String() + ")"
	colors := []color.Color{color.RGBA{R: 31, G: 119, B: 180, A: 255}, color.RGBA{R: 214, G: 39, B: 40, A: 255}}
	for d, name := range []string{"i2r", "r2i"} {
		pts := make(plotter.XYs, len(bins.Series[d]))
		for i, v := range bins.Series[d] {
			pts[i].X = (time.Duration(i) * bins.Width).Seconds()
			pts[i].Y = v * 8 / bins.Width.Seconds() / 1e6
		}
		if len(pts) == 0 {
			continue
		}
		if l, err := plotter.NewLine(pts); err == nil {
			l.Color = colors[d]
			p.Add(l)
			p.Legend.Add(name, l)
		}
	}
	p.Legend.Top = true
	return p
}

// histPlot is a latency distribution plot: log µs against a count.
func histPlot(title, what string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "latency, µs (log scale)"
	p.Y.Label.Text = what
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = LogTicks{}
	p.Y.Tick.Marker = CountTicks{}
	p.Y.Min = 0
	return p
}

// legendRoom makes room above the lines for a top legend of n lines, so
// that the legend does not cover a line at its top.
func legendRoom(p *plot.Plot, n int) {
	p.Y.Max += (p.Y.Max - p.Y.Min) * min(0.6, 0.08*float64(n))
}

// atLeastDecade widens a log latency axis to one decade about its data's
// geometric middle: latencies that all fall in one or two bins (a single
// Read) would otherwise fill the plot from edge to edge with the axis
// labelled only at its two crowded ends.
func atLeastDecade(p *plot.Plot) {
	lo, hi := p.X.Min, p.X.Max
	if lo <= 0 || hi/lo >= 10 {
		return
	}
	mid := math.Sqrt(lo * hi)
	p.X.Min, p.X.Max = mid/math.Sqrt(10), mid*math.Sqrt(10)
}

// steps is the outline of a Latency histogram (µs on X).
func steps(l *Latency) plotter.XYs {
	var pts plotter.XYs
	for i, n := range l {
		if n > 0 {
			lo, hi := float64(Low(i))/1e3, float64(Low(i+1))/1e3
			pts = append(pts, plotter.XY{X: lo, Y: 0}, plotter.XY{X: lo, Y: float64(n)}, plotter.XY{X: hi, Y: float64(n)}, plotter.XY{X: hi, Y: 0})
		}
	}
	return pts
}

// noData turns a log-latency plot into an empty linear one.
func noData(p *plot.Plot, why string) {
	p.Title.Text += ": " + why
	p.X.Scale = plot.LinearScale{}
	p.X.Tick.Marker = plot.DefaultTicks{}
}

func readPlot(c *Collector) *plot.Plot {
	p := histPlot("RDMA Read latency (request to last response segment)", "reads")
	pts := steps(&c.Lat)
	if len(pts) == 0 {
		noData(p, "no reads in the capture")
		return p
	}
	if l, err := plotter.NewLine(pts); err == nil {
		l.FillColor = color.RGBA{R: 44, G: 160, B: 44, A: 160}
		p.Add(l)
	}
	atLeastDecade(p)
	return p
}

// commandPlot draws the latency distribution of the storage commands, a
// line per command (the MaxLines most frequent); nil without commands.
func commandPlot(c *Collector) *plot.Plot {
	if len(c.Cmds) == 0 {
		return nil
	}
	keys := make([]ulp.CmdKey, 0, len(c.Cmds))
	for k := range c.Cmds {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b ulp.CmdKey) int {
		return cmp.Or(cmp.Compare(c.Cmds[b].Total(), c.Cmds[a].Total()), cmp.Compare(a.Proto, b.Proto), cmp.Compare(a.Name, b.Name))
	})
	p := histPlot("Storage command latency (command Send to response), per command", "commands")
	for i, k := range keys[:min(len(keys), MaxLines)] {
		l, err := plotter.NewLine(steps(c.Cmds[k]))
		if err != nil {
			continue
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(k.Proto.String()+" "+k.Name, l)
	}
	p.Legend.Top = true
	atLeastDecade(p)
	legendRoom(p, min(len(keys), MaxLines))
	return p
}

// depthPlot draws each queue's outstanding commands over time (the
// MaxLines deepest); nil without queues.
func depthPlot(c *Collector, s *ulp.Stats) *plot.Plot {
	if s == nil || len(s.Queues) == 0 {
		return nil
	}
	qs := slices.Clone(s.Queues)
	slices.SortStableFunc(qs, func(a, b *ulp.Queue) int {
		return cmp.Or(cmp.Compare(b.Depth.Max, a.Depth.Max), cmp.Compare(a.Key.Conn, b.Key.Conn), cmp.Compare(a.Key.Name, b.Key.Name))
	})
	p := plot.New()
	p.Title.Text = "Queue depth (commands outstanding) per queue"
	p.X.Label.Text = "seconds since the first frame"
	p.Y.Label.Text = "commands outstanding"
	p.Y.Tick.Marker = CountTicks{}
	p.Y.Min = 0
	for i, q := range qs[:min(len(qs), MaxLines)] {
		pts := DepthSteps(&q.Depth, c.Start)
		if len(pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			continue
		}
		l.Color = plotutil.Color(i)
		p.Add(l)
		p.Legend.Add(q.Key.Proto.String()+" "+render.QueueLabel(q.Key), l)
	}
	p.Legend.Top = true
	legendRoom(p, min(len(qs), MaxLines))
	return p
}

// DepthSteps is a depth series as a step line (seconds since start on X):
// the depth holds from each change to the next, the last to the end.
func DepthSteps(d *ulp.Depth, start time.Time) plotter.XYs {
	return stepLine(len(d.Series), func(i int) (time.Time, float64) { return d.Series[i].Time, float64(d.Series[i].Depth) }, start, d.End())
}
