package export

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/percentile"
)

// histOf are a table's latencies by latency_hist group and bucket,
// summed: count, sum, min, max.
func histOf(rows []Row) map[string][4]int64 {
	out := map[string][4]int64{}
	for _, r := range rows {
		k := fmt.Sprint(r["source"], r["conn"], r["kind"], r["proto"], r["command"], r["lower_ns"], r["upper_ns"])
		a, seen := out[k]
		n, s, mn, mx := r["count"].(int64), r["sum_ns"].(int64), r["min_ns"].(int64), r["max_ns"].(int64)
		if seen {
			mn, mx = min(mn, a[2]), max(mx, a[3])
		}
		out[k] = [4]int64{a[0] + n, a[1] + s, mn, mx}
	}
	return out
}

// bucketsOf are the same from the operations and commands rows.
func bucketsOf(ops, cmds []Row) map[string][4]int64 {
	var rows []Row
	add := func(r Row, source string, kind, proto, command any) {
		if r["latency_ns"] == nil {
			return
		}
		v := r["latency_ns"].(int64)
		lo, hi := percentile.Bucket(v)
		rows = append(rows, Row{"source": source, "conn": r["conn"], "kind": kind, "proto": proto, "command": command,
			"lower_ns": lo, "upper_ns": hi, "count": int64(1), "sum_ns": v, "min_ns": v, "max_ns": v})
	}
	for _, r := range ops {
		add(r, "operations", r["kind"], nil, nil)
	}
	for _, r := range cmds {
		add(r, "commands", nil, r["proto"], r["command"])
	}
	return histOf(rows)
}

// TestLatencyHistRows: latency_hist counts every latency of operations
// and commands in its percentile.Bucket, per connection and kind or
// command, on one worker and sharded, and with the buckets written out
// every few of them (a bucket in several rows). The sharded export has
// the same commands, unanswered ones included.
func TestLatencyHistRows(t *testing.T) {
	defer func(n int) { maxHist = n }(maxHist)
	for _, file := range []string{"../testdata/ulp/nvmeof.pcap", "../testdata/ulp/nfs3_rdma.pcap", "../testdata/ulp/smb_direct.pcap"} {
		var cmds [][]Row
		for _, c := range []struct {
			workers, max int
		}{{1, 1 << 16}, {2, 1 << 16}, {1, 3}} {
			t.Run(fmt.Sprintf("%s/workers=%d/max=%d", file, c.workers, c.max), func(t *testing.T) {
				maxHist = c.max
				dir := t.TempDir()
				res := Export(Set{Capture: "x", Files: []string{file}}, Config{Dir: dir, Workers: c.workers})
				if res.Err != nil {
					t.Fatal(res.Err)
				}
				hist := readAll(t, dir, LatencyHist)
				got, want := histOf(hist), bucketsOf(readAll(t, dir, Operations), readAll(t, dir, Commands))
				if len(want) < 10 || len(got) != len(want) {
					t.Errorf("%d buckets, %d from the rows", len(got), len(want))
				}
				for k, w := range want {
					if got[k] != w {
						t.Errorf("bucket %s: %v, rows %v", k, got[k], w)
					}
				}
				// Written out every 3 buckets, the rows are sorted within
				// each flush only.
				sorted := slices.IsSortedFunc(hist, func(a, b Row) int {
					return cmp.Or(boolCmp(a["source"] == "commands", b["source"] == "commands"), cmp.Compare(a["conn"].(int64), b["conn"].(int64)))
				})
				if sorted == (c.max == 3) {
					t.Errorf("max %d: rows sorted by source and connection: %v", c.max, sorted)
				}
				if n := readAll(t, dir, Captures)[0]["latency_hist"]; n != int64(len(hist)) {
					t.Errorf("captures.latency_hist %v, %d rows", n, len(hist))
				}
				cs := readAll(t, dir, Commands)
				slices.SortFunc(cs, func(a, b Row) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
				cmds = append(cmds, cs)
			})
		}
		if len(cmds) == 3 && !slices.EqualFunc(cmds[0], cmds[1], func(a, b Row) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
			t.Errorf("%s: the commands rows differ on 2 workers", file)
		}
	}
}

// TestExportSameForAnyWorkers: every table but captures holds the same
// rows in the same order on 1, 2 and 3 workers, where the shards read
// most PDUs into their rows (analyze.Splitter) and the other records come
// whole: the PDU kinds of the fast path and of the generic walk, damage,
// storage protocols.
func TestExportSameForAnyWorkers(t *testing.T) {
	files := []string{"../testdata/gen/impaired/hostile.pcapng", "../testdata/gen/impaired/example.pcapng",
		"../testdata/ulp/crc_iser.pcap", "../testdata/ulp/crc_smb_direct.pcap", "../testdata/siw/crc_rping.pcap"}
	for _, file := range files {
		var want map[string]string
		for _, w := range []int{1, 2, 3} {
			dir := t.TempDir()
			if res := Export(Set{Capture: "x", Files: []string{file}}, Config{Dir: dir, Workers: w}); res.Err != nil {
				t.Fatal(res.Err)
			}
			got := map[string]string{}
			for _, tb := range Tables {
				if tb != Captures {
					got[tb.Name] = fmt.Sprint(readAll(t, dir, tb))
				}
			}
			if len(got[Pdus.Name]) < 1000 {
				t.Fatalf("%s: pdus %q", file, got[Pdus.Name])
			}
			if w == 1 {
				want = got
				continue
			}
			for name, rows := range want {
				if got[name] != rows {
					t.Errorf("%s: %d workers: table %s differs from one worker's", file, w, name)
				}
			}
		}
	}
}
