//go:build cgo

package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/render"
	"github.com/iwkit/iwkit/ulp"
)

// zQueueRow is a row of a -z table's queues part: a command row (its
// cells by column), or a queue's (depth) line (cells "max N", "mean X").
type zQueueRow map[string]string

// zQueues reads the queues part of a -z nvme|iscsi|smb2|rpc table: by
// "queue/command" (command rows) and "queue/(depth)".
func zQueues(t *testing.T, text string) map[string]zQueueRow {
	t.Helper()
	cols := regexp.MustCompile(`\s{2,}`)
	lines := strings.Split(text, "\n")
	out := map[string]zQueueRow{}
	i := 0
	for i < len(lines) && !strings.HasPrefix(lines[i], "Queues (") {
		i++
	}
	for i < len(lines) && !strings.HasPrefix(lines[i], "queue ") {
		i++
	}
	if i == len(lines) {
		return out
	}
	head := cols.Split(strings.TrimSpace(lines[i]), -1)
	queue := ""
	for _, l := range lines[i+1:] {
		if l == "" || strings.HasPrefix(l, "=") || strings.HasPrefix(l, "(") {
			break
		}
		cells := cols.Split(strings.TrimSpace(l), -1)
		if !strings.HasPrefix(l, " ") { // a queue's first line: its name, then its depth
			queue, cells = cells[0], cells[1:]
		}
		if strings.HasPrefix(cells[0], "(") && cells[0] != "(depth)" {
			continue // a window
		}
		r := zQueueRow{}
		for j, c := range cells {
			if j+1 < len(head) {
				r[head[j+1]] = c
			}
		}
		out[queue+"/"+cells[0]] = r
	}
	return out
}

// TestQueuesMatchSQL: on every committed capture, docs/iwsql.md's queue
// queries over the export (commands joined with the connections' queue
// columns) give the queue rows of -z nvme, iscsi, smb2 and rpc value for
// value: count, unanswered, min, mean, p50, p90, p99, max of each command
// in each queue, and each queue's depth, its max and its mean, an SMB2
// share's too (issue 27, queues).
func TestQueuesMatchSQL(t *testing.T) {
	dir, results := exportResults(t)
	db := openDB(t, dir)
	stat := map[string]string{ulp.NVMe.String(): "nvme", ulp.ISER.String(): "iscsi", ulp.SMBD.String(): "smb2", ulp.RPCRDMA.String(): "rpc"}
	z := map[string]map[string]zQueueRow{} // capture/stat -> the queue rows
	zn := 0
	for _, r := range results {
		for _, s := range stat {
			var b bytes.Buffer
			render.WriteStat(&b, r.Report, "", s)
			z[r.Set.Capture+"/"+s] = zQueues(t, b.String())
			zn += len(z[r.Set.Capture+"/"+s])
		}
	}
	seen := map[string]bool{}
	cell := func(ns sql.NullInt64) string {
		if !ns.Valid {
			return "-"
		}
		return render.Duration(time.Duration(ns.Int64))
	}
	rows, err := db.Query(readmeQuery(t, "quantile_disc", "JOIN connections"))
	if err != nil {
		t.Fatal(err)
	}
	ncmd, shares := 0, 0
	for rows.Next() {
		var capture, proto, queue, command string
		var n, unanswered int64
		var mn, mean, p50, p90, p99, mx sql.NullInt64
		if err := rows.Scan(&capture, &proto, &queue, &command, &n, &unanswered, &mn, &mean, &p50, &p90, &p99, &mx); err != nil {
			t.Fatal(err)
		}
		key := capture + "/" + stat[proto]
		r := z[key][queue+"/"+command]
		where := fmt.Sprintf("%s %s %q %s", capture, proto, queue, command)
		if r == nil {
			t.Errorf("%s: no -z queue row", where)
			continue
		}
		seen[key+"/"+queue+"/"+command] = true
		ncmd++
		if strings.Contains(queue, `\\`) {
			shares++
		}
		want := map[string]string{"count": itoa(n), "unanswered": itoa(unanswered), "min": cell(mn), "mean": cell(mean),
			"p50": cell(p50), "p90": cell(p90), "p99": cell(p99), "max": cell(mx)}
		for col, v := range want {
			if r[col] != v {
				t.Errorf("%s %s: -z %s, SQL %s", where, col, r[col], v)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	rows, err = db.Query(readmeQuery(t, "depth_span_ns", "FROM connections"))
	if err != nil {
		t.Fatal(err)
	}
	ndepth := 0
	for rows.Next() {
		var capture, proto, queue string
		var dmax sql.NullInt64
		var mean sql.NullFloat64
		if err := rows.Scan(&capture, &proto, &queue, &dmax, &mean); err != nil {
			t.Fatal(err)
		}
		key := capture + "/" + stat[proto]
		r := z[key][queue+"/(depth)"]
		where := fmt.Sprintf("%s %s %q", capture, proto, queue)
		if r == nil {
			t.Errorf("%s: no -z queue", where)
			continue
		}
		seen[key+"/"+queue+"/(depth)"] = true
		ndepth++
		if r["count"] != "max "+itoa(dmax.Int64) {
			t.Errorf("%s: -z depth %s, SQL max %d", where, r["count"], dmax.Int64)
		}
		if mean.Valid && r["unanswered"] != fmt.Sprintf("mean %.2f", mean.Float64) {
			t.Errorf("%s: -z depth %s, SQL mean %.2f", where, r["unanswered"], mean.Float64)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// Every -z queue row has its SQL row.
	for key, qs := range z {
		for k := range qs {
			if !seen[key+"/"+k] {
				t.Errorf("%s %s: -z queue row with no SQL row", key, k)
			}
		}
	}
	t.Logf("%d -z queue rows; SQL: %d command rows (%d of SMB2 shares), %d depths", zn, ncmd, shares, ndepth)
	if ncmd < 20 || ndepth < 5 || shares == 0 || ndepth+ncmd != zn {
		t.Fatalf("%d command rows, %d of shares, %d depths: the committed captures should give more", ncmd, shares, ndepth)
	}
}
