package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/gen"
)

// jsonFinding is a finding line of -T json.
type jsonFinding struct {
	Frame   int `json:"frame"`
	Finding *struct {
		Severity string `json:"severity"`
		Code     string `json:"code"`
		Message  string `json:"message"`
	} `json:"finding"`
}

// dumpFindings runs iwdump -T json on path and returns its findings.
func dumpFindings(t *testing.T, path string) []jsonFinding {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run([]string{"-r", path, "-T", "json"}, &out, &errb); code != exitOK {
		t.Fatalf("%s: exit %d: %s", path, code, errb.String())
	}
	var fs []jsonFinding
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var f jsonFinding
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatalf("%s: %v: %s", path, err, sc.Bytes())
		}
		if f.Finding != nil {
			fs = append(fs, f)
		}
	}
	return fs
}

// writeGenerated writes built-in scenario name with random impairments to
// a file in dir: traffic that makes the reassembler resync, skip and give up.
func writeGenerated(t *testing.T, dir, name string, seed uint64) string {
	t.Helper()
	sc, err := gen.Builtin(name, gen.Params{Seed: seed, Count: 30, Size: 6000, Conns: 2})
	if err != nil {
		t.Fatal(err)
	}
	sc.Rates = gen.Rates{Drop: 0.03, Reorder: 0.03, RetransmitDiff: 0.02, CorruptCRC: 0.02, CorruptHeader: 0.04}
	path := filepath.Join(dir, name+".pcap")
	if _, err := gen.WriteFile(path, sc, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

// Every finding iwdump prints, from whichever stage, has a code of the
// catalogue and the catalogue's severity for it.
func TestFindingsFromCatalogue(t *testing.T) {
	var paths []string
	for _, pat := range []string{"siw/*.pcap", "gen/*.pcap", "gen/impaired/*.pcapng"} {
		m, err := filepath.Glob(filepath.Join("../../testdata", pat))
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	dir := t.TempDir()
	for _, name := range []string{"mixed", "hostile", "bulk-write"} {
		paths = append(paths, writeGenerated(t, dir, name, 7))
	}
	if len(paths) < 10 {
		t.Fatalf("only %d captures", len(paths))
	}
	seen := map[finding.Stage]map[string]bool{}
	for _, path := range paths {
		for _, f := range dumpFindings(t, path) {
			c, ok := finding.Lookup(f.Finding.Code)
			if !ok {
				t.Errorf("%s frame %d: code %q is not in the catalogue", filepath.Base(path), f.Frame, f.Finding.Code)
				continue
			}
			if sev := c.Severity().String(); f.Finding.Severity != sev {
				t.Errorf("%s frame %d: %s with severity %s, the catalogue's is %s", filepath.Base(path), f.Frame, c, f.Finding.Severity, sev)
			}
			st := c.Info().Stage
			if seen[st] == nil {
				seen[st] = map[string]bool{}
			}
			seen[st][f.Finding.Code] = true
		}
	}
	t.Logf("codes seen: %v", seen)
	// The captures exercise both stages that print findings.
	if len(seen[finding.StageReassembly]) < 3 || len(seen[finding.StageTrack]) < 10 {
		t.Errorf("codes seen: %v", seen)
	}
}

// The generator's truth for the committed impaired samples names the
// findings iwdump raises: each at the frame the truth gives, and no error
// or warning that the truth lacks.
func TestFindingsMatchGenTruth(t *testing.T) {
	samples, err := filepath.Glob("../../testdata/gen/impaired/*.pcapng")
	if err != nil || len(samples) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	type key struct {
		code  finding.Code
		frame int
	}
	for _, path := range samples {
		name := filepath.Base(path)
		b, err := os.ReadFile(path[:len(path)-len(".pcapng")] + ".truth.json")
		if err != nil {
			t.Fatal(err)
		}
		var truth gen.Truth
		if err := json.Unmarshal(b, &truth); err != nil {
			t.Fatalf("%s truth: %v", name, err)
		}
		got := map[key]int{}
		for _, f := range dumpFindings(t, path) {
			c, _ := finding.Lookup(f.Finding.Code)
			got[key{c, f.Frame}]++
		}
		want := map[key]int{}
		for _, f := range truth.Findings {
			if f.Frame == 0 {
				continue // the offending octets are not in the capture
			}
			if f.Severity != f.Code.Severity() {
				t.Errorf("%s: truth has %s as %s, the catalogue %s", name, f.Code, f.Severity, f.Code.Severity())
			}
			k := key{f.Code, f.Frame}
			want[k]++
			// iwdump compares in-order retransmissions with what was
			// delivered only with reassembly.Config.RetransCheck, which
			// it leaves off (it costs a copy of every octet); the truth's
			// inconsistent retransmissions are of delivered octets.
			if f.Code == finding.TCPRetransInconsistent {
				continue
			}
			if got[k] == 0 {
				t.Errorf("%s: truth's %s at frame %d not raised (%s)", name, f.Code, f.Frame, f.Message)
			}
		}
		for k, n := range got {
			if k.code.Severity() >= finding.Warning && n > want[k] {
				t.Errorf("%s: %s at frame %d raised %d times, the truth has %d", name, k.code, k.frame, n, want[k])
			}
		}
	}
}
