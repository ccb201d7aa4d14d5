package main

import (
	"fmt"
	"image/color"
	"math"
	"time"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/render"
	"github.com/iwkit/iwkit/track"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// plots collects, in bounded memory, what --plot draws: an I/O graph
// (iWARP payload octets per time bucket and direction) and the RDMA Read
// latency distribution.
type plots struct {
	start  time.Time
	bucket time.Duration // doubles when the series would grow past maxBuckets
	io     [2][]float64  // octets per bucket, per direction (i2r, r2i)
	lat    [latBins]uint64
	frames uint64
}

const (
	maxBuckets = 1024
	latBins    = 120 // log-spaced from 100 ns, 12 bins per decade: up to 1000 s
)

// plotConsumer prints records and collects the plots of one shard.
type plotConsumer struct {
	*render.Printer
	plots *plots
}

func (c *plotConsumer) Frame(fr *pcap.Frame) { c.plots.frame(fr) }

func (c *plotConsumer) Record(r *analyze.Record) {
	c.Printer.Record(r)
	switch r.Kind {
	case analyze.KindPDU:
		if e := r.PDU; !e.PDU.IsMPAFrame && e.PDU.SegErr == nil {
			c.plots.octets(int(analyze.TrackDir(r.Conn, r.Dir)), e.LastTime, len(e.PDU.Seg.Payload))
		}
	case analyze.KindOperation:
		if r.Op.Kind == track.OpRead && r.Op.Status == track.OpOK {
			c.plots.latency(r.Op.Latency)
		}
	}
}

// mergePlots adds up what the shards collected.
func mergePlots(ps []*plots) *plots {
	for _, o := range ps[1:] {
		ps[0].merge(o)
	}
	return ps[0]
}

func (p *plots) frame(f *pcap.Frame) {
	if p.frames == 0 {
		p.start, p.bucket = f.Timestamp, time.Millisecond
	}
	p.frames++
}

// octets adds ULP octets sent in direction d at time t.
func (p *plots) octets(d int, t time.Time, n int) {
	if p.frames == 0 {
		return
	}
	i := int(t.Sub(p.start) / p.bucket)
	for i >= maxBuckets {
		p.coarsen()
		i = int(t.Sub(p.start) / p.bucket)
	}
	if i < 0 {
		i = 0
	}
	for len(p.io[d]) <= i {
		p.io[d] = append(p.io[d], 0)
	}
	p.io[d][i] += float64(n)
}

// coarsen halves the I/O graph's resolution: bucket pairs merge.
func (p *plots) coarsen() {
	for d := range p.io {
		s := p.io[d]
		for j := 0; j < len(s); j += 2 {
			v := s[j]
			if j+1 < len(s) {
				v += s[j+1]
			}
			s[j/2] = v
		}
		p.io[d] = s[:(len(s)+1)/2]
	}
	p.bucket *= 2
}

// merge adds what another shard collected; both saw every frame, so they
// share start and frame count.
func (p *plots) merge(o *plots) {
	if o.frames == 0 {
		return
	}
	for p.bucket < o.bucket {
		p.coarsen()
	}
	for o.bucket < p.bucket {
		o.coarsen()
	}
	for d := range p.io {
		for i, v := range o.io[d] {
			for len(p.io[d]) <= i {
				p.io[d] = append(p.io[d], 0)
			}
			p.io[d][i] += v
		}
	}
	for i := range p.lat {
		p.lat[i] += o.lat[i]
	}
}

func latBin(d time.Duration) int {
	if d < 100 {
		return 0
	}
	b := int(12 * math.Log10(float64(d)/100))
	return min(b, latBins-1)
}

func binLow(i int) time.Duration { return time.Duration(100 * math.Pow(10, float64(i)/12)) }

func (p *plots) latency(d time.Duration) {
	p.lat[latBin(d)]++
}

func (p *plots) write(name string) error {
	iog := plot.New()
	iog.Title.Text = "iWARP I/O"
	iog.X.Label.Text = "seconds since the first frame"
	iog.Y.Label.Text = fmt.Sprintf("ULP payload Mbit/s (per %s)", p.bucket)
	colors := []color.Color{color.RGBA{R: 31, G: 119, B: 180, A: 255}, color.RGBA{R: 214, G: 39, B: 40, A: 255}}
	for d, name := range []string{"i2r", "r2i"} {
		pts := make(plotter.XYs, len(p.io[d]))
		for i, v := range p.io[d] {
			pts[i].X = (time.Duration(i) * p.bucket).Seconds()
			pts[i].Y = v * 8 / p.bucket.Seconds() / 1e6
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
	for i, n := range p.lat {
		if n > 0 {
			lo, hi := binLow(i), binLow(i+1)
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
