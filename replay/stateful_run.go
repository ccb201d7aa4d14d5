package replay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/endpoint"
)

// hsIndex is the Bad key of the handshake.
const hsIndex = -1

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
func (p *player) config(f *decode.MPAFrame) *endpoint.Config {
	cfg := &endpoint.Config{Rev: int(f.Rev), CRC: f.CRC, Markers: f.Markers, Timeout: p.o.Timeout,
		PrivateData: p.rewrite(f.ULPPrivateData())}
	if f.HasV2 {
		cfg.PeerToPeer = f.V2.PeerToPeer
		cfg.RTR = rtrSet(f)
		if cfg.PeerToPeer && cfg.RTR == 0 {
			cfg.RTR = endpoint.RTRAll
		}
		p.qp.SetIRDORD(clampRD(f.V2.IRD), clampRD(f.V2.ORD))
	}
	return cfg
}

// compareFrame compares the peer's MPA frame with the captured one.
func (p *player) compareFrame(frame int, want *decode.MPAFrame, rev uint8, crc, markers, reject, v2 bool, ird, ord int, p2p bool, rtr endpoint.RTRSet, pd []byte) {
	name := "MPA Request"
	if want.Reply {
		name = "MPA Reply"
	}
	diff := func(field string, got, w any) {
		p.differ(hsIndex, frame, "handshake", "%s %s %v, the capture has %v", name, field, got, w)
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
	p.learn(hsIndex, frame, name+" Private Data", want.ULPPrivateData(), pd)
}

// handshake redoes the MPA exchange with the captured parameters. It
// returns done when the connection ends there (a captured Reject).
func (p *player) handshake(ctx context.Context) (done bool, err error) {
	hs := &p.s.HS
	if p.me == Initiator {
		cfg := p.config(&hs.Request)
		conn, err := endpoint.Dial(ctx, "tcp", p.o.Addr, p.qp, cfg)
		var rej *endpoint.RejectError
		switch {
		case errors.As(err, &rej):
			want := &hs.Reply
			p.compareFrame(hs.RepFrame, want, rej.Rev, want.CRC, want.Markers, true, want.HasV2, rej.PeerIRD, rej.PeerORD, want.V2.PeerToPeer, 0, rej.PrivateData)
			if !hs.Rejected {
				return true, nil
			}
			return true, nil
		case err != nil:
			return true, err
		}
		p.conn = conn
		pr := conn.Params()
		var rep decode.MPAFrame
		if _, err := decode.ParseMPAFrame(pr.Reply, &rep); err != nil {
			return true, err
		}
		if hs.Seen {
			p.compareFrame(hs.RepFrame, &hs.Reply, rep.Rev, rep.CRC, rep.Markers, rep.Reject, rep.HasV2, int(rep.V2.IRD), int(rep.V2.ORD), rep.V2.PeerToPeer, rtrSet(&rep), rep.ULPPrivateData())
		}
		if hs.Rejected {
			p.differ(hsIndex, hs.RepFrame, "handshake", "the peer accepted the connection, the capture has a Reject")
		}
		return false, nil
	}
	l := p.o.Listener
	if l == nil {
		var lc net.ListenConfig
		if l, err = lc.Listen(ctx, "tcp", p.o.Addr); err != nil {
			return true, err
		}
	}
	cfg := p.config(&hs.Reply)
	ln := endpoint.NewListener(l, cfg)
	defer ln.Close()
	if p.o.Ready != nil {
		p.o.Ready(ln.Addr())
	}
	var req *endpoint.ConnRequest
	for {
		req, err = ln.Accept(ctx)
		var me *endpoint.MPAError
		if errors.As(err, &me) {
			p.differ(hsIndex, hs.ReqFrame, "handshake", "%v", err)
			return true, nil
		}
		if err != nil {
			return true, err
		}
		break
	}
	if hs.Seen {
		p.compareFrame(hs.ReqFrame, &hs.Request, req.Rev, req.CRC, req.Markers, false, req.Enhanced, req.PeerIRD, req.PeerORD, req.PeerToPeer, req.RTROffered, req.PrivateData)
	}
	pd := p.rewrite(hs.Reply.ULPPrivateData())
	if hs.Rejected {
		req.Reject(pd)
		return true, nil
	}
	conn, err := req.Accept(p.qp, pd)
	if err != nil {
		return true, err
	}
	p.conn = conn
	return false, nil
}

func (p *player) run(ctx context.Context) error {
	done, err := p.handshake(ctx)
	if p.conn == nil {
		if err != nil || !done {
			p.differ(hsIndex, p.s.HS.ReqFrame, "handshake", "no connection: %v", err)
		}
		p.account(0)
		return err
	}
	p.res.Params = p.conn.Params()
	performed := p.play(ctx)
	if performed == len(p.s.Msgs) {
		p.waitUntil(ctx, len(p.s.Msgs))
	}
	p.conn.Close()
	p.poll()
	p.res.Counters = p.qp.Counters()
	p.account(performed)
	return ctx.Err()
}

// play performs this side's actions in capture order and returns the index
// of the first message it did not get to (len(Msgs) when all were done).
func (p *player) play(ctx context.Context) int {
	p.start = time.Now()
	base := time.Duration(0)
	for i := range p.s.Msgs {
		if p.s.Msgs[i].Side == p.me {
			base = p.s.Msgs[i].Rel
			break
		}
	}
	for _, f := range p.fill[-1] {
		p.fillMem(f)
	}
	for i := range p.s.Msgs {
		m := &p.s.Msgs[i]
		if !p.isAction(i) {
			continue
		}
		// Everything the capture shows the peer doing before this action
		// must have happened first.
		if !p.waitUntil(ctx, i) {
			return i
		}
		if !p.o.Topspeed {
			due := p.start.Add(time.Duration(float64(m.Rel-base) / p.o.Multiplier))
			if d := time.Until(due); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return i
				}
			}
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

// fillMem puts the data of an own Read Response (f[0]) where the peer's
// Read Request (f[1]) reads it.
func (p *player) fillMem(f [2]int) {
	resp, req := &p.s.Msgs[f[0]], &p.s.Msgs[f[1]]
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
	}
	if _, err := p.qp.PostSend(wr); err != nil {
		p.differ(i, m.Frame, "completion", "posting the %v: %v", m.Kind, err)
		return false
	}
	return true
}

// counts are what one side has done, by kind of message.
type counts struct {
	sends, writes, readReqs, readResps, terms int
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
	}
}

// expected counts the peer's messages, and this side's automatic ones
// (Read Responses, Terminates), before message i.
func (p *player) expected(i int) (peer, own counts) {
	for j := 0; j < i && j < len(p.s.Msgs); j++ {
		m := &p.s.Msgs[j]
		if m.Side == p.me {
			if m.Kind == MsgReadResponse || m.Kind == MsgTerminate {
				own.add(m.Kind) // the endpoint's own doing
			}
		} else {
			peer.add(m.Kind)
		}
	}
	return
}

// seen counts what the live peer did so far, and this side's automatic
// messages.
func (p *player) seen() (peer, own counts) {
	c := p.qp.Counters()
	peer = counts{sends: p.gotSends, writes: int(c.RxWrites), readReqs: int(c.RxReadReqs), readResps: p.gotReads}
	own = counts{readResps: int(c.TxReadResps)}
	if t := p.qp.Terminate(); t != nil {
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
		got.readResps >= want.readResps && got.terms >= want.terms
}

// waitUntil processes completions until everything the capture shows the
// peer (and this side's endpoint on its own) doing before message i has
// happened. It reports false when that did not happen within the timeout,
// or cannot happen any more.
func (p *player) waitUntil(ctx context.Context, i int) bool {
	wantPeer, wantOwn := p.expected(i)
	deadline := time.Now().Add(p.o.Timeout)
	done := p.qp.Done()
	for {
		p.cq.ReqNotify(false)
		p.poll()
		gotPeer, gotOwn := p.seen()
		if covers(gotPeer, wantPeer) && covers(gotOwn, wantOwn) {
			return true
		}
		select {
		case <-done:
			p.poll()
			gotPeer, gotOwn = p.seen()
			return covers(gotPeer, wantPeer) && covers(gotOwn, wantOwn)
		default:
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		// Writes and Read Requests of the peer make no completion here:
		// look at the counters at least every millisecond.
		t := time.NewTimer(min(left, time.Millisecond))
		select {
		case <-p.cq.Notify():
		case <-t.C:
		case <-done:
		case <-ctx.Done():
			t.Stop()
			return false
		}
		t.Stop()
	}
}

// poll takes the completions waiting and compares what they show.
func (p *player) poll() {
	var wcs [32]endpoint.WorkCompletion
	for {
		n := p.cq.Poll(wcs[:])
		if n == 0 {
			return
		}
		for k := range wcs[:n] {
			p.completion(&wcs[k])
		}
	}
}

func (p *player) completion(wc *endpoint.WorkCompletion) {
	if wc.Opcode == endpoint.OpRecv {
		if wc.Status != endpoint.StatusSuccess {
			return // flushed at the end
		}
		slot := int(wc.WRID)
		live := p.recvMR.Buf()[slot*p.recvLen : slot*p.recvLen+int(wc.ByteLen)]
		if p.gotSends < len(p.peerSends) {
			i := p.peerSends[p.gotSends]
			m := &p.s.Msgs[i]
			p.learn(i, m.Frame, "Send", m.Payload, live)
			if se := m.Opcode == decode.OpSendSE || m.Opcode == decode.OpSendSEInv; se != wc.Solicited {
				p.differ(i, m.Frame, "differs", "Send with Solicited Event %v, the capture has %v", wc.Solicited, se)
			}
		}
		p.gotSends++
		p.recvMR.Sync()
		if p.recvLeft > 0 {
			if err := p.postRecv(slot); err != nil {
				p.differ(hsIndex, 0, "completion", "reposting a receive: %v", err)
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
		what := fmt.Sprintf("the %v completed with %v", m.Kind, wc.Status)
		if wc.Err != nil {
			what += ": " + wc.Err.Error()
		}
		p.differ(i, m.Frame, "completion", "%s", what)
		return
	}
	if wc.Opcode == endpoint.OpRead {
		// The peer's Read Response: compare its data.
		k := p.gotReads
		p.gotReads++
		n := 0
		for j := range p.s.Msgs {
			r := &p.s.Msgs[j]
			if r.Side == p.me || r.Kind != MsgReadResponse {
				continue
			}
			if n == k {
				sink, _ := p.ownSGE(m.STag, m.TO, m.Size)
				reg := p.own[m.STag]
				off := sink.Addr - reg.mr.Addr()
				live := reg.mr.Buf()[off : off+uint64(m.Size)]
				p.learn(j, r.Frame, "RDMA Read Response data", r.Payload, live)
				reg.mr.Sync()
				return
			}
			n++
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
	var gotPeer, gotOwn counts
	var term *endpoint.TermInfo
	if p.qp != nil && p.conn != nil {
		gotPeer, gotOwn = p.seen()
		term = p.qp.Terminate()
	}
	var rankPeer, rankOwn counts
	for i := range p.s.Msgs {
		m := &p.s.Msgs[i]
		if m.Side == p.me {
			rankOwn.add(m.Kind)
			switch m.Kind {
			case MsgSend, MsgWrite, MsgReadRequest:
				if i >= performed && !p.bad[i] {
					p.differ(i, m.Frame, "missing", "%v not replayed: the peer did not do what the capture shows before it", m.Kind)
				}
			case MsgReadResponse:
				if rankOwn.readResps > gotOwn.readResps && !p.bad[i] {
					p.differ(i, m.Frame, "missing", "the peer did not ask for this RDMA Read Response")
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
		rankPeer.add(m.Kind)
		if p.bad[i] {
			continue
		}
		switch m.Kind {
		case MsgSend:
			if rankPeer.sends > gotPeer.sends {
				p.differ(i, m.Frame, "missing", "the peer sent no such Send")
			}
		case MsgWrite:
			if rankPeer.writes > gotPeer.writes {
				p.differ(i, m.Frame, "missing", "the peer made no such RDMA Write")
			}
		case MsgReadRequest:
			if rankPeer.readReqs > gotPeer.readReqs {
				p.differ(i, m.Frame, "missing", "the peer made no such RDMA Read Request")
			}
		case MsgReadResponse:
			if rankPeer.readResps > gotPeer.readResps {
				p.differ(i, m.Frame, "missing", "no such RDMA Read Response from the peer")
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
	extra := func(got, want int, what string) {
		if got > want {
			p.differ(-2, 0, "unexpected", "the peer made %s more than the capture shows", plural(got-want, what))
		}
	}
	extra(gotPeer.sends, rankPeer.sends, "Send")
	extra(gotPeer.writes, rankPeer.writes, "RDMA Write")
	extra(gotPeer.readReqs, rankPeer.readReqs, "RDMA Read Request")
	if term != nil && !term.Local && rankPeer.terms == 0 {
		p.differ(-2, 0, "unexpected", "the peer sent Terminate %s", term.Cause.Short())
	}
	if term != nil && term.Local && rankOwn.terms == 0 {
		p.differ(-2, 0, "unexpected", "this side sent Terminate %s: %s", term.Cause.Short(), term.Reason)
	}
}
