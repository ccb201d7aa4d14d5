package decode

import "github.com/iwkit/iwkit/internal/digits"

// appendHex and appendDec write the numbers of a summary line, a few per
// PDU: through package digits, whose hex has no division per digit.
func appendHex(b []byte, v uint64) []byte {
	b = append(b, "0x"...)
	return digits.AppendHex(b, v)
}

func appendDec(b []byte, v uint64) []byte { return digits.Append(b, v) }

// AppendSummary appends the one-line description of p that iwdump prints
// in the spirit of tcpdump, e.g. "Send qn 0 msn 3 mo 0 len 1024 L, crc
// good" or "Write stag 0x2a to 0x1000 len 4096". It allocates nothing
// except for Terminates, whose cause names are composed.
func (p *PDU) AppendSummary(b []byte) []byte {
	if p.IsMPAFrame {
		return p.MPA.appendSummary(b)
	}
	b = p.Seg.appendSummary(b, p.SegErr, p.FPDU.ULPDULength)
	b = append(b, ", crc "...)
	b = append(b, p.CRCStatus.String()...)
	if p.CRCStatus == CRCBad {
		b = append(b, " (wire "...)
		b = appendHex(b, uint64(p.FPDU.CRC))
		b = append(b, ", computed "...)
		b = appendHex(b, uint64(p.ComputedCRC))
		b = append(b, ')')
	}
	if len(p.Markers) > 0 {
		b = append(b, ", markers "...)
		b = appendDec(b, uint64(len(p.Markers)))
	}
	return b
}

func appendFlag(b []byte, name string, on bool) []byte {
	b = append(b, ' ')
	b = append(b, name...)
	if on {
		return append(b, '1')
	}
	return append(b, '0')
}

func (f *MPAFrame) appendSummary(b []byte) []byte {
	if f.Reply {
		b = append(b, "MPA Reply rev "...)
	} else {
		b = append(b, "MPA Request rev "...)
	}
	b = appendDec(b, uint64(f.Rev))
	b = appendFlag(b, "M", f.Markers)
	b = appendFlag(b, "C", f.CRC)
	b = appendFlag(b, "R", f.Reject)
	if f.Enhanced {
		b = append(b, " S"...)
	}
	if f.Res != 0 {
		b = append(b, " res "...)
		b = appendHex(b, uint64(f.Res))
	}
	b = append(b, " pd "...)
	b = appendDec(b, uint64(f.PDLength))
	if f.HasV2 {
		if f.V2.PeerToPeer {
			b = append(b, " p2p"...)
		}
		b = append(b, " ird "...)
		b = appendDec(b, uint64(f.V2.IRD))
		b = append(b, " ord "...)
		b = appendDec(b, uint64(f.V2.ORD))
		if f.V2.ZeroLenSendRTR || f.V2.ZeroLenWriteRTR || f.V2.ZeroLenReadRTR {
			b = append(b, " rtr"...)
			if f.V2.ZeroLenSendRTR {
				b = append(b, " send"...)
			}
			if f.V2.ZeroLenWriteRTR {
				b = append(b, " write"...)
			}
			if f.V2.ZeroLenReadRTR {
				b = append(b, " read"...)
			}
		}
	}
	if f.Rev1IRDORD {
		b = append(b, " ird "...)
		b = appendDec(b, uint64(f.Rev1IRD))
		b = append(b, " ord "...)
		b = appendDec(b, uint64(f.Rev1ORD))
		b = append(b, " (rev 1 variant)"...)
	}
	if f.PreIETF {
		b = append(b, " pre-IETF"...)
	}
	if f.Reply && f.Reject {
		b = append(b, " REJECT"...)
	}
	return b
}

func (s *Segment) appendSummary(b []byte, err error, ulpduLen uint16) []byte {
	if err != nil {
		b = append(b, "FPDU ulpdu_length "...)
		b = appendDec(b, uint64(ulpduLen))
		b = append(b, ": "...)
		return append(b, err.Error()...)
	}
	o := s.RDMAP.Opcode
	if o.Known() {
		b = append(b, o.Short()...)
	} else {
		b = append(b, "Opcode "...)
		b = appendHex(b, uint64(o))
	}
	d := &s.DDP
	switch o {
	case OpReadRequest:
		r := &s.ReadRequest
		b = append(b, " msn "...)
		b = appendDec(b, uint64(d.MSN))
		b = append(b, " sink "...)
		b = appendHex(b, uint64(r.SinkSTag))
		b = append(b, " to "...)
		b = appendHex(b, r.SinkTO)
		b = append(b, " src "...)
		b = appendHex(b, uint64(r.SrcSTag))
		b = append(b, " to "...)
		b = appendHex(b, r.SrcTO)
		b = append(b, " size "...)
		b = appendDec(b, uint64(r.Size))
	case OpTerminate:
		t := &s.Terminate
		b = append(b, ' ')
		b = append(b, t.Cause().Short()...)
		if t.SiwEncoding {
			b = append(b, " (siw encoding)"...)
		}
		if t.HasDDP {
			b = append(b, " blames "...)
			b = append(b, ParseRDMAPControl(t.TermDDP.RsvdULP).Opcode.Short()...)
			b = t.TermDDP.appendPosition(b)
		}
	case OpAtomicRequest:
		a := &s.AtomicRequest
		b = append(b, ' ')
		b = append(b, a.AOpCode.String()...)
		b = append(b, " msn "...)
		b = appendDec(b, uint64(d.MSN))
		b = append(b, " id "...)
		b = appendHex(b, uint64(a.RequestID))
		b = append(b, " stag "...)
		b = appendHex(b, uint64(a.RemoteSTag))
		b = append(b, " to "...)
		b = appendHex(b, a.RemoteTO)
	case OpAtomicResponse:
		a := &s.AtomicResponse
		b = append(b, " msn "...)
		b = appendDec(b, uint64(d.MSN))
		b = append(b, " id "...)
		b = appendHex(b, uint64(a.OrigRequestID))
		b = append(b, " orig "...)
		b = appendHex(b, a.OrigValue)
	default:
		if o == OpSendInv || o == OpSendSEInv {
			b = append(b, " inval "...)
			b = appendHex(b, uint64(s.InvalidateSTag))
		}
		b = d.appendPosition(b)
		b = append(b, " len "...)
		b = appendDec(b, uint64(len(s.Payload))) // PayloadLen
	}
	if d.Last {
		b = append(b, " L"...)
	}
	if d.DV == 0 || s.RDMAP.RV == 0 {
		b = append(b, " pre-IETF"...)
	}
	return b
}

// appendPosition writes where a DDP segment belongs: " stag S to T" for
// tagged, " qn Q msn M mo O" for untagged (RFC 5041 §4.2-4.3).
func (d *DDPHeader) appendPosition(b []byte) []byte {
	if d.Tagged {
		b = append(b, " stag "...)
		b = appendHex(b, uint64(d.STag))
		b = append(b, " to "...)
		return appendHex(b, d.TO)
	}
	b = append(b, " qn "...)
	b = appendDec(b, uint64(d.QN))
	b = append(b, " msn "...)
	b = appendDec(b, uint64(d.MSN))
	b = append(b, " mo "...)
	return appendDec(b, uint64(d.MO))
}
