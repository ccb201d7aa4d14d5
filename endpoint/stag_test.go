package endpoint

import (
	"errors"
	"testing"
)

// stagEnv is a connected pair whose server side (privileged unless the case
// says otherwise) holds the STag under test; the client is the peer that
// sends a Send with Invalidate.
type stagEnv struct {
	t      *testing.T
	cl, sv *side
	other  *PD // a second PD of the server's device
	buf    []byte
	base   *MR // a Valid region with AccessMWBind, under the windows
	rbuf   *MR // receive buffer for a peer's Send
	src    *MR // client source
}

func newStagEnv(t *testing.T, privileged bool) *stagEnv {
	cl, sv := connect(t, pairOpts{srvAttr: QPAttr{Privileged: privileged}})
	e := &stagEnv{t: t, cl: cl, sv: sv, other: sv.dev.AllocPD(), buf: make([]byte, 4096)}
	e.base, _ = sv.pd.RegisterMR(e.buf, AccessAll|AccessMWBind, nil)
	e.rbuf, _ = sv.reg(t, 64, AccessAll)
	e.src, _ = cl.reg(t, 64, AccessAll)
	// The Initiator's first message opens the Responder's transmit gate
	// (RFC 5044 §7.1.2), so the server's WRs run from here on.
	sv.qp.PostRecv(RecvWR{WRID: 100, SGL: []SGE{e.rbuf.SGE(0, 64)}})
	cl.qp.PostSend(SendWR{Opcode: OpSend})
	sv.waitOK(t, OpRecv)
	return e
}

// wr posts w on the server and returns its completion status; an error
// completion must also move the QP to Terminate or Error (V00 Fig. 23).
func (e *stagEnv) wr(w SendWR) Status {
	e.t.Helper()
	w.WRID, w.Signaled = 7, true
	if _, err := e.sv.qp.PostSend(w); err != nil {
		e.t.Fatalf("PostSend %v: %v", w.Opcode, err)
	}
	wc := e.sv.wait(e.t)
	if wc.WRID != 7 {
		e.t.Fatalf("completion of WR %d, want 7", wc.WRID)
	}
	if wc.Status != StatusSuccess {
		if st := e.sv.qp.State(); st != StateTerminate && st != StateError {
			e.t.Fatalf("%v completed %v with the QP in %v", w.Opcode, wc.Status, st)
		}
	}
	return wc.Status
}

// remoteInv has the client send a Send with Invalidate of stag and returns
// the server's receive status (InvalidateError makes the server Terminate).
func (e *stagEnv) remoteInv(stag STag) Status {
	e.t.Helper()
	e.sv.qp.PostRecv(RecvWR{WRID: 8, SGL: []SGE{e.rbuf.SGE(0, 64)}})
	e.cl.qp.PostSend(SendWR{Opcode: OpSendInv, SGL: []SGE{e.src.SGE(0, 4)}, InvalidateSTag: stag})
	wc := e.sv.wait(e.t)
	if wc.WRID != 8 {
		e.t.Fatalf("completion of WR %d, want the receive", wc.WRID)
	}
	if wc.Status == StatusSuccess && (!wc.Invalidated || wc.InvalidatedSTag != stag) {
		e.t.Fatalf("receive %+v does not report the invalidation of %v", wc, stag)
	}
	return wc.Status
}

// stagObj is the STag under test: a region or a window.
type stagObj struct {
	mr *MR
	mw *MW
}

func (o stagObj) stag() STag {
	if o.mw != nil {
		return o.mw.STag()
	}
	return o.mr.STag()
}

func (o stagObj) valid() bool {
	if o.mw != nil {
		return o.mw.Valid()
	}
	return o.mr.Valid()
}

// TestSTagTransitions drives every STag state and transition of V00 §7
// (digest §6) for each kind of STag, legal and illegal, and checks the
// state after and the status or error the draft prescribes.
func TestSTagTransitions(t *testing.T) {
	mk := map[string]func(e *stagEnv) stagObj{
		"mr": func(e *stagEnv) stagObj { mr, _ := e.sv.reg(t, 256, AccessAll); return stagObj{mr: mr} },
		"alloc": func(e *stagEnv) stagObj {
			mr, err := e.sv.pd.AllocMR(1024, nil)
			if err != nil {
				t.Fatal(err)
			}
			return stagObj{mr: mr}
		},
		"alloc-valid": func(e *stagEnv) stagObj {
			mr, _ := e.sv.pd.AllocMR(1024, nil)
			if st := e.wr(SendWR{Opcode: OpFastReg, FastReg: &FastReg{MR: mr, Buf: make([]byte, 512), Access: AccessAll}}); st != StatusSuccess {
				t.Fatalf("Fast-Register: %v", st)
			}
			return stagObj{mr: mr}
		},
		"shared": func(e *stagEnv) stagObj {
			mr, err := e.sv.pd.RegisterSharedMR(e.base, AccessLocalRead|AccessRemoteRead, nil)
			if err != nil {
				t.Fatal(err)
			}
			return stagObj{mr: mr}
		},
		"base-with-window": func(e *stagEnv) stagObj {
			mw, _ := e.sv.pd.AllocMW(MWType1)
			if _, err := e.sv.qp.BindMW(Bind{MW: mw, MR: e.base, Addr: e.base.Addr(), Length: 8, Access: AccessRemoteRead}); err != nil {
				t.Fatal(err)
			}
			return stagObj{mr: e.base}
		},
		"mr-other-pd": func(e *stagEnv) stagObj {
			mr, _ := e.other.RegisterMR(make([]byte, 8), AccessAll, nil)
			return stagObj{mr: mr}
		},
		"alloc-other-pd": func(e *stagEnv) stagObj { mr, _ := e.other.AllocMR(64, nil); return stagObj{mr: mr} },
		"shared-rw": func(e *stagEnv) stagObj {
			mr, err := e.sv.pd.RegisterSharedMR(e.base, AccessLocalWrite|AccessRemoteWrite, nil)
			if err != nil {
				t.Fatal(err)
			}
			return stagObj{mr: mr}
		},
		"mw1": func(e *stagEnv) stagObj { mw, _ := e.sv.pd.AllocMW(MWType1); return stagObj{mw: mw} },
		"mw1-valid": func(e *stagEnv) stagObj {
			mw, _ := e.sv.pd.AllocMW(MWType1)
			if _, err := e.sv.qp.BindMW(Bind{MW: mw, MR: e.base, Addr: e.base.Addr(), Length: 64, Access: AccessRemoteRead}); err != nil {
				t.Fatal(err)
			}
			return stagObj{mw: mw}
		},
		"mw2": func(e *stagEnv) stagObj { mw, _ := e.sv.pd.AllocMW(MWType2); return stagObj{mw: mw} },
		"mw2-valid": func(e *stagEnv) stagObj {
			mw, _ := e.sv.pd.AllocMW(MWType2)
			if st := e.wr(SendWR{Opcode: OpBindMW, Bind: &Bind{MW: mw, MR: e.base, Addr: e.base.Addr(), Length: 64, Access: AccessRemoteWrite}}); st != StatusSuccess {
				t.Fatalf("Bind: %v", st)
			}
			return stagObj{mw: mw}
		},
	}
	localInv := func(e *stagEnv, o stagObj) Status { return e.wr(SendWR{Opcode: OpLocalInv, InvalidateSTag: o.stag()}) }
	remoteInv := func(e *stagEnv, o stagObj) Status { return e.remoteInv(o.stag()) }
	readInv := func(e *stagEnv, o stagObj) Status {
		return e.wr(SendWR{Opcode: OpReadInv, SGL: []SGE{{Addr: o.mr.Addr(), Length: 4, LKey: o.stag()}}, RemoteAddr: e.src.Addr(), RKey: e.src.STag()})
	}
	fastReg := func(fr FastReg) func(e *stagEnv, o stagObj) Status {
		return func(e *stagEnv, o stagObj) Status {
			fr.MR = o.mr
			if fr.Buf == nil {
				fr.Buf = make([]byte, 256)
			}
			return e.wr(SendWR{Opcode: OpFastReg, FastReg: &fr})
		}
	}
	bind2 := func(e *stagEnv, o stagObj) Status {
		return e.wr(SendWR{Opcode: OpBindMW, Bind: &Bind{MW: o.mw, MR: e.base, Addr: e.base.Addr(), Length: 64, Access: AccessRemoteRead}})
	}
	verb := func(f func(e *stagEnv, o stagObj) error) func(e *stagEnv, o stagObj) Status {
		return func(e *stagEnv, o stagObj) Status {
			if err := f(e, o); err != nil {
				return StatusInvalidWQE // an Immediate Error: nothing changed
			}
			return StatusSuccess
		}
	}
	cases := []struct {
		name       string
		kind       string
		notPriv    bool
		op         func(e *stagEnv, o stagObj) Status
		want       Status
		validAfter bool
	}{
		// Non-Shared region registered by RI-Register: Valid.
		{"mr Valid -LocalInv-> Invalid", "mr", false, localInv, StatusSuccess, false},
		{"mr Valid -SendInv-> Invalid", "mr", false, remoteInv, StatusSuccess, false},
		{"mr Valid -Read with Invalidate Local STag-> Invalid", "mr", false, readInv, StatusSuccess, false},
		{"mr Invalid -LocalInv-> Invalid (allowed)", "mr", false, func(e *stagEnv, o stagObj) Status {
			o.mr.Invalidate()
			return localInv(e, o)
		}, StatusSuccess, false},
		{"mr Invalid -Rereg-> Valid", "mr", false, verb(func(e *stagEnv, o stagObj) error {
			o.mr.Invalidate()
			_, err := o.mr.Rereg(0, AccessLocalRead, nil, nil)
			return err
		}), StatusSuccess, true},
		{"mr Valid -FastReg-> error, not allocated for it", "mr", false, fastReg(FastReg{Access: AccessAll}), StatusInvalidRegion, true},
		{"mr with a window bound -LocalInv-> error", "base-with-window", false, localInv, StatusAccessViolation, true},
		{"mr with a window bound -SendInv-> error", "base-with-window", false, remoteInv, StatusInvalidateError, true},
		{"mr Valid -LocalInv with a stale key-> error", "mr", false, func(e *stagEnv, o stagObj) Status {
			return e.wr(SendWR{Opcode: OpLocalInv, InvalidateSTag: o.stag() ^ 0x01})
		}, StatusInvalidSTag, true},
		{"mr of another PD -LocalInv-> error", "mr-other-pd", false, localInv, StatusInvalidPD, true},
		{"mr of another PD -SendInv-> error", "mr-other-pd", false, remoteInv, StatusInvalidateError, true},
		{"mr deallocated -LocalInv-> error", "mr", false, func(e *stagEnv, o stagObj) Status {
			s := o.stag()
			o.mr.Deregister()
			return e.wr(SendWR{Opcode: OpLocalInv, InvalidateSTag: s})
		}, StatusInvalidSTag, false},
		{"STag 0 -LocalInv-> error", "mr", false, func(e *stagEnv, o stagObj) Status {
			return e.wr(SendWR{Opcode: OpLocalInv, InvalidateSTag: 0})
		}, StatusInvalidSTag, true},

		// Allocated Non-Shared region: Invalid until Fast-Registered.
		{"alloc Invalid -FastReg-> Valid", "alloc", false, fastReg(FastReg{Access: AccessAll, Key: 0x5a}), StatusSuccess, true},
		{"alloc Valid -FastReg-> STag Not In Invalid State", "alloc-valid", false, fastReg(FastReg{Access: AccessAll}), StatusSTagNotInvalid, true},
		{"alloc Valid -LocalInv-> Invalid", "alloc-valid", false, localInv, StatusSuccess, false},
		{"alloc Valid -SendInv-> Invalid", "alloc-valid", false, remoteInv, StatusSuccess, false},
		{"alloc Valid -Read with Invalidate Local STag-> Invalid", "alloc-valid", false, readInv, StatusSuccess, false},
		{"alloc Valid -LocalInv, FastReg-> Valid", "alloc-valid", false, func(e *stagEnv, o stagObj) Status {
			if st := localInv(e, o); st != StatusSuccess {
				return st
			}
			return fastReg(FastReg{Access: AccessLocalRead})(e, o)
		}, StatusSuccess, true},
		{"alloc -FastReg on an unprivileged QP-> error", "alloc", true, fastReg(FastReg{Access: AccessAll}), StatusNotPrivileged, false},
		{"alloc -FastReg beyond its length-> error", "alloc", false, fastReg(FastReg{Access: AccessAll, Buf: make([]byte, 1025)}), StatusInvalidLength, false},
		{"alloc -FastReg Remote Write without Local Write-> error", "alloc", false, fastReg(FastReg{Access: AccessLocalRead | AccessRemoteWrite}), StatusInvalidAccessRights, false},
		{"alloc -FastReg with no local right-> error", "alloc", false, fastReg(FastReg{Access: AccessMWBind}), StatusInvalidAccessRights, false},
		{"alloc -FastReg at a wrapping VA-> error", "alloc", false, fastReg(FastReg{Access: AccessAll, VA: ^uint64(0) - 8}), StatusInvalidVA, false},
		{"alloc -FastReg under its last key-> error", "alloc", false, func(e *stagEnv, o stagObj) Status {
			return fastReg(FastReg{Access: AccessAll, Key: o.stag().Key()})(e, o)
		}, StatusInvalidSTag, false},
		{"alloc of another PD -FastReg-> error", "alloc-other-pd", false, fastReg(FastReg{Access: AccessAll, Buf: make([]byte, 64)}), StatusInvalidPD, false},
		{"alloc deallocated -FastReg-> error", "alloc", false, func(e *stagEnv, o stagObj) Status {
			o.mr.Deregister()
			return fastReg(FastReg{Access: AccessAll})(e, o)
		}, StatusInvalidSTag, false},

		// Shared region: always Valid.
		{"shared -LocalInv-> error, stays Valid", "shared", false, localInv, StatusInvalidRegion, true},
		{"shared -SendInv-> error, stays Valid", "shared", false, remoteInv, StatusInvalidateError, true},
		{"shared -Read with Invalidate Local STag-> error, stays Valid", "shared-rw", false, readInv, StatusInvalidRegion, true},
		{"shared -Invalidate verb-> stays Valid", "shared", false, verb(func(e *stagEnv, o stagObj) error { o.mr.Invalidate(); return nil }), StatusSuccess, true},
		{"shared -Deregister-> gone", "shared", false, verb(func(e *stagEnv, o stagObj) error { return o.mr.Deregister() }), StatusSuccess, false},

		// Type 1 window: Invalid, Valid by the Bind verb, ended by Dealloc.
		{"mw1 Invalid -BindMW-> Valid", "mw1", false, verb(func(e *stagEnv, o stagObj) error {
			_, err := e.sv.qp.BindMW(Bind{MW: o.mw, MR: e.base, Addr: e.base.Addr(), Length: 8, Access: AccessRemoteWrite})
			return err
		}), StatusSuccess, true},
		{"mw1 -Bind WR-> error", "mw1", false, bind2, StatusInvalidWindow, false},
		{"mw1 Valid -LocalInv-> error", "mw1-valid", false, localInv, StatusInvalidWindow, true},
		{"mw1 Valid -SendInv-> error", "mw1-valid", false, remoteInv, StatusInvalidateError, true},
		{"mw1 Valid -Dealloc-> gone", "mw1-valid", false, verb(func(e *stagEnv, o stagObj) error { return o.mw.Dealloc() }), StatusSuccess, false},

		// Type 2 window: Invalid, Valid by a Bind WR, owned by the QP.
		{"mw2 Invalid -Bind WR-> Valid", "mw2", false, bind2, StatusSuccess, true},
		{"mw2 Invalid -BindMW verb-> error", "mw2", false, verb(func(e *stagEnv, o stagObj) error {
			_, err := e.sv.qp.BindMW(Bind{MW: o.mw, MR: e.base, Addr: e.base.Addr(), Length: 8, Access: AccessRemoteRead})
			return err
		}), StatusInvalidWQE, false},
		{"mw2 Valid -Bind WR-> error", "mw2-valid", false, bind2, StatusInvalidWindow, true},
		{"mw2 Valid -LocalInv-> Invalid", "mw2-valid", false, localInv, StatusSuccess, false},
		{"mw2 Valid -SendInv-> Invalid", "mw2-valid", false, remoteInv, StatusSuccess, false},
		{"mw2 Invalid -LocalInv-> Invalid (allowed)", "mw2", false, localInv, StatusSuccess, false},
		{"mw2 Valid -Dealloc-> gone", "mw2-valid", false, verb(func(e *stagEnv, o stagObj) error { return o.mw.Dealloc() }), StatusSuccess, false},
		{"mw2 -FastReg-> error", "mw2", false, func(e *stagEnv, o stagObj) Status {
			return fastReg(FastReg{Access: AccessAll})(e, stagObj{mr: o.mw.r})
		}, StatusInvalidRegion, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newStagEnv(t, !c.notPriv)
			e.t = t
			o := mk[c.kind](e)
			if got := c.op(e, o); got != c.want {
				t.Fatalf("status %v, want %v (QP %v: %v)", got, c.want, e.sv.qp.State(), e.sv.qp.Err())
			}
			if v := o.valid(); v != c.validAfter {
				t.Fatalf("Valid %v after, want %v", v, c.validAfter)
			}
		})
	}
}

// TestFastRegisterUse: a Fast-Registered region serves the peer's RDMA
// Write under the key the WR chose, with the rights it gave; after
// Invalidate Local STag the same STag ends the connection (RFC 5040
// §8.1.1: no access through an Invalid STag).
func TestFastRegisterUse(t *testing.T) {
	e := newStagEnv(t, true)
	mr, err := e.sv.pd.AllocMR(4096, nil)
	if err != nil {
		t.Fatal(err)
	}
	if mr.Valid() {
		t.Fatal("an allocated region is Valid before Fast-Register")
	}
	buf := make([]byte, 128)
	if st := e.wr(SendWR{Opcode: OpFastReg, FastReg: &FastReg{MR: mr, Buf: buf, Access: AccessLocalWrite | AccessRemoteWrite, ZeroBased: true, Key: 0x33}}); st != StatusSuccess {
		t.Fatalf("Fast-Register: %v", st)
	}
	stag := mr.STag()
	if stag.Key() != 0x33 || mr.Addr() != 0 || mr.Len() != 128 || !mr.Valid() {
		t.Fatalf("after Fast-Register: STag %v addr %x len %d valid %v", stag, mr.Addr(), mr.Len(), mr.Valid())
	}
	copy(e.src.Buf(), "fast-registered!")
	e.src.Sync()
	e.sv.qp.PostRecv(RecvWR{WRID: 9, SGL: []SGE{e.rbuf.SGE(0, 64)}})
	e.cl.qp.PostSend(SendWR{Opcode: OpWrite, SGL: []SGE{e.src.SGE(0, 16)}, RemoteAddr: 100, RKey: stag},
		SendWR{Opcode: OpSend})
	e.sv.waitOK(t, OpRecv)
	mr.Sync()
	if string(buf[100:116]) != "fast-registered!" {
		t.Fatalf("region holds %q", buf[100:116])
	}
	if st := e.wr(SendWR{Opcode: OpLocalInv, InvalidateSTag: stag, LocalFence: true}); st != StatusSuccess {
		t.Fatalf("Invalidate Local STag: %v", st)
	}
	e.cl.qp.PostSend(SendWR{Opcode: OpWrite, SGL: []SGE{e.src.SGE(0, 8)}, RemoteAddr: 0, RKey: stag})
	waitDone(t, e.sv.qp, StateError)
	if ti := e.sv.qp.Terminate(); ti == nil || !ti.Local || ti.Cause.Layer != 1 || ti.Cause.EType != 1 || ti.Cause.Code != 0 {
		t.Fatalf("Terminate %+v, want DDP 0x1/0x1/0x00 (invalid STag)", ti)
	}
}

// A QP with a type 2 window bound to it cannot be destroyed (V00 §6.2.4);
// once the window is invalidated it can.
func TestDestroyQPWithWindowBound(t *testing.T) {
	e := newStagEnv(t, false)
	mw, _ := e.sv.pd.AllocMW(MWType2)
	if st := e.wr(SendWR{Opcode: OpBindMW, Bind: &Bind{MW: mw, MR: e.base, Addr: e.base.Addr(), Length: 64, Access: AccessRemoteRead}}); st != StatusSuccess {
		t.Fatalf("Bind: %v", st)
	}
	if err := e.sv.qp.Destroy(); !errors.Is(err, ErrResourceBusy) {
		t.Fatalf("Destroy with a window bound: %v", err)
	}
	if err := mw.Invalidate(); err != nil {
		t.Fatal(err)
	}
	if err := e.sv.qp.Destroy(); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
}
