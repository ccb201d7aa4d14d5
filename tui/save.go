package tui

import (
	"bufio"
	"fmt"
	"os"

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

func writeFrames(ix *Index, path string, from, to int, keep func(n int, p *pcap.Packet, ok bool) bool) (int, error) {
	fh, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriterSize(fh, 1<<20)
	var w *pcap.Writer
	var f pcap.Frame
	var p pcap.Packet
	var buf []byte
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
			if w, err = pcap.NewWriter(bw, pcap.FormatForName(path), f.LinkType, 0); err != nil {
				fh.Close()
				return 0, err
			}
		}
		if err := w.WriteFrame(f.Timestamp, f.Data, f.OrigLen); err != nil {
			fh.Close()
			return n, err
		}
		n++
	}
	if w == nil {
		fh.Close()
		os.Remove(path)
		return 0, fmt.Errorf("no frames to write")
	}
	if err := w.Flush(); err != nil {
		fh.Close()
		return n, err
	}
	if err := bw.Flush(); err != nil {
		fh.Close()
		return n, err
	}
	return n, fh.Close()
}
