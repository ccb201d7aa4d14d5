package pcap

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/iwkit/iwkit/pcap/bpf"
)

// MaxSnaplen is what libpcap captures at most (the capture filter's
// "accept" returns it; see bpf.MaxSnaplen).
const MaxSnaplen = bpf.MaxSnaplen

// Writer writes frames as pcap (nanosecond timestamps) or pcapng.
type Writer struct {
	bw   *bufio.Writer
	pcap *pcapgo.Writer
	ng   *pcapgo.NgWriter
}

// FormatForName picks the format from a file name: ".pcapng" (optionally
// followed by ".gz") is pcapng, anything else pcap.
func FormatForName(name string) Format {
	if strings.EqualFold(filepath.Ext(strings.TrimSuffix(name, ".gz")), ".pcapng") {
		return FormatPcapNG
	}
	return FormatPcap
}

// NewWriter writes a file header for link type lt and snaplen to w.
func NewWriter(w io.Writer, format Format, lt layers.LinkType, snaplen uint32) (*Writer, error) {
	if snaplen == 0 {
		snaplen = MaxSnaplen
	}
	switch format {
	case FormatPcapNG:
		intf := pcapgo.DefaultNgInterface
		intf.LinkType = lt
		intf.SnapLength = snaplen
		opts := pcapgo.DefaultNgWriterOptions
		opts.SectionInfo.Application = "iwkit"
		ng, err := pcapgo.NewNgWriterInterface(w, intf, opts)
		if err != nil {
			return nil, err
		}
		return &Writer{ng: ng}, nil
	case FormatPcap, "":
		bw := bufio.NewWriterSize(w, 1<<20)
		p := pcapgo.NewWriterNanos(bw)
		if err := p.WriteFileHeader(snaplen, lt); err != nil {
			return nil, err
		}
		return &Writer{bw: bw, pcap: p}, nil
	}
	return nil, fmt.Errorf("unknown capture format %q (want pcap or pcapng)", format)
}

// WriteFrame writes one frame; origLen is the length on the wire (0: len(data)).
func (w *Writer) WriteFrame(ts time.Time, data []byte, origLen int) error {
	if origLen < len(data) {
		origLen = len(data)
	}
	ci := gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(data), Length: origLen}
	if w.ng != nil {
		return w.ng.WritePacket(ci, data)
	}
	return w.pcap.WritePacket(ci, data)
}

// WriteFrameComments writes one frame with its packet comments: in
// pcapng, opt_comment options of its Enhanced Packet Block (one per
// comment; the pcapng draft §4.3); classic pcap has no place for them and
// WriteFrameComments reports ErrNoComments there (the frame is written).
func (w *Writer) WriteFrameComments(ts time.Time, data []byte, origLen int, comments []string) error {
	if len(comments) == 0 {
		return w.WriteFrame(ts, data, origLen)
	}
	if w.ng == nil {
		if err := w.WriteFrame(ts, data, origLen); err != nil {
			return err
		}
		return ErrNoComments
	}
	if origLen < len(data) {
		origLen = len(data)
	}
	ci := gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(data), Length: origLen}
	return w.ng.WritePacketWithOptions(ci, data, pcapgo.NgPacketOptions{Comments: comments})
}

// ErrNoComments says a classic pcap file cannot hold packet comments.
var ErrNoComments = errors.New("classic pcap cannot hold packet comments (write .pcapng)")

// Flush writes buffered frames out; call it before closing the file.
func (w *Writer) Flush() error {
	if w.ng != nil {
		return w.ng.Flush()
	}
	return w.bw.Flush()
}

// recordLayout is where a frame of capLen octets sits in its record in
// format: after hdr octets of header, in a record of total octets (pcapng's
// Enhanced Packet Block pads the octets to 32 bits and repeats its length
// after them: the pcapng draft, section 4.3).
func recordLayout(format Format, capLen int) (hdr, total int) {
	if format == FormatPcapNG {
		return 28, 32 + (capLen+3)&^3
	}
	return 16, 16 + capLen
}

// putRecord writes the header (and pcapng's trailer) of a record around
// the frame's octets already at rec[hdr:]: the octets pcapgo's Writer and
// NgWriter write for the frame, so that a frame can be copied once,
// straight into the file's buffer.
func putRecord(format Format, rec []byte, ts time.Time, capLen, origLen int) {
	hdr, total := recordLayout(format, capLen)
	putRecordHeader(format, rec[:hdr], ts, capLen, origLen, total)
	putRecordTrailer(rec[hdr+capLen:total], total)
}

// putRecordHeader writes what goes before the frame's octets in a record
// of total octets.
func putRecordHeader(format Format, h []byte, ts time.Time, capLen, origLen, total int) {
	if origLen < capLen {
		origLen = capLen
	}
	le := binary.LittleEndian
	if format == FormatPcapNG {
		le.PutUint32(h[0:], 6) // Enhanced Packet Block
		le.PutUint32(h[4:], uint32(total))
		le.PutUint32(h[8:], 0) // interface 0, the only one
		ns := ts.UnixNano()    // if_tsresol 9: nanoseconds
		le.PutUint32(h[12:], uint32(ns>>32))
		le.PutUint32(h[16:], uint32(ns))
		le.PutUint32(h[20:], uint32(capLen))
		le.PutUint32(h[24:], uint32(origLen))
		return
	}
	if ts.IsZero() {
		ts = time.Now() // as pcapgo writes it
	}
	le.PutUint32(h[0:], uint32(ts.Unix()))
	le.PutUint32(h[4:], uint32(ts.Nanosecond())) // the file's magic says nanoseconds
	le.PutUint32(h[8:], uint32(capLen))
	le.PutUint32(h[12:], uint32(origLen))
}

// putRecordTrailer writes what follows the frame's octets (pcapng: the
// padding to 32 bits and the block's length again; pcap: nothing).
func putRecordTrailer(t []byte, total int) {
	if len(t) == 0 {
		return
	}
	clear(t[:len(t)-4])
	binary.LittleEndian.PutUint32(t[len(t)-4:], uint32(total))
}
