package tui

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"sync"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/pcap"
)

// store holds the frames of a capture for reading again at random: the
// offsets of their records in a classic pcap file. A plain classic pcap is
// read where it is; anything else (gzip, pcapng, live capture) is spilled
// to a temporary classic pcap file as it is read, and that file is read
// again. The offsets are the frame index: 8 octets per frame.
type store struct {
	mu      sync.Mutex
	offsets chunked[int64] // by frame number - 1; -1: not stored
	rr      *pcap.RandomReader
	file    *os.File // the capture, read in place
	// sources are the paths the capture was read from (none when live):
	// a file written from the capture must never be one of them.
	sources []string
	// comments are the frames' packet comments (pcapng), by frame number
	// (comments.go).
	comments map[int][]string

	// spill
	spill   *os.File
	bw      *bufio.Writer
	written int64 // octets written to the spill (through bw)
	flushed int64 // octets of the spill on disk
}

// add records that frame number n's record is at off.
func (s *store) add(n int, off int64) {
	s.mu.Lock()
	s.setOffset(n, off)
	s.mu.Unlock()
}

// frames is the number of frames known.
func (s *store) frames() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offsets.Len()
}

// read reads frame number n into f, its data in buf.
func (s *store) read(n int, f *pcap.Frame, buf []byte) ([]byte, error) {
	s.mu.Lock()
	if n < 1 || n > s.offsets.Len() || *s.offsets.At(n - 1) < 0 || s.rr == nil {
		s.mu.Unlock()
		return buf, fmt.Errorf("frame %d is not in the index", n)
	}
	off := *s.offsets.At(n - 1)
	if s.bw != nil && s.flushed <= off+16+pcap.MaxSnaplen && s.flushed < s.written {
		s.bw.Flush()
		s.flushed = s.written
	}
	rr := s.rr
	s.mu.Unlock()
	buf, err := rr.ReadAt(off, f, buf)
	f.Number = n
	return buf, err
}

func (s *store) close() {
	if s.file != nil {
		s.file.Close()
	}
	if s.spill != nil {
		s.spill.Close()
		os.Remove(s.spill.Name())
	}
}

// indexedSource reads a plain classic pcap and indexes every frame.
type indexedSource struct {
	r *pcap.IndexedReader
	s *store
	// pinned: a sharded run reads its frames a chunk at a time (Pin) and
	// hands none of the chunk on before Next ends it with an error
	// (pcap.ErrBufferFull, io.EOF): the chunk's offsets wait in pending
	// and go in then, under one lock (a lock per frame was a fifth of the
	// reader's time).
	pinned  bool
	pending []frameOffset
}

// frameOffset is where frame number n's record is.
type frameOffset struct {
	n   int
	off int64
}

func (x *indexedSource) Next(f *pcap.Frame) error {
	if err := x.r.Next(f); err != nil {
		x.flush()
		return err
	}
	if x.pinned {
		x.pending = append(x.pending, frameOffset{f.Number, x.r.Offset()})
		return nil
	}
	x.s.add(f.Number, x.r.Offset())
	return nil
}

// flush adds the offsets pending.
func (x *indexedSource) flush() {
	if len(x.pending) == 0 {
		return
	}
	x.s.mu.Lock()
	for _, p := range x.pending {
		x.s.setOffset(p.n, p.off)
	}
	x.s.mu.Unlock()
	x.pending = x.pending[:0]
}

func (x *indexedSource) Close() error {
	x.flush()
	return x.r.Close()
}

// Pin lets a sharded run read the frames straight into its chunks
// (pcap.Reader.Pin), instead of copying each from the reader's buffer.
func (x *indexedSource) Pin(buf []byte) bool {
	x.flush()
	x.pinned = x.r.Pin(buf)
	return x.pinned
}

// spillSource copies every frame of src to the spill file and indexes it.
type spillSource struct {
	src analyze.Source
	s   *store
	n   int
}

func (x *spillSource) Next(f *pcap.Frame) error {
	if err := x.src.Next(f); err != nil {
		if x.s.bw != nil {
			x.s.mu.Lock()
			x.s.bw.Flush()
			x.s.flushed = x.s.written
			x.s.mu.Unlock()
		}
		return err
	}
	x.n++
	if f.Number == 0 {
		f.Number = x.n
	}
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written == 0 {
		// A classic pcap header, nanosecond timestamps (libpcap's
		// savefile.c), the link type of the first frame.
		var h [24]byte
		binary.LittleEndian.PutUint32(h[0:], 0xa1b23c4d)
		binary.LittleEndian.PutUint16(h[4:], 2)
		binary.LittleEndian.PutUint16(h[6:], 4)
		binary.LittleEndian.PutUint32(h[16:], pcap.MaxSnaplen)
		binary.LittleEndian.PutUint32(h[20:], uint32(f.LinkType))
		s.bw.Write(h[:])
		if err := s.bw.Flush(); err != nil {
			return err
		}
		s.written, s.flushed = 24, 24
		rr, err := pcap.NewRandomReader(s.spill)
		if err != nil {
			return err
		}
		s.rr = rr
	}
	var h [16]byte
	ts := f.Timestamp
	binary.LittleEndian.PutUint32(h[0:], uint32(ts.Unix()))
	binary.LittleEndian.PutUint32(h[4:], uint32(ts.Nanosecond()))
	binary.LittleEndian.PutUint32(h[8:], uint32(len(f.Data)))
	binary.LittleEndian.PutUint32(h[12:], uint32(max(f.OrigLen, len(f.Data))))
	s.bw.Write(h[:])
	if _, err := s.bw.Write(f.Data); err != nil {
		return err
	}
	s.setOffset(f.Number, s.written)
	s.addComments(f.Number, f.Comments)
	s.written += 16 + int64(len(f.Data))
	return nil
}

func (x *spillSource) Close() error { return x.src.Close() }

// newSpill makes a store that spills to a temporary file.
func newSpill() (*store, error) {
	fh, err := os.CreateTemp("", "iwtui-*.pcap")
	if err != nil {
		return nil, err
	}
	return &store{spill: fh, bw: bufio.NewWriterSize(fh, 1<<20)}, nil
}

func fileSize(name string) (int64, error) {
	st, err := os.Stat(name)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// setOffset records frame n's offset (frames skipped get -1).
func (s *store) setOffset(n int, off int64) {
	for s.offsets.Len() < n-1 {
		s.offsets.Append(-1)
	}
	if s.offsets.Len() == n-1 {
		s.offsets.Append(off)
	} else if n-1 < s.offsets.Len() {
		*s.offsets.At(n - 1) = off
	}
}
