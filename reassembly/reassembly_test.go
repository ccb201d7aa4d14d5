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
