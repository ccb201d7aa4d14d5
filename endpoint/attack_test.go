package endpoint

import (
	"bytes"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
)

// victim is the Responder's memory under attack: every region filled with
// a pattern that must survive byte for byte.
type victim struct {
	env
	scoped *MR // all rights, scoped to another QP of the same PD
	dereg  *MR // deregistered
	all    []*MR
	saved  [][]byte
}

func (v *victim) prep(sv *side) {
	stdPrep(&v.env, 0)(sv)
	qp2, err := sv.pd.CreateQP(QPAttr{SendCQ: sv.cq, RecvCQ: sv.cq})
	if err != nil {
		panic(err)
	}
	v.scoped, _ = sv.pd.RegisterMR(make([]byte, 4096), AccessAll, &MROptions{QP: qp2})
	v.dereg, _ = sv.pd.RegisterMR(make([]byte, 4096), AccessAll, nil)
	v.all = []*MR{v.rw, v.noRW, v.noRR, v.other, v.inv, v.zb, v.local, v.scoped, v.dereg}
	for i, mr := range v.all {
		fillRand(mr.Buf(), uint64(1000+i))
		v.saved = append(v.saved, bytes.Clone(mr.Buf()))
	}
	v.dereg.Deregister()
}

func (v *victim) check(t *testing.T) {
	t.Helper()
	for i, mr := range v.all {
		if !bytes.Equal(mr.Buf(), v.saved[i]) {
			t.Fatalf("region %d (%v) changed", i, mr.Access())
		}
	}
}

// A hostile peer tries every way to read or write memory it was not
// granted (RFC 5040 §8.1.1, RFC 5042 §6): none succeeds, each gets the
// Terminate the RFCs require, nothing is disclosed and the victim's memory
// is unchanged byte for byte. The revocation races are
// TestHolePlacementAfterRevocation and TestHoleReadAnsweredAfterRevocation.
func TestAttacks(t *testing.T) {
	type attack struct {
		name               string
		send               func(r *raw, v *victim)
		layer, etype, code uint8
	}
	w := func(mr *MR, off, n int) func(r *raw, v *victim) {
		return func(r *raw, v *victim) {
			r.send(tagged(decode.OpWrite, uint32(mr.STag()), mr.Addr()+uint64(off), true, bytes.Repeat([]byte{0xEE}, n)))
		}
	}
	rd := func(mr *MR, off uint64, n uint32) func(r *raw, v *victim) {
		return func(r *raw, v *victim) {
			r.send(readReq(1, decode.ReadRequest{SinkSTag: 0x500, Size: n, SrcSTag: uint32(mr.STag()), SrcTO: mr.Addr() + off}))
		}
	}
	inv := func(get func(v *victim) *MR) func(r *raw, v *victim) {
		return func(r *raw, v *victim) {
			s := untagged(decode.OpSendInv, 0, 1, 0, true, []byte("x"))
			s.InvalidateSTag = uint32(get(v).STag())
			r.send(s)
		}
	}
	attacks := []attack{
		{"write another PD's region", func(r *raw, v *victim) { w(v.other, 0, 64)(r, v) }, 1, 1, 0x02},
		{"write another QP's region", func(r *raw, v *victim) { w(v.scoped, 0, 64)(r, v) }, 1, 1, 0x02},
		{"write an invalidated region", func(r *raw, v *victim) { w(v.inv, 0, 64)(r, v) }, 1, 1, 0x00},
		{"write a deregistered region", func(r *raw, v *victim) { w(v.dereg, 0, 64)(r, v) }, 1, 1, 0x00},
		{"write without Remote Write", func(r *raw, v *victim) { w(v.noRW, 0, 64)(r, v) }, 1, 1, 0x02},
		{"write a local-only region", func(r *raw, v *victim) { w(v.local, 0, 64)(r, v) }, 1, 1, 0x02},
		{"write across the bound", func(r *raw, v *victim) { w(v.rw, 4000, 200)(r, v) }, 1, 1, 0x01},
		{"write below the base", func(r *raw, v *victim) { w(v.rw, -64, 64)(r, v) }, 1, 1, 0x01},
		{"write with a wrapping TO", func(r *raw, v *victim) {
			r.send(tagged(decode.OpWrite, uint32(v.rw.STag()), ^uint64(0)-31, true, make([]byte, 64)))
		}, 1, 1, 0x03},
		{"write a guessed key", func(r *raw, v *victim) {
			r.send(tagged(decode.OpWrite, uint32(v.rw.STag())^0x5A, v.rw.Addr(), true, make([]byte, 64)))
		}, 1, 1, 0x00},
		{"read another PD's region", func(r *raw, v *victim) { rd(v.other, 0, 64)(r, v) }, 0, 1, 0x03},
		{"read another QP's region", func(r *raw, v *victim) { rd(v.scoped, 0, 64)(r, v) }, 0, 1, 0x03},
		{"read an invalidated region", func(r *raw, v *victim) { rd(v.inv, 0, 64)(r, v) }, 0, 1, 0x00},
		{"read a deregistered region", func(r *raw, v *victim) { rd(v.dereg, 0, 64)(r, v) }, 0, 1, 0x00},
		{"read without Remote Read", func(r *raw, v *victim) { rd(v.noRR, 0, 64)(r, v) }, 0, 1, 0x02},
		{"read across the bound", func(r *raw, v *victim) { rd(v.rw, 4000, 200)(r, v) }, 0, 1, 0x01},
		{"read with a wrapping TO", func(r *raw, v *victim) {
			r.send(readReq(1, decode.ReadRequest{SinkSTag: 0x500, Size: 64, SrcSTag: uint32(v.rw.STag()), SrcTO: ^uint64(0) - 31}))
		}, 0, 1, 0x04},
		{"reads beyond IRD", func(r *raw, v *victim) {
			var b []byte
			for i := uint32(1); i <= 40; i++ {
				b = decode.AppendFPDU(b, readReq(i, decode.ReadRequest{SinkSTag: 0x500, Size: 4096, SrcSTag: uint32(v.rw.STag()), SrcTO: v.rw.Addr()}).Append(nil), r.crc)
			}
			r.write(b)
		}, 1, 2, 0x03},
		{"invalidate another QP's region", inv(func(v *victim) *MR { return v.scoped }), 0, 1, 0x09},
		{"invalidate another PD's region", inv(func(v *victim) *MR { return v.other }), 0, 1, 0x09},
		{"forged Read Response", func(r *raw, v *victim) {
			r.send(tagged(decode.OpReadResponse, uint32(v.rw.STag()), v.rw.Addr(), true, make([]byte, 64)))
		}, 0, 2, 0x06},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			var v victim
			recv := 0
			if a.code == 0x09 {
				recv = 1
			}
			req := v2Req(false, true)
			req.V2.ORD = 2 // the victim's IRD follows our ORD (RFC 6581 §9.1)
			r, sv, _ := rawClient(t, Config{}, req, QPAttr{IRD: 2}, func(sv *side) {
				v.prep(sv)
				if recv > 0 {
					rb, _ := sv.pd.RegisterMR(make([]byte, 64), AccessLocalWrite, nil)
					sv.qp.PostRecv(RecvWR{WRID: 1, SGL: []SGE{rb.SGE(0, 64)}})
				}
			})
			a.send(r, &v)
			// Read every FPDU up to the Terminate: no Read Response may
			// carry the victim's octets unless the Read was granted.
			r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
			for {
				s, _, err := r.readFPDU()
				if err != nil {
					t.Fatalf("waiting for the Terminate: %v", err)
				}
				if s.RDMAP.Opcode == decode.OpReadResponse && a.name != "reads beyond IRD" && len(s.Payload) > 0 {
					t.Fatalf("Read Response with %d octets", len(s.Payload))
				}
				if s.RDMAP.Opcode == decode.OpTerminate {
					tm := s.Terminate
					if tm.Layer != a.layer || tm.EType != a.etype || tm.Code != a.code {
						t.Fatalf("Terminate %s (0x%x/0x%x/0x%02x)", tm.Cause(), tm.Layer, tm.EType, tm.Code)
					}
					break
				}
			}
			r.c.Close()
			waitDone(t, sv.qp, StateError)
			v.check(t)
			if a.code == 0x09 && (!v.scoped.Valid() || !v.other.Valid()) {
				t.Fatal("the peer invalidated a region it was not granted")
			}
		})
	}
}
