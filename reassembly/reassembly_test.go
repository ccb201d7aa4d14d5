package reassembly

import (
	"math/rand/v2"
	"testing"

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
		for cut := 1; cut < total; cut++ {
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
		// Every octet its own segment.
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
