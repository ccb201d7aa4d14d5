package analyze

// Containment of decoder panics, like Wireshark's "Malformed Packet": a
// panic while the tracker (track) or a storage-protocol decoder (ulp)
// handles one PDU or one storage message becomes an
// internal.decoder_panic finding on that PDU's frame, naming the layer,
// the PDU's stream offset and the panic; the layer that panicked is
// switched off for that connection (its state is no longer trusted), and
// the rest of the run goes on: the other layers of the connection, the
// other connections. Report.Panics counts them and iwdump exits with
// status 3 (docs/exit-status.md).
//
// Containment never hides a panic from a test or a fuzzer: under
// Config.Panics' default (PanicAuto) it is off in a test binary
// (testing.Testing()), so a panic there fails the test as before; a test
// that checks the containment itself asks for PanicContain. A panic
// raised by a consumer (inside Consumer.Record: render, the TUI's index,
// the export) is not a decoder's and is never contained.
//
// The guards sit where the handler calls into track and ulp, the layers
// that keep per-connection state a panic can be confined to. The MPA,
// DDP and RDMAP decoders run inside the reassembly's framer (package
// reassembly), mid-way through updating the flow's buffers: a recover
// there would leave a flow half-updated, so they are kept panic-free by
// their fuzz targets (decode's, FuzzAssembler, FuzzCapture) instead.

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/reassembly"
	"github.com/iwkit/iwkit/ulp"
)

// PanicMode says what a panic inside a decoder does to a run.
type PanicMode uint8

const (
	// PanicAuto contains decoder panics except in a test binary, where
	// they crash (a test or a fuzzer must see them).
	PanicAuto PanicMode = iota
	// PanicContain contains them, in a test binary too.
	PanicContain
	// PanicCrash lets them crash the program.
	PanicCrash
)

func (m PanicMode) contains() bool {
	switch m {
	case PanicContain:
		return true
	case PanicCrash:
		return false
	}
	return !testing.Testing()
}

// containment is the handler's state of it.
type containment struct {
	on bool
	// n counts the panics contained (Report.Panics).
	n int
	// emitting is above zero while a consumer handles a record: a panic
	// then is the consumer's, and goes on.
	emitting int
	// trackOff holds the connections whose tracker state panicked: they
	// are fed to the tracker no more.
	trackOff map[uint64]bool
	// sites are the scratch sites of the guarded calls into the tracker
	// (0) and the ULP decoders (1): a site a guard holds escapes to the
	// heap, and the per-PDU calls must not allocate (an allocation per
	// PDU was 10% of a sharded export's CPU). Neither call nests in
	// another of its kind.
	sites [2]site
	// pending are the ULP panics' sites, reported after the PDU's record
	// (the record being built is h.rec).
	pending []site
}

// site is where a decoder was called: the PDU (or event) it was handed.
type site struct {
	layer  string           // "track", or
	ulp    *ulp.Conn        // the storage-protocol decoder
	c      *reassembly.Conn // nil: the end of the capture
	d      reassembly.Dir
	frame  int
	t      time.Time
	what   string // "the PDU", "the gap", ...
	offset uint64 // stream offset of its first octet
	seq    uint32
	hasSeq bool
	msg    string // guard's account of the panic
}

// guard calls fn, containing a decoder panic when containment is on; it
// returns false when fn panicked (and the panic was contained).
func (h *handler) guard(s *site, fn func()) (ok bool) {
	if !h.x.on {
		if panicHook != nil {
			panicHook(s)
		}
		fn()
		return true
	}
	emitting := h.x.emitting
	defer func() {
		if ok {
			return
		}
		v := recover()
		if h.x.emitting != emitting {
			panic(v) // a consumer's: not a decoder's to contain (the stack above still shows where)
		}
		h.x.n++
		layer := s.layer
		if s.ulp != nil {
			layer = "ulp"
			if p := s.ulp.Proto(); p != ulp.None {
				layer += " (" + p.String() + ")"
			}
		}
		where := ""
		if s.hasSeq {
			where = fmt.Sprintf(" at stream offset %d (TCP seq %d)", s.offset, s.seq)
		}
		s.msg = fmt.Sprintf("%s decoder panicked on %s%s: %v%s; %s analysis of this connection stops here, the rest goes on", layer, s.what, where, v, panicFrame(), layer)
	}()
	if panicHook != nil {
		panicHook(s)
	}
	fn()
	return true
}

// panicHook, set by the tests only, is called at every guarded call in
// place of a decoder bug: no real input panics once the bugs are fixed.
var panicHook func(s *site)

// panicFrame names the function and line that panicked: the first frame
// below the runtime's panic machinery.
func panicFrame() string {
	pc := make([]uintptr, 32)
	n := runtime.Callers(3, pc)
	frames := runtime.CallersFrames(pc[:n])
	inPanic := false
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, "runtime.") {
			inPanic = true
		} else if inPanic {
			fn := f.Function[strings.LastIndexByte(f.Function, '/')+1:]
			return fmt.Sprintf(" (in %s, %s:%d)", fn, f.File[strings.LastIndexByte(f.File, '/')+1:], f.Line)
		}
		if !more {
			return ""
		}
	}
}

// contained hands out the finding of a contained panic at s.
func (h *handler) contained(s *site) {
	if s.c == nil {
		r := h.reset(KindFinding, s.frame, s.t)
		r.Finding = Finding{Severity: finding.InternalDecoderPanic.Severity(), Code: finding.InternalDecoderPanic, Message: s.msg}
	} else {
		if h.beforeFinding != nil { // at the end of the capture: the connection's end block (shard.go)
			h.beforeFinding(int(s.c.ID))
		}
		r := h.finding(s.c, s.d, s.frame, s.t, finding.InternalDecoderPanic, s.msg)
		r.HasSeq, r.Seq, r.End = s.hasSeq, s.seq, s.seq
	}
	h.emit()
}

// pduSite is the site of a PDU event.
func pduSite(layer string, c *reassembly.Conn, e *reassembly.PDUEvent) site {
	return site{layer: layer, c: c, d: e.Dir, frame: e.LastFrame, t: e.LastTime, what: "the PDU", offset: e.Offset, seq: e.Seq, hasSeq: true}
}

// The tracker's entry points, guarded: a connection whose tracker state
// panicked is fed no more.

func (h *handler) trackPDU(c *reassembly.Conn, e *reassembly.PDUEvent) {
	if h.x.trackOff[c.ID] {
		return
	}
	s := &h.x.sites[0]
	*s = pduSite("track", c, e)
	h.trackGuard(c, s, func() { h.feed.PDU(c, e) })
}

func (h *handler) trackGap(c *reassembly.Conn, e *reassembly.GapEvent) {
	if h.x.trackOff[c.ID] {
		return
	}
	s := site{layer: "track", c: c, d: e.Dir, frame: e.Frame, t: c.LastTime, what: "the gap", offset: e.Offset, seq: e.Seq, hasSeq: true}
	h.trackGuard(c, &s, func() { h.feed.Gap(c, e) })
}

func (h *handler) trackRetransmission(c *reassembly.Conn, e *reassembly.RetransEvent) {
	if h.x.trackOff[c.ID] {
		return
	}
	s := site{layer: "track", c: c, d: e.Dir, frame: e.Frame, t: c.LastTime, what: "the retransmission", offset: e.Offset, seq: e.Seq, hasSeq: true}
	h.trackGuard(c, &s, func() { h.feed.Retransmission(c, e) })
}

func (h *handler) trackClosed(c *reassembly.Conn, e *reassembly.CloseEvent) {
	if h.x.trackOff[c.ID] {
		return
	}
	s := site{layer: "track", c: c, frame: e.Frame, t: e.Time, what: "the close"}
	h.trackGuard(c, &s, func() { h.feed.Closed(c, e) })
}

func (h *handler) trackGuard(c *reassembly.Conn, s *site, fn func()) {
	if !h.guard(s, fn) {
		if h.x.trackOff == nil {
			h.x.trackOff = map[uint64]bool{}
		}
		h.x.trackOff[c.ID] = true
		h.contained(s)
	}
}

// trackFinish ends the tracker at the end of the capture.
func (h *handler) trackFinish() {
	s := site{layer: "track", frame: 0, t: h.last, what: "the end of the capture"}
	if !h.guard(&s, h.t.Finish) {
		h.contained(&s)
	}
}

// ulpGuard calls the connection's ULP decoder; after a panic the
// connection's ULP decoding is off (as when it gives up) and the finding
// waits for the PDU's record to go out (flushPanics).
func (h *handler) ulpGuard(c *reassembly.Conn, s *site, fn func()) bool {
	if h.guard(s, fn) {
		return true
	}
	h.u.conns[int(c.ID)], h.u.last = nil, nil
	h.x.pending = append(h.x.pending, *s)
	return false
}

// flushPanics hands out the findings of the ULP panics of the PDU just
// emitted.
func (h *handler) flushPanics() {
	for i := range h.x.pending {
		h.contained(&h.x.pending[i])
	}
	h.x.pending = h.x.pending[:0]
}
