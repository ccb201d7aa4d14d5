package replay

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/pcap"
)

func TestPacerSchedule(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	p, _ := NewPacer(Options{PPS: 200})
	for i := 0; i < 5; i++ {
		if d := p.Due(t0, 100); d != time.Duration(i)*5*ms {
			t.Fatalf("pps: frame %d due %v", i, d)
		}
	}
	// 1 Mbit/s: a 1250-octet frame takes 10 ms.
	p, _ = NewPacer(Options{Mbps: 1})
	for i, want := range []time.Duration{0, 10 * ms, 20 * ms, 28 * ms} {
		size := 1250
		if i == 2 {
			size = 1000
		}
		if d := p.Due(t0, size); d != want {
			t.Fatalf("mbps: frame %d due %v, want %v", i, d, want)
		}
	}
	// The capture's timing, twice as fast; a second pass starts where the
	// first ended; a frame stamped earlier than its predecessor goes at once.
	p, _ = NewPacer(Options{Multiplier: 2})
	p.Pass()
	for i, c := range []struct{ ts, want time.Duration }{{0, 0}, {10 * ms, 5 * ms}, {4 * ms, 5 * ms}, {30 * ms, 15 * ms}} {
		if d := p.Due(t0.Add(c.ts), 60); d != c.want {
			t.Fatalf("multiplier: frame %d due %v, want %v", i, d, c.want)
		}
	}
	p.Pass()
	for i, c := range []struct{ ts, want time.Duration }{{0, 15 * ms}, {20 * ms, 25 * ms}} {
		if d := p.Due(t0.Add(time.Hour+c.ts), 60); d != c.want {
			t.Fatalf("second pass: frame %d due %v, want %v", i, d, c.want)
		}
	}
	p, _ = NewPacer(Options{Topspeed: true})
	if p.Due(t0, 1) != 0 || p.Due(t0.Add(time.Hour), 1) != 0 {
		t.Fatal("topspeed waits")
	}
	if _, err := NewPacer(Options{PPS: 1, Mbps: 1}); err == nil {
		t.Fatal("--pps with --mbps accepted")
	}
}

// fakeSink records frames; every third send needs a retry, frames larger
// than mtu fail.
type fakeSink struct {
	frames [][]byte
	mtu    int
	n      int
}

func (s *fakeSink) Name() string { return "fake0" }
func (s *fakeSink) Send(b []byte) (Retries, error) {
	s.n++
	if len(b) > s.mtu {
		return Retries{}, syscall.EMSGSIZE
	}
	s.frames = append(s.frames, append([]byte(nil), b...))
	if s.n%3 == 0 {
		return Retries{NoBufs: 1}, nil
	}
	return Retries{}, nil
}

// fakeBatch is a fakeSink that takes batches, stopping at a refused frame.
type fakeBatch struct{ *fakeSink }

func (s fakeBatch) SendBatch(frames [][]byte) (int, Retries, error) {
	var r Retries
	for i, f := range frames {
		rr, err := s.Send(f)
		r.NoBufs += rr.NoBufs
		if err != nil {
			return i, r, err
		}
	}
	return len(frames), r, nil
}

// fakeClock advances only when the replay sleeps.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time        { return c.t }
func (c *fakeClock) sleep(d time.Duration) { c.t = c.t.Add(d) }

func readFrames(t *testing.T, name string) [][]byte {
	r, err := pcap.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out [][]byte
	var f pcap.Frame
	for r.Next(&f) == nil {
		out = append(out, append([]byte(nil), f.Data...))
	}
	return out
}

const rpingPcap = "../testdata/siw/rping.pcap"

// TestFileAccounting runs the whole replay against a fake device and
// clock: loops, limit, duration, preload, retries, failures, the report.
func TestFileAccounting(t *testing.T) {
	want := readFrames(t, rpingPcap)
	for _, preload := range []bool{false, true} {
		c := &fakeClock{t: time.Unix(0, 0)}
		s := &fakeSink{mtu: 1 << 20}
		st, err := File(rpingPcap, s, Options{PPS: 100, Loop: 3, Preload: preload, now: c.now, sleep: c.sleep})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.frames) != 3*len(want) || st.Packets != uint64(3*len(want)) || st.NoBufs != uint64(len(want)) {
			t.Fatalf("preload %v: %d frames, stats %+v", preload, len(s.frames), st)
		}
		for i, f := range s.frames {
			if !bytes.Equal(f, want[i%len(want)]) {
				t.Fatalf("frame %d differs", i)
			}
		}
		// 150 frames at 100 pps: the last is due at 1.49 s.
		if st.Elapsed() != 1490*time.Millisecond || st.Flows != 2 || st.FlowPackets != 150 {
			t.Fatalf("elapsed %v, flows %d/%d", st.Elapsed(), st.Flows, st.FlowPackets)
		}
		var b bytes.Buffer
		st.Report(&b)
		if !strings.HasPrefix(b.String(), "Actual: 150 packets (16872 bytes) sent in 1.490000 seconds\nRated: 11323.5 Bps, 0.091 Mbps, 100.67 pps\n") ||
			!strings.Contains(b.String(), "\tRetried packets (ENOBUFS): 50\n") {
			t.Fatalf("report:\n%s", b.String())
		}
	}
	c := &fakeClock{t: time.Unix(0, 0)}
	s := &fakeSink{mtu: 1 << 20}
	st, _ := File(rpingPcap, s, Options{PPS: 100, Loop: 100, Limit: 77, now: c.now, sleep: c.sleep})
	if st.Packets != 77 {
		t.Fatalf("--limit 77: %d", st.Packets)
	}
	c = &fakeClock{t: time.Unix(0, 0)}
	st, _ = File(rpingPcap, &fakeSink{mtu: 1 << 20}, Options{PPS: 100, Loop: 100, Duration: 500 * time.Millisecond, now: c.now, sleep: c.sleep})
	if st.Packets != 50 {
		t.Fatalf("--duration 0.5 at 100 pps: %d", st.Packets)
	}
	// Frames above the MTU fail and are counted, the rest go, one at a
	// time or in batches.
	gso := "../testdata/siw/mtu1500gso_ib_write_bw_32768.pcap"
	var big, small int
	for _, f := range readFrames(t, gso) {
		if len(f) > 1514 {
			big++
		} else {
			small++
		}
	}
	for _, batch := range []bool{false, true} {
		c = &fakeClock{t: time.Unix(0, 0)}
		fs := &fakeSink{mtu: 1514}
		var sink Sink = fs
		if batch {
			sink = fakeBatch{fs}
		}
		st, _ = File(gso, sink, Options{Topspeed: true, now: c.now, sleep: c.sleep})
		if st.Failed != uint64(big) || st.Packets != uint64(small) || big == 0 || st.Elapsed() != 0 || len(fs.frames) != small {
			t.Fatalf("gso capture on a 1500 MTU (batch %v): %d big, %d small: %+v", batch, big, small, st)
		}
	}
}

func TestNonEthernetRefused(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "raw.pcap")
	f, _ := os.Create(name)
	w, err := pcap.NewWriter(f, pcap.FormatPcap, layers.LinkTypeRaw, 65535)
	if err != nil {
		t.Fatal(err)
	}
	w.WriteFrame(time.Unix(1, 0), []byte{0x45, 0, 0, 20, 0, 0, 0, 0, 64, 6, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}, 20)
	w.Flush()
	f.Close()
	if _, err := File(name, &fakeSink{mtu: 1500}, Options{}); err == nil || !strings.Contains(err.Error(), "link type") {
		t.Fatal(err)
	}
}

// tcpreplayShape reduces a report to its shape: numbers become N.
func tcpreplayShape(s string) string {
	return regexp.MustCompile(`[0-9]+(\.[0-9]+)?`).ReplaceAllString(s, "N")
}

var _ = errors.New
