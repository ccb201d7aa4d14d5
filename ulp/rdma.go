package ulp

import (
	"strconv"

	"github.com/iwkit/iwkit/decode"
)

// The RDMA frames of a command (issue 27, "a command's tree lists the RDMA
// frames that moved its data"): ulp already links every RDMA Write into,
// and every Read Request from, a command's STags to the command (for
// Moved, Reads, Writes and the phases); it keeps the operations
// themselves too, with their frames, so that every face (-V, JSON, the
// export's commands table, iwtui's commands view) lists the same ones,
// the way Wireshark links a request to its "[Response in: N]".
//
// An operation is what track calls one: an RDMA Write message (RFC 5040
// §4.3: its segments' first to last frame), an RDMA Read (the Read
// Request, RFC 5040 §4.4, and its Read Response message, §4.5), or a
// Send that carried the command's data itself (NVMe in-capsule data,
// iSCSI immediate data and unsolicited Data-Out, RFC 7145 §7.3.4, SMB2
// and RPC inline data).

// XferKind is the kind of an operation that moved a command's data.
type XferKind uint8

const (
	// XferWrite is an RDMA Write message into one of the command's STags.
	XferWrite XferKind = iota + 1
	// XferRead is an RDMA Read Request from one of the command's STags
	// and the Read Response message that answered it.
	XferRead
	// XferSend is a Send that carried the command's data inline.
	XferSend
)

var xferNames = [...]string{"", "RDMA Write", "RDMA Read", "Send"}

func (k XferKind) String() string {
	if int(k) < len(xferNames) {
		return xferNames[k]
	}
	return "?"
}

// Xfer is one operation that moved a command's data. Frame numbers are
// the capture's (global, whatever shard decoded the connection); 0 where
// none was seen.
type Xfer struct {
	Kind XferKind
	// STag and TO are the command's buffer the operation used: an RDMA
	// Write's Data Sink STag and its first segment's TO, an RDMA Read's
	// Data Source STag and TO (a Send: 0).
	STag uint32
	TO   uint64
	// Length is the octets moved: the Write's or the Send's data, the
	// Read Response's (the capture's missing octets counted).
	Length uint64
	// Frame is the first frame of the Write or Send, or the Read
	// Request's; LastFrame the last frame of the Write or Send (of a
	// Read: the Read Request's last).
	Frame, LastFrame int
	// ResponseFrame and ResponseLastFrame are an RDMA Read's Read
	// Response message's first and last frame (0: not seen).
	ResponseFrame, ResponseLastFrame int

	sink uint32 // XferRead: the Data Sink STag its Read Responses carry
	open bool   // more segments are to come (Write, Read Response)
}

// MaxXfers is the operations a Command lists; the others are counted in
// Command.RDMADropped. A connection holds at most 4 × Limits.Tasks of
// them for its outstanding commands (rdmaState).
const MaxXfers = 64

// rdmaState is what a connection holds of its commands' operations.
type rdmaState struct {
	held int // Xfers in the outstanding tasks' commands
}

// addXfer appends x to t's operations, or counts it as dropped when the
// command or the connection holds all it may.
func (c *Conn) addXfer(t *task, x Xfer) *Xfer {
	if len(t.cmd.RDMA) >= MaxXfers || c.rdma.held >= 4*c.lim.Tasks {
		t.cmd.RDMADropped++
		return nil
	}
	if t.cmd.RDMA == nil {
		t.cmd.RDMA = make([]Xfer, 0, 4)
	}
	t.cmd.RDMA = append(t.cmd.RDMA, x)
	c.rdma.held++
	return &t.cmd.RDMA[len(t.cmd.RDMA)-1]
}

// xferWrite notes a segment of an RDMA Write into t's STag: the first
// opens the operation, the L segment closes it.
func (c *Conn) xferWrite(t *task, at At, s *decode.Segment, missing int) {
	var x *Xfer
	if n := len(t.cmd.RDMA); n > 0 {
		if l := &t.cmd.RDMA[n-1]; l.Kind == XferWrite && l.open && l.STag == s.DDP.STag {
			x = l
		}
	}
	if x == nil {
		if !s.DDP.Last && len(t.cmd.RDMA) >= MaxXfers {
			return // counted once, at its L segment
		}
		if x = c.addXfer(t, Xfer{Kind: XferWrite, STag: s.DDP.STag, TO: s.DDP.TO, Frame: at.Frame}); x == nil {
			return
		}
	}
	x.Length += uint64(len(s.Payload) + missing)
	x.LastFrame = at.Last
	x.open = !s.DDP.Last
}

// xferReadRequest opens an RDMA Read from t's STag.
func (c *Conn) xferReadRequest(t *task, at At, r *decode.ReadRequest) {
	c.addXfer(t, Xfer{Kind: XferRead, STag: r.SrcSTag, TO: r.SrcTO, Frame: at.Frame, LastFrame: at.Last, sink: r.SinkSTag, open: true})
}

// xferReadResponse adds a Read Response segment to the oldest open Read of
// t into its Data Sink STag (responses return in request order, RFC 5040
// §5.2.2).
func (t *task) xferReadResponse(at At, s *decode.Segment, missing int) {
	for i := range t.cmd.RDMA {
		x := &t.cmd.RDMA[i]
		if x.Kind != XferRead || !x.open || x.sink != s.DDP.STag {
			continue
		}
		if x.ResponseFrame == 0 {
			x.ResponseFrame = at.Frame
		}
		x.ResponseLastFrame = at.Last
		x.Length += uint64(len(s.Payload) + missing)
		x.open = !s.DDP.Last
		return
	}
}

// xferSend notes a Send (its first segment's frame to at) that carried n
// octets of t's data.
func (c *Conn) xferSend(t *task, first int, at At, n uint64) {
	if n > 0 {
		c.addXfer(t, Xfer{Kind: XferSend, Length: n, Frame: first, LastFrame: at.Last})
	}
}

// forgetXfers gives back what a task's operations held of the
// connection's bound (the task is dropped; its Command, if reported,
// keeps them).
func (c *Conn) forgetXfers(t *task) { c.rdma.held -= len(t.cmd.RDMA) }

// AppendFrames appends the operation's frames as the commands view and
// the export word them: "W 14-17" for a Write, "R 32→33-49" for a Read
// Request and its Responses, "S 12" for a Send.
func (x *Xfer) AppendFrames(b []byte) []byte {
	switch x.Kind {
	case XferWrite:
		b = append(b, "W "...)
	case XferRead:
		b = strconv.AppendInt(append(b, "R "...), int64(x.Frame), 10)
		b = append(b, "→"...)
		if x.ResponseFrame == 0 {
			return append(b, '?')
		}
		return appendSpan(b, x.ResponseFrame, x.ResponseLastFrame)
	case XferSend:
		b = append(b, "S "...)
	}
	return appendSpan(b, x.Frame, x.LastFrame)
}

func appendSpan(b []byte, first, last int) []byte {
	b = strconv.AppendInt(b, int64(first), 10)
	if last > first {
		b = strconv.AppendInt(append(b, '-'), int64(last), 10)
	}
	return b
}

// AppendRDMAFrames appends the command's operations' frames, separated by
// spaces (Xfer.AppendFrames), with "+N" for the operations not listed.
func (c *Command) AppendRDMAFrames(b []byte) []byte {
	for i := range c.RDMA {
		if i > 0 {
			b = append(b, ' ')
		}
		b = c.RDMA[i].AppendFrames(b)
	}
	if c.RDMADropped > 0 {
		if len(c.RDMA) > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(append(b, '+'), int64(c.RDMADropped), 10)
	}
	return b
}

// Frames lists the frames of the command's operations in order: each
// Write's and Send's first and last, each Read's Request and its Read
// Response's first and last (0s left out, a frame listed once where
// first and last are the same): what the export's commands.rdma_frames
// holds.
func (c *Command) Frames(dst []int) []int {
	add := func(f int) {
		if f > 0 && (len(dst) == 0 || dst[len(dst)-1] != f) {
			dst = append(dst, f)
		}
	}
	for i := range c.RDMA {
		x := &c.RDMA[i]
		add(x.Frame)
		add(x.LastFrame)
		add(x.ResponseFrame)
		add(x.ResponseLastFrame)
	}
	return dst
}

// XferFields returns operation x's fields (ulp.rdma.*) in table order:
// what -V and the detail tree show under its ulp.rdma.op line and what
// the JSON object of it holds.
func (x *Xfer) XferFields(dst []FV) []FV {
	u := func(id FieldID, v uint64) { dst = append(dst, FV{id, decode.Value{Kind: decode.KindUint, U: v}}) }
	dst = append(dst, FV{fRDMAOp, decode.Value{Kind: decode.KindString, S: x.Kind.String()}})
	if x.Kind != XferSend {
		u(fRDMASTag, uint64(x.STag))
		u(fRDMATO, x.TO)
	}
	u(fRDMALength, x.Length)
	u(fRDMAFrame, uint64(x.Frame))
	if x.Kind != XferRead {
		u(fRDMALastFrame, uint64(x.LastFrame))
	} else if x.ResponseFrame > 0 {
		u(fRDMARespFrame, uint64(x.ResponseFrame))
		u(fRDMARespLast, uint64(x.ResponseLastFrame))
	}
	return dst
}

// IsFrameField says whether field id holds a frame number (a link).
func IsFrameField(id FieldID) bool {
	switch id {
	case fULPReqFrame, fRDMAFrame, fRDMALastFrame, fRDMARespFrame, fRDMARespLast:
		return true
	}
	return false
}

func isXferField(id FieldID) bool { return id >= fRDMAOp && id <= fRDMARespLast }

// field returns operation x's value of field id (XferFields' values).
func (x *Xfer) field(id FieldID) (decode.Value, bool) {
	for _, fv := range x.XferFields(make([]FV, 0, 8)) {
		if fv.ID == id {
			return fv.V, true
		}
	}
	return decode.Value{}, false
}

// OwnCmd is the command the message itself completes (not one of its
// compound members'), nil if none.
func (m *Message) OwnCmd() *Command {
	for i := range m.Members {
		if m.Members[i].Cmd == m.Cmd {
			return nil
		}
	}
	return m.Cmd
}

// xferNth returns occurrence i of an ulp.rdma.* field: over the
// operations of the message's command, then of each member's, as -V and
// the JSON list them (a display filter matches any).
func (m *Message) xferNth(id FieldID, i int) (decode.Value, bool) {
	cmds := func(yield func(*Command) bool) {
		if c := m.OwnCmd(); c != nil && !yield(c) {
			return
		}
		for k := range m.Members {
			if c := m.Members[k].Cmd; c != nil && !yield(c) {
				return
			}
		}
	}
	for c := range cmds {
		for k := range c.RDMA {
			if v, ok := c.RDMA[k].field(id); ok {
				if i == 0 {
					return v, true
				}
				i--
			}
		}
	}
	return decode.Value{}, false
}

func init() {
	// Their widths on the wire (RFC 5041 §4.1: STag 32 bits, TO 64): a
	// 64-bit hex TO is a JSON string, as nvme.sgl.addr is.
	fieldTable[fRDMASTag].Size = 4
	fieldTable[fRDMATO].Size = 8
}

// Clone returns a copy of the message that outlives the call that
// returned it (a Message is reused): its fields and the octets they
// alias, its compound members', and the commands it and they complete
// (their RDMA operations shared: a reported Command's list is never
// written again). What iwtui keeps of a replayed message for its tree.
func (m *Message) Clone() *Message {
	k := &Message{Proto: m.Proto, F: cloneFV(m.F), Summary: append([]byte(nil), m.Summary...)}
	cmds := map[*Command]*Command{}
	keep := func(c *Command) *Command {
		if c == nil {
			return nil
		}
		if k, ok := cmds[c]; ok {
			return k
		}
		x := *c
		cmds[c] = &x
		return &x
	}
	k.Cmd = keep(m.Cmd)
	for _, mb := range m.Members {
		k.Members = append(k.Members, Member{F: cloneFV(mb.F), Cmd: keep(mb.Cmd)})
	}
	return k
}

func cloneFV(f []FV) []FV {
	out := append([]FV(nil), f...)
	for i := range out {
		if v := &out[i].V; v.B != nil {
			v.B = append([]byte(nil), v.B...)
		}
	}
	return out
}
