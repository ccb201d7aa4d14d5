package ulp

import "github.com/iwkit/iwkit/decode"

// RDMA_NOMSG replies (RFC 8166 §3.6, §4.4.3): a reply too large for the
// requester's inline receive buffer goes into the reply chunk the call
// advertised. The responder RDMA-Writes the whole RPC reply message into
// the chunk's segments, in order, then Sends an RDMA_NOMSG transport
// header whose reply chunk echoes how many octets each segment received.
// The reply is those octets, segment after segment: kept here from the
// Writes (only those landing in an advertised reply chunk) so the RPC and
// NFS status decode as for an inline reply.

// maxReplySegs is the reply chunk segments a call may advertise for its
// reply to be reassembled (Linux advertises one per page run; a longer
// chunk is counted, not kept).
const maxReplySegs = 16

// replyChunk is a call's reply chunk and what was written into it.
type replyChunk struct {
	n   int
	seg [maxReplySegs]replySeg
	// kept is the octets held in the segments' data; cut says Writes were
	// not kept for the caps (Limits.Message per reply, four times that per
	// connection), lost the octets that the capture lacks or came out of
	// order.
	kept      int
	cut, lost bool
}

type replySeg struct {
	handle uint32
	base   uint64
	length uint32
	data   []byte // the contiguous octets written from base
}

// replyAdvertise records the reply chunk of a call (st.segs, list 2).
func (c *Conn) replyAdvertise(t *task) {
	var r *replyChunk
	for _, s := range c.rpc.segs {
		if s.list != 2 {
			continue
		}
		if r == nil {
			r = &replyChunk{}
		}
		if r.n == maxReplySegs {
			r.cut = true
			break
		}
		r.seg[r.n] = replySeg{handle: s.handle, base: s.offset, length: s.length}
		r.n++
	}
	t.reply = r
}

// replyWrite keeps an RDMA Write segment that lands in t's reply chunk.
func (c *Conn) replyWrite(t *task, s *decode.Segment, missing int) {
	r := t.reply
	for i := range r.seg[:r.n] {
		g := &r.seg[i]
		if g.handle != s.DDP.STag || s.DDP.TO < g.base || s.DDP.TO-g.base >= uint64(g.length) {
			continue
		}
		if missing > 0 || s.DDP.TO-g.base != uint64(len(g.data)) {
			r.lost = true // a hole: what follows it is not the reply's next octets
			return
		}
		n := min(len(s.Payload), int(g.length)-len(g.data))
		if room := min(c.lim.Message-r.kept, 4*c.lim.Message-c.rpc.kept); n > room {
			n, r.cut = max(room, 0), true
		}
		g.data = append(g.data, s.Payload[:n]...)
		r.kept += n
		c.rpc.kept += n
		return
	}
}

// replyMessage assembles the RPC reply of an RDMA_NOMSG for t from its
// reply chunk, as the echoed segments (st.segs, list 2: handle and the
// octets written) say; total is the octets the echo names. whole says the
// message is all there; otherwise msg is the prefix the capture and the
// caps left.
func (c *Conn) replyMessage(t *task) (msg []byte, total uint64, whole bool) {
	r := t.reply
	if r == nil {
		return nil, 0, false
	}
	whole = !r.cut && !r.lost
	short := false
	for _, s := range c.rpc.segs {
		if s.list != 2 {
			continue
		}
		total += uint64(s.length)
		if short {
			continue
		}
		var g *replySeg
		for i := range r.seg[:r.n] {
			if r.seg[i].handle == s.handle {
				g = &r.seg[i]
				break
			}
		}
		if g == nil {
			short, whole = true, false
			continue
		}
		n := min(int(s.length), len(g.data))
		msg = append(msg, g.data[:n]...)
		if n < int(s.length) {
			short, whole = true, false // the rest was not kept: a prefix only
		}
	}
	return msg, total, whole
}
