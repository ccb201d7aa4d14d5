//go:build linux

package pcap

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkFileAccess is why Reader reads files rather than mapping them
// (issue 20, item 8; BENCHMARKS.md): it touches every cache line of a
// 256 MiB file that is in the page cache, once through read(2) into a
// reused 1 MiB buffer (the kernel's copy, as classicReader does) and once
// through a read-only shared mapping (no copy). The octets per second of
// CPU time (cpu-MB/s: user and system time of the process) say what each
// costs; on the 2-vCPU virtual machine of BENCHMARKS.md the mapping was
// about five times the cost of the copy.
func BenchmarkFileAccess(b *testing.B) {
	const size = 256 << 20
	path := filepath.Join(b.TempDir(), "big")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i)
	}
	for n := 0; n < size; n += len(chunk) {
		f.Write(chunk)
	}
	f.Close()
	sink := 0
	run := func(b *testing.B, pass func(f *os.File) int) {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		sink += pass(f) // the first pass brings the file into the page cache
		b.SetBytes(size)
		b.ResetTimer()
		var r0, r1 unix.Rusage
		unix.Getrusage(unix.RUSAGE_SELF, &r0)
		for i := 0; i < b.N; i++ {
			sink += pass(f)
		}
		unix.Getrusage(unix.RUSAGE_SELF, &r1)
		cpu := float64(r1.Utime.Nano()-r0.Utime.Nano()+r1.Stime.Nano()-r0.Stime.Nano()) / 1e9
		b.ReportMetric(float64(size)*float64(b.N)/cpu/1e6, "cpu-MB/s")
	}
	b.Run("read", func(b *testing.B) {
		run(b, func(f *os.File) int {
			s := 0
			for off := int64(0); ; {
				n, err := f.ReadAt(chunk, off)
				for i := 0; i < n; i += 64 {
					s += int(chunk[i])
				}
				off += int64(n)
				if err == io.EOF || n == 0 {
					return s
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("mmap", func(b *testing.B) {
		run(b, func(f *os.File) int {
			m, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
			if err != nil {
				b.Fatal(err)
			}
			unix.Madvise(m, unix.MADV_SEQUENTIAL)
			s := 0
			for i := 0; i < len(m); i += 64 {
				s += int(m[i])
			}
			unix.Munmap(m)
			return s
		})
	})
	if sink == 42 {
		b.Log(sink)
	}
}
