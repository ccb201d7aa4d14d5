package analyze

// The ULP layer's glue (package ulp): each iWARP connection gets a
// ulp.Conn, fed with its MPA frames and DDP segments; the Message a PDU
// completes rides on the PDU's record (Record.ULP), and completed commands
// come out as KindCommand records after it, with the ULP's findings.

import (
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/filter"
	"github.com/iwkit/iwkit/reassembly"
	"github.com/iwkit/iwkit/track"
	"github.com/iwkit/iwkit/ulp"
)

type ulpState struct {
	off bool
	// unanswered: hand out the commands outstanding at a connection's
	// end (Config.Unanswered).
	unanswered bool
	force      map[uint16]ulp.Proto
	conns      map[int]*ulp.Conn
	lastID     int
	last       *ulp.Conn
	stats      ulp.Stats
	disc       ulp.Discovery // of the ended connections
}

func (h *handler) ulpSetup(cfg *Config) {
	h.u.off = cfg.NoULP
	h.u.force = cfg.DecodeAs
	h.u.unanswered = cfg.Unanswered
	h.x.on = cfg.Panics.contains()
}

// responderPort is the TCP port of the MPA responder (the TCP server
// before a Request is seen).
func responderPort(c *reassembly.Conn) uint16 {
	init := reassembly.DirAB
	if c.Initiator >= 0 {
		init = reassembly.Dir(c.Initiator)
	}
	return c.Addr[init.Other()].Port()
}

func (h *handler) ulpConn(c *reassembly.Conn) *ulp.Conn {
	id := int(c.ID)
	if h.u.last != nil && h.u.lastID == id {
		return h.u.last
	}
	if h.u.conns == nil {
		h.u.conns = map[int]*ulp.Conn{}
	}
	uc, seen := h.u.conns[id]
	if seen && uc == nil {
		return nil // no storage protocol on it
	}
	if uc == nil {
		port := responderPort(c)
		force := h.u.force[port]
		if force == ulp.None {
			// --decode-as names either end's port
			init := reassembly.DirAB
			if c.Initiator >= 0 {
				init = reassembly.Dir(c.Initiator)
			}
			force = h.u.force[c.Addr[init].Port()]
		}
		uc = ulp.NewConn(port, force, ulp.Limits{})
		h.u.conns[id] = uc
	}
	h.u.last, h.u.lastID = uc, id
	return uc
}

// ulpPDU feeds a PDU to the connection's ULP state before its record goes
// out, and sets the record's ULP message.
func (h *handler) ulpPDU(c *reassembly.Conn, e *reassembly.PDUEvent, r *Record) *ulp.Conn {
	if h.u.off {
		return nil
	}
	p := &e.PDU
	if !p.IsMPAFrame && (p.SegErr != nil || len(p.FPDU.ULPDU) == 0) {
		return nil
	}
	uc := h.ulpConn(c)
	if uc == nil {
		return nil
	}
	at := ulp.At{Frame: e.FirstFrame, Last: e.LastFrame, Time: e.LastTime}
	i2r := DirName(c, e.Dir) == "i2r"
	s := &h.x.sites[1]
	*s = pduSite("", c, e)
	s.ulp = uc
	if p.IsMPAFrame {
		ulpName(uc, c)
		if !h.ulpGuard(c, s, func() { r.ULP = uc.Handshake(at, i2r, &p.MPA) }) {
			return nil
		}
	} else {
		lost := 0 // payload octets the capture lost (e.Missing counts PAD and CRC too)
		if e.Missing > 0 {
			lost = max(0, int(p.FPDU.ULPDULength)-p.Seg.HdrLen-len(p.Seg.Payload))
		}
		if !h.ulpGuard(c, s, func() { r.ULP = uc.Segment(at, i2r, &p.Seg, lost) }) {
			return nil
		}
		if uc.GaveUp() { // keep a nil: the connection costs a map entry from now on
			h.u.conns[int(c.ID)], h.u.last = nil, nil
		}
	}
	return uc
}

// ulpAfter hands out the findings and commands of the PDU just emitted.
func (h *handler) ulpAfter(c *reassembly.Conn, d reassembly.Dir, uc *ulp.Conn, e *reassembly.PDUEvent) {
	if len(h.x.pending) > 0 {
		h.flushPanics()
	}
	if uc == nil {
		return
	}
	for _, f := range uc.Findings() {
		dd := d
		if (DirName(c, d) == "i2r") != f.I2R {
			dd = d.Other()
		}
		h.finding(c, dd, f.Frame, f.Time, f.Code, f.Message)
		h.emit()
	}
	done := uc.Done()
	for i := range done {
		r := h.reset(KindCommand, e.LastFrame, e.LastTime)
		r.onConn(c, d)
		r.FirstFrame = done[i].RequestFrame
		r.Cmd = &done[i]
		h.emit()
	}
}

// ulpName names the queue's connection "initiator > responder" (once the
// MPA Request says which end is which).
func ulpName(uc *ulp.Conn, c *reassembly.Conn) {
	init := reassembly.DirAB
	if c.Initiator >= 0 {
		init = reassembly.Dir(c.Initiator)
	}
	uc.SetName(c.Addr[init].String() + " > " + c.Addr[init.Other()].String())
	uc.SetID(int(c.ID))
}

// ulpGap tells the connection's ULP state of octets the capture lost.
func (h *handler) ulpGap(c *reassembly.Conn) {
	if uc := h.u.conns[int(c.ID)]; uc != nil {
		uc.Gap()
	}
}

// ulpClosed ends a connection's ULP state at frame, time t (frame 0: the
// end of the capture, t its last frame's time): unanswered commands go
// to the statistics, and with Config.Unanswered out as KindCommand
// records (Cmd.Answered false) reported at frame and t.
func (h *handler) ulpClosed(id, frame int, t time.Time) {
	uc, seen := h.u.conns[id]
	if uc == nil {
		if seen {
			delete(h.u.conns, id)
		}
		return
	}
	s := site{ulp: uc, c: h.conns[id], t: h.last, what: "the end of the connection"}
	uc.SetEnd(h.last) // what is outstanding is that old at the close or the end
	if c := h.conns[id]; c != nil {
		ulpName(uc, c)
	}
	if !h.guard(&s, uc.Finish) {
		h.contained(&s)
	}
	if done := uc.Done(); h.u.unanswered && s.c != nil {
		for i := range done {
			if h.beforeFinding != nil { // at the end of the capture: the connection's end block (shard.go)
				h.beforeFinding(id)
			}
			r := h.reset(KindCommand, frame, t)
			// The direction the answer was awaited from.
			d := reassembly.Dir(s.c.Initiator)
			if s.c.Initiator < 0 {
				d = reassembly.DirAB
			}
			if !done[i].AnswerFromInitiator() {
				d = d.Other()
			}
			r.onConn(s.c, d)
			r.FirstFrame = done[i].RequestFrame
			r.Cmd = &done[i]
			h.emit()
		}
	}
	h.u.stats.Merge(uc.Stats, nil) // shard-local numbers: the report maps them
	if d := uc.Discovery(); s.c != nil && (len(d.Announced) > 0 || len(d.Connected) > 0) {
		h.u.disc.Add(d, id, responder(s.c))
	}
	delete(h.u.conns, id)
	if h.u.lastID == id {
		h.u.last = nil
	}
}

// ulpFinish ends every connection's ULP state (end of the capture), in
// connection order.
func (h *handler) ulpFinish() {
	for _, id := range slices.Sorted(maps.Keys(h.u.conns)) {
		h.ulpClosed(id, 0, h.last)
	}
}

// ulpFields resolves the ULP field table for display filters.
func ulpField(name string) (filter.Getter[*Record], decode.FieldKind, bool) {
	if slices.Contains(ulp.Prefixes, name) { // "-Y nvme"
		return func(r *Record) (decode.Value, bool) {
			return decode.Value{Kind: decode.KindBool, U: 1}, r.Kind == KindPDU && r.ULP != nil && r.ULP.Has(name)
		}, decode.KindBool, true
	}
	id, f, ok := ulp.FieldByName(name)
	if !ok {
		return nil, 0, false
	}
	return func(r *Record) (decode.Value, bool) {
		if r.Kind != KindPDU || r.ULP == nil {
			return decode.Value{}, false
		}
		return r.ULP.Get(id)
	}, f.Kind, true
}

// responder is the address and port of c's MPA Responder: the sender of
// the direction track calls R2I.
func responder(c *reassembly.Conn) netip.AddrPort {
	if track.DirOf(c, 0) == track.R2I {
		return c.Addr[0]
	}
	return c.Addr[1]
}

// ulpNth serves display filters the occurrences of a ULP field: the
// message's and each SMB2 compound member's (ulp.Message.Members), so
// smb2.command == "CLOSE" matches a compound with a CLOSE in any member.
func ulpNth(name string) filter.Nth[*Record] {
	id, _, ok := ulp.FieldByName(name)
	if !ok {
		return nil
	}
	return func(r *Record, i int) (decode.Value, bool) {
		if r.Kind != KindPDU || r.ULP == nil {
			return decode.Value{}, false
		}
		return r.ULP.Nth(id, i)
	}
}
