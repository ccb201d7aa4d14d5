package tui

import (
	"runtime"
	"strings"
	"testing"
)

// TestCommandsView: the commands view sorts (s, S), follows the display
// filter, finds (f, n), and lists the RDMA frames that moved each
// command's data (issue 27 not answered 6), on a generated SMB2 capture
// whose READs are RDMA-Written and whose WRITE is RDMA-Read.
func TestCommandsView(t *testing.T) {
	sc := newScreen(t, "../testdata/ulp/gen_smb2_compound.pcap")
	u := sc.u
	sc.runes("U")
	if u.page != "cmds" {
		t.Fatalf("page %q", u.page)
	}
	rows := func() []Cmd { return u.cmdv.rows }
	if n := len(rows()); n != 10 {
		t.Fatalf("%d commands", n)
	}
	// the RDMA frames of each command: READ mid 3 (Writes 14-17), the
	// compound's READ mid 5 (Writes 21-28), WRITE mid 7 (Read Request 32,
	// Responses 33-49)
	ops := u.rdmaFrames()
	want := map[uint64]string{3: "W 14-17", 5: "W 21-28", 7: "R 32→33-49", 2: ""}
	for _, c := range rows() {
		if w, ok := want[c.ID]; ok {
			if got := CmdRDMAFrames(&c, u.S.Ix.CmdSTags(&c), ops); got != w {
				t.Errorf("%s mid %d: RDMA frames %q, want %q", c.Name, c.ID, got, w)
			}
		}
	}
	// s: by latency, then octets; S reverses
	sc.runes("s")
	if k := CmdSortKeys[u.cmdv.key].Name; k != "latency" {
		t.Fatalf("sort key %s", k)
	}
	for i := 1; i < len(rows()); i++ {
		if rows()[i].Latency < rows()[i-1].Latency {
			t.Fatalf("not by latency: %v then %v", rows()[i-1].Latency, rows()[i].Latency)
		}
	}
	sc.runes("sS")
	if r := rows(); r[0].Moved != 16384 || r[len(r)-1].Moved != 0 {
		t.Errorf("by octets, largest first: first %d, last %d", r[0].Moved, r[len(r)-1].Moved)
	}
	if !strings.Contains(sc.text(), "sort octets ↓") {
		t.Errorf("the title does not say the sort:\n%s", sc.text())
	}
	// f: find a command by its object
	sc.runes("f")
	sc.runes("other.txt")
	sc.key(13) // Enter
	if u.page != "cmds" {
		t.Fatalf("after find: page %q", u.page)
	}
	r, _ := u.views["cmds"].t.GetSelection()
	if c := rows()[r-1]; !strings.Contains(c.Object, "other.txt") {
		t.Errorf("find other.txt selected %s %q", c.Name, c.Object)
	}
	// the display filter applies: only the commands whose request or
	// response it shows
	u.List.SetFilter(applyFilter(t, u.S, `smb2.filename == "dir\\file.txt"`))
	u.fillCmds()
	var objs []string
	for _, c := range rows() {
		objs = append(objs, c.Name)
		if !strings.HasSuffix(c.Object, `dir\file.txt`) {
			t.Errorf("filtered: %s %q", c.Name, c.Object)
		}
	}
	if len(rows()) != 5 { // CREATE, READ, WRITE, FLUSH, CLOSE of dir\file.txt
		t.Errorf("filtered commands: %v", objs)
	}
}

// applyFilter applies a display filter to s and waits for its pass.
func applyFilter(t *testing.T, s *Session, expr string) *FilterRun {
	t.Helper()
	fr, err := s.ApplyFilter(expr)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, done, _ := fr.Status(); done {
			return fr
		}
		runtime.Gosched()
	}
}
