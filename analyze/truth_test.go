package analyze

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/pcap"
)

// genTruth writes sc to a pcap in a temporary directory and returns its
// path and gen's ground truth.
func genTruth(t *testing.T, sc *gen.Scenario) (string, *gen.Truth) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "g.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := pcap.NewWriter(f, pcap.FormatPcap, layers.LinkTypeEthernet, 0)
	if err != nil {
		t.Fatal(err)
	}
	var col gen.Collector
	if _, err := gen.Run(sc, w, &gen.Options{Truth: &col}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return path, &col.T
}

// countRecords runs the pipeline over path and counts finding codes and
// whole FPDUs.
func countRecords(t *testing.T, path string, workers int) (map[finding.Code]int, int, *Report) {
	t.Helper()
	src, _, err := OpenFiles([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	// One tally per shard: with Workers > 1 the consumers run on the
	// shards' goroutines at once.
	type tally struct {
		got   map[finding.Code]int
		fpdus int
	}
	var tallies []*tally
	rep, err := RunOrdered(src, Config{Workers: workers}, Output{W: bufio.NewWriter(io.Discard)}, func(int, *Out) Consumer {
		c := &tally{got: map[finding.Code]int{}}
		tallies = append(tallies, c)
		return consumerFunc(func(r *Record) {
			switch r.Kind {
			case KindFinding:
				c.got[r.Finding.Code]++
			case KindPDU:
				if !r.PDU.PDU.IsMPAFrame && r.PDU.Missing == 0 {
					c.fpdus++
				}
			}
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	got, fpdus := map[finding.Code]int{}, 0
	for _, c := range tallies {
		for k, n := range c.got {
			got[k] += n
		}
		fpdus += c.fpdus
	}
	return got, fpdus, rep
}

// TestCRCByteSwappedCapture: gen's byte-swapped-CRC option on CRC-on
// scenarios, in order and with capture loss. Every FPDU gen wrote is
// delivered (less those the loss touched), each with mpa.crc_bad, one
// mpa.crc_byte_order per connection direction, and the framing is never
// lost (issue 20 item 1; before, framing was lost at the first odd header
// and the rest of the direction skipped).
func TestCRCByteSwappedCapture(t *testing.T) {
	for _, tc := range []struct {
		scenario string
		rates    gen.Rates
	}{
		{"bulk-write", gen.Rates{}},
		{"mixed", gen.Rates{}},
		{"mixed", gen.Rates{CorruptHeader: 0.04, Drop: 0.01}},
	} {
		sc, err := gen.Builtin(tc.scenario, gen.Params{Seed: 2, Count: 20, Size: 6000, Conns: 2})
		if err != nil {
			t.Fatal(err)
		}
		sc.Rates = tc.rates
		for i := range sc.Connections {
			sc.Connections[i].MPA.CRCByteSwapped = true
		}
		path, truth := genTruth(t, sc)
		want := map[finding.Code]int{}
		for _, f := range truth.Findings {
			want[f.Code]++
		}
		for _, workers := range []int{1, 2} {
			got, fpdus, rep := countRecords(t, path, workers)
			name := tc.scenario
			if tc.rates != (gen.Rates{}) {
				name += "+impairments"
			}
			if want[finding.MPACRCByteOrder] == 0 || got[finding.MPACRCByteOrder] != want[finding.MPACRCByteOrder] {
				t.Errorf("%s workers %d: %d mpa.crc_byte_order, gen's truth has %d", name, workers, got[finding.MPACRCByteOrder], want[finding.MPACRCByteOrder])
			}
			if got[finding.MPAFramingLost] != 0 {
				t.Errorf("%s workers %d: framing lost %d times", name, workers, got[finding.MPAFramingLost])
			}
			// Every whole FPDU is crc bad (the tracker reports the first
			// 100 per connection, Limits.FindingsPerCode; the reassembly
			// counts all).
			n := len(truth.FPDUs)
			if fpdus*100 < n*95 || rep.Asm.CRCBad != uint64(fpdus) || got[finding.MPACRCBad] == 0 {
				t.Errorf("%s workers %d: %d FPDUs of gen's %d, %d crc bad", name, workers, fpdus, n, rep.Asm.CRCBad)
			}
			t.Logf("%s workers %d: %d of %d FPDUs, %d crc bad, %d crc_byte_order", name, workers, fpdus, n, rep.Asm.CRCBad, got[finding.MPACRCByteOrder])
		}
	}
}

// TestGapCountsAgree: -z conv's gap column (track's DirStats.Gaps) and the
// reassembly summary (reassembly.Stats.Gaps) count the same thing: holes
// in the captured TCP stream. Regions skipped while resynchronising are
// counted apart (DirStats.Skips, Stats.SkippedBytes). Issue 20 item 2:
// before, every resync after a gap counted twice in -z conv.
func TestGapCountsAgree(t *testing.T) {
	for _, name := range []string{"bulk-write", "mixed", "rping"} {
		sc, err := gen.Builtin(name, gen.Params{Seed: 4, Count: 30, Size: 6000, Conns: 2})
		if err != nil {
			t.Fatal(err)
		}
		sc.Rates = gen.Rates{Drop: 0.03}
		for i := range sc.Connections {
			// FPDUs cut anywhere: a lost segment swallows a header, and
			// the framer skips to the next boundary it can prove.
			sc.Connections[i].Packing = "stream"
			sc.Connections[i].MaxULPDU = 3000
		}
		path, _ := genTruth(t, sc)
		for _, workers := range []int{1, 2} {
			_, _, rep := countRecords(t, path, workers)
			var gaps, octets, skips, skipped uint64
			for _, c := range rep.ConnStats {
				for d := range c.Dir {
					gaps += c.Dir[d].Gaps
					octets += c.Dir[d].GapOctets
					skips += c.Dir[d].Skips
					skipped += c.Dir[d].SkippedOctets
				}
			}
			t.Logf("%s workers %d: %d gaps, %d skips", name, workers, gaps, skips)
			if gaps == 0 || skips == 0 || gaps != rep.Asm.Gaps || octets != rep.Asm.GapBytes || skipped != rep.Asm.SkippedBytes {
				t.Errorf("%s workers %d: conv %d gaps (%d octets), %d skips (%d octets); reassembly %d gaps (%d octets), %d skipped octets",
					name, workers, gaps, octets, skips, skipped, rep.Asm.Gaps, rep.Asm.GapBytes, rep.Asm.SkippedBytes)
			}
		}
	}
}
