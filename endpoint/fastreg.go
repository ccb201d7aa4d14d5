package endpoint

import (
	"fmt"
	"unsafe"
)

// AllocMR allocates a Non-Shared region STag with no memory, in the Invalid
// state (V00 §7.6 Allocate Non-Shared Memory Region STag): a Fast-Register
// work request on a privileged QP of pd (QPAttr.Privileged) makes it Valid
// over at most maxLen octets. opt.QP scopes it to one QP; opt.Key is its
// first key; ZeroBased and VA are given by each Fast-Register.
func (pd *PD) AllocMR(maxLen int, opt *MROptions) (*MR, error) {
	if maxLen <= 0 || maxLen > pd.dev.attr.MaxMsgLen {
		return nil, fmt.Errorf("%w: region of %d octets", ErrInvalidWR, maxLen)
	}
	o, err := pd.mrOptions(opt)
	if err != nil {
		return nil, err
	}
	mr := &MR{pd: pd, qp: o.QP, maxLen: maxLen}
	if err := pd.dev.install(mr, o.Key); err != nil {
		return nil, err
	}
	return mr, nil
}

// FastReg describes a Fast-Register Non-Shared MR work request (V00 §7.6,
// §9.3.1): the Invalid region MR (from AllocMR) becomes Valid over Buf (the
// PBL and first-byte offset of V00, as a Go slice) with Access, under Key.
type FastReg struct {
	MR     *MR
	Buf    []byte
	Access Access
	// ZeroBased makes Buf's first octet tagged offset 0; otherwise it is
	// VA, or Buf's address when VA is 0.
	ZeroBased bool
	VA        uint64
	// Key is the region's new STag key; 0 picks the next one. It must
	// differ from the key the STag carried last, so that an STag given out
	// before does not name the new memory (RFC 5042 §6.3.4).
	Key uint8
}

// validAccess is V00 Fig. 18: at least one local right; Remote Write and
// Remote Atomic (RFC 7306) need Local Write, Remote Read needs Local Read.
func validAccess(a Access) bool {
	return a&(AccessLocalRead|AccessLocalWrite) != 0 &&
		(a&(AccessRemoteWrite|AccessRemoteAtomic) == 0 || a&AccessLocalWrite != 0) &&
		(a&AccessRemoteRead == 0 || a&AccessLocalRead != 0)
}

// fastReg runs a Fast-Register work request in SQ order (V00 §8.2.2: it
// takes effect before later WRs execute); the error's status is the
// completion status.
func (qp *QP) fastReg(fr *FastReg) *bindError {
	mr := fr.MR
	if !qp.attr.Privileged {
		return bindErr(StatusNotPrivileged, "Fast-Register on a QP that is not privileged")
	}
	if !validAccess(fr.Access) || fr.Access&^(AccessAll|AccessMWBind|AccessRemoteAtomic) != 0 {
		return bindErr(StatusInvalidAccessRights, fmt.Sprintf("Fast-Register with rights %v", fr.Access))
	}
	base := uint64(0)
	if !fr.ZeroBased {
		base = fr.VA
		if base == 0 && len(fr.Buf) > 0 {
			base = uint64(uintptr(unsafe.Pointer(&fr.Buf[0])))
		}
		if base+uint64(len(fr.Buf)) < base {
			return bindErr(StatusInvalidVA, fmt.Sprintf("Fast-Register at VA 0x%x wraps", base))
		}
	}
	mr.pin.Lock()
	defer mr.pin.Unlock()
	switch {
	case mr.dead:
		return bindErr(StatusInvalidSTag, "Fast-Register of a deallocated STag")
	case mr.maxLen == 0:
		return bindErr(StatusInvalidRegion, "Fast-Register of an STag not allocated by AllocMR")
	case mr.pd != qp.pd || mr.qp != nil && mr.qp != qp:
		return bindErr(StatusInvalidPD, "Fast-Register of a region of another PD or QP")
	case mr.valid:
		return bindErr(StatusSTagNotInvalid, "Fast-Register of a Valid STag")
	case len(fr.Buf) > mr.maxLen:
		return bindErr(StatusInvalidLength, fmt.Sprintf("Fast-Register of %d octets, allocated for %d", len(fr.Buf), mr.maxLen))
	}
	d := mr.pd.dev
	key := fr.Key
	d.mu.Lock()
	defer d.mu.Unlock()
	if key == 0 {
		key = mr.key + d.keyStep
		if key == 0 {
			key += d.keyStep
		}
	}
	if key == d.lastKey[mr.slot] {
		return bindErr(StatusInvalidSTag, "Fast-Register needs a fresh key")
	}
	mr.buf, mr.base, mr.zero, mr.access, mr.key, mr.valid = fr.Buf, base, fr.ZeroBased, fr.Access, key, true
	d.lastKey[mr.slot] = key
	return nil
}
