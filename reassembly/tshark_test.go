package reassembly

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/internal/oracle"

	"github.com/iwkit/iwkit/pcap"
)

// The differential test: over every real capture we have, the FPDUs the
// assembler finds must be the ones tshark finds, in the same frames, with
// the same ULPDU_Length and RDMAP opcode. tshark sees FPDUs only after an MPA
// handshake and without markers; the captures here are such (the cases
// tshark cannot handle are checked against how synthetic captures were
// built, in reassembly_test.go).

// realCaptures lists the captures of Linux siw, an independent
// implementation, committed in testdata/siw, and any others in testdata/.
func realCaptures(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"../testdata/siw/*.pcap*", "../testdata/*.pcap*"} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Skip("no real captures found")
	}
	return files
}

// fpduKey is what both sides report per FPDU.
type fpduKey struct {
	frame  int
	ulpdu  int
	opcode int
}

func tsharkFPDUs(t *testing.T, file string) []fpduKey {
	t.Helper()
	rows := oracle.Fields(t, file, "iwarp_mpa.ulpdulength", "iwarp_mpa.ulpdulength", "iwarp_rdma.opcode")
	frames := make([]int, 0, len(rows))
	for f := range rows {
		frames = append(frames, f)
	}
	sort.Ints(frames)
	var keys []fpduKey
	for _, frame := range frames {
		lens, ops := rows[frame]["iwarp_mpa.ulpdulength"], rows[frame]["iwarp_rdma.opcode"]
		for i, l := range lens {
			n, err := strconv.Atoi(l)
			if err != nil {
				t.Fatalf("frame %d: ulpdulength %q: %v", frame, l, err)
			}
			op := -1
			if i < len(ops) && ops[i] != "" {
				v, err := strconv.ParseUint(strings.TrimPrefix(ops[i], "0x"), 16, 8)
				if err != nil {
					t.Fatalf("frame %d: opcode %q: %v", frame, ops[i], err)
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
	oracle.Tshark(t)
	for _, file := range realCaptures(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			want := tsharkFPDUs(t, file)
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

// capFrame is one frame of a capture, kept for replaying with impairments.
type capFrame struct {
	num int
	fr  pcap.Frame
}

func readFrames(t *testing.T, file string) []pcap.Frame {
	t.Helper()
	rd, err := pcap.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var out []pcap.Frame
	for {
		var fr pcap.Frame
		err := rd.Next(&fr)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		fr.Data = append([]byte(nil), fr.Data...)
		out = append(out, fr)
	}
}

func assembleFrames(t testing.TB, frames []pcap.Frame, keep func(i int, p *pcap.Packet) bool) *recorder {
	r := &recorder{t: t}
	a := New(Config{}, r)
	var p pcap.Packet
	for i := range frames {
		if pcap.DecodeTCP(frames[i].LinkType, frames[i].Data, &p) != nil {
			continue
		}
		if keep != nil && !keep(i, &p) {
			continue
		}
		a.Feed(frames[i].Number, frames[i].Timestamp, &p)
	}
	a.Flush()
	r.stats = a.Stats()
	return r
}

type pduID struct {
	src     netip.AddrPort
	seq     uint32
	len     int
	ff, lf  int
	payload string
}

func completeFPDUs(r *recorder) []pduID {
	var out []pduID
	for _, p := range r.pdus {
		if !p.frame && p.missing == 0 {
			out = append(out, pduID{p.src, p.seq, p.len, p.ff, p.lf, string(p.ulpdu)})
		}
	}
	return out
}

// TestRealCapturesImpaired replays the real captures without their first
// part (no handshake: parameters inferred) and without one data frame in the
// middle (resync). The unimpaired run, which agrees with tshark, is the
// truth: every FPDU found must be in it, and every FPDU of it that lies wholly
// in the frames kept must be found, allowing the FPDUs before the first
// validated chain of each direction of a capture started mid-stream.
func TestRealCapturesImpaired(t *testing.T) {
	for _, file := range realCaptures(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			frames := readFrames(t, file)
			truth := completeFPDUs(assembleFrames(t, frames, nil))
			if len(truth) < 20 {
				t.Skip("too few FPDUs")
			}
			inTruth := map[pduID]bool{}
			for _, f := range truth {
				inTruth[f] = true
			}
			check := func(name string, r *recorder, kept func(f pduID) bool, slack int) {
				got := completeFPDUs(r)
				found := map[pduID]bool{}
				for _, f := range got {
					if !inTruth[f] {
						t.Errorf("%s: FPDU from %v %d@%d frames %d-%d not in the truth\n%s", name, f.src, f.len, f.seq, f.ff, f.lf, r.dump())
						return
					}
					found[f] = true
				}
				missed := 0
				for _, f := range truth {
					if kept(f) && !found[f] {
						missed++
					}
				}
				if missed > slack {
					t.Errorf("%s: missed %d FPDUs (slack %d) of %d\n%s", name, missed, slack, len(truth), r.dump())
				}
				t.Logf("%s: %d FPDUs, missed %d, %d resyncs, %d gaps", name, len(got), missed, len(r.resync), len(r.gaps))
			}

			// Mid-stream: drop the first third of the frames.
			cut := len(frames) / 3
			cutFrame := frames[cut].Number
			r := assembleFrames(t, frames, func(i int, p *pcap.Packet) bool { return i >= cut })
			check("mid-stream", r, func(f pduID) bool { return f.ff >= cutFrame }, 2*3*2)
			for _, c := range r.final {
				for d := range 2 {
					if !c.Params[0].HasFrame && !c.Params[1].HasFrame && c.Params[d].MarkersSource == SourceHandshake {
						t.Errorf("mid-stream: params from a handshake not seen: %+v\n%s", c, r.dump())
					}
				}
			}

			// Loss: drop the data frame in the middle of the capture.
			mid := -1
			var p pcap.Packet
			for i := len(frames) / 2; i < len(frames); i++ {
				if pcap.DecodeTCP(frames[i].LinkType, frames[i].Data, &p) == nil && len(p.Payload) > 0 {
					mid = i
					break
				}
			}
			if mid < 0 {
				return
			}
			lost := frames[mid].Number
			r = assembleFrames(t, frames, func(i int, p *pcap.Packet) bool { return i != mid })
			check("loss", r, func(f pduID) bool { return lost < f.ff || lost > f.lf }, 0)
		})
	}
}
