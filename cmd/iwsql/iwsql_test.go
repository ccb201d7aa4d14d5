//go:build cgo

package main

import (
	"bytes"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/export"
)

// committed are the captures in the repository.
func committed(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"../../testdata/siw/*.pcap", "../../testdata/gen/*.pcap", "../../testdata/ulp/*.pcap"} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	if len(files) < 5 {
		t.Fatalf("%d captures", len(files))
	}
	return files
}

// exportAll exports every committed capture as its own set. The gen
// capture shares its name with the siw one: it is named gen_rping.
func exportAll(t *testing.T) string {
	t.Helper()
	dir, _ := exportResults(t)
	return dir
}

// exportResults is exportAll with what each export's pipeline reported.
func exportResults(t *testing.T) (string, []export.Result) {
	t.Helper()
	dir := t.TempDir()
	var sets []export.Set
	for _, f := range committed(t) {
		name := export.CaptureName(f)
		if strings.Contains(f, "/gen/") {
			name = "gen_" + name
		}
		sets = append(sets, export.Set{Capture: name, Files: []string{f}})
	}
	res := export.ExportEach(sets, export.Config{Dir: dir}, 2, nil)
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	return dir, res
}

func openDB(t *testing.T, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	if _, err := createViews(db, dir, "", io.Discard); err != nil {
		t.Fatal(err)
	}
	return db
}

// canon writes a value the same way whether DuckDB or parquet-go read it.
func canon(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return hex.EncodeToString(x)
	case time.Time:
		// DuckDB reads TIMESTAMP(NANOS, UTC) as TIMESTAMP WITH TIME
		// ZONE, to the microsecond (README): compare at that precision.
		return strconv.FormatInt(x.UnixNano()/1000, 10)
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, canon(e))
		}
		return "[" + strings.Join(parts, " ") + "]"
	case []int64:
		var parts []string
		for _, e := range x {
			parts = append(parts, canon(e))
		}
		return "[" + strings.Join(parts, " ") + "]"
	case []string:
		return "[" + strings.Join(x, " ") + "]"
	case []uint64:
		var parts []string
		for _, e := range x {
			parts = append(parts, canon(e))
		}
		return "[" + strings.Join(parts, " ") + "]"
	case *big.Int:
		return x.String()
	}
	return fmt.Sprint(v)
}

// TestDuckDBRoundTrip: every table read with DuckDB (iwsql's views) has
// the rows parquet-go reads (which TestRoundTripNDJSON in package export
// holds to the NDJSON records), value for value, and the column types
// the README documents.
func TestDuckDBRoundTrip(t *testing.T) {
	dir := exportAll(t)
	db := openDB(t, dir)
	for _, tb := range export.Tables {
		t.Run(tb.Name, func(t *testing.T) {
			// Types first: DESCRIBE against the documented SQL types.
			rows, err := db.Query("DESCRIBE " + tb.Name)
			if err != nil {
				t.Fatal(err)
			}
			types := map[string]string{}
			for rows.Next() {
				var name, typ string
				var a, b, c, d any
				if err := rows.Scan(&name, &typ, &a, &b, &c, &d); err != nil {
					t.Fatal(err)
				}
				types[name] = typ
			}
			rows.Close()
			if types["capture"] != "VARCHAR" {
				t.Errorf("capture is %q", types["capture"])
			}
			for _, c := range tb.Cols {
				if types[c.Name] != c.Type.SQL() {
					t.Errorf("%s: DuckDB type %q, documented %q", c.Name, types[c.Name], c.Type.SQL())
				}
			}
			if len(types) != len(tb.Cols)+1 {
				t.Errorf("%d columns in DuckDB, %d documented (+ capture)", len(types), len(tb.Cols))
			}
			// Then every row.
			names := []string{"capture"}
			for _, c := range tb.Cols {
				names = append(names, c.Name)
			}
			var fromDuck []string
			rows, err = db.Query("SELECT " + strings.Join(names, ", ") + " FROM " + tb.Name)
			if err != nil {
				t.Fatal(err)
			}
			vals := make([]any, len(names))
			ptrs := make([]any, len(names))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			for rows.Next() {
				if err := rows.Scan(ptrs...); err != nil {
					t.Fatal(err)
				}
				var parts []string
				for _, v := range vals {
					parts = append(parts, canon(v))
				}
				fromDuck = append(fromDuck, strings.Join(parts, "|"))
			}
			rows.Close()
			pq, err := export.ReadTable(dir, tb)
			if err != nil {
				t.Fatal(err)
			}
			var fromPQ []string
			for _, r := range pq {
				var parts []string
				for _, n := range names {
					v, ok := r[n]
					if !ok {
						v = nil
					}
					parts = append(parts, canon(v))
				}
				fromPQ = append(fromPQ, strings.Join(parts, "|"))
			}
			slices.Sort(fromDuck)
			slices.Sort(fromPQ)
			if len(fromDuck) != len(fromPQ) {
				t.Fatalf("DuckDB %d rows, parquet-go %d", len(fromDuck), len(fromPQ))
			}
			for i := range fromDuck {
				if fromDuck[i] != fromPQ[i] {
					t.Fatalf("row differs:\nDuckDB     %s\nparquet-go %s", fromDuck[i], fromPQ[i])
				}
			}
			t.Logf("%d rows, %d columns", len(fromDuck), len(names))
		})
	}
}

// TestStandardTypes: every column of every part uses a standard Parquet
// physical type with a standard logical type (LogicalTypes.md), as the
// file's footer says.
func TestStandardTypes(t *testing.T) {
	dir := exportAll(t)
	db := openDB(t, dir)
	allowed := regexp.MustCompile(`^(IntType\(bitWidth=., isSigned=[01]\)|StringType\(\)|TimestampType\(isAdjustedToUTC=1, unit=TimeUnit\(MILLIS=<null>, MICROS=<null>, NANOS=NanoSeconds\(\)\)\)|ListType\(\)|)$`)
	for _, tb := range export.Tables {
		parts, _ := filepath.Glob(filepath.Join(dir, tb.Name, "*", "*.parquet"))
		rows, err := db.Query(fmt.Sprintf("SELECT DISTINCT name, coalesce(type, ''), coalesce(logical_type, '') FROM parquet_schema(%s)", sqlList(parts)))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var name, typ, logical string
			if err := rows.Scan(&name, &typ, &logical); err != nil {
				t.Fatal(err)
			}
			n++
			if !allowed.MatchString(logical) {
				t.Errorf("%s.%s: logical type %q", tb.Name, name, logical)
			}
			switch typ {
			case "", "BOOLEAN", "INT32", "INT64", "BYTE_ARRAY":
			default:
				t.Errorf("%s.%s: physical type %q", tb.Name, name, typ)
			}
		}
		rows.Close()
		if n < len(tb.Cols) {
			t.Errorf("%s: %d schema elements", tb.Name, n)
		}
	}
}

func sqlList(files []string) string {
	var q []string
	for _, f := range files {
		q = append(q, "'"+strings.ReplaceAll(f, "'", "''")+"'")
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// TestPartitionPruning: a query on one capture set reads that set's part
// only. DuckDB's plan says so, and a damaged part of another set does not
// disturb it (while a query over all sets fails on it).
func TestPartitionPruning(t *testing.T) {
	dir := exportAll(t)
	db := openDB(t, dir)
	var plan, key string
	if err := db.QueryRow("EXPLAIN ANALYZE SELECT count(*) FROM pdus WHERE capture = 'rping'").Scan(&key, &plan); err != nil {
		t.Fatal(err)
	}
	all, _ := filepath.Glob(filepath.Join(dir, "pdus", "*", "*.parquet"))
	if want := fmt.Sprintf("Scanning Files: 1/%d", len(all)); !strings.Contains(plan, want) {
		t.Errorf("plan lacks %q:\n%s", want, plan)
	}
	var before int64
	db.QueryRow("SELECT count(*) FROM pdus WHERE capture = 'rping'").Scan(&before)
	// Damage another set's part: read_parquet over the layout (without
	// iwsql's union_by_name, which reads every footer to bind) never
	// opens it for a query on capture 'rping'.
	other, _ := filepath.Glob(filepath.Join(dir, "pdus", "capture=crc_rping", "*.parquet"))
	if err := os.WriteFile(other[0], bytes.Repeat([]byte("not parquet "), 100), 0o644); err != nil {
		t.Fatal(err)
	}
	from := fmt.Sprintf("read_parquet('%s/pdus/*/*.parquet', hive_partitioning = true, hive_types = {'capture': VARCHAR})", dir)
	var after int64
	if err := db.QueryRow("SELECT count(*) FROM " + from + " WHERE capture = 'rping'").Scan(&after); err != nil || after != before || before == 0 {
		t.Errorf("pruned query: %d rows (before %d), %v", after, before, err)
	}
	if err := db.QueryRow("SELECT count(*) FROM " + from).Scan(&after); err == nil {
		t.Error("a query over the damaged part succeeded: was it read at all?")
	}
}

// TestConcurrentWritersSQL: 4 iwdump processes export 8 capture sets into
// one directory at once; iwsql's counts are the sums of what the
// processes reported.
func TestConcurrentWritersSQL(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/siw/*.pcap")
	files = files[:8]
	bin := filepath.Join(t.TempDir(), "iwdump")
	build := exec.Command("go", "build", "-o", bin, "../iwdump")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build iwdump: %v\n%s", err, out)
	}
	dir := t.TempDir()
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for p := 0; p < 4; p++ {
		cmd := exec.Command(bin, "--export", dir, "--each", "--jobs", "2", files[2*p], files[2*p+1])
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	line := regexp.MustCompile(`(?m)^capture=(\S+) frames=(\d+) connections=(\d+) pdus=(\d+) operations=(\d+) findings=(\d+) commands=(\d+)$`)
	var want [5]int64
	sets := 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, outs[i])
		}
		for _, m := range line.FindAllStringSubmatch(outs[i].String(), -1) {
			sets++
			for k := range want {
				n, _ := strconv.ParseInt(m[k+2], 10, 64)
				want[k] += n
			}
		}
	}
	if sets != 8 {
		t.Fatalf("%d sets reported", sets)
	}
	var stdout, stderr bytes.Buffer
	q := `SELECT (SELECT count(DISTINCT capture) FROM captures) AS sets, (SELECT sum(frames) FROM captures) AS frames,
	  (SELECT count(*) FROM connections) AS connections, (SELECT count(*) FROM pdus) AS pdus,
	  (SELECT count(*) FROM operations) AS operations, (SELECT count(*) FROM findings) AS findings`
	if code := run([]string{"-o", "json", dir, q}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("iwsql exit %d: %s", code, stderr.String())
	}
	var got map[string]int64
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, stdout.String())
	}
	if got["sets"] != 8 || got["frames"] != want[0] || got["connections"] != want[1] || got["pdus"] != want[2] || got["operations"] != want[3] || got["findings"] != want[4] {
		t.Errorf("iwsql %v, processes reported %v", got, want)
	}
}

// TestCLI: -r FILE, the three output formats, the prompt, mistakes.
func TestCLI(t *testing.T) {
	file := "../../testdata/siw/term_read_badstag.pcap"
	q := "SELECT kind, blamed_frame, term_cause FROM operations WHERE kind = 'terminate'"
	out := func(stdin string, args ...string) string {
		var stdout, stderr bytes.Buffer
		if code := run(args, strings.NewReader(stdin), &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
		}
		return stdout.String()
	}
	text := out("", "-r", file, q)
	if !regexp.MustCompile(`(?m)^kind\s+blamed_frame\s+term_cause\n^terminate\s+\d+\s+RDMAP`).MatchString(text) || !strings.Contains(text, "(1 rows)") {
		t.Errorf("text:\n%s", text)
	}
	csv := out("", "-o", "csv", "-r", file, q)
	if !regexp.MustCompile(`^kind,blamed_frame,term_cause\nterminate,\d+,RDMAP`).MatchString(csv) {
		t.Errorf("csv:\n%s", csv)
	}
	js := out("", "-o", "json", "-r", file, q)
	var m map[string]any
	if err := json.Unmarshal([]byte(js), &m); err != nil || m["kind"] != "terminate" {
		t.Errorf("json %q: %v", js, err)
	}
	dir := t.TempDir()
	export.Export(export.Set{Capture: "x", Files: []string{file}}, export.Config{Dir: dir})
	p := out("SELECT count(*) AS n\nFROM pdus;\n.tables\n.quit\n", dir)
	for _, want := range []string{"pdus", "operations", "iwsql> ", "   ...> ", "n\n4\n"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	for _, c := range []struct {
		args []string
		code int
	}{{nil, exitUsage}, {[]string{"--no-such-flag", dir, "SELECT 1"}, exitUsage}, {[]string{"-o", "xml", dir, "SELECT 1"}, exitUsage}, {[]string{dir, "SELECT", "1"}, exitUsage},
		{[]string{t.TempDir(), "SELECT 1"}, exitError}, {[]string{dir, "SELEC"}, exitError}} {
		var stdout, stderr bytes.Buffer
		if code := run(c.args, strings.NewReader(""), &stdout, &stderr); code != c.code {
			t.Errorf("%v: exit %d, want %d", c.args, code, c.code)
		}
	}
}

// TestReadmeQueries: docs/iwsql.md's everyday queries run on the committed
// captures and answer.
func TestReadmeQueries(t *testing.T) {
	readme, err := os.ReadFile("../../docs/iwsql.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	i, j := strings.Index(s, "# iwsql"), strings.Index(s, "## Beyond one machine")
	if i < 0 || j < i {
		t.Fatal("docs/iwsql.md has no iwsql section")
	}
	blocks := regexp.MustCompile("(?s)```sql\n(.*?)```").FindAllStringSubmatch(s[i:j], -1)
	if len(blocks) < 5 {
		t.Fatalf("%d queries in the README", len(blocks))
	}
	dir := exportAll(t)
	for _, b := range blocks {
		var stdout, stderr bytes.Buffer
		if code := run([]string{"-o", "csv", dir, b[1]}, nil, &stdout, &stderr); code != 0 {
			t.Errorf("query %s: exit %d: %s", b[1], code, stderr.String())
			continue
		}
		if lines := strings.Count(stdout.String(), "\n"); lines < 2 {
			t.Errorf("query %s: no rows:\n%s", b[1], stdout.String())
		}
	}
}

// TestStatisticsPruning: the chunk statistics the export writes agree
// with the values, as DuckDB uses them: for every scalar column of the
// pdus table and its median value as a constant, a WHERE
// comparison (which DuckDB pushes into the scan, skipping row groups by
// their min and max) counts the rows that an aggregate FILTER over every
// row counts.
func TestStatisticsPruning(t *testing.T) {
	dir := exportAll(t)
	db := openDB(t, dir)
	checked := 0
	for _, tb := range []*export.Table{export.Pdus} {
		for _, c := range tb.Cols {
			switch c.Type {
			case export.Int64s, export.Strings, export.Uint32s, export.Bytes, export.Bool:
				continue
			}
			var median sql.NullString
			if err := db.QueryRow(fmt.Sprintf("SELECT CAST(quantile_disc(%s, 0.5) AS VARCHAR) FROM %s", c.Name, tb.Name)).Scan(&median); err != nil {
				t.Fatal(err)
			}
			if !median.Valid {
				continue // NULL on every row
			}
			k := fmt.Sprintf("CAST('%s' AS %s)", strings.ReplaceAll(median.String, "'", "''"), c.Type.SQL())
			var lw, la, ew, ea, gw, ga int64
			q := fmt.Sprintf(`SELECT (SELECT count(*) FROM %[1]s WHERE %[2]s < %[3]s), count(*) FILTER (WHERE %[2]s < %[3]s),
				(SELECT count(*) FROM %[1]s WHERE %[2]s = %[3]s), count(*) FILTER (WHERE %[2]s = %[3]s),
				(SELECT count(*) FROM %[1]s WHERE %[2]s > %[3]s), count(*) FILTER (WHERE %[2]s > %[3]s) FROM %[1]s`, tb.Name, c.Name, k)
			if err := db.QueryRow(q).Scan(&lw, &la, &ew, &ea, &gw, &ga); err != nil {
				t.Fatal(err)
			}
			if lw != la || ew != ea || gw != ga || ea == 0 {
				t.Errorf("%s.%s against %s: WHERE counts < %d = %d > %d, FILTER %d %d %d", tb.Name, c.Name, median.String, lw, ew, gw, la, ea, ga)
			}
			checked++
		}
	}
	if checked < 25 {
		t.Errorf("only %d columns compared", checked)
	}
}
