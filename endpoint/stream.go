package endpoint

import (
	"encoding/binary"
	"io"
	"net"

	"github.com/iwkit/iwkit/decode"
)

// stream is one MPA connection in Full Operation Phase: the TCP byte stream,
// the negotiated CRC and per-direction markers, and the stream positions
// that place the markers. Positions count from each direction's first FPDU,
// which is where that direction's first marker sits (RFC 5044 §4.3), so
// s0 = 0 in both directions.
type stream struct {
	c   net.Conn
	tap *flowTap

	crc       bool // CRC32c generated and checked (C in either frame)
	txMarkers bool // markers in FPDUs we send (the peer's frame had M)
	rxMarkers bool // markers in FPDUs we receive (our frame had M)
	mulpdu    int  // largest ULPDU we send

	// receive side (receive engine only)
	rbuf      []byte
	rr, rw    int
	rxPos     uint32 // stream position of the next octet to consume
	rcrc      uint32
	fpduStart uint32
	markerBad bool
	scratch   []byte

	// send side (send engine only)
	txPos uint32
}

const rbufSize = 256 << 10

func newStream(c net.Conn, tap *flowTap, pre []byte) *stream {
	s := &stream{c: c, tap: tap, rbuf: make([]byte, rbufSize)}
	// Octets read past the MPA frame during setup belong to the first FPDUs.
	s.rw = copy(s.rbuf, pre)
	return s
}

// fill reads more octets from the connection into the buffer.
func (s *stream) fill() error {
	if s.rr == s.rw {
		s.rr, s.rw = 0, 0
	} else if s.rr > len(s.rbuf)/2 {
		s.rw = copy(s.rbuf, s.rbuf[s.rr:s.rw])
		s.rr = 0
	}
	n, err := s.c.Read(s.rbuf[s.rw:])
	if n > 0 {
		if s.tap != nil {
			s.tap.recv(s.rbuf[s.rw : s.rw+n])
		}
		s.rw += n
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// readRaw fills dst with the next stream octets, without marker or CRC
// handling. Large reads with an empty buffer go straight from the socket
// into dst (direct placement into registered memory).
func (s *stream) readRaw(dst []byte) error {
	for len(dst) > 0 {
		if s.rr < s.rw {
			n := copy(dst, s.rbuf[s.rr:s.rw])
			s.rr += n
			dst = dst[n:]
			continue
		}
		if len(dst) >= 16<<10 {
			n, err := s.c.Read(dst)
			if n > 0 {
				if s.tap != nil {
					s.tap.recv(dst[:n])
				}
				dst = dst[n:]
				continue
			}
			if err == nil {
				err = io.ErrNoProgress
			}
			return err
		}
		if err := s.fill(); err != nil {
			return err
		}
	}
	return nil
}

// startFPDU marks the start of the next FPDU (a leading marker, if the
// stream is at a marker position, belongs to it and to its CRC).
func (s *stream) startFPDU() {
	s.fpduStart = s.rxPos
	s.rcrc = 0
	s.markerBad = false
}

// marker consumes the marker at the current position if there is one: it is
// covered by the CRC, and its FPDUPTR must point at this FPDU's ULPDU_Length
// (RFC 5044 §4.2–4.3; a mismatch is MPA error 3).
func (s *stream) marker() error {
	if !s.rxMarkers || !decode.IsMarkerPos(s.rxPos, 0) {
		return nil
	}
	var m [4]byte
	if err := s.readRaw(m[:]); err != nil {
		return err
	}
	s.rcrc = decode.CRC32cUpdate(s.rcrc, m[:])
	ptr := binary.BigEndian.Uint16(m[2:]) &^ 3
	if ptr != decode.ExpectedFPDUPTR(s.rxPos, s.fpduStart, 0) {
		s.markerBad = true
	}
	s.rxPos += 4
	return nil
}

// read fills dst with FPDU octets (markers removed), extending the CRC.
func (s *stream) read(dst []byte) error {
	for len(dst) > 0 {
		if err := s.marker(); err != nil {
			return err
		}
		n := len(dst)
		if s.rxMarkers {
			n = min(n, int(decode.MarkerSpacing-s.rxPos%decode.MarkerSpacing))
		}
		if err := s.readRaw(dst[:n]); err != nil {
			return err
		}
		s.rcrc = decode.CRC32cUpdate(s.rcrc, dst[:n])
		s.rxPos += uint32(n)
		dst = dst[n:]
	}
	return nil
}

// skip consumes n FPDU octets (markers removed), extending the CRC.
func (s *stream) skip(n int) error {
	if s.scratch == nil {
		s.scratch = make([]byte, 32<<10)
	}
	for n > 0 {
		k := min(n, len(s.scratch))
		if err := s.read(s.scratch[:k]); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

// finishFPDU reads the PAD (and a marker between PAD and CRC, which the CRC
// covers) and the CRC field. It reports whether the CRC matched (always
// true when CRCs are not in use: the field MUST NOT be checked, RFC 5044
// §7.1.1) and whether every marker of the FPDU pointed at it.
func (s *stream) finishFPDU(ulpduLen int) (crcOK, markersOK bool, err error) {
	var pad [3]byte
	if p := decode.PadLen(ulpduLen); p > 0 {
		if err := s.read(pad[:p]); err != nil {
			return false, false, err
		}
	}
	if err := s.marker(); err != nil {
		return false, false, err
	}
	var c [4]byte
	if err := s.readRaw(c[:]); err != nil {
		return false, false, err
	}
	s.rxPos += 4
	return !s.crc || decode.WireCRC(c[:]) == s.rcrc, !s.markerBad, nil
}

// writeRaw writes octets outside Full Operation (MPA frames).
func (s *stream) writeRaw(b []byte) error {
	if s.tap != nil {
		s.tap.sent(b)
	}
	_, err := s.c.Write(b)
	return err
}

// txBatch gathers FPDUs for one writev: header and trailer octets live in
// arena chunks that are never reallocated while the batch is built, payload
// octets are referenced in place (registered memory).
type txBatch struct {
	bufs   net.Buffers
	chunks [][]byte
	ci     int
	cur    []byte
	bytes  int
}

func (b *txBatch) reset() {
	clear(b.bufs)
	b.bufs = b.bufs[:0]
	b.ci = 0
	b.cur = nil
	b.bytes = 0
}

func (b *txBatch) alloc(n int) []byte {
	if cap(b.cur)-len(b.cur) < n {
		for b.ci < len(b.chunks) && cap(b.chunks[b.ci]) < n {
			b.ci++
		}
		if b.ci == len(b.chunks) {
			b.chunks = append(b.chunks, make([]byte, 0, max(n, 64<<10)))
		}
		b.cur = b.chunks[b.ci][:0]
		b.ci++
	}
	l := len(b.cur)
	b.cur = b.cur[:l+n]
	return b.cur[l : l+n : l+n]
}

// appendFPDU frames one DDP segment, hdr (DDP header and any RDMAP header)
// followed by the payload parts, into the batch.
func (s *stream) appendFPDU(b *txBatch, hdr []byte, parts [][]byte, plen int) {
	ulen := len(hdr) + plen
	if s.txMarkers {
		u := make([]byte, 0, ulen)
		u = append(u, hdr...)
		for _, p := range parts {
			u = append(u, p...)
		}
		out := make([]byte, 0, decode.FPDULen(ulen)+4*(ulen/508+3))
		out, s.txPos = decode.AppendFPDUWithMarkers(out, s.txPos, 0, u, s.crc)
		b.bufs = append(b.bufs, out)
		b.bytes += len(out)
		return
	}
	h := b.alloc(2 + len(hdr))
	binary.BigEndian.PutUint16(h, uint16(ulen))
	copy(h[2:], hdr)
	pad := decode.PadLen(ulen)
	t := b.alloc(pad + 4)
	clear(t)
	b.bufs = append(b.bufs, h)
	if s.crc {
		crc := decode.CRC32cUpdate(0, h)
		for _, p := range parts {
			crc = decode.CRC32cUpdate(crc, p)
		}
		crc = decode.CRC32cUpdate(crc, t[:pad])
		decode.PutCRC(t[pad:], crc)
	}
	for _, p := range parts {
		if len(p) > 0 {
			b.bufs = append(b.bufs, p)
		}
	}
	b.bufs = append(b.bufs, t)
	n := 2 + ulen + pad + 4
	b.bytes += n
	s.txPos += uint32(n)
}

// flush writes the batch.
func (s *stream) flush(b *txBatch) error {
	if len(b.bufs) == 0 {
		return nil
	}
	if s.tap != nil {
		var all []byte
		for _, p := range b.bufs {
			all = append(all, p...)
		}
		s.tap.sent(all)
	}
	v := b.bufs
	_, err := v.WriteTo(s.c)
	return err
}
