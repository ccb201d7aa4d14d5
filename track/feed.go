package track

import (
	"time"

	"github.com/iwkit/iwkit/reassembly"
)

// Feed adapts the TCP reassembly and MPA framer (package reassembly) to a
// Tracker: it is a reassembly.Handler that hands the tracker every MPA
// frame, FPDU, gap, inconsistent retransmission and connection end, with
// the frames, sequence and acknowledgment numbers each came with.
// Connections are numbered by the reassembly (Conn.ID); directions follow
// the MPA roles (DirOf). Package analyze feeds its tracker through it.
type Feed struct{ T *Tracker }

// DirOf maps a reassembly direction to the MPA roles: I2R from the MPA
// Initiator (the Request's sender, RFC 5044 §7.1); before a Request is
// seen, the TCP client stands in for the initiator.
func DirOf(c *reassembly.Conn, d reassembly.Dir) Dir { return DirOfInitiator(c.Initiator, d) }

// DirOfInitiator is DirOf for a connection whose MPA Request went in
// direction initiator (reassembly.Conn.Initiator; -1: not seen, taken as
// reassembly.DirAB).
func DirOfInitiator(initiator int8, d reassembly.Dir) Dir {
	init := reassembly.DirAB
	if initiator >= 0 {
		init = reassembly.Dir(initiator)
	}
	if d == init {
		return I2R
	}
	return R2I
}

func at(c *reassembly.Conn, d reassembly.Dir, first, last int, ts time.Time) At {
	return At{Conn: int(c.ID), Dir: DirOf(c, d), Frame: first, LastFrame: last, Time: ts}
}

// PDU hands over an MPA frame (to Handshake) or an FPDU (to PDU); frames
// that did not decode are the framer's finding, not the tracker's.
func (f Feed) PDU(c *reassembly.Conn, e *reassembly.PDUEvent) {
	if e.Err != nil {
		return
	}
	a := at(c, e.Dir, e.FirstFrame, e.LastFrame, e.LastTime)
	a.HasSeq, a.Seq, a.End = true, e.Seq, e.Seq+uint32(e.Len)
	a.HasAck, a.Ack = e.HasAck, e.Ack
	a.Missing = e.Missing // a partial FPDU: the tracker sizes it by ULPDU_Length
	if e.PDU.IsMPAFrame {
		if !e.PDU.MPA.Reply {
			// The Request's sender is the Initiator (fallback.go).
			f.T.Peers(int(c.ID), c.Addr[e.Dir], c.Addr[e.Dir.Other()])
		}
		f.T.Handshake(a, &e.PDU.MPA)
	} else {
		f.T.PDU(a, &e.PDU)
	}
}

// Gap tells the tracker that octets of a direction are missing: its
// checks there become uncertain.
func (f Feed) Gap(c *reassembly.Conn, e *reassembly.GapEvent) {
	a, n := at(c, e.Dir, e.Frame, e.Frame, c.LastTime), int(min(e.Len, 1<<31))
	if e.Reason == reassembly.GapSkipped {
		f.T.Skipped(a, n, e.FPDUsLost)
		return
	}
	f.T.Gap(a, n, e.FPDUsLost)
}

// Retransmission reports retransmitted octets that differ from the first
// copy.
func (f Feed) Retransmission(c *reassembly.Conn, e *reassembly.RetransEvent) {
	f.T.Retransmission(at(c, e.Dir, e.Frame, e.Frame, c.LastTime), e.Len)
}

// Closed ends an iWARP connection by FIN or RST (MPA-22: the LLP closed).
// Ends that the peers did not cause tell the tracker nothing, but an
// evicted or idle flow's connection is retired (Tracker.Forget).
func (f Feed) Closed(c *reassembly.Conn, e *reassembly.CloseEvent) {
	if !c.IWARP {
		return
	}
	var kind CloseKind
	switch e.Reason {
	case reassembly.CloseFIN:
		kind = CloseFIN
	case reassembly.CloseRST:
		kind = CloseRST
	case reassembly.CloseEvicted, reassembly.CloseIdle:
		// The reassembly dropped the flow: nothing more comes for it, and
		// its state would otherwise stay until the tracker's own limit.
		f.T.Forget(int(c.ID))
		return
	default:
		return
	}
	if kind == CloseRST {
		// A reset is one side's act (RFC 793 §3.4): report it from the
		// side whose segment carried it, once.
		f.T.Close(at(c, e.Dir, e.Frame, e.Frame, e.Time), kind)
		return
	}
	// The assembler reports the connection's end after both FINs: tell
	// the tracker both directions ended.
	for d := reassembly.DirAB; d <= reassembly.DirBA; d++ {
		f.T.Close(at(c, d, e.Frame, e.Frame, e.Time), kind)
	}
}

// The events the tracker does not need.
func (Feed) Opened(*reassembly.Conn)                            {}
func (Feed) Negotiated(*reassembly.Conn, reassembly.Dir)        {}
func (Feed) Resync(*reassembly.Conn, *reassembly.ResyncEvent)   {}
func (Feed) Finding(*reassembly.Conn, *reassembly.FindingEvent) {}

var _ reassembly.Handler = Feed{}
