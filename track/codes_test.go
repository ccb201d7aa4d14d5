package track

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
)

// codeCase feeds one violation (bad) and the same traffic without it
// (clean). The clean run raises exactly the codes in base; the bad run
// raises code once more and nothing outside base and also.
type codeCase struct {
	name  string
	code  finding.Code
	base  []finding.Code
	also  []finding.Code
	lim   Limits
	many  bool // code may fire more than once in the bad run
	count int  // with many: exactly this often
	run   func(s *scen, bad bool)
}

var codeCases = []codeCase{
	// MPA start-up.
	{name: "responder key", code: finding.MPAKeyInvalid, run: func(s *scen, bad bool) {
		s.mpa(I2R, mpaReq(2))
		r := mpaRep(2)
		if bad {
			s.mark()
			r.Reply = false // the Responder answers with the Request key
		}
		s.mpa(R2I, r)
	}},
	{name: "unparseable key", code: finding.MPAKeyInvalid, run: func(s *scen, bad bool) {
		s.mpa(I2R, mpaReq(2))
		if bad {
			s.mark()
			r := mpaRep(2)
			b := r.Append(nil)
			b[3] = 'x'
			var f decode.MPAFrame
			_, err := decode.ParseMPAFrame(b, &f)
			s.tr.BadFrame(s.at(R2I, len(b)), err)
			return
		}
		s.mpa(R2I, mpaRep(2))
	}},
	{name: "rev 3", code: finding.MPARevUnknown, run: func(s *scen, bad bool) {
		q := mpaReq(2)
		if bad {
			s.mark()
			q.Rev = 3
		}
		s.mpa(I2R, q)
		s.mpa(R2I, mpaRep(2))
		s.seg(I2R, send(1, 16))
	}},
	{name: "rev 0", code: finding.MPARev0, run: func(s *scen, bad bool) {
		q := mpaReq(1)
		if bad {
			s.mark()
			q.Rev = 0
		}
		s.mpa(I2R, q)
		s.mpa(R2I, mpaRep(1))
		s.seg(I2R, send(1, 16))
	}},
	{name: "R in request", code: finding.MPARequestRejectBit, run: func(s *scen, bad bool) {
		q := mpaReq(2)
		if bad {
			s.mark()
			q.Reject = true
		}
		s.mpa(I2R, q)
		s.mpa(R2I, mpaRep(2))
	}},
	{name: "PD_Length 600", code: finding.MPAPDLengthInvalid, run: func(s *scen, bad bool) {
		q := mpaReq(1)
		if bad {
			s.mark()
			q.PrivateData = make([]byte, 600)
			b := q.Append(nil)
			var f decode.MPAFrame
			_, err := decode.ParseMPAFrame(b, &f)
			s.tr.BadFrame(s.at(I2R, len(b)), err)
			return
		}
		q.PrivateData = make([]byte, 500)
		s.mpa(I2R, q)
	}},
	{name: "res bits", code: finding.MPAResBits, run: func(s *scen, bad bool) {
		q := mpaReq(2)
		if bad {
			s.mark()
			q.Res = 0x04
		}
		s.mpa(I2R, q)
		s.mpa(R2I, mpaRep(2))
	}},
	{name: "siw GSO bit", code: finding.MPASiwGSO, run: func(s *scen, bad bool) {
		q := mpaReq(2)
		if bad {
			s.mark()
			q.Res = decode.MPAFlagGSO
		}
		s.mpa(I2R, q)
		s.mpa(R2I, mpaRep(2))
	}},
	{name: "second request", code: finding.MPAFrameUnexpected, run: func(s *scen, bad bool) {
		s.handshake()
		if bad {
			s.mark()
			s.mpa(I2R, mpaReq(2))
		}
		s.seg(I2R, send(1, 16))
	}},
	{name: "FPDU after reject", code: finding.MPAFPDUAfterReject, base: []finding.Code{finding.MPAReject}, run: func(s *scen, bad bool) {
		s.mpa(I2R, mpaReq(1))
		r := mpaRep(1)
		r.Reject = true
		s.mpa(R2I, r)
		if bad {
			s.mark()
			s.seg(I2R, send(1, 16))
		}
	}},
	{name: "initiator before reply (order)", code: finding.MPAFPDUBeforeReply, run: func(s *scen, bad bool) {
		s.mpa(I2R, mpaReq(2))
		if bad {
			s.mark()
			s.seg(I2R, send(1, 16))
			s.mpa(R2I, mpaRep(2))
			return
		}
		s.mpa(R2I, mpaRep(2))
		s.seg(I2R, send(1, 16))
	}},
	{name: "initiator before reply (ack)", code: finding.MPAFPDUBeforeReply, run: func(s *scen, bad bool) {
		s.handshake()
		if bad {
			s.mark()
			s.ackLag = 1
		}
		s.seg(I2R, send(1, 16))
	}},
	{name: "responder first (order)", code: finding.MPAResponderSentFirst, run: func(s *scen, bad bool) {
		s.handshake()
		if bad {
			s.mark()
			s.seg(R2I, send(1, 16))
			s.seg(I2R, send(1, 16))
			return
		}
		s.seg(I2R, send(1, 16))
		s.seg(R2I, send(1, 16))
	}},
	{name: "responder first (ack)", code: finding.MPAResponderSentFirst, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, send(1, 16))
		if bad {
			s.mark()
			s.ackLag = 4
		}
		s.seg(R2I, send(1, 16))
	}},
	{name: "S with short PD", code: finding.MPAEnhancedInvalid, run: func(s *scen, bad bool) {
		q := mpaReq(2)
		if bad {
			s.mark()
			q.HasV2, q.PrivateData = false, []byte{0, 4}
		}
		s.mpa(I2R, q)
		s.mpa(R2I, mpaRep(2))
	}},
	{name: "enhanced mismatch", code: finding.MPAEnhancedMismatch, run: func(s *scen, bad bool) {
		if bad {
			s.mpa(I2R, mpaReq(2))
			s.mark()
			s.mpa(R2I, mpaRep(1))
			return
		}
		s.mpa(I2R, mpaReq(1))
		s.mpa(R2I, mpaRep(1))
	}},
	{name: "A mismatch", code: finding.MPAP2PMismatch, run: func(s *scen, bad bool) {
		q := mpaReq(2)
		if bad {
			q.V2.PeerToPeer, q.V2.ZeroLenWriteRTR = true, true
		}
		s.mpa(I2R, q)
		s.mark()
		s.mpa(R2I, mpaRep(2))
		s.seg(I2R, send(1, 16))
	}},
	{name: "no RTR type", code: finding.MPARTRNoneOffered, run: func(s *scen, bad bool) {
		s.p2p(false, !bad, false)
		s.want = 2 // the Reply
	}},
	{name: "RTR bits without A", code: finding.MPARTRBitsIgnored, run: func(s *scen, bad bool) {
		q := mpaReq(2)
		if bad {
			s.mark()
			q.V2.ZeroLenWriteRTR = true
		}
		s.mpa(I2R, q)
		s.mpa(R2I, mpaRep(2))
	}},
	{name: "RTR type not accepted", code: finding.MPARTRTypeMismatch, run: func(s *scen, bad bool) {
		s.p2p(false, !bad, true)
		s.mark()
		s.seg(I2R, write(1, 0, 0))
		s.seg(I2R, send(1, 16))
	}},
	{name: "responder ORD above initiator IRD", code: finding.MPAIRDORDViolation, run: func(s *scen, bad bool) {
		q := mpaReq(2)
		q.V2.IRD = 2
		r := mpaRep(2)
		r.V2.ORD = 2
		if bad {
			r.V2.ORD = 4
		}
		s.mpa(I2R, q)
		s.mark()
		s.mpa(R2I, r)
	}},
	{name: "0x3FFF not echoed", code: finding.MPAIRDORDViolation, run: func(s *scen, bad bool) {
		q := mpaReq(2)
		q.V2.ORD = decode.MPAv2NoNegotiation
		r := mpaRep(2)
		r.V2.IRD = decode.MPAv2NoNegotiation
		if bad {
			r.V2.IRD = 8
		}
		s.mpa(I2R, q)
		s.mark()
		s.mpa(R2I, r)
	}},
	{name: "no RTR", code: finding.MPARTRMissing, run: func(s *scen, bad bool) {
		s.p2p(false, true, false)
		if !bad {
			s.seg(I2R, write(1, 0, 0))
		}
		s.mark()
		s.seg(I2R, send(1, 16))
	}},
	{name: "responder before RTR", code: finding.MPAFPDUBeforeRTR, run: func(s *scen, bad bool) {
		s.p2p(false, true, false)
		if bad {
			s.mark()
			s.seg(R2I, send(1, 16))
			s.seg(I2R, write(1, 0, 0))
			return
		}
		s.seg(I2R, write(1, 0, 0))
		s.seg(R2I, send(1, 16))
	}},
	{name: "read RTR answered", code: finding.MPAFPDUBeforeRTR, run: func(s *scen, bad bool) {
		s.p2p(false, false, true)
		s.seg(I2R, rreq(1, 0, 0, 0, 0, 0))
		if bad {
			s.mark()
			s.ackLag = 1
		}
		s.seg(R2I, readResp(0, 0, 0, true))
		s.seg(I2R, send(1, 16))
	}},

	// MPA FPDUs.
	{name: "bad CRC", code: finding.MPACRCBad, run: func(s *scen, bad bool) {
		s.crc = true
		q := mpaReq(2)
		q.CRC = true
		s.mpa(I2R, q)
		s.mpa(R2I, mpaRep(2))
		s.seg(I2R, send(1, 16))
		b := decode.AppendFPDU(nil, segBytes(send(2, 16)), true)
		if bad {
			s.mark()
			b[len(b)-1] ^= 0xFF
		}
		s.wire(I2R, b)
		s.seg(I2R, send(3, 16)) // no MSN error: the bad FPDU's contents are unknown
	}},
	{name: "CRC retransmitted", code: finding.MPACRCRetransmitted, base: []finding.Code{finding.MPACRCBad}, run: func(s *scen, bad bool) {
		s.crc = true
		q := mpaReq(2)
		q.CRC = true
		s.mpa(I2R, q)
		s.mpa(R2I, mpaRep(2))
		b := decode.AppendFPDU(nil, segBytes(send(1, 16)), true)
		good := append([]byte(nil), b...)
		b[len(b)-1] ^= 0xFF
		s.wire(I2R, b)
		if bad {
			s.seq[I2R] -= uint32(len(b)) // TCP retransmits the same octets
			s.mark()
		}
		s.wire(I2R, good)
	}},
	{name: "marker FPDUPTR", code: finding.MPAMarkerMismatch, run: func(s *scen, bad bool) {
		s.markerRun(true, func(m []decode.MarkerAt) {
			if bad {
				s.mark()
				m[1].Marker.FPDUPTR += 4
			}
		})
	}},
	{name: "markers not negotiated", code: finding.MPAMarkersUnexpected, run: func(s *scen, bad bool) {
		if !bad {
			s.handshake()
			s.seg(I2R, send(1, 600))
			return
		}
		s.markerRun(false, func([]decode.MarkerAt) { s.mark() })
	}},
	{name: "markers missing", code: finding.MPAMarkersMissing, run: func(s *scen, bad bool) {
		if !bad {
			s.markerRun(true, func([]decode.MarkerAt) {})
			return
		}
		q := mpaReq(2)
		r := mpaRep(2)
		r.Markers = true
		s.mpa(I2R, q)
		s.mpa(R2I, r)
		s.mark()
		s.seg(I2R, send(1, 600))
	}},
	{name: "marker reserved", code: finding.MPAMarkerReserved, run: func(s *scen, bad bool) {
		s.markerRun(true, func(m []decode.MarkerAt) {
			if bad {
				s.mark()
				m[1].Marker.Reserved = 1
			}
		})
	}},
	{name: "PAD not zero", code: finding.MPAPadNonzero, run: func(s *scen, bad bool) {
		s.crc = true
		q := mpaReq(2)
		q.CRC = true
		s.mpa(I2R, q)
		s.mpa(R2I, mpaRep(2))
		b := decode.AppendFPDU(nil, segBytes(send(1, 2)), true) // 22 octets: 2 PAD
		if bad {
			s.mark()
			b[len(b)-5] = 0x40
			decode.PutCRC(b[len(b)-4:], decode.CRC32c(b[:len(b)-4]))
		}
		s.wire(I2R, b)
	}},
	{name: "ULPDU shorter than DDP header", code: finding.MPAULPDUTooShort, run: func(s *scen, bad bool) {
		s.handshake()
		u := segBytes(send(1, 0))
		if bad {
			s.mark()
			u = u[:16]
		}
		s.wire(I2R, decode.AppendFPDU(nil, u, false))
	}},
	{name: "ULPDU above MULPDU", code: finding.MPAULPDUExceedsMULPDU, run: func(s *scen, bad bool) {
		s.handshake()
		s.tr.MSS(s.conn, I2R, 536)
		n := 500
		if bad {
			s.mark()
			n = 600
		}
		s.seg(I2R, send(1, n))
	}},
	{name: "FIN", code: finding.MPALLPClosed, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, send(1, 16))
		if bad {
			s.mark()
			s.tr.Close(s.at(I2R, 0), CloseFIN)
		}
	}},
	{name: "siw Terminate", code: finding.MPASiwTerminateEncoding, base: []finding.Code{finding.RDMAPTerminate}, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, write(0x100, 0x1000, 64))
		s.mark()
		s.seg(R2I, terminate(blameTagged(0, decode.OpWrite, 0x100, 0x1000, 64)), func(u []byte) []byte {
			if bad {
				// siw: EType<<4|Layer, code, M=0x01 D=0x02 (reference §5.1)
				copy(u[18:22], []byte{0x11, 0x00, 0x03, 0x00})
			}
			return u
		})
	}},
	{name: "ambiguous Terminate", code: finding.MPASiwTerminateEncoding, base: []finding.Code{finding.RDMAPTerminate}, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, send(1, 16))
		s.seg(R2I, send(1, 16))
		t := decode.Terminate{Layer: 0, EType: 2, Code: 6} // Unexpected OpCode, no headers
		s.mark()
		s.seg(R2I, terminate(t), func(u []byte) []byte {
			if bad {
				// 20 06 00 00: RFC reads LLP/MPA/Insufficient IRD, which
				// cannot happen after FPDUs flowed; siw's reading is
				// RDMAP/Remote Operation/Unexpected OpCode.
				copy(u[18:22], []byte{0x20, 0x06, 0x00, 0x00})
			}
			return u
		})
	}},

	// DDP.
	{name: "DV 2", code: finding.DDPDVInvalid, run: func(s *scen, bad bool) {
		s.handshake()
		g := send(1, 16)
		if bad {
			s.mark()
			g.DDP.DV = 2
		}
		s.seg(I2R, g)
		s.seg(I2R, send(2, 16))
	}},
	{name: "DV 0 under Rev 2", code: finding.DDPDVInvalid, also: []finding.Code{finding.RDMAPRVInvalid}, run: func(s *scen, bad bool) {
		s.handshake()
		g := send(1, 16)
		if bad {
			s.mark()
			g.DDP.DV, g.RDMAP.RV = 0, 0
		}
		s.seg(I2R, g)
	}},
	{name: "DV 2 on two messages", code: finding.DDPDVInvalid, many: true, count: 2, run: func(s *scen, bad bool) {
		s.handshake()
		for msn := uint32(1); msn <= 4; msn++ {
			g := send(msn, 16)
			if bad && msn%2 == 0 {
				g.DDP.DV = 2
			}
			s.seg(I2R, g)
		}
	}},
	{name: "DV 2 on two messages in a row", code: finding.DDPDVInvalid, many: true, count: 2, run: func(s *scen, bad bool) {
		s.handshake()
		for msn := uint32(1); msn <= 4; msn++ {
			g := untagged(decode.OpSend, 0, msn, 0, false, 100)
			g2 := untagged(decode.OpSend, 0, msn, 100, true, 100)
			if bad && (msn == 2 || msn == 3) {
				g.DDP.DV, g2.DDP.DV = 2, 2
			}
			s.seg(I2R, g)
			s.seg(I2R, g2)
		}
	}},
	{name: "DDP Rsvd", code: finding.DDPRsvdNonzero, run: func(s *scen, bad bool) {
		s.handshake()
		g := send(1, 16)
		if bad {
			s.mark()
			g.DDP.Rsvd = 1
		}
		s.seg(I2R, g)
	}},
	{name: "QN 5", code: finding.DDPQNInvalid, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, send(1, 16))
		if bad {
			s.mark()
			s.seg(I2R, untagged(decode.OpSend, 5, 1, 0, true, 16))
		}
		s.seg(I2R, send(2, 16))
	}},
	{name: "MSN skipped", code: finding.DDPMSNGap, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, send(1, 16))
		if bad {
			s.mark()
			s.seg(I2R, send(3, 16))
			return
		}
		s.seg(I2R, send(2, 16))
	}},
	{name: "first MSN not 1", code: finding.DDPMSNGap, run: func(s *scen, bad bool) {
		s.handshake()
		msn := uint32(1)
		if bad {
			s.mark()
			msn = 2
		}
		s.seg(I2R, rreq(msn, 1, 0, 8, 2, 0))
		s.seg(R2I, readResp(1, 0, 8, true))
	}},
	{name: "MSN repeated", code: finding.DDPMSNRepeat, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, send(1, 16))
		s.seg(I2R, send(2, 16))
		if bad {
			s.mark()
			s.seg(I2R, send(2, 16))
		}
		s.seg(I2R, send(3, 16))
	}},
	{name: "MO hole", code: finding.DDPMOGap, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, untagged(decode.OpSend, 0, 1, 0, false, 100))
		mo := uint32(100)
		if bad {
			s.mark()
			mo = 200
		}
		s.seg(I2R, untagged(decode.OpSend, 0, 1, mo, true, 100))
		s.seg(I2R, send(2, 16))
	}},
	{name: "first MO not 0", code: finding.DDPMOGap, run: func(s *scen, bad bool) {
		s.handshake()
		mo := uint32(0)
		if bad {
			s.mark()
			mo = 64
		}
		s.seg(I2R, untagged(decode.OpSend, 0, 1, mo, true, 100))
	}},
	{name: "MO overlap", code: finding.DDPMOOverlap, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, untagged(decode.OpSend, 0, 1, 0, false, 100))
		mo := uint32(100)
		if bad {
			s.mark()
			mo = 50
		}
		s.seg(I2R, untagged(decode.OpSend, 0, 1, mo, true, 100))
	}},
	{name: "first two segments swapped", code: finding.DDPMOGap, run: func(s *scen, bad bool) {
		s.handshake()
		first, second := untagged(decode.OpSend, 0, 1, 0, false, 100), untagged(decode.OpSend, 0, 1, 100, false, 100)
		if bad {
			s.mark()
			first, second = second, first
		}
		s.seg(I2R, first)
		s.seg(I2R, second)
		s.seg(I2R, untagged(decode.OpSend, 0, 1, 200, true, 100))
		s.seg(I2R, send(2, 16))
	}},
	{name: "L segment sent before the other", code: finding.DDPMOGap, run: func(s *scen, bad bool) {
		s.handshake()
		first, second := untagged(decode.OpSend, 0, 1, 0, false, 100), untagged(decode.OpSend, 0, 1, 100, true, 100)
		if bad {
			s.mark()
			first, second = second, first
		}
		s.seg(I2R, first)
		s.seg(I2R, second)
		s.seg(I2R, send(2, 16))
	}},
	{name: "rejected", code: finding.MPAReject, run: func(s *scen, bad bool) {
		s.mpa(I2R, mpaReq(2))
		r := mpaRep(2)
		if bad {
			s.mark()
			r.Reject = true
		}
		s.mpa(R2I, r)
	}},
	{name: "MO wrap", code: finding.DDPMOWrap, base: []finding.Code{finding.TrackUncertainAfterGap}, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, send(1, 16))
		s.tr.Gap(s.at(I2R, 0), 4000, 1)
		n := 0xFF
		if bad {
			s.mark()
			n = 0x100
		}
		// the tail of a message whose head the gap took
		s.seg(I2R, untagged(decode.OpSend, 0, 2, 0xFFFFFF00, true, n))
		s.seg(I2R, send(3, 16))
	}},
	{name: "Write to STag 0", code: finding.DDPSTagZero, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, write(0, 0, 0)) // zero-length: STag not checked (RFC 5041 §5.2)
		stag := uint32(5)
		if bad {
			s.mark()
			stag = 0
		}
		s.seg(I2R, write(stag, 0, 100))
	}},
	{name: "TO wrap", code: finding.DDPTOWrap, run: func(s *scen, bad bool) {
		s.handshake()
		to := uint64(0xFFFFFFFFFFFFFF00)
		n := 0x100
		if bad {
			s.mark()
			n = 0x101
		}
		s.seg(I2R, write(5, to, n))
	}},
	{name: "RDMAP control changes within a message", code: finding.DDPSegmentInconsistent, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, untagged(decode.OpSend, 0, 1, 0, false, 100))
		op := decode.OpSend
		if bad {
			s.mark()
			op = decode.OpSendSE
		}
		s.seg(I2R, untagged(op, 0, 1, 100, true, 100))
	}},
	{name: "no L before next MSN", code: finding.DDPLMissing, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, untagged(decode.OpSend, 0, 1, 0, !bad, 100))
		s.mark()
		s.seg(I2R, send(2, 16))
	}},
	{name: "interleaved messages", code: finding.DDPInterleaved, run: func(s *scen, bad bool) {
		s.handshake()
		if bad {
			s.seg(I2R, tagged(decode.OpWrite, 5, 0, false, 100))
			s.mark()
			s.seg(I2R, send(1, 16))
			s.seg(I2R, tagged(decode.OpWrite, 5, 100, true, 100))
			return
		}
		s.seg(I2R, tagged(decode.OpWrite, 5, 0, false, 100))
		s.seg(I2R, tagged(decode.OpWrite, 5, 100, true, 100))
		s.seg(I2R, send(1, 16))
	}},
	{name: "TO discontinuity", code: finding.DDPInterleaved, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, tagged(decode.OpWrite, 5, 0, false, 100))
		to := uint64(100)
		if bad {
			s.mark()
			to = 300
		}
		s.seg(I2R, tagged(decode.OpWrite, 5, to, true, 100))
	}},

	// RDMAP.
	{name: "RV 2", code: finding.RDMAPRVInvalid, run: func(s *scen, bad bool) {
		s.handshake()
		g := send(1, 16)
		if bad {
			s.mark()
			g.RDMAP.RV = 2
		}
		s.seg(I2R, g)
	}},
	{name: "RV changes", code: finding.RDMAPRVInvalid, run: func(s *scen, bad bool) {
		s.mpa(I2R, mpaReq(0))
		s.mpa(R2I, mpaRep(0))
		g := send(1, 16)
		g.DDP.DV, g.RDMAP.RV = 0, 0
		s.seg(I2R, g)
		g = send(2, 16)
		g.DDP.DV, g.RDMAP.RV = 0, 0
		if bad {
			s.mark()
			g.RDMAP.RV = 1
		}
		s.seg(I2R, g)
	}, base: []finding.Code{finding.MPARev0}},
	{name: "opcode 0xC", code: finding.RDMAPOpcodeUnexpected, run: func(s *scen, bad bool) {
		s.handshake()
		op := decode.OpSend
		if bad {
			s.mark()
			op = 0xC
		}
		s.seg(I2R, untagged(op, 0, 1, 0, true, 16))
		s.seg(I2R, send(2, 16))
	}},
	{name: "RFC 7306 in use", code: finding.RDMAPExtension, run: func(s *scen, bad bool) {
		s.handshake()
		if bad {
			s.mark()
			s.seg(I2R, untagged(decode.OpImmData, 0, 1, 0, true, 0))
		} else {
			s.seg(I2R, send(1, 8))
		}
		s.seg(I2R, send(2, 16))
	}},
	{name: "tagged Send", code: finding.RDMAPOpcodeMismatch, run: func(s *scen, bad bool) {
		s.handshake()
		if bad {
			s.mark()
			s.seg(I2R, tagged(decode.OpSend, 5, 0, true, 16))
			return
		}
		s.seg(I2R, send(1, 16))
	}},
	{name: "Read Request on QN 0", code: finding.RDMAPOpcodeMismatch, run: func(s *scen, bad bool) {
		s.handshake()
		g := rreq(1, 1, 0, 8, 2, 0)
		if bad {
			s.mark()
			g.DDP.QN = 0
		}
		s.seg(I2R, g)
		s.seg(R2I, readResp(1, 0, 8, true)) // with bad: answered anyway, not unmatched
	}},
	{name: "RDMAP Rsv", code: finding.RDMAPRsvNonzero, run: func(s *scen, bad bool) {
		s.handshake()
		g := send(1, 16)
		if bad {
			s.mark()
			g.RDMAP.Rsv = 1
		}
		s.seg(I2R, g)
	}},
	{name: "Invalidate STag on a Send", code: finding.RDMAPInvSTagNonzero, run: func(s *scen, bad bool) {
		s.handshake()
		g := send(1, 16)
		if bad {
			s.mark()
			g.DDP.RsvdULP2 = 0x55
		}
		s.seg(I2R, g)
	}},
	{name: "Read Request with payload", code: finding.RDMAPReadRequestMalformed, run: func(s *scen, bad bool) {
		s.handshake()
		g := rreq(1, 1, 0, 8, 2, 0)
		if bad {
			s.mark()
			g.Payload = make([]byte, 4)
		}
		s.seg(I2R, g)
		s.seg(R2I, readResp(1, 0, 8, true))
	}},
	{name: "Read from SrcSTag 0", code: finding.RDMAPSTagZero, run: func(s *scen, bad bool) {
		s.handshake()
		src := uint32(2)
		if bad {
			s.mark()
			src = 0
		}
		s.seg(I2R, rreq(1, 1, 0, 8, src, 0))
		s.seg(R2I, readResp(1, 0, 8, true))
	}},
	{name: "invalidate STag 0", code: finding.RDMAPSTagZero, run: func(s *scen, bad bool) {
		s.handshake()
		inv := uint32(9)
		if bad {
			s.mark()
			inv = 0
		}
		s.seg(I2R, sendInv(1, inv, 16))
	}},
	{name: "Write after invalidation", code: finding.RDMAPSTagInvalidatedUse, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, write(0x700, 0, 64))
		inv := uint32(0x701)
		if bad {
			inv = 0x700
		}
		s.seg(I2R, sendInv(1, inv, 16))
		s.mark()
		s.seg(I2R, write(0x700, 64, 64))
	}},
	{name: "re-advertised after invalidation", code: finding.RDMAPSTagInvalidatedUse, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, write(0x700, 0, 64))
		s.seg(I2R, sendInv(1, 0x700, 16))
		if !bad {
			s.seg(R2I, send(1, 16)) // may carry a new advertisement
		}
		s.mark()
		s.seg(I2R, write(0x700, 64, 64))
	}},
	{name: "Read Request TO wrap", code: finding.RDMAPReadTOWrap, run: func(s *scen, bad bool) {
		s.handshake()
		size := uint32(0x100)
		if bad {
			s.mark()
			size = 0x101
		}
		s.seg(I2R, rreq(1, 1, 0, size, 2, 0xFFFFFFFFFFFFFF00))
		s.seg(R2I, readResp(1, 0, int(size), true))
	}},
	{name: "IRD exceeded", code: finding.RDMAPIRDExceeded, run: func(s *scen, bad bool) {
		q := mpaReq(2)
		r := mpaRep(2)
		r.V2.IRD = 1
		s.mpa(I2R, q)
		s.mpa(R2I, r)
		s.seg(I2R, rreq(1, 1, 0, 8, 2, 0))
		if bad {
			s.mark()
			s.seg(I2R, rreq(2, 1, 8, 8, 2, 8))
			s.seg(R2I, readResp(1, 0, 8, true))
			s.seg(R2I, readResp(1, 8, 8, true))
			return
		}
		s.seg(R2I, readResp(1, 0, 8, true))
		s.seg(I2R, rreq(2, 1, 8, 8, 2, 8))
		s.seg(R2I, readResp(1, 8, 8, true))
	}},
	{name: "Read Response without request", code: finding.RDMAPReadResponseUnmatched, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, rreq(1, 1, 0, 8, 2, 0))
		s.seg(R2I, readResp(1, 0, 8, true))
		if bad {
			s.mark()
			s.seg(R2I, readResp(1, 0, 8, true))
		}
	}},
	{name: "Read Response to the wrong TO", code: finding.RDMAPReadResponseMismatch, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, rreq(1, 1, 0x1000, 8, 2, 0))
		to := uint64(0x1000)
		if bad {
			s.mark()
			to = 0x2000
		}
		s.seg(R2I, readResp(1, to, 8, true))
	}},
	{name: "Read Response too long", code: finding.RDMAPReadResponseTooLong, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, rreq(1, 1, 0, 100, 2, 0))
		s.seg(R2I, readResp(1, 0, 64, false))
		n := 36
		if bad {
			s.mark()
			n = 100
		}
		s.seg(R2I, readResp(1, 64, n, true))
	}},
	{name: "zero-length Read answered with data", code: finding.RDMAPReadResponseTooLong, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, rreq(1, 0, 0, 0, 0, 0)) // size 0: STags not checked
		n := 0
		if bad {
			s.mark()
			n = 8
		}
		s.seg(R2I, readResp(77, 0, n, true))
	}},
	{name: "Read Response short", code: finding.RDMAPReadResponseShort, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, rreq(1, 1, 0, 100, 2, 0))
		n := 100
		if bad {
			s.mark()
			n = 50
		}
		s.seg(R2I, readResp(1, 0, n, true))
	}},
	{name: "Read never answered", code: finding.RDMAPRequestUnanswered, run: func(s *scen, bad bool) {
		s.handshake()
		s.mark()
		s.seg(I2R, rreq(1, 1, 0, 8, 2, 0))
		if !bad {
			s.seg(R2I, readResp(1, 0, 8, true))
		}
	}},
	{name: "Atomic never answered", code: finding.RDMAPRequestUnanswered, base: []finding.Code{finding.RDMAPExtension}, run: func(s *scen, bad bool) {
		s.handshake()
		s.mark()
		s.seg(I2R, areq(1, 1, decode.AOpFetchAdd, 5, 8))
		if !bad {
			s.seg(R2I, aresp(1, 1))
		}
	}},
	{name: "Read Response before earlier Atomic Response", code: finding.RDMAPResponseOrder, base: []finding.Code{finding.RDMAPExtension}, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, areq(1, 1, decode.AOpCmpSwap, 5, 8))
		s.seg(I2R, rreq(2, 1, 0, 8, 2, 0))
		if bad {
			s.mark()
			s.seg(R2I, readResp(1, 0, 8, true))
			s.seg(R2I, aresp(1, 1))
			return
		}
		s.seg(R2I, aresp(1, 1))
		s.seg(R2I, readResp(1, 0, 8, true))
	}},
	{name: "Atomic Response before earlier Read Response", code: finding.RDMAPResponseOrder, base: []finding.Code{finding.RDMAPExtension}, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, rreq(1, 1, 0, 8, 2, 0))
		s.seg(I2R, areq(2, 1, decode.AOpCmpSwap, 5, 8))
		if bad {
			s.mark()
			s.seg(R2I, aresp(1, 1))
			s.seg(R2I, readResp(1, 0, 8, true))
			return
		}
		s.seg(R2I, readResp(1, 0, 8, true))
		s.seg(R2I, aresp(1, 1))
	}},
	{name: "Send after own Terminate", code: finding.RDMAPAfterTerminate, base: []finding.Code{finding.RDMAPTerminate}, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, send(1, 16))
		s.seg(I2R, terminate(decode.Terminate{}))
		if bad {
			s.mark()
			s.seg(I2R, send(2, 16))
		}
	}},
	{name: "second Terminate", code: finding.RDMAPTerminateRepeat, base: []finding.Code{finding.RDMAPTerminate}, also: []finding.Code{finding.RDMAPTerminate}, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, send(1, 16))
		s.seg(I2R, terminate(decode.Terminate{}))
		if bad {
			s.mark()
			g := terminate(decode.Terminate{})
			g.DDP.MSN = 2
			s.seg(I2R, g)
		}
	}},
	{name: "Terminate answered by Terminate", code: finding.RDMAPTermAfterTerminate, base: []finding.Code{finding.RDMAPTerminate}, also: []finding.Code{finding.RDMAPTerminate}, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, send(1, 16))
		s.seg(R2I, terminate(blameUntagged(1, 2, 2, decode.OpSend, 0, 1, 16)))
		if bad {
			s.mark()
			s.seg(I2R, terminate(decode.Terminate{}))
		}
	}},
	{name: "Terminate", code: finding.RDMAPTerminate, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, send(1, 16))
		if bad {
			s.mark()
			s.seg(R2I, terminate(blameUntagged(1, 2, 2, decode.OpSend, 0, 1, 16)))
		}
	}},
	{name: "Terminate with undefined cause", code: finding.RDMAPTerminateMalformed, base: []finding.Code{finding.RDMAPTerminate}, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, send(1, 16))
		t := decode.Terminate{}
		if bad {
			s.mark()
			t.Layer = 5
		}
		s.seg(R2I, terminate(t))
	}},
	{name: "Terminate with trailing octets", code: finding.RDMAPTerminateMalformed, base: []finding.Code{finding.RDMAPTerminate}, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, send(1, 16))
		g := terminate(blameUntagged(1, 2, 2, decode.OpSend, 0, 1, 16))
		if bad {
			s.mark()
			g.Payload = make([]byte, 4)
		}
		s.seg(R2I, g)
	}},
	{name: "Local Catastrophic with headers", code: finding.RDMAPTerminateMalformed, base: []finding.Code{finding.RDMAPTerminate}, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, send(1, 16))
		t := blameUntagged(1, 2, 2, decode.OpSend, 0, 1, 16)
		if bad {
			s.mark()
			t.Layer, t.EType, t.Code = 0, 0, 0
		}
		s.seg(R2I, terminate(t))
	}},
	{name: "V00 LLP code", code: finding.RDMAPTerminateV00Code, base: []finding.Code{finding.RDMAPTerminate}, run: func(s *scen, bad bool) {
		s.handshake() // no CRC: an MPA CRC error cannot be meant
		s.seg(I2R, send(1, 16))
		t := decode.Terminate{}
		if bad {
			s.mark()
			t.EType, t.Code = 2, 2 // 02 02 00 00
		}
		s.seg(R2I, terminate(t))
	}},
	{name: "Terminate blames nothing sent", code: finding.RDMAPTerminateBlameUnmatched, base: []finding.Code{finding.RDMAPTerminate}, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, write(0x100, 0x1000, 64))
		to := uint64(0x1000)
		if bad {
			s.mark()
			to = 0x9000
		}
		s.seg(R2I, terminate(blameTagged(0, decode.OpWrite, 0x100, to, 64)))
	}},
	{name: "Terminate cause does not fit", code: finding.RDMAPTerminateInconsistent, base: []finding.Code{finding.RDMAPTerminate}, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, send(1, 16))
		code := uint8(2) // Invalid MSN - no buffer: fits any Send
		if bad {
			s.mark()
			code = 1 // Invalid QN: QN 0 is valid
		}
		s.seg(R2I, terminate(blameUntagged(1, 2, code, decode.OpSend, 0, 1, 16)))
	}},
	{name: "Terminate segment length does not fit", code: finding.RDMAPTerminateInconsistent, base: []finding.Code{finding.RDMAPTerminate}, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, send(1, 16))
		n := uint16(16)
		if bad {
			s.mark()
			n = 999
		}
		s.seg(R2I, terminate(blameUntagged(1, 2, 2, decode.OpSend, 0, 1, n)))
	}},
	{name: "sending after receiving a Terminate", code: finding.RDMAPSentAfterPeerTerminate, base: []finding.Code{finding.RDMAPTerminate}, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, send(1, 16))
		s.seg(R2I, terminate(blameUntagged(1, 2, 2, decode.OpSend, 0, 1, 16)))
		if bad {
			s.mark()
			s.seg(I2R, send(2, 16))
		}
	}},
	{name: "FIN with Reads outstanding", code: finding.RDMAPBadLLPClose, base: []finding.Code{finding.MPALLPClosed}, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, rreq(1, 1, 0, 8, 2, 0))
		if !bad {
			s.seg(R2I, readResp(1, 0, 8, true))
		}
		s.mark()
		s.tr.Close(s.at(I2R, 0), CloseFIN)
	}},
	{name: "data after the peer's FIN", code: finding.RDMAPDataAfterClose, base: []finding.Code{finding.MPALLPClosed}, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, send(1, 16))
		s.seg(R2I, send(1, 16))
		s.tr.Close(s.at(I2R, 1), CloseFIN)
		if bad {
			s.mark()
			s.seg(R2I, send(2, 16))
		}
	}},
	{name: "AOpCode 1", code: finding.RDMAPAtomicAOpCodeInvalid, base: []finding.Code{finding.RDMAPExtension}, run: func(s *scen, bad bool) {
		s.handshake()
		op := decode.AOpCmpSwap
		if bad {
			s.mark()
			op = 1
		}
		s.seg(I2R, areq(1, 1, op, 5, 8))
		s.seg(R2I, aresp(1, 1))
	}},
	{name: "FetchAdd compare mask", code: finding.RDMAPAtomicFieldIgnored, base: []finding.Code{finding.RDMAPExtension}, run: func(s *scen, bad bool) {
		s.handshake()
		g := areq(1, 1, decode.AOpFetchAdd, 5, 8)
		if bad {
			s.mark()
			g.AtomicRequest.CompareMask = 0
		}
		s.seg(I2R, g)
		s.seg(R2I, aresp(1, 1))
	}},
	{name: "atomic misaligned", code: finding.RDMAPAtomicMisaligned, base: []finding.Code{finding.RDMAPExtension}, run: func(s *scen, bad bool) {
		s.handshake()
		to := uint64(0x1000)
		if bad {
			s.mark()
			to = 0x1004
		}
		s.seg(I2R, areq(1, 1, decode.AOpFetchAdd, 5, to))
		s.seg(R2I, aresp(1, 1))
	}},
	{name: "Immediate Data of 12 octets", code: finding.RDMAPImmediateMalformed, base: []finding.Code{finding.RDMAPExtension}, run: func(s *scen, bad bool) {
		s.handshake()
		g := untagged(decode.OpImmData, 0, 1, 0, true, 0)
		if bad {
			s.mark()
			g.Payload = make([]byte, 4)
		}
		s.seg(I2R, g)
	}},
	{name: "Atomic Request with payload", code: finding.RDMAPAtomicMalformed, base: []finding.Code{finding.RDMAPExtension}, run: func(s *scen, bad bool) {
		s.handshake()
		g := areq(1, 1, decode.AOpFetchAdd, 5, 8)
		if bad {
			s.mark()
			g.Payload = make([]byte, 4)
		}
		s.seg(I2R, g)
		s.seg(R2I, aresp(1, 1))
	}},
	{name: "Atomic Response without request", code: finding.RDMAPAtomicResponseUnmatched, base: []finding.Code{finding.RDMAPExtension}, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, areq(1, 1, decode.AOpFetchAdd, 5, 8))
		s.seg(R2I, aresp(1, 1))
		if bad {
			s.mark()
			s.seg(R2I, aresp(2, 1))
		}
	}},
	{name: "Atomic Responses out of order", code: finding.RDMAPAtomicResponseMismatch, base: []finding.Code{finding.RDMAPExtension}, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, areq(1, 1, decode.AOpFetchAdd, 5, 8))
		s.seg(I2R, areq(2, 2, decode.AOpFetchAdd, 5, 16))
		if bad {
			s.mark()
			s.seg(R2I, aresp(1, 2))
			s.seg(R2I, aresp(2, 1))
			return
		}
		s.seg(R2I, aresp(1, 1))
		s.seg(R2I, aresp(2, 2))
	}},

	// Analyzer state.
	{name: "gap", code: finding.TrackUncertainAfterGap, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, send(1, 16))
		s.seg(I2R, rreq(1, 1, 0, 8, 2, 0))
		msn := uint32(2)
		if bad {
			s.mark()
			s.tr.Gap(s.at(I2R, 200), 200, 3)
			msn = 4 // two Sends and a Read Request lost: no MSN error
			s.seg(R2I, readResp(1, 0, 8, true))
			s.seg(R2I, readResp(1, 0x40, 8, true)) // answers a lost request
		} else {
			s.seg(R2I, readResp(1, 0, 8, true))
		}
		s.seg(I2R, send(msn, 16))
		s.seg(I2R, send(msn+1, 16))
	}},
	{name: "no handshake", code: finding.TrackNoHandshake, run: func(s *scen, bad bool) {
		if !bad {
			s.handshake()
		}
		s.mark()
		s.seg(I2R, send(1, 16))
	}},
	{name: "too many findings", code: finding.TrackFindingsSuppressed, lim: Limits{FindingsPerCode: 2}, base: []finding.Code{finding.DDPMSNGap}, also: []finding.Code{finding.DDPMSNGap}, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, send(1, 16))
		s.seg(I2R, send(3, 16))
		s.seg(I2R, send(5, 16))
		if bad {
			s.mark()
			s.seg(I2R, send(7, 16))
		}
	}},
	{name: "Read table overflow", code: finding.TrackTableOverflow, lim: Limits{OutstandingReads: 2}, run: func(s *scen, bad bool) {
		s.handshake()
		s.seg(I2R, rreq(1, 1, 0, 8, 2, 0))
		s.seg(I2R, rreq(2, 1, 8, 8, 2, 8))
		if bad {
			s.mark()
			s.seg(I2R, rreq(3, 1, 16, 8, 2, 16))
		}
		s.seg(R2I, readResp(1, 0, 8, true)) // with bad: its request was dropped, not an error
		s.seg(R2I, readResp(1, 8, 8, true))
		if bad {
			s.seg(R2I, readResp(1, 16, 8, true))
		}
	}, many: false},
}

// markerRun: markers toward the Responder (Reply M=1 when negotiate), and
// one 600-octet Send from the Initiator built with markers; edit may change
// the markers found before the tracker sees them.
func (s *scen) markerRun(negotiate bool, edit func([]decode.MarkerAt)) {
	q := mpaReq(2)
	r := mpaRep(2)
	r.Markers = negotiate
	s.mpa(I2R, q)
	s.mpa(R2I, r)
	pos := s.seq[I2R]
	wire, _ := decode.AppendFPDUWithMarkers(nil, pos, pos, segBytes(send(1, 600)), false)
	var f decode.FPDU
	_, _, marks, err := decode.ParseFPDUWithMarkers(wire, pos, pos, make([]byte, 0, 2048), &f, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	if len(marks) < 2 {
		s.t.Fatalf("%d markers, want 2", len(marks))
	}
	edit(marks)
	p := &s.pdu
	*p = decode.PDU{FPDU: f, Markers: marks, CRCStatus: decode.CRCNotUsed}
	p.SegErr = decode.ParseSegment(f.ULPDU, &p.Seg)
	s.tr.PDU(s.at(I2R, len(wire)), p)
}

func runCase(t *testing.T, tc *codeCase, bad bool) *scen {
	s := newScen(t, tc.lim)
	tc.run(s, bad)
	s.finish()
	return s
}

func TestFindingCodes(t *testing.T) {
	covered := map[finding.Code]bool{}
	for i := range codeCases {
		tc := &codeCases[i]
		covered[tc.code] = true
		if st := tc.code.Info().Stage; st != finding.StageTrack {
			t.Errorf("case %q: %s is raised by the %s stage, not by track", tc.name, tc.code, st)
		}
		t.Run(fmt.Sprintf("%s/%s", tc.code, tc.name), func(t *testing.T) {
			clean := runCase(t, tc, false)
			got := codesOf(clean.fs)
			for _, c := range tc.base {
				if !slices.Contains(got, c) {
					t.Errorf("clean run: no %s", c)
				}
			}
			for _, f := range clean.fs {
				if !slices.Contains(tc.base, f.Code) {
					t.Errorf("clean run raised %s", f.String())
				}
			}
			bad := runCase(t, tc, true)
			n := 0
			for _, f := range bad.fs {
				switch {
				case f.Code == tc.code:
					n++
					if f.Severity != tc.code.Severity() || f.Checks != tc.code.ChecksText() || f.Message == "" {
						t.Errorf("bad run: malformed finding %+v", f)
					}
					if bad.want != 0 && n == 1 && f.Frames[0] != bad.want {
						t.Errorf("bad run: %s at frame %d, want frame %d", f.Code, f.Frames[0], bad.want)
					}
				case slices.Contains(tc.base, f.Code) || slices.Contains(tc.also, f.Code):
				default:
					t.Errorf("bad run also raised %s", f.String())
				}
			}
			if n == 0 || (n > 1 && !tc.many) || (tc.count > 0 && n != tc.count) {
				t.Errorf("bad run raised %s %d times, want once; findings:\n%s", tc.code, n, dumpFindings(bad.fs))
			}
			if t.Failed() {
				t.Logf("clean:\n%s\nbad:\n%s", dumpFindings(clean.fs), dumpFindings(bad.fs))
			}
		})
	}
	// Every code of the catalogue that track raises has a case.
	for _, inf := range finding.All() {
		if inf.Stage == finding.StageTrack && !covered[inf.Code] {
			t.Errorf("no test case raises %s", inf.Name)
		}
	}
}

func dumpFindings(fs []Finding) string {
	s := ""
	for i := range fs {
		s += "  " + fs[i].String() + "\n"
	}
	return s
}

var _ = binary.BigEndian
