package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/pcap"
)

var update = flag.Bool("update", false, "rewrite the sample captures in testdata/gen")

func runIwgen(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestHelpAndErrors(t *testing.T) {
	code, stdout, _ := runIwgen(t, "--help")
	if code != exitOK {
		t.Errorf("--help: exit %d", code)
	}
	for _, want := range []string{"-scenario", "-truth", "-seed", "-size", "-drop", "-packing", "every-terminate", "exit status"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--help does not mention %q", want)
		}
	}
	for _, args := range [][]string{
		{"-bogus"},
		{"-s", "nope", "-w", filepath.Join(t.TempDir(), "x.pcap")},
		{"-s", "rping"}, // no -w
		{"-s", "rping", "-packing", "sideways", "-w", "x.pcap"},
		{"-s", "rping", "-drop", "2", "-w", "x.pcap"},
		{"-s", "rping", "-print", "xml"},
		{"extra"},
	} {
		if code, _, _ := runIwgen(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, code, exitUsage)
		}
	}
	for _, args := range [][]string{
		{"-scenario", "/nonexistent.yaml", "-w", "x.pcap"},
		{"-s", "rping", "-w", "/nonexistent/dir/x.pcap"},
	} {
		if code, _, _ := runIwgen(t, args...); code != exitError {
			t.Errorf("%v: exit %d, want %d", args, code, exitError)
		}
	}
	code, stdout, _ = runIwgen(t, "-list")
	if code != exitOK || !strings.Contains(stdout, "hostile") || !strings.Contains(stdout, "rping") {
		t.Errorf("-list: exit %d, %q", code, stdout)
	}
}

func readFrames(t *testing.T, name string) (pcap.Format, int) {
	t.Helper()
	r, err := pcap.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	var f pcap.Frame
	for {
		err := r.Next(&f)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return r.Format(), n
}

// Every built-in writes pcap and pcapng by extension, with a truth that
// counts the same frames.
func TestBuiltinsToFiles(t *testing.T) {
	dir := t.TempDir()
	for _, b := range gen.Builtins() {
		for _, ext := range []string{"pcap", "pcapng"} {
			out := filepath.Join(dir, b[0]+"."+ext)
			truth := filepath.Join(dir, b[0]+"."+ext+".json")
			if code, _, stderr := runIwgen(t, "-s", b[0], "-count", "3", "-w", out, "-truth", truth); code != exitOK {
				t.Fatalf("%s: exit %d: %s", b[0], code, stderr)
			}
			format, n := readFrames(t, out)
			if string(format) != ext {
				t.Errorf("%s: format %s", out, format)
			}
			f, err := os.Open(truth)
			if err != nil {
				t.Fatal(err)
			}
			tr, err := gen.DecodeTruth(f)
			f.Close()
			if err != nil {
				t.Fatalf("%s: %v", truth, err)
			}
			if tr.Frames != n || n == 0 || len(tr.FPDUs) == 0 || tr.Scenario != b[0] {
				t.Errorf("%s: %d frames, truth %d frames %d FPDUs scenario %q", out, n, tr.Frames, len(tr.FPDUs), tr.Scenario)
			}
		}
	}
}

// The same flags and seed give the same file; another seed another one.
func TestDeterministic(t *testing.T) {
	dir := t.TempDir()
	gen1 := func(name, seed string) []byte {
		out := filepath.Join(dir, name)
		if code, _, stderr := runIwgen(t, "-q", "-s", "mixed", "-seed", seed, "-drop", "0.05", "-reorder", "0.05", "-corrupt-crc", "0.1", "-w", out); code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b, c := gen1("a.pcap", "9"), gen1("b.pcap", "9"), gen1("c.pcap", "10")
	if !bytes.Equal(a, b) {
		t.Error("same seed, different captures")
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds, same capture")
	}
}

// -print writes a scenario file that generates the same capture as the
// built-in it came from.
func TestPrintRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, format := range []string{"yaml", "json"} {
		code, stdout, stderr := runIwgen(t, "-s", "hostile", "-seed", "4", "-print", format)
		if code != exitOK {
			t.Fatalf("-print %s: exit %d: %s", format, code, stderr)
		}
		file := filepath.Join(dir, "hostile."+format)
		if err := os.WriteFile(file, []byte(stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		a, b := filepath.Join(dir, "a.pcap"), filepath.Join(dir, "b.pcap")
		if code, _, stderr := runIwgen(t, "-q", "-s", "hostile", "-seed", "4", "-w", a); code != exitOK {
			t.Fatal(stderr)
		}
		if code, _, stderr := runIwgen(t, "-q", "-scenario", file, "-seed", "4", "-w", b); code != exitOK {
			t.Fatal(stderr)
		}
		ab, _ := os.ReadFile(a)
		bb, _ := os.ReadFile(b)
		if !bytes.Equal(ab, bb) {
			t.Errorf("-print %s: the printed scenario generates another capture", format)
		}
	}
}

// -size repeats the operations until the capture is that big; no truth is
// kept; overrides apply to every connection.
func TestSizeAndOverrides(t *testing.T) {
	out := filepath.Join(t.TempDir(), "big.pcap")
	code, _, stderr := runIwgen(t, "-s", "bulk-write", "-conns", "3", "-size", "3MB", "-mss", "9000", "-markers", "-timestamps=false", "-w", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "frames") {
		t.Errorf("no summary: %q", stderr)
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() < 3e6 || st.Size() > 3.5e6 {
		t.Errorf("capture of %d octets for -size 3MB", st.Size())
	}
	sc, err := scenario(&options{builtin: "rping", mss: 700, packing: "pack", crc: boolFlag{true, true}, mpaRev: 1,
		markers: boolFlag{true, true}, count: 2})
	if err != nil {
		t.Fatal(err)
	}
	c := sc.Connections[0]
	if c.MSS != 700 || c.Packing != "pack" || !c.MPA.CRC || *c.MPA.Rev != 1 || !c.MPA.MarkersI2R || !c.MPA.MarkersR2I {
		t.Errorf("overrides not applied: %+v", c)
	}
}

// The samples in testdata/gen are what the current generator writes (run
// with -update after an intended change). The impaired ones live in a
// subdirectory so that differential decoder tests, which expect tshark and
// iwdump to agree, do not pick them up.
func TestSamples(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "gen")
	for _, s := range []struct {
		name string
		args []string
	}{
		{"rping.pcap", []string{"-s", "rping", "-count", "2", "-seed", "1"}},
		{"impaired/hostile.pcapng", []string{"-s", "hostile", "-seed", "1"}},
		{"impaired/example.pcapng", []string{"-scenario", filepath.Join(root, "example.yaml")}},
	} {
		dir := t.TempDir()
		out := filepath.Join(dir, filepath.Base(s.name))
		truth := out[:len(out)-len(filepath.Ext(out))] + ".truth.json"
		args := append(append([]string{"-q"}, s.args...), "-w", out, "-truth", truth)
		if code, _, stderr := runIwgen(t, args...); code != exitOK {
			t.Fatalf("%s: exit %d: %s", s.name, code, stderr)
		}
		wantCap := filepath.Join(root, s.name)
		wantTruth := wantCap[:len(wantCap)-len(filepath.Ext(wantCap))] + ".truth.json"
		for _, pair := range [][2]string{{out, wantCap}, {truth, wantTruth}} {
			got, err := os.ReadFile(pair[0])
			if err != nil {
				t.Fatal(err)
			}
			if *update {
				if err := os.WriteFile(pair[1], got, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(pair[1])
			if err != nil {
				t.Fatalf("%v (go test -run TestSamples -update writes it)", err)
			}
			if !bytes.Equal(got, want) && !sameFrames(t, pair[0], pair[1]) {
				t.Errorf("%s differs from what iwgen %s writes now (go test -run TestSamples -update after an intended change)", pair[1], strings.Join(s.args, " "))
			}
		}
	}
}

// sameFrames compares two captures frame by frame: pcapng section headers
// name the writer's OS and architecture, so the files may differ elsewhere.
func sameFrames(t *testing.T, a, b string) bool {
	t.Helper()
	if !strings.HasSuffix(a, ".pcapng") {
		return false
	}
	ra, err := pcap.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	rb, err := pcap.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	defer rb.Close()
	var fa, fb pcap.Frame
	for {
		ea, eb := ra.Next(&fa), rb.Next(&fb)
		if ea != nil || eb != nil {
			return errors.Is(ea, io.EOF) && errors.Is(eb, io.EOF)
		}
		if !fa.Timestamp.Equal(fb.Timestamp) || fa.OrigLen != fb.OrigLen || !bytes.Equal(fa.Data, fb.Data) {
			return false
		}
	}
}
