package tui

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/internal/oracle"
	"github.com/iwkit/iwkit/pcap"
)

// tsharkComments reads path with tshark and returns each frame's
// frame.comment values (frames without one left out).
func tsharkComments(t *testing.T, path string) map[int][]string {
	t.Helper()
	out, err := exec.Command(oracle.Tshark(t), "-r", path, "-n", "-T", "fields", "-E", "occurrence=a", "-E", "aggregator=|",
		"-e", "frame.number", "-e", "frame.comment").Output()
	if err != nil {
		t.Fatalf("tshark -r %s: %v", path, err)
	}
	got := map[int][]string{}
	for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		num, c, _ := strings.Cut(line, "\t")
		n, err := strconv.Atoi(num)
		if err != nil {
			t.Fatalf("tshark line %q", line)
		}
		if c != "" {
			got[n] = strings.Split(c, "|")
		}
	}
	return got
}

// readComments reads path with package pcap and returns each frame's
// comments, and the frames read.
func readComments(t *testing.T, path string) (map[int][]string, int) {
	t.Helper()
	r, err := pcap.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := map[int][]string{}
	var f pcap.Frame
	for r.Next(&f) == nil {
		if f.Comments != nil {
			got[f.Number] = f.Comments
		}
	}
	return got, f.Number
}

// TestSaveFindingsAsComments: "save with findings as comments" writes
// every frame as pcapng, and tshark reads the findings back as
// frame.comment on the frames that raised them (severity, code and
// message); opened again, iwtui shows the comments in the tree and marks
// the rows, and w writes them back.
func TestSaveFindingsAsComments(t *testing.T) {
	src := "../testdata/siw/term_read_badstag.pcap"
	s, err := Open(Config{File: src})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Wait()
	dir := t.TempDir()
	out := filepath.Join(dir, "findings.pcapng")
	n, c, err := WriteFindings(s.Ix, out)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int][]string{}
	for _, f := range s.Ix.Findings() {
		want[f.Frame] = append(want[f.Frame], fmt.Sprintf("iwkit: %s %s: %s", f.Severity, f.Code, f.Message))
	}
	if len(want) == 0 || c != len(want) || n != s.Ix.store.frames() {
		t.Fatalf("wrote %d frames (capture has %d), %d commented; findings on %d frames", n, s.Ix.store.frames(), c, len(want))
	}
	if got := tsharkComments(t, out); !reflect.DeepEqual(got, want) {
		t.Fatalf("tshark frame.comment:\n got %q\nwant %q", got, want)
	}
	if !strings.Contains(strings.Join(want[9], "\n"), "error rdmap.terminate: Terminate from the responder") {
		t.Fatalf("frame 9's comments %q lack the Terminate finding", want[9])
	}

	// Opened again: the comments are in the tree, the rows marked.
	s2, err := Open(Config{File: out})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	s2.Wait()
	if s2.Ix.Len() != s.Ix.Len() {
		t.Fatalf("reopened: %d rows, was %d", s2.Ix.Len(), s.Ix.Len())
	}
	ld := &loader{ix: s2.Ix, run: s2.rerun}
	marked := 0
	for i := 0; i < s2.Ix.Len(); i++ {
		r := s2.Ix.Row(i)
		if !s2.Ix.Commented(&r) {
			continue
		}
		marked++
		var lines []string
		for _, ln := range ld.Load(i).Lines {
			lines = append(lines, ln.Text)
		}
		tree := strings.Join(lines, "\n")
		for f := r.First; f <= r.Last; f++ {
			for _, cm := range want[int(f)] {
				if !strings.Contains(tree, fmt.Sprintf("comment (frame %d): %s", f, cm)) {
					t.Errorf("row %d (frames %d-%d): the tree lacks %q:\n%s", i, r.First, r.Last, cm, tree)
				}
			}
		}
	}
	if marked == 0 {
		t.Fatal("no row marked as commented")
	}
	// w writes them back (pcapng), and keeps them off a classic pcap.
	back := filepath.Join(dir, "back.pcapng")
	if _, err := WriteRows(s2.Ix, newList(s2.Ix), back); err != nil {
		t.Fatal(err)
	}
	got, _ := readComments(t, back)
	var flatGot, flatWant []string
	for _, cm := range got {
		flatGot = append(flatGot, cm...)
	}
	for _, cm := range want {
		flatWant = append(flatWant, cm...)
	}
	sort.Strings(flatGot)
	sort.Strings(flatWant)
	if !reflect.DeepEqual(flatGot, flatWant) {
		t.Fatalf("w wrote back comments %q, want %q", flatGot, flatWant)
	}
	classic := filepath.Join(dir, "back.pcap")
	if _, err := WriteRows(s2.Ix, newList(s2.Ix), classic); err != nil {
		t.Fatalf("w to a classic pcap of a commented capture: %v", err)
	}
}
