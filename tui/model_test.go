package tui

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/gen"
)

// genCapture writes a built-in scenario to dir/name (pcapng, gzip by the
// name).
func genCapture(t testing.TB, dir, scenario, name string, p gen.Params) string {
	t.Helper()
	sc, err := gen.Builtin(scenario, p)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if _, err := gen.WriteFile(path, sc, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

// want is what the pipeline hands out, straight: per row, the frames and
// the PDU's summary and wire octets.
type wantRow struct {
	kind        analyze.Kind
	first, last int
	summary     string
	wire        []byte
	code        string
}

type collector struct{ rows []wantRow }

func (c *collector) Record(r *analyze.Record) {
	switch r.Kind {
	case analyze.KindPDU:
		c.rows = append(c.rows, wantRow{kind: r.Kind, first: r.FirstFrame, last: r.LastFrame,
			summary: string(r.PDU.PDU.AppendSummary(nil)), wire: append([]byte(nil), r.PDU.Wire...)})
	case analyze.KindFinding:
		c.rows = append(c.rows, wantRow{kind: r.Kind, first: r.FirstFrame, last: r.LastFrame, code: r.Finding.Code.String()})
	}
}

func pipeline(t testing.TB, path string) []wantRow {
	src, _, err := analyze.OpenFiles([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	c := &collector{}
	if _, err := analyze.Run(src, analyze.Config{Workers: 1}, c); err != nil {
		t.Fatal(err)
	}
	return c.rows
}

// TestIndexAndLazyDecode: the index has a row per PDU and finding the
// pipeline hands out, and every PDU decoded again from its frames has the
// pipeline's wire octets and summary: for plain pcap (read in place),
// pcapng and gzip (spilled).
func TestIndexAndLazyDecode(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ scenario, name string }{
		{"mixed", "mixed.pcap"},
		{"read-heavy", "readheavy.pcapng"}, // markers toward the responder
		{"every-terminate", "term.pcap.gz"},
		{"hostile", "hostile.pcap"}, // gaps, partial FPDUs, bad CRCs
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := genCapture(t, dir, tc.scenario, tc.name, gen.Params{Seed: 1, Count: 6})
			want := pipeline(t, path)
			s, err := Open(Config{File: path})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			s.Wait()
			if _, _, done, err := s.Ix.Progress(); !done || err != nil {
				t.Fatalf("index done %v err %v", done, err)
			}
			if s.Ix.Len() != len(want) {
				t.Fatalf("%d rows, pipeline %d", s.Ix.Len(), len(want))
			}
			l := &loader{ix: s.Ix}
			pdus, markers := 0, 0
			for i, w := range want {
				r := s.Ix.Row(i)
				if int(r.First) != w.first || int(r.Last) != w.last {
					t.Fatalf("row %d frames %d-%d, pipeline %d-%d", i, r.First, r.Last, w.first, w.last)
				}
				if w.kind == analyze.KindFinding {
					if r.Kind != RowFinding || s.Ix.Finding(int(r.Aux)).Code.String() != w.code {
						t.Fatalf("row %d: not finding %s", i, w.code)
					}
					continue
				}
				d := l.Load(i)
				if d.Err != nil {
					t.Fatalf("row %d: %v", i, d.Err)
				}
				if !bytes.Equal(d.Wire, w.wire) {
					t.Fatalf("row %d: wire differs (%d vs %d octets)", i, len(d.Wire), len(w.wire))
				}
				if got := string(d.PDU.AppendSummary(nil)); got != w.summary {
					t.Fatalf("row %d: summary\n got %s\nwant %s", i, got, w.summary)
				}
				pdus++
				markers += len(d.PDU.Markers)
				// Every line with octets names octets inside the PDU.
				for _, ln := range d.Lines {
					if ln.Len > 0 && ln.Off+ln.Len > len(d.Wire) {
						t.Fatalf("row %d: line %q spans %d+%d of %d", i, ln.Text, ln.Off, ln.Len, len(d.Wire))
					}
				}
			}
			if pdus == 0 {
				t.Fatal("no PDUs")
			}
			if tc.scenario == "read-heavy" && markers == 0 {
				t.Fatal("no markers decoded")
			}
		})
	}
}

// TestIndexSameForWorkers: the index built on 2 and 3 workers (the
// sharded pipeline, its records handed out in capture order) is the one
// built on one: rows, findings, operations, connections, the STag ledger
// and the storage commands.
func TestIndexSameForWorkers(t *testing.T) {
	dir := t.TempDir()
	paths := []string{"../testdata/siw/crc_rping.pcap",
		genCapture(t, dir, "mixed", "mixed.pcap", gen.Params{Seed: 2, Count: 30, Conns: 6}),
		genCapture(t, dir, "hostile", "hostile.pcap", gen.Params{Seed: 3, Count: 30}),
	}
	ulpCaps, _ := filepath.Glob("../testdata/ulp/*.pcap")
	paths = append(paths, ulpCaps...)
	type snapshot struct {
		Rows     []Row
		TCP      []Row
		Findings []Finding
		Ops      []Op
		Conns    []ConnInfo
		STags    []STagUse
		Cmds     []Cmd
	}
	index := func(path string, workers int) string {
		s, err := Open(Config{File: path, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		s.Wait()
		if _, _, _, err := s.Ix.Progress(); err != nil {
			t.Fatal(err)
		}
		var sn snapshot
		for i := 0; i < s.Ix.Len(); i++ {
			sn.Rows = append(sn.Rows, s.Ix.Row(i))
		}
		for i := 0; i < s.Ix.TCPLen(); i++ {
			sn.TCP = append(sn.TCP, s.Ix.Row(tcpBase+i))
		}
		sn.Findings, sn.Ops, sn.Conns, sn.STags, sn.Cmds = s.Ix.Findings(), s.Ix.Ops(), s.Ix.Conns(), s.Ix.STags(), s.Ix.Cmds()
		for i := range sn.Conns {
			sn.Conns[i].Stats = nil // a pointer; the report's tables are analyze's to compare
		}
		return fmt.Sprintf("%+v", sn)
	}
	stags, tcpRows := 0, 0
	for _, path := range paths {
		one := index(path, 1)
		stags += strings.Count(one, "Roles:")
		tcpRows += strings.Count(one, "Kind:16 ")
		for _, w := range []int{2, 3} {
			if got := index(path, w); got != one {
				i := 0
				for i < len(got) && i < len(one) && got[i] == one[i] {
					i++
				}
				t.Fatalf("%s: index on %d workers differs from one worker's at octet %d:\n got  %.300s\n want %.300s", path, w, i, got[max(0, i-100):], one[max(0, i-100):])
			}
		}
	}
	if stags == 0 || tcpRows == 0 {
		t.Errorf("%d STag ledger entries, %d TCP rows over the captures", stags, tcpRows)
	}
}
