package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/endpoint"
)

func rtrSet(f *decode.MPAFrame) endpoint.RTRSet {
	var r endpoint.RTRSet
	if f.V2.ZeroLenSendRTR {
		r |= endpoint.RTRSend
	}
	if f.V2.ZeroLenWriteRTR {
		r |= endpoint.RTRWrite
	}
	if f.V2.ZeroLenReadRTR {
		r |= endpoint.RTRRead
	}
	return r
}

func clampRD(v uint16) int { return min(int(v), 0x3FFE) }

// config is the MPA configuration that reproduces this side's frame.
func (p *player) config(c *pconn, f *decode.MPAFrame) *endpoint.Config {
	cfg := &endpoint.Config{Rev: int(f.Rev), CRC: f.CRC, Markers: f.Markers, Timeout: p.o.Timeout,
		PrivateData: p.rewrite(f.ULPPrivateData()), Capture: p.o.Capture}
	if f.HasV2 {
		cfg.PeerToPeer = f.V2.PeerToPeer
		cfg.RTR = rtrSet(f)
		if cfg.PeerToPeer && cfg.RTR == 0 {
			cfg.RTR = endpoint.RTRAll
		}
		c.qp.SetIRDORD(clampRD(f.V2.IRD), clampRD(f.V2.ORD))
	}
	return cfg
}

// compareFrame compares the peer's MPA frame with the captured one.
func (p *player) compareFrame(i, frame int, want *decode.MPAFrame, rev uint8, crc, markers, reject, v2 bool, ird, ord int, p2p bool, rtr endpoint.RTRSet, pd []byte) {
	name := "MPA Request"
	if want.Reply {
		name = "MPA Reply"
	}
	diff := func(field string, got, w any) {
		p.differ(i, frame, "handshake", "%s %s %v, the capture has %v", name, field, got, w)
	}
	if rev != want.Rev {
		diff("Rev", rev, want.Rev)
	}
	if crc != want.CRC {
		diff("C (CRC)", crc, want.CRC)
	}
	if markers != want.Markers {
		diff("M (markers)", markers, want.Markers)
	}
	if reject != want.Reject {
		diff("R (reject)", reject, want.Reject)
	}
	if v2 != want.HasV2 {
		diff("enhanced (RFC 6581)", v2, want.HasV2)
	} else if v2 {
		if ird != int(want.V2.IRD) || ord != int(want.V2.ORD) {
			diff("IRD/ORD", fmt.Sprintf("%d/%d", ird, ord), fmt.Sprintf("%d/%d", want.V2.IRD, want.V2.ORD))
		}
		if p2p != want.V2.PeerToPeer {
			diff("P2P", p2p, want.V2.PeerToPeer)
		}
		if p2p && !want.Reply && rtr != rtrSet(want) {
			diff("RTR types", rtr, rtrSet(want))
		}
	}
	p.learn(i, frame, name+" Private Data", want.ULPPrivateData(), pd)
}

// handshake redoes the MPA exchange of connection c with the captured
// parameters. It reports false when the connection ends there (a Reject,
// a failure).
func (p *player) handshake(ctx context.Context, c *pconn) bool {
	hs := &c.cs.HS
	i := c.hs
	if p.me == Initiator {
		cfg := p.config(c, &hs.Request)
		conn, err := p.dial(ctx, c.qp, cfg)
		var rej *endpoint.RejectError
		switch {
		case errors.As(err, &rej):
			want := &hs.Reply
			p.compareFrame(i, hs.RepFrame, want, rej.Rev, want.CRC, want.Markers, true, want.HasV2, rej.PeerIRD, rej.PeerORD, want.V2.PeerToPeer, 0, rej.PrivateData)
			return false
		case err != nil:
			p.differ(i, hs.ReqFrame, "handshake", "connection %d: %v", c.cs.Conn, err)
			return false
		}
		c.conn = conn
		pr := conn.Params()
		var rep decode.MPAFrame
		if _, err := decode.ParseMPAFrame(pr.Reply, &rep); err != nil {
			p.differ(i, hs.RepFrame, "handshake", "MPA Reply: %v", err)
			return false
		}
		if hs.Seen {
			p.compareFrame(i, hs.RepFrame, &hs.Reply, rep.Rev, rep.CRC, rep.Markers, rep.Reject, rep.HasV2, int(rep.V2.IRD), int(rep.V2.ORD), rep.V2.PeerToPeer, rtrSet(&rep), rep.ULPPrivateData())
		}
		if hs.Rejected {
			p.differ(i, hs.RepFrame, "handshake", "the peer accepted the connection, the capture has a Reject")
		}
		return true
	}
	// The k-th TCP connection accepted plays the k-th connection of the
	// script. The Reply's flags differ per connection: no endpoint.Listener.
	cfg := p.config(c, &hs.Reply)
	type acc struct {
		c   net.Conn
		err error
	}
	ch := make(chan acc, 1)
	go func() {
		nc, err := p.ln.Accept()
		ch <- acc{nc, err}
	}()
	t := time.NewTimer(p.o.Timeout)
	defer t.Stop()
	var a acc
	select {
	case a = <-ch:
	case <-t.C:
		a.err = fmt.Errorf("no connection within %v", p.o.Timeout)
	case <-ctx.Done():
		a.err = ctx.Err()
	}
	if a.err != nil {
		// Unblock the Accept goroutine: the listener is closed by run's
		// caller at the end anyway; close it now, nothing more will come.
		p.ln.Close()
		if r := <-ch; r.c != nil {
			r.c.Close()
		}
		p.differ(i, hs.ReqFrame, "handshake", "connection %d: %v", c.cs.Conn, a.err)
		return false
	}
	req, err := endpoint.AcceptConn(ctx, a.c, cfg)
	if err != nil {
		p.differ(i, hs.ReqFrame, "handshake", "connection %d: %v", c.cs.Conn, err)
		return false
	}
	if hs.Seen {
		p.compareFrame(i, hs.ReqFrame, &hs.Request, req.Rev, req.CRC, req.Markers, false, req.Enhanced, req.PeerIRD, req.PeerORD, req.PeerToPeer, req.RTROffered, req.PrivateData)
	}
	pd := p.rewrite(hs.Reply.ULPPrivateData())
	if hs.Rejected {
		req.Reject(pd)
		return false
	}
	conn, err := req.Accept(c.qp, pd)
	if err != nil {
		p.differ(i, hs.ReqFrame, "handshake", "connection %d: accepting: %v", c.cs.Conn, err)
		return false
	}
	c.conn = conn
	return true
}

// dial dials the Responder, and again, within Timeout, after a refusal or
// a reset before the MPA Reply: a peer that listens for a connection only
// once the exchange before it is done (perftest's server for its test
// connections), or that was restarted, is not a difference.
func (p *player) dial(ctx context.Context, qp *endpoint.QP, cfg *endpoint.Config) (*endpoint.Conn, error) {
	end := time.Now().Add(p.o.Timeout)
	for {
		conn, err := endpoint.Dial(ctx, "tcp", p.o.Addr, qp, cfg)
		if err == nil || qp.State() != endpoint.StateIdle || time.Now().After(end) ||
			!(errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
			return conn, err
		}
		p.res.Redials++
		if !sleepCtx(ctx, 100*time.Millisecond) {
			return nil, err
		}
	}
}

func (p *player) run(ctx context.Context) error {
	if p.me == Responder {
		p.ln = p.o.Listener
		if p.ln == nil {
			var lc net.ListenConfig
			l, err := lc.Listen(ctx, "tcp", p.o.Addr)
			if err != nil {
				return err
			}
			p.ln = l
		}
		defer p.ln.Close()
		if p.o.Ready != nil {
			p.o.Ready(p.ln.Addr())
		}
	}
	performed := p.play(ctx)
	if performed == len(p.s.Msgs) {
		p.waitUntil(ctx, len(p.s.Msgs))
	}
	for _, c := range p.cs {
		if c.conn != nil {
			c.conn.Close()
		}
	}
	for _, c := range p.cs {
		if c.conn != nil {
			p.poll(c)
			p.res.Params = append(p.res.Params, c.conn.Params())
			p.res.Counters = append(p.res.Counters, c.qp.Counters())
		}
	}
	p.account(performed)
	return ctx.Err()
}

// play performs this side's actions in capture order and returns the index
// of the first message it did not get to (len(Msgs) when all were done).
func (p *player) play(ctx context.Context) int {
	p.start = time.Now()
	base := time.Duration(0)
	for i := range p.s.Msgs {
		if p.s.Msgs[i].Side == p.me && p.s.Msgs[i].Kind != MsgConnect {
			base = p.s.Msgs[i].Rel
			break
		}
	}
	for _, f := range p.fill[-1] {
		p.fillMem(f)
	}
	for i := range p.s.Msgs {
		m := &p.s.Msgs[i]
		if m.Kind != MsgConnect && !p.isAction(i) {
			continue
		}
		// Everything the capture shows the peer doing before this action
		// must have happened first.
		if !p.waitUntil(ctx, i) {
			return i
		}
		if m.Kind == MsgConnect {
			// The Initiator dials at the capture's time of the
			// connection's first frame (its SYN): a peer such as
			// perftest's server listens for its test connections
			// only after the exchange before them, and a dial that
			// comes early is reset.
			if p.me == Initiator && !p.sleepUntil(ctx, m.Opened, base) {
				return i
			}
			// A connection the capture shows rejected ends there, and
			// the others go on.
			if !p.handshake(ctx, p.cs[m.C]) && !p.cs[m.C].cs.HS.Rejected {
				return i + 1
			}
			// The capture's time runs again from the handshake's end: the
			// gap between the MPA Reply and the first FPDU is kept (an
			// application such as rping waits for ESTABLISHED first, and
			// Linux siw's accept path can leave an FPDU that follows its
			// Reply at once unread).
			if m.Rel > 0 {
				p.start, base = time.Now(), m.Rel
			}
			p.settle = time.Now().Add(p.o.StartDelay)
			continue
		}
		if !p.sleepUntil(ctx, m.Rel, base) || !sleepCtx(ctx, time.Until(p.settle)) {
			return i
		}
		for _, f := range p.fill[i] {
			p.fillMem(f)
		}
		if !p.act(i) {
			return i
		}
	}
	return len(p.s.Msgs)
}

// sleepUntil waits until capture time rel is due: rel-base after
// p.start, scaled by the multiplier (not with Topspeed). It is false when
// ctx ended first.
func (p *player) sleepUntil(ctx context.Context, rel, base time.Duration) bool {
	if p.o.Topspeed || rel <= base {
		return true
	}
	return sleepCtx(ctx, time.Until(p.start.Add(time.Duration(float64(rel-base)/p.o.Multiplier))))
}

// fillMem puts the data of an own Read Response (f[0]) where the peer's
// Read Request (f[1]) reads it.
func (p *player) fillMem(f [2]int) {
	resp, req := &p.s.Msgs[f[0]], &p.s.Msgs[f[1]]
	if resp.Kind == MsgAtomicResponse {
		p.fillWord(resp, req)
		return
	}
	r, ok := p.own[req.SrcSTag]
	if !ok || req.SrcTO < r.base {
		return // not registered: the peer's Read fails, as it did in the capture
	}
	off := req.SrcTO - r.base
	if off >= uint64(r.mr.Len()) {
		return
	}
	copy(r.mr.Buf()[off:], resp.Payload)
	r.mr.Sync()
}

// act performs own message i through the verbs.
func (p *player) act(i int) bool {
	m := &p.s.Msgs[i]
	wr := endpoint.SendWR{WRID: uint64(i)}
	switch m.Kind {
	case MsgSend:
		wr.Opcode = map[decode.Opcode]endpoint.Opcode{decode.OpSend: endpoint.OpSend, decode.OpSendSE: endpoint.OpSendSE,
			decode.OpSendInv: endpoint.OpSendInv, decode.OpSendSEInv: endpoint.OpSendSEInv}[m.Opcode]
		wr.SGL = []endpoint.SGE{p.sendMR.SGE(p.sendOff[i], len(m.Payload))}
		wr.InvalidateSTag = p.peerSTag(m.InvalidateSTag)
	case MsgWrite:
		wr.Opcode = endpoint.OpWrite
		wr.SGL = []endpoint.SGE{p.writeMR.SGE(p.writeOff[i], len(m.Payload))}
		wr.RKey, wr.RemoteAddr = p.peerSTag(m.STag), p.peerAddr(m.STag, m.TO)
	case MsgReadRequest:
		sink, ok := p.ownSGE(m.STag, m.TO, m.Size)
		if !ok {
			p.differ(i, m.Frame, "refused", "no registration for the Read's sink STag 0x%08x", m.STag)
			return true
		}
		wr.Opcode = endpoint.OpRead
		wr.SGL = []endpoint.SGE{sink}
		wr.Signaled = true
		wr.RKey, wr.RemoteAddr = p.peerSTag(m.SrcSTag), p.peerAddr(m.SrcSTag, m.SrcTO)
	case MsgAtomic, MsgImmediate:
		p.wr7306(i, &wr)
	}
	c := p.cs[m.C]
	if _, err := c.qp.PostSend(wr); err != nil {
		p.differ(i, m.Frame, "completion", "posting the %v: %v", m.Kind, err)
		return false
	}
	if m.Kind == MsgReadRequest {
		c.postedReads = append(c.postedReads, i)
	}
	return true
}

// counts are what one side has done, by kind of message.
type counts struct {
	sends, writes, readReqs, readResps, terms int
	atomics, atomicResps, imms                int // RFC 7306
}

// of is the count of messages of kind k.
func (c *counts) of(k MsgKind) int {
	switch k {
	case MsgSend:
		return c.sends
	case MsgWrite:
		return c.writes
	case MsgReadRequest:
		return c.readReqs
	case MsgReadResponse:
		return c.readResps
	case MsgTerminate:
		return c.terms
	case MsgAtomic:
		return c.atomics
	case MsgAtomicResponse:
		return c.atomicResps
	case MsgImmediate:
		return c.imms
	}
	return 0
}

func (c *counts) add(k MsgKind) {
	switch k {
	case MsgSend:
		c.sends++
	case MsgWrite:
		c.writes++
	case MsgReadRequest:
		c.readReqs++
	case MsgReadResponse:
		c.readResps++
	case MsgTerminate:
		c.terms++
	case MsgAtomic:
		c.atomics++
	case MsgAtomicResponse:
		c.atomicResps++
	case MsgImmediate:
		c.imms++
	}
}

// expected counts, per connection, the peer's messages and this side's
// automatic ones (Read Responses, Terminates) before message i.
func (p *player) expected(i int) (peer, own []counts) {
	peer, own = make([]counts, len(p.cs)), make([]counts, len(p.cs))
	for j := 0; j < i && j < len(p.s.Msgs); j++ {
		m := &p.s.Msgs[j]
		if m.Side == p.me {
			if m.Kind == MsgReadResponse || m.Kind == MsgTerminate || m.Kind == MsgAtomicResponse {
				own[m.C].add(m.Kind) // the endpoint's own doing
			}
		} else if !p.silent(j) {
			peer[m.C].add(m.Kind)
		}
	}
	return
}

// silent: peer message j is one the capture shows refused by this side's
// Terminate before it counted (a Write or Send that was not placed).
// A message after this side's Terminate is not taken either (RFC 5040
// §6.2.1: the stream is over for the receiver).
func (p *player) silent(j int) bool {
	m := &p.s.Msgs[j]
	if m.Kind == MsgConnect {
		return false
	}
	for k := 0; k < j; k++ {
		if t := &p.s.Msgs[k]; t.Kind == MsgTerminate && t.C == m.C && t.Side != m.Side {
			return true
		}
	}
	return (m.Kind == MsgWrite || m.Kind == MsgSend || m.Kind == MsgImmediate) && p.blamed(j)
}

// excused: an error completion of own message i is what the capture
// shows: a Terminate on its connection blamed it or an earlier message.
func (p *player) excused(i int) bool {
	m := &p.s.Msgs[i]
	for j := 0; j < len(p.s.Msgs); j++ {
		o := &p.s.Msgs[j]
		if o.C != m.C {
			continue
		}
		if t := p.blame(j); t >= 0 && j <= i {
			return true
		}
		if o.Kind == MsgTerminate && j <= i {
			return true
		}
	}
	return false
}

// seen counts what the live peer did so far on connection c, and this
// side's automatic messages.
func (p *player) seen(c *pconn) (peer, own counts) {
	if c.conn == nil {
		return
	}
	n := c.qp.Counters()
	peer = counts{sends: c.gotSends, writes: int(n.RxWrites), readReqs: int(n.RxReadReqs), readResps: c.gotReads,
		atomics: int(n.RxAtomicReqs), atomicResps: c.gotAtomics, imms: c.gotImms}
	own = counts{readResps: int(n.TxReadResps), atomicResps: int(n.TxAtomicResps)}
	if t := c.qp.Terminate(); t != nil {
		if t.Local {
			own.terms = 1
		} else {
			peer.terms = 1
		}
	}
	return
}

func covers(got, want counts) bool {
	return got.sends >= want.sends && got.writes >= want.writes && got.readReqs >= want.readReqs &&
		got.readResps >= want.readResps && got.terms >= want.terms &&
		got.atomics >= want.atomics && got.atomicResps >= want.atomicResps && got.imms >= want.imms
}

// waitUntil processes completions until everything the capture shows the
// peer (and this side's endpoint on its own) doing before message i has
// happened. It reports false when that did not happen within the timeout,
// or cannot happen any more.
func (p *player) waitUntil(ctx context.Context, i int) bool {
	wantPeer, wantOwn := p.expected(i)
	deadline := time.Now().Add(p.o.Timeout)
	for {
		ok, over := true, false
		for k, c := range p.cs {
			p.poll(c)
			gotPeer, gotOwn := p.seen(c)
			if !covers(gotPeer, wantPeer[k]) || !covers(gotOwn, wantOwn[k]) {
				ok = false
				if c.conn == nil {
					over = true // not connected (yet): nothing will come
				} else {
					select {
					case <-c.qp.Done():
						p.poll(c)
						gotPeer, gotOwn = p.seen(c)
						over = over || !covers(gotPeer, wantPeer[k]) || !covers(gotOwn, wantOwn[k])
					default:
					}
				}
			}
		}
		if ok {
			return true
		}
		if over || time.Now().After(deadline) {
			return false
		}
		// Writes and Read Requests of the peer make no completion here:
		// look at the counters every 200 µs.
		t := time.NewTimer(200 * time.Microsecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
}

// poll takes the completions waiting and compares what they show.
func (p *player) poll(c *pconn) {
	if c.cq == nil {
		return
	}
	var wcs [32]endpoint.WorkCompletion
	for {
		n := c.cq.Poll(wcs[:])
		if n == 0 {
			return
		}
		for k := range wcs[:n] {
			p.completion(c, &wcs[k])
		}
	}
}

func (p *player) completion(c *pconn, wc *endpoint.WorkCompletion) {
	if wc.Opcode == endpoint.OpRecv {
		if wc.Status != endpoint.StatusSuccess {
			return // flushed at the end
		}
		slot := int(wc.WRID)
		live := c.recvMR.Buf()[slot*c.recvLen : slot*c.recvLen+int(wc.ByteLen)]
		if wc.WithImm {
			p.immCompletion(c, wc)
		} else if c.gotSends < len(c.peerSends) {
			i := c.peerSends[c.gotSends]
			m := &p.s.Msgs[i]
			p.learn(i, m.Frame, "Send", m.Payload, live)
			if se := m.Opcode == decode.OpSendSE || m.Opcode == decode.OpSendSEInv; se != wc.Solicited {
				p.differ(i, m.Frame, "differs", "Send with Solicited Event %v, the capture has %v", wc.Solicited, se)
			}
		}
		if !wc.WithImm {
			c.gotSends++
		}
		c.recvMR.Sync()
		if c.recvLeft > 0 {
			if err := c.postRecv(slot); err != nil {
				p.differ(-2, 0, "completion", "reposting a receive: %v", err)
			}
		}
		return
	}
	i := int(wc.WRID)
	if i >= len(p.s.Msgs) {
		return
	}
	m := &p.s.Msgs[i]
	if wc.Status != endpoint.StatusSuccess {
		if (wc.Status == endpoint.StatusFlushed || wc.Status == endpoint.StatusRemoteTermination) && p.excused(i) {
			return
		}
		what := fmt.Sprintf("the %v completed with %v", m.Kind, wc.Status)
		if wc.Err != nil {
			what += ": " + wc.Err.Error()
		}
		p.differ(i, m.Frame, "completion", "%s", what)
		return
	}
	if wc.Opcode == endpoint.OpAtomicFetchAdd || wc.Opcode == endpoint.OpAtomicCmpSwap {
		p.atomicCompletion(c, i)
	}
	if wc.Opcode == endpoint.OpRead {
		// The peer's Read Response: compare its data.
		k := c.gotReads
		c.gotReads++
		if k >= len(c.peerResp) {
			return
		}
		j := c.peerResp[k]
		r := &p.s.Msgs[j]
		// A later Read into the same region already in flight may be
		// placing its data: then this one's cannot be told.
		busy := false
		for _, q := range c.postedReads[c.gotReads:] {
			busy = busy || p.s.Msgs[q].STag == m.STag
		}
		if sink, ok := p.ownSGE(m.STag, m.TO, m.Size); ok && !busy {
			reg := p.own[m.STag]
			off := sink.Addr - reg.mr.Addr()
			p.learn(j, r.Frame, "RDMA Read Response data", r.Payload, reg.mr.Buf()[off:off+uint64(m.Size)])
			reg.mr.Sync()
		}
	}
}

func plural(n int, s string) string {
	if n == 1 {
		return "1 " + s
	}
	return fmt.Sprintf("%d %ss", n, s)
}

// account compares, once the connection is over, every message of the
// capture with what happened: this side's actions up to performed were
// done; the peer's messages and this side's automatic ones are counted.
func (p *player) account(performed int) {
	n := len(p.cs)
	gotPeer, gotOwn := make([]counts, n), make([]counts, n)
	terms := make([]*endpoint.TermInfo, n)
	for k, c := range p.cs {
		gotPeer[k], gotOwn[k] = p.seen(c)
		if c.conn != nil {
			terms[k] = c.qp.Terminate()
		}
	}
	rankPeer, rankOwn := make([]counts, n), make([]counts, n)
	for i := range p.s.Msgs {
		m := &p.s.Msgs[i]
		term := terms[m.C]
		if m.Kind == MsgConnect {
			if i >= performed && !p.bad[i] {
				p.differ(i, m.Frame, "missing", "connection %d not made: the peer did not do what the capture shows before it", p.cs[m.C].cs.Conn)
			}
			continue
		}
		if m.Side == p.me {
			rankOwn[m.C].add(m.Kind)
			switch m.Kind {
			case MsgSend, MsgWrite, MsgReadRequest, MsgAtomic, MsgImmediate:
				if i >= performed && !p.bad[i] {
					p.differ(i, m.Frame, "missing", "%v not replayed: the peer did not do what the capture shows before it", m.Kind)
				}
			case MsgReadResponse, MsgAtomicResponse:
				if rankOwn[m.C].of(m.Kind) > gotOwn[m.C].of(m.Kind) && !p.bad[i] {
					p.differ(i, m.Frame, "missing", "the peer did not ask for this %v", m.Kind)
				}
			case MsgTerminate:
				switch {
				case term == nil || !term.Local:
					p.differ(i, m.Frame, "terminate", "no Terminate was sent (the capture has %s)", m.Term.Short())
				case term.Cause.Layer != m.Term.Layer || term.Cause.EType != m.Term.EType || term.Cause.Code != m.Term.Code:
					p.differ(i, m.Frame, "terminate", "sent Terminate %s (%s), the capture has %s", term.Cause.Short(), term.Reason, m.Term.Short())
				}
			}
			continue
		}
		rp, gp := &rankPeer[m.C], &gotPeer[m.C]
		if p.silent(i) {
			continue // its Terminate tells
		}
		rp.add(m.Kind)
		if p.bad[i] {
			continue
		}
		switch m.Kind {
		case MsgSend, MsgWrite, MsgReadRequest, MsgReadResponse, MsgAtomic, MsgAtomicResponse, MsgImmediate:
			if rp.of(m.Kind) > gp.of(m.Kind) {
				p.differ(i, m.Frame, "missing", "no such %v from the peer", m.Kind)
			}
		case MsgTerminate:
			switch {
			case term == nil || term.Local:
				p.differ(i, m.Frame, "terminate", "the peer sent no Terminate (the capture has %s)", m.Term.Short())
			case term.Cause.Layer != m.Term.Layer || term.Cause.EType != m.Term.EType || term.Cause.Code != m.Term.Code:
				p.differ(i, m.Frame, "terminate", "the peer sent Terminate %s, the capture has %s", term.Cause.Short(), m.Term.Short())
			}
		}
	}
	// What the peer did beyond the capture.
	for k, c := range p.cs {
		extra := func(got, want int, what string) {
			if got > want {
				p.differ(-2, 0, "unexpected", "connection %d: the peer made %s more than the capture shows", c.cs.Conn, plural(got-want, what))
			}
		}
		extra(gotPeer[k].sends, rankPeer[k].sends, "Send")
		extra(gotPeer[k].writes, rankPeer[k].writes, "RDMA Write")
		extra(gotPeer[k].readReqs, rankPeer[k].readReqs, "RDMA Read Request")
		extra(gotPeer[k].atomics, rankPeer[k].atomics, "Atomic Request")
		extra(gotPeer[k].imms, rankPeer[k].imms, "Immediate Data message")
		if t := terms[k]; t != nil && !t.Local && rankPeer[k].terms == 0 {
			p.differ(-2, 0, "unexpected", "connection %d: the peer sent Terminate %s", c.cs.Conn, t.Cause.Short())
		}
		if t := terms[k]; t != nil && t.Local && rankOwn[k].terms == 0 {
			p.differ(-2, 0, "unexpected", "connection %d: this side sent Terminate %s: %s", c.cs.Conn, t.Cause.Short(), t.Reason)
		}
	}
}

// sleepCtx sleeps d (nothing when d <= 0); false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
