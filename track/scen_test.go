package track

import (
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
)

// scen builds the input of one connection for tests: MPA frames and FPDUs
// are encoded with decode's encoders and decoded back, as a framer would
// hand them over; sequence numbers and ACKs are kept consistent (each
// unit's ACK covers everything the other side sent before it).
type scen struct {
	t     testing.TB
	tr    *Tracker
	fs    []Finding
	msgs  []Message
	ops   []Operation
	terms []TerminateReport
	conn  int
	frame int
	seq   [2]uint32
	now   time.Time
	crc   bool
	pdu   decode.PDU
	want  int // frame of the violating unit, when the case marks it

	// ackLag, when set, makes the next unit's ACK lag the other
	// direction by that many octets.
	ackLag uint32
	noAck  bool
}

func newScen(t testing.TB, lim Limits) *scen {
	s := &scen{t: t, conn: 1, now: time.Unix(1700000000, 0)}
	s.seq = [2]uint32{1000, 500000}
	s.tr = New(Config{
		OnFinding:   func(f *Finding) { s.fs = append(s.fs, *f) },
		OnMessage:   func(m *Message) { s.msgs = append(s.msgs, *m) },
		OnOperation: func(o *Operation) { s.ops = append(s.ops, *o) },
		OnTerminate: func(r *TerminateReport) { s.terms = append(s.terms, *r) },
		Limits:      lim,
	})
	return s
}

// mark says the next unit is the violation.
func (s *scen) mark() { s.want = s.frame + 1 }

func (s *scen) at(dir Dir, n int) At {
	s.frame++
	s.now = s.now.Add(time.Millisecond)
	a := At{Conn: s.conn, Dir: dir, Frame: s.frame, Time: s.now,
		HasSeq: true, Seq: s.seq[dir], End: s.seq[dir] + uint32(n),
		HasAck: !s.noAck, Ack: s.seq[dir^1] - s.ackLag}
	s.ackLag = 0
	s.seq[dir] += uint32(n)
	return a
}

// frame sends an MPA frame, encoded and parsed back.
func (s *scen) mpa(dir Dir, f decode.MPAFrame) {
	b := f.Append(nil)
	var g decode.MPAFrame
	if _, err := decode.ParseMPAFrame(b, &g); err != nil {
		s.t.Fatalf("ParseMPAFrame: %v", err)
	}
	s.tr.Handshake(s.at(dir, len(b)), &g)
}

func mpaReq(rev uint8) decode.MPAFrame {
	f := decode.MPAFrame{Rev: rev}
	if rev >= 2 {
		f.Enhanced, f.HasV2 = true, true
		f.V2 = decode.MPAv2{IRD: 4, ORD: 4}
		f.PrivateData = make([]byte, decode.MPAv2Len)
	}
	return f
}

func mpaRep(rev uint8) decode.MPAFrame {
	f := mpaReq(rev)
	f.Reply = true
	return f
}

// handshake runs a standard MPA v2 client-server exchange.
func (s *scen) handshake() {
	s.mpa(I2R, mpaReq(2))
	s.mpa(R2I, mpaRep(2))
}

// p2p runs an RFC 6581 peer-to-peer exchange: the Request offers all RTR
// types, the Reply accepts rep.
func (s *scen) p2p(send, write, read bool) {
	q := mpaReq(2)
	q.V2.PeerToPeer, q.V2.ZeroLenSendRTR, q.V2.ZeroLenWriteRTR, q.V2.ZeroLenReadRTR = true, true, true, true
	r := mpaRep(2)
	r.V2.PeerToPeer, r.V2.ZeroLenSendRTR, r.V2.ZeroLenWriteRTR, r.V2.ZeroLenReadRTR = true, send, write, read
	s.mpa(I2R, q)
	s.mpa(R2I, r)
}

// seg sends one DDP segment in an FPDU; mods may alter the ULPDU octets.
func (s *scen) seg(dir Dir, g decode.Segment, mods ...func([]byte) []byte) Mark {
	u := g.Append(nil)
	for _, m := range mods {
		u = m(u)
	}
	return s.wire(dir, decode.AppendFPDU(nil, u, s.crc))
}

// wire sends a marker-free FPDU as it is on the wire.
func (s *scen) wire(dir Dir, b []byte) Mark {
	crc := decode.CRCUseOff
	if s.crc {
		crc = decode.CRCUseOn
	}
	if _, err := decode.DecodeFPDU(b, crc, &s.pdu); err != nil {
		s.t.Fatalf("DecodeFPDU: %v", err)
	}
	return s.tr.PDU(s.at(dir, len(b)), &s.pdu)
}

func (s *scen) finish() { s.tr.Finish() }

func ddpUntagged(qn, msn, mo uint32, last bool) decode.DDPHeader {
	return decode.DDPHeader{Last: last, DV: 1, QN: qn, MSN: msn, MO: mo}
}

func untagged(op decode.Opcode, qn, msn, mo uint32, last bool, n int) decode.Segment {
	return decode.Segment{DDP: ddpUntagged(qn, msn, mo, last), RDMAP: decode.RDMAPControl{RV: 1, Opcode: op}, Payload: make([]byte, n)}
}

func tagged(op decode.Opcode, stag uint32, to uint64, last bool, n int) decode.Segment {
	return decode.Segment{DDP: decode.DDPHeader{Tagged: true, Last: last, DV: 1, STag: stag, TO: to}, RDMAP: decode.RDMAPControl{RV: 1, Opcode: op}, Payload: make([]byte, n)}
}

func send(msn uint32, n int) decode.Segment { return untagged(decode.OpSend, 0, msn, 0, true, n) }

func sendInv(msn uint32, inv uint32, n int) decode.Segment {
	g := untagged(decode.OpSendInv, 0, msn, 0, true, n)
	g.InvalidateSTag = inv
	return g
}

func write(stag uint32, to uint64, n int) decode.Segment {
	return tagged(decode.OpWrite, stag, to, true, n)
}

func rreq(msn uint32, sink uint32, sinkTO uint64, size uint32, src uint32, srcTO uint64) decode.Segment {
	g := untagged(decode.OpReadRequest, 1, msn, 0, true, 0)
	g.ReadRequest = decode.ReadRequest{SinkSTag: sink, SinkTO: sinkTO, Size: size, SrcSTag: src, SrcTO: srcTO}
	return g
}

func readResp(stag uint32, to uint64, n int, last bool) decode.Segment {
	return tagged(decode.OpReadResponse, stag, to, last, n)
}

func terminate(t decode.Terminate) decode.Segment {
	g := untagged(decode.OpTerminate, 2, 1, 0, true, 0)
	g.Terminate = t
	return g
}

// blameWrite is a Terminate (DDP/Tagged/cause) copying the header of a
// Write to stag at to.
func blameTagged(code uint8, op decode.Opcode, stag uint32, to uint64, segLen uint16) decode.Terminate {
	h := decode.DDPHeader{Tagged: true, Last: true, DV: 1, STag: stag, TO: to, RsvdULP: decode.RDMAPControl{RV: 1, Opcode: op}.Octet()}
	return decode.Terminate{Layer: 1, EType: 1, Code: code, M: true, D: true, HasSegLen: true, DDPSegmentLength: segLen, HasDDP: true, TermDDP: h}
}

func blameUntagged(layer, etype, code uint8, op decode.Opcode, qn, msn uint32, segLen uint16) decode.Terminate {
	h := decode.DDPHeader{Last: true, DV: 1, QN: qn, MSN: msn, RsvdULP: decode.RDMAPControl{RV: 1, Opcode: op}.Octet()}
	return decode.Terminate{Layer: layer, EType: etype, Code: code, M: true, D: true, HasSegLen: true, DDPSegmentLength: segLen, HasDDP: true, TermDDP: h}
}

func areq(msn, id uint32, op decode.AtomicOp, stag uint32, to uint64) decode.Segment {
	g := untagged(decode.OpAtomicRequest, 1, msn, 0, true, 0)
	g.AtomicRequest = decode.AtomicRequest{AOpCode: op, RequestID: id, RemoteSTag: stag, RemoteTO: to, AddSwapData: 1}
	if op == decode.AOpFetchAdd {
		g.AtomicRequest.CompareMask = ^uint64(0)
	}
	return g
}

func aresp(msn, id uint32) decode.Segment {
	g := untagged(decode.OpAtomicResponse, 3, msn, 0, true, 0)
	g.AtomicResponse = decode.AtomicResponse{OrigRequestID: id, OrigValue: 7}
	return g
}

// codesOf lists the codes of fs.
func codesOf(fs []Finding) []finding.Code {
	out := make([]finding.Code, len(fs))
	for i := range fs {
		out[i] = fs[i].Code
	}
	return out
}

func segBytes(g decode.Segment) []byte { return g.Append(nil) }
