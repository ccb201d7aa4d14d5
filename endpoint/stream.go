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
	fpduStart uint32
	scratch   []byte // de-markered ULPDU

	// send side (send engine only)
	txPos   uint32
	txFault *Fault // fault of the message being framed
	txTrunc bool   // a truncated FPDU went into the batch: FIN after it
}

// rbufSize holds the largest FPDU (65535 octets of ULPDU with markers)
// several times over.
const rbufSize = 256 << 10

func newStream(c net.Conn, tap *flowTap, pre []byte) *stream {
	s := &stream{c: c, tap: tap, rbuf: make([]byte, rbufSize)}
	// Octets read past the MPA frame during setup belong to the first FPDUs.
	s.rw = copy(s.rbuf, pre)
	return s
}

// fill reads more octets from the connection into the buffer.
func (s *stream) fill() error {
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

// peek makes n unconsumed octets available at rbuf[rr:].
func (s *stream) peek(n int) error {
	for s.rw-s.rr < n {
		if s.rr == s.rw {
			s.rr, s.rw = 0, 0 // empty: read from the start, in one go
		} else if len(s.rbuf)-s.rr < n {
			s.rw = copy(s.rbuf, s.rbuf[s.rr:s.rw])
			s.rr = 0
		}
		if err := s.fill(); err != nil {
			return err
		}
	}
	return nil
}

// rawLen is how many stream octets, from stream position pos, carry logical
// FPDU octets with markers interleaved: a marker sits before any octet at a
// marker position (RFC 5044 §4.3).
func (s *stream) rawLen(pos uint32, logical int) int {
	if !s.rxMarkers {
		return logical
	}
	p := pos
	for logical > 0 {
		if decode.IsMarkerPos(p, 0) {
			p += decode.MarkerLen
		}
		n := min(logical, int(decode.MarkerSpacing-p%decode.MarkerSpacing))
		logical -= n
		p += uint32(n)
	}
	return int(p - pos)
}

// demark copies the logical octets of raw (which starts at stream position
// pos) into dst, checking that every marker points at the FPDU that starts
// at fpdu (RFC 5044 §4.2–4.3).
func demark(dst, raw []byte, pos, fpdu uint32) (out []byte, markersOK bool) {
	out, markersOK = dst[:0], true
	for len(raw) > 0 {
		if decode.IsMarkerPos(pos, 0) {
			ptr := binary.BigEndian.Uint16(raw[2:]) &^ 3
			if ptr != decode.ExpectedFPDUPTR(pos, fpdu, 0) {
				markersOK = false
			}
			raw = raw[decode.MarkerLen:]
			pos += decode.MarkerLen
			continue
		}
		n := min(len(raw), int(decode.MarkerSpacing-pos%decode.MarkerSpacing))
		out = append(out, raw[:n]...)
		raw = raw[n:]
		pos += uint32(n)
	}
	return out, markersOK
}

// fpdu is one received FPDU, complete: its ULPDU (markers removed) and the
// outcome of its CRC and marker checks. ULPDU aliases the receive buffer (or
// the marker scratch) until the next nextFPDU.
type fpdu struct {
	ulpdu     []byte
	crcOK     bool
	markersOK bool
	wire      int // octets on the wire
}

// nextFPDU reads a whole FPDU into the receive buffer and checks its CRC
// and markers before anything of it is used: an FPDU that fails them MUST
// NOT be used (RFC 5044 §6, §7.1.1), so no payload is placed from the
// socket directly, and the CRC covers what arrived, not what is in the
// destination memory after placement. boundary reports, on error, whether
// no octet of a new FPDU had arrived (a clean end of stream).
func (s *stream) nextFPDU(f *fpdu) (boundary bool, err error) {
	s.fpduStart = s.rxPos
	head := s.rawLen(s.rxPos, decode.ULPDULenLen)
	if s.rr == s.rw {
		if err := s.peek(1); err != nil {
			return true, err
		}
	}
	if err := s.peek(head); err != nil {
		return false, err
	}
	var lb [2]byte
	if s.rxMarkers {
		b, _ := demark(lb[:0], s.rbuf[s.rr:s.rr+head], s.rxPos, s.fpduStart)
		copy(lb[:], b)
	} else {
		copy(lb[:], s.rbuf[s.rr:])
	}
	ulen := int(binary.BigEndian.Uint16(lb[:]))
	logical := decode.FPDULen(ulen)
	// A marker between PAD and CRC belongs to this FPDU and its CRC (RFC
	// 5044 §4.4); none can fall inside the 4-aligned CRC field.
	raw := s.rawLen(s.rxPos, logical)
	if err := s.peek(raw); err != nil {
		return false, err
	}
	b := s.rbuf[s.rr : s.rr+raw]
	f.wire = raw
	f.crcOK = !s.crc || decode.WireCRC(b[raw-decode.CRCLen:]) == decode.CRC32cUpdate(0, b[:raw-decode.CRCLen])
	if s.rxMarkers {
		if cap(s.scratch) < logical {
			s.scratch = make([]byte, 0, 70<<10)
		}
		var u []byte
		u, f.markersOK = demark(s.scratch, b[:raw-decode.CRCLen], s.rxPos, s.fpduStart)
		f.ulpdu = u[decode.ULPDULenLen : decode.ULPDULenLen+ulen]
	} else {
		f.markersOK = true
		f.ulpdu = b[decode.ULPDULenLen : decode.ULPDULenLen+ulen]
	}
	s.rr += raw
	s.rxPos += uint32(raw)
	return false, nil
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
	tapped bool // the capture tap has seen it
}

func (b *txBatch) reset() {
	clear(b.bufs)
	b.bufs = b.bufs[:0]
	b.ci = 0
	b.cur = nil
	b.bytes = 0
	b.tapped = false
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
	if f := s.txFault; f != nil {
		var tmp [decode.DDPUntaggedHdrLen + 64]byte
		hdr = mangle(f, hdr, tmp[:0])
		switch f.Kind {
		case FaultBadCRC, FaultCRCByteOrder, FaultMarkers, FaultFPDUPTR, FaultTruncate:
			if s.appendFaultyFPDU(b, f, hdr, parts, plen) {
				s.txTrunc = true
				s.txFault = nil // one truncated FPDU ends the stream
			}
			return
		}
	}
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

// flush writes the batch. With wait false it writes only what the socket
// takes at once and leaves the rest in b.bufs, reporting done false: a post
// verb's inline transmit must not wait for the peer's TCP window, the send
// engine writes the rest. The capture tap sees the batch once, whole.
func (s *stream) flush(b *txBatch, wait bool) (done bool, err error) {
	if len(b.bufs) == 0 {
		return true, nil
	}
	if s.tap != nil && !b.tapped {
		var all []byte
		for _, p := range b.bufs {
			all = append(all, p...)
		}
		s.tap.sent(all)
	}
	b.tapped = true
	if !wait {
		n, ok, err := tryWritev(s.c, b.bufs)
		if !ok || err != nil {
			return false, err
		}
		b.consume(n)
		return len(b.bufs) == 0, nil
	}
	v := b.bufs
	_, err = v.WriteTo(s.c)
	clear(b.bufs)
	b.bufs = b.bufs[:0]
	return err == nil, err
}

// consume drops the first n octets of the batch (written already).
func (b *txBatch) consume(n int) {
	k := 0
	for k < len(b.bufs) && n >= len(b.bufs[k]) {
		n -= len(b.bufs[k])
		b.bufs[k] = nil
		k++
	}
	if k < len(b.bufs) {
		b.bufs[k] = b.bufs[k][n:]
	}
	b.bufs = b.bufs[:copy(b.bufs, b.bufs[k:])]
}
