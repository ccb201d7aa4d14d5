package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/render"
)

// TestFold: which lines show with which folds, and what unfolds.
func TestFold(t *testing.T) {
	var d Detail
	section := ""
	for _, name := range []string{"mpa.ulpdu_length", "mpa.private_data", "mpa.v2.ird", "mpa.v2.ord", "ddp.tagged", "ddp.msn", "nvme.cid", "nvme.sgl.key"} {
		if sec, _, _ := strings.Cut(name, "."); sec != section {
			section = sec
			n := render.Node{Kind: render.NodeSection, Name: sec}
			d.Lines = append(d.Lines, Line{Node: n, Text: string(n.AppendText(nil))})
		}
		d.Lines = append(d.Lines, Line{Node: render.Node{Kind: render.NodeField, Depth: strings.Count(name, "."), Name: name}, Text: name + " = 1"})
	}
	d.Lines = append(d.Lines, Line{Text: "error x: y"})
	keys := func(v []int) string {
		var b []string
		for _, i := range v {
			b = append(b, d.Lines[i].Key())
		}
		return strings.Join(b, " ")
	}
	cases := []struct {
		fold Fold
		want string
	}{
		{Fold{}, "MPA mpa.ulpdu_length mpa.private_data mpa.v2.ird mpa.v2.ord DDP ddp.tagged ddp.msn NVMe-oF nvme.cid nvme.sgl.key error x: y"},
		{Fold{"MPA": true}, "MPA DDP ddp.tagged ddp.msn NVMe-oF nvme.cid nvme.sgl.key error x: y"},
		{Fold{"mpa.private_data": true, "NVMe-oF": true}, "MPA mpa.ulpdu_length mpa.private_data DDP ddp.tagged ddp.msn NVMe-oF error x: y"},
		{Fold{"ddp.msn": true}, "MPA mpa.ulpdu_length mpa.private_data mpa.v2.ird mpa.v2.ord DDP ddp.tagged ddp.msn NVMe-oF nvme.cid nvme.sgl.key error x: y"}, // no children: nothing hides
		{Fold{"MPA": true, "DDP": true, "NVMe-oF": true}, "MPA DDP NVMe-oF error x: y"},
	}
	for _, tc := range cases {
		if got := keys(d.Visible(tc.fold)); got != tc.want {
			t.Errorf("fold %v:\n got %s\nwant %s", tc.fold, got, tc.want)
		}
	}
	// Unfolding mpa.v2.ird unfolds mpa.private_data and MPA, not DDP.
	f := Fold{"MPA": true, "mpa.private_data": true, "DDP": true}
	for i, ln := range d.Lines {
		if ln.Key() == "mpa.v2.ird" {
			d.Unfold(f, i)
			if d.Parent(i) < 0 || d.Lines[d.Parent(i)].Key() != "mpa.private_data" {
				t.Errorf("parent of mpa.v2.ird: %d", d.Parent(i))
			}
		}
	}
	if fmt.Sprint(f) != "map[DDP:true]" {
		t.Errorf("after unfolding mpa.v2.ird: %v", f)
	}
}

// TestULPText: summaries kept by row, across blocks, cut at ulpMaxText.
func TestULPText(t *testing.T) {
	var u ulpText
	long := strings.Repeat("x", 300)
	want := map[int]string{}
	for row := 0; row < 60000; row += 3 {
		s := fmt.Sprintf("NVMe Read cid %d %s", row, long[:row%250])
		u.add(row, []byte(s))
		want[row] = s[:min(len(s), ulpMaxText)]
	}
	if len(u.blocks) < 2 {
		t.Fatalf("%d blocks: the test does not cross a block", len(u.blocks))
	}
	for row := 0; row < 60001; row++ {
		got, ok := u.find(row)
		if w, has := want[row]; ok != has || string(got) != w {
			t.Fatalf("row %d: %q %v, want %q %v", row, got, ok, w, has)
		}
	}
}
