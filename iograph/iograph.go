// Package iograph bins what an I/O graph shows, once for every face:
// amounts per time interval, per series, in bounded memory (Bins), and
// latencies in log-spaced bins (Latency). iwdump --plot draws them with
// gonum/plot (Collector gathers them from the records of a run), iwtui's
// I/O graph in block characters.
package iograph

import (
	"math"
	"time"
)

// Bins are amounts per interval of Width, per series, from the start of
// the capture. When an amount falls past Max intervals, Width doubles and
// neighbouring intervals merge, so memory stays bounded whatever the
// capture's length.
type Bins struct {
	Width  time.Duration
	Max    int
	Series [][]float64
}

// New makes series empty series of at most max intervals of width.
func New(series, max int, width time.Duration) *Bins {
	return &Bins{Width: width, Max: max, Series: make([][]float64, series)}
}

// Add adds v to series s at time at (since the start; before it counts in
// the first interval).
func (b *Bins) Add(s int, at time.Duration, v float64) {
	i := int(at / b.Width)
	for i >= b.Max {
		b.coarsen()
		i = int(at / b.Width)
	}
	i = max(i, 0)
	for len(b.Series[s]) <= i {
		b.Series[s] = append(b.Series[s], 0)
	}
	b.Series[s][i] += v
}

// Padded is series s over n intervals at least (those past its last
// amount are 0).
func (b *Bins) Padded(s, n int) []float64 {
	for len(b.Series[s]) < n {
		b.Series[s] = append(b.Series[s], 0)
	}
	return b.Series[s]
}

// coarsen halves the resolution: interval pairs merge.
func (b *Bins) coarsen() {
	for d, s := range b.Series {
		for j := 0; j < len(s); j += 2 {
			v := s[j]
			if j+1 < len(s) {
				v += s[j+1]
			}
			s[j/2] = v
		}
		b.Series[d] = s[:(len(s)+1)/2]
	}
	b.Width *= 2
}

// Merge adds o's amounts (same start, same series) to b's, at the coarser
// of the two resolutions.
func (b *Bins) Merge(o *Bins) {
	for b.Width < o.Width {
		b.coarsen()
	}
	for o.Width < b.Width {
		o.coarsen()
	}
	for d := range b.Series {
		for i, v := range o.Series[d] {
			for len(b.Series[d]) <= i {
				b.Series[d] = append(b.Series[d], 0)
			}
			b.Series[d][i] += v
		}
	}
}

// Latency counts durations in LatencyBins log-spaced bins from 100 ns, 12
// per decade: up to 1000 s.
type Latency [LatencyBins]uint64

// LatencyBins is the number of bins of a Latency.
const LatencyBins = 120

// Add counts d.
func (l *Latency) Add(d time.Duration) {
	b := 0
	if d >= 100 {
		b = min(int(12*math.Log10(float64(d)/100)), LatencyBins-1)
	}
	l[b]++
}

// Total is the durations counted.
func (l *Latency) Total() uint64 {
	n := uint64(0)
	for _, x := range l {
		n += x
	}
	return n
}

// Low is the lower edge of bin i (the upper edge of bin i-1).
func Low(i int) time.Duration { return time.Duration(100 * math.Pow(10, float64(i)/12)) }
