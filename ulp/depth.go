package ulp

import (
	"strconv"
	"strings"
	"time"
)

// Queues and depth (issue 27, "queues", "depth and what is stuck"). In
// every protocol here a connection is one queue: an NVMe-oF RDMA queue
// pair is one connection (NVMe-oF RDMA transport §3.3), an iSCSI
// connection carries one session's commands (RFC 7143 §4.2), SMB2 and
// NFS multiplex their trees and files over it. A Conn names its queue by
// what the protocol calls it (NVMe QID, CNTLID and subsystem NQN from the
// Connect; iSCSI TargetName and TSIH from the Login; the server address
// for NFS and SMB2) and counts its outstanding commands at every change.

// MaxDepthPoints bounds a queue's depth series (and each window's): past
// it the series stops (Truncated) while Max and Mean stay exact.
// MaxSeriesPoints bounds the points of all the queues a Stats keeps: past
// it a queue keeps its rows, Max and Mean, not its series.
const (
	MaxDepthPoints  = 1 << 12
	MaxSeriesPoints = 1 << 20
)

// MaxQueues bounds the queues a Stats lists (Stats.QueuesDropped counts
// the rest, still in the totals); MaxStuck the outstanding commands listed.
const (
	MaxQueues = 1 << 14
	MaxStuck  = 1 << 10
)

// DepthPoint is the queue's depth (outstanding commands) from Time on:
// Frame is the frame of the command or response that changed it.
type DepthPoint struct {
	Time  time.Time
	Frame int
	Depth int
}

// Depth is a queue's outstanding commands over time.
type Depth struct {
	// Series holds a point at every change (a command sent, answered, or
	// dropped as a duplicate), in order; at most MaxDepthPoints.
	Series    []DepthPoint
	Truncated bool
	Max       int
	// started: a change was seen; first and last are the first and the
	// latest change; area integrates depth × ns from first to last; end
	// is the capture's end (SetEnd).
	started     bool
	cur         int
	first, last time.Time
	area        float64
	end         time.Time
}

func (d *Depth) change(t time.Time, frame, depth int) {
	if !d.started {
		d.started, d.first = true, t
	} else if t.After(d.last) {
		d.area += float64(d.cur) * float64(t.Sub(d.last))
	}
	if t.After(d.last) || d.last.IsZero() {
		d.last = t
	}
	d.cur = depth
	d.Max = max(d.Max, depth)
	if len(d.Series) < MaxDepthPoints {
		d.Series = append(d.Series, DepthPoint{t, frame, depth})
	} else {
		d.Truncated = true
	}
}

// Mean is the time-weighted mean depth from the queue's first command to
// the end of the capture: the area under the series over its span.
func (d *Depth) Mean() float64 {
	if !d.started {
		return 0
	}
	end := d.end
	if end.Before(d.last) {
		end = d.last
	}
	span := end.Sub(d.first)
	if span <= 0 {
		return float64(d.cur)
	}
	return (d.area + float64(d.cur)*float64(end.Sub(d.last))) / float64(span)
}

// Integral is the area under the series from the queue's first command
// to End: commands outstanding × ns (Mean = Integral / Span), a sum that
// merges across queues and captures where a mean does not.
func (d *Depth) Integral() float64 {
	if !d.started {
		return 0
	}
	end := d.End()
	return d.area + float64(d.cur)*float64(end.Sub(d.last))
}

// Span is the time the mean is over: the first change to End.
func (d *Depth) Span() time.Duration {
	if !d.started {
		return 0
	}
	return d.End().Sub(d.first)
}

// End is the time the mean runs to: the capture's end, or the last change.
func (d *Depth) End() time.Time {
	if d.end.Before(d.last) {
		return d.last
	}
	return d.end
}

// QueueKey names a queue: its protocol, its connection as the analyzer
// names it (SetName: "client > server"), and what the protocol calls it.
type QueueKey struct {
	Proto Proto
	Conn  string
	Name  string
}

// Queue is one queue's commands (rows by command name, as Stats.ByName)
// and depth.
type Queue struct {
	Key QueueKey
	// ConnID is the analyzer's number of the queue's connection (SetID),
	// as the export's conn columns hold it.
	ConnID int
	// ID is what the protocol calls the queue, field by field.
	ID    QueueID
	Rows  map[CmdKey]*CmdStats
	Depth Depth
	// Windows are the queue's flow-control windows over time (window.go),
	// by WinSMBDClient...; empty where the protocol has none, and on an
	// SMB2 share's queue (the credits are the connection's).
	Windows [NumWindows]Window
}

// QueueID is a queue's identity as its protocol gives it, the parts of
// QueueKey.Name: the NVMe QID (CM private data or Connect), CNTLID
// (Connect response) and subsystem NQN (Connect data); the iSCSI
// TargetName and TSIH (Login); the SMB2 share (TREE_CONNECT path) of a
// share's queue (sharequeue.go). Zero values where the capture does not
// hold them (HasQID for the QID, which may be 0: the admin queue).
type QueueID struct {
	HasQID      bool
	QID, CNTLID uint16
	SubNQN      string
	Target      string
	TSIH        uint16
	Share       string
}

// Stuck is a command outstanding when the capture ends.
type Stuck struct {
	Queue        QueueKey
	Name         string
	ID           uint64
	RequestFrame int
	Start        time.Time
	// Age is the capture's end minus Start.
	Age time.Duration
	// AER: an NVMe Asynchronous Event Request, outstanding by design
	// until the controller has an event (NVMe Base §5.2).
	AER bool
}

// queueNames is what the protocol said its queue is.
type queueNames struct {
	subnqn string // NVMe Connect data
	target string // iSCSI Login TargetName
	tsih   uint16 // iSCSI Login response TSIH
	name   string // cached Name (reset when one of the above changes)
	id     int    // the analyzer's connection number (SetID)
	shares shareQueues
}

// SetName tells the Conn how the analyzer names its connection (the
// queue's QueueKey.Conn).
func (c *Conn) SetName(s string) { c.connName = s }

// SetID tells the Conn the analyzer's number of its connection
// (Queue.ConnID).
func (c *Conn) SetID(id int) { c.qn.id = id }

// SetEnd tells the Conn when the capture ended: the age of what is still
// outstanding, the span of the mean depth.
func (c *Conn) SetEnd(t time.Time) { c.end = t }

// queueName is the queue's name by its protocol.
func (c *Conn) queueName() string {
	q := &c.qn
	if q.name != "" {
		return q.name
	}
	var b []byte
	switch c.proto {
	case NVMe:
		st := &c.nvme
		if st.haveQID || st.pdReq {
			b = strconv.AppendUint(append(b, "qid "...), uint64(st.qid), 10)
		}
		if st.cntlid != 0 {
			b = strconv.AppendUint(append(b, " cntlid "...), uint64(st.cntlid), 10)
		}
		if q.subnqn != "" {
			b = append(append(b, ' '), q.subnqn...)
		}
	case ISER:
		if q.target != "" {
			b = append(b, q.target...)
		}
		if q.tsih != 0 {
			b = strconv.AppendUint(append(b, " tsih 0x"...), uint64(q.tsih), 16)
		}
	}
	q.name = strings.TrimSpace(string(b))
	return q.name
}

// depthChanged records the queue's depth after a command came or went.
func (c *Conn) depthChanged() {
	if c.finishing {
		return
	}
	c.depth.change(c.now, c.nowFrame, len(c.tasks))
}

// finishQueue reports the queue and what is still outstanding into the
// Conn's Stats (Finish).
func (c *Conn) finishQueue(ts []*task) {
	if c.Stats == nil || c.proto == None {
		return
	}
	key := QueueKey{Proto: c.proto, Conn: c.connName, Name: c.queueName()}
	end := c.end
	if end.IsZero() {
		end = c.now
	}
	for _, t := range ts {
		if len(c.Stats.Stuck) >= MaxStuck {
			c.Stats.StuckDropped++
			continue
		}
		k := key
		k.Name = t.cmd.QueueName
		c.Stats.Stuck = append(c.Stats.Stuck, Stuck{Queue: k, Name: t.cmd.Name, ID: t.cmd.ID, RequestFrame: t.cmd.RequestFrame,
			Start: t.cmd.Start, Age: end.Sub(t.cmd.Start), AER: c.proto == NVMe && t.opc == 0x0C && (c.nvme.haveQID || c.nvme.pdReq) && c.nvme.qid == 0})
	}
	c.depth.end = end
	rows := c.Stats.ByName
	if c.proto == SMBD {
		rows = c.qn.shares.rest.ByName
	}
	c.Stats.Queues = append(c.Stats.Queues, &Queue{Key: key, ConnID: c.qn.id, ID: c.queueID(), Rows: rows, Depth: c.depth, Windows: c.windows})
	for _, q := range c.qn.shares.order {
		q.depth.end = end
		c.Stats.Queues = append(c.Stats.Queues, &Queue{Key: QueueKey{Proto: c.proto, Conn: c.connName, Name: q.name}, ConnID: c.qn.id,
			ID: QueueID{Share: q.name}, Rows: q.rows.ByName, Depth: q.depth})
	}
}

// queueID is the connection's queue identity (Queue.ID).
func (c *Conn) queueID() QueueID {
	var id QueueID
	switch c.proto {
	case NVMe:
		st := &c.nvme
		id.HasQID, id.QID, id.CNTLID, id.SubNQN = st.haveQID || st.pdReq, st.qid, st.cntlid, c.qn.subnqn
	case ISER:
		id.Target, id.TSIH = c.qn.target, c.qn.tsih
	}
	return id
}

// loginNames takes the TargetName of an iSCSI Login Request's keys (RFC
// 7143 §13.4) to name the queue.
func (c *Conn) loginNames(i2r bool, iop uint8, keys string) {
	if !i2r || iop != 0x03 {
		return
	}
	for _, kv := range strings.Split(keys, " ") {
		if v, ok := strings.CutPrefix(kv, "TargetName="); ok && v != c.qn.target {
			c.qn.target, c.qn.name = v, ""
		}
	}
}
