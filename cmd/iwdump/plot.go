package main

import (
	"fmt"
	"image/color"
	"time"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/iograph"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/render"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// plotConsumer prints records and collects the plots of one shard.
type plotConsumer struct {
	*render.Printer
	c *iograph.Collector
}

func (c *plotConsumer) Frame(fr *pcap.Frame) { c.c.Frame(fr) }

func (c *plotConsumer) Record(r *analyze.Record) {
	c.Printer.Record(r)
	c.c.Record(r)
}

// writePlot draws --plot: the I/O graph and the RDMA Read latency
// distribution that p collected.
func writePlot(p *iograph.Collector, name string) error {
	bins := p.IO
	if bins == nil {
		bins = iograph.New(2, 1, time.Millisecond) // no frames
	}
	iog := plot.New()
	iog.Title.Text = "iWARP I/O"
	iog.X.Label.Text = "seconds since the first frame"
	iog.Y.Label.Text = fmt.Sprintf("ULP payload Mbit/s (per %s)", bins.Width)
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
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = colors[d]
		iog.Add(l)
		iog.Legend.Add(name, l)
	}
	iog.Legend.Top = true

	lh := plot.New()
	lh.Title.Text = "RDMA Read latency (request to last response segment)"
	lh.X.Label.Text = "latency, µs (log scale)"
	lh.Y.Label.Text = "reads"
	lh.X.Scale = plot.LogScale{}
	lh.X.Tick.Marker = plot.LogTicks{Prec: -1}
	var hist plotter.XYs
	for i, n := range p.Lat {
		if n > 0 {
			lo, hi := iograph.Low(i), iograph.Low(i+1)
			hist = append(hist, plotter.XY{X: float64(lo) / 1e3, Y: 0}, plotter.XY{X: float64(lo) / 1e3, Y: float64(n)},
				plotter.XY{X: float64(hi) / 1e3, Y: float64(n)}, plotter.XY{X: float64(hi) / 1e3, Y: 0})
		}
	}
	if len(hist) > 0 {
		l, err := plotter.NewLine(hist)
		if err != nil {
			return err
		}
		l.FillColor = color.RGBA{R: 44, G: 160, B: 44, A: 160}
		lh.Add(l)
	} else {
		lh.Title.Text += ": no reads in the capture"
		lh.X.Scale = plot.LinearScale{}
		lh.X.Tick.Marker = plot.DefaultTicks{}
	}

	const w, h = 24 * vg.Centimeter, 20 * vg.Centimeter
	var c vg.CanvasWriterTo
	if len(name) > 4 && name[len(name)-4:] == ".png" {
		c = vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
	} else {
		c = newSVG(w, h)
	}
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Centimeter / 2, PadTop: vg.Centimeter / 4, PadBottom: vg.Centimeter / 4, PadLeft: vg.Centimeter / 4, PadRight: vg.Centimeter / 2}
	canvases := plot.Align([][]*plot.Plot{{iog}, {lh}}, tiles, draw.New(c))
	iog.Draw(canvases[0][0])
	lh.Draw(canvases[1][0])
	return saveCanvas(c, name)
}
