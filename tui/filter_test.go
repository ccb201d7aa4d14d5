package tui

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/pcap"
	pcapbpf "github.com/iwkit/iwkit/pcap/bpf"
)

type matchCollector struct {
	f    interface{ Match(*analyze.Record) bool }
	row  int
	want []int
}

// iwdumpMatches lists the rows (PDUs and findings, in order) whose
// records display filter expr matches on one worker: what iwdump -Y
// prints of the capture at path.
func iwdumpMatches(t *testing.T, path, expr string) []int {
	t.Helper()
	f, err := analyze.CompileFilter(expr)
	if err != nil {
		t.Fatal(err)
	}
	src, _, err := analyze.OpenFiles([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	m := &matchCollector{f: f}
	if _, err := analyze.Run(src, analyze.Config{Workers: 1}, m); err != nil {
		t.Fatal(err)
	}
	return m.want
}

func (m *matchCollector) Record(r *analyze.Record) {
	if r.Kind != analyze.KindPDU && r.Kind != analyze.KindFinding {
		return
	}
	if m.f.Match(r) {
		m.want = append(m.want, m.row)
	}
	m.row++
}

// TestFilterRows: a display filter shows exactly the rows whose records
// iwdump -Y would print, whether applied while the index is being built
// (installed at a frame boundary, the frames before it passed again) or
// after, on one worker or sharded (the boundary is then the indexer's
// Frame, called by the merger).
func TestFilterRows(t *testing.T) {
	path := genCapture(t, t.TempDir(), "hostile", "hostile.pcap", gen.Params{Seed: 3, Count: 40})
	for _, expr := range []string{`finding`, `rdmap.opcode == "Send" || finding.severity == "error"`, `ddp.tagged && mpa.crc_status == "bad"`} {
		want := iwdumpMatches(t, path, expr)
		for _, run := range []struct {
			early   bool
			workers int
		}{{true, 1}, {false, 1}, {true, 2}, {false, 2}} {
			early := run.early
			s, err := Open(Config{File: path, Workers: run.workers})
			if err != nil {
				t.Fatal(err)
			}
			if !early {
				s.Wait()
			}
			fr := applyFilter(t, s, expr) // commands_test.go
			s.Wait()
			got := matchedRows(s, fr)
			s.Close()
			if len(got) != len(want) {
				t.Fatalf("%s (early %v, %d workers): %d rows, iwdump -Y %d", expr, early, run.workers, len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%s (early %v, %d workers): row %d is %d, want %d", expr, early, run.workers, i, got[i], want[i])
				}
			}
		}
	}
}

// TestListModel: follow, marks, search and go-to on the list model.
func TestListModel(t *testing.T) {
	s, err := Open(Config{File: genCapture(t, t.TempDir(), "every-terminate", "t.pcap", gen.Params{Seed: 1})})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Wait()
	l := newList(s.Ix)
	total := l.Len()
	l.GoRow(5)
	conn := s.Ix.Row(5).Conn
	l.SetFollow(Follow{On: true, Conn: conn})
	if l.Len() == 0 || l.Len() >= total {
		t.Fatalf("follow conn %d: %d of %d rows", conn, l.Len(), total)
	}
	for p := 0; p < l.Len(); p++ {
		if s.Ix.Row(l.RowAt(p)).Conn != conn {
			t.Fatal("a row of another connection is shown")
		}
	}
	if l.RowAt(l.Cursor) != 5 {
		t.Fatalf("cursor moved to row %d on follow", l.RowAt(l.Cursor))
	}
	l.SetFollow(Follow{})
	if l.Len() != total {
		t.Fatal("unfollow did not show all rows")
	}
	l.Cursor = 3
	l.ToggleMark()
	l.Cursor = 10
	l.ToggleMark()
	l.Cursor = 0
	if !l.NextMark(1) || l.Cursor != 3 || !l.NextMark(1) || l.Cursor != 10 || !l.NextMark(1) || l.Cursor != 3 {
		t.Fatalf("marks: cursor %d", l.Cursor)
	}
	if !l.NextMark(-1) || l.Cursor != 10 {
		t.Fatalf("previous mark: cursor %d", l.Cursor)
	}
	l.Cursor = 0
	if !l.Find("terminate qn 2", 1) || s.Ix.Row(l.RowAt(l.Cursor)).Op != 7 {
		t.Fatal("search did not find a Terminate")
	}
	if l.Find("no such text", 1) {
		t.Fatal("search found what is not there")
	}
	if i := s.Ix.FindRow(254); i < 0 || s.Ix.Row(i).Last != 254 {
		t.Fatalf("frame 254 is row %d", i)
	}
	l.AddHistory("a")
	l.AddHistory("b")
	l.AddHistory("a")
	if len(l.History) != 2 || l.History[1] != "a" {
		t.Fatalf("history %q", l.History)
	}
}

// TestFilterErrorText: the status line names the column and shows the
// expression with the offending octet marked.
func TestFilterErrorText(t *testing.T) {
	_, err := CheckFilter(`ddp.msn == 1 && rdmap.opcod == 3`)
	if err == nil {
		t.Fatal("no error")
	}
	got := FilterErrorText(err)
	want := "column 17: "
	if !strings.Contains(got, want) || !strings.Contains(got, "ddp.msn == 1 && [red::r]r[-::-]dmap.opcod == 3") {
		t.Fatalf("%q", got)
	}
}

// TestWriteConn: W writes every frame of the connection's 4-tuple, both
// directions, handshake included, and nothing else.
func TestWriteConn(t *testing.T) {
	dir := t.TempDir()
	path := genCapture(t, dir, "mixed", "m.pcap", gen.Params{Seed: 2, Conns: 3, Count: 4})
	s, err := Open(Config{File: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Wait()
	c := s.Ix.Conn(2)
	if c == nil {
		t.Fatal("no connection 2")
	}
	out := filepath.Join(dir, "c2.pcapng")
	n, err := WriteConn(s.Ix, 2, out)
	if err != nil {
		t.Fatal(err)
	}
	count := func(name string, keep func(*pcap.Packet) bool) int {
		r, err := pcap.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var f pcap.Frame
		var p pcap.Packet
		k := 0
		for r.Next(&f) == nil {
			if pcap.DecodeTCP(f.LinkType, f.Data, &p) == nil && keep(&p) {
				k++
			}
		}
		return k
	}
	mine := func(p *pcap.Packet) bool { return s.Ix.tupleOf(2, p) }
	want := count(path, mine)
	if n != want || count(out, mine) != want || count(out, func(*pcap.Packet) bool { return true }) != want {
		t.Fatalf("wrote %d frames, the connection has %d", n, want)
	}
}

// TestCaptureFilterOnFile: with a capture filter, the index holds the
// frames it passes, their PDUs decode again, and a display filter's pass
// sees the same frames (the same rows).
func TestCaptureFilterOnFile(t *testing.T) {
	path := genCapture(t, t.TempDir(), "every-terminate", "t.pcap", gen.Params{Seed: 1})
	const capture = "tcp port 33001"
	ff, err := pcapbpf.NewFilter(capture)
	if err != nil {
		t.Fatal(err)
	}
	in, _, err := analyze.OpenFiles([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := analyze.CompileFilter("finding || ddp.last")
	m := &matchCollector{f: f}
	analyze.Run(analyze.Filtered(in, ff, analyze.Tee{}), analyze.Config{Workers: 1}, m)
	in.Close()

	s, err := Open(Config{File: path, CaptureFilter: ff}) // the same compiled filter, shared
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Wait()
	if s.Ix.Len() != m.row || len(s.Ix.Conns()) != 1 {
		t.Fatalf("%d rows, %d connections; the pipeline has %d rows", s.Ix.Len(), len(s.Ix.Conns()), m.row)
	}
	l := &loader{ix: s.Ix}
	for i := 0; i < s.Ix.Len(); i++ {
		if s.Ix.Row(i).Kind != RowFinding {
			if d := l.Load(i); d.Err != nil {
				t.Fatalf("row %d: %v", i, d.Err)
			}
		}
	}
	fr, err := s.ApplyFilter("finding || ddp.last")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, done, _ := fr.Status(); done {
			break
		}
	}
	n, _, ferr := fr.Status()
	if ferr != nil || n != len(m.want) {
		t.Fatalf("filter matched %d rows (%v), want %d", n, ferr, len(m.want))
	}
	for _, i := range m.want {
		if !fr.Match(i) {
			t.Fatalf("row %d not matched", i)
		}
	}
}

// TestOpOf: a Read Response's row leads back to its Read, whose request
// frame is a Read Request of the same connection.
func TestOpOf(t *testing.T) {
	s, err := Open(Config{File: genCapture(t, t.TempDir(), "read-heavy", "r.pcap", gen.Params{Seed: 1, Count: 8})})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Wait()
	reads := 0
	for i := 0; i < s.Ix.Len(); i++ {
		r := s.Ix.Row(i)
		if r.Kind != RowFPDU || r.Op != 2 { // RDMA Read Response
			continue
		}
		o, ok := s.Ix.OpOf(&r)
		if !ok {
			t.Fatalf("row %d (Read Response, frame %d): no operation", i, r.Last)
		}
		req := s.Ix.Row(s.Ix.FindRow(o.RequestFrame))
		if req.Op != 1 || req.Conn != r.Conn || o.Latency <= 0 {
			t.Fatalf("row %d: operation's request frame %d is %+v, latency %v", i, o.RequestFrame, req, o.Latency)
		}
		reads++
	}
	if reads == 0 {
		t.Fatal("no Read Responses")
	}
}

// TestFilterMidShardedBuild: a filter applied while a sharded run is
// indexing, with the shards taking PDU records as rows (rowPreparer),
// sees every record from its cut on: the rows the shards had taken when
// it came are indexed before the cut is fixed, and the shards hand out
// whole records from then on.
func TestFilterMidShardedBuild(t *testing.T) {
	path := genCapture(t, t.TempDir(), "bulk-write", "bulk.pcap", gen.Params{Seed: 4, Count: 300, Size: 64 << 10, Conns: 4})
	expr := `ddp.last && ddp.stag != 0`
	want := iwdumpMatches(t, path, expr)
	mid := 0
	for _, at := range []int{1, 200, 2000} {
		s, err := Open(Config{File: path, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		for s.Ix.Len() < at {
			if _, _, done, _ := s.Ix.Progress(); done {
				break
			}
		}
		if _, _, done, _ := s.Ix.Progress(); !done {
			mid++
		}
		fr := applyFilter(t, s, expr)
		s.Wait()
		got := matchedRows(s, fr)
		s.Close()
		if !slices.Equal(got, want) || len(got) == 0 {
			t.Fatalf("applied at row %d: %d rows match, iwdump -Y %d", at, len(got), len(want))
		}
	}
	t.Logf("%d of 3 filters applied mid-build", mid)
}

// matchedRows lists the rows of s that fr matches.
func matchedRows(s *Session, fr *FilterRun) []int {
	var got []int
	for i := 0; i < s.Ix.Len(); i++ {
		if fr.Match(i) {
			got = append(got, i)
		}
	}
	return got
}
