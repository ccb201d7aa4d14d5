package export

import (
	"strconv"
	"unsafe"

	"github.com/iwkit/iwkit/ulp"
)

// xferScratch is reused from row to row: the rdma_ops texts of one
// command, in one buffer (the row copies them), and its rdma_frames.
type xferScratch struct {
	text   []byte
	ends   []int
	ops    []string
	frames []int
}

// rdmaCols writes the commands row's rdma_ops and rdma_frames: the
// operations that moved the command's data as ulp lists them
// (ulp.Command.RDMA; iwtui's commands view words them the same).
func (e *Exporter) rdmaCols(w *row, c *ulp.Command) {
	x := &e.xfers
	x.text, x.ends, x.ops = x.text[:0], x.ends[:0], x.ops[:0]
	for i := range c.RDMA {
		x.text = c.RDMA[i].AppendFrames(x.text)
		x.ends = append(x.ends, len(x.text))
	}
	if c.RDMADropped > 0 {
		x.text = append(x.text, '+')
		x.text = strconv.AppendInt(x.text, int64(c.RDMADropped), 10)
		x.ends = append(x.ends, len(x.text))
	}
	start := 0
	for _, end := range x.ends {
		// views of x.text, which no longer grows: strs copies them
		x.ops = append(x.ops, unsafe.String(unsafe.SliceData(x.text[start:end]), end-start))
		start = end
	}
	w.strs(x.ops)
	x.frames = c.Frames(x.frames[:0])
	w.i64s(x.frames)
}
