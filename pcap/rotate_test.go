package pcap

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
)

func countFrames(t *testing.T, path string) int {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	var f Frame
	for {
		err := r.Next(&f)
		if err == io.EOF {
			return n
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		n++
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// -C: a file is closed before the frame that finds it over the limit, so
// it ends with the frame that crossed it; names are NAME, NAME1, NAME2.
func TestRotateBySize(t *testing.T) {
	for _, format := range []Format{FormatPcap, FormatPcapNG} {
		t.Run(string(format), func(t *testing.T) {
			dir := t.TempDir()
			name := filepath.Join(dir, "cap")
			w, err := CreateRotating(name, RotateOptions{Format: format, LinkType: layers.LinkTypeEthernet, FileSize: 1000})
			if err != nil {
				t.Fatal(err)
			}
			frame := make([]byte, 100)
			ts := time.Unix(1700000000, 0)
			for i := 0; i < 25; i++ {
				if err := w.WriteFrame(ts, frame, 0); err != nil {
					t.Fatal(err)
				}
				// The size kept matches the file once flushed.
				if i == 3 {
					w.Flush()
					st, _ := os.Stat(w.Current())
					if st.Size() != w.size {
						t.Fatalf("tracked size %d, file %d", w.size, st.Size())
					}
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got := listDir(t, dir)
			want := map[Format]string{FormatPcap: "cap cap1 cap2", FormatPcapNG: "cap cap1 cap2 cap3"}[format]
			if strings.Join(got, " ") != want {
				t.Fatalf("files %v, want %s", got, want)
			}
			// pcap: 24 + 9*116 = 1068 > 1000 after 9 frames; pcapng:
			// its header blocks, then 132 octets a frame.
			per := map[Format]int{FormatPcap: 9, FormatPcapNG: 0}[format]
			total := 0
			for _, n := range got {
				c := countFrames(t, filepath.Join(dir, n))
				if per != 0 && n != "cap2" && c != per {
					t.Errorf("%s: %d frames, want %d", n, c, per)
				}
				total += c
			}
			if total != 25 {
				t.Errorf("%d frames in all, want 25", total)
			}
			if w.Files() != len(got) || w.Written() != 25 {
				t.Errorf("files %d written %d", w.Files(), w.Written())
			}
		})
	}
}

// -C with -W: names padded to the width of W-1, wrapping around.
func TestRotateRing(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "ring.pcap")
	w, err := CreateRotating(name, RotateOptions{LinkType: layers.LinkTypeEthernet, FileSize: 200, MaxFiles: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if err := w.WriteFrame(time.Unix(0, 0), make([]byte, 100), 0); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if got := strings.Join(listDir(t, dir), " "); got != "ring.pcap0 ring.pcap1 ring.pcap2" {
		t.Fatalf("files %s", got)
	}
}

// -G: a new file when a frame comes Interval after the file was opened,
// named through strftime; -W alone ends the capture after W files.
func TestRotateByTime(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2024, 5, 6, 7, 8, 9, 0, time.Local)
	clock := func() time.Time { return now }
	name := filepath.Join(dir, "cap-%Y%m%d-%H%M%S.pcapng")
	w, err := CreateRotating(name, RotateOptions{LinkType: layers.LinkTypeEthernet, Interval: 10 * time.Second, MaxFiles: 3, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	var limit error
	for i := 0; i < 40; i++ {
		if err := w.WriteFrame(now, make([]byte, 60), 0); err != nil {
			limit = err
			break
		}
		now = now.Add(time.Second)
	}
	w.Close()
	if limit != ErrFileLimit {
		t.Fatalf("want ErrFileLimit, have %v", limit)
	}
	got := listDir(t, dir)
	want := []string{"cap-20240506-070809.pcapng", "cap-20240506-070819.pcapng", "cap-20240506-070829.pcapng"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("files %v, want %v", got, want)
	}
	for _, n := range got {
		r, err := Open(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if r.Format() != FormatPcapNG {
			t.Errorf("%s: format %s", n, r.Format())
		}
		r.Close()
		if c := countFrames(t, filepath.Join(dir, n)); c != 10 {
			t.Errorf("%s: %d frames, want 10", n, c)
		}
	}
}

// -G with -C: numbering restarts in each time window.
func TestRotateTimeAndSize(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.Local)
	w, err := CreateRotating(filepath.Join(dir, "c%M"), RotateOptions{LinkType: layers.LinkTypeEthernet,
		Interval: time.Minute, FileSize: 300, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ {
		if i == 4 {
			now = now.Add(time.Minute)
		}
		if err := w.WriteFrame(now, make([]byte, 100), 0); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if got := strings.Join(listDir(t, dir), " "); got != "c00 c001 c01 c011" {
		t.Fatalf("files %s", got)
	}
}

func TestParseFileSize(t *testing.T) {
	for in, want := range map[string]int64{"1": 1000000, "10": 10000000, "1k": 1024, "2M": 2 << 20, "1g": 1 << 30} {
		if got, err := ParseFileSize(in); err != nil || got != want {
			t.Errorf("%s: %d %v, want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "-1", "x", "1x", "k"} {
		if _, err := ParseFileSize(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestStrftime(t *testing.T) {
	tm := time.Date(2024, 3, 4, 15, 6, 7, 0, time.UTC)
	for f, want := range map[string]string{
		"plain":              "plain",
		"%Y-%m-%d_%H:%M:%S":  "2024-03-04_15:06:07",
		"%y%j %I%p %a %b %%": "24064 03PM Mon Mar %",
		"%s":                 "1709564767",
		"%F %T %q":           "2024-03-04 15:06:07 %q",
	} {
		if got := Strftime(f, tm); got != want {
			t.Errorf("%q: %q, want %q", f, got, want)
		}
	}
}

// Records written straight into the file's buffer (WriteFrameKeep) are
// the octets pcapgo's writers produce, for both formats, including
// pcapng's padding and frames captured short of their length; the copy
// handed back is the frame, and stays so while its chunk is held.
func TestWriteFrameKeepSameOctets(t *testing.T) {
	for _, format := range []Format{FormatPcap, FormatPcapNG} {
		t.Run(string(format), func(t *testing.T) {
			dir := t.TempDir()
			name := filepath.Join(dir, "keep")
			w, err := CreateRotating(name, RotateOptions{Format: format, LinkType: layers.LinkTypeEthernet, Snaplen: 65535, Keep: 2})
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			ref, err := NewWriter(&want, format, layers.LinkTypeEthernet, 65535)
			if err != nil {
				t.Fatal(err)
			}
			ts := time.Unix(1700000000, 123456789)
			type kept struct {
				data []byte
				copy []byte
				c    *Chunk
			}
			var held []kept
			var group *scribbler
			var groups []*scribbler
			for i := 0; i < 3000; i++ {
				data := make([]byte, 1+i*37%1500)
				for j := range data {
					data[j] = byte(i + j)
				}
				orig := len(data) + i%3
				at := ts.Add(time.Duration(i) * time.Microsecond)
				if err := ref.WriteFrame(at, data, orig); err != nil {
					t.Fatal(err)
				}
				if i/250%2 == 1 {
					// Written from where it is, held by group until in
					// the file (then scribbled over).
					if i%10 == 0 || group == nil {
						// The reader's own reference, as a ring
						// reader holds the block it reads.
						if group != nil {
							group.Release()
						}
						group = &scribbler{}
						group.Hold()
						groups = append(groups, group)
					}
					group.data = append(group.data, data)
					if err := w.WriteFrameHeld(at, data, orig, group); err != nil {
						t.Fatal(err)
					}
					continue
				}
				cp, c, err := w.WriteFrameKeep(at, data, orig)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(cp, data) {
					t.Fatalf("frame %d: the copy differs", i)
				}
				if i%500 == 0 {
					c.Hold()
					held = append(held, kept{data, cp, c})
				}
			}
			if group != nil {
				group.Release()
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			ref.Flush()
			for i, g := range groups {
				if g.refs.Load() != 0 {
					t.Fatalf("group %d of held frames still held after Close", i)
				}
			}
			for _, k := range held {
				if !bytes.Equal(k.copy, k.data) {
					t.Error("a held copy changed")
				}
				k.c.Release()
			}
			got, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want.Bytes()) {
				t.Fatalf("%d octets written, pcapgo writes %d; first difference at %d", len(got), want.Len(), firstDiff(got, want.Bytes()))
			}
		})
	}
}

// scribbler holds frames written from where they are, and overwrites them
// once released: a file written after the release shows it.
type scribbler struct {
	data [][]byte
	refs atomic.Int32
}

func (s *scribbler) Hold() { s.refs.Add(1) }
func (s *scribbler) Release() {
	if s.refs.Add(-1) == 0 {
		for _, d := range s.data {
			for i := range d {
				d[i] = 0xee
			}
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// A chunk goes back to its pool only when every holder has released it,
// and the pool never has more than its limit out.
func TestChunkPoolHolds(t *testing.T) {
	p := NewChunkPool(64, 2)
	a := p.Get(false)
	b := p.Get(false)
	if a == nil || b == nil || p.Get(false) != nil {
		t.Fatal("the pool gave more or fewer than its limit of 2")
	}
	a.Append([]byte("frame"))
	a.Hold()
	a.Release()
	if p.Get(false) != nil {
		t.Fatal("a chunk still held was reused")
	}
	gen := a.Gen()
	a.Release()
	c := p.Get(false)
	if c != a || c.Len() != 0 || c.Gen() == gen {
		t.Fatalf("the released chunk did not come back empty with a new generation")
	}
	if c.Append(make([]byte, 65)) != nil {
		t.Fatal("a chunk took more than its size")
	}
	b.Release()
	c.Release()
}

// BenchmarkWriteFrameKeep is -w's cost per frame on the live path: one
// copy into the file's buffer, no allocation.
func BenchmarkWriteFrameKeep(b *testing.B) {
	w, err := CreateRotating(filepath.Join(b.TempDir(), "b.pcap"), RotateOptions{LinkType: layers.LinkTypeEthernet})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	data := make([]byte, 65226)
	ts := time.Now()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := w.WriteFrameKeep(ts, data, len(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// Frames written from where they are (WriteFrameHeld) rotate as copied
// ones do (-C): each file ends with the frame that crossed the limit, the
// frames stay in order across files, and every hold is released.
func TestRotateHeld(t *testing.T) {
	for _, format := range []Format{FormatPcap, FormatPcapNG} {
		t.Run(string(format), func(t *testing.T) {
			dir := t.TempDir()
			name := filepath.Join(dir, "cap")
			w, err := CreateRotating(name, RotateOptions{Format: format, LinkType: layers.LinkTypeEthernet, FileSize: 10000})
			if err != nil {
				t.Fatal(err)
			}
			ts := time.Unix(1700000000, 0)
			var groups []*scribbler
			for i := 0; i < 100; i++ {
				if i%7 == 0 {
					// The reader's own reference, as a ring reader
					// holds the block it reads.
					if len(groups) > 0 {
						groups[len(groups)-1].Release()
					}
					g := &scribbler{}
					g.Hold()
					groups = append(groups, g)
				}
				g := groups[len(groups)-1]
				frame := make([]byte, 1000+i)
				binary.BigEndian.PutUint32(frame, uint32(i))
				g.data = append(g.data, frame)
				if err := w.WriteFrameHeld(ts, frame, 0, g); err != nil {
					t.Fatal(err)
				}
			}
			groups[len(groups)-1].Release()
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			for i, g := range groups {
				if g.refs.Load() != 0 {
					t.Fatalf("group %d still held after Close", i)
				}
			}
			files := listDir(t, dir)
			if len(files) < 10 {
				t.Fatalf("files %v: want a new one about every 10 KB", files)
			}
			sort.Slice(files, func(a, b int) bool {
				return len(files[a]) < len(files[b]) || len(files[a]) == len(files[b]) && files[a] < files[b]
			})
			next := 0
			for _, n := range files {
				r, err := Open(filepath.Join(dir, n))
				if err != nil {
					t.Fatal(err)
				}
				var f Frame
				for r.Next(&f) == nil {
					if len(f.Data) != 1000+next || binary.BigEndian.Uint32(f.Data) != uint32(next) || f.Data[len(f.Data)-1] != 0 {
						t.Fatalf("%s: frame %d is not frame %d as written", n, f.Number, next)
					}
					next++
				}
				r.Close()
			}
			if next != 100 || w.Written() != 100 {
				t.Errorf("%d frames in the files, %d written, want 100", next, w.Written())
			}
		})
	}
}
