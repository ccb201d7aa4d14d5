// Package pcap is where frames come from and go to, knowing nothing of
// iWARP:
//   - capture files: classic pcap read by our own zero-copy reader (held to
//     gopacket's pcapgo by tests), pcapng through pcapgo, either plain or
//     gzip-compressed (reader.go, classic.go); written by writer.go, and
//     with tcpdump's -C/-G/-W rotation by RotatingWriter (rotate.go);
//   - live capture in pure Go (no cgo, no libpcap): an AF_PACKET
//     TPACKET_V3 ring per interface, a plain socket on "any", the capture
//     filter attached in the kernel (live*.go), and the chunks that carry
//     captured frames to the decoder without a copy (Chunk, ChunkPool);
//   - a frame index for random access to a file (IndexedReader,
//     RandomReader: index.go), which iwtui reads frames back by;
//   - taking a frame apart down to its TCP segment (DecodeTCP: packet.go,
//     over internal/frame's header views).
//
// The capture filter compiler is its own package, pcap/bpf.
package pcap

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Frame is one captured frame. Data aliases the reader's buffer and is valid
// only until the next call to Next.
type Frame struct {
	Number    int // 1-based position in the file, as tcpdump and tshark count
	Timestamp time.Time
	CapLen    int // octets captured (len(Data))
	OrigLen   int // octets on the wire
	LinkType  layers.LinkType
	Data      []byte
	// Comments are the frame's packet comments (pcapng opt_comment in its
	// Enhanced Packet Block, the pcapng draft §4.3 and §3.5.1), nil when
	// it has none: what Wireshark shows as frame.comment. Classic pcap
	// has no place for them.
	Comments []string
}

// Truncated reports whether the capture cut the frame short (snaplen).
func (f *Frame) Truncated() bool { return f.CapLen < f.OrigLen }

// Format names a capture file format.
type Format string

const (
	FormatPcap   Format = "pcap"
	FormatPcapNG Format = "pcapng"
)

// Reader reads frames from a pcap or pcapng file, plain or gzip-compressed.
type Reader struct {
	format Format
	pcap   *classicReader
	ng     *pcapgo.NgReader
	n      int
	closer io.Closer
	gz     *gzip.Reader
}

// Magic numbers of the two formats (pcap: both byte orders, µs and ns;
// pcapng: the Section Header Block type) and of gzip.
var (
	magicPcap = [][]byte{{0xd4, 0xc3, 0xb2, 0xa1}, {0xa1, 0xb2, 0xc3, 0xd4}, {0x4d, 0x3c, 0xb2, 0xa1}, {0xa1, 0xb2, 0x3c, 0x4d}}
	magicNG   = []byte{0x0a, 0x0d, 0x0d, 0x0a}
	magicGzip = []byte{0x1f, 0x8b}
)

// ErrUnknownFormat is returned for input that is neither pcap nor pcapng.
var ErrUnknownFormat = errors.New("not a pcap or pcapng file")

// Open opens a capture file by name; "-" is standard input.
func Open(name string) (*Reader, error) {
	var f io.ReadCloser
	if name == "-" {
		f = io.NopCloser(os.Stdin)
	} else {
		fh, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		f = fh
	}
	r, err := NewReader(f)
	if err != nil {
		f.Close()
		if name != "-" {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return nil, err
	}
	r.closer = f
	return r, nil
}

// NewReader detects the format of r (pcap, pcapng, either gzip-compressed)
// and reads its file header.
func NewReader(r io.Reader) (*Reader, error) {
	// A small buffer for the format detection: the classic reader keeps
	// its own and reads the source directly after it; pcapng gets a large
	// one over it.
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(4)
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("%w: file is shorter than a file header (%d octets)", ErrUnknownFormat, len(head))
		}
		return nil, err
	}
	rd := &Reader{}
	under := r // what br reads
	if bytes.HasPrefix(head, magicGzip) {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		rd.gz = gz
		br, under = bufio.NewReaderSize(gz, 64<<10), gz
		if head, err = br.Peek(4); err != nil {
			return nil, fmt.Errorf("%w: compressed content is shorter than a file header", ErrUnknownFormat)
		}
	}
	switch {
	case bytes.Equal(head, magicNG):
		ng, err := pcapgo.NewNgReader(bufio.NewReaderSize(br, 1<<20), pcapgo.NgReaderOptions{})
		if err != nil {
			return nil, fmt.Errorf("pcapng: %w", err)
		}
		rd.ng, rd.format = ng, FormatPcapNG
	case isPcapMagic(head):
		p, err := newClassicReader(br)
		if err != nil {
			return nil, fmt.Errorf("pcap: %w", err)
		}
		p.under = under
		rd.pcap, rd.format = p, FormatPcap
	default:
		return nil, fmt.Errorf("%w (first octets % x)", ErrUnknownFormat, head)
	}
	return rd, nil
}

func isPcapMagic(b []byte) bool {
	for _, m := range magicPcap {
		if bytes.Equal(b, m) {
			return true
		}
	}
	return false
}

// Format reports the file format.
func (r *Reader) Format() Format { return r.format }

// Next returns the next frame, io.EOF at a clean end of file, or an error
// that says where the file is damaged (io.ErrUnexpectedEOF for a file cut in
// the middle of a record).
func (r *Reader) Next(f *Frame) error {
	var (
		data []byte
		err  error
		lt   layers.LinkType
	)
	if r.ng != nil {
		var ci = &f.Timestamp
		d, c, opts, e := r.ng.ZeroCopyReadPacketDataWithOptions()
		data, err = d, e
		if err == nil {
			f.Comments = opts.Comments // pcapgo allocates them per block
			*ci = c.Timestamp
			f.CapLen, f.OrigLen = c.CaptureLength, c.Length
			lt = r.ng.LinkType()
			if iface, e2 := r.ng.Interface(c.InterfaceIndex); e2 == nil {
				lt = iface.LinkType
			}
		}
	} else {
		f.Comments = nil
		err = r.pcap.next(f)
		data, lt = f.Data, f.LinkType
	}
	if err != nil {
		if err == io.EOF || err == ErrBufferFull {
			return err
		}
		return fmt.Errorf("frame %d: %w", r.n+1, err)
	}
	r.n++
	f.Number = r.n
	f.LinkType = lt
	f.Data = data
	if f.CapLen != len(data) {
		f.CapLen = len(data)
	}
	return nil
}

// Pin switches a classic pcap reader to buffers the caller owns, so that
// a program handing frames to other goroutines need not copy them: buf
// becomes the reader's buffer (what it had read ahead is copied to its
// start), and the data of every frame Next returns from then on stays
// valid until the caller reuses the buffer it is in. When the next record
// does not fit in what is left of buf, Next returns ErrBufferFull and the
// caller calls Pin again with another buffer. A buffer holds at least
// PinMin octets and what the reader had read ahead: call Pin before the
// first Next, and then with buffers as long as the first. Pin reports
// false, and changes nothing, for a pcapng reader (pcapgo reads those) or
// a buffer too short.
func (r *Reader) Pin(buf []byte) bool {
	return r.pcap != nil && r.pcap.pin(buf)
}

// Close closes the underlying file.
func (r *Reader) Close() error {
	if r.gz != nil {
		r.gz.Close()
	}
	if r.closer != nil {
		return r.closer.Close()
	}
	return nil
}
