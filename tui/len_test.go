package tui

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/analyze"
)

type lenCollector struct{ want []string }

func (c *lenCollector) Record(r *analyze.Record) {
	if r.Kind != analyze.KindPDU || r.PDU.PDU.IsMPAFrame {
		return
	}
	if n, ok := r.PDU.PDU.PayloadLen(); ok {
		c.want = append(c.want, " len "+strconv.Itoa(n))
	} else {
		c.want = append(c.want, " ulpdu_length "+strconv.Itoa(int(r.PDU.PDU.FPDU.ULPDULength)))
	}
}

// TestRowLenIsPayload: the list row's "len" of every FPDU of the committed
// captures is its payload (decode.PDU.PayloadLen), as iwdump's summary
// says "len"; where the headers do not decode it says ulpdu_length.
func TestRowLenIsPayload(t *testing.T) {
	var paths []string
	for _, pat := range []string{"../testdata/siw/*.pcap", "../testdata/ulp/*.pcap", "../testdata/gen/*.pcap"} {
		m, _ := filepath.Glob(pat)
		paths = append(paths, m...)
	}
	checked := 0
	for _, path := range paths {
		src, _, err := analyze.OpenFiles([]string{path})
		if err != nil {
			t.Fatal(err)
		}
		c := &lenCollector{}
		if _, err := analyze.Run(src, analyze.Config{Workers: 1}, c); err != nil {
			t.Fatal(err)
		}
		src.Close()
		s, err := Open(Config{File: path})
		if err != nil {
			t.Fatal(err)
		}
		s.Wait()
		k := 0
		for i := 0; i < s.Ix.Len(); i++ {
			r := s.Ix.Row(i)
			if r.Kind != RowFPDU {
				continue
			}
			sum := string(s.Ix.appendRowSummary(nil, &r))
			if k >= len(c.want) || !strings.Contains(sum+" ", c.want[k]+" ") {
				t.Fatalf("%s row %d %q: want %q", path, i, sum, c.want[min(k, len(c.want)-1)])
			}
			k++
			checked++
		}
		s.Close()
		if k != len(c.want) {
			t.Fatalf("%s: %d FPDU rows, %d FPDUs", path, k, len(c.want))
		}
	}
	if checked < 1000 {
		t.Fatalf("%d rows checked", checked)
	}
}
