//go:build cgo

package main

import (
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/export"
	"github.com/iwkit/iwkit/percentile"
)

// histGroups are latency_hist's group columns and, for each source, the
// raw rows they count.
const histRaw = `SELECT capture, 'operations' AS source, conn, kind, NULL::VARCHAR AS proto, NULL::VARCHAR AS command, latency_ns
  FROM operations WHERE latency_ns IS NOT NULL
UNION ALL SELECT capture, 'commands', conn, NULL, proto, command, latency_ns FROM commands WHERE answered`

// TestLatencyHist: on every committed capture, latency_hist holds the
// latencies of operations and commands: per connection and kind or
// command, and per capture set and for all of them, its counts, sums and
// extremes are the raw rows' exactly, and hist_quantile is a latency
// that occurred, at or above quantile_disc (the nearest rank, -z) and
// within percentile.RelError of it. Partial buckets per capture set,
// reduced as the README says, give the whole set's answers exactly, and
// percentile.BucketQuantile (the contract in Go) gives the macro's. The
// docs/iwsql.md's macro is the one iwsql defines.
func TestLatencyHist(t *testing.T) {
	readme, err := os.ReadFile("../../docs/iwsql.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(string(readme), "<!-- hist-sql:begin -->\n```sql\n")
	block, _, _ = strings.Cut(block, "```\n<!-- hist-sql:end -->")
	if block != export.HistQuantileSQL+";\n" {
		t.Errorf("README's hist_quantile macro differs from export.HistQuantileSQL:\n%s", block)
	}
	db := openDB(t, exportAll(t))
	qs := []string{"0", "0.5", "0.9", "0.99", "0.999", "1"}
	for _, grouping := range []string{"capture, source, conn, kind, proto, command", "capture, source, kind, proto, command", "source, kind, proto, command"} {
		var hq, rq, cmp []string
		for i, q := range qs {
			hq = append(hq, fmt.Sprintf("hist_quantile(lower_ns, count, max_ns, %s) AS q%d", q, i))
			rq = append(rq, fmt.Sprintf("quantile_disc(latency_ns, %s) AS q%d", q, i))
			// Above or at the nearest rank, within RelError (1/1024) of
			// it, and a latency of the group.
			cmp = append(cmp, fmt.Sprintf(`h.q%[1]d < r.q%[1]d OR (h.q%[1]d - r.q%[1]d) * 1024 > abs(r.q%[1]d)
				OR NOT EXISTS (SELECT 1 FROM raw x WHERE x.latency_ns = h.q%[1]d)`, i))
		}
		on := ""
		for _, c := range strings.Split(grouping, ", ") {
			on += fmt.Sprintf(" AND h.%[1]s IS NOT DISTINCT FROM r.%[1]s", c)
		}
		q := fmt.Sprintf(`WITH raw AS (%[1]s),
			h AS (SELECT %[2]s, sum(count) AS n, sum(sum_ns) AS s, min(min_ns) AS mn, max(max_ns) AS mx, %[3]s FROM latency_hist GROUP BY ALL),
			r AS (SELECT %[2]s, count(*) AS n, sum(latency_ns) AS s, min(latency_ns) AS mn, max(latency_ns) AS mx, %[4]s FROM raw GROUP BY ALL)
			SELECT count(*), count(*) FILTER (WHERE h.n IS DISTINCT FROM r.n OR h.s IS DISTINCT FROM r.s OR h.mn IS DISTINCT FROM r.mn OR h.mx IS DISTINCT FROM r.mx OR %[5]s),
				count(*) FILTER (WHERE h.q3 <> r.q3), (SELECT count(*) FROM h), (SELECT count(*) FROM r)
			FROM h JOIN r ON true %[6]s`,
			histRaw, grouping, strings.Join(hq, ", "), strings.Join(rq, ", "), strings.Join(cmp, " OR "), on)
		var groups, bad, inexact, nh, nr int
		if err := db.QueryRow(q).Scan(&groups, &bad, &inexact, &nh, &nr); err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
		t.Logf("by %s: %d groups, %d with a p99 above the nearest rank (within the bound)", grouping, groups, inexact)
		if groups < 20 || bad > 0 || nh != groups || nr != groups {
			t.Errorf("by %s: %d groups (%d in latency_hist, %d raw), %d differ", grouping, groups, nh, nr, bad)
		}
	}

	// Map per capture set, reduce, and compare with the whole set.
	partial := `SELECT capture, source, kind, proto, command, lower_ns, max(upper_ns) AS upper_ns, sum(count) AS count,
		sum(sum_ns) AS sum_ns, min(min_ns) AS min_ns, max(max_ns) AS max_ns FROM latency_hist GROUP BY ALL`
	var total, differ int
	q := fmt.Sprintf(`WITH p AS (%s),
		red AS (SELECT source, kind, proto, command, lower_ns, sum(count) AS count, sum(sum_ns) AS sum_ns, min(min_ns) AS min_ns, max(max_ns) AS max_ns FROM p GROUP BY ALL),
		a AS (SELECT source, kind, proto, command, sum(count) AS n, sum(sum_ns) AS s, min(min_ns) AS mn, max(max_ns) AS mx,
			hist_quantile(lower_ns, count, max_ns, 0.5) AS p50, hist_quantile(lower_ns, count, max_ns, 0.99) AS p99 FROM red GROUP BY ALL),
		b AS (SELECT source, kind, proto, command, sum(count) AS n, sum(sum_ns) AS s, min(min_ns) AS mn, max(max_ns) AS mx,
			hist_quantile(lower_ns, count, max_ns, 0.5) AS p50, hist_quantile(lower_ns, count, max_ns, 0.99) AS p99 FROM latency_hist GROUP BY ALL)
		SELECT (SELECT count(*) FROM b), count(*) FROM (SELECT * FROM a EXCEPT SELECT * FROM b)`, partial)
	if err := db.QueryRow(q).Scan(&total, &differ); err != nil {
		t.Fatal(err)
	}
	if total < 20 || differ != 0 {
		t.Errorf("reduced per-capture buckets: %d of %d groups differ from the whole set's", differ, total)
	}

	// The macro is percentile.BucketQuantile.
	rows, err := db.Query(`SELECT source, kind, proto, command, lower_ns, sum(count), max(max_ns) FROM latency_hist GROUP BY ALL ORDER BY source, kind, proto, command, lower_ns`)
	if err != nil {
		t.Fatal(err)
	}
	type group struct {
		counts []uint64
		maxes  []int64
	}
	groups := map[string]*group{}
	for rows.Next() {
		var source string
		var kind, proto, command sql.NullString
		var lo, mx int64
		var n uint64
		if err := rows.Scan(&source, &kind, &proto, &command, &lo, &n, &mx); err != nil {
			t.Fatal(err)
		}
		k := source + "/" + kind.String + "/" + proto.String + "/" + command.String
		g := groups[k]
		if g == nil {
			g = &group{}
			groups[k] = g
		}
		g.counts, g.maxes = append(g.counts, n), append(g.maxes, mx)
	}
	rows.Close()
	rows, err = db.Query(`SELECT source, coalesce(kind, ''), coalesce(proto, ''), coalesce(command, ''), hist_quantile(lower_ns, count, max_ns, 0.5),
		hist_quantile(lower_ns, count, max_ns, 0.99), hist_quantile(lower_ns, count, max_ns, 0.999) FROM latency_hist GROUP BY ALL`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var source, kind, proto, command string
		var sq [3]int64
		if err := rows.Scan(&source, &kind, &proto, &command, &sq[0], &sq[1], &sq[2]); err != nil {
			t.Fatal(err)
		}
		g := groups[source+"/"+kind+"/"+proto+"/"+command]
		for i, q := range []float64{0.5, 0.99, 0.999} {
			if v, ok := percentile.BucketQuantile(q, g.counts, g.maxes); !ok || v != sq[i] {
				t.Errorf("%s %s%s %s q %v: hist_quantile %d, percentile.BucketQuantile %d", source, kind, proto, command, q, sq[i], v)
			}
		}
		n++
	}
	if n < 20 {
		t.Errorf("%d groups compared with percentile.BucketQuantile", n)
	}
}
