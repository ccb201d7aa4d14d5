package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/endpoint"
	"github.com/iwkit/iwkit/endpoint/conform"
	"github.com/iwkit/iwkit/endpoint/rping"
	"github.com/iwkit/iwkit/internal/exitcode"
)

// The command against an iwkit target: --json rows with a verdict key,
// exit status 0; an unreachable target is a setup failure per case.
// target runs an iwkit rping target (what --serve runs) until the test
// ends and returns its address.
func target(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := endpoint.Listen(ctx, "tcp", "127.0.0.1:0", &endpoint.Config{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		conform.Serve(ctx, ln, rping.Options{Timeout: 5 * time.Second}, nil)
	}()
	t.Cleanup(func() { cancel(); ln.Close(); <-done })
	return ln.Addr().String()
}

func TestJSONAgainstIwkit(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"--json", "--crc", "--start-delay", "1ms", target(t)}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, out.String(), errb.String())
	}
	sc := bufio.NewScanner(&out)
	n := 0
	var summary map[string]any
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if summary != nil {
			t.Fatalf("a line after the summary: %s", sc.Text())
		}
		if s, ok := m["summary"].(map[string]any); ok {
			summary = s
			continue
		}
		for _, k := range []string{"id", "clause", "sent", "expected", "got", "verdict"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("row without %q: %s", k, sc.Text())
			}
		}
		v := m["verdict"]
		if v != "pass" && !(v == "skip" && m["reason"] != nil) {
			t.Fatalf("row %s", sc.Text())
		}
		n++
	}
	if n != len(conform.Cases()) {
		t.Fatalf("%d rows", n)
	}
	if summary == nil || summary["cases"] != float64(n) || summary["fail"] != 0.0 || summary["error"] != 0.0 ||
		summary["pass"].(float64)+summary["skip"].(float64) != float64(n) {
		t.Fatalf("summary %v for %d rows", summary, n)
	}
	// A dead target: the first case cannot connect, an error (not a
	// fail), and the run stops with the cause: a failure, exit 1 (2 is
	// usage only, package exitcode).
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := l.Addr().String()
	l.Close()
	out.Reset()
	if code := run([]string{"--timeout", "200ms", "--run", "ddp-qn,ddp-msn", dead}, &out, &errb); code != exitcode.Failure || !strings.Contains(out.String(), "error (connecting") ||
		!strings.Contains(out.String(), "not-run (the target stopped answering at ddp-qn") || !strings.Contains(out.String(), "0 pass, 0 fail, 0 skip, 1 error, 1 not run") {
		t.Fatalf("dead target: exit %d\n%s", code, out.String())
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"--bogus"}, exitcode.Usage},
		{[]string{"--help"}, exitcode.OK},
		{[]string{"--repeat", "0", dead}, exitcode.Usage},
		{[]string{dead, "extra"}, exitcode.Usage},
		{[]string{"--run", "no-such-case", dead}, exitcode.Usage},
		{[]string{"--serve", "256.0.0.1:1"}, exitcode.Failure},                        // cannot listen: not usage
		{[]string{"--listen", "--timeout", "200ms", "256.0.0.1:1"}, exitcode.Failure}, // likewise
	} {
		if code := run(c.args, &out, &errb); code != c.code {
			t.Errorf("%v: exit %d, want %d (%s)", c.args, code, c.code, errb.String())
		}
	}
}

// The JUnit schema's shape as CI servers read it, declared here apart
// from the writer's types.
type jSuites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Skipped  int      `xml:"skipped,attr"`
	Time     float64  `xml:"time,attr"`
	Suites   []struct {
		Name     string  `xml:"name,attr"`
		Tests    int     `xml:"tests,attr"`
		Failures int     `xml:"failures,attr"`
		Errors   int     `xml:"errors,attr"`
		Skipped  int     `xml:"skipped,attr"`
		Time     float64 `xml:"time,attr"`
		Cases    []struct {
			Name      string  `xml:"name,attr"`
			Classname string  `xml:"classname,attr"`
			Time      float64 `xml:"time,attr"`
			Failure   []struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
			Error []struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
			Skipped []struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
			SystemOut string `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// readJUnit parses a --junit file and checks that its counts are its
// test cases' and each case has at most one outcome.
func readJUnit(t *testing.T, path string) jSuites {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc jSuites
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d test suites", len(doc.Suites))
	}
	ts := doc.Suites[0]
	var f, e, s int
	for _, c := range ts.Cases {
		if len(c.Failure)+len(c.Error)+len(c.Skipped) > 1 || c.Name == "" || c.Classname == "" || c.Time < 0 {
			t.Fatalf("test case %+v", c)
		}
		f, e, s = f+len(c.Failure), e+len(c.Error), s+len(c.Skipped)
	}
	if ts.Tests != len(ts.Cases) || ts.Failures != f || ts.Errors != e || ts.Skipped != s ||
		doc.Tests != ts.Tests || doc.Failures != f || doc.Errors != e || doc.Skipped != s || doc.Time != ts.Time {
		t.Fatalf("counts: suites %+v; %d cases, %d failures, %d errors, %d skipped", doc, len(ts.Cases), f, e, s)
	}
	return doc
}

// --junit writes what CI reads: passes and a skip against an iwkit
// target, with --repeat each run its own test case and the evidence
// (pcap, Terminate) in system-out; an error and a not-run case against a
// dead one (issue 31, missing item 2).
func TestJUnit(t *testing.T) {
	addr := target(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "junit.xml")
	var out, errb bytes.Buffer
	if code := run([]string{"--junit", path, "--repeat", "2", "--pcap-dir", dir, "--run", "ddp-qn,mpa-crc-byte-order", addr}, &out, &errb); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	doc := readJUnit(t, path)
	ts := doc.Suites[0]
	if ts.Tests != 4 || ts.Skipped != 2 || ts.Failures != 0 || ts.Errors != 0 {
		t.Fatalf("%+v", ts)
	}
	names := map[string]string{}
	for _, c := range ts.Cases {
		names[c.Name] = c.SystemOut
	}
	for _, n := range []string{"ddp-qn#1", "ddp-qn#2", "mpa-crc-byte-order#1", "mpa-crc-byte-order#2"} {
		if _, ok := names[n]; !ok {
			t.Fatalf("no test case %s: %v", n, names)
		}
	}
	if so := names["ddp-qn#2"]; !strings.Contains(so, "pcap: "+filepath.Join(dir, "ddp-qn-2.pcap")) || !strings.Contains(so, "terminate: 1201") {
		t.Fatalf("ddp-qn#2's evidence: %q", so)
	}
	if !strings.Contains(out.String(), "4 cases: 2 pass, 0 fail, 2 skip, 0 error, 0 not run") {
		t.Fatalf("summary line:\n%s", out.String())
	}

	l, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := l.Addr().String()
	l.Close()
	if code := run([]string{"--junit", path, "--timeout", "200ms", "--run", "ddp-qn,ddp-msn", dead}, &out, &errb); code != exitcode.Failure {
		t.Fatalf("dead target: exit %d", code)
	}
	doc = readJUnit(t, path)
	if ts := doc.Suites[0]; ts.Tests != 2 || ts.Errors != 1 || ts.Skipped != 1 || !strings.HasPrefix(ts.Cases[1].Skipped[0].Message, "not-run: the target stopped answering") {
		t.Fatalf("dead target: %+v", ts)
	}
}

// TestFuzzMode: --fuzz against the iwkit target runs the inputs asked for,
// writes one log line and one pcap per input, reports a JSON summary and
// exits 0 (the target lived); --replay of a hand-written case (a
// peer-to-peer Request, the Reply, a reset) exits 0 against it too, and
// 2 for a case file that names an unknown field.
func TestFuzzMode(t *testing.T) {
	addr := target(t)
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := run([]string{"--fuzz", dir, "--fuzz-inputs", "12", "--seed", "3", "--timeout", "2s", addr}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, out.String(), errb.String())
	}
	var rep struct {
		Inputs int  `json:"inputs"`
		Died   bool `json:"died"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Inputs != 12 || rep.Died {
		t.Fatalf("report %q: %+v %v", out.String(), rep, err)
	}
	pcaps, _ := filepath.Glob(filepath.Join(dir, "inputs", "*.pcap"))
	b, _ := os.ReadFile(filepath.Join(dir, "log.ndjson"))
	if len(pcaps) != 12 || strings.Count(string(b), "\n") != 12 {
		t.Errorf("%d pcaps, log %q", len(pcaps), b)
	}
	cas := filepath.Join(dir, "p2p-reset.json")
	os.WriteFile(cas, []byte(`{"inputs":[{"request":[{"f":"v2.a","v":1}],"steps":[{"op":"await"},{"op":"reset"}]}]}`), 0o644)
	out.Reset()
	if code := run([]string{"--replay", cas, "--fuzz", dir, addr}, &out, &errb); code != 0 || !strings.Contains(out.String(), "lived through") {
		t.Errorf("replay: exit %d: %s %s", code, out.String(), errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "replay.pcap")); err != nil {
		t.Error(err)
	}
	os.WriteFile(cas, []byte(`{"inputs":[{"request":[{"f":"v9.z","v":1}],"steps":[]}]}`), 0o644)
	errb.Reset()
	if code := run([]string{"--replay", cas, addr}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unknown MPA Request field "v9.z"`) {
		t.Errorf("bad case: exit %d: %s", code, errb.String())
	}
}
