//go:build cgo

package main

import (
	"bytes"
	"database/sql"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/render"
	"github.com/iwkit/iwkit/ulp"
)

// readmeQuery is docs/iwsql.md's SQL block that contains all of marks.
func readmeQuery(t *testing.T, marks ...string) string {
	t.Helper()
	readme, err := os.ReadFile("../../docs/iwsql.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range regexp.MustCompile("(?s)```sql\n(.*?)```").FindAllStringSubmatch(string(readme), -1) {
		ok := true
		for _, m := range marks {
			ok = ok && strings.Contains(b[1], m)
		}
		if ok {
			return b[1]
		}
	}
	t.Fatalf("no README query with %q", marks)
	return ""
}

// zRows are the rows of a -z table's first part (the totals) as
// render.WriteStat (iwdump -z) prints them, by their first cell, each the
// cells by column name.
func zRows(t *testing.T, text string) map[string]map[string]string {
	t.Helper()
	cols := regexp.MustCompile(`\s{2,}`)
	lines := strings.Split(text, "\n")
	if len(lines) < 4 {
		t.Fatalf("table:\n%s", text)
	}
	head := cols.Split(strings.TrimSpace(lines[2]), -1)
	rows := map[string]map[string]string{}
	for _, l := range lines[3:] {
		if l == "" || strings.HasPrefix(l, "=") {
			break // the totals table ends; the phases and queues follow
		}
		if strings.HasPrefix(l, "~") {
			continue
		}
		cells := cols.Split(strings.TrimSpace(l), -1)
		r := map[string]string{}
		for i, c := range cells {
			if i < len(head) {
				r[head[i]] = c
			}
		}
		rows[cells[0]] = r
	}
	return rows
}

// TestPercentilesMatchSQL: on every committed capture, the README's
// quantile_disc queries over the export give the percentiles, extremes and
// counts of iwdump -z latency (each connection and "all") and -z nvme,
// iscsi, smb2 and rpc (each command), as -z prints them.
func TestPercentilesMatchSQL(t *testing.T) {
	dir, results := exportResults(t)
	db := openDB(t, dir)
	z := map[string]string{} // capture/stat -> the -z table
	for _, r := range results {
		for _, stat := range []string{"latency", "nvme", "iscsi", "smb2", "rpc"} {
			var b bytes.Buffer
			render.WriteStat(&b, r.Report, "", stat)
			z[r.Set.Capture+"/"+stat] = b.String()
		}
	}
	compared := 0
	check := func(where, col, cell string, ns sql.NullInt64) {
		t.Helper()
		want := "-" // no answered command
		if ns.Valid {
			want = render.Duration(time.Duration(ns.Int64))
		}
		if strings.HasPrefix(cell, "~") {
			t.Errorf("%s %s: %s is from a histogram on a committed capture", where, col, cell)
			return
		}
		if cell != want {
			t.Errorf("%s %s: -z %s, SQL %s (%d ns)", where, col, cell, want, ns.Int64)
		}
		compared++
	}

	rows, err := db.Query(readmeQuery(t, "quantile_disc", "FROM operations"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for rows.Next() {
		var capture string
		var conn sql.NullInt64
		var n int64
		var mn, p50, p90, p99, p999, mx sql.NullInt64
		if err := rows.Scan(&capture, &conn, &n, &mn, &p50, &p90, &p99, &p999, &mx); err != nil {
			t.Fatal(err)
		}
		key := "all"
		if conn.Valid {
			key = itoa(conn.Int64)
		}
		seen[capture]++
		r := zRows(t, z[capture+"/latency"])[key]
		if r == nil {
			t.Errorf("%s: no -z latency row %s", capture, key)
			continue
		}
		where := capture + " conn " + key
		if r["reads"] != itoa(n) {
			t.Errorf("%s: -z %s reads, SQL %d", where, r["reads"], n)
		}
		check(where, "min", r["min"], mn)
		check(where, "p50", r["p50"], p50)
		check(where, "p90", r["p90"], p90)
		check(where, "p99", r["p99"], p99)
		check(where, "p99.9", r["p99.9"], p999)
		check(where, "max", r["max"], mx)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// Every connection with Reads in -z has its SQL row.
	for _, r := range results {
		for key, row := range zRows(t, z[r.Set.Capture+"/latency"]) {
			if key != "all" && row["reads"] != "0" && seen[r.Set.Capture] == 0 {
				t.Errorf("%s conn %s: %s reads in -z, none in SQL", r.Set.Capture, key, row["reads"])
			}
		}
	}

	stat := map[string]string{ulp.NVMe.String(): "nvme", ulp.ISER.String(): "iscsi", ulp.SMBD.String(): "smb2", ulp.RPCRDMA.String(): "rpc"}
	rows, err = db.Query(readmeQuery(t, "quantile_disc", "FROM commands"))
	if err != nil {
		t.Fatal(err)
	}
	ncmd := 0
	for rows.Next() {
		var capture, proto, command string
		var n, unanswered int64
		var p50, p90, p99, mx sql.NullInt64
		if err := rows.Scan(&capture, &proto, &command, &n, &unanswered, &p50, &p90, &p99, &mx); err != nil {
			t.Fatal(err)
		}
		r := zRows(t, z[capture+"/"+stat[proto]])[command]
		where := capture + " " + proto + " " + command
		if r == nil {
			t.Errorf("%s: no -z %s row", where, stat[proto])
			continue
		}
		ncmd++
		if r["count"] != itoa(n) || r["unanswered"] != itoa(unanswered) {
			t.Errorf("%s: -z count %s, unanswered %s; SQL %d, %d", where, r["count"], r["unanswered"], n, unanswered)
		}
		check(where, "p50", r["p50"], p50)
		check(where, "p90", r["p90"], p90)
		check(where, "p99", r["p99"], p99)
		check(where, "max", r["max"], mx)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d values compared, %d command rows", compared, ncmd)
	if ncmd < 10 || compared < 100 {
		t.Fatalf("%d command rows, %d values compared: the committed captures should give more", ncmd, compared)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
