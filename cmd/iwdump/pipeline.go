package main

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/reassembly"
	"github.com/iwkit/iwkit/track"
)

// dirName names a direction of an iWARP connection for output: "i2r" from
// the MPA initiator (the Request's sender, RFC 5044 §7.1), "r2i" towards it.
// Before a Request is seen, the TCP client stands in for the initiator.
func dirName(c *reassembly.Conn, d reassembly.Dir) string {
	init := reassembly.DirAB
	if c.Initiator >= 0 {
		init = reassembly.Dir(c.Initiator)
	}
	if d == init {
		return "i2r"
	}
	return "r2i"
}

// ends returns the sender and receiver of direction d.
func ends(c *reassembly.Conn, d reassembly.Dir) (src, dst netip.AddrPort) {
	return c.Addr[d], c.Addr[d.Other()]
}

// handler turns reassembly events into output and feeds the tracker,
// whose findings come back through onFinding.
type handler struct {
	out   *printer
	t     *track.Tracker
	asm   *reassembly.Assembler
	first time.Time // timestamp of the first frame: output times count from it
	last  time.Time // timestamp of the latest frame
	seen  bool      // a frame was seen: first is set
	conns map[int]*reassembly.Conn
	plots plots
	// beforeFinding, when set, hears of each tracker finding's connection
	// before it is printed (shard.go cuts the end of the capture by it).
	beforeFinding func(conn int)
}

func newHandler(out *printer) *handler {
	h := &handler{out: out, conns: map[int]*reassembly.Conn{}}
	h.plots.enabled = out.o.plot != ""
	h.t = track.New(track.Config{OnFinding: h.onFinding, OnOperation: h.onOperation})
	return h
}

func (h *handler) onOperation(op *track.Operation) {
	if op.Kind == track.OpRead && op.Status == track.OpOK {
		h.plots.latency(op.Latency)
	}
}

// report gathers what the -z tables need; call it after dump.
func (h *handler) report() *report {
	r := &report{conns: h.conns, cs: h.t.AllConnStats(), all: h.t.Stats()}
	if h.asm != nil {
		r.asm = h.asm.Stats()
	}
	return r
}

// trackDir maps a reassembly direction to the MPA roles track uses.
func trackDir(c *reassembly.Conn, d reassembly.Dir) track.Dir {
	if dirName(c, d) == "i2r" {
		return track.I2R
	}
	return track.R2I
}

func (h *handler) at(c *reassembly.Conn, d reassembly.Dir, first, last int, ts time.Time) track.At {
	return track.At{Conn: int(c.ID), Dir: trackDir(c, d), Frame: first, LastFrame: last, Time: ts}
}

// onFinding prints a tracker finding. The connection may already be gone
// (findings raised at Finish), so addresses come from what was kept.
func (h *handler) onFinding(f *track.Finding) {
	if h.beforeFinding != nil {
		h.beforeFinding(f.Conn)
	}
	frame := 0
	if len(f.Frames) > 0 {
		frame = f.Frames[0]
	}
	t := f.Time
	if t.IsZero() { // raised at the end, not by a unit
		t = h.last
	}
	h.out.finding(frame, h.rel(t), f, h.conns[f.Conn])
}

func (h *handler) rel(t time.Time) time.Duration { return t.Sub(h.first) }

// frame takes note of a frame before it is fed: the first one's time is
// the origin of output times; the I/O graph counts every frame.
func (h *handler) frame(fr *pcap.Frame) {
	if !h.seen {
		h.first, h.out.base, h.seen = fr.Timestamp, fr.Timestamp, true
	}
	h.last = fr.Timestamp
	h.plots.frame(fr)
}

// undecodable notes a frame whose TCP segment could not be decoded
// (finding.FrameUndecodable, printed as a note without its code); frames
// that hold none (pcap.ErrNotTCP) are not news.
func (h *handler) undecodable(fr *pcap.Frame, err error) {
	if !errors.Is(err, pcap.ErrNotTCP) {
		h.out.note(fr, fr.Timestamp.Sub(h.first), "undecodable frame: "+err.Error())
	}
}

func (h *handler) Opened(c *reassembly.Conn) {
	cp := *c // the assembler reuses c after Closed; findings may come later
	h.conns[int(c.ID)] = &cp
}

func (h *handler) Negotiated(c *reassembly.Conn, d reassembly.Dir) {
	p := &c.Params[d]
	if p.CRCSource == reassembly.SourceInferred || p.MarkersSource == reassembly.SourceInferred {
		src, dst := ends(c, d)
		h.out.event(c.LastFrame, h.rel(c.LastTime), c, d, src, dst, finding.MPAParamsInferred,
			fmt.Sprintf("no handshake seen: markers %v (%s), CRC %v (%s)", p.Markers, p.MarkersSource, p.CRC, p.CRCSource))
	}
}

func (h *handler) PDU(c *reassembly.Conn, e *reassembly.PDUEvent) {
	src, dst := ends(c, e.Dir)
	if e.Err != nil {
		h.out.event(e.LastFrame, h.rel(e.LastTime), c, e.Dir, src, dst, finding.MPABadFrame, "MPA frame does not decode: "+e.Err.Error())
		return
	}
	if cp := h.conns[int(c.ID)]; cp != nil {
		cp.Initiator = c.Initiator
	}
	h.out.pdu(e.LastFrame, h.rel(e.LastTime), c, e.Dir, src, dst, e)
	if h.plots.enabled && !e.PDU.IsMPAFrame && e.PDU.SegErr == nil {
		h.plots.octets(int(trackDir(c, e.Dir)), e.LastTime, len(e.PDU.Seg.Payload))
	}
	at := h.at(c, e.Dir, e.FirstFrame, e.LastFrame, e.LastTime)
	at.HasSeq, at.Seq, at.End = true, e.Seq, e.Seq+uint32(e.Len)
	at.HasAck, at.Ack = e.HasAck, e.Ack
	at.Missing = e.Missing // a partial FPDU: the tracker sizes it by ULPDU_Length
	if e.PDU.IsMPAFrame {
		h.t.Handshake(at, &e.PDU.MPA)
	} else {
		h.t.PDU(at, &e.PDU)
	}
}

func (h *handler) Gap(c *reassembly.Conn, e *reassembly.GapEvent) {
	src, dst := ends(c, e.Dir)
	code := finding.TCPGap
	if e.Reason == reassembly.GapSkipped {
		code = finding.MPASkipped
	}
	msg := fmt.Sprintf("%d octets missing at seq %d (%s)", e.Len, e.Seq, e.Reason)
	if e.Reason == reassembly.GapSkipped {
		msg = fmt.Sprintf("%d octets at seq %d skipped while looking for an FPDU boundary", e.Len, e.Seq)
	}
	if e.FPDUsLost > 0 {
		msg += fmt.Sprintf(", about %d FPDUs lost", e.FPDUsLost)
	}
	h.out.event(e.Frame, h.rel(c.LastTime), c, e.Dir, src, dst, code, msg)
	h.t.Gap(h.at(c, e.Dir, e.Frame, e.Frame, c.LastTime), int(min(e.Len, 1<<31)), e.FPDUsLost)
}

func (h *handler) Resync(c *reassembly.Conn, e *reassembly.ResyncEvent) {
	if e.How == reassembly.ResyncStart {
		return
	}
	src, dst := ends(c, e.Dir)
	h.out.event(e.Frame, h.rel(c.LastTime), c, e.Dir, src, dst, finding.MPAResync,
		fmt.Sprintf("FPDU boundary found at seq %d by %s (%d FPDUs validated)", e.Seq, e.How, e.Chain))
}

func (h *handler) Retransmission(c *reassembly.Conn, e *reassembly.RetransEvent) {
	src, dst := ends(c, e.Dir)
	h.out.event(e.Frame, h.rel(c.LastTime), c, e.Dir, src, dst, finding.TCPRetransInconsistent,
		fmt.Sprintf("retransmitted octets at seq %d differ from the first copy (%d octets compared)", e.Seq, e.Len))
	h.t.Retransmission(h.at(c, e.Dir, e.Frame, e.Frame, c.LastTime), e.Len)
}

// Finding prints a framing finding: the catalogue's summary of its code
// is the message.
func (h *handler) Finding(c *reassembly.Conn, e *reassembly.FindingEvent) {
	src, dst := ends(c, e.Dir)
	h.out.event(e.Frame, h.rel(c.LastTime), c, e.Dir, src, dst, e.Code, fmt.Sprintf("%s (seq %d, %d octets)", e.Code.Info().Summary, e.Seq, e.Len))
}

func (h *handler) Closed(c *reassembly.Conn, e *reassembly.CloseEvent) {
	if !c.IWARP {
		return
	}
	var kind track.CloseKind
	switch e.Reason {
	case reassembly.CloseFIN:
		kind = track.CloseFIN
	case reassembly.CloseRST:
		kind = track.CloseRST
	default:
		return // idle, end of capture, eviction: nothing the peers did
	}
	// The assembler reports the connection's end, not which side closed
	// first: tell the tracker both directions ended.
	for d := reassembly.DirAB; d <= reassembly.DirBA; d++ {
		h.t.Close(h.at(c, d, e.Frame, e.Frame, e.Time), kind)
	}
}
