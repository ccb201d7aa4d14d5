package export

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/communityid"
	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/pcap"
)

// The child processes of the kill tests: the test binary run again with
// IWKIT_EXPORT_CHILD=commit (dies by SIGKILL between the commit and the
// removal of the garbage) or =write (dies while writing, before the
// commit), exporting IWKIT_EXPORT_FILE into IWKIT_EXPORT_DIR.
func TestMain(m *testing.M) {
	switch os.Getenv("IWKIT_EXPORT_CHILD") {
	case "":
		os.Exit(m.Run())
	case "commit":
		testAfterCommit = func() { syscall.Kill(os.Getpid(), syscall.SIGKILL) }
		Export(Set{Capture: "x", Files: []string{os.Getenv("IWKIT_EXPORT_FILE")}}, Config{Dir: os.Getenv("IWKIT_EXPORT_DIR")})
	case "write":
		e, err := New(Options{Dir: os.Getenv("IWKIT_EXPORT_DIR"), Capture: "x", Files: []string{os.Getenv("IWKIT_EXPORT_FILE")}})
		if err == nil {
			run(e, os.Getenv("IWKIT_EXPORT_FILE"))
			for _, p := range e.parts {
				p.w.Flush()
			}
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	os.Exit(3) // the kill did not come
}

// child runs the test binary as a child that kills itself (TestMain)
// and checks that it died by SIGKILL.
func child(t *testing.T, mode, dir, file string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "IWKIT_EXPORT_CHILD="+mode, "IWKIT_EXPORT_DIR="+dir, "IWKIT_EXPORT_FILE="+file)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child %s: %v\n%s", mode, err, out)
	}
}

// run feeds the pipeline over file to e, without finishing it.
func run(e *Exporter, file string) *analyze.Report {
	src, _, err := analyze.OpenFiles([]string{file})
	if err != nil {
		panic(err)
	}
	defer src.Close()
	rep, _ := analyze.Run(src, analyze.Config{Workers: 1}, e)
	return rep
}

// files lists what dir holds, relative, sorted.
func files(t *testing.T, dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			r, _ := filepath.Rel(dir, p)
			out = append(out, r)
		}
		return nil
	})
	return out
}

// oneCopy checks that every table of set x has one part, all of one
// commit, the captures row's commit_id, and that the rows read are one
// export's.
func oneCopy(t *testing.T, dir string, want Counts) {
	t.Helper()
	caps := readAll(t, dir, Captures)
	if len(caps) != 1 {
		t.Fatalf("%d captures rows", len(caps))
	}
	if n := int64(len(readAll(t, dir, Pdus))); n != want.PDUs || caps[0]["pdus"] != want.PDUs {
		t.Errorf("%d pdu rows, captures says %v, want %d", n, caps[0]["pdus"], want.PDUs)
	}
	if n := int64(len(readAll(t, dir, Operations))); n != want.Operations {
		t.Errorf("%d operations rows, want %d", n, want.Operations)
	}
	id := caps[0]["commit_id"].(string)
	fs := files(t, dir)
	if len(fs) != len(Tables) {
		t.Errorf("files %v", fs)
	}
	for _, f := range fs {
		if filepath.Base(f) != "part-"+id+".parquet" {
			t.Errorf("%s is not of commit %s", f, id)
		}
	}
}

// TestOverlappingWriters: two exports of one capture set at once leave
// one copy whichever commits first (the later commit is the live one),
// and ReadTable never sees two even before the garbage goes.
func TestOverlappingWriters(t *testing.T) {
	file := "../testdata/siw/crc_rping.pcap"
	for _, order := range []string{"started first commits last", "started first commits first"} {
		t.Run(order, func(t *testing.T) {
			dir := t.TempDir()
			o := Options{Dir: dir, Capture: "x", Files: []string{file}}
			a, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			repA := run(a, file)
			b, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			repB := run(b, file)
			first, second := b, a
			r1, r2 := repB, repA
			if order == "started first commits first" {
				first, second, r1, r2 = a, b, repA, repB
			}
			if _, err := first.Finish(r1); err != nil {
				t.Fatal(err)
			}
			n, err := second.Finish(r2)
			if err != nil {
				t.Fatal(err)
			}
			oneCopy(t, dir, n)
			if got := readAll(t, dir, Captures)[0]["writer"]; got != second.id {
				t.Errorf("live copy by writer %v, want the last committed, %s", got, second.id)
			}
		})
	}
}

// TestKillBetweenCommitAndCleanup: a writer that dies after its commit,
// before removing the older copy, leaves two copies on disk; readers
// see the newer only, and the next export removes the older.
func TestKillBetweenCommitAndCleanup(t *testing.T) {
	file := "../testdata/siw/crc_rping.pcap"
	dir := t.TempDir()
	first := Export(Set{Capture: "x", Files: []string{file}}, Config{Dir: dir})
	if first.Err != nil {
		t.Fatal(first.Err)
	}
	child(t, "commit", dir, file)
	s := ScanCapture(dir, "x")
	if len(s.Commits) != 2 || len(s.Parts[Pdus]) != 2 {
		t.Fatalf("after the kill: %v", files(t, dir))
	}
	caps := readAll(t, dir, Captures)
	if len(caps) != 1 || caps[0]["commit_id"] != s.Live() {
		t.Fatalf("captures %v, live %s", caps, s.Live())
	}
	if n := int64(len(readAll(t, dir, Pdus))); n != first.Counts.PDUs {
		t.Fatalf("%d pdu rows, want %d", n, first.Counts.PDUs)
	}
	again := Export(Set{Capture: "x", Files: []string{file}}, Config{Dir: dir})
	if again.Err != nil {
		t.Fatal(again.Err)
	}
	oneCopy(t, dir, again.Counts)
}

// TestOrphanTemporaries: writers killed while writing leave their
// temporary files; while one is locked by a live writer or younger than
// orphanGrace it stays, and the next export of the set removes the
// orphans once they are older.
func TestOrphanTemporaries(t *testing.T) {
	file := "../testdata/siw/crc_rping.pcap"
	dir := t.TempDir()
	child(t, "write", dir, file)
	child(t, "write", dir, file)
	temps := ScanCapture(dir, "x").Temps
	if len(temps) != 2*len(Tables) {
		t.Fatalf("temporaries after two kills: %v", files(t, dir))
	}
	// A live writer's temporaries, made long ago, stay locked.
	live, err := New(Options{Dir: dir, Capture: "x", Files: []string{file}})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Abort()
	old := time.Now().Add(-2 * orphanGrace)
	for _, p := range ScanCapture(dir, "x").Temps {
		os.Chtimes(p, old, old)
	}
	res := Export(Set{Capture: "x", Files: []string{file}}, Config{Dir: dir})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	left := ScanCapture(dir, "x").Temps
	for _, p := range left {
		if !strings.Contains(p, live.id) {
			t.Errorf("orphan %s left", p)
		}
	}
	if len(left) != len(Tables) {
		t.Errorf("the live writer's temporaries: %v", left)
	}
	live.Abort()
	if l := ScanCapture(dir, "x").Temps; len(l) != 0 {
		t.Errorf("after Abort: %v", l)
	}
}

// TestInterrupt: Interrupt (iwdump's SIGINT) removes the temporaries of
// a set being written, which then commits nothing, and refuses new sets.
func TestInterrupt(t *testing.T) {
	file := "../testdata/siw/crc_rping.pcap"
	dir := t.TempDir()
	e, err := New(Options{Dir: dir, Capture: "x", Files: []string{file}})
	if err != nil {
		t.Fatal(err)
	}
	rep := run(e, file)
	defer func() { stopped = false }()
	if n := Interrupt(); n != 1 {
		t.Errorf("Interrupt stopped %d sets", n)
	}
	if _, err := e.Finish(rep); !errors.Is(err, ErrInterrupted) {
		t.Errorf("Finish after Interrupt: %v", err)
	}
	if _, err := New(Options{Dir: dir, Capture: "y", Files: []string{file}}); !errors.Is(err, ErrInterrupted) {
		t.Errorf("New after Interrupt: %v", err)
	}
	if fs := files(t, dir); len(fs) != 0 {
		t.Errorf("left %v", fs)
	}
}

// TestCaptureIdentity: a name holding other content is refused unless
// Replace; the same content is skipped with SkipExisting; the captures
// row records the hash, absolute paths, host, tags.
func TestCaptureIdentity(t *testing.T) {
	dir := t.TempDir()
	a, b := "../testdata/siw/crc_rping.pcap", "../testdata/siw/term_read_badstag.pcap"
	if r := Export(Set{Capture: "trace", Files: []string{a}}, Config{Dir: dir, Tags: []string{"site=lab1"}}); r.Err != nil {
		t.Fatal(r.Err)
	}
	rec, err := LiveRecord(dir, "trace")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ContentHash([]string{a})
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o644)
	// XXH128 of no octets, xxhsum -H2's canonical form (xxHash's
	// sanity test vector).
	if h, err := ContentHash([]string{empty}); h != "xxh3-128:99aa06d3014798d86001c324468d497f" {
		t.Errorf("hash of nothing %s %v", h, err)
	}
	abs, _ := filepath.Abs(a)
	host, _ := os.Hostname()
	if rec["content_hash"] != want || !slices.Equal(rec["paths"].([]string), []string{abs}) || rec["host"] != host ||
		!slices.Equal(rec["tags"].([]string), []string{"site=lab1"}) || rec["truncated"] != false || !strings.HasPrefix(want, "xxh3-128:") {
		t.Errorf("record %v", rec)
	}
	r := Export(Set{Capture: "trace", Files: []string{b}}, Config{Dir: dir})
	if !errors.Is(r.Err, ErrNameTaken) || !strings.Contains(r.Err.Error(), abs) {
		t.Fatalf("other content under the name: %v", r.Err)
	}
	if rec2, _ := LiveRecord(dir, "trace"); rec2["commit_id"] != rec["commit_id"] {
		t.Fatal("the refused export replaced the set")
	}
	if fs := files(t, dir); len(fs) != len(Tables) {
		t.Errorf("refused export left %v", fs)
	}
	if r := Export(Set{Capture: "trace", Files: []string{a}}, Config{Dir: dir, SkipExisting: true}); r.Err != nil || !r.Skipped {
		t.Errorf("skip existing: %+v", r)
	}
	if rec2, _ := LiveRecord(dir, "trace"); rec2["commit_id"] != rec["commit_id"] {
		t.Error("the skipped export wrote")
	}
	if r := Export(Set{Capture: "trace", Files: []string{b}}, Config{Dir: dir, Replace: true}); r.Err != nil {
		t.Fatal(r.Err)
	}
	if rec2, _ := LiveRecord(dir, "trace"); rec2["content_hash"] == want {
		t.Error("Replace did not replace")
	}
}

// TestContentHashWhileReading: the export of one file takes its content
// hash from the octets the analysis reads, and hashes what the analysis
// did not read (a frame count, a damaged tail) too: the hash is
// ContentHash's of the whole file, whatever stopped the reading.
func TestContentHashWhileReading(t *testing.T) {
	data, err := os.ReadFile("../testdata/siw/crc_rping.pcap")
	if err != nil {
		t.Fatal(err)
	}
	damaged := filepath.Join(t.TempDir(), "damaged.pcap")
	os.WriteFile(damaged, append(data[:len(data)-7:len(data)-7], 0xff, 0xfe, 0xfd), 0o644)
	// Larger than the reader's buffer: a frame count leaves most unread.
	big := filepath.Join(t.TempDir(), "big.pcap")
	sc, err := gen.Builtin("bulk-write", gen.Params{Seed: 1, Count: 60, Size: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pcap.NewWriter(f, pcap.FormatPcap, layers.LinkTypeEthernet, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.Run(sc, w, nil); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	f.Close()
	if st, _ := os.Stat(big); st.Size() < 2<<20 {
		t.Fatalf("big.pcap: %d octets", st.Size())
	}
	for _, c := range []struct {
		file  string
		count int
	}{{"../testdata/siw/crc_rping.pcap", 0}, {big, 3}, {big, 0}, {damaged, 0}} {
		dir := t.TempDir()
		r := Export(Set{Capture: "x", Files: []string{c.file}}, Config{Dir: dir, Count: c.count})
		if r.Err != nil && c.file != damaged {
			t.Fatal(r.Err)
		}
		rec, err := LiveRecord(dir, "x")
		if err != nil || rec == nil {
			t.Fatalf("%s: no record (%v, %v)", c.file, err, r.Err)
		}
		want, _ := ContentHash([]string{c.file})
		if rec["content_hash"] != want || want == "" {
			t.Errorf("%s, count %d: content_hash %v, want %s", c.file, c.count, rec["content_hash"], want)
		}
	}
}

// TestTruncatedRecorded: a capture cut short is exported up to the
// damage, and captures says so.
func TestTruncatedRecorded(t *testing.T) {
	data, err := os.ReadFile("../testdata/siw/crc_rping.pcap")
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.pcap")
	os.WriteFile(cut, data[:len(data)-7], 0o644)
	dir := t.TempDir()
	r := Export(Set{Capture: "cut", Files: []string{cut}}, Config{Dir: dir})
	if r.Err == nil {
		t.Fatal("no error for a truncated file")
	}
	rec, err := LiveRecord(dir, "cut")
	if err != nil || rec == nil {
		t.Fatal(err)
	}
	if rec["truncated"] != true || rec["error"] != r.Err.Error() {
		t.Errorf("record %v, error %v", rec, r.Err)
	}
}

// TestCheckPart: a part cut anywhere is unreadable.
func TestCheckPart(t *testing.T) {
	dir := t.TempDir()
	exportOne(t, "../testdata/siw/crc_rping.pcap", dir)
	p := PartPath(dir, Pdus, "crc_rping", ScanCapture(dir, "crc_rping").Live())
	if err := CheckPart(p); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	for _, n := range []int{0, 3, 11, len(data) / 2, len(data) - 1} {
		os.WriteFile(p, data[:n], 0o644)
		if err := CheckPart(p); !errors.Is(err, ErrUnreadable) {
			t.Errorf("cut at %d: %v", n, err)
		}
	}
}

// TestCommunityIDColumns: connections, operations and commands rows
// carry their connection's Community ID v1 (communityid's test vectors
// check the hash itself).
func TestCommunityIDColumns(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"../testdata/siw/term_read_badstag.pcap", "../testdata/ulp/crc_nvmeof.pcap"} {
		exportOne(t, f, dir)
	}
	byConn := map[string]string{}
	for _, c := range readAll(t, dir, Connections) {
		a, b := netip.MustParseAddrPort(c["initiator"].(string)), netip.MustParseAddrPort(c["responder"].(string))
		want := communityid.V1(0, communityid.ProtoTCP, a, b)
		if c["community_id"] != want {
			t.Errorf("connection %v: community_id %v, want %s", c["conn"], c["community_id"], want)
		}
		byConn[fmt.Sprint(c["capture"], c["conn"])] = want
	}
	for _, tb := range []*Table{Operations, Commands} {
		n := 0
		for _, r := range readAll(t, dir, tb) {
			if r["conn"] == nil {
				continue
			}
			n++
			if want := byConn[fmt.Sprint(r["capture"], r["conn"])]; r["community_id"] != want {
				t.Errorf("%s row %v: community_id %v, want %s", tb.Name, r, r["community_id"], want)
			}
		}
		if n == 0 {
			t.Errorf("no %s rows", tb.Name)
		}
	}
}
