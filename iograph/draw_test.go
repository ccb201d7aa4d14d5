package iograph

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/pcap"
)

// A count axis has whole-number ticks only, however small the count.
func TestCountTicks(t *testing.T) {
	for _, r := range [][2]float64{{0, 1}, {0, 3}, {0, 7.5}, {0, 40}, {0, 1234}} {
		ts := CountTicks{}.Ticks(r[0], r[1])
		if len(ts) < 2 || len(ts) > 12 {
			t.Errorf("%v: %d ticks", r, len(ts))
		}
		for _, x := range ts {
			if x.Value != float64(int64(x.Value)) || strings.Contains(x.Label, ".") {
				t.Errorf("%v: tick %v %q on a count axis", r, x.Value, x.Label)
			}
		}
	}
}

// A log axis has at least two labels, on a narrow range too.
func TestLogTicks(t *testing.T) {
	for _, r := range [][2]float64{{3, 30}, {120, 180}, {0.5, 2000}, {1, 1e6}} {
		n := labelled(LogTicks{}.Ticks(r[0], r[1]))
		if n < 2 {
			t.Errorf("%v: %d labels", r, n)
		}
	}
}

// A latency plot of one Read spans a decade about it, labelled at least
// twice inside it (not edge to edge with crowded end labels).
func TestOneReadDecade(t *testing.T) {
	c := &Collector{}
	c.Lat.Add(9100 * time.Microsecond)
	p := readPlot(c)
	if p.X.Max/p.X.Min < 10*(1-1e-9) || p.X.Min > 9100 || p.X.Max < 9100 {
		t.Fatalf("X from %g to %g µs for one Read of 9100 µs", p.X.Min, p.X.Max)
	}
	var in int
	for _, tk := range (LogTicks{}).Ticks(p.X.Min, p.X.Max) {
		if tk.Label != "" && tk.Value > p.X.Min*1.2 && tk.Value < p.X.Max/1.2 {
			in++
		}
	}
	if in < 2 {
		t.Errorf("%d labels inside the axis", in)
	}
}

// On a real NVMe-oF capture, --plot draws the command latency per command
// and the depth of every queue, the depth line following the series.
func TestPlotStorage(t *testing.T) {
	data, err := os.ReadFile("../testdata/ulp/nvmeof.pcap")
	if err != nil {
		t.Fatal(err)
	}
	src, err := pcap.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	c := &Collector{}
	rep, err := analyze.Run(src, analyze.Config{}, collectorConsumer{c})
	if err != nil {
		t.Fatal(err)
	}
	var svg bytes.Buffer
	if err := Write(&svg, c, rep.ULP, false); err != nil {
		t.Fatal(err)
	}
	out := svg.String()
	for _, want := range []string{"Storage command latency", "nvme Identify", "nvme Read", "Queue depth", "qid 1 cntlid 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the plot", want)
		}
	}
	if strings.Contains(out, ">0.5<") {
		t.Errorf("a 0.5 tick label in the plot")
	}
	n := 0
	for _, q := range rep.ULP.Queues {
		pts := DepthSteps(&q.Depth, c.Start)
		if len(pts) != 2*len(q.Depth.Series) {
			t.Errorf("%v: %d step points for %d changes", q.Key, len(pts), len(q.Depth.Series))
		}
		for i, p := range q.Depth.Series {
			if pts[2*i].Y != float64(p.Depth) && pts[2*i+1].Y != float64(p.Depth) {
				t.Errorf("%v: change %d drawn at %v, depth %d", q.Key, i, pts[2*i], p.Depth)
			}
		}
		n += len(q.Depth.Series)
	}
	if n == 0 {
		t.Error("no depth change in an NVMe-oF capture")
	}
}

type collectorConsumer struct{ c *Collector }

func (c collectorConsumer) Frame(f *pcap.Frame)      { c.c.Frame(f) }
func (c collectorConsumer) Record(r *analyze.Record) { c.c.Record(r) }
