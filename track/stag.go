package track

import (
	"sort"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
)

// Role says how an STag was used.
type Role uint8

const (
	// RoleWriteSink: the target of RDMA Writes.
	RoleWriteSink Role = 1 << iota
	// RoleReadSink: a Read Request's SinkSTag, the target of Read Responses.
	RoleReadSink
	// RoleReadSource: a Read Request's SrcSTag.
	RoleReadSource
	// RoleAtomicTarget: the target of RFC 7306 Atomic Requests.
	RoleAtomicTarget
	// RoleInvalidated: named by a Send with Invalidate.
	RoleInvalidated
)

func (r Role) String() string {
	s := ""
	for i, n := range []string{"write-sink", "read-sink", "read-source", "atomic-target", "invalidated"} {
		if r&(1<<i) != 0 {
			if s != "" {
				s += ","
			}
			s += n
		}
	}
	return s
}

// MarshalText makes a Role print as its names in JSON.
func (r Role) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// STagInfo is what the capture shows about one STag. STags name memory of
// one side; the same 32-bit value on the two sides are two entries.
type STagInfo struct {
	// Owner is the side whose memory the STag names, by the direction
	// that side sends in (I2R: the Initiator's).
	Owner Dir
	STag  uint32
	Roles Role
	// MinTO and MaxTO bound the tagged offsets used: [MinTO, MaxTO).
	MinTO, MaxTO uint64
	// Bytes is the payload moved to or from it; Uses the messages naming it.
	Bytes uint64
	Uses  uint64
	// FirstFrame and LastFrame are the first and last frames naming it.
	FirstFrame, LastFrame int
	// Invalidated: a Send with Invalidate (frame InvalidatedFrame)
	// invalidated it and it was not advertised again since.
	Invalidated      bool
	InvalidatedFrame int
	Invalidations    int
}

type stagEnt struct {
	key      uint64
	info     STagInfo
	invSends uint64 // owner's Send count when invalidated
	used     bool
	hasRange bool
}

// stagTable is a bounded STag table: FIFO eviction when full.
type stagTable struct {
	m       map[uint64]int32
	ents    []stagEnt
	next    int
	limit   int
	lastKey uint64
	lastIdx int32
	evicted uint64
}

func stagKey(owner Dir, stag uint32) uint64 { return uint64(owner&1)<<32 | uint64(stag) }

func (t *stagTable) len() int { return len(t.m) }

// find returns the entry of key, or nil.
func (t *stagTable) find(key uint64) *stagEnt {
	if t.m == nil {
		return nil
	}
	if t.lastKey == key && int(t.lastIdx) < len(t.ents) && t.ents[t.lastIdx].used && t.ents[t.lastIdx].key == key {
		return &t.ents[t.lastIdx]
	}
	i, ok := t.m[key]
	if !ok {
		return nil
	}
	t.lastKey, t.lastIdx = key, i
	return &t.ents[i]
}

// get returns the entry of key, creating it; evicted reports that an old
// entry made room.
func (t *stagTable) get(key uint64) (e *stagEnt, evicted bool) {
	if e := t.find(key); e != nil {
		return e, false
	}
	if t.m == nil {
		t.m = make(map[uint64]int32)
	}
	var i int
	if len(t.ents) < t.limit {
		t.ents = append(t.ents, stagEnt{})
		i = len(t.ents) - 1
	} else {
		i = t.next
		t.next = (t.next + 1) % len(t.ents)
		delete(t.m, t.ents[i].key)
		t.evicted++
		evicted = true
	}
	t.ents[i] = stagEnt{key: key, used: true}
	t.ents[i].info.Owner = Dir(key >> 32)
	t.ents[i].info.STag = uint32(key)
	t.m[key] = int32(i)
	t.lastKey, t.lastIdx = key, int32(i)
	return &t.ents[i], evicted
}

// useSTag records a use of the owner's STag over [to, to+n).
func (c *conn) useSTag(at *At, owner Dir, stag uint32, role Role, to, n uint64) *stagEnt {
	e, ev := c.stags.get(stagKey(owner, stag))
	if ev {
		c.st.Overflow.STags++
		if c.once(NoDir, finding.TrackTableOverflow) {
			c.finding(finding.TrackTableOverflow, NoDir, at, 0, "more than %d STags on this connection: the oldest entries are dropped (Limits.STags)", c.stags.limit)
		}
	}
	in := &e.info
	if in.Uses == 0 && in.Roles == 0 {
		in.FirstFrame = at.Frame
	}
	in.Roles |= role
	in.Uses++
	in.LastFrame = at.Frame
	if n > 0 {
		end := to + n
		if end < to {
			end = ^uint64(0)
		}
		switch {
		case !e.hasRange:
			in.MinTO, in.MaxTO, e.hasRange = to, end, true
		default:
			in.MinTO = min(in.MinTO, to)
			in.MaxTO = max(in.MaxTO, end)
		}
		in.Bytes += n
	}
	return e
}

// checkInvalidated raises stag_invalidated_use when the owner's STag was
// invalidated by a Send with Invalidate and not advertised again (DDP-08,
// RD-08). A Send from the owner since then may have advertised it anew
// (fast-registration can reuse the value), so it clears the state.
func (c *conn) checkInvalidated(at *At, dir, owner Dir, stag uint32, what string) {
	e := c.stags.find(stagKey(owner, stag))
	if e == nil || !e.info.Invalidated {
		return
	}
	if c.d[owner].sends > e.invSends {
		e.info.Invalidated = false
		return
	}
	c.finding(finding.RDMAPSTagInvalidatedUse, dir, at, e.info.InvalidatedFrame, "%s uses STag 0x%x of the %s, invalidated by the Send with Invalidate of frame %d and not advertised since: the receiver answers Terminate 0x1/0x1/0x00 or 0x0/0x1/0x00 (RFC 5040 §5.3, V00 §7)", what, stag, owner.Sender(), e.info.InvalidatedFrame)
}

// advertise marks the owner's STag valid again: the owner named it in a
// request of its own (a Read Request's SinkSTag).
func (c *conn) advertise(owner Dir, stag uint32) {
	if e := c.stags.find(stagKey(owner, stag)); e != nil {
		e.info.Invalidated = false
	}
}

// invalidate records a Send with Invalidate from the peer of owner.
func (c *conn) invalidate(at *At, owner Dir, stag uint32) {
	e := c.useSTag(at, owner, stag, RoleInvalidated, 0, 0)
	e.info.Invalidated = true
	e.info.InvalidatedFrame = at.Frame
	e.info.Invalidations++
	e.invSends = c.d[owner].sends
}

// STags returns the STag table of a live connection, by owner and STag.
func (t *Tracker) STags(conn int) []STagInfo {
	c := t.conns[conn]
	if c == nil {
		return nil
	}
	out := make([]STagInfo, 0, len(c.stags.m))
	for _, i := range c.stags.m {
		out = append(out, c.stags.ents[i].info)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Owner != out[j].Owner {
			return out[i].Owner < out[j].Owner
		}
		return out[i].STag < out[j].STag
	})
	return out
}

// OpSTags appends to dst the ledger entries of the STags op names, as
// they stand now: a Write's sink and a Read's sink (the requester's,
// RFC 5040 §4.4) and source (the responder's), an Atomic's target
// (RFC 7306 §4.1), the STag a Send with Invalidate invalidated (RFC 5040
// §6.2): each an entry of the side whose memory it names. An entry the
// table no longer holds (evicted), or a use the tracker did not count (a
// Read answered with no data), is left out. Called as the operation is
// reported (Config.OnOperation), it gives the entries the operation
// updated; a front end keeps the latest entry of each connection, owner
// and STag as the capture's STag ledger.
func (t *Tracker) OpSTags(op *Operation, dst []STagInfo) []STagInfo {
	c := t.conns[op.Conn]
	if c == nil {
		return dst
	}
	add := func(owner Dir, stag uint32) {
		if e := c.stags.find(stagKey(owner, stag)); e != nil {
			dst = append(dst, e.info)
		}
	}
	switch op.Kind {
	case OpWrite:
		add(op.Dir.Other(), op.STag)
	case OpRead:
		add(op.Dir, op.STag)
		add(op.Dir.Other(), op.SrcSTag)
	case OpAtomic:
		add(op.Dir.Other(), op.SrcSTag)
	}
	if op.InvalidateSTag != 0 || op.Opcode == decode.OpSendInv || op.Opcode == decode.OpSendSEInv {
		add(op.Dir.Other(), op.InvalidateSTag)
	}
	return dst
}
