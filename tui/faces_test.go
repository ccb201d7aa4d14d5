package tui

import (
	"bufio"
	"bytes"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdamore/tcell/v2"
	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/render"
)

// vLines runs iwdump's printer with -V over a capture and keeps, per PDU,
// the lines of its field tree (what follows its summary line).
type vLines struct {
	p     *render.Printer
	w     *bufio.Writer
	out   *bytes.Buffer
	trees map[ulpKey][]string
	order []ulpKey
}

func (v *vLines) Record(r *analyze.Record) {
	v.w.Flush()
	v.out.Reset()
	v.p.Record(r)
	v.w.Flush()
	if r.Kind != analyze.KindPDU {
		return
	}
	lines := strings.Split(strings.TrimSuffix(v.out.String(), "\n"), "\n")
	k := ulpKey{uint8(r.Dir), r.Seq, r.LastFrame}
	if _, dup := v.trees[k]; dup {
		panic("two PDUs with one key")
	}
	v.trees[k] = lines[1:]
	v.order = append(v.order, k)
}

// captures lists every capture committed under ../testdata.
func captures(t *testing.T) []string {
	var paths []string
	err := filepath.WalkDir("../testdata", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ext := filepath.Ext(path); !d.IsDir() && (ext == ".pcap" || ext == ".pcapng") {
			paths = append(paths, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 30 {
		t.Fatalf("%d captures under testdata", len(paths))
	}
	return paths
}

// TestTreeIsIwdumpV: on every capture the repository holds, PDU by PDU,
// the field nodes of iwtui's detail tree (decoded again from the frames
// the index names, the storage protocol by replaying the connection) are
// the lines iwdump -V prints for the PDU: as many, the same names, values,
// depths and descriptions, in the same order. Both are render's tree
// (render.AppendNodes), over the pipeline's PDU in iwdump and over the
// TUI's own decode in iwtui.
func TestTreeIsIwdumpV(t *testing.T) {
	// A small window: the replays' edges fall inside the captures.
	defer func(w int) { ulpWindow = w }(ulpWindow)
	ulpWindow = 16
	// Lines are coloured by their node's severity: counted over the
	// captures.
	var badCRCs, errs, warns int
	for _, path := range captures(t) {
		t.Run(strings.TrimPrefix(path, "../testdata/"), func(t *testing.T) {
			in, _, err := analyze.OpenFiles([]string{path})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			w := bufio.NewWriter(&out)
			want := &vLines{w: w, out: &out, trees: map[ulpKey][]string{}}
			if _, err := analyze.RunOrdered(in, analyze.Config{Workers: 1}, analyze.Output{W: w}, func(_ int, o *analyze.Out) analyze.Consumer {
				want.p = render.New(o, &render.Options{Format: "text", Verbose: true, TimeFormat: "r"})
				return want
			}); err != nil {
				t.Fatal(err)
			}
			in.Close()
			s, err := Open(Config{File: path})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			s.Wait()
			l := &loader{ix: s.Ix, run: s.rerun}
			var got []ulpKey
			fields, ulps := 0, 0
			// Backwards, then forwards: through the replay's window and
			// past its edges both ways.
			for pass := 0; pass < 2; pass++ {
				got = got[:0]
				for k := 0; k < s.Ix.Len(); k++ {
					i := k
					if pass == 0 {
						i = s.Ix.Len() - 1 - k
					}
					r := s.Ix.Row(i)
					if r.Kind == RowFinding {
						continue
					}
					key := ulpKey{r.Dir, r.Seq, int(r.Last)}
					lines, ok := want.trees[key]
					if !ok {
						t.Fatalf("row %d (frames %d-%d): iwdump prints no such PDU", i, r.First, r.Last)
					}
					got = append(got, key)
					d := l.Load(i)
					var tree []string
					for _, ln := range d.Lines {
						if ln.IsField() {
							tree = append(tree, strings.Repeat("    ", ln.Depth)+ln.Name+" = "+string(ln.AppendValue(nil, false))+"  ("+ln.Desc()+")")
							if !strings.HasPrefix(ln.Text, ln.Name+" = ") {
								t.Fatalf("row %d: line %q shows node %s", i, ln.Text, ln.Name)
							}
							if ln.Kind == render.NodeULPField && pass == 1 {
								ulps++
							}
						}
						// The storage protocol's line lights up the octets
						// its message came in.
						if ln.Kind == render.NodeSection && ln.Name == "ulp" && ln.Len == 0 {
							t.Fatalf("row %d: the ULP line has no octets", i)
						}
						switch {
						case ln.Kind == render.NodeCRC && r.Flags&FlagCRCBad != 0:
							if nodeColor(&ln.Node) != palette.Error {
								t.Fatalf("row %d: %q not red", i, ln.Text)
							}
							badCRCs++
						case ln.Kind == render.NodeFinding && ln.Sev == finding.Error:
							if nodeColor(&ln.Node) != palette.Error {
								t.Fatalf("row %d: %q not red", i, ln.Text)
							}
							errs++
						case ln.Kind == render.NodeFinding && ln.Sev == finding.Warning:
							if nodeColor(&ln.Node) != palette.Warning {
								t.Fatalf("row %d: %q not olive", i, ln.Text)
							}
							warns++
						case ln.Kind == render.NodeField && nodeColor(&ln.Node) != tcell.ColorDefault:
							t.Fatalf("row %d: field %q coloured", i, ln.Text)
						}
						if ln.Len > 0 && ln.Off+ln.Len > len(d.Wire) {
							t.Fatalf("row %d: line %q spans %d+%d of %d octets", i, ln.Text, ln.Off, ln.Len, len(d.Wire))
						}
					}
					if strings.Join(tree, "\n") != strings.Join(lines, "\n") {
						t.Fatalf("row %d (frames %d-%d): iwtui's tree nodes\n%s\niwdump -V\n%s", i, r.First, r.Last, strings.Join(tree, "\n"), strings.Join(lines, "\n"))
					}
					fields += len(tree)
				}
			}
			// Every PDU iwdump prints is a row, in the same order.
			if len(got) != len(want.order) {
				t.Fatalf("%d PDU rows, iwdump prints %d PDUs", len(got), len(want.order))
			}
			for k := range got {
				if got[k] != want.order[k] {
					t.Fatalf("PDU %d: row %+v, iwdump %+v", k, got[k], want.order[k])
				}
			}
			if fields == 0 {
				t.Fatal("no field compared")
			}
			if strings.HasPrefix(path, "../testdata/ulp/") && ulps == 0 {
				t.Fatal("no storage-protocol field compared")
			}
		})
	}
	if badCRCs == 0 || errs == 0 || warns == 0 {
		t.Fatalf("coloured %d bad CRCs, %d error and %d warning findings", badCRCs, errs, warns)
	}
	t.Logf("coloured %d bad CRCs, %d error and %d warning findings", badCRCs, errs, warns)
}
