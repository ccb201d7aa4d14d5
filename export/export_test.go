package export

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/render"
	"github.com/iwkit/iwkit/track"
)

// committed lists the captures in the repository.
func committed(t testing.TB) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"../testdata/siw/*.pcap", "../testdata/gen/*.pcap"} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	if len(files) < 5 {
		t.Fatalf("found only %d captures", len(files))
	}
	return files
}

// ndjson runs the pipeline with iwdump's NDJSON printer and returns its
// objects, numbers kept as written.
func ndjson(t testing.TB, file string) []map[string]any {
	t.Helper()
	src, _, err := analyze.OpenFiles([]string{file})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	o := &render.Options{Format: "json"}
	if _, err := analyze.RunOrdered(src, analyze.Config{Workers: 1}, analyze.Output{W: w}, func(_ int, out *analyze.Out) analyze.Consumer { return render.New(out, o) }); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	var objs []map[string]any
	d := json.NewDecoder(&buf)
	d.UseNumber()
	for d.More() {
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, m)
	}
	return objs
}

// flatten turns nested NDJSON objects into column names: {"ddp":{"stag":1}}
// is ddp_stag.
func flatten(prefix string, m map[string]any, out map[string]any) {
	for k, v := range m {
		name := k
		if prefix != "" {
			name = prefix + "_" + k
		}
		if sub, ok := v.(map[string]any); ok {
			flatten(name, sub, out)
			continue
		}
		out[name] = v
	}
}

// same compares an NDJSON value with a column value read back.
func same(js any, pq any) bool {
	switch j := js.(type) {
	case json.Number:
		switch p := pq.(type) {
		case uint64:
			return j.String() == strconv.FormatUint(p, 10)
		case int64:
			return j.String() == strconv.FormatInt(p, 10)
		}
	case bool:
		return pq == j
	case string:
		if p, ok := pq.(uint64); ok { // a 64-bit hex field (decode.Field.JSONHex): "0x…"
			return j == "0x"+strconv.FormatUint(p, 16)
		}
		return pq == j
	}
	return false
}

// seconds is NDJSON's "time" of a time_rel_ns.
func seconds(ns int64) string {
	return strconv.FormatFloat(time.Duration(ns).Seconds(), 'f', 6, 64)
}

func exportOne(t *testing.T, file, dir string) Result {
	t.Helper()
	res := Export(Set{Capture: CaptureName(file), Files: []string{file}}, Config{Dir: dir})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	return res
}

// TestRoundTripNDJSON: for every committed capture, the pdus and
// findings rows read back with parquet-go are the NDJSON records, value
// for value, and the connections and operations rows agree with the
// tracker's statistics (what -z conv and -z ops print).
func TestRoundTripNDJSON(t *testing.T) {
	for _, file := range committed(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			dir := t.TempDir()
			res := exportOne(t, file, dir)
			objs := ndjson(t, file)
			pdus := readAll(t, dir, Pdus)
			findings := readAll(t, dir, Findings)
			var wantPDUs, wantFindings []map[string]any
			for _, o := range objs {
				switch {
				case o["finding"] != nil:
					wantFindings = append(wantFindings, o)
				case o["note"] != nil:
				default:
					wantPDUs = append(wantPDUs, o)
				}
			}
			if len(pdus) != len(wantPDUs) || len(findings) != len(wantFindings) {
				t.Fatalf("pdus %d rows, NDJSON %d; findings %d rows, NDJSON %d", len(pdus), len(wantPDUs), len(findings), len(wantFindings))
			}
			if res.Counts.PDUs != int64(len(pdus)) || res.Counts.Findings != int64(len(findings)) {
				t.Errorf("counts %+v", res.Counts)
			}
			compared := 0
			for i, o := range wantPDUs {
				compared += compareObj(t, fmt.Sprintf("pdu %d", i), o, pdus[i], Pdus)
			}
			for i, o := range wantFindings {
				f := o["finding"].(map[string]any)
				delete(o, "finding")
				for k, v := range f {
					o[k] = v
				}
				compared += compareObj(t, fmt.Sprintf("finding %d", i), o, findings[i], Findings)
			}
			checkConnsOps(t, dir, res)
			t.Logf("%d pdus, %d findings, %d values compared", len(pdus), len(findings), compared)
		})
	}
}

func readAll(t *testing.T, dir string, tb *Table) []Row {
	t.Helper()
	rows, err := ReadTable(dir, tb)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// compareObj checks that every NDJSON member has its column with the same
// value, and that every non-NULL field column is in the NDJSON.
func compareObj(t *testing.T, what string, o map[string]any, row Row, tb *Table) int {
	t.Helper()
	flat := map[string]any{}
	flatten("", o, flat)
	n := 0
	for k, v := range flat {
		switch k {
		case "time":
			if got := seconds(row["time_rel_ns"].(int64)); got != v.(json.Number).String() {
				t.Errorf("%s: time %v, row %s", what, v, got)
			}
		default:
			if tb.Column(k) < 0 {
				t.Errorf("%s: NDJSON member %s has no column", what, k)
				continue
			}
			if !same(v, row[k]) {
				t.Errorf("%s: %s = %v (%T) in NDJSON, %v (%T) in Parquet", what, k, v, v, row[k], row[k])
			}
		}
		n++
	}
	if tb == Pdus {
		for _, pf := range pduFields {
			col := fieldColumn(pf.f.Name)
			if _, ok := row[col]; ok {
				if _, ok := flat[col]; !ok {
					t.Errorf("%s: column %s = %v, not in NDJSON", what, col, row[col])
				}
			}
		}
		if _, ok := flat["missing"]; !ok && row["missing"] != uint64(0) {
			t.Errorf("%s: missing = %v, not in NDJSON", what, row["missing"])
		}
	}
	return n
}

// checkConnsOps holds connections and operations to the tracker's
// statistics.
func checkConnsOps(t *testing.T, dir string, res Result) {
	t.Helper()
	conns := readAll(t, dir, Connections)
	ops := readAll(t, dir, Operations)
	caps := readAll(t, dir, Captures)
	if len(caps) != 1 || caps[0]["connections"] != int64(len(conns)) || caps[0]["operations"] != int64(len(ops)) ||
		caps[0]["frames"] != res.Counts.Frames || caps[0]["pdus"] != res.Counts.PDUs {
		t.Errorf("captures %v, counts %+v, %d connections, %d operations", caps, res.Counts, len(conns), len(ops))
	}
	if len(conns) != len(res.Report.ConnStats) {
		t.Fatalf("%d connection rows, %d connections tracked", len(conns), len(res.Report.ConnStats))
	}
	type key struct {
		conn int64
		dir  string
		kind string
	}
	count := map[key]uint64{}
	for _, op := range ops {
		if op["status"] == "ok" || op["kind"] != "read" {
			count[key{op["conn"].(int64), op["dir"].(string), op["kind"].(string)}]++
		}
		if op["kind"] == "read" && op["response_last_frame"] != nil {
			count[key{op["conn"].(int64), op["dir"].(string), "answered"}]++
			if op["latency_ns"] == nil {
				t.Errorf("answered read without latency: %v", op)
			}
		}
		if op["frame"].(int64) <= 0 || op["request_frame"].(int64) <= 0 {
			t.Errorf("operation without frames: %v", op)
		}
	}
	for i, cs := range res.Report.ConnStats {
		row := conns[i]
		if row["conn"] != int64(cs.Conn) {
			t.Fatalf("connection row %d is conn %v, want %d", i, row["conn"], cs.Conn)
		}
		for d, name := range []string{"i2r", "r2i"} {
			s := &cs.Dir[d]
			for col, want := range map[string]uint64{"fpdus": s.FPDUs, "ulpdu_octets": s.ULPDUOctets, "crc_bad": s.CRCBad,
				"writes": s.Ops.Writes, "sends": s.Ops.Sends, "reads": s.Ops.Reads, "terminates": s.Ops.Terminates} {
				if got := row[name+"_"+col]; got != want {
					t.Errorf("conn %d %s_%s = %v, want %d", cs.Conn, name, col, got, want)
				}
			}
			k := func(kind string) uint64 { return count[key{int64(cs.Conn), track.Dir(d).String(), kind}] }
			if k("write") != s.Ops.Writes || k("send") != s.Ops.Sends || k("terminate") != s.Ops.Terminates || k("answered") != s.Ops.ReadsAnswered {
				t.Errorf("conn %d %s: operations rows write %d send %d terminate %d answered reads %d; stats %+v",
					cs.Conn, name, k("write"), k("send"), k("terminate"), k("answered"), s.Ops)
			}
		}
		if row["first_frame"].(int64) <= 0 || row["last_frame"].(int64) < row["first_frame"].(int64) {
			t.Errorf("conn %d frames %v..%v", cs.Conn, row["first_frame"], row["last_frame"])
		}
	}
}

// TestTerminateBlame: the Terminates of the committed captures are rows
// of operations with the frame they blame, as -T json's PDU shows them.
func TestTerminateBlame(t *testing.T) {
	dir := t.TempDir()
	exportOne(t, "../testdata/siw/term_read_badstag.pcap", dir)
	ops := readAll(t, dir, Operations)
	n := 0
	for _, op := range ops {
		if op["kind"] != "terminate" {
			continue
		}
		n++
		if op["blamed_frame"] == nil || op["term_cause"] == nil || op["verdict"] == nil {
			t.Errorf("terminate row %v", op)
		}
	}
	if n == 0 {
		t.Fatal("no terminate rows")
	}
}

func TestCaptureName(t *testing.T) {
	for in, want := range map[string]string{
		"/a/b/rping.pcap":      "rping",
		"x/ib write.pcapng.gz": "ib_write",
		"c=1/.hidden.pcap":     "c.hidden",
		"dir/a=b'c.pcap":       "a_b_c",
	} {
		if got := CaptureName(in); got != want {
			t.Errorf("CaptureName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestReexportReplaces: exporting a capture set again leaves one copy.
func TestReexportReplaces(t *testing.T) {
	dir := t.TempDir()
	file := "../testdata/siw/crc_rping.pcap"
	a := exportOne(t, file, dir)
	exportOne(t, file, dir)
	if pdus := readAll(t, dir, Pdus); int64(len(pdus)) != a.Counts.PDUs {
		t.Fatalf("%d pdu rows after two exports, want %d", len(pdus), a.Counts.PDUs)
	}
	for _, tb := range Tables {
		m, _ := filepath.Glob(filepath.Join(dir, tb.Name, "*", "*"))
		if len(m) != 1 || !strings.HasSuffix(m[0], ".parquet") {
			t.Errorf("%s: files %v", tb.Name, m)
		}
	}
}

// schemaDoc is the README's schema section, made from Tables.
func schemaDoc() string {
	var b strings.Builder
	for _, tb := range Tables {
		fmt.Fprintf(&b, "## `%s`\n\n%s.\n\n| column | type (DuckDB) | NULL | meaning |\n|---|---|---|---|\n", tb.Name, tb.Desc)
		fmt.Fprintf(&b, "| `capture` | VARCHAR | no | the capture set: the Hive partition `capture=NAME` |\n")
		for _, c := range tb.Cols {
			null := "no"
			if c.Optional {
				null = "yes"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", c.Name, c.Type.SQL(), null, strings.ReplaceAll(c.Desc, "|", "\\|"))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestSchemaDoc: docs/parquet.md documents every column of every table with
// its type (IWKIT_UPDATE_README=1 rewrites the section).
func TestSchemaDoc(t *testing.T) {
	const begin, end = "<!-- export-schema:begin -->\n", "<!-- export-schema:end -->"
	readme, err := os.ReadFile("../docs/parquet.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		t.Fatal("docs/parquet.md has no export schema section")
	}
	want := schemaDoc()
	if s[i+len(begin):j] == want {
		return
	}
	if os.Getenv("IWKIT_UPDATE_README") == "1" {
		if err := os.WriteFile("../docs/parquet.md", []byte(s[:i+len(begin)]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Error("docs/parquet.md's export schema differs from Tables; IWKIT_UPDATE_README=1 go test ./export -run TestSchemaDoc rewrites it")
}
