// Package percentile is iwkit's one definition of a percentile, used by
// every face that shows one: iwdump's -z latency and -z nvme/iscsi/smb2/rpc
// tables (through track and ulp), and the SQL over the export (docs/iwsql.md).
//
// The definition is the nearest rank: the q-quantile of n samples is the
// sample of rank ⌈q·n⌉ (1-based; rank 1 for q = 0) in ascending order, a
// value that occurred. It is DuckDB's quantile_disc (and PostgreSQL's
// percentile_disc), so SQL over the export's raw latencies gives the same
// numbers; quantile_cont interpolates and does not.
//
// A Dist keeps its samples exactly while it holds at most Budget of them
// (8 octets each: 32 KiB). Past that it folds them into an HdrHistogram
// of Digits significant digits (about 270 KiB, whatever the count) and
// answers within RelError of the nearest-rank value, never outside
// [Min, Max]; Exact says which. Count, Min, Max and Mean stay exact. The
// choice depends only on the number of samples, so two Dists of the same
// samples (a connection's and the capture's, one shard's or several
// merged) give the same percentiles.
package percentile

import (
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

const (
	// Budget is the number of samples a Dist keeps exactly.
	Budget = 4096
	// Digits are the significant digits of the histogram past Budget.
	Digits = 3
	// RelError bounds the relative error of a percentile past Budget:
	// an HdrHistogram of 3 significant digits has buckets of at most
	// 1/1024 of their value.
	RelError = 1.0 / 1024
	// highest is the largest value the histogram holds (an hour, in ns);
	// larger ones count as it.
	highest = int64(time.Hour)
)

// Dist is a distribution of int64 samples (latencies in ns). The zero
// Dist is empty and ready.
type Dist struct {
	n             uint64
	sum, min, max int64
	exact         []int64 // while n <= Budget
	sorted        bool
	h             *hdrhistogram.Histogram // past Budget
}

// Add adds a sample.
func (d *Dist) Add(v int64) {
	if d.n == 0 || v < d.min {
		d.min = v
	}
	if d.n == 0 || v > d.max {
		d.max = v
	}
	d.n++
	d.sum += v
	if d.h != nil {
		record(d.h, v, 1)
		return
	}
	d.exact = append(d.exact, v)
	d.sorted = false
	if d.n > Budget {
		d.fold()
	}
}

// fold moves the exact samples into a histogram.
func (d *Dist) fold() {
	d.h = hdrhistogram.New(1, highest, Digits)
	for _, v := range d.exact {
		record(d.h, v, 1)
	}
	d.exact = nil
}

func record(h *hdrhistogram.Histogram, v, n int64) {
	_ = h.RecordValues(min(max(v, 0), highest), n)
}

// Merge adds o's samples to d.
func (d *Dist) Merge(o *Dist) {
	if o == nil || o.n == 0 {
		return
	}
	if d.n == 0 || o.min < d.min {
		d.min = o.min
	}
	if d.n == 0 || o.max > d.max {
		d.max = o.max
	}
	d.n += o.n
	d.sum += o.sum
	if d.h == nil && d.n > Budget {
		d.fold()
	}
	if d.h == nil {
		d.exact = append(d.exact, o.exact...)
		d.sorted = false
		return
	}
	if o.h != nil {
		d.h.Merge(o.h)
		return
	}
	for _, v := range o.exact {
		record(d.h, v, 1)
	}
}

// Count is the number of samples.
func (d *Dist) Count() uint64 { return d.n }

// Min is the smallest sample (0 when none).
func (d *Dist) Min() int64 { return d.min }

// Max is the largest sample (0 when none).
func (d *Dist) Max() int64 { return d.max }

// Mean is the mean of the samples, rounded toward zero (0 when none).
func (d *Dist) Mean() int64 {
	if d.n == 0 {
		return 0
	}
	return d.sum / int64(d.n)
}

// Exact reports whether Quantile gives the nearest-rank sample itself
// (false: within RelError of it).
func (d *Dist) Exact() bool { return d.h == nil }

// Rank is the nearest rank of quantile q (0..1) among n samples: ⌈q·n⌉,
// at least 1 and at most n. q is taken to a millionth and the product
// computed in integers, as DuckDB does for a decimal literal (0.99), so
// that no rounding of q·n moves the rank.
func Rank(q float64, n uint64) uint64 {
	if n == 0 {
		return 0
	}
	ppm := uint64(min(max(q, 0), 1)*1e6 + 0.5)
	r := (n*ppm + 1e6 - 1) / 1e6
	return min(max(r, 1), n)
}

// Quantile is the q-quantile (0..1) of the samples by the nearest rank
// (0 when there are none).
func (d *Dist) Quantile(q float64) int64 {
	if d.n == 0 {
		return 0
	}
	r := Rank(q, d.n)
	if d.h == nil {
		if !d.sorted {
			slices.Sort(d.exact)
			d.sorted = true
		}
		return d.exact[r-1]
	}
	// The bucket holding the r-th sample; its highest equivalent value,
	// kept within the exact extremes.
	var seen uint64
	for _, b := range d.h.Distribution() {
		seen += uint64(b.Count)
		if seen >= r {
			return min(max(b.To, d.min), d.max)
		}
	}
	return d.max
}

// BucketBits is the number of bits of a value that Bucket keeps: values
// below 1<<BucketBits have a bucket each; above, a bucket spans 1/1024 of
// its lowest value. It is the bucketing of an HdrHistogram of Digits
// significant digits and lowest value 1 (2048 sub-buckets), which a Dist
// uses past Budget.
const BucketBits = 11

// Bucket is the bucket of v in the log-linear bucketing a Dist's
// histogram uses: the values lo..hi (inclusive) that it does not tell
// apart. hi-lo is 0 below 1<<BucketBits and at most lo/1024 above
// (RelError), so any value of a bucket is within RelError of any other.
// Buckets depend on v only: the export's latency_hist rows of several
// partitions add up bucket by bucket (docs/iwsql.md "Statistics that merge").
// A negative v (a clock that stepped back) has the mirror of -v's bucket.
func Bucket(v int64) (lo, hi int64) {
	if v < 0 {
		if v == math.MinInt64 {
			v++
		}
		lo, hi = Bucket(-v)
		return -hi, -lo
	}
	shift := max(0, bits.Len64(uint64(v))-BucketBits)
	lo = v >> shift << shift
	return lo, lo + (1<<shift - 1)
}

// BucketQuantile is the q-quantile (0..1) by the nearest rank of samples
// given as buckets in ascending order, each with its count and the
// largest sample it holds (Bucket's buckets, or any disjoint ones): the
// largest sample of the bucket that holds the sample of rank
// Rank(q, total). That sample is within the bucket, so the answer is a
// value that occurred, at most one bucket's width (RelError of it)
// above the nearest-rank sample, and equal to it when the bucket holds
// one value. It is iwsql's hist_quantile macro. ok is false when
// the counts add up to 0.
func BucketQuantile(q float64, counts []uint64, maxes []int64) (v int64, ok bool) {
	var n uint64
	for _, c := range counts {
		n += c
	}
	if n == 0 {
		return 0, false
	}
	r := Rank(q, n)
	var seen uint64
	for i, c := range counts {
		if seen += c; seen >= r {
			return maxes[i], true
		}
	}
	return maxes[len(maxes)-1], true
}
