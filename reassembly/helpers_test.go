package reassembly

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/pcap"
)

// Test scaffolding: a direction's byte stream is built with decode's
// encoders (MPA frames, FPDUs with or without markers), remembering where
// each FPDU lies; the stream is cut into TCP segments, impaired (loss,
// reordering, duplication), fed to an Assembler, and what it reports is
// compared with how the stream was built.

// side is one direction's stream under construction.
type side struct {
	isn     uint32
	data    []byte
	fpdus   []wantFPDU
	markers bool
	crc     bool
	s0      uint32 // seq of the first marker
	sent    int    // octets already cut into segments
}

type wantFPDU struct {
	off, len int // stream offset (from isn+1) and wire octets
	ulpdu    []byte
}

func (s *side) seqAt(off int) uint32 { return s.isn + 1 + uint32(off) }

func (s *side) frame(f decode.MPAFrame) {
	s.data = f.Append(s.data)
}

// fullOp starts the Full Operation Phase at the current offset.
func (s *side) fullOp(markers, crc bool) {
	s.markers, s.crc = markers, crc
	s.s0 = s.seqAt(len(s.data))
}

func (s *side) fpdu(ulpdu []byte) {
	off := len(s.data)
	if s.markers {
		s.data, _ = decode.AppendFPDUWithMarkers(s.data, s.seqAt(off), s.s0, ulpdu, s.crc)
	} else {
		s.data = decode.AppendFPDU(s.data, ulpdu, s.crc)
	}
	s.fpdus = append(s.fpdus, wantFPDU{off: off, len: len(s.data) - off, ulpdu: bytes.Clone(ulpdu)})
}

func sendULPDU(msn uint32, payload []byte) []byte {
	s := decode.Segment{
		DDP:     decode.DDPHeader{Last: true, DV: 1, QN: 0, MSN: msn},
		RDMAP:   decode.RDMAPControl{RV: 1, Opcode: decode.OpSend},
		Payload: payload,
	}
	return s.Append(nil)
}

func writeULPDU(stag uint32, to uint64, payload []byte) []byte {
	s := decode.Segment{
		DDP:     decode.DDPHeader{Tagged: true, Last: true, DV: 1, STag: stag, TO: to},
		RDMAP:   decode.RDMAPControl{RV: 1, Opcode: decode.OpWrite},
		Payload: payload,
	}
	return s.Append(nil)
}

func payload(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

// conv is a TCP conversation between two endpoints.
type conv struct {
	addr  [2]netip.AddrPort
	s     [2]*side
	pkts  []tpkt
	ts    time.Time
	nowin bool
}

type tpkt struct {
	d     Dir
	seq   uint32
	ack   uint32
	flags uint8
	data  []byte
	plen  int // 0: len(data)
}

func newConv(cport, sport uint16, isn0, isn1 uint32) *conv {
	return &conv{
		addr: [2]netip.AddrPort{
			netip.AddrPortFrom(netip.MustParseAddr("10.0.0.1"), cport),
			netip.AddrPortFrom(netip.MustParseAddr("10.0.0.2"), sport),
		},
		s:  [2]*side{{isn: isn0}, {isn: isn1}},
		ts: time.Unix(1700000000, 0),
	}
}

func (c *conv) handshake() {
	c.pkts = append(c.pkts,
		tpkt{d: 0, seq: c.s[0].isn, flags: pcap.TCPSyn},
		tpkt{d: 1, seq: c.s[1].isn, ack: c.s[0].isn + 1, flags: pcap.TCPSyn | pcap.TCPAck},
		tpkt{d: 0, seq: c.s[0].isn + 1, ack: c.s[1].isn + 1, flags: pcap.TCPAck})
}

// send cuts the unsent octets of direction d into segments of at most mss.
func (c *conv) send(d Dir, mss int) {
	s := c.s[d]
	for s.sent < len(s.data) {
		n := min(mss, len(s.data)-s.sent)
		c.seg(d, s.sent, n)
		s.sent += n
	}
}

// sendCuts cuts the unsent octets of d at the given offsets (relative to the
// first unsent octet).
func (c *conv) sendCuts(d Dir, cuts ...int) {
	s := c.s[d]
	start := s.sent
	prev := 0
	for _, x := range append(cuts, len(s.data)-start) {
		if x > prev {
			c.seg(d, start+prev, x-prev)
		}
		prev = x
	}
	s.sent = len(s.data)
}

func (c *conv) seg(d Dir, off, n int) {
	s := c.s[d]
	o := c.s[d.Other()]
	c.pkts = append(c.pkts, tpkt{d: d, seq: s.seqAt(off), ack: o.seqAt(o.sent), flags: pcap.TCPAck | pcap.TCPPsh,
		data: s.data[off : off+n]})
}

func (c *conv) fin() {
	for d := range Dir(2) {
		s, o := c.s[d], c.s[d.Other()]
		c.pkts = append(c.pkts, tpkt{d: d, seq: s.seqAt(len(s.data)), ack: o.seqAt(len(o.data)), flags: pcap.TCPFin | pcap.TCPAck})
	}
	for d := range Dir(2) {
		s, o := c.s[d], c.s[d.Other()]
		c.pkts = append(c.pkts, tpkt{d: d, seq: s.seqAt(len(s.data)) + 1, ack: o.seqAt(len(o.data)) + 1, flags: pcap.TCPAck})
	}
}

func (c *conv) packet(p *tpkt) pcap.Packet {
	src, dst := c.addr[p.d], c.addr[p.d.Other()]
	pl := p.plen
	if pl == 0 {
		pl = len(p.data)
	}
	return pcap.Packet{Src: src.Addr(), Dst: dst.Addr(), SrcPort: src.Port(), DstPort: dst.Port(),
		Seq: p.seq, Ack: p.ack, Flags: p.flags, Window: 65535, Payload: p.data, PayloadLen: pl}
}

// feed runs the packets through a fresh Assembler and returns the record.
func (c *conv) feed(t testing.TB, cfg Config) *recorder {
	r := &recorder{t: t}
	a := New(cfg, r)
	r.a = a
	for i := range c.pkts {
		p := c.packet(&c.pkts[i])
		a.Feed(i+1, c.ts.Add(time.Duration(i)*time.Millisecond), &p)
	}
	a.Flush()
	r.stats = a.Stats()
	return r
}

// recorder is a Handler that keeps copies of everything.
type recorder struct {
	t      testing.TB
	a      *Assembler
	log    []string
	opened []Conn
	params []Conn // snapshot at each Negotiated
	pdus   []gotPDU
	gaps   []GapEvent
	resync []ResyncEvent
	retr   []RetransEvent
	finds  []FindingEvent
	closes []CloseEvent
	final  []Conn // snapshot at Closed
	stats  Stats
}

type gotPDU struct {
	conn          uint64
	src           netip.AddrPort
	dir           Dir
	frame         bool
	seq           uint32
	len           int
	ff, lf        int
	ack           uint32
	hasAck        bool
	ulpdu         []byte
	crc           decode.CRCStatus
	missing       int
	markers       int
	markerErrs    int
	opcode        decode.Opcode
	segErr        error
	mpa           decode.MPAFrame
	wireMatchesPD bool
}

func (r *recorder) Opened(c *Conn) {
	r.opened = append(r.opened, *c)
	r.log = append(r.log, fmt.Sprintf("opened %d", c.ID))
}

func (r *recorder) Negotiated(c *Conn, d Dir) {
	r.params = append(r.params, *c)
	p := c.Params[d]
	r.log = append(r.log, fmt.Sprintf("negotiated %d %v markers=%v(%v) crc=%v(%v)", c.ID, d, p.Markers, p.MarkersSource, p.CRC, p.CRCSource))
}

func (r *recorder) PDU(c *Conn, e *PDUEvent) {
	g := gotPDU{conn: c.ID, src: c.Addr[e.Dir], dir: e.Dir, frame: e.PDU.IsMPAFrame, seq: e.Seq, len: e.Len, ff: e.FirstFrame, lf: e.LastFrame,
		ack: e.Ack, hasAck: e.HasAck,
		crc: e.PDU.CRCStatus, missing: e.Missing, markers: len(e.PDU.Markers), markerErrs: e.MarkerErrors,
		opcode: e.PDU.Seg.RDMAP.Opcode, segErr: e.PDU.SegErr}
	if g.frame {
		g.mpa = e.PDU.MPA
		g.mpa.PrivateData = bytes.Clone(g.mpa.PrivateData)
	} else {
		g.ulpdu = bytes.Clone(e.PDU.FPDU.ULPDU)
	}
	r.pdus = append(r.pdus, g)
	r.log = append(r.log, fmt.Sprintf("pdu %d %v seq=%d len=%d frames=%d-%d frame=%v crc=%v missing=%d", c.ID, e.Dir, e.Seq, e.Len, e.FirstFrame, e.LastFrame, g.frame, g.crc, g.missing))
}

func (r *recorder) Gap(c *Conn, e *GapEvent) {
	r.gaps = append(r.gaps, *e)
	r.log = append(r.log, fmt.Sprintf("gap %d %v %v seq=%d len=%d lost=%d", c.ID, e.Dir, e.Reason, e.Seq, e.Len, e.FPDUsLost))
}

func (r *recorder) Resync(c *Conn, e *ResyncEvent) {
	r.resync = append(r.resync, *e)
	r.log = append(r.log, fmt.Sprintf("resync %d %v %v seq=%d chain=%d skipped=%d", c.ID, e.Dir, e.How, e.Seq, e.Chain, e.Skipped))
}

func (r *recorder) Retransmission(c *Conn, e *RetransEvent) {
	r.retr = append(r.retr, *e)
	r.log = append(r.log, fmt.Sprintf("retrans %d %v seq=%d len=%d", c.ID, e.Dir, e.Seq, e.Len))
}

func (r *recorder) Finding(c *Conn, e *FindingEvent) {
	r.finds = append(r.finds, *e)
	r.log = append(r.log, fmt.Sprintf("finding %d %v %v seq=%d len=%d", c.ID, e.Dir, e.Code, e.Seq, e.Len))
}

func (r *recorder) Closed(c *Conn, e *CloseEvent) {
	r.closes = append(r.closes, *e)
	r.final = append(r.final, *c)
	r.log = append(r.log, fmt.Sprintf("closed %d %v", c.ID, e.Reason))
}

func (r *recorder) dump() string { return strings.Join(r.log, "\n") }

// fpdus returns the FPDU events of direction d (not partial, not frames).
func (r *recorder) fpdus(d Dir) []gotPDU {
	var out []gotPDU
	for _, p := range r.pdus {
		if !p.frame && p.dir == d && p.missing == 0 {
			out = append(out, p)
		}
	}
	return out
}

// checkFPDUs checks that direction d reported exactly the FPDUs want (by
// sequence number, wire length and ULPDU).
func (r *recorder) checkFPDUs(t testing.TB, d Dir, s *side, want []wantFPDU) {
	t.Helper()
	got := r.fpdus(d)
	if len(got) != len(want) {
		t.Errorf("dir %v: %d FPDUs, want %d\n%s", d, len(got), len(want), r.dump())
		return
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.seq != s.seqAt(w.off) || g.len != w.len || !bytes.Equal(g.ulpdu, w.ulpdu) {
			t.Errorf("dir %v FPDU %d: seq %d len %d, want seq %d len %d (ulpdu equal %v)\n%s", d, i, g.seq, g.len, s.seqAt(w.off), w.len, bytes.Equal(g.ulpdu, w.ulpdu), r.dump())
			return
		}
		if g.segErr != nil {
			t.Errorf("dir %v FPDU %d: segment error %v", d, i, g.segErr)
		}
	}
}

// fpdusIn returns the FPDUs of s that lie wholly in [from, to).
func fpdusIn(s *side, from, to int) []wantFPDU {
	var out []wantFPDU
	for _, f := range s.fpdus {
		if f.off >= from && f.off+f.len <= to {
			out = append(out, f)
		}
	}
	return out
}

// mpaReq and mpaRep build an MPA v1 exchange.
func mpaReq(markers, crc bool) decode.MPAFrame {
	return decode.MPAFrame{Markers: markers, CRC: crc, Rev: 1}
}

func mpaRep(markers, crc bool) decode.MPAFrame {
	return decode.MPAFrame{Reply: true, Markers: markers, CRC: crc, Rev: 1}
}

// fillFPDUs appends n FPDUs to s with sizes drawn from rng (sizes in
// [minP, maxP] payload octets), alternating Sends and Writes.
func fillFPDUs(s *side, rng *rand.Rand, n, minP, maxP int) {
	for i := range n {
		p := payload(minP+rng.IntN(maxP-minP+1), byte(i))
		if i%2 == 0 {
			s.fpdu(sendULPDU(uint32(i+1), p))
		} else {
			s.fpdu(writeULPDU(0x1000+uint32(i), uint64(i)*4096, p))
		}
	}
}

// dropData removes the data packets of direction d whose index among that
// direction's data packets is in idx, and returns the stream ranges lost.
func (c *conv) dropData(d Dir, idx ...int) [][2]int {
	var lost [][2]int
	k := -1
	out := c.pkts[:0]
	for _, p := range c.pkts {
		if p.d == d && len(p.data) > 0 {
			k++
			drop := false
			for _, i := range idx {
				if i == k {
					drop = true
				}
			}
			if drop {
				off := int(p.seq - c.s[d].isn - 1)
				lost = append(lost, [2]int{off, off + len(p.data)})
				continue
			}
		}
		out = append(out, p)
	}
	c.pkts = out
	return lost
}

// dataPackets returns the indexes in c.pkts of d's data packets.
func (c *conv) dataPackets(d Dir) []int {
	var out []int
	for i, p := range c.pkts {
		if p.d == d && len(p.data) > 0 {
			out = append(out, i)
		}
	}
	return out
}

// wantAround returns the FPDUs of s not touched by the lost ranges, from
// offset from on.
func wantAround(s *side, from int, lost [][2]int) []wantFPDU {
	var out []wantFPDU
	for _, f := range s.fpdus {
		if f.off < from {
			continue
		}
		ok := true
		for _, l := range lost {
			if f.off < l[1] && f.off+f.len > l[0] {
				ok = false
			}
		}
		if ok {
			out = append(out, f)
		}
	}
	return out
}

// checkCoverage checks that the events of direction d account for every
// octet of s from offset from to the end: FPDUs (partial ones with their
// missing part), gaps and skipped regions.
func (r *recorder) checkCoverage(t testing.TB, d Dir, s *side, from int) {
	t.Helper()
	covered := make([]bool, len(s.data))
	mark := func(seq uint32, n uint64) {
		o := int(seq - s.isn - 1)
		for i := 0; i < int(n) && o+i < len(covered); i++ {
			if o+i >= 0 {
				covered[o+i] = true
			}
		}
	}
	for _, p := range r.pdus {
		if p.dir == d {
			mark(p.seq, uint64(p.len))
		}
	}
	for _, g := range r.gaps {
		if g.Dir == d {
			mark(g.Seq, g.Len)
		}
	}
	for i := from; i < len(covered); i++ {
		if !covered[i] {
			t.Errorf("dir %v: octet at offset %d (seq %d) not accounted for\n%s", d, i, s.seqAt(i), r.dump())
			return
		}
	}
}

func netipAddrPort(addr string, port uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr(addr), port)
}
