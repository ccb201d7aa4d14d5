package reassembly

import (
	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/pcap"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
)

// handshakeConv builds a connection with an MPA v1 exchange (the client is
// the initiator) and n FPDUs each way. mReq/mRep are the M flags of the
// Request and the Reply: mReq asks for markers on server→client, mRep on
// client→server.
func handshakeConv(mReq, mRep, crc bool, n int, seed uint64) *conv {
	rng := rand.New(rand.NewPCG(seed, 1))
	c := newConv(40000, 9999, 1000, 500000)
	c.handshake()
	c.s[0].frame(mpaReq(mReq, crc))
	c.send(0, 1448)
	c.s[1].frame(mpaRep(mRep, crc))
	c.send(1, 1448)
	c.s[0].fullOp(mRep, crc)
	c.s[1].fullOp(mReq, crc)
	fillFPDUs(c.s[0], rng, n, 0, 3000)
	fillFPDUs(c.s[1], rng, n, 0, 3000)
	return c
}

func TestHandshakeAndFPDUs(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mReq, mRep bool
		crc        bool
		mss        int
	}{
		{"plain", false, false, false, 1448},
		{"crc", false, false, true, 1448},
		{"crc-small-mss", false, false, true, 100},
		{"crc-big-segments", false, false, true, 9000},
		{"markers-both", true, true, true, 1448},
		{"markers-both-nocrc", true, true, false, 536},
		{"markers-to-client-only", true, false, true, 1448},
		{"markers-to-server-only", false, true, false, 777},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := handshakeConv(tc.mReq, tc.mRep, tc.crc, 40, 7)
			c.send(0, tc.mss)
			c.send(1, tc.mss)
			c.fin()
			r := c.feed(t, Config{})
			r.checkFPDUs(t, 0, c.s[0], c.s[0].fpdus)
			r.checkFPDUs(t, 1, c.s[1], c.s[1].fpdus)
			if len(r.gaps) != 0 || len(r.resync) != 0 || len(r.finds) != 0 {
				t.Errorf("unexpected gaps/resyncs/findings\n%s", r.dump())
			}
			if len(r.closes) != 1 || r.closes[0].Reason != CloseFIN {
				t.Errorf("closes %+v", r.closes)
			}
			if len(r.final) == 1 {
				p := r.final[0].Params
				if p[0].Markers != tc.mRep || p[1].Markers != tc.mReq || p[0].CRC != tc.crc || p[1].CRC != tc.crc ||
					p[0].MarkersSource != SourceHandshake || p[0].CRCSource != SourceHandshake {
					t.Errorf("params %+v", p)
				}
				if r.final[0].Initiator != 0 {
					t.Errorf("initiator %d", r.final[0].Initiator)
				}
			}
			want := decode.CRCNotUsed
			if tc.crc {
				want = decode.CRCGood
			}
			for _, p := range r.pdus {
				if !p.frame && p.crc != want {
					t.Fatalf("crc status %v, want %v", p.crc, want)
				}
				if p.markerErrs != 0 {
					t.Fatalf("marker errors")
				}
			}
		})
	}
}

// markerConv builds a client→server stream with markers whose FPDU sizes put
// markers everywhere: as leading marker, inside headers and payload, and
// between PAD and CRC (first FPDU: 4 + 2 + 506 octets reach the next marker
// exactly at the end of its PAD).
func markerConv(crc bool) *conv {
	c := newConv(40001, 445, 7000, 90000)
	c.handshake()
	c.s[0].frame(mpaReq(false, crc))
	c.send(0, 1448)
	c.s[1].frame(mpaRep(true, crc))
	c.send(1, 1448)
	c.s[0].fullOp(true, crc)
	s := c.s[0]
	s.fpdu(sendULPDU(1, payload(506-18, 1))) // ULPDU 506: marker between PAD and CRC
	for i, n := range []int{0, 1, 2, 3, 490, 491, 492, 493, 1000, 17, 508, 2000, 5} {
		if i%2 == 0 {
			s.fpdu(sendULPDU(uint32(i+2), payload(n, byte(i))))
		} else {
			s.fpdu(writeULPDU(7, uint64(i), payload(n, byte(i))))
		}
	}
	return c
}

func TestMarkersSplitEverywhere(t *testing.T) {
	for _, crc := range []bool{true, false} {
		base := markerConv(crc)
		s := base.s[0]
		start := s.sent
		total := len(s.data) - start
		// The marker between PAD and CRC is really there.
		first := s.fpdus[0]
		if first.len != 4+2+506+4+4 {
			t.Fatalf("first FPDU is %d octets", first.len)
		}
		// Two segments, cut at every offset of the first FPDUs (the one
		// with a marker between PAD and CRC among them); then every octet
		// its own segment, which cuts everywhere at once.
		for cut := 1; cut < min(total, 3000); cut++ {
			c := markerConv(crc)
			c.sendCuts(0, cut)
			c.fin()
			r := c.feed(t, Config{})
			r.checkFPDUs(t, 0, c.s[0], c.s[0].fpdus)
			if t.Failed() {
				t.Fatalf("crc %v cut at %d", crc, cut)
			}
			for _, p := range r.fpdus(0) {
				if p.markerErrs != 0 || (crc && p.crc != decode.CRCGood) {
					t.Fatalf("cut %d: FPDU %+v", cut, p)
				}
			}
		}
		c := markerConv(crc)
		cuts := make([]int, total-1)
		for i := range cuts {
			cuts[i] = i + 1
		}
		c.sendCuts(0, cuts...)
		c.fin()
		r := c.feed(t, Config{})
		r.checkFPDUs(t, 0, c.s[0], c.s[0].fpdus)
		if f := r.fpdus(0); len(f) > 0 && (f[0].markers != 2) {
			t.Errorf("first FPDU has %d markers, want 2 (leading and between PAD and CRC)", f[0].markers)
		}
	}
}

func TestSeveralFPDUsPerSegment(t *testing.T) {
	c := handshakeConv(false, false, true, 0, 1)
	for i := range 200 {
		c.s[0].fpdu(sendULPDU(uint32(i+1), payload(i%40, byte(i))))
	}
	c.send(0, 1448)
	c.fin()
	r := c.feed(t, Config{})
	r.checkFPDUs(t, 0, c.s[0], c.s[0].fpdus)
	several := false
	for _, p := range r.fpdus(0) {
		if p.ff != p.lf {
			continue
		}
		several = true
	}
	if !several {
		t.Error("no FPDU inside one segment")
	}
}

// Large FPDUs (siw with GSO sends FPDUs larger than the MSS): 64 KiB ULPDUs.
func TestFPDUsLargerThanSegment(t *testing.T) {
	c := handshakeConv(false, false, false, 0, 1)
	for i := range 5 {
		c.s[0].fpdu(writeULPDU(1, uint64(i)<<16, payload(65535-14-i, byte(i))))
	}
	c.send(0, 1448)
	c.fin()
	r := c.feed(t, Config{})
	r.checkFPDUs(t, 0, c.s[0], c.s[0].fpdus)
	for _, p := range r.fpdus(0) {
		if p.lf-p.ff < 40 {
			t.Errorf("FPDU spans frames %d-%d", p.ff, p.lf)
		}
	}
}

func TestSeqWrap(t *testing.T) {
	for _, markers := range []bool{false, true} {
		c := newConv(5000, 4420, 0xFFFFF000, 0xFFFFFFF0)
		c.handshake()
		c.s[0].frame(mpaReq(markers, true))
		c.send(0, 1448)
		c.s[1].frame(mpaRep(markers, true))
		c.send(1, 1448)
		c.s[0].fullOp(markers, true)
		c.s[1].fullOp(markers, true)
		rng := rand.New(rand.NewPCG(3, 3))
		fillFPDUs(c.s[0], rng, 30, 0, 2000)
		fillFPDUs(c.s[1], rng, 30, 0, 2000)
		c.send(0, 1000)
		c.send(1, 1000)
		c.fin()
		r := c.feed(t, Config{})
		r.checkFPDUs(t, 0, c.s[0], c.s[0].fpdus)
		r.checkFPDUs(t, 1, c.s[1], c.s[1].fpdus)
		if len(r.closes) != 1 || r.closes[0].Reason != CloseFIN || len(r.gaps) != 0 {
			t.Errorf("markers %v:\n%s", markers, r.dump())
		}
	}
}

func TestLostSegment(t *testing.T) {
	for _, tc := range []struct {
		name          string
		markers, crc  bool
		mss, min, max int
	}{
		{"crc", false, true, 1000, 0, 3000},
		{"nocrc", false, false, 1000, 0, 3000},
		{"markers-crc", true, true, 1000, 0, 3000},
		{"markers-nocrc", true, false, 1000, 0, 3000},
		{"big-fpdus-crc", false, true, 1448, 4000, 9000},
		{"small-fpdus-nocrc", false, false, 300, 0, 100},
		{"small-fpdus-markers", true, false, 300, 0, 100},
	} {
		for _, drop := range []int{3, 10, 17, 30} {
			c := handshakeConv(false, tc.markers, tc.crc, 0, 1)
			rng := rand.New(rand.NewPCG(uint64(drop), 9))
			fillFPDUs(c.s[0], rng, 60, tc.min, tc.max)
			from := c.s[0].fpdus[0].off
			c.send(0, tc.mss)
			lost := c.dropData(0, drop)
			if len(lost) == 0 {
				continue
			}
			c.fin()
			r := c.feed(t, Config{})
			want := wantAround(c.s[0], 0, lost)
			r.checkFPDUs(t, 0, c.s[0], want)
			r.checkCoverage(t, 0, c.s[0], from)
			if len(r.gaps) == 0 || r.gaps[0].Reason != GapAcked {
				t.Errorf("%s drop %d: gaps %+v", tc.name, drop, r.gaps)
			}
			if t.Failed() {
				t.Fatalf("%s drop %d (lost %v)", tc.name, drop, lost)
			}
		}
	}
}

// A gap that swallows FPDU headers: the next boundary comes from a marker
// (large FPDUs with markers), from CRCs, or from a chain of FPDUs.
func TestResyncHow(t *testing.T) {
	for _, tc := range []struct {
		name         string
		markers, crc bool
		min, max     int
		want         ResyncHow
	}{
		{"marker", true, false, 2500, 3000, ResyncMarker},
		{"crc", false, true, 2500, 3000, ResyncCRC},
		{"chain", false, false, 100, 300, ResyncChain},
	} {
		c := handshakeConv(false, tc.markers, tc.crc, 0, 1)
		rng := rand.New(rand.NewPCG(5, 5))
		fillFPDUs(c.s[0], rng, 150, tc.min, tc.max)
		c.send(0, 1448)
		// Drop two segments: at least one header is gone.
		lost := c.dropData(0, 8, 9)
		c.fin()
		r := c.feed(t, Config{})
		r.checkFPDUs(t, 0, c.s[0], wantAround(c.s[0], 0, lost))
		r.checkCoverage(t, 0, c.s[0], c.s[0].fpdus[0].off)
		if len(r.resync) == 0 || r.resync[0].How != tc.want {
			t.Errorf("%s: resyncs %+v\n%s", tc.name, r.resync, r.dump())
		}
	}
}

// midStream builds a connection captured from the middle: no SYN, no MPA
// exchange; the capture starts at data packet first.
func midStream(markers, crc bool, first int, seed uint64, mss int) (*conv, int) {
	c := newConv(50000, 3260, 123456, 654321)
	c.s[0].fullOp(markers, crc)
	c.s[1].fullOp(markers, crc)
	rng := rand.New(rand.NewPCG(seed, 2))
	fillFPDUs(c.s[0], rng, 80, 0, 2500)
	fillFPDUs(c.s[1], rng, 10, 0, 300)
	c.send(0, mss)
	c.send(1, mss)
	idx := make([]int, first)
	for i := range idx {
		idx[i] = i
	}
	lost := c.dropData(0, idx...)
	start := 0
	if len(lost) > 0 {
		start = lost[len(lost)-1][1]
	}
	return c, start
}

func TestMidStream(t *testing.T) {
	for _, markers := range []bool{false, true} {
		for _, crc := range []bool{false, true} {
			for _, first := range []int{0, 1, 5, 13} {
				c, start := midStream(markers, crc, first, uint64(first), 1448)
				c.fin()
				r := c.feed(t, Config{})
				r.checkFPDUs(t, 0, c.s[0], wantAround(c.s[0], start, nil))
				r.checkCoverage(t, 0, c.s[0], start)
				r.checkFPDUs(t, 1, c.s[1], c.s[1].fpdus)
				if len(r.opened) != 1 || len(r.final) != 1 {
					t.Fatalf("opened %d closed %d", len(r.opened), len(r.final))
				}
				for d := range 2 {
					p := r.final[0].Params[d]
					if p.Markers != markers || p.CRC != crc || p.MarkersSource != SourceInferred || p.CRCSource != SourceInferred {
						t.Errorf("markers %v crc %v first %d: dir %d params %+v", markers, crc, first, d, p)
					}
				}
				if r.final[0].SYN {
					t.Error("SYN set")
				}
				if t.Failed() {
					t.Fatalf("markers %v crc %v first %d\n%s", markers, crc, first, r.dump())
				}
			}
		}
	}
}

func TestReorderAndDuplicate(t *testing.T) {
	for seed := range uint64(20) {
		c := handshakeConv(seed%2 == 0, seed%3 == 0, seed%4 < 2, 100, seed)
		c.send(0, 1448)
		c.send(1, 1000)
		rng := rand.New(rand.NewPCG(seed, 77))
		// Swap neighbours and duplicate some data packets (after the
		// handshake packets).
		for i := 8; i+1 < len(c.pkts); i++ {
			switch rng.IntN(10) {
			case 0:
				c.pkts[i], c.pkts[i+1] = c.pkts[i+1], c.pkts[i]
			case 1:
				j := min(len(c.pkts), i+1+rng.IntN(5))
				c.pkts = append(c.pkts[:j], append([]tpkt{c.pkts[i]}, c.pkts[j:]...)...)
			}
		}
		c.fin()
		r := c.feed(t, Config{})
		r.checkFPDUs(t, 0, c.s[0], c.s[0].fpdus)
		r.checkFPDUs(t, 1, c.s[1], c.s[1].fpdus)
		if len(r.gaps) != 0 || len(r.retr) != 0 || len(r.resync) != 0 {
			t.Errorf("seed %d: gaps %d retrans %d resync %d", seed, len(r.gaps), len(r.retr), len(r.resync))
		}
		if r.stats.RetransBytes == 0 || r.stats.OOOSegments == 0 {
			t.Errorf("seed %d: stats %+v", seed, r.stats)
		}
		if t.Failed() {
			t.Fatal(r.dump())
		}
	}
}

// A segment retransmitted with different content: the first copy is
// delivered, the difference reported (in order, from the history ring, and
// out of order, from the buffer).
func TestInconsistentRetransmission(t *testing.T) {
	for _, ooo := range []bool{false, true} {
		c := handshakeConv(false, false, true, 20, 3)
		c.send(0, 1000)
		idx := c.dataPackets(0)
		k := idx[5]
		orig, next := c.pkts[k], c.pkts[k+1]
		alter := func(p tpkt) tpkt {
			p.data = append([]byte(nil), p.data...)
			p.data[100] ^= 0xFF
			return p
		}
		var want uint32
		if ooo {
			// next arrives first and is buffered; an altered copy of it
			// arrives while it waits; then the hole is filled.
			bad := alter(next)
			want = bad.seq + 100
			c.pkts = append(c.pkts[:k:k], append([]tpkt{next, bad, orig}, c.pkts[k+2:]...)...)
		} else {
			// An altered copy of an FPDU already delivered.
			bad := alter(orig)
			want = bad.seq + 100
			c.pkts = append(c.pkts[:k+3:k+3], append([]tpkt{bad}, c.pkts[k+3:]...)...)
		}
		c.fin()
		r := c.feed(t, Config{RetransCheck: 64 << 10})
		if len(r.retr) != 1 || r.retr[0].Seq != want {
			t.Fatalf("ooo %v: retrans %+v\n%s", ooo, r.retr, r.dump())
		}
		// The first copy is the one delivered.
		r.checkFPDUs(t, 0, c.s[0], c.s[0].fpdus)
	}
}

func TestRejectedReply(t *testing.T) {
	c := newConv(40000, 445, 1, 2)
	c.handshake()
	c.s[0].frame(mpaReq(false, true))
	c.send(0, 1448)
	rep := mpaRep(false, true)
	rep.Reject = true
	rep.PrivateData = []byte("go away")
	c.s[1].frame(rep)
	c.send(1, 1448)
	// What follows looks like FPDUs but is the ULP's streaming mode now.
	c.s[0].fullOp(false, true)
	c.s[1].fullOp(false, true)
	fillFPDUs(c.s[0], rand.New(rand.NewPCG(1, 1)), 5, 0, 100)
	fillFPDUs(c.s[1], rand.New(rand.NewPCG(1, 1)), 5, 0, 100)
	c.send(0, 1448)
	c.send(1, 1448)
	c.fin()
	r := c.feed(t, Config{})
	if len(r.fpdus(0)) != 0 || len(r.fpdus(1)) != 0 {
		t.Errorf("FPDUs after a reject\n%s", r.dump())
	}
	if len(r.final) != 1 || !r.final[0].Rejected || !r.final[0].Params[1].Frame.Reject || string(r.final[0].Params[1].Frame.PrivateData) != "go away" {
		t.Errorf("conn %+v", r.final)
	}
	n := 0
	for _, f := range r.finds {
		if f.Code == finding.MPADataAfterReject {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d data-after-reject findings\n%s", n, r.dump())
	}
}

// iWARP on the ports of SMB Direct and NVMe-oF, next to an HTTP connection
// that must raise nothing, in one interleaved capture.
func TestPortsAndInterleavedHTTP(t *testing.T) {
	var convs []*conv
	for i, port := range []uint16{445, 4420} {
		c := handshakeConv(false, false, i == 0, 30, uint64(i))
		c.addr[1] = netipAddrPort("10.0.1."+string(rune('1'+i)), port)
		c.send(0, 1448)
		c.send(1, 1448)
		c.fin()
		convs = append(convs, c)
	}
	h := newConv(51000, 80, 77, 88)
	h.handshake()
	h.s[0].data = []byte("GET /index.html HTTP/1.1\r\nHost: example\r\n\r\n")
	h.send(0, 1448)
	body := make([]byte, 300000)
	for i := range body {
		body[i] = byte(i * 31 >> 3)
	}
	h.s[1].data = append([]byte("HTTP/1.1 200 OK\r\nContent-Length: 300000\r\n\r\n"), body...)
	h.send(1, 1448)
	h.fin()
	convs = append(convs, h)

	r := &recorder{t: t}
	a := New(Config{}, r)
	frame := 0
	for more := true; more; {
		more = false
		for _, c := range convs {
			if len(c.pkts) == 0 {
				continue
			}
			more = true
			p := c.packet(&c.pkts[0])
			c.pkts = c.pkts[1:]
			frame++
			a.Feed(frame, c.ts, &p)
		}
	}
	a.Flush()
	if len(r.opened) != 2 || len(r.final) != 2 {
		t.Fatalf("opened %d closed %d\n%s", len(r.opened), len(r.final), r.dump())
	}
	for _, c := range r.final {
		if c.Addr[1].Port() == 80 || c.Addr[0].Port() == 80 {
			t.Errorf("HTTP connection reported")
		}
	}
	nf := 0
	for _, p := range r.pdus {
		if !p.frame {
			nf++
		}
	}
	if nf != 120 || len(r.gaps) != 0 {
		t.Errorf("%d FPDUs, %d gaps\n%s", nf, len(r.gaps), r.dump())
	}
	if st := a.Stats(); st.UntrackedBytes == 0 || st.Flows != 3 || st.IWARPConns != 2 {
		t.Errorf("stats %+v", st)
	}
}

// A capture with a small snaplen: FPDUs come out partial, with their headers
// decoded, and the cut octets as gaps; framing holds.
func TestSnaplen(t *testing.T) {
	c := handshakeConv(false, false, true, 0, 4)
	fillFPDUs(c.s[0], rand.New(rand.NewPCG(4, 4)), 30, 0, 1400)
	// One FPDU per segment, as senders align them (RFC 5044 §5.1).
	for c.s[0].sent < len(c.s[0].data) {
		for _, f := range c.s[0].fpdus {
			if f.off == c.s[0].sent {
				c.seg(0, f.off, f.len)
				c.s[0].sent += f.len
			}
		}
	}
	const snap = 60
	for i := range c.pkts {
		p := &c.pkts[i]
		if len(p.data) > snap && i > 5 {
			p.plen = len(p.data)
			p.data = p.data[:snap]
		}
	}
	c.fin()
	r := c.feed(t, Config{})
	partial, whole := 0, 0
	for _, p := range r.pdus {
		if p.frame || p.dir != 0 {
			continue
		}
		if p.missing > 0 {
			partial++
			if p.opcode != decode.OpSend && p.opcode != decode.OpWrite {
				t.Errorf("partial FPDU opcode %v", p.opcode)
			}
		} else {
			whole++
		}
	}
	if partial == 0 || partial+whole < 20 || len(r.resync) > 2 {
		t.Errorf("partial %d whole %d\n%s", partial, whole, r.dump())
	}
	for _, g := range r.gaps {
		if g.Reason != GapSnaplen && g.Reason != GapSkipped {
			t.Errorf("gap %+v", g)
		}
	}
	r.checkCoverage(t, 0, c.s[0], c.s[0].fpdus[0].off)
}

func TestCloseReasonsAndReuse(t *testing.T) {
	// FIN, then the same 4-tuple with a new SYN: two connections.
	c1 := handshakeConv(false, false, false, 5, 1)
	c1.send(0, 1448)
	c1.send(1, 1448)
	c1.fin()
	c2 := handshakeConv(false, false, true, 5, 2)
	c2.s[0].isn, c2.s[1].isn = 99999, 88888
	c2.s[0].data, c2.s[1].data, c2.s[0].fpdus, c2.s[1].fpdus, c2.s[0].sent, c2.s[1].sent = nil, nil, nil, nil, 0, 0
	c2.pkts = nil
	c2.handshake()
	c2.s[0].frame(mpaReq(false, true))
	c2.s[1].frame(mpaRep(false, true))
	c2.s[0].fullOp(false, true)
	c2.s[1].fullOp(false, true)
	fillFPDUs(c2.s[0], rand.New(rand.NewPCG(1, 1)), 5, 0, 100)
	c2.send(0, 1448)
	c2.send(1, 1448)
	// ... ended by a RST.
	c2.pkts = append(c2.pkts, tpkt{d: 1, seq: c2.s[1].seqAt(len(c2.s[1].data)), flags: pcap.TCPRst})
	c1.pkts = append(c1.pkts, c2.pkts...)
	r := c1.feed(t, Config{})
	if len(r.final) != 2 || r.closes[0].Reason != CloseFIN || r.closes[1].Reason != CloseRST || r.final[0].ID == r.final[1].ID {
		t.Fatalf("closes %+v\n%s", r.closes, r.dump())
	}
	if !r.final[1].Params[0].CRC || r.final[0].Params[0].CRC {
		t.Errorf("params of the two connections mixed up")
	}
	if n := len(r.fpdus(0)); n != 10 {
		t.Errorf("%d FPDUs", n)
	}

	// A new SYN without FIN or RST: the old connection is closed as reused.
	c3 := handshakeConv(false, false, false, 5, 1)
	c3.send(0, 1448)
	c3.pkts = append(c3.pkts, tpkt{d: 0, seq: 424242, flags: pcap.TCPSyn})
	r = c3.feed(t, Config{})
	if len(r.closes) != 1 || r.closes[0].Reason != CloseReused {
		t.Errorf("closes %+v", r.closes)
	}

	// Idle expiry by capture time, and end of capture.
	c4 := handshakeConv(false, false, false, 5, 1)
	c4.send(0, 1448)
	ra := &recorder{t: t}
	a := New(Config{IdleTimeout: time.Second}, ra)
	for i := range c4.pkts {
		p := c4.packet(&c4.pkts[i])
		a.Feed(i+1, c4.ts, &p)
	}
	other := newConv(1, 2, 3, 4)
	p := other.packet(&tpkt{d: 0, seq: 5, flags: pcap.TCPAck})
	a.Feed(100, c4.ts.Add(5*time.Second), &p)
	if len(ra.closes) != 1 || ra.closes[0].Reason != CloseIdle {
		t.Errorf("closes %+v", ra.closes)
	}
	c5 := handshakeConv(false, false, false, 5, 1)
	c5.send(0, 1448)
	r = c5.feed(t, Config{})
	if len(r.closes) != 1 || r.closes[0].Reason != CloseEnd {
		t.Errorf("closes %+v", r.closes)
	}
}

// Data missing at the end: the peer acknowledged octets the capture never
// saw, or the FIN says where the stream ended.
func TestTailGap(t *testing.T) {
	c := handshakeConv(false, false, true, 20, 5)
	c.send(0, 1000)
	c.send(1, 1000)
	idx := c.dataPackets(0)
	lost := c.dropData(0, len(idx)-1, len(idx)-2)
	c.fin()
	r := c.feed(t, Config{})
	r.checkFPDUs(t, 0, c.s[0], wantAround(c.s[0], 0, lost))
	r.checkCoverage(t, 0, c.s[0], c.s[0].fpdus[0].off)
	r.checkFPDUs(t, 1, c.s[1], c.s[1].fpdus)
	if len(r.closes) != 1 || r.closes[0].Reason != CloseFIN {
		t.Errorf("closes %+v", r.closes)
	}
	if len(r.gaps) != 1 || r.gaps[0].Len != uint64(lost[1][1]-lost[0][0]) || r.gaps[0].Reason != GapAcked {
		t.Errorf("gaps %+v lost %v\n%s", r.gaps, lost, r.dump())
	}
}

func TestOutOfOrderBudgets(t *testing.T) {
	// Per-flow limit: a hole that never fills (no ACKs tell) is given up
	// when the buffered data exceed the limit.
	c := handshakeConv(false, false, true, 200, 6)
	c.send(0, 1448)
	lost := c.dropData(0, 3)
	for i := range c.pkts {
		c.pkts[i].ack = 0
		c.pkts[i].flags &^= pcap.TCPAck
	}
	r := c.feed(t, Config{FlowBufferLimit: 16 << 10})
	r.checkFPDUs(t, 0, c.s[0], wantAround(c.s[0], 0, lost))
	if len(r.gaps) == 0 || r.gaps[0].Reason != GapBudget || r.stats.BudgetGaps != 1 {
		t.Errorf("gaps %+v\n%s", r.gaps, r.dump())
	}
	if r.stats.MemoryPeak > 64<<10 {
		t.Errorf("memory peak %d", r.stats.MemoryPeak)
	}

	// Global budget: two flows with holes; the older one's hole is given up.
	c1 := handshakeConv(false, false, true, 200, 7)
	c1.send(0, 1448)
	lost1 := c1.dropData(0, 2)
	c2 := handshakeConv(false, false, true, 200, 8)
	c2.addr[0] = netipAddrPort("10.9.9.9", 1234)
	c2.send(0, 1448)
	lost2 := c2.dropData(0, 2)
	for _, cc := range []*conv{c1, c2} {
		for i := range cc.pkts {
			cc.pkts[i].ack = 0
			cc.pkts[i].flags &^= pcap.TCPAck
		}
	}
	r = &recorder{t: t}
	a := New(Config{MemoryBudget: 256 << 10}, r)
	n := 0
	for len(c1.pkts)+len(c2.pkts) > 0 {
		for _, cc := range []*conv{c1, c2} {
			if len(cc.pkts) > 0 {
				p := cc.packet(&cc.pkts[0])
				cc.pkts = cc.pkts[1:]
				n++
				a.Feed(n, cc.ts, &p)
			}
		}
	}
	a.Flush()
	st := a.Stats()
	if st.MemoryPeak > 256<<10 || st.BudgetGaps == 0 {
		t.Errorf("stats %+v", st)
	}
	_, _ = lost1, lost2
	if got := len(r.fpdus(0)); got < 380 {
		t.Errorf("%d FPDUs\n%s", got, r.dump())
	}
}

// The MPA exchange after a ULP streaming-mode exchange (RFC 5044 §7.1.3, as
// iSER does after its login), MPA v2 with IRD/ORD and RTR flags, a
// zero-length RDMA Write RTR first.
func TestMPAv2AfterStreamingMode(t *testing.T) {
	c := newConv(40000, 3260, 1, 2)
	c.handshake()
	c.s[0].data = []byte("iSCSI login request ... (streaming mode)")
	c.s[1].data = []byte("iSCSI login response")
	req := decode.MPAFrame{Rev: 2, CRC: true, Enhanced: true, HasV2: true,
		V2:          decode.MPAv2{PeerToPeer: true, ZeroLenWriteRTR: true, ZeroLenReadRTR: true, IRD: 16, ORD: 8},
		PrivateData: append(make([]byte, decode.MPAv2Len), "ulp-pd"...)}
	rep := decode.MPAFrame{Reply: true, Rev: 2, CRC: true, Enhanced: true, HasV2: true,
		V2:          decode.MPAv2{PeerToPeer: true, ZeroLenWriteRTR: true, IRD: 8, ORD: 16},
		PrivateData: make([]byte, decode.MPAv2Len)}
	c.s[0].frame(req)
	c.send(0, 1448)
	c.s[1].frame(rep)
	c.send(1, 1448)
	c.s[0].fullOp(false, true)
	c.s[1].fullOp(false, true)
	c.s[0].fpdu(writeULPDU(1, 0, nil)) // the RTR
	fillFPDUs(c.s[0], rand.New(rand.NewPCG(1, 1)), 10, 0, 500)
	fillFPDUs(c.s[1], rand.New(rand.NewPCG(1, 1)), 10, 0, 500)
	c.send(0, 1448)
	c.send(1, 1448)
	c.fin()
	r := c.feed(t, Config{})
	r.checkFPDUs(t, 0, c.s[0], c.s[0].fpdus)
	r.checkFPDUs(t, 1, c.s[1], c.s[1].fpdus)
	if len(r.final) != 1 {
		t.Fatal(r.dump())
	}
	p := r.final[0].Params
	if !p[0].HasFrame || !p[0].Frame.HasV2 || p[0].Frame.V2.IRD != 16 || !p[0].Frame.V2.PeerToPeer ||
		string(p[0].Frame.ULPPrivateData()) != "ulp-pd" || p[1].Frame.V2.ORD != 16 || !p[0].CRC || r.final[0].Initiator != 0 {
		t.Errorf("params %+v", p)
	}
	if p[0].FrameSeq != c.s[0].seqAt(len("iSCSI login request ... (streaming mode)")) {
		t.Errorf("frame seq %d", p[0].FrameSeq)
	}
	if len(r.gaps) != 0 {
		t.Errorf("gaps\n%s", r.dump())
	}
}

// The MPA Reply is lost: the initiator's markers (asked for by the Reply)
// and the CRC are inferred where its Full Operation Phase starts, and the
// responder's FPDUs are found without their frame.
func TestReplyLost(t *testing.T) {
	for _, markers := range []bool{false, true} {
		for _, crc := range []bool{false, true} {
			c := newConv(40000, 20049, 10, 20)
			c.handshake()
			c.s[0].frame(mpaReq(markers, false))
			c.send(0, 1448)
			c.s[1].frame(mpaRep(markers, crc))
			c.send(1, 1448)
			c.s[0].fullOp(markers, crc)
			c.s[1].fullOp(markers, crc)
			fillFPDUs(c.s[0], rand.New(rand.NewPCG(2, 1)), 30, 0, 1500)
			fillFPDUs(c.s[1], rand.New(rand.NewPCG(3, 1)), 30, 0, 1500)
			c.send(0, 1448)
			c.send(1, 1448)
			lost := c.dropData(1, 0)
			c.fin()
			r := c.feed(t, Config{})
			r.checkFPDUs(t, 0, c.s[0], c.s[0].fpdus)
			r.checkFPDUs(t, 1, c.s[1], wantAround(c.s[1], 0, lost))
			if len(r.final) == 1 {
				p := r.final[0].Params
				if p[0].Markers != markers || p[0].MarkersSource != SourceInferred || p[0].CRC != crc || p[1].Markers != markers || p[1].MarkersSource != SourceHandshake {
					t.Errorf("markers %v crc %v: params %+v", markers, crc, p)
				}
			}
			if t.Failed() {
				t.Fatalf("markers %v crc %v\n%s", markers, crc, r.dump())
			}
		}
	}
}

// Direct start (draft-differences §7): FPDUs from the first octet after the
// SYN, no MPA frames.
func TestDirectStart(t *testing.T) {
	c := newConv(40000, 9999, 10, 20)
	c.handshake()
	c.s[0].fullOp(false, true)
	c.s[1].fullOp(false, true)
	fillFPDUs(c.s[0], rand.New(rand.NewPCG(2, 1)), 10, 0, 1500)
	fillFPDUs(c.s[1], rand.New(rand.NewPCG(3, 1)), 10, 0, 1500)
	c.send(0, 1448)
	c.send(1, 1448)
	c.fin()
	r := c.feed(t, Config{})
	r.checkFPDUs(t, 0, c.s[0], c.s[0].fpdus)
	r.checkFPDUs(t, 1, c.s[1], c.s[1].fpdus)
	if len(r.gaps) != 0 || len(r.resync) != 2 {
		t.Errorf("\n%s", r.dump())
	}
}

// A declared port keeps looking for MPA past Config.DetectLimit: here the
// MPA exchange comes after 64 KiB of streaming-mode data.
func TestDeclaredPort(t *testing.T) {
	build := func() *conv {
		c := newConv(40000, 7777, 10, 20)
		c.handshake()
		c.s[0].data = make([]byte, 64<<10)
		c.s[1].data = make([]byte, 64<<10)
		c.s[0].frame(mpaReq(false, true))
		c.s[1].frame(mpaRep(false, true))
		c.s[0].fullOp(false, true)
		fillFPDUs(c.s[0], rand.New(rand.NewPCG(2, 1)), 10, 0, 1500)
		c.send(0, 1448)
		c.send(1, 1448)
		c.fin()
		return c
	}
	c := build()
	r := c.feed(t, Config{DetectLimit: 16 << 10})
	if len(r.opened) != 0 {
		t.Errorf("found MPA past the detect limit")
	}
	c = build()
	r = c.feed(t, Config{DetectLimit: 16 << 10, Ports: []uint16{7777}})
	r.checkFPDUs(t, 0, c.s[0], c.s[0].fpdus)
}

// FlowHash is the same both ways and spreads flows (analyze's dispatcher
// gives flows to shards by it).
func TestFlowHash(t *testing.T) {
	c := newConv(40000, 4420, 1, 2)
	p1 := c.packet(&tpkt{d: 0})
	p2 := c.packet(&tpkt{d: 1})
	if FlowHash(&p1) != FlowHash(&p2) {
		t.Error("flow hash differs between directions")
	}
	seen := map[int]bool{}
	for port := range uint16(200) {
		c := newConv(30000+port, 4420, 1, 2)
		p := c.packet(&tpkt{d: 0})
		seen[int(FlowHash(&p)%4)] = true
	}
	if len(seen) != 4 {
		t.Errorf("shards used: %v", seen)
	}
}

// A capture that starts in the middle of a connection whose FPDUs are near
// 64 KiB (siw with GSO): detection waits for a chain that long.
func TestMidStreamLargeFPDUs(t *testing.T) {
	c := newConv(50000, 7174, 1, 2)
	c.s[0].fullOp(false, false)
	for i := range 12 {
		c.s[0].fpdu(writeULPDU(7, uint64(i)<<16, payload(65000, byte(i))))
	}
	// One FPDU per GSO "segment" of up to 64 KiB, as lo captures show them.
	for _, f := range c.s[0].fpdus {
		c.seg(0, f.off, f.len)
	}
	c.s[0].sent = len(c.s[0].data)
	c.pkts = c.pkts[2:]
	c.fin()
	r := c.feed(t, Config{})
	r.checkFPDUs(t, 0, c.s[0], c.s[0].fpdus[2:])
}

// A capture with a small snaplen that starts mid-stream, and loses a frame:
// frames whose FPDU ends where the frame ends realign the framer.
func TestSnaplenMidStreamAndLoss(t *testing.T) {
	c := newConv(50000, 4420, 1, 2)
	c.s[0].fullOp(false, true)
	fillFPDUs(c.s[0], rand.New(rand.NewPCG(9, 9)), 40, 100, 1400)
	for _, f := range c.s[0].fpdus {
		c.seg(0, f.off, f.len)
	}
	c.s[0].sent = len(c.s[0].data)
	c.pkts = c.pkts[3:] // mid-stream
	c.dropData(0, 20)   // and a loss
	const snap = 64
	for i := range c.pkts {
		p := &c.pkts[i]
		if len(p.data) > snap {
			p.plen = len(p.data)
			p.data = p.data[:snap]
		}
	}
	r := c.feed(t, Config{})
	partial := 0
	for _, p := range r.pdus {
		if p.missing > 0 {
			partial++
		}
	}
	// 37 frames kept; the first ChainLength recognize the stream, and one
	// after the loss realigns it.
	if partial < 37-3-1 || len(r.opened) != 1 {
		t.Errorf("%d partial FPDUs\n%s", partial, r.dump())
	}
	r.checkCoverage(t, 0, c.s[0], c.s[0].fpdus[3].off)
	for _, p := range r.pdus {
		if p.segErr != nil && p.missing == 0 {
			t.Errorf("FPDU %+v", p)
		}
		if p.opcode != decode.OpSend && p.opcode != decode.OpWrite {
			t.Errorf("opcode %v", p.opcode)
		}
	}
}

// With almost no memory, FPDUs that span segments cannot be gathered: they
// come out partial and the octets not held are reported, and framing holds.
func TestNoMemory(t *testing.T) {
	c := handshakeConv(false, true, true, 0, 1)
	for i := range 20 {
		c.s[0].fpdu(writeULPDU(1, uint64(i), payload(1000+i*500, byte(i))))
	}
	c.send(0, 1448)
	c.fin()
	r := c.feed(t, Config{MemoryBudget: 4096})
	if r.stats.MemoryPeak > 4096 {
		t.Errorf("memory peak %d", r.stats.MemoryPeak)
	}
	partial := 0
	for _, p := range r.pdus {
		if p.missing > 0 {
			partial++
		}
	}
	nomem := 0
	for _, g := range r.gaps {
		if g.Reason == GapNoMemory {
			nomem++
		}
	}
	if partial == 0 || nomem == 0 || r.stats.NoMemoryBytes == 0 || len(r.resync) != 0 {
		t.Errorf("partial %d nomem %d\n%s", partial, nomem, r.dump())
	}
	r.checkCoverage(t, 0, c.s[0], c.s[0].fpdus[0].off)
	// Whatever fitted is complete and right.
	want := map[uint32]bool{}
	for _, f := range c.s[0].fpdus {
		want[c.s[0].seqAt(f.off)] = true
	}
	for _, p := range r.fpdus(0) {
		if !want[p.seq] {
			t.Errorf("FPDU at %d", p.seq)
		}
	}
}
