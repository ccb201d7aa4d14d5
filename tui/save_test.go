package tui

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/iwkit/iwkit/gen"
)

// TestWriteOpenCaptureRefused: w and W with the path of the open capture
// (spelled another way too, and for a pcapng source the index reads from a
// spill) refuse it and leave the capture as it was. The old writeFrames
// created the file, emptying the source, read 0 frames back and removed it.
func TestWriteOpenCaptureRefused(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"src.pcap", "src.pcapng"} {
		path := genCapture(t, dir, "mixed", name, gen.Params{Seed: 2, Conns: 2, Count: 3})
		before, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Open(Config{File: path})
		if err != nil {
			t.Fatal(err)
		}
		s.Wait()
		l := newList(s.Ix)
		other := filepath.Join(dir, ".", "..", filepath.Base(dir), name) // the same file, another spelling
		for _, p := range []string{path, other} {
			if _, err := WriteRows(s.Ix, l, p); !errors.Is(err, ErrSameFile) {
				t.Errorf("%s: WriteRows(%s) = %v, want ErrSameFile", name, p, err)
			}
			if _, err := WriteConn(s.Ix, 1, p); !errors.Is(err, ErrSameFile) {
				t.Errorf("%s: WriteConn(%s) = %v, want ErrSameFile", name, p, err)
			}
		}
		s.Close()
		after, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, after) {
			t.Fatalf("%s: the open capture changed (%d octets, was %d)", name, len(after), len(before))
		}
	}
}

// TestWriteFailureKeepsFile: a write that fails (no frame to write) leaves
// an existing file untouched and no temporary file behind.
func TestWriteFailureKeepsFile(t *testing.T) {
	dir := t.TempDir()
	path := genCapture(t, dir, "mixed", "m.pcap", gen.Params{Seed: 2, Conns: 2, Count: 3})
	s, err := Open(Config{File: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Wait()
	out := filepath.Join(dir, "keep.pcap")
	if err := os.WriteFile(out, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteConn(s.Ix, 99, out); err == nil {
		t.Fatal("no error for a connection that does not exist")
	}
	l := newList(s.Ix)
	fr, err := s.ApplyFilter(`ddp.msn == 4000000000`) // no such PDU
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, done, _ := fr.Status(); done {
			break
		}
		time.Sleep(time.Millisecond)
	}
	l.SetFilter(fr)
	if _, err := WriteRows(s.Ix, l, out); err == nil {
		t.Fatal("no error writing no rows")
	}
	if b, _ := os.ReadFile(out); string(b) != "precious" {
		t.Fatalf("the existing file was changed: %q", b)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*tmp-*"))
	if len(left) > 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// TestWriteAsksBeforeOverwrite: w on an existing file asks; Esc keeps the
// file; Enter again on the same name replaces it with the capture.
func TestWriteAsksBeforeOverwrite(t *testing.T) {
	path := termCapture(t)
	s := newScreen(t, path)
	out := filepath.Join(t.TempDir(), "old.pcap")
	if err := os.WriteFile(out, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.runes("w" + out)
	s.key(tcell.KeyEnter)
	if !strings.Contains(s.text(), "exists: Enter again") {
		t.Fatalf("no question before overwriting:\n%s", s.text())
	}
	if b, _ := os.ReadFile(out); string(b) != "precious" {
		t.Fatal("the file was overwritten before the second Enter")
	}
	s.key(tcell.KeyEscape)
	if b, _ := os.ReadFile(out); string(b) != "precious" {
		t.Fatal("the file was overwritten after Esc")
	}
	s.runes("w" + out)
	s.key(tcell.KeyEnter)
	s.key(tcell.KeyEnter)
	if !strings.Contains(s.text(), "wrote ") {
		t.Fatalf("no write after the second Enter:\n%s", s.text())
	}
	if b, _ := os.ReadFile(out); bytes.HasPrefix(b, []byte("precious")) || len(b) < 24 {
		t.Fatalf("the file was not replaced by the capture (%d octets)", len(b))
	}
}
