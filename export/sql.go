package export

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ViewSQL is the DuckDB query over the part files given (LiveParts: the
// live copy of each selected capture set) of one table: the capture name
// read from the Hive partition as a VARCHAR (DuckDB would guess a number
// for a name like "17"), columns matched by name so that parts written
// before a column was added still read. It returns "" for no parts
// (read_parquet refuses an empty list).
func ViewSQL(parts []string) string {
	if len(parts) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("SELECT * FROM read_parquet([")
	for i, p := range parts {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(sqlString(p))
	}
	b.WriteString("], hive_partitioning = true, hive_types = {'capture': VARCHAR}, union_by_name = true)")
	return b.String()
}

// TagKeysSQL lists the keys of captures.tags (KEY=VALUE), for TagsSQL.
const TagKeysSQL = "SELECT DISTINCT split_part(t, '=', 1) AS k FROM (SELECT unnest(tags) AS t FROM captures) ORDER BY k"

// TagsSQL is the captures query with a column tag_KEY for each key, the
// VALUE of the set's first KEY=VALUE tag (NULL when it has none). Keys
// are made of a-z, 0-9 and _ (iwdump --tag refuses others; others are
// left out here).
func TagsSQL(captures string, keys []string) string {
	cols := ""
	for _, k := range keys {
		if k == "" || strings.Trim(k, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
			continue
		}
		cols += ", list_extract(list_transform(list_filter(tags, x -> starts_with(x, '" + k + "=')), x -> x[" +
			strconv.Itoa(len(k)+2) + ":]), 1) AS tag_" + k
	}
	return "SELECT *" + cols + " FROM (" + captures + ")"
}

// IsExport reports whether dir looks like an export directory.
func IsExport(dir string) bool {
	for _, t := range Tables {
		if st, err := os.Stat(filepath.Join(dir, t.Name)); err == nil && st.IsDir() {
			return true
		}
	}
	return false
}

// sqlString quotes s as an SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// HistQuantileSQL defines the DuckDB macro hist_quantile(lower_ns, count,
// max_ns, q): an aggregate over latency_hist rows (of one group: GROUP BY
// the columns that name it) that gives the q-quantile by the nearest rank
// from the buckets, as percentile.BucketQuantile does: the greatest
// latency of the bucket that holds the sample of rank ⌈q·n⌉ (q taken to
// a millionth, percentile.Rank). Rows of one bucket (several partitions,
// several flushes) may come apart: they are added up. The list is walked
// once (list_reduce), starting from -rank so that no lambda needs the
// group's total. iwsql defines it in every session; docs/iwsql.md
// ("Statistics that merge") shows it for other DuckDB sessions.
const HistQuantileSQL = `CREATE OR REPLACE MACRO hist_quantile(lower_ns, cnt, max_ns, q) AS (list_reduce(
  list({'lo': lower_ns::BIGINT, 'n': cnt::BIGINT, 'mx': max_ns::BIGINT, 'done': false} ORDER BY lower_ns),
  (acc, x) -> CASE
    WHEN acc.done AND acc.lo = x.lo THEN {'lo': acc.lo, 'n': acc.n, 'mx': greatest(acc.mx, x.mx), 'done': true}
    WHEN acc.done THEN acc
    ELSE {'lo': x.lo, 'n': acc.n + x.n, 'mx': CASE WHEN acc.lo = x.lo THEN greatest(acc.mx, x.mx) ELSE x.mx END, 'done': acc.n + x.n >= 0}
  END,
  {'lo': NULL::BIGINT, 'mx': NULL::BIGINT, 'done': false,
   'n': -greatest(1, least(sum(cnt), (sum(cnt) * CAST(round(q * 1e6) AS BIGINT) + 999999) // 1000000))::BIGINT}).mx)`
