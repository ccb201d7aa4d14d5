package perf

import (
	"fmt"
	"image/color"
	"os"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plot draws a size sweep into file (.png, else SVG): bandwidth against
// size above, latency against size below, both on log scales. A
// bandwidth sweep's latency panel is the time per message (1/MsgRate); a
// latency sweep's bandwidth panel is size / t_typical.
func Plot(file string, rs []Result, gbits bool) error {
	if len(rs) == 0 {
		return fmt.Errorf("perf: nothing to plot")
	}
	test := rs[0].Test
	unit := "MB/sec"
	if gbits {
		unit = "Gb/sec"
	}
	bw := plot.New()
	bw.Title.Text = "iwperf " + Title(test, rs[0].Bidir)
	bw.X.Label.Text = "message size, octets"
	bw.Y.Label.Text = "bandwidth, " + unit
	lat := plot.New()
	lat.X.Label.Text = "message size, octets"
	lat.Y.Label.Text = "latency, µs"
	for _, p := range []*plot.Plot{bw, lat} {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Legend.Top, p.Legend.Left = true, true
	}
	lat.Y.Scale = plot.LogScale{}
	lat.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	series := func(p *plot.Plot, name string, c color.Color, y func(Row) float64) error {
		var pts plotter.XYs
		for _, r := range rs {
			if v := y(r.Row); v > 0 && r.Row.Size > 0 {
				pts = append(pts, plotter.XY{X: float64(r.Row.Size), Y: v})
			}
		}
		if len(pts) == 0 {
			return nil
		}
		l, s, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		l.Color, s.Color = c, c
		p.Add(l, s)
		p.Legend.Add(name, l, s)
		return nil
	}
	blue, red, green := color.RGBA{R: 31, G: 119, B: 180, A: 255}, color.RGBA{R: 214, G: 39, B: 40, A: 255}, color.RGBA{R: 44, G: 160, B: 44, A: 255}
	var err error
	if IsLat(test) {
		lat.Title.Text = "latency (write/send: half a round trip; read: a round trip)"
		err = errorsJoin(
			series(lat, "t_typical", blue, func(r Row) float64 { return r.Lat.Typical }),
			series(lat, "t_avg", green, func(r Row) float64 { return r.Lat.Avg }),
			series(lat, "99% percentile", red, func(r Row) float64 { return r.Lat.P99 }),
			series(bw, "size / t_typical", blue, func(r Row) float64 { return BWUnit(float64(r.Size)/(r.Lat.Typical/1e6), gbits) }))
	} else {
		lat.Title.Text = "time per message (1 / message rate)"
		bw.Y.Scale = plot.LogScale{}
		bw.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		err = errorsJoin(
			series(bw, "BW average", blue, func(r Row) float64 { return BWUnit(r.AvgBps, gbits) }),
			series(bw, "BW peak", red, func(r Row) float64 { return BWUnit(r.PeakBps, gbits) }),
			series(lat, "µs per message", green, func(r Row) float64 {
				if r.MsgRate == 0 {
					return 0
				}
				return 1e6 / r.MsgRate
			}))
	}
	if err != nil {
		return err
	}
	const w, h = 24 * vg.Centimeter, 20 * vg.Centimeter
	var c vg.CanvasWriterTo
	if strings.HasSuffix(strings.ToLower(file), ".png") {
		c = vgimg.PngCanvas{Canvas: vgimg.New(w, h)}
	} else {
		c = vgsvg.New(w, h)
	}
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Centimeter / 2, PadTop: vg.Centimeter / 4, PadBottom: vg.Centimeter / 4, PadLeft: vg.Centimeter / 4, PadRight: vg.Centimeter / 2}
	canvases := plot.Align([][]*plot.Plot{{bw}, {lat}}, tiles, draw.New(c))
	bw.Draw(canvases[0][0])
	lat.Draw(canvases[1][0])
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func errorsJoin(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
