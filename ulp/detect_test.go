package ulp_test

import (
	"bytes"
	"fmt"
	"github.com/iwkit/iwkit/finding"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/filter"
	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/ulp"
)

// ulpOnly records what the ULP layer added to a run.
type ulpOnly struct {
	protos   map[string]int
	undec    int
	findings []string
	cmds     int
}

func (u *ulpOnly) Record(r *analyze.Record) {
	switch r.Kind {
	case analyze.KindPDU:
		if r.ULP != nil {
			u.protos[r.ULP.Proto.String()]++
			if strings.Contains(string(r.ULP.Summary), "undecoded") {
				u.undec++
			}
		}
	case analyze.KindFinding:
		if c := r.Finding.Code.String(); severityOf(c) != "?" { // a ULP code
			u.findings = append(u.findings, c)
		}
	case analyze.KindCommand:
		u.cmds++
	}
}

func runULP(t *testing.T, data []byte) *ulpOnly {
	t.Helper()
	src, err := pcap.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	u := &ulpOnly{protos: map[string]int{}}
	if _, err := analyze.Run(src, analyze.Config{}, u); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestNoFalsePositives: plain RDMA traffic (perftest, rping, the
// generator's scenarios) decodes with no ULP layer and no ULP finding.
// Wireshark's RPC-over-RDMA heuristic accepts a Send on its version word
// alone and calls ordinary iSER and perftest Sends malformed; this one
// must not.
func TestNoFalsePositives(t *testing.T) {
	var files []string
	for _, g := range []string{"../testdata/siw/*.pcap", "../testdata/gen/*.pcap", "../testdata/gen/impaired/*.pcapng"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	if len(files) < 5 {
		t.Fatalf("only %d plain captures found", len(files))
	}
	check := func(name string, data []byte) {
		u := runULP(t, data)
		if len(u.protos) != 0 || len(u.findings) != 0 || u.cmds != 0 {
			t.Errorf("%s: ULP layer fired on plain RDMA traffic: %v, findings %v, %d commands", name, u.protos, u.findings, u.cmds)
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		check(filepath.Base(f), data)
	}
	for _, b := range gen.Builtins() {
		sc, err := gen.Builtin(b[0], gen.Params{Seed: 11})
		if err != nil {
			t.Fatal(err)
		}
		check("builtin "+b[0], genPcap(t, sc))
	}
}

// TestContentDetection moves every generated ULP scenario off its
// well-known port: the protocol must still be found (MPA private data or
// the first Sends, ulp-reference.md §5.2), never another one.
func TestContentDetection(t *testing.T) {
	for _, tc := range []struct {
		want string
		sc   *gen.Scenario
	}{
		{"nvme", nvmeScenario()}, {"rpcrdma", rpcScenario()}, {"iser", iserScenario()}, {"smbd", smbScenario()},
	} {
		for i := range tc.sc.Connections {
			tc.sc.Connections[i].Server = fmt.Sprintf("10.0.0.2:%d", 7000+i)
		}
		u := runULP(t, genPcap(t, tc.sc))
		if len(u.protos) != 1 || u.protos[tc.want] == 0 || u.undec > 0 {
			t.Errorf("%s off its port: decoded as %v (%d undecoded)", tc.want, u.protos, u.undec)
		}
	}
}

// TestDecodeAsWrongGuess forces each protocol on the others' captures: a
// wrong guess never becomes an error, only undecoded payload.
func TestDecodeAsWrongGuess(t *testing.T) {
	caps := map[string][]byte{"nvme": genPcap(t, nvmeScenario()), "rpcrdma": genPcap(t, rpcScenario()), "iser": genPcap(t, iserScenario()), "smbd": genPcap(t, smbScenario())}
	ports := map[string]uint16{"nvme": 4420, "rpcrdma": 20049, "iser": 3260, "smbd": 5445}
	for capName, data := range caps {
		for _, p := range ulp.Protos() {
			if p == capName {
				continue
			}
			proto, _ := ulp.ParseProto(p)
			src, _ := pcap.NewReader(bytes.NewReader(data))
			u := &ulpOnly{protos: map[string]int{}}
			cfg := analyze.Config{DecodeAs: map[uint16]ulp.Proto{ports[capName]: proto}}
			if _, err := analyze.Run(src, cfg, u); err != nil {
				t.Fatal(err)
			}
			for _, f := range u.findings {
				if sev := severityOf(f); sev == "error" {
					t.Errorf("%s forced on %s: error finding %s", p, capName, f)
				}
			}
		}
	}
}

// severityOf is a ULP code's severity, "?" for the other stages' codes.
func severityOf(name string) string {
	code, ok := finding.Lookup(name)
	if !ok || code.Info().Stage != finding.StageULP {
		return "?"
	}
	return code.Severity().String()
}

// TestFieldTable: names unique, prefixes contiguous (one JSON object each).
func TestFieldTable(t *testing.T) {
	fs := ulp.Fields()
	seen := map[string]bool{}
	closed := map[string]bool{}
	prev := []string{}
	for _, f := range fs {
		if seen[f.Name] {
			t.Errorf("field %s twice", f.Name)
		}
		seen[f.Name] = true
		if _, ok := decode.FieldByName(f.Name); ok {
			t.Errorf("field %s also in decode's table", f.Name)
		}
		parts := strings.Split(f.Name, ".")
		dirs := parts[:len(parts)-1]
		k := 0
		for k < len(prev) && k < len(dirs) && prev[k] == dirs[k] {
			k++
		}
		for j := len(prev); j > k; j-- {
			closed[strings.Join(prev[:j], ".")] = true
		}
		for j := k + 1; j <= len(dirs); j++ {
			if p := strings.Join(dirs[:j], "."); closed[p] {
				t.Errorf("field %s reopens object %s", f.Name, p)
			}
		}
		prev = dirs
	}
}

// filterCount counts the PDU records a display filter keeps.
type filterCount struct {
	f *filter.Filter[*analyze.Record]
	n int
}

func (c *filterCount) Record(r *analyze.Record) {
	if r.Kind == analyze.KindPDU && c.f.Match(r) {
		c.n++
	}
}

func TestDisplayFilters(t *testing.T) {
	data := genPcap(t, nvmeScenario())
	for expr, want := range map[string]int{
		`nvme.opcode == "Write"`:     2,
		`nvme`:                       21,
		`nvme.sgl.key == 0x48bc2e10`: 1,
		`ulp.rdma_octets == 32768`:   2,
		`nvme.type == "response" && ulp.latency_ns > 0`: 8,
		`iscsi || smb2 || rpc`:                          0,
	} {
		f, err := analyze.CompileFilter(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		src, _ := pcap.NewReader(bytes.NewReader(data))
		c := &filterCount{f: f}
		if _, err := analyze.Run(src, analyze.Config{}, c); err != nil {
			t.Fatal(err)
		}
		if c.n != want {
			t.Errorf("-Y '%s': %d PDUs, want %d", expr, c.n, want)
		}
	}
}

// TestSnaplen: with every frame cut to 300 octets (tcpdump -s 300) the
// Sends are decoded from what was captured, the data moved still counts
// what the wire carried, and nothing turns into a finding.
func TestSnaplen(t *testing.T) {
	sc := nvmeScenario()
	sc.Snaplen = 300
	col, _ := analyzeBytes(t, genPcap(t, sc), analyze.Config{})
	var ulpCodes []string
	for _, f := range col.findings {
		if severityOf(f) != "?" {
			ulpCodes = append(ulpCodes, f)
		}
	}
	col.findings = ulpCodes // tcp.gap and track's are the snaplen's, not the ULP's
	got := checkClean(t, col, []string{"NVMe Write cid 8193 nsid 1 lba 2048 len 8 key 0x48bc2e10", "NVMe Write cid 12292 nsid 1 lba 8 len 1 icd 4096"})
	if c := got["Read"]; c.moved != 32768 {
		t.Errorf("Read under snaplen: %+v", c)
	}
}
