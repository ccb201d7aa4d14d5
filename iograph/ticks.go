package iograph

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// CountTicks marks a count axis (reads, commands) at whole numbers only:
// gonum's default ticks put "0.5 reads" on a small count.
type CountTicks struct{}

// Ticks returns ticks at multiples of 1, 2 or 5 × 10^k, at most about ten.
func (CountTicks) Ticks(lo, hi float64) []plot.Tick {
	return IntTicks{}.Ticks(math.Max(0, lo), math.Max(1, hi))
}

// IntTicks marks a whole-number axis that may go below zero (a window a
// peer overdrew, a sequence number's offset) as CountTicks does.
type IntTicks struct{}

// Ticks returns ticks at whole multiples of 1, 2 or 5 × 10^k.
func (IntTicks) Ticks(lo, hi float64) []plot.Tick {
	if hi < lo+1 {
		hi = lo + 1
	}
	step := 1.0
	for i := 0; (hi-lo)/step > 10 && i < 60; i++ {
		switch m := step / math.Pow(10, math.Floor(math.Log10(step))); {
		case m < 1.5:
			step *= 2
		case m < 3:
			step *= 2.5
		default:
			step *= 2
		}
	}
	var ts []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step/1e9; v += step {
		l := strconv.FormatFloat(v, 'f', -1, 64)
		if v == 0 {
			l = "0" // not -0 (lo just below 0)
		}
		ts = append(ts, plot.Tick{Value: v, Label: l})
	}
	return ts
}

// LogTicks labels a log axis often enough to read it: at 1, 2 and 5 ×
// 10^k when it spans less than three decades, else at every 10^k with
// unlabelled 2 and 5 between (gonum's LogTicks labels powers of ten only:
// one label on a narrow axis, or none).
type LogTicks struct{}

// Ticks returns the ticks between lo and hi (both > 0).
func (LogTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= lo {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	wide := math.Log10(hi/lo) >= 3
	var ts []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if !wide || m == 1 {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ts = append(ts, t)
		}
	}
	if n := labelled(ts); n < 2 { // a narrow axis: its ends
		ts = append(ts, plot.Tick{Value: lo, Label: strconv.FormatFloat(lo, 'g', 3, 64)}, plot.Tick{Value: hi, Label: strconv.FormatFloat(hi, 'g', 3, 64)})
	}
	return ts
}

func labelled(ts []plot.Tick) int {
	n := 0
	for _, t := range ts {
		if t.Label != "" {
			n++
		}
	}
	return n
}
