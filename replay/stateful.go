package replay

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sort"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/endpoint"
)

// StatefulOptions configure a stateful replay: one side of a captured
// connection played through the endpoint against a live peer.
type StatefulOptions struct {
	Side Side
	// Addr is the peer to dial (Initiator) or the address to listen on
	// (Responder), unless Listener is set.
	Addr     string
	Listener net.Listener
	// Ready, when set, hears the listening address (Responder).
	Ready func(net.Addr)
	// Multiplier scales the capture's timing (0: 1); Topspeed ignores it
	// and acts as soon as what the capture shows before an action happened.
	Multiplier float64
	Topspeed   bool
	// Timeout bounds each wait for the peer (10 s).
	Timeout time.Duration
	// StartDelay, when set, is the least time between a connection's MPA
	// exchange and the first FPDU this side sends on it, where the
	// capture's gap is shorter: Linux siw's accept path can leave an FPDU
	// that follows its Reply too soon unread (docs/iwconform.md, siw
	// deviation 8),
	// and on a slow or loaded host the capture's gap may not be enough.
	StartDelay time.Duration
	// Mask leaves the octets these rules name uncompared (ParseMasks).
	Mask []MaskRule
	// Capture, when set, records every connection of the replay (what
	// was played and what the peer sent) as a pcap.
	Capture *endpoint.Capture
}

// Difference is one way the live peer (or the replay) departed from the
// capture.
type Difference struct {
	Frame int    // the captured frame concerned (0: none)
	Kind  string // handshake, missing, differs, unexpected, completion, terminate, refused
	What  string
}

func (d Difference) String() string {
	if d.Frame > 0 {
		return fmt.Sprintf("frame %d: %s: %s", d.Frame, d.Kind, d.What)
	}
	return d.Kind + ": " + d.What
}

// Result is what a stateful replay did and found.
type Result struct {
	Side        Side
	Conns       []int // the capture's connection numbers replayed
	Operations  int   // the handshakes and the RDMAP messages of both sides
	Matched     int
	Differences []Difference
	Params      []endpoint.Params
	Counters    []endpoint.Counters
	Duration    time.Duration
	// Redials is how many times the Initiator dialled again after a
	// refusal or a reset before the MPA Reply.
	Redials int
	// Masked counts the octets the Mask rules left uncompared.
	Masked int
}

// pconn is one connection of a replay.
type pconn struct {
	cs   *ConnScript
	cq   *endpoint.CQ
	qp   *endpoint.QP
	conn *endpoint.Conn
	hs   int // index of its MsgConnect

	recvMR              *endpoint.MR
	recvSlots, recvLen  int
	recvLeft            int   // peer Sends not yet posted for
	peerSends, peerResp []int // message indices of the peer's Sends and Read Responses
	gotSends, gotReads  int
	postedReads         []int // this side's Reads posted, in order
	nRecv               int   // receives to post: the peer's Sends up to one the capture shows without a buffer
	noRecv              bool  // such a Send was seen
	// RFC 7306: the peer's Atomic Responses and Immediate Data messages,
	// in order, and how many arrived.
	peerAtomicResps, peerImms []int
	gotAtomics, gotImms       int
}

// player is the state of one replay.
type player struct {
	s   *Script
	o   StatefulOptions
	me  Side
	res *Result
	// settle: no FPDU before it (StartDelay after the last handshake).
	settle time.Time
	bad    map[int]bool // message indices with a difference (-2: none)
	cs     []*pconn

	dev *endpoint.Device
	pd  *endpoint.PD

	own     map[uint32]*region   // captured STag this side advertised → its live region
	peerMap map[uint32]uint32    // the peer's captured STag → live STag
	peerTO  map[uint32]int64     // TO shift of the peer's STag
	peerExt map[uint32][2]uint64 // the peer's STags this side accesses, and where

	sendMR, writeMR   *endpoint.MR
	sendOff, writeOff map[int]int      // message index → offset in its MR
	fill              map[int][][2]int // own action index → (own Read or Atomic Response, peer Request) to put in memory first
	start             time.Time
	// RFC 7306 (stateful_atomic.go)
	ext           bool            // the capture has RFC 7306 messages: the QPs enable it
	atomicTargets map[uint32]bool // own STags the peer's atomics target
	atomicMR      *endpoint.MR    // own atomics' result words
	atomicOff     map[int]int     // own Atomic Request index → offset in atomicMR
	ln            net.Listener
}

type region struct {
	mr   *endpoint.MR
	base uint64 // captured TO of the first octet (the live region keeps it)
}

func (p *player) differ(i int, frame int, kind, format string, args ...any) {
	p.res.Differences = append(p.res.Differences, Difference{Frame: frame, Kind: kind, What: fmt.Sprintf(format, args...)})
	p.bad[i] = true
}

// Stateful plays side o.Side of script s against a live peer and compares
// what the peer does with what the capture shows. An error is returned
// only when the replay could not be run at all; differences are in the
// Result.
func Stateful(ctx context.Context, s *Script, o StatefulOptions) (*Result, error) {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Multiplier <= 0 {
		o.Multiplier = 1
	}
	p := &player{s: s, o: o, me: o.Side, res: &Result{Side: o.Side, Operations: len(s.Msgs)},
		bad: map[int]bool{}, own: map[uint32]*region{}, peerMap: map[uint32]uint32{}, peerTO: map[uint32]int64{},
		peerExt: map[uint32][2]uint64{}, sendOff: map[int]int{}, writeOff: map[int]int{}, fill: map[int][][2]int{},
		atomicTargets: map[uint32]bool{}, atomicOff: map[int]int{}}
	for _, c := range s.Conns {
		p.res.Conns = append(p.res.Conns, c.Conn)
		p.cs = append(p.cs, &pconn{cs: c})
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := p.setup(); err != nil {
		return nil, err
	}
	start := time.Now()
	err := p.run(ctx)
	p.res.Duration = time.Since(start)
	// In capture order; those without a frame (what the peer did beyond
	// the capture) last.
	sort.SliceStable(p.res.Differences, func(i, j int) bool {
		a, b := p.res.Differences[i].Frame, p.res.Differences[j].Frame
		return a != 0 && (b == 0 || a < b)
	})
	p.res.Matched = p.res.Operations
	for i := range p.bad {
		if i >= 0 {
			p.res.Matched--
		}
	}
	return p.res, err
}

// check refuses what the endpoint cannot replay.
func (p *player) check() error {
	for _, c := range p.s.Conns {
		hs := &c.HS
		for _, f := range []*decode.MPAFrame{&hs.Request, &hs.Reply} {
			if f.Rev != 1 && f.Rev != 2 {
				return fmt.Errorf("replay: connection %d: MPA Rev %d cannot be replayed (the endpoint speaks Rev 1 and 2)", c.Conn, f.Rev)
			}
		}
	}
	for _, m := range p.s.Msgs {
		if m.Side == p.me && m.Kind == MsgAtomic && !m.Atomic.AOpCode.Known() {
			return fmt.Errorf("replay: frame %d: Atomic Request with %v cannot be sent by the endpoint", m.Frame, m.Atomic.AOpCode)
		}
		if m.Side == p.me && m.Kind == MsgSend && m.Opcode != decode.OpSend && m.Opcode != decode.OpSendSE &&
			m.Opcode != decode.OpSendInv && m.Opcode != decode.OpSendSEInv {
			return fmt.Errorf("replay: frame %d: %v cannot be sent by the endpoint", m.Frame, m.Opcode)
		}
	}
	return nil
}

// blame finds, for message i, the Terminate of the side that received it
// blaming it (the copied DDP header, or Read Request header, names it);
// -1 when there is none. A blamed access is not evidence of a
// registration, a blamed Send not of a receive buffer, and neither
// completes at the receiver.
func (p *player) blame(i int) int {
	m := &p.s.Msgs[i]
	for j := i + 1; j < len(p.s.Msgs); j++ {
		t := &p.s.Msgs[j]
		if t.Kind != MsgTerminate || t.C != m.C || t.Side == m.Side {
			continue
		}
		switch {
		case m.Kind == MsgWrite && t.HasBlame && t.TermSTag == m.STag && t.TermTO == m.TO,
			m.Kind == MsgReadRequest && t.HasBlame && t.TermSTag == m.SrcSTag && t.TermTO == m.SrcTO,
			(m.Kind == MsgSend || m.Kind == MsgReadRequest || m.Kind == MsgAtomic || m.Kind == MsgImmediate) && t.BlameUntagged && t.TermQN == m.QN && t.TermMSN == m.MSN:
			return j
		}
	}
	return -1
}

func (p *player) blamed(i int) bool { return p.blame(i) >= 0 }

// boundsCause: a Terminate for an access outside a valid STag's region
// (DDP Tagged Buffer Error 0x01, RDMAP Remote Protection 0x01).
func boundsCause(c decode.TermCause) bool {
	return c.Code == 0x01 && (c.Layer == decode.TermLayerDDP && c.EType == 1 || c.Layer == decode.TermLayerRDMAP && c.EType == 1)
}

func extend(ext map[uint32][2]uint64, stag uint32, to, n uint64) {
	e, ok := ext[stag]
	if !ok {
		e = [2]uint64{to, to + n}
	}
	e[0], e[1] = min(e[0], to), max(e[1], to+n)
	ext[stag] = e
}

// setup registers memory for every STag the capture shows this side
// advertising (the target of the peer's Writes and Read Requests, and the
// sink of this side's Reads), at the captured tagged offsets, and lays out
// the Send and Write payloads and the receive buffers.
func (p *player) setup() error {
	p.dev = endpoint.OpenDevice(endpoint.DeviceAttr{})
	p.pd = p.dev.AllocPD()
	ownExt := map[uint32][2]uint64{}
	var sendN, writeN int
	for i, m := range p.s.Msgs {
		c := p.cs[m.C]
		if m.Kind == MsgConnect {
			c.hs = i
		}
		switch {
		case m.Side != p.me && m.Kind == MsgWrite && !p.blamed(i):
			extend(ownExt, m.STag, m.TO, uint64(len(m.Payload)))
		case m.Side != p.me && m.Kind == MsgReadRequest:
			if !p.blamed(i) {
				extend(ownExt, m.SrcSTag, m.SrcTO, uint64(m.Size))
			}
			// Its sink is the peer's: where the peer advertises it, the
			// live value is the peer's new registration.
			extend(p.peerExt, m.STag, m.TO, uint64(m.Size))
		case m.Side == p.me && m.Kind == MsgReadRequest:
			extend(ownExt, m.STag, m.TO, uint64(m.Size))
			extend(p.peerExt, m.SrcSTag, m.SrcTO, uint64(m.Size))
		case m.Side != p.me && m.Kind == MsgReadResponse:
			c.peerResp = append(c.peerResp, i)
		case m.Side == p.me && m.Kind == MsgWrite:
			extend(p.peerExt, m.STag, m.TO, uint64(len(m.Payload)))
			p.writeOff[i] = writeN
			writeN += len(m.Payload)
		case m.Side == p.me && m.Kind == MsgSend:
			p.sendOff[i] = sendN
			sendN += len(m.Payload)
		case m.Side != p.me && m.Kind == MsgSend && p.blamed(i):
			c.noRecv = true // no receive buffer for it (nor after it)
		case m.Side != p.me && m.Kind == MsgSend:
			c.peerSends = append(c.peerSends, i)
			if !c.noRecv {
				c.nRecv++
			}
			c.recvLen = max(c.recvLen, len(m.Payload))
		default:
			p.setup7306(i, c, ownExt)
		}
	}
	// An access the capture shows refused for its bounds names a valid
	// STag: register at least an octet just below it, so that it fails the
	// same way.
	for i, m := range p.s.Msgs {
		if m.Side == p.me || (m.Kind != MsgWrite && m.Kind != MsgReadRequest) {
			continue
		}
		t := p.blame(i)
		if t < 0 || !boundsCause(p.s.Msgs[t].Term) {
			continue
		}
		stag, to := m.STag, m.TO
		if m.Kind == MsgReadRequest {
			stag, to = m.SrcSTag, m.SrcTO
		}
		if _, ok := ownExt[stag]; !ok && to > 0 {
			ownExt[stag] = [2]uint64{to - 1, to}
		}
	}
	for stag, e := range ownExt {
		n := e[1] - e[0]
		if n > 1<<30 {
			return fmt.Errorf("replay: STag 0x%08x spans %d octets in the capture; too large to register", stag, n)
		}
		opt := &endpoint.MROptions{VA: e[0], Key: uint8(stag), ZeroBased: e[0] == 0}
		acc := endpoint.AccessAll
		if p.atomicTargets[stag] {
			acc |= endpoint.AccessRemoteAtomic
		}
		mr, err := p.pd.RegisterMR(make([]byte, max(n, 1)), acc, opt)
		if err != nil {
			return fmt.Errorf("replay: registering STag 0x%08x: %w", stag, err)
		}
		p.own[stag] = &region{mr: mr, base: e[0]}
	}
	reg := func(n int, a endpoint.Access) (*endpoint.MR, error) {
		return p.pd.RegisterMR(make([]byte, max(n, 1)), a, nil)
	}
	var err error
	if p.sendMR, err = reg(sendN, endpoint.AccessLocalRead|endpoint.AccessLocalWrite); err != nil {
		return err
	}
	if p.writeMR, err = reg(writeN, endpoint.AccessLocalRead|endpoint.AccessLocalWrite); err != nil {
		return err
	}
	// Own Sends carry this side's STags: rewrite them to the new ones.
	for i, off := range p.sendOff {
		copy(p.sendMR.Buf()[off:], p.rewrite(p.s.Msgs[i].Payload))
	}
	for i, off := range p.writeOff {
		copy(p.writeMR.Buf()[off:], p.s.Msgs[i].Payload)
	}
	if p.atomicMR, err = reg(8*len(p.atomicOff), endpoint.AccessLocalWrite); err != nil {
		return err
	}
	p.sendMR.Sync()
	p.writeMR.Sync()
	// Read Responses this side sent: their data must be in memory before the
	// peer asks, i.e. before this side's last action preceding the Read
	// Request (rping's client fills its buffer before it advertises it).
	var reqs []int
	for i, m := range p.s.Msgs {
		if m.Side != p.me && m.Kind == MsgReadRequest {
			reqs = append(reqs, i)
		}
	}
	p.fillAtomics()
	k := 0
	for i, m := range p.s.Msgs {
		if m.Side != p.me || m.Kind != MsgReadResponse {
			continue
		}
		if k >= len(reqs) {
			return fmt.Errorf("replay: frame %d: Read Response without a Read Request", m.Frame)
		}
		q := reqs[k]
		k++
		p.fillBefore(i, q)
	}
	for _, c := range p.cs {
		if err := p.setupConn(c); err != nil {
			return err
		}
	}
	return nil
}

// setupConn makes a connection's CQ, QP and receive buffers.
func (p *player) setupConn(c *pconn) error {
	var err error
	n := c.nRecv
	c.recvSlots = max(min(n, 256), 1)
	c.recvLen = max(c.recvLen, 1)
	if c.recvMR, err = p.pd.RegisterMR(make([]byte, c.recvSlots*c.recvLen), endpoint.AccessLocalWrite|endpoint.AccessLocalRead, nil); err != nil {
		return err
	}
	c.recvLeft = n
	if c.cq, err = p.dev.CreateCQ(2*(c.recvSlots+len(p.s.Msgs)) + 64); err != nil {
		return err
	}
	c.qp, err = p.pd.CreateQP(endpoint.QPAttr{SendCQ: c.cq, RecvCQ: c.cq, SQDepth: len(p.s.Msgs) + 16, RQDepth: c.recvSlots + 1, RFC7306: p.ext})
	if err != nil {
		return err
	}
	for slot := 0; slot < c.recvSlots && c.recvLeft > 0; slot++ {
		if err := c.postRecv(slot); err != nil {
			return err
		}
	}
	return nil
}

func (c *pconn) postRecv(slot int) error {
	c.recvLeft--
	_, err := c.qp.PostRecv(endpoint.RecvWR{WRID: uint64(slot), SGL: []endpoint.SGE{c.recvMR.SGE(slot*c.recvLen, c.recvLen)}})
	return err
}

// isAction: message i is one this side performs through the verbs.
func (p *player) isAction(i int) bool {
	m := &p.s.Msgs[i]
	return m.Side == p.me && (m.Kind == MsgSend || m.Kind == MsgWrite || m.Kind == MsgReadRequest || m.Kind == MsgConnect ||
		m.Kind == MsgAtomic || m.Kind == MsgImmediate)
}

// rewrite replaces this side's captured STags in b (4 octets, network
// order, at any offset) with the live ones. The tagged offsets need no
// rewriting: the regions keep their captured TOs.
func (p *player) rewrite(b []byte) []byte {
	out := append([]byte(nil), b...)
	for i := 0; i+4 <= len(out); i++ {
		v := binary.BigEndian.Uint32(out[i:])
		if r, ok := p.own[v]; ok && v != 0 {
			binary.BigEndian.PutUint32(out[i:], uint32(r.mr.STag()))
			i += 3
		}
	}
	return out
}

// learn compares a payload the peer sent (live) with the captured one:
// where the capture holds an STag this side later accesses (4 octets) or
// an advertised address of it (8 octets, at most 4 GiB below the accesses),
// the live octets name the peer's new registration and are taken, not
// compared. Any other octet that differs is a difference.
func (p *player) learn(i, frame int, what string, captured, live []byte) {
	if len(captured) != len(live) {
		p.differ(i, frame, "differs", "%s of %d octets, the capture has %d", what, len(live), len(captured))
		return
	}
	skip := make([]bool, len(captured))
	for stag, ext := range p.peerExt {
		for j := 0; j+4 <= len(captured); j++ {
			if binary.BigEndian.Uint32(captured[j:]) != stag || stag == 0 {
				continue
			}
			p.peerMap[stag] = binary.BigEndian.Uint32(live[j:])
			for k := j; k < j+4; k++ {
				skip[k] = true
			}
			// The advertised address: an 8-octet value near the STag.
			for q := max(0, j-16); q+8 <= min(len(captured), j+4+16); q++ {
				if q+8 > j && q < j+4 {
					continue
				}
				v := binary.BigEndian.Uint64(captured[q:])
				if v <= ext[0] && ext[0]-v < 1<<32 {
					p.peerTO[stag] = int64(binary.BigEndian.Uint64(live[q:]) - v)
					for k := q; k < q+8; k++ {
						skip[k] = true
					}
					break
				}
			}
		}
	}
	for _, r := range p.o.Mask {
		for _, rg := range r.octets(p.s, i, captured) {
			for k := max(rg[0], 0); k < min(rg[1], len(captured)); k++ {
				if !skip[k] {
					skip[k] = true
					p.res.Masked++
				}
			}
		}
	}
	for k := range captured {
		if !skip[k] && captured[k] != live[k] {
			p.differ(i, frame, "differs", "%s differs from octet %d on (0x%02x, the capture has 0x%02x)", what, k, live[k], captured[k])
			return
		}
	}
}

func (p *player) peerSTag(stag uint32) endpoint.STag {
	if v, ok := p.peerMap[stag]; ok {
		return endpoint.STag(v)
	}
	return endpoint.STag(stag)
}

func (p *player) peerAddr(stag uint32, to uint64) uint64 { return uint64(int64(to) + p.peerTO[stag]) }

// ownSGE resolves a captured STag/TO of this side to an SGE.
func (p *player) ownSGE(stag uint32, to uint64, n uint32) (endpoint.SGE, bool) {
	r, ok := p.own[stag]
	if !ok || to < r.base || to+uint64(n) > r.base+uint64(r.mr.Len()) {
		return endpoint.SGE{}, false
	}
	return endpoint.SGE{Addr: r.mr.Addr() + (to - r.base), Length: n, LKey: r.mr.STag()}, true
}

// fillBefore notes that own message i (a Read or Atomic Response) answers
// the peer's Request q: its captured data is put in memory before the last
// own action preceding q is replayed (key -1: before the first), so that
// the live peer's Request finds what the capture's found.
func (p *player) fillBefore(i, q int) {
	at := -1
	for j := q - 1; j >= 0; j-- {
		if p.isAction(j) && p.s.Msgs[j].Kind != MsgConnect {
			at = j
			break
		}
	}
	p.fill[at] = append(p.fill[at], [2]int{i, q})
}
