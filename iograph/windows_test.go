package iograph

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/ulp"
)

var update = flag.Bool("update", false, "rewrite testdata/windows.txt")

// windowCaptures are committed captures with windows: real Linux ones
// (siw, testdata/ulp/README.md) and generated ones (ulp's tests).
var windowCaptures = []string{"smb_direct.pcap", "iser.pcap", "nvmeof.pcap", "nfs3_rdma.pcap", "gen_limits.pcap", "gen_smbd_findings.pcap", "gen_iser.pcap"}

// findingFrames collects the frames of the findings by code.
type findingFrames struct {
	*Collector
	frames map[string][]int
}

func (f findingFrames) Record(r *analyze.Record) {
	f.Collector.Record(r)
	if r.Kind == analyze.KindFinding {
		f.frames[r.Finding.Code.String()] = append(f.frames[r.Finding.Code.String()], r.Frame)
	}
}

func runFile(t *testing.T, name string) (*Collector, *analyze.Report, map[string][]int) {
	t.Helper()
	data, err := os.ReadFile("../testdata/ulp/" + name)
	if err != nil {
		t.Fatal(err)
	}
	src, err := pcap.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	c := findingFrames{&Collector{}, map[string][]int{}}
	rep, err := analyze.Run(src, analyze.Config{}, c)
	if err != nil {
		t.Fatal(err)
	}
	return c.Collector, rep, c.frames
}

// TestPlotWindows: on real and generated storage captures, --plot draws
// every flow-control window ulp keeps (credits, the iSCSI CmdSN window,
// the NVMe SQ head and tail) per queue: each line's steps equal ulp's
// series at every change (value, and the time the change happened), its
// count axis has whole-number ticks only, its title fits the page, and
// the plots are as testdata/windows.txt records them (titles, axes, each
// line's changes and values; go test -update rewrites it).
func TestPlotWindows(t *testing.T) {
	var golden strings.Builder
	lines := map[int]int{} // window -> lines drawn over all captures
	for _, name := range windowCaptures {
		c, rep, _ := runFile(t, name)
		fmt.Fprintf(&golden, "== %s\n", name)
		for gi, g := range WindowGroups {
			ls, total := WindowLines(rep.ULP, g)
			if len(ls) == 0 {
				continue
			}
			fmt.Fprintf(&golden, "plot %d: %s\n  y: %s\n", gi, g.Title, g.Y)
			if total > len(ls) {
				fmt.Fprintf(&golden, "  (%d of %d lines)\n", len(ls), total)
			}
			for _, l := range ls {
				lines[l.Win]++
				ser := l.Queue.Windows[l.Win].Series
				pts := l.Steps(c.Start)
				if len(pts) != 2*len(ser) {
					t.Fatalf("%s %s: %d step points for %d changes", name, l.Label(), len(pts), len(ser))
				}
				vals := make([]string, 0, len(ser))
				for i, p := range ser {
					x := p.Time.Sub(c.Start).Seconds()
					want := l.Value(p.Value)
					if pts[2*i].X != x || pts[2*i].Y != want {
						t.Errorf("%s %s: change %d (frame %d) drawn at %v, want (%v, %v)", name, l.Label(), i, p.Frame, pts[2*i], x, want)
					}
					if i > 0 && (pts[2*i-1].X != x || pts[2*i-1].Y != l.Value(ser[i-1].Value)) {
						t.Errorf("%s %s: the step before change %d at %v", name, l.Label(), i, pts[2*i-1])
					}
					if i < 12 || i == len(ser)-1 {
						vals = append(vals, strconv.FormatFloat(want, 'f', -1, 64))
					} else if i == 12 {
						vals = append(vals, "...")
					}
				}
				fmt.Fprintf(&golden, "  %s: %d changes: %s\n", l.Label(), len(ser), strings.Join(vals, " "))
			}
		}
		ps := windowPlots(c, rep.ULP)
		for _, p := range ps {
			if w := p.Title.TextStyle.Width(p.Title.Text); w > 23*vg.Centimeter {
				t.Errorf("%s: title %q is %.1f cm wide, the page 24 cm", name, p.Title.Text, w.Points()/vg.Centimeter.Points())
			}
			ticks := p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max)
			var labels []string
			for _, tk := range ticks {
				if tk.Label == "" {
					continue
				}
				labels = append(labels, tk.Label)
				if tk.Value != float64(int64(tk.Value)) || strings.Contains(tk.Label, ".") {
					t.Errorf("%s %q: tick %v %q on a count axis", name, p.Title.Text, tk.Value, tk.Label)
				}
			}
			if len(labels) < 2 {
				t.Errorf("%s %q: Y ticks %v", name, p.Title.Text, labels)
			}
			fmt.Fprintf(&golden, "ticks %q: %s\n", p.Y.Label.Text, strings.Join(labels, " "))
		}
		var svg bytes.Buffer
		if err := Write(&svg, c, rep.ULP, false); err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			for _, want := range []string{"seconds since the first frame", p.Y.Label.Text} {
				if !strings.Contains(svg.String(), xmlText(want)) {
					t.Errorf("%s: no %q in the SVG", name, want)
				}
			}
		}
	}
	for _, w := range []int{ulp.WinSMBDClient, ulp.WinSMBDServer, ulp.WinSMB2Credits, ulp.WinRPCCredits, ulp.WinISCSICmdSN,
		ulp.WinISCSIExpCmdSN, ulp.WinISCSIMaxCmdSN, ulp.WinISCSICmdSNSent, ulp.WinSMB2Granted, ulp.WinSMB2Used, ulp.WinNVMeSQHead, ulp.WinNVMeSQTail} {
		if lines[w] == 0 {
			t.Errorf("no %s line drawn on the captures", ulp.WindowNames[w])
		}
	}
	const file = "testdata/windows.txt"
	if *update {
		if err := os.WriteFile(file, []byte(golden.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if golden.String() != string(want) {
		t.Errorf("window plots differ from %s (go test ./iograph -run TestPlotWindows -update to accept):\n%s", file, golden.String())
	}
}

// xmlText is s as gonum's SVG writes it in a text element.
func xmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "'", "&#39;", `"`, "&#34;").Replace(s)
}

// TestPlotCmdSNWindow: on the generated capture where one iSCSI command's
// CmdSN is outside the window the target announced (ulp's TestLimits),
// the plotted CmdSN falls outside the plotted ExpCmdSN .. MaxCmdSN band
// at that command, and only there: the frames out of the band are the
// frames of the iscsi.cmdsn_window findings.
func TestPlotCmdSNWindow(t *testing.T) {
	c, rep, findings := runFile(t, "gen_limits.pcap")
	ls, _ := WindowLines(rep.ULP, WindowGroups[1])
	byWin := map[int]WindowLine{}
	for _, l := range ls {
		byWin[l.Win] = l
	}
	exp, maxl, sent := byWin[ulp.WinISCSIExpCmdSN], byWin[ulp.WinISCSIMaxCmdSN], byWin[ulp.WinISCSICmdSNSent]
	if exp.Queue == nil || maxl.Queue == nil || sent.Queue == nil {
		t.Fatalf("lines %v", ls)
	}
	// at is a step line's value at time x (seconds): the last change at or
	// before it.
	at := func(pts []struct{ X, Y float64 }, x float64) (float64, bool) {
		v, ok := 0.0, false
		for _, p := range pts {
			if p.X <= x {
				v, ok = p.Y, true
			}
		}
		return v, ok
	}
	conv := func(l WindowLine) []struct{ X, Y float64 } {
		var out []struct{ X, Y float64 }
		for _, p := range l.Steps(c.Start) {
			out = append(out, struct{ X, Y float64 }{p.X, p.Y})
		}
		return out
	}
	ep, mp := conv(exp), conv(maxl)
	var outside []int
	ser := sent.Queue.Windows[ulp.WinISCSICmdSNSent].Series
	for i, p := range conv(sent) {
		if i%2 == 1 || i/2 >= len(ser) {
			continue // the step into the next change, the end
		}
		lo, ok1 := at(ep, p.X)
		hi, ok2 := at(mp, p.X)
		if ok1 && ok2 && (p.Y < lo || p.Y > hi) {
			outside = append(outside, ser[i/2].Frame)
		}
	}
	want := findings["iscsi.cmdsn_window"]
	if len(want) == 0 || fmt.Sprint(outside) != fmt.Sprint(want) {
		t.Errorf("CmdSN drawn outside the window at frames %v; iscsi.cmdsn_window at %v", outside, want)
	}
}
