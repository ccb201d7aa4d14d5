package pcap

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// ErrNotSeekable is returned by OpenIndexed for input that cannot be read
// at random: gzip-compressed files and pcapng (whose records do not stand
// alone: their timestamps depend on the interface blocks before them).
// Callers spill such input to a classic pcap file as they read it.
var ErrNotSeekable = errors.New("not a plain classic pcap file")

// IndexedReader reads a plain classic pcap file and tells where each record
// is, so that frames can be read again later at random (the frame index
// iwtui keeps is those offsets). It is a Source like Reader.
type IndexedReader struct {
	f   *os.File
	c   *classicReader
	n   int
	off int64 // file offset of the next record
	at  int64 // file offset of the record Next read last
}

// OpenIndexed opens name for IndexedReader; ErrNotSeekable when it is not
// a plain classic pcap file.
func OpenIndexed(name string) (*IndexedReader, error) {
	fh, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	var head [4]byte
	if _, err := io.ReadFull(fh, head[:]); err != nil || !isPcapMagic(head[:]) {
		fh.Close()
		return nil, ErrNotSeekable
	}
	if _, err := fh.Seek(0, io.SeekStart); err != nil {
		fh.Close()
		return nil, err
	}
	c, err := newClassicReader(bufio.NewReaderSize(fh, 1<<16))
	if err != nil {
		fh.Close()
		return nil, fmt.Errorf("%s: pcap: %w", name, err)
	}
	c.under = fh
	return &IndexedReader{f: fh, c: c, off: 24}, nil
}

// Next reads the next frame; Offset then says where its record is.
func (r *IndexedReader) Next(f *Frame) error {
	if err := r.c.next(f); err != nil {
		if err == io.EOF || err == ErrBufferFull {
			return err
		}
		// Where the file is damaged, as Reader.Next says it.
		return fmt.Errorf("frame %d: %w", r.n+1, err)
	}
	r.n++
	f.Number = r.n
	r.at = r.off
	r.off += 16 + int64(f.CapLen)
	return nil
}

// Pin is Reader.Pin: the frames are read into buffers the caller owns.
func (r *IndexedReader) Pin(buf []byte) bool { return r.c.pin(buf) }

// Offset is the file offset of the record (its 16-octet header) of the
// frame Next returned last.
func (r *IndexedReader) Offset() int64 { return r.at }

// Random returns a reader of records at random over the same file.
func (r *IndexedReader) Random() *RandomReader {
	return &RandomReader{ra: r.f, c: &classicReader{order: r.c.order, nsFactor: r.c.nsFactor, linkType: r.c.linkType, snaplen: r.c.snaplen}}
}

// Close closes the file (the RandomReader too).
func (r *IndexedReader) Close() error { return r.f.Close() }

// RandomReader reads classic pcap records at given offsets. It is safe for
// concurrent use as long as each caller passes its own buffer.
type RandomReader struct {
	ra io.ReaderAt
	c  *classicReader
}

// NewRandomReader reads records of a classic pcap file whose file header
// is at offset 0 of ra (as written by Writer with FormatPcap).
func NewRandomReader(ra io.ReaderAt) (*RandomReader, error) {
	var h [24]byte
	if _, err := ra.ReadAt(h[:], 0); err != nil {
		return nil, err
	}
	c, err := newClassicReader(bufio.NewReader(io.NewSectionReader(ra, 0, 24)))
	if err != nil {
		return nil, err
	}
	return &RandomReader{ra: ra, c: c}, nil
}

// ReadAt reads the record at off into f (f.Data in buf, grown as needed;
// f.Number is left alone) and returns the buffer.
func (r *RandomReader) ReadAt(off int64, f *Frame, buf []byte) ([]byte, error) {
	// The record header is read into buf: a local array would escape to
	// the heap through the io.ReaderAt (16 octets a frame of garbage, a
	// million frames read back for a display filter).
	if cap(buf) < 16 {
		buf = make([]byte, 16, 2048)
	}
	h := buf[:16]
	if _, err := r.ra.ReadAt(h, off); err != nil {
		return buf, fmt.Errorf("record at %d: %w", off, err)
	}
	o := r.c.order
	f.Timestamp = time.Unix(int64(o.Uint32(h[0:4])), int64(o.Uint32(h[4:8]))*r.c.nsFactor).UTC()
	f.CapLen = int(o.Uint32(h[8:12]))
	f.OrigLen = int(o.Uint32(h[12:16]))
	f.LinkType = r.c.linkType
	if f.CapLen > MaxSnaplen || f.CapLen > f.OrigLen {
		return buf, fmt.Errorf("record at %d: bad lengths %d/%d", off, f.CapLen, f.OrigLen)
	}
	if cap(buf) < f.CapLen {
		buf = make([]byte, f.CapLen)
	}
	buf = buf[:f.CapLen]
	if _, err := r.ra.ReadAt(buf, off+16); err != nil {
		return buf, fmt.Errorf("record at %d: %w", off, err)
	}
	f.Data = buf
	return buf, nil
}
