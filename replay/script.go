package replay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/reassembly"
	"github.com/iwkit/iwkit/track"
)

// Side is one side of an MPA connection: the Initiator (sender of the MPA
// Request, RFC 5044 §7.1) or the Responder.
type Side uint8

const (
	Initiator Side = iota // direction i2r is its
	Responder             // direction r2i is its
)

func (s Side) String() string {
	if s == Initiator {
		return "initiator"
	}
	return "responder"
}

// Peer is the other side.
func (s Side) Peer() Side { return 1 - s }

// MsgKind is the RDMAP message a script step is.
type MsgKind uint8

const (
	MsgSend           MsgKind = iota + 1 // Send, Send with SE / Invalidate
	MsgWrite                             // RDMA Write
	MsgReadRequest                       // RDMA Read Request
	MsgReadResponse                      // RDMA Read Response
	MsgTerminate                         // Terminate
	MsgAtomic                            // RFC 7306 Atomic Request
	MsgConnect                           // the MPA handshake of a connection (at its Request)
	MsgAtomicResponse                    // RFC 7306 Atomic Response
	MsgImmediate                         // RFC 7306 Immediate Data (with SE)
)

func (k MsgKind) String() string {
	return [...]string{"?", "Send", "RDMA Write", "RDMA Read Request", "RDMA Read Response", "Terminate", "Atomic Request", "MPA handshake",
		"Atomic Response", "Immediate Data"}[k]
}

// Msg is one RDMAP message of the capture, reassembled from its DDP
// segments (RFC 5041 §5).
type Msg struct {
	C      int  // the connection: index in Script.Conns
	Side   Side // who sent it
	Kind   MsgKind
	Opcode decode.Opcode
	// Frame is the frame of the message's first segment, LastFrame of its
	// L segment; Rel is the capture time of the first segment since the
	// connection's first frame (MsgConnect: of the MPA Reply, 0 when the
	// handshake is assumed).
	Frame, LastFrame int
	Rel              time.Duration
	// Opened (MsgConnect) is the capture time of the connection's first
	// frame (its SYN, or its first segment when the capture began after
	// it), since the same origin as Rel.
	Opened time.Duration
	// Payload is the Send or Write payload, or the Read Response data.
	Payload []byte
	// STag and TO: the tagged message's sink, or the Read Request's sink.
	STag uint32
	TO   uint64
	// Read Request: source and size.
	SrcSTag uint32
	SrcTO   uint64
	Size    uint32
	// QN and MSN of an untagged message.
	QN, MSN uint32
	// InvalidateSTag of a Send with Invalidate.
	InvalidateSTag uint32
	// Atomic is an Atomic Request's header, OrigValue an Atomic Response's
	// Original Remote Data Value, Imm the Immediate Data (RFC 7306).
	Atomic    decode.AtomicRequest
	OrigValue uint64
	Imm       uint64
	// Term is a Terminate's cause; TermSTag/TermTO name the tagged
	// access it blames (copied DDP header, or the Read Request's source),
	// when HasBlame.
	Term     decode.TermCause
	HasBlame bool
	TermSTag uint32
	TermTO   uint64
	// BlameUntagged: the Terminate copies an untagged DDP header (QN
	// TermQN, MSN TermMSN) instead.
	BlameUntagged   bool
	TermQN, TermMSN uint32
}

// Handshake is the MPA exchange of the connection as captured.
type Handshake struct {
	// Seen: both frames were in the capture; otherwise the parameters come
	// from Assume.
	Seen               bool
	Request, Reply     decode.MPAFrame // PrivateData are private copies
	ReqFrame, RepFrame int
	Rejected           bool
	PeerToPeer         bool
	RTR                decode.Opcode // the RTR the Initiator sent (OpWrite, OpSend, OpReadRequest), when PeerToPeer
	CRC                bool
	MarkersI, MarkersR bool // markers in the FPDUs sent by the Initiator / Responder
}

// ConnScript is one iWARP connection of a script.
type ConnScript struct {
	Conn int       // the connection's number in the capture (iwdump's)
	Addr [2]string // Initiator's and Responder's address as captured
	HS   Handshake
}

// Script is what a replay needs of a capture: the connections chosen, with
// their handshakes, and every RDMAP message of both sides of them in
// capture order. The connections are replayed together, so that what one
// carries serves the others (perftest exchanges STags on one connection
// and uses them on another).
type Script struct {
	Conns []*ConnScript
	Msgs  []Msg
	Count int // iWARP connections in the capture
}

// Assume gives the MPA parameters of a connection whose handshake is not
// in the capture.
type Assume struct {
	Rev      int
	CRC      bool
	Markers  bool
	IRD, ORD int
}

// ErrNoIWARP is returned for a capture without an iWARP connection.
var ErrNoIWARP = errors.New("replay: the capture holds no iWARP connection")

// ErrNoHandshake is returned for a connection whose MPA handshake is not in
// the capture when no Assume was given.
var ErrNoHandshake = errors.New("replay: the connection's MPA handshake is not in the capture (give --assume)")

type partMsg struct {
	m   Msg
	end uint64 // tagged: next TO; untagged: octets so far
}

type connBuilder struct {
	c      int // index in Script.Conns
	cs     *ConnScript
	hasReq bool
	hasRep bool
	untag  [2]map[[2]uint32]*partMsg // by QN, MSN
	tagged [2]*partMsg
	firstF [2]bool       // an FPDU was seen in this direction
	first  int           // first frame of the connection
	repRel time.Duration // capture time of the MPA Reply (hasRep)
	opened time.Duration // capture time of the connection's first frame
}

type scriptBuilder struct {
	want  int // 0: every iWARP connection
	conns []uint64
	by    map[uint64]*connBuilder // chosen connections by reassembly ID
	order []*connBuilder
	s     *Script
	start time.Time
	err   error
}

func sideOf(c *reassembly.Conn, d reassembly.Dir) Side {
	if analyze.TrackDir(c, d) == track.I2R {
		return Initiator
	}
	return Responder
}

// LoadScript reads connection conn (1-based, numbered as iwdump numbers
// them), or with conn 0 every iWARP connection, of a capture.
func LoadScript(file string, conn int, assume *Assume) (*Script, error) {
	return LoadScriptWith(file, conn, assume, analyze.Config{})
}

// LoadScriptWith is LoadScript with the analyzer's capture options of the
// command line (cfg.Ports and cfg.DecodeAs: iwreplay --decode-as, package
// capture); it runs on one worker.
func LoadScriptWith(file string, conn int, assume *Assume, cfg analyze.Config) (*Script, error) {
	src, _, err := analyze.OpenFiles([]string{file})
	if err != nil {
		return nil, err
	}
	defer src.Close()
	b := &scriptBuilder{want: conn, by: map[uint64]*connBuilder{}, s: &Script{}}
	cfg.Workers = 1
	if _, err := analyze.Run(src, cfg, b); err != nil {
		return nil, err
	}
	if b.err != nil {
		return nil, b.err
	}
	if len(b.conns) == 0 {
		return nil, ErrNoIWARP
	}
	s := b.s
	if len(s.Conns) == 0 {
		return nil, fmt.Errorf("replay: no connection %d (the capture holds %d iWARP connections)", conn, len(b.conns))
	}
	s.Count = len(b.conns)
	for _, cb := range b.order {
		cs := cb.cs
		for d := range cb.untag {
			for _, p := range cb.untag[d] {
				return nil, fmt.Errorf("replay: connection %d: message at frame %d has no L segment in the capture", cs.Conn, p.m.Frame)
			}
			if p := cb.tagged[d]; p != nil {
				return nil, fmt.Errorf("replay: connection %d: RDMA message at frame %d has no L segment in the capture", cs.Conn, p.m.Frame)
			}
		}
		at := cs.HS.ReqFrame
		if !cs.HS.Seen {
			if cb.hasReq || cb.hasRep || assume == nil {
				return nil, fmt.Errorf("%w: connection %d", ErrNoHandshake, cs.Conn)
			}
			rev := uint8(assume.Rev)
			if rev == 0 {
				rev = 2
			}
			mk := func(reply bool) decode.MPAFrame {
				f := decode.MPAFrame{Reply: reply, Rev: rev, CRC: assume.CRC, Markers: assume.Markers}
				if rev >= 2 {
					f.Enhanced, f.HasV2 = true, true
					f.V2 = decode.MPAv2{IRD: uint16(assume.IRD), ORD: uint16(assume.ORD)}
				}
				return f
			}
			cs.HS.Request, cs.HS.Reply = mk(false), mk(true)
			cs.HS.CRC = assume.CRC
			cs.HS.MarkersI, cs.HS.MarkersR = assume.Markers, assume.Markers
			at = cb.first
		}
		// Rel: when the handshake ended in the capture (its Reply), from
		// which the replay times the connection's first FPDUs.
		s.Msgs = append(s.Msgs, Msg{C: cb.c, Side: Initiator, Kind: MsgConnect, Frame: at, LastFrame: at, Rel: cb.repRel, Opened: cb.opened})
	}
	// In capture order; a connection's handshake before anything in the
	// frame it is assumed at.
	sort.SliceStable(s.Msgs, func(i, j int) bool {
		a, b := &s.Msgs[i], &s.Msgs[j]
		if a.LastFrame != b.LastFrame {
			return a.LastFrame < b.LastFrame
		}
		return a.Kind == MsgConnect && b.Kind != MsgConnect
	})
	return s, nil
}

func (b *scriptBuilder) Record(r *analyze.Record) {
	if b.err != nil {
		return
	}
	switch r.Kind {
	case analyze.KindOpened:
		if r.Conn == nil || !r.Conn.IWARP {
			return
		}
		b.conns = append(b.conns, r.Conn.ID)
		n := len(b.conns)
		if b.want == 0 || b.want == n {
			if len(b.order) == 0 {
				b.start = r.Conn.FirstTime
			}
			cb := &connBuilder{c: len(b.order), cs: &ConnScript{Conn: n}, first: r.Conn.FirstFrame,
				opened: r.Conn.FirstTime.Sub(b.start), untag: [2]map[[2]uint32]*partMsg{{}, {}}}
			b.by[r.Conn.ID] = cb
			b.order = append(b.order, cb)
			b.s.Conns = append(b.s.Conns, cb.cs)
		}
	case analyze.KindPDU:
		if r.Conn == nil || r.PDU == nil {
			return
		}
		if cb := b.by[r.Conn.ID]; cb != nil {
			b.pdu(cb, r)
		}
	}
}

func (b *scriptBuilder) pdu(cb *connBuilder, r *analyze.Record) {
	c, e := r.Conn, r.PDU
	side := sideOf(c, e.Dir)
	s := cb.cs
	if s.Addr[side] == "" {
		s.Addr[side] = c.Addr[e.Dir].String()
		s.Addr[side.Peer()] = c.Addr[1-e.Dir].String()
	}
	p := &e.PDU
	if p.IsMPAFrame {
		f := p.MPA
		f.PrivateData = append([]byte(nil), f.PrivateData...)
		if f.Reply {
			s.HS.Reply, cb.hasRep, s.HS.RepFrame = f, true, r.Frame
			cb.repRel = e.FirstTime.Sub(b.start)
			s.HS.Rejected = f.Reject
		} else {
			s.HS.Request, cb.hasReq, s.HS.ReqFrame = f, true, r.Frame
		}
		if cb.hasReq && cb.hasRep {
			hs := &s.HS
			hs.Seen = true
			hs.CRC = hs.Request.CRC || hs.Reply.CRC
			// M asks the other side for markers (RFC 5044 §7.1.1).
			hs.MarkersI, hs.MarkersR = hs.Reply.Markers, hs.Request.Markers
			hs.PeerToPeer = hs.Request.HasV2 && hs.Request.V2.PeerToPeer && hs.Reply.HasV2 && hs.Reply.V2.PeerToPeer
		}
		return
	}
	if e.Missing > 0 {
		b.err = fmt.Errorf("replay: connection %d: FPDU at frame %d is not wholly in the capture", s.Conn, r.Frame)
		return
	}
	if p.SegErr != nil {
		b.err = fmt.Errorf("replay: connection %d: frame %d: %v", s.Conn, r.Frame, p.SegErr)
		return
	}
	seg := &p.Seg
	first := !cb.firstF[side]
	cb.firstF[side] = true
	rel := e.FirstTime.Sub(b.start)
	op := seg.RDMAP.Opcode
	// RFC 6581 §5: the Initiator's first FPDU in peer-to-peer mode is the
	// zero-length RTR; the endpoint sends (and takes) it itself.
	if first && side == Initiator && s.HS.PeerToPeer && len(seg.Payload) == 0 &&
		(op == decode.OpWrite || op == decode.OpSend || op == decode.OpReadRequest) {
		if op != decode.OpReadRequest || seg.ReadRequest.Size == 0 {
			s.HS.RTR = op
			return
		}
	}
	pay := seg.Payload
	if seg.DDP.Tagged {
		t := cb.tagged[side]
		if t == nil {
			kind := MsgWrite
			if op == decode.OpReadResponse {
				kind = MsgReadResponse
			}
			t = &partMsg{m: Msg{C: cb.c, Side: side, Kind: kind, Opcode: op, Frame: e.FirstFrame, Rel: rel, STag: seg.DDP.STag, TO: seg.DDP.TO}, end: seg.DDP.TO}
			cb.tagged[side] = t
		}
		if seg.DDP.STag != t.m.STag || seg.DDP.TO != t.end {
			b.err = fmt.Errorf("replay: connection %d: frame %d: tagged segment STag 0x%08x TO 0x%x does not continue the message of frame %d", s.Conn, r.Frame, seg.DDP.STag, seg.DDP.TO, t.m.Frame)
			return
		}
		t.m.Payload = append(t.m.Payload, pay...)
		t.end += uint64(len(pay))
		if seg.DDP.Last {
			t.m.LastFrame = r.Frame
			b.s.Msgs = append(b.s.Msgs, t.m)
			cb.tagged[side] = nil
		}
		return
	}
	key := [2]uint32{seg.DDP.QN, seg.DDP.MSN}
	u := cb.untag[side][key]
	if u == nil {
		m := Msg{C: cb.c, Side: side, Opcode: op, Frame: e.FirstFrame, Rel: rel, QN: seg.DDP.QN, MSN: seg.DDP.MSN}
		switch op {
		case decode.OpSend, decode.OpSendSE, decode.OpSendInv, decode.OpSendSEInv:
			m.Kind = MsgSend
			m.InvalidateSTag = seg.InvalidateSTag
		case decode.OpReadRequest:
			rr := seg.ReadRequest
			m.Kind, m.STag, m.TO, m.SrcSTag, m.SrcTO, m.Size = MsgReadRequest, rr.SinkSTag, rr.SinkTO, rr.SrcSTag, rr.SrcTO, rr.Size
		case decode.OpTerminate:
			t := seg.Terminate
			m.Kind, m.Term = MsgTerminate, decode.LookupTermCause(t.Layer, t.EType, t.Code)
			switch {
			case t.HasRDMA:
				m.HasBlame, m.TermSTag, m.TermTO = true, t.TermRDMA.SrcSTag, t.TermRDMA.SrcTO
			case t.HasDDP && t.TermDDP.Tagged:
				m.HasBlame, m.TermSTag, m.TermTO = true, t.TermDDP.STag, t.TermDDP.TO
			case t.HasDDP:
				m.BlameUntagged, m.TermQN, m.TermMSN = true, t.TermDDP.QN, t.TermDDP.MSN
			}
		case decode.OpAtomicRequest:
			m.Kind, m.Atomic = MsgAtomic, seg.AtomicRequest
		case decode.OpAtomicResponse:
			m.Kind, m.OrigValue = MsgAtomicResponse, seg.AtomicResponse.OrigValue
		case decode.OpImmData, decode.OpImmDataSE:
			m.Kind, m.Imm = MsgImmediate, binary.BigEndian.Uint64(seg.ImmData[:])
		default:
			b.err = fmt.Errorf("replay: connection %d: frame %d: %v cannot be replayed", s.Conn, r.Frame, op)
			return
		}
		u = &partMsg{m: m}
		cb.untag[side][key] = u
	}
	if uint64(seg.DDP.MO) != u.end {
		b.err = fmt.Errorf("replay: connection %d: frame %d: MO %d does not continue the message of frame %d", s.Conn, r.Frame, seg.DDP.MO, u.m.Frame)
		return
	}
	if u.m.Kind == MsgSend {
		u.m.Payload = append(u.m.Payload, pay...)
	}
	u.end += uint64(len(pay))
	if seg.DDP.Last {
		u.m.LastFrame = r.Frame
		b.s.Msgs = append(b.s.Msgs, u.m)
		delete(cb.untag[side], key)
	}
}
