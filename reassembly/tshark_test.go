package reassembly

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/pcap"
)

// The differential test: over every real capture we have, the FPDUs the
// assembler finds must be the ones tshark finds, in the same frames, with
// the same ULPDU_Length and RDMAP opcode. tshark sees FPDUs only after an MPA
// handshake and without markers; the captures here are such (the cases
// tshark cannot handle are checked against how synthetic captures were
// built, in reassembly_test.go).

// realCaptures lists the siw captures in testdata/ and the public ones,
// read from ../shared (they carry no licence: not copied into the repo).
func realCaptures(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"../testdata/siw/*.pcap*", "../testdata/*.pcap*", "../../shared/captures/public/*.pcap"} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Skip("no real captures found")
	}
	return files
}

func needTshark(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("tshark")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tshark is missing; test.sh installs it")
		}
		t.Skip("tshark not installed (./test.sh installs it)")
	}
	return p
}

// fpduKey is what both sides report per FPDU.
type fpduKey struct {
	frame  int
	ulpdu  int
	opcode int
}

func tsharkFPDUs(t *testing.T, tshark, file string) []fpduKey {
	t.Helper()
	out, err := exec.Command(tshark, "-n", "-r", file, "-Y", "iwarp_mpa.ulpdulength",
		"-T", "fields", "-e", "frame.number", "-e", "iwarp_mpa.ulpdulength", "-e", "iwarp_rdma.opcode",
		"-E", "occurrence=a", "-E", "separator=\t", "-E", "aggregator=,").Output()
	if err != nil {
		t.Fatalf("tshark on %s: %v", file, err)
	}
	var keys []fpduKey
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) < 3 {
			t.Fatalf("tshark line %q", line)
		}
		frame, _ := strconv.Atoi(f[0])
		lens := strings.Split(f[1], ",")
		ops := strings.Split(f[2], ",")
		for i, l := range lens {
			n, err := strconv.Atoi(l)
			if err != nil {
				t.Fatalf("tshark line %q: %v", line, err)
			}
			op := -1
			if i < len(ops) && ops[i] != "" {
				v, err := strconv.ParseUint(strings.TrimPrefix(ops[i], "0x"), 16, 8)
				if err != nil {
					t.Fatalf("tshark line %q: %v", line, err)
				}
				op = int(v)
			}
			keys = append(keys, fpduKey{frame, n, op})
		}
	}
	return keys
}

// assembleFile runs a capture through an Assembler.
func assembleFile(t testing.TB, file string, cfg Config) *recorder {
	t.Helper()
	rd, err := pcap.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	r := &recorder{t: t}
	a := New(cfg, r)
	r.a = a
	var fr pcap.Frame
	for {
		err := rd.Next(&fr)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if err := a.FeedFrame(&fr); err != nil && !errors.Is(err, pcap.ErrNotTCP) {
			t.Logf("%s frame %d: %v", file, fr.Number, err)
		}
	}
	a.Flush()
	r.stats = a.Stats()
	return r
}

func TestTsharkDifferential(t *testing.T) {
	tshark := needTshark(t)
	for _, file := range realCaptures(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			want := tsharkFPDUs(t, tshark, file)
			r := assembleFile(t, file, Config{})
			var got []fpduKey
			for _, p := range r.pdus {
				if p.frame || p.missing > 0 {
					continue
				}
				got = append(got, fpduKey{p.lf, len(p.ulpdu), int(p.opcode)})
			}
			slices.SortStableFunc(got, func(a, b fpduKey) int { return a.frame - b.frame })
			if !slices.Equal(got, want) {
				t.Errorf("FPDUs differ from tshark's:\n%s\nevents:\n%s", diffKeys(got, want), r.dump())
			}
			if len(r.gaps) != 0 || len(r.resync) != 0 {
				t.Logf("gaps/resyncs in a real capture:\n%s", r.dump())
			}
			t.Logf("%d FPDUs agree", len(got))
		})
	}
}

func diffKeys(got, want []fpduKey) string {
	var b strings.Builder
	for i := 0; i < max(len(got), len(want)); i++ {
		var g, w string
		if i < len(got) {
			g = fmt.Sprint(got[i])
		}
		if i < len(want) {
			w = fmt.Sprint(want[i])
		}
		mark := " "
		if g != w {
			mark = "!"
		}
		fmt.Fprintf(&b, "%s got %-20s tshark %s\n", mark, g, w)
	}
	return b.String()
}
