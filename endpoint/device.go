package endpoint

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"
)

// DeviceAttr holds the limits of a Device (V00 §5.1 Query RNIC). Zero fields
// take the defaults in parentheses.
type DeviceAttr struct {
	MaxMR     int // registered regions (1<<20)
	MaxQP     int // queue pairs (4096)
	MaxCQE    int // entries per CQ (1<<20)
	MaxWR     int // work requests per SQ or RQ (16384)
	MaxSGE    int // SGEs per work request (32)
	MaxIRD    int // inbound RDMA Read queue depth per QP (128)
	MaxORD    int // outbound RDMA Read queue depth per QP (128)
	MaxMsgLen int // largest message (1<<31)
	// AsyncEvent, when set, receives the affiliated asynchronous events of
	// every QP of the device (state changes, Terminates, LLP close). It is
	// called from the QP's engine goroutines and must not block for long.
	AsyncEvent func(AsyncEvent)
}

// AsyncEventType names an affiliated asynchronous event (V00 §8.3).
type AsyncEventType uint8

const (
	EventLLPCloseComplete AsyncEventType = iota + 1 // normal close finished, QP Idle
	EventTerminateReceived
	EventTerminateSent
	EventBadClose    // LLP closed with work outstanding, or data while Closing
	EventLLPConnLost // LLP failure, QP in Error
	EventErrorStateEntered
)

func (t AsyncEventType) String() string {
	switch t {
	case EventLLPCloseComplete:
		return "LLPCloseComplete"
	case EventTerminateReceived:
		return "TerminateReceived"
	case EventTerminateSent:
		return "TerminateSent"
	case EventBadClose:
		return "BadClose"
	case EventLLPConnLost:
		return "LLPConnectionLost"
	case EventErrorStateEntered:
		return "ErrorStateEntered"
	}
	return fmt.Sprintf("AsyncEventType(%d)", uint8(t))
}

// AsyncEvent is one affiliated asynchronous event.
type AsyncEvent struct {
	Type  AsyncEventType
	QP    *QP
	State QPState
	Err   error
}

// Device is an opened soft RNIC: the scope of PDs, CQs, QPs and the STag
// table (V00 §5.1).
type Device struct {
	attr DeviceAttr

	mu     sync.RWMutex // guards mrs, free, every MR's valid/key/pd
	mrs    []*MR        // by STag index; index 0 is never used (STag 0 is special)
	free   []uint32
	nextPD uint32
	nextQP atomic.Uint32
	nQP    atomic.Int32
	keySeq atomic.Uint32
}

// OpenDevice opens a device with the given limits.
func OpenDevice(attr DeviceAttr) *Device {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&attr.MaxMR, 1<<20)
	def(&attr.MaxQP, 4096)
	def(&attr.MaxCQE, 1<<20)
	def(&attr.MaxWR, 16384)
	def(&attr.MaxSGE, 32)
	def(&attr.MaxIRD, 128)
	def(&attr.MaxORD, 128)
	def(&attr.MaxMsgLen, 1<<31)
	attr.MaxIRD = min(attr.MaxIRD, 0x3FFE) // 14 bits, 0x3FFF means "no negotiation"
	attr.MaxORD = min(attr.MaxORD, 0x3FFE)
	return &Device{attr: attr, mrs: make([]*MR, 1, 64)}
}

// Attr returns the device limits in force.
func (d *Device) Attr() DeviceAttr { return d.attr }

// PD is a protection domain (V00 §5.2).
type PD struct {
	dev *Device
	id  uint32
}

// AllocPD allocates a protection domain.
func (d *Device) AllocPD() *PD {
	d.mu.Lock()
	d.nextPD++
	id := d.nextPD
	d.mu.Unlock()
	return &PD{dev: d, id: id}
}

// ID is the PD's identifier.
func (pd *PD) ID() uint32 { return pd.id }

// Device returns the PD's device.
func (pd *PD) Device() *Device { return pd.dev }

// MROptions tunes RegisterMR.
type MROptions struct {
	// ZeroBased makes the region's first octet tagged offset 0 instead of
	// its virtual address (V00 §7.3).
	ZeroBased bool
	// VA is the virtual address to use for a VA-based region; 0 takes the
	// address of the buffer's first octet.
	VA uint64
	// Key is the 8-bit STag key; 0 picks one.
	Key uint8
}

// MR is a registered memory region: STag → buffer, base TO, length and
// access rights (V00 §7.3).
type MR struct {
	pd     *PD
	buf    []byte
	base   uint64
	zero   bool
	access Access
	index  uint32
	sync   atomic.Uint64
	// Guarded by pd.dev.mu:
	key   uint8
	valid bool
	dead  bool
}

// RegisterMR registers buf with the given rights. At least one local right
// is required, Remote Write requires Local Write and Remote Read requires
// Local Read (V00 §7.4, Fig. 18). The MR is Valid when it returns.
func (pd *PD) RegisterMR(buf []byte, access Access, opt *MROptions) (*MR, error) {
	if access&(AccessLocalRead|AccessLocalWrite) == 0 ||
		access&AccessRemoteWrite != 0 && access&AccessLocalWrite == 0 ||
		access&AccessRemoteRead != 0 && access&AccessLocalRead == 0 {
		return nil, fmt.Errorf("%w: %v", ErrInvalidAccess, access)
	}
	var o MROptions
	if opt != nil {
		o = *opt
	}
	d := pd.dev
	mr := &MR{pd: pd, buf: buf, access: access, zero: o.ZeroBased, valid: true}
	if !o.ZeroBased {
		mr.base = o.VA
		if mr.base == 0 && len(buf) > 0 {
			mr.base = uint64(uintptr(unsafe.Pointer(&buf[0])))
		}
		if mr.base+uint64(len(buf)) < mr.base {
			return nil, fmt.Errorf("endpoint: region at VA 0x%x wraps", mr.base)
		}
	}
	mr.key = o.Key
	if mr.key == 0 {
		mr.key = uint8(d.keySeq.Add(1))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if n := len(d.free); n > 0 {
		mr.index = d.free[n-1]
		d.free = d.free[:n-1]
		d.mrs[mr.index] = mr
	} else {
		if len(d.mrs) > d.attr.MaxMR || len(d.mrs) >= 1<<24 {
			return nil, ErrTooManyQPs
		}
		mr.index = uint32(len(d.mrs))
		d.mrs = append(d.mrs, mr)
	}
	return mr, nil
}

// STag is the region's current STag (index and key); it serves as both
// local and remote key.
func (mr *MR) STag() STag {
	mr.pd.dev.mu.RLock()
	defer mr.pd.dev.mu.RUnlock()
	return STag(mr.index<<8 | uint32(mr.key))
}

// Addr is the tagged offset of the region's first octet: its VA, or 0 for
// a zero-based region.
func (mr *MR) Addr() uint64 { return mr.base }

// Len is the region's length.
func (mr *MR) Len() int { return len(mr.buf) }

// Buf is the registered memory.
func (mr *MR) Buf() []byte { return mr.buf }

// Access is the region's rights.
func (mr *MR) Access() Access { return mr.access }

// PD is the region's protection domain.
func (mr *MR) PD() *PD { return mr.pd }

// Valid reports whether the STag is Valid (not invalidated or deregistered).
func (mr *MR) Valid() bool {
	mr.pd.dev.mu.RLock()
	defer mr.pd.dev.mu.RUnlock()
	return mr.valid
}

// Sync hands the region's memory over between the application and the
// engine: the application's writes before Sync happen before any later
// remote access (a peer's RDMA Read, a Read Response or Write placed into
// it), its reads before Sync happen before the engine overwrites the memory,
// and the engine's reads for RDMA Read Responses already sent happen before
// the application's accesses after Sync. Completions of the local work
// requests give the rest. Go's memory model needs this edge because the remote
// access is triggered by a peer over the network, which the model cannot
// see; without it, go test -race reports application accesses to memory
// exposed for RDMA.
func (mr *MR) Sync() { mr.sync.Add(1) }

// SGE returns an SGE for n octets at offset off of the region.
func (mr *MR) SGE(off, n int) SGE {
	return SGE{Addr: mr.base + uint64(off), Length: uint32(n), LKey: mr.STag()}
}

// Invalidate makes the STag Invalid (as Invalidate Local STag does).
// Invalidating an Invalid STag is allowed (V00 §7.8).
func (mr *MR) Invalidate() {
	mr.pd.dev.mu.Lock()
	mr.valid = false
	mr.pd.dev.mu.Unlock()
}

// Reregister makes the region Valid again under a new key (0 picks one),
// as RI-Reregister does; the old STag no longer works.
func (mr *MR) Reregister(key uint8) (STag, error) {
	d := mr.pd.dev
	if key == 0 {
		key = uint8(d.keySeq.Add(1))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if mr.dead {
		return 0, ErrInvalidSTag
	}
	mr.key, mr.valid = key, true
	return STag(mr.index<<8 | uint32(key)), nil
}

// Deregister removes the region; accesses in flight fail with a protection
// error and the index may be reused under another key.
func (mr *MR) Deregister() error {
	d := mr.pd.dev
	d.mu.Lock()
	defer d.mu.Unlock()
	if mr.dead {
		return ErrInvalidSTag
	}
	mr.dead, mr.valid = true, false
	d.mrs[mr.index] = nil
	d.free = append(d.free, mr.index)
	return nil
}

// accessErr is the outcome of an STag check, mapped to a Terminate code or
// a completion status by the caller.
type accessErr uint8

const (
	accOK accessErr = iota
	accInvalidSTag
	accPD
	accRights
	accBounds
	accWrap
)

func (e accessErr) String() string {
	return [...]string{"ok", "invalid STag", "PD mismatch", "access rights", "base/bounds", "TO wrap"}[e]
}

func (e accessErr) status() Status {
	return [...]Status{StatusSuccess, StatusInvalidSTag, StatusInvalidPD, StatusAccessViolation, StatusBaseBounds, StatusWrapError}[e]
}

// lookup resolves stag for pd with rights need over [to, to+n). It returns
// the region and the n octets it names. Zero-length accesses are not checked
// at all by the callers (V00 §7.4; RFC 5041 §5.2).
func (d *Device) lookup(stag STag, pd *PD, need Access, to, n uint64) (*MR, []byte, accessErr) {
	idx := stag.Index()
	d.mu.RLock()
	var mr *MR
	if idx != 0 && int(idx) < len(d.mrs) {
		mr = d.mrs[idx]
	}
	if mr == nil || mr.key != stag.Key() || !mr.valid {
		d.mu.RUnlock()
		return nil, nil, accInvalidSTag
	}
	d.mu.RUnlock()
	mr.sync.Load()
	if mr.pd != pd {
		return mr, nil, accPD
	}
	if mr.access&need != need {
		return mr, nil, accRights
	}
	if to+n < to {
		return mr, nil, accWrap
	}
	if to < mr.base || to+n > mr.base+uint64(len(mr.buf)) {
		return mr, nil, accBounds
	}
	off := to - mr.base
	return mr, mr.buf[off : off+n : off+n], accOK
}

// invalidateRemote performs the checks of an incoming Send with Invalidate
// (V00 §7.8): a known Non-Shared MR of this PD, not STag 0, matching key,
// with a remote right. Invalidating an STag that is already Invalid is
// allowed.
func (d *Device) invalidateRemote(stag STag, pd *PD) accessErr {
	idx := stag.Index()
	d.mu.Lock()
	defer d.mu.Unlock()
	var mr *MR
	if idx != 0 && int(idx) < len(d.mrs) {
		mr = d.mrs[idx]
	}
	if mr == nil || mr.key != stag.Key() {
		return accInvalidSTag
	}
	if mr.pd != pd {
		return accPD
	}
	if mr.access&(AccessRemoteRead|AccessRemoteWrite) == 0 {
		return accRights
	}
	mr.valid = false
	return accOK
}
