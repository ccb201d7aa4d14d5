package endpoint

import (
	crand "crypto/rand"
	"fmt"
	"math/rand/v2"
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

// AsyncEventType names an asynchronous event (V00 §8.3.1, Figs. 24, 25,
// 37). Affiliated events carry the QP; unaffiliated ones (a CQ, an SRQ, a
// Listener, the device) carry no QP and also go to Device.Events.
type AsyncEventType uint8

const (
	EventLLPCloseComplete AsyncEventType = iota + 1 // normal close finished, QP Idle
	EventTerminateReceived
	// EventTerminateSent is the affiliated asynchronous error an incoming
	// segment or a local failure not reported in a completion caused: its
	// V00 identifier is the Terminate cause, in Err (a *TerminateError).
	EventTerminateSent
	EventBadClose    // LLP closed with work outstanding, or data while Closing, or an LLP error after a Modify or completion error took the QP to Terminate
	EventLLPConnLost // LLP failure (or final timeout), QP in Error
	EventErrorStateEntered
	EventSRQLimitReached // unaffiliated with a QP: AsyncEvent.SRQ fell below its limit
	EventLLPConnReset    // an incoming LLP Reset (TCP RST), QP in Error
	EventRQLimitReached  // the QP's RQ fell below its limit (QP.SetRQLimit)
	EventCQOverflow      // unaffiliated: AsyncEvent.CQ lost a completion (V00 §5.3, Fig. 37)
	EventListenerError   // unaffiliated: a connection the Listener was accepting failed before any QP (Config.Device)
)

var eventNames = [...]string{"", "LLPCloseComplete", "TerminateReceived", "TerminateSent", "BadClose",
	"LLPConnectionLost", "ErrorStateEntered", "SRQLimitReached", "LLPConnectionReset", "RQLimitReached",
	"CQOverflow", "ListenerError"}

func (t AsyncEventType) String() string {
	if t > 0 && int(t) < len(eventNames) {
		return eventNames[t]
	}
	return fmt.Sprintf("AsyncEventType(%d)", uint8(t))
}

// AsyncEvent is one asynchronous event.
type AsyncEvent struct {
	Type     AsyncEventType
	QP       *QP
	SRQ      *SRQ      // EventSRQLimitReached
	CQ       *CQ       // EventCQOverflow
	Listener *Listener // EventListenerError
	State    QPState
	Err      error
}

// Events is the device's unaffiliated event channel (V00 §8.3.1, Fig. 25):
// events that concern no QP (EventSRQLimitReached, EventCQOverflow,
// EventListenerError). It holds 64; while it is full, further events are
// not queued (DroppedEvents counts them), so a consumer that does not read
// never blocks the engines. DeviceAttr.AsyncEvent gets them too.
func (d *Device) Events() <-chan AsyncEvent { return d.events }

// DroppedEvents is how many unaffiliated events found Events full.
func (d *Device) DroppedEvents() uint64 { return d.dropped.Load() }

// unaffiliated delivers an event that concerns no QP.
func (d *Device) unaffiliated(e AsyncEvent) {
	select {
	case d.events <- e:
	default:
		d.dropped.Add(1)
	}
	if h := d.attr.AsyncEvent; h != nil {
		h(e)
	}
}

// Device is an opened soft RNIC: the scope of PDs, CQs, QPs and the STag
// table (V00 §5.1).
//
// STags are not predictable (RFC 5040 §8.1.1 item 8, RFC 5042 §6.3.4): the
// 24-bit index is a table slot run through a per-device random permutation,
// the first key of a slot is random, and a reused slot's key steps by a
// per-device random odd amount, so an index comes back only with a fresh key
// and a given STag only after its slot served 256 regions. Freed slots are
// reused oldest first, and only once at least minFree are free (or the table
// is full), so a stale STag stays stale for a long time.
type Device struct {
	attr DeviceAttr

	mu      sync.RWMutex // guards mrs, lastKey, free, nextPD, qps
	mrs     []*MR        // by slot
	lastKey []uint8      // key last used in each slot
	used    []bool       // slot ever used (lastKey is meaningful)
	free    []uint32     // freed slots, oldest first
	nextPD  uint32
	nextQP  atomic.Uint32
	nQP     atomic.Int32
	qps     map[*QP]struct{}
	perm    [4]uint32 // round keys of the index permutation
	keyStep uint8
	rnd     *rand.ChaCha8
	plain   bool // tests: index = slot, key sequence 1, 2, 3...
	events  chan AsyncEvent
	dropped atomic.Uint64

	// atomicMu serializes the RFC 7306 Atomic Operations of every stream
	// of the device (RFC 7306 §5.3).
	atomicMu sync.Mutex
}

const minFree = 1024

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
	var seed [32]byte
	crand.Read(seed[:])
	d := &Device{attr: attr, rnd: rand.NewChaCha8(seed), qps: map[*QP]struct{}{}, events: make(chan AsyncEvent, 64)}
	for i := range d.perm {
		d.perm[i] = uint32(d.rnd.Uint64())
	}
	d.keyStep = uint8(d.rnd.Uint64()) | 1
	return d
}

// Attr returns the device limits in force.
func (d *Device) Attr() DeviceAttr { return d.attr }

// feistel is a 4-round Feistel network on 24 bits: a bijection from slots to
// STag indices keyed by the device's random round keys.
func (d *Device) feistel(x uint32, inverse bool) uint32 {
	if d.plain {
		return x
	}
	l, r := x>>12&0xFFF, x&0xFFF
	f := func(v, k uint32) uint32 {
		h := (v ^ k) * 0x9E3779B1
		return (h ^ h>>15) & 0xFFF
	}
	if !inverse {
		for _, k := range d.perm {
			l, r = r, l^f(r, k)
		}
	} else {
		for i := len(d.perm) - 1; i >= 0; i-- {
			l, r = r^f(l, d.perm[i]), l
		}
	}
	return l<<12 | r
}

// slotOf maps an STag index back to its slot.
func (d *Device) slotOf(idx uint32) uint32 { return d.feistel(idx, true) }

// PD is a protection domain (V00 §5.2). What a PD shares: every QP of the PD
// may use, for local work requests and for its peer's tagged access, every
// region of the PD that is not bound to a QP (MROptions.QP); a region bound
// to a QP serves that QP's stream only (RFC 5040 §8.1.1 item 3, RFC 5042
// §5.2: "STag … associated with a stream"), locally and remotely. Regions of
// another PD are never reachable.
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
	// QP, when set, scopes the region to that QP's stream: other QPs of the
	// PD can neither use it locally nor let their peers access or
	// invalidate it (RFC 5040 §8.1.1 item 3; RFC 5042 §6.1.1). The QP must be
	// of the same PD.
	QP *QP
}

// MR is a registered memory region: STag → buffer, base TO, length and
// access rights (V00 §7.3).
type MR struct {
	pd     *PD
	qp     *QP // stream scope, nil for PD scope
	buf    []byte
	base   uint64
	zero   bool
	access Access
	slot   uint32
	index  uint32
	sync   atomic.Uint64
	placed placed // inbound RDMA Writes placed (placed.go)
	// pin is held shared while the engines move octets into or out of buf
	// on a peer's behalf, and exclusively to revoke: Invalidate and
	// Deregister return only after every access in flight ended, and no
	// access starts after them (RFC 5042 §6.2.2, §6.3.3).
	pin sync.RWMutex
	// Guarded by pin:
	key   uint8
	valid bool
	dead  bool
	// Memory windows: for a window, its type and (while bound) the region
	// it is bound to; for a region, the windows bound to it.
	mwType MWType
	parent *MR
	wins   map[*MR]struct{}
	shared *MR // a shared region: the region whose memory it names (immutable)
	maxLen int // AllocMR: the most a Fast-Register may register (immutable; 0 otherwise)
}

// mrOptions is opt (nil: the defaults) for a region of pd: a QP scope must
// name a QP of the same PD.
func (pd *PD) mrOptions(opt *MROptions) (MROptions, error) {
	var o MROptions
	if opt != nil {
		o = *opt
	}
	if o.QP != nil && o.QP.pd != pd {
		return o, fmt.Errorf("%w: QP scope with a QP of another PD", ErrInvalidWR)
	}
	return o, nil
}

// RegisterMR registers buf with the given rights. At least one local right
// is required, Remote Write and Remote Atomic require Local Write, Remote
// Read requires Local Read (V00 §7.4, Fig. 18). The MR is Valid when it
// returns.
func (pd *PD) RegisterMR(buf []byte, access Access, opt *MROptions) (*MR, error) {
	if !validAccess(access) {
		return nil, fmt.Errorf("%w: %v", ErrInvalidAccess, access)
	}
	o, err := pd.mrOptions(opt)
	if err != nil {
		return nil, err
	}
	mr := &MR{pd: pd, qp: o.QP, buf: buf, access: access, zero: o.ZeroBased, valid: true}
	if !o.ZeroBased {
		mr.base = o.VA
		if mr.base == 0 && len(buf) > 0 {
			mr.base = uint64(uintptr(unsafe.Pointer(&buf[0])))
		}
		if mr.base+uint64(len(buf)) < mr.base {
			return nil, fmt.Errorf("endpoint: region at VA 0x%x wraps", mr.base)
		}
	}
	if err := pd.dev.install(mr, o.Key); err != nil {
		return nil, err
	}
	return mr, nil
}

// install gives r (a region or a window) a table slot and a key (want, if
// the consumer chose one: allocSlotLocked) and enters it in the table.
func (d *Device) install(r *MR, want uint8) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	slot, key, err := d.allocSlotLocked(want)
	if err != nil {
		return err
	}
	r.slot, r.index, r.key = slot, d.feistel(slot, false), key
	d.mrs[slot] = r
	d.lastKey[slot], d.used[slot] = key, true
	return nil
}

// allocSlotLocked picks a table slot and a key for a new region: a fresh
// slot while fewer than minFree are free, else the oldest freed one, with a
// key it did not carry last (want, when the consumer chose one that is
// fresh for the slot; else the next in the slot's sequence).
func (d *Device) allocSlotLocked(want uint8) (uint32, uint8, error) {
	full := len(d.mrs)-len(d.free) >= d.attr.MaxMR
	if full {
		return 0, 0, ErrTooManyQPs
	}
	grow := len(d.mrs) < 1<<24 && (len(d.free) < minFree || d.plain && len(d.free) == 0)
	if d.plain && len(d.free) > 0 {
		grow = false
	}
	if !grow && len(d.free) > 0 {
		for i, slot := range d.free {
			key := want
			if key == 0 {
				key = d.lastKey[slot] + d.keyStep
				if d.plain {
					key = d.lastKey[slot] + 1
				}
				if key == 0 {
					key += d.keyStep
				}
			}
			if key == d.lastKey[slot] {
				continue // the consumer's key is not fresh for this slot
			}
			d.free = append(d.free[:i], d.free[i+1:]...)
			return slot, key, nil
		}
	}
	if len(d.mrs) >= 1<<24 {
		return 0, 0, ErrTooManyQPs
	}
	for {
		slot := uint32(len(d.mrs))
		d.mrs = append(d.mrs, nil)
		d.lastKey = append(d.lastKey, 0)
		d.used = append(d.used, false)
		if d.feistel(slot, false) == 0 {
			d.used[slot] = true // index 0 is never used (STag 0 is special)
			continue
		}
		key := want
		if key == 0 {
			key = uint8(d.rnd.Uint64())
			if d.plain {
				key = 1
			}
			if key == 0 {
				key = 1
			}
		}
		return slot, key, nil
	}
}

// STag is the region's current STag (index and key); it serves as both
// local and remote key.
func (mr *MR) STag() STag {
	mr.pin.RLock()
	defer mr.pin.RUnlock()
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

// QP is the QP the region is scoped to, nil when the whole PD shares it.
func (mr *MR) QP() *QP { return mr.qp }

// Valid reports whether the STag is Valid (not invalidated or deregistered).
func (mr *MR) Valid() bool {
	mr.pin.RLock()
	defer mr.pin.RUnlock()
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
// Invalidating an Invalid STag is allowed (V00 §7.8). It returns once no
// placement into, or Read Response from, the region is in flight; after it
// the memory is the consumer's again (RFC 5042 §6.2.2, §6.3.3).
func (mr *MR) Invalidate() {
	if mr.shared != nil {
		return // a shared region is always Valid (V00 §7.5)
	}
	mr.pin.Lock()
	mr.valid = false
	wins := mr.wins
	mr.wins = nil
	mr.pin.Unlock()
	// Windows bound to the region lose their memory with it.
	for w := range wins {
		w.pin.Lock()
		if w.parent == mr {
			w.valid, w.parent, w.buf = false, nil, nil
		}
		w.pin.Unlock()
	}
}

// Reregister makes the region Valid again under a new key (0 picks one),
// as RI-Reregister does; the old STag no longer works. The key must differ
// from the current one. (Rereg also changes rights and range.)
func (mr *MR) Reregister(key uint8) (STag, error) {
	mr.pin.RLock()
	acc := mr.access
	mr.pin.RUnlock()
	return mr.Rereg(key, acc, nil, nil)
}

// Deregister removes the region, after any access in flight ended (as
// Invalidate); the index may later be reused under another key.
func (mr *MR) Deregister() error {
	mr.pin.Lock()
	if mr.dead {
		mr.pin.Unlock()
		return ErrInvalidSTag
	}
	if len(mr.wins) > 0 {
		mr.pin.Unlock()
		return fmt.Errorf("%w: %d memory windows bound to the region", ErrResourceBusy, len(mr.wins))
	}
	mr.dead, mr.valid = true, false
	mr.pin.Unlock()
	mr.freeSlot()
	return nil
}

// freeSlot returns a dead region's or window's table slot (reused later,
// oldest first, under a fresh key).
func (mr *MR) freeSlot() {
	d := mr.pd.dev
	d.mu.Lock()
	d.mrs[mr.slot] = nil
	d.free = append(d.free, mr.slot)
	d.mu.Unlock()
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

// find returns the region an STag index names, nil if none.
func (d *Device) find(stag STag) *MR {
	idx := stag.Index()
	if idx == 0 {
		return nil
	}
	slot := d.slotOf(idx)
	d.mu.RLock()
	var mr *MR
	if int(slot) < len(d.mrs) {
		mr = d.mrs[slot]
	}
	d.mu.RUnlock()
	if mr != nil && mr.index != idx {
		return nil
	}
	return mr
}

// lookup resolves stag for qp with rights need over [to, to+n). On success
// the region is pinned (mr.pin held shared) and the caller must call
// mr.unpin() once done with the returned n octets; on failure nothing is
// held. Zero-length accesses are not checked at all by the callers (V00
// §7.4; RFC 5041 §5.2).
func (d *Device) lookup(stag STag, qp *QP, need Access, to, n uint64) (*MR, []byte, accessErr) {
	return d.lookupPD(stag, qp.pd, qp, need, to, n)
}

// lookupPD is lookup for pd and, when qp is nil, no stream: a QP-scoped
// region or a type 2 window then fails the stream check (an SRQ's buffers).
func (d *Device) lookupPD(stag STag, pd *PD, qp *QP, need Access, to, n uint64) (*MR, []byte, accessErr) {
	mr := d.find(stag)
	if mr == nil {
		return nil, nil, accInvalidSTag
	}
	mr.pin.RLock()
	if mr.key != stag.Key() || !mr.valid {
		mr.pin.RUnlock()
		return nil, nil, accInvalidSTag
	}
	if o := mr.shared; o != nil {
		// A shared region's memory lives as long as the region it shares:
		// hold that one too (lock order: the shared STag, then its
		// original; nothing takes them the other way round).
		o.pin.RLock()
		if o.dead {
			o.pin.RUnlock()
			mr.pin.RUnlock()
			return nil, nil, accInvalidSTag
		}
		o.sync.Load()
	}
	mr.sync.Load()
	e := accOK
	switch {
	case mr.pd != pd || mr.qp != nil && mr.qp != qp:
		e = accPD
	case mr.mwType != 0 && need&(AccessLocalRead|AccessLocalWrite) != 0:
		e = accRights // windows are not allowed in local SGLs (V00 §8.1.1)
	case mr.access&need != need:
		e = accRights
	case to+n < to:
		e = accWrap
	case to < mr.base || to+n > mr.base+uint64(len(mr.buf)):
		e = accBounds
	}
	if e != accOK {
		mr.unpin()
		return mr, nil, e
	}
	off := to - mr.base
	return mr, mr.buf[off : off+n : off+n], accOK
}

// check is lookup without keeping the pin: for local SGEs, whose memory the
// consumer owns, and for validation before the access.
func (d *Device) check(stag STag, qp *QP, need Access, to, n uint64) (*MR, []byte, accessErr) {
	mr, b, e := d.lookup(stag, qp, need, to, n)
	if e == accOK {
		mr.unpin()
	}
	return mr, b, e
}

func (mr *MR) unpin() {
	if o := mr.shared; o != nil {
		o.pin.RUnlock()
	}
	mr.pin.RUnlock()
}

// pinKey pins the region if it is still Valid under stag.
func (mr *MR) pinKey(stag STag) bool {
	mr.pin.RLock()
	if !mr.valid || mr.key != stag.Key() {
		mr.pin.RUnlock()
		return false
	}
	if o := mr.shared; o != nil {
		o.pin.RLock()
		if o.dead {
			o.pin.RUnlock()
			mr.pin.RUnlock()
			return false
		}
	}
	return true
}

// checkPD is lookupPD without keeping the pin.
func (d *Device) checkPD(stag STag, pd *PD, qp *QP, need Access, to, n uint64) (*MR, []byte, accessErr) {
	mr, b, e := d.lookupPD(stag, pd, qp, need, to, n)
	if e == accOK {
		mr.unpin()
	}
	return mr, b, e
}

// invalidateRemote performs the checks of an incoming Send with Invalidate
// (V00 §7.8): a known Non-Shared MR of this PD (and of this QP's stream when
// the region is QP-scoped), not STag 0, matching key, with a remote right.
// Invalidating an STag that is already Invalid is allowed.
func (d *Device) invalidateRemote(stag STag, qp *QP) accessErr {
	mr := d.find(stag)
	if mr == nil {
		return accInvalidSTag
	}
	p := mr.lockAll()
	defer mr.unlockAll(p)
	if mr.key != stag.Key() || mr.dead {
		return accInvalidSTag
	}
	if mr.pd != qp.pd || mr.qp != nil && mr.qp != qp && mr.valid {
		return accPD
	}
	if mr.access&(AccessRemoteRead|AccessRemoteWrite) == 0 || mr.mwType == MWType1 || len(mr.wins) > 0 || mr.shared != nil {
		// Type 1 windows are not invalidated by a peer; a region with
		// windows bound cannot be invalidated (V00 §7.8).
		return accRights
	}
	mr.invalidateLocked(p)
	return accOK
}
