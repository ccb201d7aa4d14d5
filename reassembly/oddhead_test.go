package reassembly

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
)

// oddULPDU is a Send whose DDP (dv) or RDMAP (rv) version is not the
// stream's, as a sender bug or gen's CorruptHeader writes it.
func oddULPDU(msn uint32, p []byte, dv, rv uint8) []byte {
	s := decode.Segment{
		DDP:     decode.DDPHeader{Last: true, DV: dv, QN: 0, MSN: msn},
		RDMAP:   decode.RDMAPControl{RV: rv, Opcode: decode.OpSend},
		Payload: p,
	}
	return s.Append(nil)
}

// oddStream fills s with FPDUs among which some have DV 2 or RV 2: a
// single one, then a message of three consecutive ones.
func oddStream(s *side, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 3))
	fillFPDUs(s, rng, 10, 0, 3000)
	s.fpdu(oddULPDU(100, payload(700, 1), 2, 1))
	fillFPDUs(s, rng, 5, 0, 3000)
	for i := range 3 {
		s.fpdu(oddULPDU(200+uint32(i), payload(900, 2), 1, 2))
	}
	fillFPDUs(s, rng, 10, 0, 3000)
}

// swapCRCs rewrites every FPDU's CRC of s in the wrong byte order.
func swapCRCs(s *side) {
	for _, f := range s.fpdus {
		w := s.data[f.off : f.off+f.len]
		c := w[len(w)-decode.CRCLen:]
		binary.LittleEndian.PutUint32(c, bits.ReverseBytes32(binary.LittleEndian.Uint32(c)))
	}
}

func countFinding(r *recorder, d Dir, code finding.Code) int {
	n := 0
	for _, f := range r.finds {
		if f.Dir == d && f.Code == code {
			n++
		}
	}
	return n
}

// Issue 20 item 0(b)/1: a chain whose ULPDU_Length links hold is not
// abandoned because one header (or one message's headers) has a version
// pair the stream does not use, CRC or none.
func TestOddHeaderKeepsFraming(t *testing.T) {
	for _, tc := range []struct {
		name string
		crc  bool
		mss  int
	}{
		{"nocrc", false, 1000},
		{"nocrc-big-segments", false, 9000},
		{"nocrc-small-mss", false, 300},
		{"crc", true, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := handshakeConv(false, false, tc.crc, 0, 1)
			oddStream(c.s[0], 7)
			c.send(0, tc.mss)
			c.fin()
			r := c.feed(t, Config{})
			r.checkFPDUs(t, 0, c.s[0], c.s[0].fpdus)
			if n := countFinding(r, 0, finding.MPAFramingLost); n != 0 {
				t.Errorf("%d mpa.framing_lost\n%s", n, r.dump())
			}
		})
	}
}

// Issue 20 item 1: a sender that writes every CRC32c byte-swapped. Every
// FPDU is delivered with a bad CRC, the framing holds (odd headers
// included), one finding per direction names the defect, and resync after
// a real loss accepts the byte-swapped chain.
func TestCRCByteSwapped(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mss    int
		drop   []int
		resync bool // the loss swallows an FPDU header
	}{
		{"in-order", 1000, nil, false},
		{"big-segments", 9000, nil, false},
		{"loss", 1000, []int{4}, true},
		{"loss-twice", 700, []int{6, 30}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := handshakeConv(false, false, true, 0, 1)
			oddStream(c.s[0], 11)
			rng := rand.New(rand.NewPCG(5, 5))
			fillFPDUs(c.s[1], rng, 20, 0, 3000)
			swapCRCs(c.s[0])
			swapCRCs(c.s[1])
			c.send(0, tc.mss)
			c.send(1, tc.mss)
			lost := c.dropData(0, tc.drop...)
			c.fin()
			r := c.feed(t, Config{})
			for d := range Dir(2) {
				want := c.s[d].fpdus
				if d == 0 {
					want = wantAround(c.s[0], 0, lost)
				}
				r.checkFPDUs(t, d, c.s[d], want)
				for _, p := range r.fpdus(d) {
					if p.crc != decode.CRCBad {
						t.Fatalf("dir %v: FPDU seq %d crc %v, want bad", d, p.seq, p.crc)
					}
				}
				if n := countFinding(r, d, finding.MPACRCByteOrder); n != 1 {
					t.Errorf("dir %v: %d mpa.crc_byte_order findings, want 1", d, n)
				}
				if n := countFinding(r, d, finding.MPAFramingLost); n != 0 {
					t.Errorf("dir %v: %d mpa.framing_lost\n%s", d, n, r.dump())
				}
			}
			if tc.resync && len(r.resync) == 0 {
				t.Errorf("no resync after the loss")
			}
		})
	}
}
