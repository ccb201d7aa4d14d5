package percentile

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// TestBucketIsHdrHistogram: Bucket's buckets are those of the histogram
// a Dist folds into past Budget (the one bucketing in iwkit).
func TestBucketIsHdrHistogram(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	vals := []int64{0, 1, 2047, 2048, 2049, 4095, 4096, 4097, 1 << 20, 1<<20 + 1023, 1<<20 + 1024, highest}
	for range 300 {
		vals = append(vals, rng.Int64N(highest))
	}
	for _, v := range vals {
		h := hdrhistogram.New(1, highest, Digits)
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
		var bar hdrhistogram.Bar
		for _, b := range h.Distribution() {
			if b.Count > 0 {
				bar = b
			}
		}
		lo, hi := Bucket(v)
		if lo != bar.From || hi != bar.To {
			t.Fatalf("Bucket(%d) = %d..%d, hdrhistogram %d..%d", v, lo, hi, bar.From, bar.To)
		}
		if lo > v || v > hi || float64(hi-lo) > RelError*float64(lo) {
			t.Fatalf("Bucket(%d) = %d..%d: not within RelError", v, lo, hi)
		}
		if nlo, nhi := Bucket(-v); nlo != -hi || nhi != -lo {
			t.Fatalf("Bucket(%d) = %d..%d, want the mirror of %d..%d", -v, nlo, nhi, lo, hi)
		}
	}
}

// buckets are the samples folded into Bucket's buckets, in order: the
// count and largest sample of each.
func buckets(samples []int64) (counts []uint64, maxes []int64) {
	s := slices.Sorted(slices.Values(samples))
	for i, v := range s {
		lo, _ := Bucket(v)
		if i > 0 {
			if plo, _ := Bucket(s[i-1]); plo == lo {
				counts[len(counts)-1]++
				maxes[len(maxes)-1] = v
				continue
			}
		}
		counts, maxes = append(counts, 1), append(maxes, v)
	}
	return counts, maxes
}

// TestBucketQuantileMerges: buckets of several partitions, added bucket
// by bucket, give the percentile of the buckets of all the samples
// (exactly), which is within RelError of the nearest-rank sample, above
// it and a sample itself.
func TestBucketQuantileMerges(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 50 {
		var all []int64
		parts := make([][]int64, 1+rng.IntN(5))
		for i := range parts {
			for range rng.IntN(3000) {
				v := int64(rng.ExpFloat64() * float64(1+rng.IntN(1e6)))
				if trial%7 == 0 {
					v = rng.Int64N(3000) // exact buckets
				}
				parts[i] = append(parts[i], v)
				all = append(all, v)
			}
		}
		// Merge: add the partitions' buckets by lower bound.
		type agg struct {
			n  uint64
			mx int64
		}
		merged := map[int64]*agg{}
		for _, p := range parts {
			c, m := buckets(p)
			for i := range c {
				lo, _ := Bucket(m[i])
				a := merged[lo]
				if a == nil {
					a = &agg{mx: m[i]}
					merged[lo] = a
				}
				a.n += c[i]
				a.mx = max(a.mx, m[i])
			}
		}
		var mc []uint64
		var mm []int64
		for _, lo := range slices.Sorted(func(yield func(int64) bool) {
			for k := range merged {
				if !yield(k) {
					return
				}
			}
		}) {
			mc, mm = append(mc, merged[lo].n), append(mm, merged[lo].mx)
		}
		ac, am := buckets(all)
		var d Dist
		for _, v := range all {
			d.Add(v)
		}
		exact := slices.Sorted(slices.Values(all))
		for _, q := range []float64{0, 0.5, 0.9, 0.99, 0.999, 1} {
			got, ok := BucketQuantile(q, mc, mm)
			one, ok1 := BucketQuantile(q, ac, am)
			if ok != (len(all) > 0) || ok1 != ok {
				t.Fatalf("ok %v %v with %d samples", ok, ok1, len(all))
			}
			if !ok {
				continue
			}
			if got != one {
				t.Fatalf("q %v: merged %d, one node %d", q, got, one)
			}
			want := exact[Rank(q, uint64(len(all)))-1]
			if got < want || float64(got-want) > RelError*float64(want) || !slices.Contains(all, got) {
				t.Fatalf("q %v: %d, nearest rank %d: not within RelError above it, or not a sample", q, got, want)
			}
			if d.Exact() && q > 0 && q < 1 {
				continue
			}
			if dq := d.Quantile(q); float64(max(dq-want, want-dq)) > RelError*float64(want) {
				t.Fatalf("q %v: Dist %d, nearest rank %d", q, dq, want)
			}
		}
	}
}
