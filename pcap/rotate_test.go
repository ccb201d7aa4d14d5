package pcap

import (
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
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
