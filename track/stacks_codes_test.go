package track

import (
	"net/netip"
	"slices"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
)

// noReceiveClean names the cases whose clean run already holds a "no
// buffer available" Terminate.
var noReceiveClean = map[string]bool{
	"Terminate answered by Terminate": true, "Terminate with trailing octets": true,
	"Local Catastrophic with headers": true, "Terminate cause does not fit": true,
	"Terminate segment length does not fit": true, "sending after receiving a Terminate": true,
}

// Cases for the codes of issue 28 (erdma, resets in setup, the MPA v2 → v1
// fallback, a Send with no receive posted), added to codeCases.
func init() {
	// The Terminate cases blame a Send with DDP "Invalid MSN - no buffer
	// available": the no-receive diagnosis comes with each such Terminate.
	for i := range codeCases {
		tc := &codeCases[i]
		if tc.code == finding.RDMAPNoReceivePosted {
			continue
		}
		switch {
		case noReceiveClean[tc.name]:
			tc.base = append(tc.base, finding.RDMAPNoReceivePosted)
		case tc.code == finding.RDMAPTerminate || slices.Contains(tc.base, finding.RDMAPTerminate) || slices.Contains(tc.also, finding.RDMAPTerminate):
			tc.also = append(tc.also, finding.RDMAPNoReceivePosted)
		}
	}
	ini := netip.MustParseAddrPort("10.0.0.1:40000")
	retry := netip.MustParseAddrPort("10.0.0.1:40001")
	resp := netip.MustParseAddrPort("10.0.0.2:4791")
	codeCases = append(codeCases,
		codeCase{name: "erdma Rev 129", code: finding.MPARevERDMA, run: func(s *scen, bad bool) {
			q, r := mpaReq(1), mpaRep(1)
			if bad {
				s.mark()
				q.Rev, q.ERDMA, q.ERDMAExt = decode.MPARevERDMA, true, decode.MPAERDMAExt{Cookie: 7, Bits: 1}
				r.Rev, r.ERDMA = decode.MPARevERDMA, true
			}
			s.mpa(I2R, q)
			s.mpa(R2I, r)
			s.seg(I2R, send(1, 16))
			s.seg(R2I, send(1, 16))
		}},
		codeCase{name: "Responder resets the Request", code: finding.MPAResetInSetup, also: []finding.Code{finding.MPALLPClosed}, run: func(s *scen, bad bool) {
			s.mpa(I2R, mpaReq(2))
			if bad {
				s.mark()
				s.tr.Close(s.at(R2I, 0), CloseRST)
				return
			}
			s.mpa(R2I, mpaRep(2))
		}},
		codeCase{name: "v1 retry after a reset v2 attempt", code: finding.MPAV1Fallback,
			base: []finding.Code{finding.MPALLPClosed, finding.MPAResetInSetup}, run: func(s *scen, bad bool) {
				s.tr.Peers(s.conn, ini, resp)
				s.mpa(I2R, mpaReq(2))
				s.tr.Close(s.at(R2I, 0), CloseRST)
				s.conn++
				s.tr.Peers(s.conn, retry, resp)
				rev := uint8(2)
				if bad {
					s.mark()
					rev = 1
				}
				s.mpa(I2R, mpaReq(rev))
				s.mpa(R2I, mpaRep(rev))
				s.seg(I2R, send(1, 16))
			}},
		codeCase{name: "Send with no receive posted", code: finding.RDMAPNoReceivePosted, also: []finding.Code{finding.RDMAPTerminate}, run: func(s *scen, bad bool) {
			s.handshake()
			s.seg(I2R, send(1, 16))
			if bad {
				s.mark()
				s.seg(R2I, terminate(blameUntagged(1, 2, 2, decode.OpSend, 0, 1, 16)))
			}
		}},
	)
}
