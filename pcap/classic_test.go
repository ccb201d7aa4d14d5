package pcap

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"
)

// classicSeeds are the committed classic pcap files.
func classicSeeds(tb testing.TB) [][]byte {
	var out [][]byte
	paths, _ := filepath.Glob(filepath.Join(siwDir, "*.pcap"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		tb.Fatal("no pcap files")
	}
	return out
}

// sameAsPcapgo reads data with classicReader and with pcapgo.Reader and
// fails on any difference in frames or in where and whether they stop.
// One difference is intended: a file cut right after a record header is
// a clean end for pcapgo, a cut record for us.
func sameAsPcapgo(t *testing.T, data []byte) {
	if bytes.HasPrefix(data, magicGzip) {
		return // pcapgo unwraps gzip itself; the classic reader gets it unwrapped (NewReader)
	}
	want, werr := pcapgo.NewReader(bytes.NewReader(data))
	got, gerr := newClassicReader(bufio.NewReaderSize(bytes.NewReader(data), 1<<16))
	// A short header is EOF or unexpected EOF depending on its length
	// (pcapgo peeks 2 octets first); NewReader has already refused files
	// shorter than 4 octets.
	short := errors.Is(werr, io.EOF) || errors.Is(werr, io.ErrUnexpectedEOF)
	if (werr == nil) != (gerr == nil) || werr != nil && !short && werr.Error() != gerr.Error() {
		t.Fatalf("file header: pcapgo %v, ours %v", werr, gerr)
	}
	if werr != nil {
		return
	}
	for i := 1; i < 100000; i++ {
		wd, ci, werr := want.ZeroCopyReadPacketData()
		var f Frame
		gerr := got.next(&f)
		if werr != nil || gerr != nil {
			if werr == io.EOF && errors.Is(gerr, io.ErrUnexpectedEOF) {
				return // the intended difference (a header without its data)
			}
			if (werr == nil) != (gerr == nil) || werr.Error() != gerr.Error() {
				t.Fatalf("record %d: pcapgo %v, ours %v", i, werr, gerr)
			}
			return
		}
		// pcapgo multiplies microseconds by 1000 in 32 bits: a (damaged)
		// fraction of 4.3 s or more wraps there, not here.
		wrapped := f.Timestamp.Sub(ci.Timestamp)%(1<<32) == 0
		if !ci.Timestamp.Equal(f.Timestamp) && !wrapped || ci.CaptureLength != f.CapLen || ci.Length != f.OrigLen || want.LinkType() != f.LinkType || !bytes.Equal(wd, f.Data) {
			t.Fatalf("record %d: pcapgo %v %d/%d %v, ours %v %d/%d %v", i, ci.Timestamp, ci.CaptureLength, ci.Length, want.LinkType(), f.Timestamp, f.CapLen, f.OrigLen, f.LinkType)
		}
	}
}

// TestClassicReaderMatchesPcapgo: the committed captures, cut at every
// length near their start and end, and with random octets changed in
// record headers, read the same as with pcapgo.
func TestClassicReaderMatchesPcapgo(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, b := range classicSeeds(t) {
		sameAsPcapgo(t, b)
		for n := 0; n < 200 && n < len(b); n++ {
			sameAsPcapgo(t, b[:n])
			sameAsPcapgo(t, b[:len(b)-n])
		}
		for k := 0; k < 200; k++ {
			c := bytes.Clone(b)
			for j := 0; j < 3; j++ {
				c[24+r.IntN(min(len(c)-24, 4096))] = byte(r.Uint32())
			}
			sameAsPcapgo(t, c)
		}
	}
}

// FuzzClassicReader holds the reader to pcapgo's on any input.
func FuzzClassicReader(f *testing.F) {
	for _, b := range classicSeeds(f) {
		f.Add(b[:min(len(b), 8192)])
	}
	f.Fuzz(sameAsPcapgo)
}

// BenchmarkReadPcap compares reading a capture through pcapgo.Reader and
// through the Reader (classicReader), side by side.
func BenchmarkReadPcap(b *testing.B) {
	var data []byte
	for _, s := range classicSeeds(b) {
		if len(s) > len(data) {
			data = s
		}
	}
	b.Run("pcapgo", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for i := 0; i < b.N; i++ {
			r, _ := pcapgo.NewReader(bufio.NewReaderSize(bytes.NewReader(data), 1<<20))
			for {
				if _, _, err := r.ZeroCopyReadPacketData(); err != nil {
					break
				}
			}
		}
	})
	b.Run("ours", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		var f Frame
		for i := 0; i < b.N; i++ {
			r, _ := NewReader(bytes.NewReader(data))
			for r.Next(&f) == nil {
			}
		}
	})
}

// readPinned reads data to its end or first error, through buffers of
// PinMin octets (each one kept) when pinned, and returns the frames (their
// data copied when not pinned), the error that ended it and the buffers
// used.
func readPinned(t *testing.T, data []byte, pinned bool) ([]Frame, error, int) {
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err, 0
	}
	pins := 0
	if pinned {
		if r.Pin(make([]byte, PinMin-1)) {
			t.Fatal("Pin took a buffer shorter than PinMin")
		}
		if r.Format() == FormatPcap != r.Pin(make([]byte, PinMin)) {
			t.Fatalf("Pin of a %s reader", r.Format())
		}
		pins++
	}
	var frames []Frame
	for {
		var f Frame
		err := r.Next(&f)
		if err == ErrBufferFull && pinned {
			if !r.Pin(make([]byte, PinMin)) {
				t.Fatal("Pin refused")
			}
			pins++
			continue
		}
		if err != nil {
			return frames, err, pins
		}
		if !pinned {
			f.Data = bytes.Clone(f.Data)
		}
		frames = append(frames, f)
	}
}

// samePinned fails unless data reads the same pinned and not: frames
// (their data read after every later record, so still valid) and the
// error that ends them.
func samePinned(t *testing.T, data []byte) int {
	want, werr, _ := readPinned(t, data, false)
	got, gerr, pins := readPinned(t, data, true)
	if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
		t.Fatalf("pinned: %v, not: %v", gerr, werr)
	}
	if len(got) != len(want) {
		t.Fatalf("%d frames pinned, %d not", len(got), len(want))
	}
	for i := range got {
		if got[i].Number != want[i].Number || !got[i].Timestamp.Equal(want[i].Timestamp) || !bytes.Equal(got[i].Data, want[i].Data) {
			t.Fatalf("frame %d differs", i+1)
		}
	}
	return pins
}

// A pinned reader's frames stay valid until the caller reuses their
// buffer: every committed capture, repeated so that records straddle the
// ends of several buffers of the smallest size Pin takes, reads the same
// pinned as not, octet for octet.
func TestPinnedFramesStay(t *testing.T) {
	for _, data := range classicSeeds(t) {
		var big []byte
		for len(big) < 3*PinMin+PinMin/3 {
			big = append(big, data[24:]...)
		}
		big = append(data[:24:24], big...)
		if pins := samePinned(t, big); pins < 4 {
			t.Errorf("%d buffers for %d octets", pins, len(big))
		}
	}
}

// FuzzPinnedReader holds the pinned reader to the unpinned one on any
// input.
func FuzzPinnedReader(f *testing.F) {
	for _, b := range classicSeeds(f) {
		f.Add(b[:min(len(b), 8192)])
	}
	f.Fuzz(func(t *testing.T, data []byte) { samePinned(t, data) })
}
