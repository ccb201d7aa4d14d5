package ulp_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/render"
)

var update = flag.Bool("update", false, "rewrite testdata/ulp: generated captures and golden outputs")

func p32(v uint32) *uint32 { return &v }
func p64(v uint64) *uint64 { return &v }
func pint(v int) *int      { return &v }

// genPcap runs a scenario into pcap octets.
func genPcap(t testing.TB, sc *gen.Scenario) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, pcap.FormatPcap, layers.LinkTypeEthernet, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.Run(sc, w, nil); err != nil {
		t.Fatalf("gen.Run: %v", err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// collector keeps copies of what the tests look at.
type collector struct {
	lines    []string // ULP summaries, by PDU
	frames   []int
	fields   []map[string]string
	findings []string // code
	cmds     []cmdRec
}

type cmdRec struct {
	name                 string
	id                   uint64
	ok, answered         bool
	expected, moved, inl uint64
	reads, writes        int
	object               string
}

func (c *collector) Record(r *analyze.Record) {
	switch r.Kind {
	case analyze.KindPDU:
		if r.ULP != nil {
			c.lines = append(c.lines, string(r.ULP.Summary))
			c.frames = append(c.frames, r.Frame)
			m := map[string]string{}
			var b []byte
			b = render.AppendULPJSON(b, r.ULP, false)
			m["json"] = string(b)
			c.fields = append(c.fields, m)
		}
	case analyze.KindFinding:
		c.findings = append(c.findings, r.Finding.Code.String())
	case analyze.KindCommand:
		x := r.Cmd
		c.cmds = append(c.cmds, cmdRec{x.Name, x.ID, x.OK, x.Answered, x.Expected, x.Moved, x.Inline, x.Reads, x.Writes, x.Object})
	}
}

func analyzeBytes(t testing.TB, data []byte, cfg analyze.Config) (*collector, *analyze.Report) {
	t.Helper()
	src, err := pcap.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	col := &collector{}
	rep, err := analyze.Run(src, cfg, col)
	if err != nil {
		t.Fatal(err)
	}
	return col, rep
}

// golden renders a capture as iwdump does (text, -V, NDJSON, the -z table
// of its protocol) and compares with testdata/ulp/NAME.*; -update rewrites.
func golden(t *testing.T, name string, data []byte, stat string) {
	t.Helper()
	goldenOf(t, name, data, stat, true)
}

// goldenOf is golden; all false: only the text lines and the -z table (the
// -V and NDJSON forms of a real capture would be megabytes).
func goldenOf(t *testing.T, name string, data []byte, stat string, all bool) {
	t.Helper()
	outs := map[string]render.Options{
		".txt":    {Format: "text", TimeFormat: "r"},
		".V.txt":  {Format: "text", TimeFormat: "r", Verbose: true},
		".ndjson": {Format: "json"},
	}
	if !all {
		delete(outs, ".V.txt")
		delete(outs, ".ndjson")
	}
	run := func(o render.Options, workers int, stat string) []byte {
		src, err := pcap.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		w := bufio.NewWriter(&buf)
		rep, err := analyze.RunOrdered(src, analyze.Config{Workers: workers}, analyze.Output{W: w}, func(_ int, out *analyze.Out) analyze.Consumer { return render.New(out, &o) })
		if err != nil {
			t.Fatal(err)
		}
		if stat != "" {
			render.WriteStat(w, rep, "", stat)
		}
		w.Flush()
		return buf.Bytes()
	}
	for ext, o := range outs {
		st := ""
		if ext == ".txt" {
			st = stat
			if two := run(o, 2, st); !bytes.Equal(two, run(o, 1, st)) {
				t.Errorf("%s: output with 2 workers differs from 1 worker", name)
			}
		}
		buf := bytes.NewBuffer(run(o, 1, st))
		path := filepath.Join("..", "testdata", "ulp", name+ext)
		if *update {
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./ulp -update)", err)
		}
		if !bytes.Equal(want, buf.Bytes()) {
			t.Errorf("%s: output differs from the golden file (go test ./ulp -run %s -update to accept)", path, t.Name())
		}
	}
}

// writeCapture stores a generated capture under testdata/ulp with -update,
// else reads the stored one and checks the generator still makes it.
func writeCapture(t *testing.T, name string, data []byte) []byte {
	t.Helper()
	path := filepath.Join("..", "testdata", "ulp", name)
	if *update {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return data
	}
	stored, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./ulp -update)", err)
	}
	if !bytes.Equal(stored, data) {
		t.Errorf("%s: the generator no longer makes the stored capture (go test ./ulp -update)", path)
	}
	return stored
}

var le = binary.LittleEndian
var be = binary.BigEndian

func analyzeConfig() analyze.Config { return analyze.Config{} }

// checkClean fails on findings other than mpa.* and allowed, and on
// summaries missing from the lines; it returns the first command of each
// name.
func checkClean(t *testing.T, col *collector, lines []string, allowed ...string) map[string]cmdRec {
	t.Helper()
	for _, f := range col.findings {
		if !strings.HasPrefix(f, "mpa.") && !slices.Contains(allowed, f) {
			t.Errorf("finding %s on a clean capture", f)
		}
	}
	all := strings.Join(col.lines, "\n")
	for _, w := range lines {
		if !strings.Contains(all, w) {
			t.Errorf("no %q in\n%s", w, all)
		}
	}
	got := map[string]cmdRec{}
	for _, c := range col.cmds {
		if _, ok := got[c.name]; !ok {
			got[c.name] = c
		}
	}
	return got
}

// checkFindings fails unless every wanted code was raised and nothing else
// but mpa.* and allowed.
func checkFindings(t *testing.T, col *collector, want []string, allowed ...string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(col.findings, w) {
			t.Errorf("no %s finding; got %v", w, col.findings)
		}
	}
	for _, f := range col.findings {
		if !slices.Contains(want, f) && !strings.HasPrefix(f, "mpa.") && !slices.Contains(allowed, f) {
			t.Errorf("unexpected finding %s", f)
		}
	}
}
