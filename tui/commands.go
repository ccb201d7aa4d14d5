package tui

import (
	"github.com/iwkit/iwkit/ulp"
)

// The storage-protocol commands view (U, views.go fillCmds) shows, beside
// each command's object, the RDMA frames that moved its data: the
// operations ulp linked to the command (ulp.Command.RDMA: the RDMA Writes
// into and the RDMA Reads from its STags, the Sends that carried its
// data), worded by ulp ("W 14-17", "R 32→33-49", "S 12"). The command's
// tree is its response's (render's, as iwdump -V prints it), where the
// same operations are the ulp.rdma.op lines. It sorts, filters and
// searches as every view does (viewtable.go).

// cmdXfer is what the index keeps of an operation of a command: its kind
// and frames (20 octets; the view words them through ulp.Xfer).
type cmdXfer struct {
	kind                        ulp.XferKind
	frame, last, resp, respLast int32
}

// keepXfers keeps command m's operations for c (under the index lock).
func (ix *Index) keepXfers(c *Cmd, m *ulp.Command) {
	n := min(len(m.RDMA), 255)
	c.xfers, c.nxfers = uint32(len(ix.cmdXfers)), uint8(n)
	c.xdropped = uint16(min(m.RDMADropped+len(m.RDMA)-n, 1<<16-1))
	for i := range m.RDMA[:n] {
		x := &m.RDMA[i]
		ix.cmdXfers = append(ix.cmdXfers, cmdXfer{x.Kind, int32(x.Frame), int32(x.LastFrame), int32(x.ResponseFrame), int32(x.ResponseLastFrame)})
	}
}

// CmdXfers returns the operations that moved command c's data, as ulp
// listed them (frames and kinds), and the count of those it did not keep.
func (ix *Index) CmdXfers(c *Cmd) ([]ulp.Xfer, int) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make([]ulp.Xfer, c.nxfers)
	for i, k := range ix.cmdXfers[c.xfers : c.xfers+uint32(c.nxfers)] {
		out[i] = ulp.Xfer{Kind: k.kind, Frame: int(k.frame), LastFrame: int(k.last), ResponseFrame: int(k.resp), ResponseLastFrame: int(k.respLast)}
	}
	return out, int(c.xdropped)
}

// CmdRDMAFrames words the RDMA frames of command c as ulp does
// (ulp.Command.AppendRDMAFrames): "W 14-17" for a Write's segments,
// "R 32→33-49" for a Read Request and its Responses, "S 12" for a Send
// that carried data, "+N" for those not kept.
func (ix *Index) CmdRDMAFrames(c *Cmd) string {
	xs, dropped := ix.CmdXfers(c)
	cmd := ulp.Command{RDMA: xs, RDMADropped: dropped}
	return string(cmd.AppendRDMAFrames(nil))
}

// openedBy returns the commands whose Send ends in frame on connection
// conn, with their response frames and the operations that moved their
// data, for the request's tree (render.TreeInput.Opened): what the whole
// capture says of a request, as Wireshark's "[Response in: N]".
func (ix *Index) openedBy(conn, frame int) []*ulp.Command {
	var cmds []Cmd
	ix.mu.RLock()
	for i := range ix.cmds {
		if c := &ix.cmds[i]; int(c.Conn) == conn && int(c.RequestFrame) == frame {
			cmds = append(cmds, *c)
		}
	}
	ix.mu.RUnlock()
	var out []*ulp.Command
	for i := range cmds {
		c := &cmds[i]
		xs, dropped := ix.CmdXfers(c)
		out = append(out, &ulp.Command{Proto: c.Proto, Name: c.Name, ID: c.ID, Answered: c.Answered,
			RequestFrame: int(c.RequestFrame), ResponseFrame: int(c.ResponseFrame), RDMA: xs, RDMADropped: dropped})
	}
	return out
}
