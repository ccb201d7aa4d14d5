package iograph

import (
	"math/rand/v2"
	"testing"
	"time"
)

// Amounts land in their interval; past Max the width doubles and the
// amounts merge pairwise, the total kept.
func TestBinsCoarsen(t *testing.T) {
	b := New(1, 4, time.Millisecond)
	b.Add(0, 0, 1)
	b.Add(0, 1500*time.Microsecond, 2)
	b.Add(0, 3*time.Millisecond, 3)
	if got := b.Series[0]; len(got) != 4 || got[0] != 1 || got[1] != 2 || got[2] != 0 || got[3] != 3 || b.Width != time.Millisecond {
		t.Fatalf("before coarsening: %v per %v", got, b.Width)
	}
	b.Add(0, 9*time.Millisecond, 4) // interval 9 of 1 ms: 2 of 4 ms
	if got := b.Series[0]; b.Width != 4*time.Millisecond || len(got) != 3 || got[0] != 6 || got[1] != 0 || got[2] != 4 {
		t.Fatalf("after: %v per %v", got, b.Width)
	}
	b.Add(0, -time.Second, 5) // before the start: the first interval
	if b.Series[0][0] != 11 {
		t.Fatalf("before the start: %v", b.Series[0])
	}
	if p := b.Padded(0, 6); len(p) != 6 || p[5] != 0 {
		t.Fatalf("padded: %v", p)
	}
}

// Merging the bins of two halves of the amounts gives the bins of all of
// them, whatever resolution each half reached.
func TestBinsMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	all, a, c := New(2, 64, time.Microsecond), New(2, 64, time.Microsecond), New(2, 64, time.Microsecond)
	for i := 0; i < 5000; i++ {
		s, at, v := r.IntN(2), time.Duration(r.Int64N(int64(time.Second))), float64(r.IntN(9000))
		if i > 4000 {
			at /= 1000 // c stays finer than a
		}
		all.Add(s, at, v)
		if i%2 == 0 {
			a.Add(s, at, v)
		} else {
			c.Add(s, at, v)
		}
	}
	a.Merge(c)
	if a.Width != all.Width {
		t.Fatalf("width %v, want %v", a.Width, all.Width)
	}
	for s := range all.Series {
		x, y := a.Padded(s, len(all.Series[s])), all.Padded(s, len(a.Series[s]))
		for i := range x {
			if x[i] != y[i] {
				t.Fatalf("series %d interval %d: %v, want %v", s, i, x[i], y[i])
			}
		}
	}
}

// Latency bins are 12 per decade from 100 ns; the edges hold.
func TestLatency(t *testing.T) {
	var l Latency
	for _, d := range []time.Duration{0, 99, 100, time.Microsecond, 2 * time.Microsecond, time.Hour} {
		l.Add(d)
	}
	if l[0] != 3 || l[12] != 1 || l[LatencyBins-1] != 1 {
		t.Fatalf("bins %v", l)
	}
	for i := 1; i < LatencyBins; i++ {
		var one Latency
		one.Add(Low(i) + 1)
		if one[i] != 1 {
			t.Fatalf("just above the low edge of bin %d (%v) lands elsewhere", i, Low(i))
		}
	}
}
