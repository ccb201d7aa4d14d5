package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/export"
	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/pcap"
)

// TestMain lets the test binary stand in for iwdump in the tests that
// need several processes.
func TestMain(m *testing.M) {
	if os.Getenv("IWDUMP_TEST_AS_IWDUMP") == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

var exportLine = regexp.MustCompile(`^capture=(\S+) frames=(\d+) connections=(\d+) pdus=(\d+) operations=(\d+) findings=(\d+) commands=(\d+)$`)

// TestConcurrentWriters: 4 processes export 8 capture sets into one
// directory at once (2 each, --each --jobs 2); the directory then reads
// as one dataset whose counts per capture set are those the processes
// reported, with no temporary file left.
func TestConcurrentWriters(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/siw/*.pcap")
	if len(files) < 8 {
		t.Fatalf("%d captures", len(files))
	}
	files = files[:8]
	dir := t.TempDir()
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for p := 0; p < 4; p++ {
		cmd := exec.Command(os.Args[0], "--export", dir, "--each", "--jobs", "2", files[2*p], files[2*p+1])
		cmd.Env = append(os.Environ(), "IWDUMP_TEST_AS_IWDUMP=1")
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		outs = append(outs, out)
	}
	want := map[string][]int64{} // capture: frames, connections, pdus, operations, findings, commands
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v: %s", i, err, outs[i])
		}
		for _, line := range strings.Split(strings.TrimSpace(outs[i].String()), "\n") {
			m := exportLine.FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("process %d: line %q", i, line)
			}
			for _, s := range m[2:] {
				n, _ := strconv.ParseInt(s, 10, 64)
				want[m[1]] = append(want[m[1]], n)
			}
		}
	}
	if len(want) != 8 {
		t.Fatalf("%d capture sets reported: %v", len(want), want)
	}
	got := map[string][]int64{}
	for _, c := range mustRead(t, dir, export.Captures) {
		name := c["capture"].(string)
		got[name] = []int64{c["frames"].(int64), c["connections"].(int64), c["pdus"].(int64), c["operations"].(int64), c["findings"].(int64), c["commands"].(int64)}
	}
	for i, tb := range []*export.Table{export.Connections, export.Pdus, export.Operations, export.Findings, export.Commands} {
		per := map[string]int64{}
		for _, r := range mustRead(t, dir, tb) {
			per[r["capture"].(string)]++
		}
		for name, w := range want {
			if per[name] != w[i+1] {
				t.Errorf("%s %s: %d rows, the process reported %d", name, tb.Name, per[name], w[i+1])
			}
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("captures table %v, reported %v", got, want)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*", "*", ".*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func mustRead(t *testing.T, dir string, tb *export.Table) []export.Row {
	t.Helper()
	rows, err := export.ReadTable(dir, tb)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestExportFlags: usage mistakes exit 1 with a message.
func TestExportFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--export", t.TempDir()},
		{"--export", t.TempDir(), "-r", "../../testdata/siw/rping.pcap", "tcp"},
		{"--export", t.TempDir(), "-T", "json", "-r", "../../testdata/siw/rping.pcap"},
		{"--export", t.TempDir(), "--each", "../../testdata/siw/rping.pcap", "../../testdata/gen/rping.pcap"}, // one name twice
		{"-r", "../../testdata/siw/rping.pcap", "-T", "fields"},
		{"-r", "../../testdata/siw/rping.pcap", "-T", "fields", "-e", "no.such"},
		{"-r", "../../testdata/siw/rping.pcap", "-T", "fields", "-e", "frame", "-E", "occurrence=2"},
	} {
		var stdout, stderr bytes.Buffer
		want := exitUsage
		if len(args) > 2 && args[2] == "--each" {
			want = exitError // the sets are read before the names clash
		}
		if code := run(args, &stdout, &stderr); code != want || stderr.Len() == 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr.String())
		}
	}
}

// TestGlossary: -G fields lists every field of the table.
func TestGlossary(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-G", "fields"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, name := range []string{"ddp.stag", "rdmap.term.cause", "mpa.crc_status", "frame"} {
		if !regexp.MustCompile(`(?m)^F\t[^\t]*\t` + regexp.QuoteMeta(name) + `\t`).MatchString(stdout.String()) {
			t.Errorf("-G fields lacks %s", name)
		}
	}
	if code := run([]string{"-G", "x"}, &stdout, &stderr); code != exitUsage {
		t.Errorf("-G x: exit %d", code)
	}
}

// TestFieldsOccurrence: several PDUs of one frame are occurrences; -E
// occurrence, aggregator and quote as tshark.
func TestFieldsOccurrence(t *testing.T) {
	file := packedCapture(t)
	line := func(opts ...string) map[string]string {
		var stdout, stderr bytes.Buffer
		args := append([]string{"-r", file, "-T", "fields", "-e", "frame", "-e", "ddp.msn"}, opts...)
		if code := run(args, &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		m := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
			f, v, _ := strings.Cut(l, "\t")
			m[strings.Trim(f, "'")] = v
		}
		return m
	}
	all, first, last := line(), line("-E", "occurrence=f"), line("-E", "occurrence=l")
	quoted := line("-E", "quote=s", "-E", "aggregator=/s")
	multi := 0
	for f, v := range all {
		vals := strings.Split(v, ",")
		if len(vals) < 2 {
			continue
		}
		multi++
		if first[f] != vals[0] || last[f] != vals[len(vals)-1] || quoted[f] != "'"+strings.Join(vals, " ")+"'" {
			t.Errorf("frame %s: all %q first %q last %q quoted %q", f, v, first[f], last[f], quoted[f])
		}
	}
	if multi == 0 {
		t.Fatal("no frame with several PDUs")
	}
	t.Logf("%d frames with several PDUs", multi)
}

// packedCapture generates Sends packed several to a segment.
func packedCapture(t *testing.T) string {
	t.Helper()
	sc, err := gen.Parse([]byte(`seed: 1
connections:
  - client: 10.0.0.1:40000
    server: 10.0.0.2:4791
    packing: pack
    mpa: {rev: 2, crc: true}
    ops:
      - {op: send, size: 100}
      - {op: send, size: 200}
      - {op: send, size: 300}
      - {op: send, size: 100}
      - {op: send, size: 50}
`), true)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "packed.pcap")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pw, err := pcap.NewWriter(f, pcap.FormatForName(file), layers.LinkTypeEthernet, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.Run(sc, pw, &gen.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := pw.Flush(); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestFrameFilter: -Y 'frame == N' shows what an export row points at:
// the PDUs and findings reported at frame N, nothing else.
func TestFrameFilter(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-r", "../../testdata/siw/term_read_badstag.pcap", "-Y", "frame == 9"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	for _, l := range lines {
		if !strings.HasPrefix(l, "9 ") {
			t.Errorf("line %q", l)
		}
	}
	if len(lines) < 2 || !strings.Contains(stdout.String(), "Terminate") {
		t.Errorf("frame 9:\n%s", stdout.String())
	}
}
