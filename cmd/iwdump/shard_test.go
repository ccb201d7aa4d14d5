package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/pcap"
)

// shardModes are the output modes whose octets must not depend on
// --workers.
var shardModes = [][]string{
	nil, {"-V"}, {"-x"}, {"-T", "json"}, {"-Y", "finding"},
	{"-q", "-z", "conv,ops,findings,latency"}, {"-c", "300", "-z", "conv"}, {"-t", "ad"},
}

// TestWorkersSamePlot: the merged I/O graph and latency histogram draw the
// same picture.
func TestWorkersSamePlot(t *testing.T) {
	dir := t.TempDir()
	in := writeGen(t, dir, "read-heavy", gen.Params{Seed: 9, Count: 40, Conns: 6}, gen.Rates{Drop: 0.01}, time.Time{}, 0)
	var svg [2][]byte
	for i, w := range []string{"1", "3"} {
		out := filepath.Join(dir, "plot"+w+".svg")
		var o, e bytes.Buffer
		if code := run([]string{"-r", in, "-q", "--plot", out, "--workers", w}, &o, &e); code != exitOK {
			t.Fatalf("exit %d: %s", code, e.String())
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		svg[i] = b
	}
	if !bytes.Equal(svg[0], svg[1]) {
		t.Errorf("--plot differs between --workers 1 and 3")
	}
}

// writeGen writes a built-in scenario with random impairments to dir.
func writeGen(t *testing.T, dir, name string, p gen.Params, rates gen.Rates, start time.Time, keep int, edit ...func(*gen.Scenario)) string {
	t.Helper()
	sc, err := gen.Builtin(name, p)
	if err != nil {
		t.Fatal(err)
	}
	sc.Rates = rates
	for _, e := range edit {
		e(sc)
	}
	if !start.IsZero() {
		sc.Start = start
	}
	sink := &cutSink{keep: keep}
	if _, err := gen.Run(sc, sink, nil); err != nil {
		t.Fatal(err)
	}
	return writeFrames(t, dir, name+"-"+strconv.Itoa(p.Conns)+"-"+strconv.FormatInt(start.Unix(), 10)+".pcap", sink.frames)
}

// cutSink keeps, of the k-th connection (in order of appearance), its
// first keep+11k frames (all when keep is 0): connections then stop
// without FIN, each at a different point, as if the capture had lost them.
type cutSink struct {
	frames frameList
	keep   int
	pkt    pcap.Packet
	conns  map[[2]uint16]int // ports, low first -> {index, frames}
	seen   map[[2]uint16]int
}

func (s *cutSink) WriteFrame(ts time.Time, data []byte, origLen int) error {
	if s.keep > 0 && pcap.DecodeTCP(layers.LinkTypeEthernet, data, &s.pkt) == nil {
		k := [2]uint16{min(s.pkt.SrcPort, s.pkt.DstPort), max(s.pkt.SrcPort, s.pkt.DstPort)}
		if s.conns == nil {
			s.conns, s.seen = map[[2]uint16]int{}, map[[2]uint16]int{}
		}
		idx, ok := s.conns[k]
		if !ok {
			idx = len(s.conns)
			s.conns[k] = idx
		}
		s.seen[k]++
		if s.seen[k] > s.keep+11*idx {
			return nil
		}
	}
	return s.frames.WriteFrame(ts, data, origLen)
}

// TestWorkersSameOutput: sharded runs print what one shard prints, octet
// for octet, in every mode: on the real captures, on generated ones with
// many connections and every kind of damage, and on a capture where
// connections left with data outstanding expire by the idle timeout
// (every shard must expire them at the same frame).
func TestWorkersSameOutput(t *testing.T) {
	dir := t.TempDir()
	rates := gen.Rates{Drop: 0.01, Reorder: 0.01, Duplicate: 0.01, Retransmit: 0.01, RetransmitDiff: 0.005, CorruptCRC: 0.005, CorruptHeader: 0.01}
	var inputs [][]string
	for _, c := range append(goldenCaptures, "gen/rping.pcap", "gen/impaired/hostile.pcapng", "gen/impaired/example.pcapng") {
		inputs = append(inputs, []string{filepath.Join("../../testdata", c)})
	}
	terms, _ := filepath.Glob("../../testdata/siw/term_*.pcap")
	for _, c := range terms {
		inputs = append(inputs, []string{c})
	}
	for _, name := range []string{"mixed", "read-heavy", "rping", "hostile", "every-terminate"} {
		inputs = append(inputs, []string{writeGen(t, dir, name, gen.Params{Seed: 3, Count: 20, Conns: 7}, rates, time.Time{}, 0)})
	}
	inputs = append(inputs, expiryCapture(t, dir))

	for _, in := range inputs {
		var args []string
		for _, f := range in {
			args = append(args, "-r", f)
		}
		for _, m := range shardModes {
			var want []byte
			for _, w := range []int{1, 2, 3} {
				var out, errb bytes.Buffer
				code := run(append(append([]string{"--workers", strconv.Itoa(w)}, args...), m...), &out, &errb)
				if code != exitOK {
					t.Fatalf("%v %v --workers %d: exit %d: %s", in, m, w, code, errb.String())
				}
				if w == 1 {
					want = out.Bytes()
					continue
				}
				if !bytes.Equal(out.Bytes(), want) {
					t.Errorf("%v %v: --workers %d differs from --workers 1 at %s", in, m, w, firstDiff(out.Bytes(), want))
				}
			}
		}
	}
}

// expiryCapture returns two files to merge: in the first, connections
// stop mid-way (FPDUs cut across segments, some lost); the second starts
// ten minutes later on other ports, so the first ones expire by the idle
// timeout (5 minutes) as the second begins, with partial FPDUs to report.
func expiryCapture(t *testing.T, dir string) []string {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	a := writeGen(t, dir, "mixed", gen.Params{Seed: 5, Count: 20, Conns: 8}, gen.Rates{Drop: 0.02}, t0, 60, func(sc *gen.Scenario) {
		for i := range sc.Connections {
			sc.Connections[i].Packing = "stream"
		}
	})
	b := writeGen(t, dir, "read-heavy", gen.Params{Seed: 6, Count: 10, Conns: 5}, gen.Rates{}, t0.Add(10*time.Minute), 0, func(sc *gen.Scenario) {
		for i := range sc.Connections {
			sc.Connections[i].Client = "10.0.9." + strconv.Itoa(i+1) + ":50000"
		}
	})
	return []string{a, b}
}

// TestWorkersIdleExpiry checks that expiryCapture makes the idle timeout
// print something (events of expired flows carry frame 0), else the
// comparison above would not test expiry.
func TestWorkersIdleExpiry(t *testing.T) {
	in := expiryCapture(t, t.TempDir())
	var out, errb bytes.Buffer
	if code := run([]string{"-r", in[0], "-r", in[1], "--workers", "2"}, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	// Expiry happens as the first frame of the second file comes: the
	// connections of the first report their partial FPDUs and holes
	// (missing-at-close) before any line of the second file.
	conns := map[string]bool{}
	second := false
	for _, line := range bytes.Split(out.Bytes(), []byte("\n")) {
		switch {
		case bytes.Contains(line, []byte("10.0.9.")):
			second = true
		case bytes.Contains(line, []byte("missing-at-close")) || bytes.Contains(line, []byte("not captured")):
			if second {
				t.Fatalf("expiry output after the second file's: %q", line)
			}
			conns[string(bytes.Fields(line)[2])] = true
		}
	}
	if len(conns) < 3 {
		t.Fatalf("expiry output from %d connections, want several at once; output:\n%s", len(conns), out.String())
	}
}

// firstDiff describes where two outputs start to differ.
func firstDiff(got, want []byte) string {
	gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := 0; i < len(gl) || i < len(wl); i++ {
		var g, w []byte
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if !bytes.Equal(g, w) {
			return "line " + strconv.Itoa(i+1) + ":\n got " + strconv.Quote(string(g)) + "\nwant " + strconv.Quote(string(w))
		}
	}
	return "(equal)"
}

// FuzzWorkers runs whole captures (any octets as a pcap or pcapng file)
// through iwdump with one and with two workers: no input may panic it, and
// the two must print the same octets and exit alike. Seeds: the heads of
// the committed captures.
func FuzzWorkers(f *testing.F) {
	for _, c := range []string{"siw/rping.pcap", "siw/crc_rping.pcap", "siw/term_read_badstag.pcap", "gen/impaired/hostile.pcapng"} {
		b, err := os.ReadFile(filepath.Join("../../testdata", c))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 16<<10)])
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "in.pcap")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var outs [2][]byte
		var codes [2]int
		for i, w := range []string{"1", "2"} {
			var out, errb bytes.Buffer
			codes[i] = run([]string{"-r", path, "-T", "json", "--workers", w, "-z", "conv"}, &out, &errb)
			outs[i] = out.Bytes()
		}
		if codes[0] != codes[1] || !bytes.Equal(outs[0], outs[1]) {
			t.Fatalf("--workers 2 (exit %d) differs from --workers 1 (exit %d) at %s", codes[1], codes[0], firstDiff(outs[1], outs[0]))
		}
	})
}
