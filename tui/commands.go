package tui

import (
	"fmt"
	"strings"

	"github.com/iwkit/iwkit/track"
)

// The storage-protocol commands view (U, views.go fillCmds) shows, beside
// each command's object, the RDMA frames that moved its data: the Writes
// into and the Read Requests and Responses on its STags (track's
// operations). It sorts, filters and searches as every view does
// (viewtable.go).

// rdmaFrames lists, per connection and STag, the RDMA operations on it
// (track's, as the operations view shows them) by their index in the
// Index: Writes, and Read Requests by their Data Source STag. Indexes, not
// copies: the index keeps its operations compact (16 octets each), and a
// copy of every one would cost the memory the views were made to save.
func (u *UI) rdmaFrames() map[[2]uint64][]int32 {
	ix := u.S.Ix
	m := map[[2]uint64][]int32{}
	for i, n := 0, ix.NumOps(); i < n; i++ {
		op := ix.Op(i)
		var k [2]uint64
		switch op.Kind {
		case track.OpWrite:
			k = [2]uint64{uint64(op.Conn), uint64(op.STag)}
		case track.OpRead:
			k = [2]uint64{uint64(op.Conn), uint64(op.SrcSTag)}
		default:
			continue
		}
		m[k] = append(m[k], int32(i))
	}
	return m
}

// CmdRDMAFrames words the RDMA frames of command c: "W 14-17" for a
// Write's segments, "R 32→33-49" for a Read Request and its Responses,
// those on its STags between its request and its response (ops:
// rdmaFrames).
func CmdRDMAFrames(ix *Index, c *Cmd, stags []uint32, ops map[[2]uint64][]int32) string {
	var b strings.Builder
	end := int(c.ResponseFrame)
	if end == 0 {
		end = 1<<31 - 1
	}
	for _, st := range stags {
		for _, i := range ops[[2]uint64{uint64(c.Conn), uint64(st)}] {
			op := ix.Op(int(i))
			if op.RequestFrame < int(c.RequestFrame) || op.RequestFrame > end {
				continue
			}
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			if op.Kind == track.OpWrite {
				fmt.Fprintf(&b, "W %s", span(op.RequestFrame, op.RequestLast))
			} else {
				fmt.Fprintf(&b, "R %d→%s", op.RequestFrame, span(op.ResponseFirst, op.RespLast))
			}
		}
	}
	return b.String()
}

func span(a, b int) string {
	if b <= a {
		return fmt.Sprint(a)
	}
	return fmt.Sprintf("%d-%d", a, b)
}
