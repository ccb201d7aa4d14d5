package iograph

import (
	"time"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/track"
	"github.com/iwkit/iwkit/ulp"
)

// Collector gathers, from the frames and records of one shard of a run,
// what iwdump --plot draws: ULP payload octets per interval and direction
// (series 0 i2r, 1 r2i) and the latencies of the RDMA Reads that
// completed.
type Collector struct {
	Start time.Time // the first frame's
	IO    *Bins
	Lat   Latency
	// Cmds are the answered storage commands' latencies, by command.
	Cmds map[ulp.CmdKey]*Latency
	seen bool
}

// MaxIntervals bounds the I/O graph of a Collector; it starts at 1 ms.
const MaxIntervals = 1024

// Frame notes a frame: the first one starts the graph.
func (c *Collector) Frame(f *pcap.Frame) {
	if !c.seen {
		c.Start, c.IO, c.seen = f.Timestamp, New(2, MaxIntervals, time.Millisecond), true
	}
}

// Record counts a PDU's ULP payload and a completed Read's latency.
func (c *Collector) Record(r *analyze.Record) {
	switch r.Kind {
	case analyze.KindPDU:
		if e := r.PDU; c.seen && !e.PDU.IsMPAFrame && e.PDU.SegErr == nil {
			c.IO.Add(int(analyze.TrackDir(r.Conn, r.Dir)), e.LastTime.Sub(c.Start), float64(len(e.PDU.Seg.Payload)))
		}
	case analyze.KindOperation:
		if r.Op.Kind == track.OpRead && r.Op.Status == track.OpOK {
			c.Lat.Add(r.Op.Latency)
		}
	case analyze.KindCommand:
		if r.Cmd.Answered {
			c.cmd(ulp.CmdKey{Proto: r.Cmd.Proto, Name: r.Cmd.Name}).Add(r.Cmd.Latency)
		}
	}
}

// Merge adds what the other shards collected; every shard saw every frame,
// so they share the start.
func Merge(cs []*Collector) *Collector {
	for _, o := range cs[1:] {
		if !o.seen {
			continue
		}
		cs[0].IO.Merge(o.IO)
		for i := range cs[0].Lat {
			cs[0].Lat[i] += o.Lat[i]
		}
		for k, l := range o.Cmds {
			x := cs[0].cmd(k)
			for i := range x {
				x[i] += l[i]
			}
		}
	}
	return cs[0]
}

// maxCmdNames bounds the command names a Collector keeps apart.
const maxCmdNames = 256

func (c *Collector) cmd(k ulp.CmdKey) *Latency {
	l := c.Cmds[k]
	if l == nil {
		if c.Cmds == nil {
			c.Cmds = map[ulp.CmdKey]*Latency{}
		}
		if len(c.Cmds) >= maxCmdNames {
			k.Name = "(other)"
			if l = c.Cmds[k]; l != nil {
				return l
			}
		}
		l = &Latency{}
		c.Cmds[k] = l
	}
	return l
}
