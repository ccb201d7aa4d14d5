package tui

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/render"
	"github.com/iwkit/iwkit/track"
)

// trackFrames is the oracle: the commands view's own computation before
// ulp listed a command's operations (commit e34bfb7), kept here only to
// check ulp against it. It indexes track's operations by connection and
// STag (Writes by their Data Sink STag, Read Requests by their Data
// Source STag) and takes, for each STag the command advertised, the
// operations on it between its request and its response.
func trackFrames(ix *Index) func(c *Cmd) []string {
	m := map[[2]uint64][]int32{}
	for i, n := 0, ix.NumOps(); i < n; i++ {
		op := ix.Op(i)
		var k [2]uint64
		switch op.Kind {
		case track.OpWrite:
			k = [2]uint64{uint64(op.Conn), uint64(op.STag)}
		case track.OpRead:
			k = [2]uint64{uint64(op.Conn), uint64(op.SrcSTag)}
		default:
			continue
		}
		m[k] = append(m[k], int32(i))
	}
	span := func(a, b int) string {
		if b <= a {
			return strconv.Itoa(a)
		}
		return fmt.Sprintf("%d-%d", a, b)
	}
	return func(c *Cmd) []string {
		var out []string
		end := int(c.ResponseFrame)
		if end == 0 {
			end = 1<<31 - 1
		}
		for _, st := range ix.CmdSTags(c) {
			for _, i := range m[[2]uint64{uint64(c.Conn), uint64(st)}] {
				op := ix.Op(int(i))
				if op.RequestFrame < int(c.RequestFrame) || op.RequestFrame > end {
					continue
				}
				if op.Kind == track.OpWrite {
					out = append(out, "W "+span(op.RequestFrame, op.RequestLast))
				} else {
					out = append(out, fmt.Sprintf("R %d→%s", op.RequestFrame, span(op.ResponseFirst, op.RespLast)))
				}
			}
		}
		return out
	}
}

// TestCommandRDMAFramesAreTracks: on every storage capture of
// testdata/ulp (the real siw captures of NVMe-oF, iSER, SMB Direct,
// NFSv3 and NFSv4.2, and the generated ones), the RDMA operations the
// commands view lists for each command (ulp's, through the index) are
// those track's operations on the command's STags give (trackFrames);
// its column is their wording; and the command's tree (its response's
// row, render's tree as iwdump -V prints it) shows the same operations
// as ulp.rdma.op lines whose frame lines link to those frames; its
// request's tree links to its response and to each operation.
func TestCommandRDMAFramesAreTracks(t *testing.T) {
	files, _ := filepath.Glob("../testdata/ulp/*.pcap")
	if len(files) < 17 {
		t.Fatalf("%d captures in testdata/ulp", len(files))
	}
	var cmds, ops, trees int
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			s, err := Open(Config{File: path})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			s.Wait()
			ix := s.Ix
			oracle := trackFrames(ix)
			before := ops
			defer func() {
				// every real capture (and every generated one but the
				// one of limits) moves data by RDMA
				if ops == before && !strings.HasPrefix(filepath.Base(path), "gen_limits") {
					t.Errorf("no RDMA operation of a command compared")
				}
			}()
			l := &loader{ix: ix, run: s.rerun}
			for e := 0; e < ix.NumCmds(); e++ {
				c := ix.Cmd(e)
				xs, dropped := ix.CmdXfers(&c)
				if dropped > 0 {
					t.Errorf("%s: %d operations not kept", c.Label(), dropped)
				}
				var got []string
				var words []string
				for i := range xs {
					w := string(xs[i].AppendFrames(nil))
					words = append(words, w)
					if !strings.HasPrefix(w, "S ") { // a data Send: no RDMA operation of track's
						got = append(got, w)
					}
				}
				want := oracle(&c)
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("%s (frames %d-%d): ulp lists %q, track's operations on its STags %q", c.Label(), c.RequestFrame, c.ResponseFrame, got, want)
				}
				if col := ix.CmdRDMAFrames(&c); col != strings.Join(words, " ") {
					t.Errorf("%s: column %q, operations %q", c.Label(), col, words)
				}
				cmds++
				ops += len(got)
				if len(xs) == 0 || !c.Answered {
					continue
				}
				// The command's tree: its response's row.
				row := ix.RowOf(int(c.Conn), int(c.ResponseFrame))
				if row < 0 {
					t.Fatalf("%s: no row holds its response frame %d", c.Label(), c.ResponseFrame)
				}
				d := l.Load(row)
				var tree []string
				links := 0
				cur := -1
				for _, ln := range d.Lines {
					switch ln.Name {
					case "ulp.command":
						cur = -1
						if ln.Value.S == c.Name {
							cur = 0 // the command's own ulp.* fields (a compound's member has its own)
						}
					case "ulp.request_frame":
						if cur == 0 && int(ln.Value.U) != int(c.RequestFrame) {
							cur = -1
						}
					case "ulp.rdma.op":
						if cur >= 0 {
							tree = append(tree, ln.Value.S)
							if ln.Frame == 0 {
								t.Errorf("%s: %q links to no frame", c.Label(), ln.Text)
							}
						}
					case "ulp.rdma.frame", "ulp.rdma.last_frame", "ulp.rdma.response_frame", "ulp.rdma.response_last_frame":
						if cur >= 0 {
							if ln.Frame != int(ln.Value.U) || ln.Frame == 0 {
								t.Errorf("%s: %q links to frame %d", c.Label(), ln.Text, ln.Frame)
							}
							links++
						}
					}
				}
				var kinds []string
				for i := range xs {
					kinds = append(kinds, xs[i].Kind.String())
				}
				if !slices.Equal(tree, kinds) {
					t.Errorf("%s: its tree (row %d) lists %q, the view %q", c.Label(), row, tree, kinds)
				}
				if links < len(xs) {
					t.Errorf("%s: %d frame links for %d operations", c.Label(), links, len(xs))
				}
				// The request's tree: a line linking to the response, and
				// one per operation linking to its first frame.
				req := l.Load(ix.RowOf(int(c.Conn), int(c.RequestFrame)))
				var opened []int
				for k, ln := range req.Lines {
					if ln.Kind == render.NodeNote && ln.Depth == 0 && ln.Text == c.Name+": response in frame "+strconv.Itoa(int(c.ResponseFrame)) && ln.Frame == int(c.ResponseFrame) {
						opened = opened[:0]
						for _, o := range req.Lines[k+1:] {
							if o.Kind != render.NodeNote || o.Depth != 1 {
								break
							}
							opened = append(opened, o.Frame)
						}
						if len(opened) == len(xs) {
							break
						}
					}
				}
				var firsts []int
				for i := range xs {
					firsts = append(firsts, xs[i].Frame)
				}
				if !slices.Equal(opened, firsts) {
					t.Errorf("%s: its request's tree links to %v, its operations begin in %v", c.Label(), opened, firsts)
				}
				trees++
			}
		})
	}
	t.Logf("%d commands, %d RDMA operations, %d trees compared", cmds, ops, trees)
	if ops < 150 || trees < 150 {
		t.Errorf("only %d operations and %d trees compared", ops, trees)
	}
}
