//go:build cgo

package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/export"
)

// exportSets exports each file as its own capture set into dir.
func exportSets(t *testing.T, dir string, files ...string) {
	t.Helper()
	var sets []export.Set
	for _, f := range files {
		sets = append(sets, export.Set{Capture: export.CaptureName(f), Files: []string{f}})
	}
	for _, r := range export.ExportEach(sets, export.Config{Dir: dir}, 2, nil) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
}

// copyDir copies the files under from into to (cp -r from/. to/).
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(to, filepath.Dir(rel)), 0o755)
		if err := os.WriteFile(filepath.Join(to, rel), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return nil
	})
}

// answersQuery asks questions that double counting changes.
const answersQuery = `SELECT (SELECT count(*) FROM captures) AS captures, (SELECT sum(frames) FROM captures) AS frames,
	  (SELECT count(*) FROM connections) AS connections, (SELECT count(*) FROM pdus) AS pdus,
	  (SELECT count(*) FROM operations) AS operations, (SELECT count(*) FROM findings) AS findings,
	  (SELECT count(*) FROM commands) AS commands,
	  (SELECT string_agg(capture || ':' || n, ',' ORDER BY capture) FROM (SELECT capture, count(*) AS n FROM pdus GROUP BY capture)) AS per_set`

// answers are iwsql's answers to answersQuery.
func answers(t *testing.T, args ...string) string {
	t.Helper()
	q := answersQuery
	var stdout, stderr bytes.Buffer
	if code := run(append(append([]string{"-o", "json"}, args...), q), nil, &stdout, &stderr); code != 0 {
		t.Fatalf("iwsql %v: exit %d: %s", args, code, stderr.String())
	}
	return stdout.String()
}

// TestMergedExports: two machines' export directories, one set exported
// on both (a rescheduled task), copied into one, answer as one machine's
// export of the three sets does.
func TestMergedExports(t *testing.T) {
	a, b, c := "../../testdata/siw/crc_rping.pcap", "../../testdata/siw/term_read_badstag.pcap", "../../testdata/ulp/crc_nvmeof.pcap"
	one, m1, m2, merged := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	exportSets(t, one, a, b, c)
	exportSets(t, m1, a, b)
	exportSets(t, m2, b, c)
	copyDir(t, m1, merged)
	copyDir(t, m2, merged)
	if s := export.ScanCapture(merged, export.CaptureName(b)); len(s.Commits) != 2 {
		t.Fatalf("the merged directory holds %d commits of %s", len(s.Commits), s.Capture)
	}
	want, got := answers(t, one), answers(t, merged)
	if got != want {
		t.Errorf("merged directories answer\n%s\none machine\n%s", got, want)
	}
	// The README's SQL for other engines (DuckDB's here) agrees.
	if got := contractAnswers(t, merged); got != want {
		t.Errorf("the README's SQL contract answers\n%s\nwant\n%s", got, want)
	}
	// iwsql check names the duplicate, --repair removes it, answers stay.
	var out bytes.Buffer
	if code := run([]string{"check", merged}, nil, &out, io.Discard); code != exitProblems || strings.Count(out.String(), "duplicate") != len(export.Tables) {
		t.Errorf("check: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := run([]string{"check", "--repair", merged}, nil, &out, io.Discard); code != exitOK {
		t.Errorf("check --repair: exit %d\n%s", code, out.String())
	}
	if got := answers(t, merged); got != want {
		t.Errorf("after repair\n%s\nwant\n%s", got, want)
	}
	if s := export.ScanCapture(merged, export.CaptureName(b)); len(s.Commits) != 1 {
		t.Errorf("after repair %d commits", len(s.Commits))
	}
}

// TestCheckRepair: a truncated part, an orphaned temporary file and an
// unfinished commit are found, repaired, and a query over the damaged
// set skips the truncated part with a warning naming it.
func TestCheckRepair(t *testing.T) {
	a, b := "../../testdata/siw/crc_rping.pcap", "../../testdata/siw/term_read_badstag.pcap"
	dir := t.TempDir()
	exportSets(t, dir, a, b)
	ca, cb := export.CaptureName(a), export.CaptureName(b)
	live := export.ScanCapture(dir, ca).Live()
	bad := export.PartPath(dir, export.Pdus, ca, live)
	data, _ := os.ReadFile(bad)
	os.WriteFile(bad, data[:len(data)/2], 0o644)
	old := time.Now().Add(-time.Hour)
	orphan := filepath.Join(dir, "operations", "capture="+cb, ".part-20200101T000000.000000000Z-0000000000000000.parquet.tmp")
	unfinished := export.PartPath(dir, export.Findings, cb, "29991231T000000.000000000Z-0000000000000000")
	for _, p := range []string{orphan, unfinished} {
		os.WriteFile(p, []byte("PAR1"), 0o644)
		os.Chtimes(p, old, old)
	}
	var stdout, stderr bytes.Buffer
	q := "SELECT capture, count(*) AS n FROM pdus GROUP BY capture ORDER BY capture"
	if code := run([]string{"-o", "csv", dir, q}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("query with a truncated part: exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "warning: skipped "+bad) || strings.Contains(stdout.String(), ca+",") || !strings.Contains(stdout.String(), cb+",") {
		t.Errorf("stdout %s\nstderr %s", stdout.String(), stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"check", dir}, nil, &stdout, io.Discard); code != exitProblems {
		t.Errorf("check: exit %d", code)
	}
	for _, want := range []string{"unreadable capture=" + ca + " " + bad, "orphan     capture=" + cb + " " + orphan, "unfinished capture=" + cb + " " + unfinished, "2 capture sets, 3 problems, 0 repaired"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("check lacks %q:\n%s", want, stdout.String())
		}
	}
	stdout.Reset()
	if code := run([]string{"check", "--repair", dir}, nil, &stdout, io.Discard); code != exitOK || !strings.Contains(stdout.String(), "3 problems, 3 repaired") {
		t.Errorf("check --repair: exit %d\n%s", code, stdout.String())
	}
	stdout.Reset()
	if code := run([]string{"check", dir}, nil, &stdout, io.Discard); code != exitOK || !strings.Contains(stdout.String(), "0 problems") {
		t.Errorf("check after repair: exit %d\n%s", code, stdout.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"-o", "csv", dir, q}, nil, &stdout, &stderr); code != 0 || !strings.Contains(stderr.String(), "quarantined") {
		t.Errorf("after repair: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}

// TestCapturesSelector: --captures builds the views over the sets named
// or matched only: a part of another set that DuckDB cannot read (but
// whose ends look whole) does not disturb it, while a query over all
// sets fails on it.
func TestCapturesSelector(t *testing.T) {
	files := committed(t)[:4]
	dir := t.TempDir()
	exportSets(t, dir, files...)
	names := []string{export.CaptureName(files[0]), export.CaptureName(files[1]), export.CaptureName(files[2])}
	other := export.CaptureName(files[3])
	junk := append(append([]byte("PAR1"), bytes.Repeat([]byte{0xee}, 200)...), 100, 0, 0, 0, 'P', 'A', 'R', '1')
	os.WriteFile(export.PartPath(dir, export.Pdus, other, export.ScanCapture(dir, other).Live()), junk, 0o644)
	q := "SELECT string_agg(DISTINCT capture, '|' ORDER BY capture) AS c FROM pdus"
	for sel, want := range map[string]string{names[0]: names[0], names[0] + "," + names[1]: names[0] + "|" + names[1]} {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"-o", "csv", "--captures", sel, dir, q}, nil, &stdout, &stderr); code != 0 || stdout.String() != "c\n"+want+"\n" {
			t.Errorf("--captures %s: exit %d: %q %s", sel, code, stdout.String(), stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	glob := names[2][:len(names[2])-1] + "?"
	if code := run([]string{"-o", "csv", "--captures", glob, dir, q}, nil, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), names[2]) {
		t.Errorf("--captures %s: exit %d: %q %s", glob, code, stdout.String(), stderr.String())
	}
	if code := run([]string{dir, q}, nil, io.Discard, io.Discard); code == 0 {
		t.Error("a query over every set read the damaged part: was it opened?")
	}
	if code := run([]string{"--captures", "nosuch", dir, q}, nil, io.Discard, &stderr); code != exitError || !strings.Contains(stderr.String(), "no committed capture set") {
		t.Errorf("no match: exit %d %s", code, stderr.String())
	}
}

// TestTagsAndMaps: --tag values are captures columns tag_KEY, and -o
// json writes a MAP as an object.
func TestTagsAndMaps(t *testing.T) {
	dir := t.TempDir()
	file := "../../testdata/siw/crc_rping.pcap"
	if r := export.Export(export.Set{Capture: "x", Files: []string{file}}, export.Config{Dir: dir, Tags: []string{"site=lab1", "sensor=s2"}}); r.Err != nil {
		t.Fatal(r.Err)
	}
	var stdout, stderr bytes.Buffer
	q := "SELECT tag_site, tag_sensor, map(['a', 'b'], [1, 2]) AS m, {'k': 'v'} AS s FROM captures"
	if code := run([]string{"-o", "json", dir, q}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var got map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	m, _ := got["m"].(map[string]any)
	s, _ := got["s"].(map[string]any)
	if got["tag_site"] != "lab1" || got["tag_sensor"] != "s2" || m["a"] != 1.0 || m["b"] != 2.0 || s["k"] != "v" {
		t.Errorf("%s", stdout.String())
	}
}

// contractAnswers runs answersQuery over views made as docs/export.md's SQL
// contract says (the block between lake-sql markers, DIR replaced, its
// pdus view made for every table).
func contractAnswers(t *testing.T, dir string) string {
	t.Helper()
	readme, err := os.ReadFile("../../docs/export.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(string(readme), "<!-- lake-sql:begin -->\n```sql\n")
	block, _, ok := strings.Cut(block, "```\n<!-- lake-sql:end -->")
	live, view, ok2 := strings.Cut(block, ";\n")
	if !ok || !ok2 || !strings.Contains(view, "VIEW pdus") {
		t.Fatal("docs/export.md has no lake-sql block")
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	stmts := []string{strings.ReplaceAll(live, "DIR/", dir+"/")}
	for _, tb := range export.Tables {
		v := strings.ReplaceAll(view, "VIEW pdus", "VIEW "+tb.Name)
		stmts = append(stmts, strings.ReplaceAll(v, "DIR/pdus/", dir+"/"+tb.Name+"/"))
	}
	for _, st := range stmts {
		if _, err := db.Exec(st); err != nil {
			t.Fatalf("%v\n%s", err, st)
		}
	}
	var out bytes.Buffer
	if err := query(db, answersQuery, "json", &out); err != nil {
		t.Fatal(err)
	}
	return out.String()
}
