package analyze

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"testing"
)

// With Output.Direct the merger writes the shards' output to the file
// itself (writev on Linux) and consumers append in place (Out.Buf): the
// file holds what one worker writes through the writer, after what the
// writer held before the run and before what it is given after.
func TestDirectSameAsWriter(t *testing.T) {
	var direct bool
	mergerDone = func(m *outMerger) { direct = m.vw != nil }
	defer func() { mergerDone = nil }()
	for _, name := range captures(t) {
		want, _ := runLines(t, []string{name}, 1)
		want = append(append([]byte("before\n"), want...), "after\n"...)
		for _, n := range []int{2, 3} {
			f, err := os.CreateTemp(t.TempDir(), "out")
			if err != nil {
				t.Fatal(err)
			}
			w := bufio.NewWriterSize(f, 4096) // smaller than Out.Buf's room: Write copies
			w.WriteString("before\n")
			src, _, err := OpenFiles([]string{name})
			if err != nil {
				t.Fatal(err)
			}
			_, err = RunOrdered(src, Config{Workers: n}, Output{W: w, Direct: f}, func(_ int, o *Out) Consumer { return &lineConsumer{out: o, inPlace: true} })
			src.Close()
			if err != nil {
				t.Fatal(err)
			}
			w.WriteString("after\n")
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			f.Close()
			got, err := os.ReadFile(f.Name())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s, %d workers, direct: differs from 1 worker:\n%s", name, n, firstDiff(got, want))
			}
			if direct != (runtime.GOOS == "linux") {
				t.Fatalf("merger writing directly: %v on %s", direct, runtime.GOOS)
			}
		}
	}
}

// In place or copied, one worker's output is the same.
func TestOutBufSameAsCopy(t *testing.T) {
	for _, name := range captures(t) {
		want, _ := runLines(t, []string{name}, 1)
		for _, size := range []int{16, 4096, 1 << 16} { // Buf flushes, or has no room, or has room
			src, _, err := OpenFiles([]string{name})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			w := bufio.NewWriterSize(&out, size)
			_, err = RunOrdered(src, Config{Workers: 1}, Output{W: w}, func(_ int, o *Out) Consumer { return &lineConsumer{out: o, inPlace: true} })
			src.Close()
			if err != nil {
				t.Fatal(err)
			}
			w.Flush()
			if !bytes.Equal(out.Bytes(), want) {
				t.Fatalf("%s, writer of %d octets, in place: differs:\n%s", name, size, firstDiff(out.Bytes(), want))
			}
		}
	}
}
