package pcap

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// TestIndexedReaderMatchesReader reads real captures through both readers:
// same frames, and every record read again at its offset is the same.
func TestIndexedReaderMatchesReader(t *testing.T) {
	files, _ := filepath.Glob("../testdata/siw/*.pcap")
	if len(files) == 0 {
		t.Fatal("no captures in ../testdata/siw")
	}
	for _, name := range files[:min(len(files), 4)] {
		ir, err := OpenIndexed(name)
		if err != nil {
			t.Fatal(err)
		}
		r, err := Open(name)
		if err != nil {
			t.Fatal(err)
		}
		rr := ir.Random()
		var a, b, c Frame
		var buf []byte
		n := 0
		for {
			ea, eb := ir.Next(&a), r.Next(&b)
			if ea != eb {
				t.Fatalf("%s: errors differ: %v vs %v", name, ea, eb)
			}
			if ea == io.EOF {
				break
			}
			n++
			if a.Number != b.Number || !a.Timestamp.Equal(b.Timestamp) || !bytes.Equal(a.Data, b.Data) || a.OrigLen != b.OrigLen {
				t.Fatalf("%s frame %d differs", name, n)
			}
			if buf, err = rr.ReadAt(ir.Offset(), &c, buf); err != nil {
				t.Fatal(err)
			}
			if !c.Timestamp.Equal(b.Timestamp) || !bytes.Equal(c.Data, b.Data) || c.LinkType != b.LinkType {
				t.Fatalf("%s frame %d read again at %d differs", name, n, ir.Offset())
			}
		}
		if n == 0 {
			t.Fatalf("%s: no frames", name)
		}
		ir.Close()
		r.Close()
	}
}

// TestRandomReaderOfWriter: a file Writer writes can be read at the
// offsets its records must have (24 + sum of 16 + caplen).
func TestRandomReaderOfWriter(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, FormatPcap, layers.LinkTypeEthernet, 0)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	off := int64(24)
	for i := 0; i < 50; i++ {
		d := bytes.Repeat([]byte{byte(i)}, 60+i*7)
		if err := w.WriteFrame(time.Unix(1000, int64(i)*1001).UTC(), d, 0); err != nil {
			t.Fatal(err)
		}
		offs = append(offs, off)
		off += 16 + int64(len(d))
	}
	w.Flush()
	rr, err := NewRandomReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var f Frame
	var b []byte
	for i := len(offs) - 1; i >= 0; i-- {
		if b, err = rr.ReadAt(offs[i], &f, b); err != nil {
			t.Fatal(err)
		}
		if f.CapLen != 60+i*7 || f.Data[0] != byte(i) || !f.Timestamp.Equal(time.Unix(1000, int64(i)*1001)) {
			t.Fatalf("record %d: caplen %d first %d ts %v", i, f.CapLen, f.Data[0], f.Timestamp)
		}
	}
	if _, err := rr.ReadAt(off, &f, b); err == nil {
		t.Fatal("read past the end: no error")
	}
}

func TestOpenIndexedRefusesOthers(t *testing.T) {
	dir := t.TempDir()
	ng := filepath.Join(dir, "x.pcapng")
	fh, _ := os.Create(ng)
	w, _ := NewWriter(fh, FormatPcapNG, layers.LinkTypeEthernet, 0)
	w.WriteFrame(time.Unix(1, 0), make([]byte, 60), 0)
	w.Flush()
	fh.Close()
	if _, err := OpenIndexed(ng); !errors.Is(err, ErrNotSeekable) {
		t.Fatalf("pcapng: %v, want ErrNotSeekable", err)
	}
}

// An IndexedReader reads pinned (the sharded pipeline's chunks) what it
// reads unpinned, with the same offsets, across buffers of the smallest
// size Pin takes.
func TestIndexedReaderPinned(t *testing.T) {
	for i, data := range classicSeeds(t) {
		var big []byte
		for len(big) < 3*PinMin+PinMin/3 {
			big = append(big, data[24:]...)
		}
		name := filepath.Join(t.TempDir(), "big.pcap")
		if err := os.WriteFile(name, append(data[:24:24], big...), 0o644); err != nil {
			t.Fatal(err)
		}
		plain, err := OpenIndexed(name)
		if err != nil {
			continue // a seed OpenIndexed does not take
		}
		pinned, err := OpenIndexed(name)
		if err != nil {
			t.Fatal(err)
		}
		if !pinned.Pin(make([]byte, PinMin)) {
			t.Fatal("Pin refused a buffer of PinMin octets")
		}
		var a, b Frame
		pins, n := 1, 0
		for {
			ea := plain.Next(&a)
			eb := pinned.Next(&b)
			for eb == ErrBufferFull {
				if !pinned.Pin(make([]byte, PinMin)) {
					t.Fatal("Pin refused a buffer")
				}
				pins++
				eb = pinned.Next(&b)
			}
			if (ea == nil) != (eb == nil) || ea == io.EOF != (eb == io.EOF) {
				t.Fatalf("seed %d frame %d: %v pinned, %v not", i, n+1, eb, ea)
			}
			if ea != nil {
				break
			}
			n++
			if a.Number != b.Number || !bytes.Equal(a.Data, b.Data) || plain.Offset() != pinned.Offset() {
				t.Fatalf("seed %d frame %d differs pinned", i, n)
			}
		}
		plain.Close()
		pinned.Close()
		if n == 0 || pins < 4 {
			t.Errorf("seed %d: %d frames, %d buffers", i, n, pins)
		}
	}
}
