package tui

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/iwkit/iwkit/pcap"
)

// WriteRows writes the frames of the rows the list shows (each PDU's
// frames First..Last that carry its connection) to path, pcap or pcapng
// by its name. It returns the frames written.
func WriteRows(ix *Index, l *List, path string) (int, error) {
	want := map[int]uint32{} // frame -> connection
	for p := 0; p < l.Len(); p++ {
		r := ix.Row(l.RowAt(p))
		for f := r.First; f <= r.Last && f > 0; f++ {
			want[int(f)] = r.Conn
		}
	}
	return writeFrames(ix, path, 1, ix.store.frames(), func(n int, p *pcap.Packet, ok bool) bool {
		c, in := want[n]
		return in && (c == 0 || (ok && ix.tupleOf(int(c), p)))
	})
}

// WriteConn writes every frame of connection id (both directions, the
// TCP handshake included) to path.
func WriteConn(ix *Index, id int, path string) (int, error) {
	c := ix.Conn(id)
	if c == nil {
		return 0, fmt.Errorf("no connection %d", id)
	}
	return writeFrames(ix, path, 1, ix.store.frames(), func(n int, p *pcap.Packet, ok bool) bool {
		return ok && ix.tupleOf(id, p)
	})
}

// tupleOf reports whether p belongs to connection id (either direction).
func (ix *Index) tupleOf(id int, p *pcap.Packet) bool {
	c := ix.Conn(id)
	if c == nil {
		return false
	}
	a, b := c.Addr[0], c.Addr[1]
	return (p.Src == a.Addr() && p.SrcPort == a.Port() && p.Dst == b.Addr() && p.DstPort == b.Port()) ||
		(p.Src == b.Addr() && p.SrcPort == b.Port() && p.Dst == a.Addr() && p.DstPort == a.Port())
}

// ErrSameFile is returned when the file to write is one of the files the
// capture is read from: writing it would empty the source under the index
// (its frames are read again from it) and lose the capture.
var ErrSameFile = errors.New("is the open capture; choose another file")

// Exists reports whether path names an existing file, for the overwrite
// question the UI asks before w and W.
func Exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// sameAsSource reports whether path is one of the files ix was read from
// (the same inode, whatever the spelling of the path).
func (ix *Index) sameAsSource(path string) bool {
	st, err := os.Stat(path)
	if err != nil {
		return false
	}
	for _, src := range ix.store.sources {
		if s2, err := os.Stat(src); err == nil && os.SameFile(st, s2) {
			return true
		}
	}
	return false
}

// writeFrames writes the kept frames from..to to path. It writes a
// temporary file beside path and renames it over path only when every
// frame is written, so a failure (or no frame to write) leaves an existing
// file as it was; it refuses the capture's own files.
func writeFrames(ix *Index, path string, from, to int, keep func(n int, p *pcap.Packet, ok bool) bool) (int, error) {
	return writeFramesAs(ix, path, pcap.FormatForName(path), from, to, keep, nil)
}

// writeFramesAs is writeFrames in a given format, with extra comments
// for frames (nil: the frames' own only).
func writeFramesAs(ix *Index, path string, format pcap.Format, from, to int, keep func(n int, p *pcap.Packet, ok bool) bool, extra func(int) []string) (int, error) {
	if ix.sameAsSource(path) {
		return 0, fmt.Errorf("%s %w", path, ErrSameFile)
	}
	fh, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return 0, err
	}
	n, err := writeKept(ix, fh, format, from, to, keep, extra)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(fh.Name(), path)
	}
	if err != nil {
		os.Remove(fh.Name())
		return n, err
	}
	return n, nil
}

// writeKept writes the kept frames to fh in format, each with its packet
// comments (pcapng; classic pcap cannot hold them) and extra's.
func writeKept(ix *Index, fh *os.File, format pcap.Format, from, to int, keep func(n int, p *pcap.Packet, ok bool) bool, extra func(int) []string) (int, error) {
	bw := bufio.NewWriterSize(fh, 1<<20)
	var w *pcap.Writer
	var f pcap.Frame
	var p pcap.Packet
	var buf []byte
	var err error
	n := 0
	for i := from; i <= to; i++ {
		if buf, err = ix.store.read(i, &f, buf); err != nil {
			continue // not stored (a capture filter dropped it)
		}
		ok := pcap.DecodeTCP(f.LinkType, f.Data, &p) == nil
		if !keep(i, &p, ok) {
			continue
		}
		if w == nil {
			if w, err = pcap.NewWriter(bw, format, f.LinkType, 0); err != nil {
				return 0, err
			}
		}
		if err := w.WriteFrameComments(f.Timestamp, f.Data, f.OrigLen, ix.frameComments(i, extra)); err != nil && !errors.Is(err, pcap.ErrNoComments) {
			return n, err
		}
		n++
	}
	if w == nil {
		return 0, fmt.Errorf("no frames to write")
	}
	if err := w.Flush(); err != nil {
		return n, err
	}
	return n, bw.Flush()
}
