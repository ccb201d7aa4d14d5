package tui

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/analyze"
)

// pduCounter counts the PDU records of a run (iwdump's lines).
type pduCounter struct{ n int }

func (c *pduCounter) Record(r *analyze.Record) {
	if r.Kind == analyze.KindPDU {
		c.n++
	}
}

// writeFiltered opens path, applies the display filter expr and writes the
// rows shown with the save path (w), to out.
func writeFiltered(t *testing.T, path, expr, out string) int {
	t.Helper()
	s, err := Open(Config{File: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Wait()
	fr := applyFilter(t, s, expr) // commands_test.go
	l := newList(s.Ix)
	l.SetFilter(fr)
	n, err := WriteRows(s.Ix, l, out)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestReopenMidStream (issue 29 bug 5): a file written with w from a
// filtered list starts mid-stream. Reopened (also with --decode-as), it
// gives the PDUs the pipeline iwdump runs gives (the analyzer recovers
// MPA mid-stream where a CRC vouches for the FPDUs); where nothing
// decodes (siw's CRC-off rping, its Sends alone) the status line says why
// instead of a bare "rows 0/0".
func TestReopenMidStream(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		capture, expr string
		ports         []uint16
		empty         bool
	}{
		{"crc_rping.pcap", `rdmap.opcode == 3`, nil, false},
		{"crc_rping.pcap", `rdmap.opcode == 3`, []uint16{7170}, false},
		{"crc_ib_read_bw_4096.pcap", `rdmap.opcode == 2`, nil, false},
		{"rping.pcap", `rdmap.opcode == 3`, nil, true},
		{"rping.pcap", `rdmap.opcode == 3`, []uint16{7170}, true},
	} {
		out := filepath.Join(dir, "w-"+c.capture)
		n := writeFiltered(t, filepath.Join("../testdata/siw", c.capture), c.expr, out)
		src, _, err := analyze.OpenFiles([]string{out})
		if err != nil {
			t.Fatal(err)
		}
		want := &pduCounter{}
		if _, err := analyze.Run(src, analyze.Config{Ports: c.ports, Workers: 1}, want); err != nil {
			t.Fatal(err)
		}
		src.Close()
		s, err := Open(Config{File: out, Ports: c.ports}) // --decode-as PORT
		if err != nil {
			t.Fatal(err)
		}
		s.Wait()
		sc := screenFor(t, s)
		status := sc.u.statusText()
		pdus := 0
		for i := 0; i < s.Ix.Len(); i++ {
			if s.Ix.Row(i).Kind != RowFinding {
				pdus++
			}
		}
		t.Logf("%s %s ports %v: wrote %d frames; %d PDU rows, the pipeline %d; %s", c.capture, c.expr, c.ports, n, pdus, want.n, status)
		if pdus != want.n {
			t.Errorf("%s: %d PDU rows, the pipeline decodes %d", c.capture, pdus, want.n)
		}
		if c.empty != (pdus == 0) {
			t.Errorf("%s: %d PDU rows, want empty %v", c.capture, pdus, c.empty)
		}
		if s.Ix.Len() == 0 && !strings.Contains(status, "nothing decoded: 20 frames, 20 TCP segments in 1 flows, none taken for iWARP: no MPA Request or Reply") {
			t.Errorf("%s: rows 0 and the status line says not why: %s", c.capture, status)
		}
		s.Close()
	}
}
