package main

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/export"
	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/tui"
)

// committedCaptures are every capture in testdata.
func committedCaptures(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"*/*.pcap", "*/*.pcapng", "*/*/*.pcap", "*/*/*.pcapng"} {
		m, err := filepath.Glob(filepath.Join("../../testdata", pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 20 {
		t.Fatalf("%d captures in testdata", len(files))
	}
	return files
}

var columns = regexp.MustCompile(`\s{2,}`)

// zTable returns the rows of the -z table whose header starts with
// first, as maps from column name to cell.
func zTable(t *testing.T, out, first string) []map[string]string {
	t.Helper()
	var head []string
	var rows []map[string]string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "=====") {
			if head != nil {
				return rows
			}
			continue
		}
		if head == nil {
			if strings.HasPrefix(line, first+"  ") {
				head = columns.Split(strings.TrimSpace(line), -1)
			}
			continue
		}
		if line == "" || line[0] == ' ' { // the reassembly's lines under -z findings
			continue
		}
		cells := columns.Split(strings.TrimSpace(line), -1)
		r := map[string]string{}
		for i, c := range cells {
			if i < len(head) {
				r[head[i]] = c
			}
		}
		rows = append(rows, r)
	}
	t.Fatalf("no table %q in:\n%s", first, out)
	return nil
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

// TestFindingCountsAgree: on every committed capture, the findings of each
// connection are counted the same by iwdump -z conv, the export's
// connections table, the rows of the export's findings table and iwtui;
// the findings of each code the same by iwdump -z findings, the export's
// findings table and iwtui's findings view. Before the pipeline counted
// them once, -z findings left out the reassembly's and the ULPs' codes and
// connections.findings the reassembly's.
func TestFindingCountsAgree(t *testing.T) {
	for _, file := range committedCaptures(t) {
		name := strings.TrimPrefix(file, "../../testdata/")
		t.Run(name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run([]string{"-q", "-z", "conv,findings", "-r", file}, &out, &errb); code != exitOK {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			zConn := map[int64]int64{}
			for _, r := range zTable(t, out.String(), "conn") {
				zConn[atoi(t, r["conn"])] = atoi(t, r["findings"])
			}
			zCode := map[string]int64{}
			for _, r := range zTable(t, out.String(), "severity") {
				zCode[r["code"]] = atoi(t, r["count"])
			}
			var sharded bytes.Buffer // the shards' counts merged: the same tables
			if code := run([]string{"-q", "-z", "conv,findings", "--workers", "3", "-r", file}, &sharded, &errb); code != exitOK || sharded.String() != out.String() {
				t.Errorf("--workers 3: exit %d, tables differ:\n%s\nfrom one worker's:\n%s", code, sharded.String(), out.String())
			}

			dir := t.TempDir()
			if code := run([]string{"--export", dir, "-r", file}, &out, &errb); code != exitOK {
				t.Fatalf("export: exit %d: %s", code, errb.String())
			}
			exConn := map[int64]int64{}
			for _, r := range mustRead(t, dir, export.Connections) {
				exConn[r["conn"].(int64)] = int64(r["findings"].(uint64))
			}
			rowsConn, rowsCode := map[int64]int64{}, map[string]int64{}
			for _, r := range mustRead(t, dir, export.Findings) {
				if c, ok := r["conn"].(int64); ok {
					rowsConn[c]++
				}
				rowsCode[r["code"].(string)]++
			}

			s, err := tui.Open(tui.Config{File: file})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			s.Wait()
			tc := s.Ix.FindingCounts()

			if len(zConn) != len(exConn) {
				t.Errorf("-z conv has %d connections, the export %d", len(zConn), len(exConn))
			}
			for conn, n := range zConn {
				if exConn[conn] != n || rowsConn[conn] != n || int64(tc.Conn(int(conn))) != n {
					t.Errorf("conn %d: -z conv %d, connections.findings %d, findings rows %d, iwtui %d", conn, n, exConn[conn], rowsConn[conn], tc.Conn(int(conn)))
				}
			}
			for code, n := range rowsCode {
				c, _ := finding.Lookup(code)
				if zCode[code] != n || int64(tc.Code(c)) != n {
					t.Errorf("%s: findings rows %d, -z findings %d, iwtui %d", code, n, zCode[code], tc.Code(c))
				}
			}
			for code, n := range zCode {
				if rowsCode[code] != n {
					t.Errorf("%s: -z findings %d, findings rows %d", code, n, rowsCode[code])
				}
			}
		})
	}
}
