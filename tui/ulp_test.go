package tui

import (
	"strings"
	"testing"
)

// TestULPFilter: the display filter "nvme" (as tshark's) shows exactly the
// rows that complete an NVMe-oF message, with their summaries.
func TestULPFilter(t *testing.T) {
	s, err := Open(Config{File: "../testdata/ulp/nvmeof.pcap"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Wait()
	fr := applyFilter(t, s, "nvme")
	n := 0
	for i := 0; i < s.Ix.Len(); i++ {
		r := s.Ix.Row(i)
		line := string(s.Ix.appendSummary(nil, i, &r))
		if fr.Match(i) != s.Ix.HasULP(i) || fr.Match(i) != strings.Contains(line, " | NVMe ") {
			t.Fatalf("row %d %q: filter %v, ULP %v", i, line, fr.Match(i), s.Ix.HasULP(i))
		}
		if fr.Match(i) {
			n++
		}
	}
	if n < 20 {
		t.Fatalf("%d NVMe-oF messages", n)
	}
}

// TestULPReplayAsync: with the event loop running, a row's ULP tree is
// first a line saying it is being read again, and the tree once the
// replay's result is handed back; nothing of the loader changes before.
func TestULPReplayAsync(t *testing.T) {
	s, err := Open(Config{File: "../testdata/ulp/iser.pcap"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Wait()
	back := make(chan func(), 1)
	l := &loader{ix: s.Ix, run: s.rerun, async: func(f func()) { back <- f }}
	i := -1
	for k := s.Ix.Len() - 1; k >= 0 && i < 0; k-- {
		if s.Ix.HasULP(k) {
			i = k
		}
	}
	has := func(d *Detail, text string) bool {
		for _, ln := range d.Lines {
			if strings.Contains(ln.Text, text) {
				return true
			}
		}
		return false
	}
	if d := l.Load(i); !has(d, "reading connection") || has(d, "ulp.proto") {
		t.Fatalf("first Load: %+v", d.Lines)
	}
	l.Load(i) // a second Load while the replay runs starts no other
	f := <-back
	if l.ulp != nil || !l.replaying {
		t.Fatal("the loader changed before the result was handed back")
	}
	f()
	if d := l.Load(i); !has(d, "ulp.proto = iser") {
		t.Fatalf("after the replay: %+v", d.Lines)
	}
	select {
	case <-back:
		t.Fatal("a second replay ran")
	default:
	}
}
