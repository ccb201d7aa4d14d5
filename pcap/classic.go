package pcap

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// classicReader reads the records of a classic pcap file straight out of
// its buffer: a frame's data is a slice of it (no copy), valid until the
// next record is read, or, once the caller pinned buffers of its own
// (Reader.Pin), until the caller reuses the buffer. It reads what
// pcapgo.Reader reads, with its checks and messages, at a fraction of the
// cost (pcapgo copies each record through a second, 4 KiB, buffer).
type classicReader struct {
	br       *bufio.Reader // what the format detection peeked at is in it
	under    io.Reader     // br's source, read directly once br is drained (nil: read br)
	buf      []byte
	r, w     int   // unread octets: buf[r:w]
	err      error // of the last read; sticky
	pinned   bool  // buf is the caller's: never move what was read
	order    binary.ByteOrder
	nsFactor int64 // 1000 for microsecond timestamps, 1 for nanosecond ones
	snaplen  uint32
	linkType layers.LinkType
	big      []byte // records larger than buf
}

// classicBuffer is the size of a classicReader's own buffer; PinMin the
// least a buffer passed to Reader.Pin holds: a record of MaxSnaplen.
const (
	classicBuffer = 1 << 20
	PinMin        = 16 + MaxSnaplen
)

// ErrBufferFull is what Reader.Next returns on a pinned reader when the
// next record does not fit in what is left of the caller's buffer.
var ErrBufferFull = errors.New("pcap: pinned buffer full")

// fill makes n octets available in buf[r:w]; false when the input ends
// first (c.err says why) or, pinned, when they do not fit in buf.
func (c *classicReader) fill(n int) bool {
	if c.buf == nil {
		c.buf = make([]byte, classicBuffer)
	}
	for empty := 0; c.w-c.r < n; {
		if c.err != nil {
			return false
		}
		if len(c.buf)-c.r < n {
			if c.pinned {
				return false
			}
			c.w = copy(c.buf, c.buf[c.r:c.w])
			c.r = 0
		}
		var m int
		if c.under == nil || c.br.Buffered() > 0 {
			m, c.err = c.br.Read(c.buf[c.w:])
		} else {
			m, c.err = c.under.Read(c.buf[c.w:])
		}
		c.w += m
		if m > 0 {
			empty = 0
		} else if empty++; empty == 100 && c.err == nil {
			c.err = io.ErrNoProgress // as bufio says of a reader that keeps returning nothing
		}
	}
	return true
}

// pin makes buf the reader's buffer, the unread octets copied to its
// start; false when they do not fit (buf is then left alone).
func (c *classicReader) pin(buf []byte) bool {
	if len(buf) < c.w-c.r || len(buf) < PinMin {
		return false
	}
	c.w = copy(buf, c.buf[c.r:c.w])
	c.buf, c.r, c.pinned = buf, 0, true
	return true
}

// Magic numbers of classic pcap (libpcap's pcap/pcap.h, savefile.c).
const (
	magicMicros = 0xa1b2c3d4
	magicNanos  = 0xa1b23c4d
)

func newClassicReader(br *bufio.Reader) (*classicReader, error) {
	var h [24]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return nil, err
	}
	r := &classicReader{br: br}
	switch magic := binary.LittleEndian.Uint32(h[:4]); {
	case magic == magicMicros:
		r.order, r.nsFactor = binary.LittleEndian, 1000
	case magic == magicNanos:
		r.order, r.nsFactor = binary.LittleEndian, 1
	case binary.BigEndian.Uint32(h[:4]) == magicMicros:
		r.order, r.nsFactor = binary.BigEndian, 1000
	case binary.BigEndian.Uint32(h[:4]) == magicNanos:
		r.order, r.nsFactor = binary.BigEndian, 1
	default:
		return nil, fmt.Errorf("Unknown magic %x", magic)
	}
	if v := r.order.Uint16(h[4:6]); v != 2 {
		return nil, fmt.Errorf("Unknown major version %d", v)
	}
	if v := r.order.Uint16(h[6:8]); v != 4 {
		return nil, fmt.Errorf("Unknown minor version %d", v)
	}
	r.snaplen = r.order.Uint32(h[16:20])
	r.linkType = layers.LinkType(r.order.Uint32(h[20:24]))
	return r, nil
}

// next reads a record into f (all but Number). It returns io.EOF at a clean
// end, io.ErrUnexpectedEOF when the file stops inside a record, and
// ErrBufferFull when pinned and the next record does not fit.
func (r *classicReader) next(f *Frame) error {
	if !r.fill(16) {
		return r.short(r.w - r.r)
	}
	h := r.buf[r.r : r.r+16]
	f.Timestamp = time.Unix(int64(r.order.Uint32(h[0:4])), int64(r.order.Uint32(h[4:8]))*r.nsFactor).UTC()
	f.CapLen = int(r.order.Uint32(h[8:12]))
	f.OrigLen = int(r.order.Uint32(h[12:16]))
	f.LinkType = r.linkType
	// Records up to libpcap's MAXIMUM_SNAPLEN are allowed whatever snaplen
	// the file header announces.
	if f.CapLen > max(int(r.snaplen), MaxSnaplen) {
		return fmt.Errorf("capture length exceeds snap length: %d > %d", f.CapLen, r.snaplen)
	}
	if f.CapLen > f.OrigLen {
		return fmt.Errorf("capture length exceeds original packet length: %d > %d", f.CapLen, f.OrigLen)
	}
	n := 16 + f.CapLen
	if n <= len(r.buf) {
		if !r.fill(n) {
			return r.short(-1)
		}
		f.Data = r.buf[r.r+16 : r.r+n : r.r+n]
		r.r += n
		return nil
	}
	// Larger than the buffer: read around it, the frame's buffer growing
	// only as its octets arrive (a damaged header may announce
	// gigabytes; the snaplen of the file header is no bound either).
	r.r += 16
	data := r.big[:0]
	if r.pinned {
		data = nil // the caller keeps frames: not r.big
	}
	k := min(r.w-r.r, f.CapLen)
	data = append(data, r.buf[r.r:r.r+k]...)
	r.r += k
	for len(data) < f.CapLen && r.err == nil {
		n := min(f.CapLen-len(data), classicBuffer)
		data = slices.Grow(data, n)
		var m int
		m, r.err = io.ReadFull(r.br, data[len(data):len(data)+n])
		data = data[:len(data)+m]
	}
	if !r.pinned {
		r.big = data
	}
	f.Data = data
	if len(data) < f.CapLen {
		if r.err == io.EOF || r.err == io.ErrUnexpectedEOF {
			return io.ErrUnexpectedEOF
		}
		return r.err
	}
	return nil
}

// short is the error for a record that fill could not complete, have
// octets of it being there (-1: some, past its header).
func (r *classicReader) short(have int) error {
	if r.err == nil {
		return ErrBufferFull
	}
	if have == 0 && r.err == io.EOF {
		return io.EOF
	}
	if r.err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return r.err
}
