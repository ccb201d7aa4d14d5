package endpoint

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
)

// Bind-time checks of a type 1 window (immediate errors, V00 §7.10.1).
func TestMWBindChecks(t *testing.T) {
	s := newSide(t, QPAttr{})
	buf := make([]byte, 4096)
	mr, _ := s.pd.RegisterMR(buf, AccessAll|AccessMWBind, nil)
	noBind, _ := s.pd.RegisterMR(make([]byte, 64), AccessAll, nil)
	noLW, _ := s.pd.RegisterMR(make([]byte, 64), AccessLocalRead|AccessRemoteRead|AccessMWBind, nil)
	zb, _ := s.pd.RegisterMR(make([]byte, 64), AccessAll|AccessMWBind, &MROptions{ZeroBased: true})
	other, _ := s.dev.AllocPD().RegisterMR(make([]byte, 64), AccessAll|AccessMWBind, nil)
	mw1, _ := s.pd.AllocMW(MWType1)
	mw2, _ := s.pd.AllocMW(MWType2)
	if mw1.Valid() || mw2.Valid() {
		t.Fatal("a new window is Valid")
	}
	bad := []struct {
		name string
		b    Bind
	}{
		{"region without bind right", Bind{MW: mw1, MR: noBind, Addr: noBind.Addr(), Length: 8, Access: AccessRemoteRead}},
		{"Remote Write without the region's Local Write", Bind{MW: mw1, MR: noLW, Addr: noLW.Addr(), Length: 8, Access: AccessRemoteWrite}},
		{"zero-based region", Bind{MW: mw1, MR: zb, Addr: 0, Length: 8, Access: AccessRemoteRead}},
		{"region of another PD", Bind{MW: mw1, MR: other, Addr: other.Addr(), Length: 8, Access: AccessRemoteRead}},
		{"range beyond the region", Bind{MW: mw1, MR: mr, Addr: mr.Addr() + 4000, Length: 200, Access: AccessRemoteRead}},
		{"range below the region", Bind{MW: mw1, MR: mr, Addr: mr.Addr() - 1, Length: 8, Access: AccessRemoteRead}},
		{"range wraps", Bind{MW: mw1, MR: mr, Addr: ^uint64(0) - 3, Length: 8, Access: AccessRemoteRead}},
		{"local rights", Bind{MW: mw1, MR: mr, Addr: mr.Addr(), Length: 8, Access: AccessLocalWrite}},
		{"no rights", Bind{MW: mw1, MR: mr, Addr: mr.Addr(), Length: 8}},
		{"type 2 window by the verb", Bind{MW: mw2, MR: mr, Addr: mr.Addr(), Length: 8, Access: AccessRemoteRead}},
	}
	for _, c := range bad {
		if _, err := s.qp.BindMW(c.b); err == nil {
			t.Errorf("%s: bound", c.name)
		}
	}
	st, err := s.qp.BindMW(Bind{MW: mw1, MR: mr, Addr: mr.Addr() + 1024, Length: 1024, Access: AccessRemoteWrite, Key: 0x42})
	if err != nil || st.Key() != 0x42 || st != mw1.STag() || !mw1.Valid() {
		t.Fatalf("bind: %v %v", st, err)
	}
	// Windows are not local keys; a region with windows stays registered.
	if _, _, e := s.dev.check(st, s.qp, AccessLocalWrite, mr.Addr()+1024, 8); e == accOK {
		t.Fatal("window accepted in a local SGL")
	}
	if err := mr.Deregister(); !errors.Is(err, ErrResourceBusy) {
		t.Fatalf("Deregister with a window bound: %v", err)
	}
	if _, err := mr.Reregister(0); !errors.Is(err, ErrResourceBusy) {
		t.Fatalf("Reregister with a window bound: %v", err)
	}
	// Invalidating the region takes its windows with it.
	mr.Invalidate()
	if mw1.Valid() {
		t.Fatal("window Valid after its region was invalidated")
	}
	if err := mr.Deregister(); err != nil {
		t.Fatal(err)
	}
	if err := mw1.Invalidate(); err == nil {
		t.Fatal("type 1 window invalidated")
	}
	if err := mw1.Dealloc(); err != nil || mw1.Dealloc() == nil {
		t.Fatal("Dealloc twice")
	}
}

// Type 2 windows over the wire: bound by a Bind WR, used by the peer
// within the window only, invalidated by the peer's Send with Invalidate
// and by Invalidate Local STag, deallocated; each later use gets Invalid
// STag and the region is untouched outside what the window granted.
func TestMWType2(t *testing.T) {
	for _, end := range []string{"send-with-invalidate", "local-invalidate", "dealloc", "beyond", "other-qp"} {
		t.Run(end, func(t *testing.T) {
			var mr *MR
			var mw *MW
			var qp2 *QP
			r, sv, _ := rawClient(t, Config{}, v2Req(false, true), QPAttr{}, func(sv *side) {
				mr, _ = sv.pd.RegisterMR(make([]byte, 4096), AccessAll|AccessMWBind, nil)
				mw, _ = sv.pd.AllocMW(MWType2)
				qp2, _ = sv.pd.CreateQP(QPAttr{SendCQ: sv.cq, RecvCQ: sv.cq})
				rb, _ := sv.pd.RegisterMR(make([]byte, 64), AccessLocalWrite, nil)
				sv.qp.PostRecv(RecvWR{WRID: 7, SGL: []SGE{rb.SGE(0, 64)}})
			})
			r.send(tagged(decode.OpWrite, 0, 0, true, nil)) // opens the Responder's gate
			base := mr.Addr() + 1024
			if _, err := sv.qp.PostSend(SendWR{WRID: 1, Opcode: OpBindMW, Signaled: true,
				Bind: &Bind{MW: mw, MR: mr, Addr: base, Length: 1024, Access: AccessRemoteWrite | AccessRemoteRead}}); err != nil {
				t.Fatal(err)
			}
			sv.waitOK(t, OpBindMW)
			if !mw.Valid() || mw.QP() != sv.qp {
				t.Fatal("window not bound to the QP")
			}
			stag := uint32(mw.STag())
			r.send(tagged(decode.OpWrite, stag, base+10, true, []byte("via window")))
			r.send(readReq(1, decode.ReadRequest{SinkSTag: 0x500, Size: 10, SrcSTag: stag, SrcTO: base + 10}))
			r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
			s, _, err := r.readFPDU()
			if err != nil || s.RDMAP.Opcode != decode.OpReadResponse || string(s.Payload) != "via window" {
				t.Fatalf("Read through the window: %v %q", err, s.Payload)
			}
			// What the region must hold at the end: the Write through the
			// window and nothing else (checked once the QP is done, which
			// orders the engine's placement before the test's reads).
			want := make([]byte, 4096)
			copy(want[1034:], "via window")
			switch end {
			case "send-with-invalidate":
				si := untagged(decode.OpSendInv, 0, 1, 0, true, []byte("x"))
				si.InvalidateSTag = stag
				r.send(si)
				if wc := sv.waitOK(t, OpRecv); !wc.Invalidated || wc.InvalidatedSTag != STag(stag) {
					t.Fatalf("receive %+v", wc)
				}
			case "local-invalidate":
				sv.qp.PostSend(SendWR{WRID: 2, Opcode: OpLocalInv, InvalidateSTag: STag(stag), Signaled: true, LocalFence: true})
				sv.waitOK(t, OpLocalInv)
			case "dealloc":
				if err := mw.Dealloc(); err != nil {
					t.Fatal(err)
				}
			}
			if end != "beyond" && end != "other-qp" && mw.Valid() {
				t.Fatal("window still Valid")
			}
			switch end {
			case "beyond":
				r.send(tagged(decode.OpWrite, stag, base+1000, true, make([]byte, 64)))
				r.expectTerminate(1, 1, 0x01)
			case "other-qp":
				// The window belongs to sv.qp: qp2's side of the PD may not
				// use it.
				if _, _, e := sv.dev.check(STag(stag), qp2, AccessRemoteWrite, base, 8); e != accPD {
					t.Fatalf("window used by another QP: %v", e)
				}
				r.send(tagged(decode.OpWrite, stag, base, true, make([]byte, 8)))
				r.send(tagged(decode.OpWrite, stag^0x10, base, true, make([]byte, 8)))
				r.expectTerminate(1, 1, 0x00)
			default:
				r.send(tagged(decode.OpWrite, stag, base, true, make([]byte, 64)))
				r.expectTerminate(1, 1, 0x00)
			}
			r.c.Close()
			waitDone(t, sv.qp, StateError)
			if !bytes.Equal(mr.Buf(), want) {
				t.Fatal("region holds more (or less) than the window's Write")
			}
		})
	}
}

// A Bind WR that fails its checks completes in error and the QP sends a
// Local Catastrophic Terminate (V00 Fig. 23).
func TestMWBindWRError(t *testing.T) {
	var mr *MR
	var mw *MW
	r, sv, _ := rawClient(t, Config{}, v2Req(false, false), QPAttr{}, func(sv *side) {
		mr, _ = sv.pd.RegisterMR(make([]byte, 64), AccessAll, nil) // no bind right
		mw, _ = sv.pd.AllocMW(MWType2)
	})
	r.send(tagged(decode.OpWrite, 0, 0, true, nil))
	sv.qp.PostSend(SendWR{WRID: 1, Opcode: OpBindMW, Bind: &Bind{MW: mw, MR: mr, Addr: mr.Addr(), Length: 8, Access: AccessRemoteRead}})
	r.expectTerminate(0, 0, 0)
	if wc := sv.wait(t); wc.WRID != 1 || wc.Status != StatusAccessViolation {
		t.Fatalf("bind completion %+v", wc)
	}
	if mw.Valid() {
		t.Fatal("window bound")
	}
}

// RI-Reregister with new rights and a new range, and shared regions.
func TestReregAndShared(t *testing.T) {
	var mr, shared *MR
	var old STag
	newBuf := make([]byte, 256)
	r, sv, _ := rawClient(t, Config{}, v2Req(false, false), QPAttr{}, func(sv *side) {
		mr, _ = sv.pd.RegisterMR(make([]byte, 4096), AccessAll, nil)
		old = mr.STag()
		var err error
		shared, err = sv.pd.RegisterSharedMR(mr, AccessLocalRead|AccessRemoteRead, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sv.pd.RegisterSharedMR(mr, AccessAll|AccessMWBind, nil); err == nil {
			t.Fatal("shared region with more rights than its region")
		}
	})
	copy(mr.Buf(), "shared octets")
	mr.Sync()
	// The shared STag reads the same memory and stays Valid through a
	// peer's Send with Invalidate attempt and a local Invalidate.
	shared.Invalidate()
	r.send(readReq(1, decode.ReadRequest{SinkSTag: 0x500, Size: 13, SrcSTag: uint32(shared.STag()), SrcTO: shared.Addr()}))
	r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if s, _, err := r.readFPDU(); err != nil || string(s.Payload) != "shared octets" {
		t.Fatalf("Read through the shared STag: %v %q", err, s.Payload)
	}
	// Rereg: Remote Read only, a new 256-octet buffer, a fresh key.
	st, err := mr.Rereg(0, AccessLocalRead|AccessRemoteRead, newBuf, nil)
	if err != nil || st == old || mr.Len() != 256 || mr.Addr() == 0 {
		t.Fatalf("Rereg: %v %v", st, err)
	}
	if _, err := mr.Rereg(st.Key(), AccessAll, nil, nil); err == nil {
		t.Fatal("Rereg with the same key")
	}
	// The old STag is dead; the new one reads the new buffer and may not
	// be written.
	r.send(readReq(2, decode.ReadRequest{SinkSTag: 0x500, Size: 8, SrcSTag: uint32(st), SrcTO: mr.Addr()}))
	if s, _, err := r.readFPDU(); err != nil || s.RDMAP.Opcode != decode.OpReadResponse || len(s.Payload) != 8 {
		t.Fatalf("Read with the new STag: %v", err)
	}
	r.send(tagged(decode.OpWrite, uint32(st), mr.Addr(), true, make([]byte, 8)))
	r.expectTerminate(1, 1, 0x02)
	r.c.Close()
	waitDone(t, sv.qp, StateError)
	if _, _, e := sv.dev.check(old, sv.qp, AccessRemoteRead, mr.Addr(), 8); e != accInvalidSTag {
		t.Fatalf("old STag after Rereg: %v", e)
	}
	// Deregistering the region ends its shared STags' access.
	if err := mr.Deregister(); err != nil {
		t.Fatal(err)
	}
	if _, _, e := sv.dev.check(shared.STag(), sv.qp, AccessRemoteRead, shared.Addr(), 8); e != accInvalidSTag {
		t.Fatalf("shared STag after its region was deregistered: %v", e)
	}
}
