package track

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
)

// fuzzLimits are small so that every table overflows under fuzzing.
var fuzzLimits = Limits{
	Conns: 2, OutstandingReads: 3, OutstandingAtomics: 2, STags: 4,
	OpenTagged: 2, History: 4, FindingsPerCode: 3, StoredFindings: 50, RetainedConns: 2,
}

// fuzzInput turns bytes into tracker input. Each step is an op octet
// followed by its arguments:
//
//	op&7 == 0: MPA Request or Reply (next octets: flags, rev, IRD/ORD word pair)
//	op&7 == 1..4: FPDU whose ULPDU is the next n octets (n from one octet)
//	op&7 == 5: gap
//	op&7 == 6: FIN/RST
//	op&7 == 7: bad frame / CRC failure
//
// op bit 3 picks the direction, bits 4-5 the connection, bit 6 drops
// the ACK, bit 7 rewinds the sequence number (a retransmission).
type fuzzInput struct {
	b []byte
}

func (f *fuzzInput) byte() (byte, bool) {
	if len(f.b) == 0 {
		return 0, false
	}
	c := f.b[0]
	f.b = f.b[1:]
	return c, true
}

func (f *fuzzInput) bytes(n int) []byte {
	n = min(n, len(f.b))
	out := f.b[:n]
	f.b = f.b[n:]
	return out
}

func runFuzz(t *testing.T, data []byte) {
	tr := New(Config{Limits: fuzzLimits,
		OnMessage:   func(*Message) {},
		OnOperation: func(*Operation) {},
		OnTerminate: func(*TerminateReport) {},
	})
	in := fuzzInput{b: data}
	var seq [4][2]uint32
	frame := 0
	now := time.Unix(0, 0)
	var pdu decode.PDU
	for {
		op, ok := in.byte()
		if !ok {
			break
		}
		conn := int(op>>4) & 3
		dir := Dir(op>>3) & 1
		frame++
		now = now.Add(time.Microsecond)
		at := At{Conn: conn, Dir: dir, Frame: frame, Time: now, HasSeq: true, Seq: seq[conn][dir], HasAck: op&0x40 == 0, Ack: seq[conn][dir^1]}
		if op&0x80 != 0 {
			at.Seq -= 64
		}
		switch op & 7 {
		case 0:
			fl, _ := in.byte()
			rev, _ := in.byte()
			w := in.bytes(4)
			f := decode.MPAFrame{Reply: dir == R2I, Rev: rev & 3, Markers: fl&0x80 != 0, CRC: fl&0x40 != 0, Reject: fl&0x20 != 0, Enhanced: fl&0x10 != 0, Res: fl & 0x0F}
			if len(w) == 4 && f.Enhanced && f.Rev >= 2 {
				f.HasV2, f.PDLength = true, 4
				f.V2, _ = decode.ParseMPAv2(w)
			}
			if fl&1 != 0 {
				f.Reply = !f.Reply
			}
			at.End = at.Seq + 20
			tr.Handshake(at, &f)
		case 1, 2, 3, 4:
			n, _ := in.byte()
			u := in.bytes(int(n))
			if len(u) < decode.DDPTaggedHdrLen {
				u = append(append([]byte(nil), u...), make([]byte, decode.DDPTaggedHdrLen-len(u))...)
			}
			wire := decode.AppendFPDU(nil, u, op&7 == 4)
			crc := decode.CRCUseOff
			if op&7 >= 3 {
				crc = decode.CRCUseOn
			}
			if _, err := decode.DecodeFPDU(wire, crc, &pdu); err != nil {
				continue
			}
			if op&7 == 2 && len(u) >= 16 {
				// a marker, with whatever the input says
				pdu.Markers = append(pdu.Markers[:0], decode.MarkerAt{Pos: at.Seq + uint32(u[0]), Marker: decode.Marker{Reserved: uint16(u[1]), FPDUPTR: binary.BigEndian.Uint16(u[2:])}})
			}
			at.End = at.Seq + uint32(len(wire))
			tr.PDU(at, &pdu)
		case 5:
			n, _ := in.byte()
			at.End = at.Seq + uint32(n)
			tr.Gap(at, int(n), int(n)%3-1)
		case 6:
			k, _ := in.byte()
			tr.Close(at, CloseKind(k%2+1))
			if k&0x10 != 0 {
				tr.MSS(conn, dir, int(k)*8)
			}
		case 7:
			k, _ := in.byte()
			if k&1 == 0 {
				tr.BadFrame(at, &decode.Error{Kind: decode.Malformed, Layer: "mpa", Field: "mpa.key"})
			} else {
				tr.Retransmission(at, int(k))
			}
		}
		if at.End != at.Seq {
			seq[conn][dir] = at.End
		}
		checkBounds(t, tr)
	}
	tr.Finish()
	checkBounds(t, tr)
	_ = tr.Stats()
	_ = tr.AllConnStats()
}

// checkBounds asserts the tracker's tables stay within their limits.
func checkBounds(t *testing.T, tr *Tracker) {
	l := tr.lim
	if len(tr.conns) > l.Conns {
		t.Fatalf("%d live connections, limit %d", len(tr.conns), l.Conns)
	}
	if len(tr.retired) > l.RetainedConns || len(tr.findings) > l.StoredFindings {
		t.Fatalf("retained %d conns, %d findings", len(tr.retired), len(tr.findings))
	}
	for _, c := range tr.conns {
		for d := range c.d {
			if c.reads[d].n > l.OutstandingReads || len(c.reads[d].buf) > l.OutstandingReads {
				t.Fatalf("read queue %d/%d", c.reads[d].n, len(c.reads[d].buf))
			}
			if c.atomics[d].n > l.OutstandingAtomics || len(c.atomics[d].buf) > l.OutstandingAtomics {
				t.Fatalf("atomic queue %d", c.atomics[d].n)
			}
			if len(c.d[d].tg) != l.OpenTagged || len(c.d[d].hist) > l.History {
				t.Fatalf("tagged %d, history %d", len(c.d[d].tg), len(c.d[d].hist))
			}
			n := 0
			for i := range c.d[d].tg {
				if c.d[d].tg[i].active {
					n++
				}
			}
			u := 0
			for i := range c.d[d].q {
				if c.d[d].q[i].open {
					u++
				}
			}
			if n != c.d[d].nOpenT || u != c.d[d].nOpenU {
				t.Fatalf("open counts %d/%d, tables %d/%d", c.d[d].nOpenT, c.d[d].nOpenU, n, u)
			}
		}
		if c.stags.len() > l.STags || len(c.stags.ents) > l.STags {
			t.Fatalf("%d STags, limit %d", c.stags.len(), l.STags)
		}
	}
}

func fuzzSeeds() [][]byte {
	var seeds [][]byte
	// A clean exchange: Request, Reply, Send, Read Request, Read Response,
	// Write, Terminate.
	seg := func(op byte, g decode.Segment) []byte {
		u := g.Append(nil)
		return append([]byte{op, byte(len(u))}, u...)
	}
	var b []byte
	b = append(b, 0x00, 0x10, 2, 0, 4, 0, 4)
	b = append(b, 0x08, 0x10, 2, 0, 4, 0, 4)
	b = append(b, seg(0x01, send(1, 16))...)
	b = append(b, seg(0x01, rreq(1, 1, 0, 8, 2, 0))...)
	b = append(b, seg(0x09, readResp(1, 0, 8, true))...)
	b = append(b, seg(0x01, write(5, 0, 32))...)
	b = append(b, seg(0x01, sendInv(2, 5, 4))...)
	b = append(b, seg(0x01, write(5, 0, 32))...)
	b = append(b, seg(0x01, areq(2, 1, decode.AOpFetchAdd, 5, 8))...)
	b = append(b, seg(0x09, aresp(1, 1))...)
	b = append(b, 0x05, 40)
	b = append(b, seg(0x01, send(4, 16))...)
	b = append(b, seg(0x09, terminate(blameUntagged(1, 2, 2, decode.OpSend, 0, 4, 16)))...)
	b = append(b, 0x06, 0)
	seeds = append(seeds, b)
	// Many Read Requests on two connections, with overflow.
	var c []byte
	for i := 0; i < 6; i++ {
		c = append(c, seg(0x01|byte(i%2)<<4, rreq(uint32(i/2+1), 1, uint64(i)*8, 8, 2, 0))...)
	}
	c = append(c, seg(0x09, readResp(1, 0, 16, false))...)
	seeds = append(seeds, c)
	// siw Terminate.
	t := seg(0x09, terminate(blameTagged(0, decode.OpWrite, 1, 0, 0)))
	copy(t[2+18:], []byte{0x11, 0x00, 0x03, 0x00})
	seeds = append(seeds, append(seg(0x01, write(1, 0, 0)), t...))
	return seeds
}

func FuzzTracker(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(runFuzz)
}

func TestFuzzSeeds(t *testing.T) {
	for _, s := range fuzzSeeds() {
		runFuzz(t, s)
	}
}
