package endpoint

import (
	"fmt"
	"unsafe"
)

// MWType is a memory window's type. iwkit follows the IB verbs split that
// V00's single window kind grew into: a type 1 window is bound by a verb
// (QP.BindMW), is scoped to its PD, and only its owner can end a binding (by
// binding again or deallocating); a type 2 window is bound by a Bind work
// request on a QP's Send Queue, belongs to that QP (the QP check replaces
// the PD check, V00 §7.10), and is invalidated by Invalidate Local STag or
// by the peer's Send with Invalidate.
type MWType uint8

const (
	MWType1 MWType = 1
	MWType2 MWType = 2
)

// MW is a memory window: an STag naming a byte range of a region with its
// own remote rights (V00 §7.10). It starts Invalid.
type MW struct{ r *MR }

// AllocMW allocates an Invalid window of type t on pd.
func (pd *PD) AllocMW(t MWType) (*MW, error) {
	if t != MWType1 && t != MWType2 {
		return nil, fmt.Errorf("%w: window type %d", ErrInvalidWR, t)
	}
	r := &MR{pd: pd, mwType: t}
	if err := pd.dev.install(r, 0); err != nil {
		return nil, err
	}
	return &MW{r: r}, nil
}

// STag is the window's current STag.
func (mw *MW) STag() STag { return mw.r.STag() }

// Valid reports whether the window is bound.
func (mw *MW) Valid() bool { return mw.r.Valid() }

// Type is the window's type.
func (mw *MW) Type() MWType { return mw.r.mwType }

// QP is the QP a bound type 2 window belongs to.
func (mw *MW) QP() *QP {
	mw.r.pin.RLock()
	defer mw.r.pin.RUnlock()
	return mw.r.qp
}

// BindMW binds a type 1 window (an immediate verb; V00 §7.10.1 checks):
// the region Valid, VA-based, with AccessMWBind; window, region and QP on
// one PD; remote rights only, Remote Write needing the region's Local
// Write and Remote Read its Local Read; the range inside the region. A
// bound type 1 window may be bound again on the same region. It returns the
// window's new STag.
func (qp *QP) BindMW(b Bind) (STag, error) {
	if b.MW == nil || b.MR == nil {
		return 0, fmt.Errorf("%w: Bind without a window or a region", ErrInvalidWR)
	}
	if b.MW.r.mwType != MWType1 {
		return 0, fmt.Errorf("%w: type 2 windows are bound by a Bind work request", ErrInvalidWR)
	}
	st, err := qp.bind(&b)
	if err != nil {
		return 0, err
	}
	return st, nil
}

// bind performs a binding; the error's status is what a Bind WR completes
// with.
func (qp *QP) bind(b *Bind) (STag, *bindError) {
	w, mr := b.MW.r, b.MR
	if w == mr || mr.mwType != 0 {
		return 0, bindErr(StatusInvalidWindow, "a window cannot be bound to a window")
	}
	// Lock order: region, then window (as MR.Invalidate).
	mr.pin.Lock()
	defer mr.pin.Unlock()
	w.pin.Lock()
	defer w.pin.Unlock()
	switch {
	case w.dead:
		return 0, bindErr(StatusInvalidSTag, "window deallocated")
	case w.mwType == MWType2 && w.valid:
		return 0, bindErr(StatusInvalidWindow, "type 2 window is already bound")
	case w.mwType == MWType1 && w.valid && w.parent != mr:
		return 0, bindErr(StatusInvalidWindow, "type 1 window is bound to another region")
	case !mr.valid:
		return 0, bindErr(StatusInvalidSTag, "region is not Valid")
	case mr.access&AccessMWBind == 0:
		return 0, bindErr(StatusAccessViolation, "region does not allow window binding")
	case mr.zero:
		return 0, bindErr(StatusInvalidWindow, "region is zero-based")
	case w.pd != mr.pd || w.pd != qp.pd || mr.qp != nil && mr.qp != qp:
		return 0, bindErr(StatusInvalidPD, "window, region and QP are not on one PD")
	case b.Access&^(AccessRemoteRead|AccessRemoteWrite) != 0 || b.Access == 0:
		return 0, bindErr(StatusAccessViolation, "a window takes one or both remote rights only")
	case b.Access&AccessRemoteWrite != 0 && mr.access&AccessLocalWrite == 0,
		b.Access&AccessRemoteRead != 0 && mr.access&AccessLocalRead == 0:
		return 0, bindErr(StatusAccessViolation, "window rights not backed by the region's local rights")
	case b.Addr+b.Length < b.Addr:
		return 0, bindErr(StatusWrapError, "window range wraps")
	case b.Addr < mr.base || b.Addr+b.Length > mr.base+uint64(len(mr.buf)):
		return 0, bindErr(StatusBaseBounds, "window range outside the region")
	}
	key := b.Key
	if key == 0 {
		key = w.key + w.pd.dev.keyStep
		if key == 0 {
			key += w.pd.dev.keyStep
		}
	}
	off := b.Addr - mr.base
	w.buf = mr.buf[off : off+b.Length : off+b.Length]
	w.base, w.access, w.key, w.valid, w.parent = b.Addr, b.Access, key, true, mr
	if w.mwType == MWType2 {
		w.qp = qp
	}
	if mr.wins == nil {
		mr.wins = map[*MR]struct{}{}
	}
	mr.wins[w] = struct{}{}
	d := w.pd.dev
	d.mu.Lock()
	d.lastKey[w.slot] = key
	d.mu.Unlock()
	return STag(w.index<<8 | uint32(key)), nil
}

type bindError struct {
	st     Status
	reason string
}

func (e *bindError) Error() string { return "endpoint: bind: " + e.reason }
func (e *bindError) Unwrap() error { return ErrInvalidWR }

func bindErr(st Status, reason string) *bindError { return &bindError{st, reason} }

// lockAll locks r's pin, and for a bound window first its region's (the
// lock order is region, then window, as in MR.Invalidate and bind). It
// returns the region locked, for unlockAll and invalidateLocked.
func (r *MR) lockAll() *MR {
	if r.mwType == 0 {
		r.pin.Lock()
		return nil
	}
	for {
		r.pin.RLock()
		p := r.parent
		r.pin.RUnlock()
		if p != nil {
			p.pin.Lock()
		}
		r.pin.Lock()
		if r.parent == p {
			return p
		}
		r.pin.Unlock()
		if p != nil {
			p.pin.Unlock()
		}
	}
}

func (r *MR) unlockAll(p *MR) {
	r.pin.Unlock()
	if p != nil {
		p.pin.Unlock()
	}
}

// invalidateLocked makes a region or window Invalid (locked by lockAll,
// which returned p): a window leaves its region.
func (r *MR) invalidateLocked(p *MR) {
	r.valid = false
	if r.mwType != 0 {
		r.parent, r.buf = nil, nil
		if p != nil {
			delete(p.wins, r)
		}
	}
}

// Invalidate invalidates a type 2 window locally (as Invalidate Local
// STag); type 1 windows end only by binding again or deallocating.
func (mw *MW) Invalidate() error {
	if mw.r.mwType != MWType2 {
		return fmt.Errorf("%w: type 1 windows are not invalidated", ErrInvalidWR)
	}
	p := mw.r.lockAll()
	mw.r.invalidateLocked(p)
	mw.r.unlockAll(p)
	return nil
}

// Dealloc deallocates the window: its STag stops working at once (accesses
// in flight end first) and its index may be reused under a fresh key.
func (mw *MW) Dealloc() error {
	r := mw.r
	p := r.lockAll()
	if r.dead {
		r.unlockAll(p)
		return ErrInvalidSTag
	}
	r.invalidateLocked(p)
	r.dead = true
	r.unlockAll(p)
	r.freeSlot()
	return nil
}

// localInvalidate runs an Invalidate Local STag work request (V00 §7.8):
// a region of the QP's PD without windows bound, or a type 2 window of this
// QP (or an Invalid one of its PD).
func (qp *QP) localInvalidate(stag STag) *bindError {
	r := qp.dev.find(stag)
	if r == nil || stag == 0 {
		return bindErr(StatusInvalidSTag, fmt.Sprintf("Invalidate Local STag %v: unknown", stag))
	}
	p := r.lockAll()
	defer r.unlockAll(p)
	switch {
	case r.key != stag.Key() || r.dead:
		return bindErr(StatusInvalidSTag, fmt.Sprintf("Invalidate Local STag %v: key", stag))
	case r.mwType == MWType1:
		return bindErr(StatusInvalidWindow, "type 1 windows are not invalidated")
	case r.shared != nil:
		return bindErr(StatusInvalidRegion, "a shared region is always Valid (V00 §7.5)")
	case r.pd != qp.pd, r.valid && r.qp != nil && r.qp != qp:
		return bindErr(StatusInvalidPD, fmt.Sprintf("Invalidate Local STag %v: another PD or QP", stag))
	case len(r.wins) > 0:
		return bindErr(StatusAccessViolation, "region has windows bound")
	}
	r.invalidateLocked(p)
	return nil
}

// Rereg is RI-Reregister with new rights and, when buf is not nil, a new
// range (V00 §7.7): the region becomes Valid under a fresh key with access
// and buf (VA-based regions take the new buffer's address unless opt.VA
// says otherwise); the old STag stops working once Rereg returns, after any
// access in flight through it ended. Windows must not be bound.
func (mr *MR) Rereg(key uint8, access Access, buf []byte, opt *MROptions) (STag, error) {
	if !validAccess(access) {
		return 0, fmt.Errorf("%w: %v", ErrInvalidAccess, access)
	}
	mr.pin.Lock()
	defer mr.pin.Unlock()
	if mr.dead || mr.mwType != 0 || mr.shared != nil {
		return 0, ErrInvalidSTag
	}
	if len(mr.wins) > 0 {
		return 0, fmt.Errorf("%w: memory windows bound to the region", ErrResourceBusy)
	}
	if key == 0 {
		key = mr.key + mr.pd.dev.keyStep
		if key == 0 {
			key += mr.pd.dev.keyStep
		}
	}
	if key == mr.key {
		return 0, fmt.Errorf("%w: reregistering needs a fresh key", ErrInvalidWR)
	}
	if buf != nil {
		base := uint64(0)
		zero := opt != nil && opt.ZeroBased
		if !zero {
			if opt != nil && opt.VA != 0 {
				base = opt.VA
			} else if len(buf) > 0 {
				base = uint64(uintptr(unsafe.Pointer(&buf[0])))
			}
			if base+uint64(len(buf)) < base {
				return 0, fmt.Errorf("endpoint: region at VA 0x%x wraps", base)
			}
		}
		mr.buf, mr.base, mr.zero = buf, base, zero
	}
	mr.access, mr.key, mr.valid = access, key, true
	d := mr.pd.dev
	d.mu.Lock()
	d.lastKey[mr.slot] = key
	d.mu.Unlock()
	return STag(mr.index<<8 | uint32(key)), nil
}

// RegisterSharedMR registers another STag for the memory of mr (V00 §7.5
// Register Shared Memory Region) with its own rights (at most what mr
// allows) on pd, which may differ from mr's. A shared region is always
// Valid: it cannot be invalidated, locally or by a peer, only
// deregistered; and it goes when mr is deregistered.
func (pd *PD) RegisterSharedMR(mr *MR, access Access, opt *MROptions) (*MR, error) {
	mr.pin.RLock()
	buf, base, zero, macc, ok := mr.buf, mr.base, mr.zero, mr.access, mr.valid && mr.mwType == 0
	mr.pin.RUnlock()
	if !ok {
		return nil, ErrInvalidSTag
	}
	if access&^macc != 0 {
		return nil, fmt.Errorf("%w: %v is more than the region's %v", ErrInvalidAccess, access, macc)
	}
	o := MROptions{ZeroBased: zero, VA: base}
	if opt != nil {
		o.Key, o.QP = opt.Key, opt.QP
	}
	s, err := pd.RegisterMR(buf, access, &o)
	if err != nil {
		return nil, err
	}
	s.shared = mr
	return s, nil
}
