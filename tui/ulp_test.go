package tui

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/render"
)

// vTrees runs the pipeline over a capture and keeps, per PDU, the ULP
// part of iwdump -V's tree (render's, the one iwdump prints).
type vTrees struct{ trees map[ulpKey]string }

func (v *vTrees) Record(r *analyze.Record) {
	if r.Kind == analyze.KindPDU && r.ULP != nil {
		v.trees[ulpKey{uint8(r.Dir), r.Seq, r.LastFrame}] = string(render.AppendULPTree(nil, r.ULP, false))
	}
}

// TestULPDetailIsIwdumpV: on the real Linux captures (NVMe-oF, iSER, SMB
// Direct, NFS over RDMA) and the generated ones, the rows that complete a
// storage-protocol message are the PDUs iwdump -V gives a ULP tree, and
// the detail tree of each shows that tree's fields, names and values
// (decoded again from the file by replaying the connection), in order.
func TestULPDetailIsIwdumpV(t *testing.T) {
	// A small window: the replays' edges fall inside these captures.
	defer func(w int) { ulpWindow = w }(ulpWindow)
	ulpWindow = 16
	paths, _ := filepath.Glob("../testdata/ulp/*.pcap")
	if len(paths) < 10 {
		t.Fatalf("%d ULP captures", len(paths))
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			in, _, err := analyze.OpenFiles([]string{path})
			if err != nil {
				t.Fatal(err)
			}
			want := &vTrees{trees: map[ulpKey]string{}}
			if _, err := analyze.Run(in, analyze.Config{Workers: 1}, want); err != nil {
				t.Fatal(err)
			}
			in.Close()
			if len(want.trees) == 0 {
				t.Fatal("iwdump decodes no ULP message here")
			}
			s, err := Open(Config{File: path})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			s.Wait()
			l := &loader{ix: s.Ix, run: s.rerun}
			got := 0
			// Backwards, then forwards: through the replay's window and
			// past its edges both ways.
			for pass := 0; pass < 2; pass++ {
				for k := 0; k < s.Ix.Len(); k++ {
					i := k
					if pass == 0 {
						i = s.Ix.Len() - 1 - k
					}
					r := s.Ix.Row(i)
					w, ok := want.trees[ulpKey{r.Dir, r.Seq, int(r.Last)}]
					if r.Kind == RowFinding || ok != s.Ix.HasULP(i) {
						if r.Kind != RowFinding {
							t.Fatalf("row %d (frame %d): ULP bit %v, iwdump -V tree %v", i, r.Last, s.Ix.HasULP(i), ok)
						}
						continue
					}
					if !ok {
						continue
					}
					var b strings.Builder
					d := l.Load(i)
					for _, ln := range d.Lines {
						// The protocol lines light up the message's octets.
						if ln.Depth == 0 && ln.Text == "ULP" && (ln.Len == 0 || ln.Off+ln.Len > len(d.Wire)) {
							t.Fatalf("row %d: ULP line spans %d+%d of %d", i, ln.Off, ln.Len, len(d.Wire))
						}
					}
					for _, ln := range d.Lines {
						if ln.Depth > 0 && (strings.Contains(ln.Text, " = ") && ln.Field == nil) {
							b.WriteString(strings.Repeat("    ", ln.Depth) + ln.Text + "  (" + ln.Desc + ")\n")
						}
					}
					if b.String() != w {
						t.Fatalf("row %d (frame %d): ULP lines\n%s\niwdump -V\n%s", i, r.Last, b.String(), w)
					}
					got++
				}
			}
			if got != 2*len(want.trees) {
				t.Fatalf("%d ULP trees shown, iwdump -V has %d (twice)", got, len(want.trees))
			}
			if c := s.Ix.Conns(); len(c) == 0 || c[len(c)-1].Proto == "" {
				t.Fatalf("connection protocol not noted: %+v", c)
			}
		})
	}
}

// TestULPFilter: the display filter "nvme" (as tshark's) shows exactly the
// rows that complete an NVMe-oF message, with their summaries.
func TestULPFilter(t *testing.T) {
	s, err := Open(Config{File: "../testdata/ulp/nvmeof.pcap"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Wait()
	fr, err := s.ApplyFilter("nvme")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, done, _ := fr.Status(); done {
			break
		}
		runtime.Gosched()
	}
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
