package pcap

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/gopacket/gopacket/layers"
)

// classicReader reads the records of a classic pcap file straight out of
// the Reader's buffer: a frame's data is a slice of it (no copy), valid
// until the next record is read. It reads what pcapgo.Reader reads, with
// its checks and messages, at a fraction of the cost (pcapgo copies each
// record through a second, 4 KiB, buffer).
type classicReader struct {
	br       *bufio.Reader
	order    binary.ByteOrder
	nsFactor int64 // 1000 for microsecond timestamps, 1 for nanosecond ones
	snaplen  uint32
	linkType layers.LinkType
	big      []byte // records larger than br's buffer
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
// end, io.ErrUnexpectedEOF when the file stops inside a record.
func (r *classicReader) next(f *Frame) error {
	h, err := r.br.Peek(16)
	if len(h) < 16 {
		if len(h) == 0 && err == io.EOF {
			return io.EOF
		}
		if err == io.EOF || err == nil {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
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
	if n <= r.br.Size() {
		rec, err := r.br.Peek(n)
		if len(rec) < n {
			if err == io.EOF || err == nil {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		f.Data = rec[16:n:n]
		_, err = r.br.Discard(n)
		return err
	}
	r.br.Discard(16)
	if cap(r.big) < f.CapLen {
		r.big = make([]byte, f.CapLen)
	}
	f.Data = r.big[:f.CapLen]
	if _, err := io.ReadFull(r.br, f.Data); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	return nil
}
