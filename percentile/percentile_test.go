package percentile

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRank: the nearest rank ⌈q·n⌉, including where q·n in floating point
// lands a hair off an integer (0.29·100 = 28.999999999999996).
func TestRank(t *testing.T) {
	for _, c := range []struct {
		q    float64
		n, r uint64
	}{
		{0.5, 20, 10}, {0.9, 20, 18}, {0.99, 20, 20}, {0.5, 5, 3}, {0.9, 5, 5}, {0, 5, 1}, {1, 5, 5},
		{0.29, 100, 29}, {0.57, 100, 57}, {0.999, 1000, 999}, {0.999, 1001, 1000}, {0.5, 1, 1}, {0.5, 0, 0},
	} {
		if got := Rank(c.q, c.n); got != c.r {
			t.Errorf("Rank(%v, %d) = %d, want %d", c.q, c.n, got, c.r)
		}
	}
}

func nearest(sorted []int64, q float64) int64 {
	return sorted[Rank(q, uint64(len(sorted)))-1]
}

var qs = []float64{0, 0.5, 0.9, 0.99, 0.999, 1}

// TestExact: up to Budget samples a quantile is the sample of its nearest
// rank; past it, within RelError of that sample and never outside min..max.
func TestExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 20, Budget, Budget + 1, 5 * Budget} {
		var d Dist
		var all []int64
		var sum int64
		for range n {
			v := int64(rng.ExpFloat64()*2e6) + 1000
			d.Add(v)
			all = append(all, v)
			sum += v
		}
		slices.Sort(all)
		if d.Exact() != (n <= Budget) {
			t.Fatalf("n %d: exact %v", n, d.Exact())
		}
		if d.Count() != uint64(n) || d.Min() != all[0] || d.Max() != all[n-1] || d.Mean() != sum/int64(n) {
			t.Fatalf("n %d: count %d min %d max %d mean %d", n, d.Count(), d.Min(), d.Max(), d.Mean())
		}
		for _, q := range qs {
			got, want := d.Quantile(q), nearest(all, q)
			if d.Exact() && got != want {
				t.Errorf("n %d q %v: %d, want %d", n, q, got, want)
			}
			if !d.Exact() && (float64(abs(got-want)) > RelError*float64(want) || got < all[0] || got > all[n-1]) {
				t.Errorf("n %d q %v: %d, want %d within %.4f%%", n, q, got, want, RelError*100)
			}
		}
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestMerge: a distribution merged from parts answers as one that saw
// every sample, on either side of the budget.
func TestMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{10, Budget, Budget + 7, 3 * Budget} {
		var whole Dist
		parts := make([]Dist, 3)
		for i := range n {
			v := int64(rng.IntN(1e7))
			whole.Add(v)
			parts[i%3].Add(v)
		}
		var m Dist
		for i := range parts {
			m.Merge(&parts[i])
		}
		if m.Exact() != whole.Exact() || m.Count() != whole.Count() || m.Min() != whole.Min() || m.Max() != whole.Max() || m.Mean() != whole.Mean() {
			t.Fatalf("n %d: merged differs in its summary", n)
		}
		for _, q := range qs {
			if a, b := m.Quantile(q), whole.Quantile(q); a != b {
				t.Errorf("n %d q %v: merged %d, whole %d", n, q, a, b)
			}
		}
	}
	var empty Dist
	if empty.Quantile(0.5) != 0 || empty.Mean() != 0 {
		t.Fatal("an empty Dist has a value")
	}
}
