//go:build cgo

// Command iwsql queries iwdump --export directories with embedded DuckDB:
// the tables (connections, pdus, operations, findings, commands,
// latency_hist, captures) are views over every capture set's Parquet
// files, and hist_quantile a macro over latency_hist.
//
//	iwsql DIR 'SELECT ...'          a query over an export directory
//	iwsql -r FILE [-r FILE]... 'SELECT ...'   export to a temporary directory first
//	iwsql DIR                       an interactive prompt
//
// See docs/iwsql.md. This is the one command built with cgo
// (github.com/duckdb/duckdb-go/v2); iwdump stays cgo-free.
package main

import (
	"bufio"
	"database/sql"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/iwkit/iwkit/export"
	"github.com/iwkit/iwkit/internal/exitcode"
	"github.com/iwkit/iwkit/render"
)

// Exit codes (docs/exit-status.md, the same in every command): 0 done,
// 1 an I/O or SQL error, or iwsql check found problems it did not repair,
// 2 a usage mistake.
const (
	exitOK       = exitcode.OK
	exitError    = exitcode.Failure
	exitUsage    = exitcode.Usage
	exitProblems = exitcode.Failure
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "check" {
		return check(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("iwsql", flag.ContinueOnError)
	var files []string
	fs.Func("r", "export capture `FILE` to a temporary directory and query it (repeatable; each file is its own capture set)", func(v string) error {
		files = append(files, v)
		return nil
	})
	format := fs.String("o", "text", "output `format`: text (aligned columns), csv, json (one object per row)")
	captures := fs.String("captures", "", "views over these capture sets only: `NAME,...` or glob patterns (path.Match); the other sets' files are not opened")
	doc.Setup(fs, stderr) // -h, --help, --version (doc.go)
	if code, done := doc.Done(fs, fs.Parse(args), stdout); done {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "iwsql: "+format+"\n", a...)
		return exitError
	}
	if *format != "text" && *format != "csv" && *format != "json" {
		fmt.Fprintf(stderr, "iwsql: -o takes text, csv or json, not %q\n", *format)
		return exitUsage
	}
	sel := export.Selector(*captures)
	if err := sel.Check(); err != nil {
		return fail("%v", err)
	}
	rest := fs.Args()
	var dir string
	switch {
	case len(files) > 0:
		tmp, err := os.MkdirTemp("", "iwsql-")
		if err != nil {
			return fail("%v", err)
		}
		defer os.RemoveAll(tmp)
		var sets []export.Set
		for _, f := range files {
			sets = append(sets, export.Set{Capture: export.CaptureName(f), Files: []string{f}})
		}
		for _, r := range export.ExportEach(sets, export.Config{Dir: tmp}, runtime.GOMAXPROCS(0), nil) {
			if r.Err != nil {
				return fail("%s: %v", r.Set.Files[0], r.Err)
			}
		}
		dir = tmp
	case len(rest) == 0:
		fs.Usage()
		return exitUsage
	default:
		dir, rest = rest[0], rest[1:]
		if !export.IsExport(dir) {
			return fail("%s is not an export directory (iwdump --export DIR writes one)", dir)
		}
	}
	if len(rest) > 1 {
		fmt.Fprintln(stderr, "iwsql: give the query as one argument (quote it)")
		return exitUsage
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return fail("%v", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: the views live in it
	tables, err := createViews(db, dir, sel, stderr)
	if err != nil {
		return fail("%v", err)
	}
	if len(rest) == 1 {
		if err := query(db, rest[0], *format, stdout); err != nil {
			return fail("%v", err)
		}
		return exitOK
	}
	return prompt(db, tables, *format, stdin, stdout, stderr)
}

// createViews makes each table of the export a view over the live copy
// of each selected capture set (export.LiveParts); it warns of each part
// it skips (unreadable or quarantined) and returns the tables that have
// parts. The captures view gains a column tag_KEY per tag key.
func createViews(db *sql.DB, dir string, sel export.Selector, stderr io.Writer) ([]*export.Table, error) {
	if _, err := db.Exec(export.HistQuantileSQL); err != nil {
		return nil, fmt.Errorf("macro hist_quantile: %w", err)
	}
	parts, skipped := export.LiveParts(dir, sel)
	for _, s := range skipped {
		fmt.Fprintf(stderr, "iwsql: warning: skipped %s\n", s)
	}
	var tables []*export.Table
	for _, t := range export.Tables {
		q := export.ViewSQL(parts[t])
		if q == "" {
			continue
		}
		if _, err := db.Exec("CREATE OR REPLACE VIEW " + t.Name + " AS " + q); err != nil {
			return nil, fmt.Errorf("view %s: %w", t.Name, err)
		}
		if t == export.Captures {
			if err := tagColumns(db, q); err != nil {
				return nil, fmt.Errorf("view captures: %w", err)
			}
		}
		tables = append(tables, t)
	}
	if len(tables) == 0 {
		if sel != "" {
			return nil, fmt.Errorf("no committed capture set in %s matches --captures %s", dir, sel)
		}
		return nil, errors.New("no committed capture set in " + dir)
	}
	return tables, nil
}

// tagColumns makes the captures view (query q) again with a column
// tag_KEY for each tag key its rows have.
func tagColumns(db *sql.DB, q string) error {
	var has int
	if err := db.QueryRow("SELECT count(*) FROM (DESCRIBE captures) WHERE column_name = 'tags'").Scan(&has); err != nil || has == 0 {
		return err // parts written before tags
	}
	rows, err := db.Query(export.TagKeysSQL)
	if err != nil {
		return err
	}
	var keys []string
	for rows.Next() {
		var k sql.NullString
		if err := rows.Scan(&k); err != nil {
			rows.Close()
			return err
		}
		if k.Valid {
			keys = append(keys, k.String)
		}
	}
	rows.Close()
	if len(keys) == 0 {
		return rows.Err()
	}
	_, err = db.Exec("CREATE OR REPLACE VIEW captures AS " + export.TagsSQL(q, keys))
	return err
}

// check is iwsql check [--repair] DIR: a line per problem (kind,
// capture set, path, detail, and with --repair what was done), then a
// summary. Exit 0 when nothing is left to repair, 2 when problems
// remain, 1 for a usage error.
func check(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("iwsql check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	repair := fs.Bool("repair", false, "remove duplicates, unfinished commits and orphans; quarantine unreadable parts (DIR/.quarantine)")
	if err := fs.Parse(args); err != nil {
		return exitError
	}
	if fs.NArg() != 1 || !export.IsExport(fs.Arg(0)) {
		fmt.Fprintf(stderr, "usage: iwsql check [--repair] DIR (an iwdump --export directory)\n")
		return exitError
	}
	dir := fs.Arg(0)
	problems := export.CheckDir(dir, *repair)
	left := 0
	for _, p := range problems {
		fixed := ""
		if p.Fixed != "" {
			fixed = " [" + p.Fixed + "]"
		} else {
			left++
		}
		fmt.Fprintf(stdout, "%-10s capture=%s %s: %s%s\n", p.Kind, p.Capture, p.Path, p.Detail, fixed)
	}
	fmt.Fprintf(stdout, "%d capture sets, %d problems, %d repaired\n", len(export.Selector("").Captures(dir)), len(problems), len(problems)-left)
	if left > 0 {
		return exitProblems
	}
	return exitOK
}

// query runs one statement and writes its rows.
func query(db *sql.DB, q, format string, w io.Writer) error {
	rows, err := db.Query(q)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out rowWriter
	switch format {
	case "csv":
		out = &csvWriter{w: csv.NewWriter(bw)}
	case "json":
		out = &jsonWriter{w: bw}
	default:
		out = &textWriter{w: bw}
	}
	out.header(cols)
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		out.row(cols, vals)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	out.end()
	return nil
}

type rowWriter interface {
	header(cols []string)
	row(cols []string, vals []any)
	end()
}

// text formats a value for text and CSV: NULL as NULL (text) or empty
// (CSV), times in RFC 3339 with nanoseconds (UTC), octets in hex, lists
// in brackets.
func text(v any, null string) string {
	switch x := v.(type) {
	case nil:
		return null
	case []byte:
		return hex.EncodeToString(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = text(e, "NULL")
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case *big.Int:
		return x.String()
	case duckdb.OrderedMap:
		parts := make([]string, 0, x.Len())
		for i, k := range x.Keys() {
			parts = append(parts, text(k, "NULL")+": "+text(x.Values()[i], "NULL"))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

type textWriter struct {
	w    io.Writer
	rows [][]string
	n    int
}

// Rows are gathered up to a screenful at a time, then aligned.
func (t *textWriter) header(cols []string) { t.rows = append(t.rows, cols) }
func (t *textWriter) row(_ []string, vals []any) {
	r := make([]string, len(vals))
	for i, v := range vals {
		r[i] = text(v, "NULL")
	}
	t.rows = append(t.rows, r)
	t.n++
	if len(t.rows) >= 10000 {
		t.flush()
	}
}
func (t *textWriter) flush() {
	tw := tabwriter.NewWriter(t.w, 0, 0, 2, ' ', 0)
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
	t.rows = t.rows[:0]
}
func (t *textWriter) end() {
	t.flush()
	fmt.Fprintf(t.w, "(%d rows)\n", t.n)
}

type csvWriter struct{ w *csv.Writer }

func (c *csvWriter) header(cols []string) { c.w.Write(cols) }
func (c *csvWriter) row(_ []string, vals []any) {
	r := make([]string, len(vals))
	for i, v := range vals {
		r[i] = text(v, "")
	}
	c.w.Write(r)
}
func (c *csvWriter) end() { c.w.Flush() }

type jsonWriter struct {
	w   io.Writer
	buf []byte
}

func (j *jsonWriter) header([]string) {}
func (j *jsonWriter) row(cols []string, vals []any) {
	b := append(j.buf[:0], '{')
	for i, v := range vals {
		if i > 0 {
			b = append(b, ',')
		}
		b = render.AppendJSONString(b, cols[i])
		b = append(b, ':')
		b = appendJSON(b, v)
	}
	b = append(b, '}', '\n')
	j.w.Write(b)
	j.buf = b
}
func (j *jsonWriter) end() {}

// appendJSON writes numbers as numbers, booleans, NULL as null, lists as
// arrays, everything else as a string in text's form.
func appendJSON(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case int8, int16, int32, int64, int, uint8, uint16, uint32, uint64, uint, *big.Int:
		return fmt.Append(b, x)
	case float32, float64:
		return append(b, text(x, "")...)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, e)
		}
		return append(b, ']')
	case duckdb.OrderedMap: // an object, keys in their text form
		b = append(b, '{')
		for i, k := range x.Keys() {
			if i > 0 {
				b = append(b, ',')
			}
			b = render.AppendJSONString(b, text(k, "null"))
			b = append(b, ':')
			b = appendJSON(b, x.Values()[i])
		}
		return append(b, '}')
	case map[string]any: // a STRUCT
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = render.AppendJSONString(b, k)
			b = append(b, ':')
			b = appendJSON(b, x[k])
		}
		return append(b, '}')
	}
	return render.AppendJSONString(b, text(v, ""))
}

// prompt reads statements from stdin (ended by ';' or by the end of a
// line without one), with .tables, .schema TABLE and .quit.
func prompt(db *sql.DB, tables []*export.Table, format string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stdout, "iwsql: DuckDB over an iwdump export. Tables:")
	listTables(db, tables, stdout)
	fmt.Fprintln(stdout, "End statements with ';'. .tables, .schema TABLE, .quit")
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var stmt strings.Builder
	for {
		if stmt.Len() == 0 {
			fmt.Fprint(stdout, "iwsql> ")
		} else {
			fmt.Fprint(stdout, "   ...> ")
		}
		if !sc.Scan() {
			fmt.Fprintln(stdout)
			return exitOK
		}
		line := strings.TrimSpace(sc.Text())
		if stmt.Len() == 0 && strings.HasPrefix(line, ".") {
			cmd, arg, _ := strings.Cut(line, " ")
			switch cmd {
			case ".quit", ".exit":
				return exitOK
			case ".tables":
				listTables(db, tables, stdout)
			case ".schema":
				if err := query(db, "DESCRIBE "+strings.TrimSpace(arg), "text", stdout); err != nil {
					fmt.Fprintf(stderr, "error: %v\n", err)
				}
			default:
				fmt.Fprintf(stderr, "unknown command %s\n", cmd)
			}
			continue
		}
		stmt.WriteString(line)
		stmt.WriteByte('\n')
		if !strings.HasSuffix(line, ";") {
			continue
		}
		if err := query(db, stmt.String(), format, stdout); err != nil {
			fmt.Fprintf(stderr, "error: %v\n", err)
		}
		stmt.Reset()
	}
}

func listTables(db *sql.DB, tables []*export.Table, w io.Writer) {
	for _, t := range tables {
		var n int64
		db.QueryRow("SELECT count(*) FROM " + t.Name).Scan(&n)
		fmt.Fprintf(w, "  %-12s %10d rows  %s\n", t.Name, n, t.Desc)
	}
}
