package pcap

import (
	"bufio"
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

// Flush writes buffered frames out; call it before closing the file.
func (w *Writer) Flush() error {
	if w.ng != nil {
		return w.ng.Flush()
	}
	return w.bw.Flush()
}
