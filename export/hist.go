package export

import (
	"cmp"
	"slices"

	"github.com/iwkit/iwkit/percentile"
)

// The latency_hist table: the latencies of the operations and commands
// tables in a form that merges (docs/iwsql.md "Statistics that merge"). Each
// row counts the latencies of one connection and one kind of operation
// (or one storage command) that fall in one bucket of percentile.Bucket,
// the log-linear bucketing of the project's percentile package: exact
// below 2048 ns, at most 1/1024 of the value wide above. Counts, sums,
// minima and maxima add up exactly across rows, capture sets and
// machines; a percentile from summed buckets (hist_quantile) is within
// percentile.RelError of the nearest-rank value over the raw rows and
// equal to it wherever its bucket holds one value.

// LatencyHist is the table.
var LatencyHist = newTable("latency_hist", "the latencies of operations and commands as mergeable histogram buckets: per connection and kind of operation (or storage command), the count, sum, least and greatest latency in each bucket of the percentile package's log-linear bucketing (docs/iwsql.md \"Statistics that merge\")",
	[]Column{
		{Name: "source", Type: String, Desc: "the table whose latency_ns the row counts: operations or commands"},
		{Name: "conn", Type: Int64, Desc: "connection number, as in that table"},
		{Name: "kind", Type: String, Optional: true, Desc: "operations: the operations.kind (read, rtr, atomic); NULL for commands"},
		{Name: "proto", Type: String, Optional: true, Desc: "commands: commands.proto; NULL for operations"},
		{Name: "command", Type: String, Optional: true, Desc: "commands: commands.command; NULL for operations"},
		{Name: "lower_ns", Type: Int64, Desc: "the bucket's least value, ns (percentile.Bucket)"},
		{Name: "upper_ns", Type: Int64, Desc: "the bucket's greatest value, ns: upper_ns - lower_ns is 0 below 2048 ns and at most lower_ns/1024 above"},
		{Name: "count", Type: Int64, Desc: "latencies in the bucket (answered commands; operations with a latency)"},
		{Name: "sum_ns", Type: Int64, Desc: "their sum, ns"},
		{Name: "min_ns", Type: Int64, Desc: "the least of them, ns"},
		{Name: "max_ns", Type: Int64, Desc: "the greatest of them, ns: what hist_quantile answers"},
	})

// histKey is a row's group and bucket.
type histKey struct {
	commands             bool // source
	conn                 uint64
	kind, proto, command string
	lower                int64
}

type histVal struct {
	upper, n, sum, min, max int64
}

// maxHist bounds the buckets kept before they are written out: a group's
// bucket may then have several rows, which add up as any two partitions'.
var maxHist = 1 << 16

// hist collects the latency_hist buckets of one capture set.
type hist struct {
	m map[histKey]*histVal
}

func (h *hist) add(k histKey, v int64) {
	lo, hi := percentile.Bucket(v)
	k.lower = lo
	if h.m == nil {
		h.m = map[histKey]*histVal{}
	}
	b := h.m[k]
	if b == nil {
		b = &histVal{upper: hi, min: v, max: v}
		h.m[k] = b
	}
	b.n++
	b.sum += v
	b.min, b.max = min(b.min, v), max(b.max, v)
}

// full: time to write the buckets out.
func (h *hist) full() bool { return len(h.m) >= maxHist }

// flush writes the buckets as rows, in order of source, connection,
// kind or command and bucket, and forgets them.
func (e *Exporter) flushHist() {
	h := &e.hist
	keys := make([]histKey, 0, len(h.m))
	for k := range h.m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b histKey) int {
		if a.commands != b.commands {
			return boolCmp(a.commands, b.commands)
		}
		return cmp.Or(cmp.Compare(a.conn, b.conn), cmp.Compare(a.kind, b.kind), cmp.Compare(a.proto, b.proto),
			cmp.Compare(a.command, b.command), cmp.Compare(a.lower, b.lower))
	})
	w := e.rows[LatencyHist]
	for _, k := range keys {
		b := h.m[k]
		w.reset()
		if k.commands {
			w.str("commands")
		} else {
			w.str("operations")
		}
		w.i64(int64(k.conn))
		for _, s := range []string{k.kind, k.proto, k.command} {
			w.strOrNull(s)
		}
		for _, x := range []int64{k.lower, b.upper, b.n, b.sum, b.min, b.max} {
			w.i64(x)
		}
		e.emit(LatencyHist, w)
	}
	clear(h.m)
}

// latency counts a latency of an operations or commands row.
func (e *Exporter) latency(k histKey, v int64) {
	e.hist.add(k, v)
	if e.hist.full() {
		e.flushHist()
	}
}
