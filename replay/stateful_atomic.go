package replay

import (
	"encoding/binary"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/endpoint"
)

// RFC 7306 in a stateful replay. The replayed side posts its Atomic
// Requests and Immediate Data again; the peer's atomics are performed by
// the endpoint on regions registered with AccessRemoteAtomic, whose words
// hold, before the peer asks, the original value the capture's Atomic
// Response returned. The original values the live peer returns, and the
// Immediate Data it sends, are compared with the capture. Both sides'
// QPs enable RFC 7306 when the capture has any of its messages: that the
// capture's ULP used them is the agreement (RFC 7306 §1.1).

// setup7306 is setup's part for RFC 7306 message i.
func (p *player) setup7306(i int, c *pconn, ownExt map[uint32][2]uint64) {
	m := &p.s.Msgs[i]
	if m.Kind != MsgAtomic && m.Kind != MsgAtomicResponse && m.Kind != MsgImmediate {
		return
	}
	p.ext = true
	a := &m.Atomic
	switch {
	case m.Side != p.me && m.Kind == MsgAtomic && !p.blamed(i):
		extend(ownExt, a.RemoteSTag, a.RemoteTO, 8)
		p.atomicTargets[a.RemoteSTag] = true
	case m.Side == p.me && m.Kind == MsgAtomic:
		extend(p.peerExt, a.RemoteSTag, a.RemoteTO, 8)
		p.atomicOff[i] = 8 * len(p.atomicOff)
	case m.Side != p.me && m.Kind == MsgAtomicResponse:
		c.peerAtomicResps = append(c.peerAtomicResps, i)
	case m.Side != p.me && m.Kind == MsgImmediate && p.blamed(i):
		c.noRecv = true // no receive buffer for it (nor after it)
	case m.Side != p.me && m.Kind == MsgImmediate:
		// Immediate Data consumes a receive as a Send does (§6.3).
		c.peerImms = append(c.peerImms, i)
		if !c.noRecv {
			c.nRecv++
		}
	}
}

// fillAtomics pairs this side's captured Atomic Responses with the peer's
// Atomic Requests they answered (in order on their connection, §5.2.2
// rule 8) and schedules, for the first request on each word, the
// response's original value to be put there before the last own action
// preceding the request. Later atomics on the word find what the earlier
// ones left.
func (p *player) fillAtomics() {
	reqs := map[int][]int{}
	for i, m := range p.s.Msgs {
		if m.Side != p.me && m.Kind == MsgAtomic && !p.blamed(i) {
			reqs[m.C] = append(reqs[m.C], i)
		}
	}
	next := map[int]int{}
	filled := map[[2]uint64]bool{}
	for i, m := range p.s.Msgs {
		if m.Side != p.me || m.Kind != MsgAtomicResponse || next[m.C] >= len(reqs[m.C]) {
			continue
		}
		q := reqs[m.C][next[m.C]]
		next[m.C]++
		a := &p.s.Msgs[q].Atomic
		w := [2]uint64{uint64(a.RemoteSTag), a.RemoteTO}
		if filled[w] {
			continue
		}
		filled[w] = true
		p.fillBefore(i, q)
	}
}

// fillWord puts the original value of an own Atomic Response where the
// peer's Atomic Request operates, in the target memory's byte order.
func (p *player) fillWord(resp, req *Msg) {
	a := &req.Atomic
	r, ok := p.own[a.RemoteSTag]
	if !ok || a.RemoteTO < r.base || a.RemoteTO-r.base+8 > uint64(r.mr.Len()) {
		return
	}
	binary.NativeEndian.PutUint64(r.mr.Buf()[a.RemoteTO-r.base:], resp.OrigValue)
	r.mr.Sync()
}

// wr7306 makes the work request of own message i.
func (p *player) wr7306(i int, wr *endpoint.SendWR) {
	m := &p.s.Msgs[i]
	if m.Kind == MsgImmediate {
		wr.Opcode, wr.Imm = endpoint.OpImmData, m.Imm
		if m.Opcode == decode.OpImmDataSE {
			wr.Opcode = endpoint.OpImmDataSE
		}
		return
	}
	a := &m.Atomic
	wr.Opcode = endpoint.OpAtomicFetchAdd
	if a.AOpCode == decode.AOpCmpSwap {
		wr.Opcode = endpoint.OpAtomicCmpSwap
	}
	wr.SGL = []endpoint.SGE{p.atomicMR.SGE(p.atomicOff[i], 8)}
	wr.Signaled = true
	wr.RKey, wr.RemoteAddr = p.peerSTag(a.RemoteSTag), p.peerAddr(a.RemoteSTag, a.RemoteTO)
	wr.Atomic = endpoint.AtomicArgs{Data: a.AddSwapData, Mask: a.AddSwapMask, Compare: a.CompareData, CompareMask: a.CompareMask}
}

// atomicCompletion compares the original value of own atomic i, which
// the live peer's Atomic Response carried, with the captured response's.
func (p *player) atomicCompletion(c *pconn, i int) {
	k := c.gotAtomics
	c.gotAtomics++
	if k >= len(c.peerAtomicResps) {
		return
	}
	r := &p.s.Msgs[c.peerAtomicResps[k]]
	if got := binary.NativeEndian.Uint64(p.atomicMR.Buf()[p.atomicOff[i]:]); got != r.OrigValue {
		p.differ(c.peerAtomicResps[k], r.Frame, "differs", "Atomic Response Original Remote Data Value 0x%x, the capture has 0x%x", got, r.OrigValue)
	}
}

// immCompletion compares a receive the peer's Immediate Data completed
// with the capture's next Immediate Data message.
func (p *player) immCompletion(c *pconn, wc *endpoint.WorkCompletion) {
	k := c.gotImms
	c.gotImms++
	if k >= len(c.peerImms) {
		return
	}
	j := c.peerImms[k]
	m := &p.s.Msgs[j]
	if wc.Imm != m.Imm {
		p.differ(j, m.Frame, "differs", "Immediate Data 0x%016x, the capture has 0x%016x", wc.Imm, m.Imm)
	}
	if se := m.Opcode == decode.OpImmDataSE; se != wc.Solicited {
		p.differ(j, m.Frame, "differs", "Immediate Data with Solicited Event %v, the capture has %v", wc.Solicited, se)
	}
}
