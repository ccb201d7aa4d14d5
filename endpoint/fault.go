package endpoint

import (
	"encoding/binary"
	"fmt"

	"github.com/iwkit/iwkit/decode"
)

// FaultKind is a protocol violation the endpoint commits on purpose, to
// test how another iWARP implementation reacts (iwconform). Faults never
// weaken the endpoint's own receiver checks.
type FaultKind uint8

const (
	FaultNone FaultKind = iota
	// FaultBadCRC inverts the MPA CRC of every FPDU of the message (RFC
	// 5044 §4.4; the peer must answer with LLP 0x2/0x0/0x02 when CRCs are
	// in use, and must not use the FPDU).
	FaultBadCRC
	// FaultCRCByteOrder writes the right CRC in the wrong byte order
	// (big-endian instead of the wire order of RFC 5044 §4.4).
	FaultCRCByteOrder
	// FaultMSN adds Value to the MSN of an untagged message (RFC 5041
	// §5.4: DDP 0x1/0x2/0x03 MSN out of range).
	FaultMSN
	// FaultQN replaces the QN of an untagged message with Value (DDP
	// 0x1/0x2/0x01 invalid QN).
	FaultQN
	// FaultMO adds Value to the MO of an untagged message, or to the TO of
	// a tagged one (DDP 0x1/0x2/0x04, or base/bounds).
	FaultMO
	// FaultOpcode replaces the RDMAP opcode with Value (RDMAP 0x0/0x2/0x06
	// for an unassigned or misplaced one; a Write relabelled Read Response
	// is a Read Response with no Read outstanding).
	FaultOpcode
	// FaultDDPVersion sets the DDP version to Value (DDP 0x1/0x1/0x04 or
	// 0x1/0x2/0x06).
	FaultDDPVersion
	// FaultRDMAPVersion sets the RDMAP version to Value (RDMAP 0x0/0x2/0x05).
	FaultRDMAPVersion
	// FaultTruncate sends only the first Value octets of the message's
	// first FPDU and then closes the write side (FIN inside an FPDU: an
	// LLP failure, RFC 5044 §8).
	FaultTruncate
	// FaultMarkers puts markers into the message's FPDUs although none
	// were negotiated towards the peer (RFC 5044 §7.1.1).
	FaultMarkers
	// FaultFPDUPTR corrupts the FPDUPTR of every marker in the message's
	// FPDUs (markers negotiated, or FaultMarkers; LLP 0x2/0x0/0x03).
	FaultFPDUPTR
	// FaultOversize makes the Read Response Value octets longer than the
	// Read asked for (beyond the Data Sink: DDP 0x1/0x1/0x01).
	FaultOversize
	// FaultExceedORD lets RDMA Reads go out beyond ORD (and so beyond the
	// peer's IRD: DDP 0x1/0x2/0x03, RFC 5040 §6.1). It stays on.
	FaultExceedORD
	// FaultOmitRTR sends no RTR in the peer-to-peer model: the first FPDU
	// is the first work request's (RFC 6581 §5: LLP 0x2/0x0/0x07).
	FaultOmitRTR
	// FaultRTRType sends the RTR as type Value (1 Send, 2 Write, 3 Read)
	// whatever the Reply allowed.
	FaultRTRType
	// FaultDataAfterTerminate follows our next Terminate with a Send
	// (RFC 5040 §5.4: nothing may follow a Terminate; the peer must
	// discard it and not answer).
	FaultDataAfterTerminate
	faultKinds
)

var faultNames = [...]string{"none", "bad-crc", "crc-byte-order", "msn", "qn", "mo", "opcode", "ddp-version",
	"rdmap-version", "truncate", "markers", "fpduptr", "oversize-read-response", "exceed-ord", "omit-rtr",
	"rtr-type", "data-after-terminate"}

func (k FaultKind) String() string {
	if int(k) < len(faultNames) {
		return faultNames[k]
	}
	return fmt.Sprintf("FaultKind(%d)", uint8(k))
}

// FaultTarget names the outgoing message a fault applies to.
type FaultTarget uint8

const (
	OnAny FaultTarget = iota
	OnSend
	OnWrite
	OnReadRequest
	OnReadResponse
	OnRTR
	OnTerminate
)

// Fault is one deliberate violation, applied to every FPDU of the next
// outgoing message of kind On (OnAny: the next message).
type Fault struct {
	Kind  FaultKind
	On    FaultTarget
	Value uint32
}

func (f Fault) String() string { return fmt.Sprintf("%v(%d)", f.Kind, f.Value) }

// InjectFault queues f for the next matching message. Faults match in the
// order injected; FaultExceedORD takes effect at once and stays.
func (qp *QP) InjectFault(f Fault) error {
	if f.Kind == FaultNone || f.Kind >= faultKinds {
		return fmt.Errorf("%w: fault %v", ErrInvalidWR, f.Kind)
	}
	qp.mu.Lock()
	defer qp.unlock()
	if f.Kind == FaultExceedORD {
		qp.noORD = true
		qp.kickTx()
		return nil
	}
	qp.faults = append(qp.faults, f)
	return nil
}

// takeFaultLocked removes and returns the first queued fault for a message
// of kind on.
func (qp *QP) takeFaultLocked(on FaultTarget) *Fault {
	for i, f := range qp.faults {
		if f.On == OnAny || f.On == on {
			qp.faults = append(qp.faults[:i], qp.faults[i+1:]...)
			return &f
		}
	}
	return nil
}

func wrTarget(op Opcode) FaultTarget {
	switch op {
	case OpWrite:
		return OnWrite
	case OpRead, OpReadInv:
		return OnReadRequest
	}
	return OnSend
}

// mangle applies the header faults to a copy of a DDP (+RDMAP) header.
func mangle(f *Fault, h []byte, tmp []byte) []byte {
	if f == nil {
		return h
	}
	tagged := h[0]&decode.DDPFlagT != 0
	switch f.Kind {
	case FaultMSN, FaultQN, FaultMO, FaultOpcode, FaultDDPVersion, FaultRDMAPVersion:
	default:
		return h
	}
	h = append(tmp[:0], h...)
	switch f.Kind {
	case FaultMSN:
		if !tagged {
			binary.BigEndian.PutUint32(h[10:], binary.BigEndian.Uint32(h[10:])+f.Value)
		}
	case FaultQN:
		if !tagged {
			binary.BigEndian.PutUint32(h[6:], f.Value)
		}
	case FaultMO:
		if tagged {
			binary.BigEndian.PutUint64(h[6:], binary.BigEndian.Uint64(h[6:])+uint64(f.Value))
		} else {
			binary.BigEndian.PutUint32(h[14:], binary.BigEndian.Uint32(h[14:])+f.Value)
		}
	case FaultOpcode:
		h[1] = h[1]&0xC0 | uint8(f.Value)&0x0F
	case FaultDDPVersion:
		h[0] = h[0]&^0x03 | uint8(f.Value)&0x03
	case FaultRDMAPVersion:
		h[1] = uint8(f.Value)<<6 | h[1]&0x3F
	}
	return h
}

// appendFaultyFPDU frames one segment with a stream-level fault (CRC,
// markers, FPDUPTR, truncation); it reports whether the write side must
// close after this batch (truncation).
func (s *stream) appendFaultyFPDU(b *txBatch, f *Fault, hdr []byte, parts [][]byte, plen int) (closeAfter bool) {
	ulen := len(hdr) + plen
	u := make([]byte, 0, ulen)
	u = append(u, hdr...)
	for _, p := range parts {
		u = append(u, p...)
	}
	var out []byte
	start := s.txPos
	markers := s.txMarkers || f.Kind == FaultMarkers
	if markers {
		out, s.txPos = decode.AppendFPDUWithMarkers(nil, s.txPos, 0, u, s.crc)
	} else {
		out = decode.AppendFPDU(nil, u, s.crc)
		s.txPos += uint32(len(out))
	}
	crcAt := len(out) - decode.CRCLen
	switch f.Kind {
	case FaultBadCRC:
		for i := crcAt; i < len(out); i++ {
			out[i] ^= 0xFF
		}
	case FaultCRCByteOrder:
		c := decode.WireCRC(out[crcAt:])
		binary.BigEndian.PutUint32(out[crcAt:], c)
		if c == binary.LittleEndian.Uint32(out[crcAt:]) { // a palindrome: still wrong
			out[crcAt] ^= 0xFF
		}
	case FaultFPDUPTR:
		for off := 0; off+decode.MarkerLen <= crcAt; off++ {
			if markers && decode.IsMarkerPos(start+uint32(off), 0) {
				out[off+3] ^= 0x10
				off += decode.MarkerLen - 1
			}
		}
		// The CRC covers the markers (RFC 5044 §4.4): make it right again,
		// so that the marker check is what fails.
		if s.crc {
			decode.PutCRC(out[crcAt:], decode.CRC32c(out[:crcAt]))
		}
	case FaultTruncate:
		n := min(int(f.Value), len(out)-1)
		out = out[:n]
		closeAfter = true
	}
	b.bufs = append(b.bufs, out)
	b.bytes += len(out)
	return closeAfter
}
