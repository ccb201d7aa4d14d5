package writev

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"runtime"
	"syscall"
	"testing"
)

// Many buffers (more than IOV_MAX, some empty) land in the file whole and
// in order, to a regular file and through a pipe whose reader takes them
// in small reads (writes end short there).
func TestWrite(t *testing.T) {
	if runtime.GOOS != "linux" {
		if New(os.Stdout) != nil {
			t.Fatal("a Writer where there is no writev")
		}
		t.Skip("writev is Linux only")
	}
	r := rand.New(rand.NewPCG(7, 7))
	var bufs [][]byte
	var want []byte
	for i := range 3000 {
		b := make([]byte, r.IntN(300))
		if i%17 == 0 {
			b = nil
		}
		for j := range b {
			b[j] = byte(r.Uint32())
		}
		bufs = append(bufs, b)
		want = append(want, b...)
	}
	f, err := os.CreateTemp(t.TempDir(), "w")
	if err != nil {
		t.Fatal(err)
	}
	w := New(f)
	if w == nil {
		t.Fatal("no Writer for a regular file")
	}
	if rest, err := w.Write(append([][]byte(nil), bufs...)); err != nil || rest != nil {
		t.Fatalf("rest %d, %v", len(rest), err)
	}
	f.Close()
	if got, _ := os.ReadFile(f.Name()); !bytes.Equal(got, want) {
		t.Fatalf("file holds %d octets, want %d (or they differ)", len(got), len(want))
	}

	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte)
	go func() {
		var b []byte
		p := make([]byte, 100)
		for {
			n, err := pr.Read(p)
			b = append(b, p[:n]...)
			if err != nil {
				got <- b
				return
			}
		}
	}()
	if rest, err := New(pw).Write(append([][]byte(nil), bufs...)); err != nil || rest != nil {
		t.Fatalf("pipe: rest %d, %v", len(rest), err)
	}
	pw.Close()
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("pipe carried %d octets, want %d (or they differ)", len(b), len(want))
	}
	pr.Close()
}

// On an error Write returns it with the buffers not written.
func TestWriteError(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("writev is Linux only")
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pr.Close() // writing now fails with EPIPE (Go ignores SIGPIPE on other descriptors than 1 and 2)
	bufs := [][]byte{[]byte("abc"), nil, []byte("def")}
	rest, err := New(pw).Write(bufs)
	if !errors.Is(err, syscall.EPIPE) || len(rest) != 3 {
		t.Fatalf("rest %q, %v", rest, err)
	}
	pw.Close()
	if New(nil) != nil {
		t.Fatal("a Writer for no file")
	}
}
