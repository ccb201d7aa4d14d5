package endpoint

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
)

// raw is a hand-driven MPA peer on a plain TCP connection: it speaks the
// MPA exchange and sends whatever FPDUs a test crafts with decode's
// encoders, and reads what the endpoint sends.
type raw struct {
	t   testing.TB
	c   net.Conn
	br  *bufio.Reader
	crc bool
	msn [3]uint32
}

func (r *raw) write(b []byte) {
	r.t.Helper()
	if _, err := r.c.Write(b); err != nil {
		r.t.Fatalf("raw write: %v", err)
	}
}

// sendULPDU frames a DDP segment into an FPDU.
func (r *raw) sendULPDU(u []byte) { r.write(decode.AppendFPDU(nil, u, r.crc)) }

// send encodes seg and frames it.
func (r *raw) send(seg *decode.Segment) { r.sendULPDU(seg.Append(nil)) }

func untagged(op decode.Opcode, qn, msn, mo uint32, last bool, payload []byte) *decode.Segment {
	return &decode.Segment{DDP: decode.DDPHeader{Last: last, DV: 1, QN: qn, MSN: msn, MO: mo},
		RDMAP: decode.RDMAPControl{RV: 1, Opcode: op}, Payload: payload}
}

func tagged(op decode.Opcode, stag uint32, to uint64, last bool, payload []byte) *decode.Segment {
	return &decode.Segment{DDP: decode.DDPHeader{Tagged: true, Last: last, DV: 1, STag: stag, TO: to},
		RDMAP: decode.RDMAPControl{RV: 1, Opcode: op}, Payload: payload}
}

func readReq(msn uint32, rr decode.ReadRequest) *decode.Segment {
	s := untagged(decode.OpReadRequest, decode.QNReadReq, msn, 0, true, nil)
	s.ReadRequest = rr
	return s
}

// readFPDU reads the next FPDU the endpoint sent (no markers), checking its
// CRC when CRCs are on.
func (r *raw) readFPDU() (decode.Segment, []byte, error) {
	var lb [2]byte
	if _, err := io.ReadFull(r.br, lb[:]); err != nil {
		return decode.Segment{}, nil, err
	}
	n := decode.FPDULen(int(binary.BigEndian.Uint16(lb[:])))
	b := make([]byte, n)
	copy(b, lb[:])
	if _, err := io.ReadFull(r.br, b[2:]); err != nil {
		return decode.Segment{}, nil, err
	}
	var f decode.FPDU
	if _, err := decode.ParseFPDU(b, &f); err != nil {
		return decode.Segment{}, nil, err
	}
	if r.crc && !f.CRCOK() {
		r.t.Fatalf("endpoint sent an FPDU with a bad CRC")
	}
	var s decode.Segment
	err := decode.ParseSegment(f.ULPDU, &s)
	return s, f.ULPDU, err
}

// expectTerminate reads FPDUs until a Terminate and checks its cause.
func (r *raw) expectTerminate(layer, etype, code uint8) decode.Terminate {
	r.t.Helper()
	r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		s, _, err := r.readFPDU()
		if err != nil {
			r.t.Fatalf("waiting for Terminate %x/%x/%02x: %v", layer, etype, code, err)
		}
		if s.RDMAP.Opcode != decode.OpTerminate {
			continue
		}
		t := s.Terminate
		if t.Layer != layer || t.EType != etype || t.Code != code {
			r.t.Fatalf("Terminate %s (0x%x/0x%x/0x%02x), want 0x%x/0x%x/0x%02x", t.Cause().String(), t.Layer, t.EType, t.Code, layer, etype, code)
		}
		if s.DDP.QN != decode.QNTerminate || s.DDP.MSN != 1 || !s.DDP.Last {
			r.t.Fatalf("Terminate on QN %d MSN %d L=%v", s.DDP.QN, s.DDP.MSN, s.DDP.Last)
		}
		return t
	}
}

// expectNothing checks that the endpoint sends no FPDU for a while.
func (r *raw) expectNothing(d time.Duration) {
	r.t.Helper()
	r.c.SetReadDeadline(time.Now().Add(d))
	s, _, err := r.readFPDU()
	if err == nil {
		r.t.Fatalf("endpoint sent %v, expected nothing", s.RDMAP.Opcode)
	}
	var ne net.Error
	if !errors.Is(err, io.EOF) && (!errors.As(err, &ne) || !ne.Timeout()) {
		r.t.Fatalf("expected silence, got %v", err)
	}
	r.c.SetReadDeadline(time.Time{})
}

// rawClient connects a raw Initiator to an endpoint Responder configured
// with srv; prep sets the Responder's QP up (MRs, receives) before Accept.
func rawClient(t testing.TB, srv Config, req decode.MPAFrame, attr QPAttr, prep func(*side)) (*raw, *side, decode.MPAFrame) {
	t.Helper()
	sv := newSide(t, attr)
	if prep != nil {
		prep(sv)
	}
	r, rep := rawConnect(t, srv, req, sv)
	return r, sv, rep
}

func v2Req(p2p bool, crc bool) decode.MPAFrame {
	f := decode.MPAFrame{Rev: 2, CRC: crc, Enhanced: true, HasV2: true, PrivateData: make([]byte, 4),
		V2: decode.MPAv2{PeerToPeer: p2p, IRD: 4, ORD: 4}}
	if p2p {
		f.V2.ZeroLenWriteRTR = true
	}
	return f
}

// waitState waits until the QP is done and checks its final state.
func waitDone(t testing.TB, qp *QP, want QPState) {
	t.Helper()
	select {
	case <-qp.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("QP still %v", qp.State())
	}
	if st := qp.State(); st != want {
		t.Fatalf("QP %v, want %v (err %v)", st, want, qp.Err())
	}
}

type netTCPConn = net.TCPConn

func errorsAs(err error, target any) bool { return errors.As(err, target) }
func errorsIs(err, target error) bool     { return errors.Is(err, target) }
