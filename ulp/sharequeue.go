package ulp

// SMB2 queues per share (issue 27, "queues"): an SMB2 connection
// multiplexes its trees — each TREE_CONNECT's share, named by the TreeId
// the response returns ([MS-SMB2] §2.2.9, §2.2.10, §3.3.5.7) — so a
// storage engineer asks for the commands and the depth of each share, as
// of each NVMe queue. A command that names a share (its TreeId's
// TREE_CONNECT path, objects.go, or a TREE_CONNECT's own path) counts in
// that share's queue; the rest (NEGOTIATE, SESSION_SETUP, ECHO, ...) in
// the connection's own queue, whose depth counts every command on the
// connection: what the credit windows, which are the connection's
// (§3.3.1.1), bound.

// maxShareQueues bounds the shares of a connection with queues of their
// own; the commands of later shares count in the connection's queue.
const maxShareQueues = 64

// shareQueue is one share's queue: its outstanding commands, depth and
// rows.
type shareQueue struct {
	name  string
	n     int
	depth Depth
	rows  Stats
}

// shareQueues are a connection's share queues, in the order first named.
type shareQueues struct {
	byName map[string]*shareQueue
	order  []*shareQueue
	member map[*task]*shareQueue // the outstanding commands counted in a share's depth
	rest   Stats                 // rows of the commands naming no share
	last   string                // the share of the latest request: a related compound member's
}

// shareEnter counts an SMB2 request naming share into the share's queue.
func (c *Conn) shareEnter(t *task, share string) {
	s := &c.qn.shares
	if share == "" || s.member[t] != nil {
		return
	}
	q := s.byName[share]
	if q == nil {
		if len(s.order) >= maxShareQueues {
			return
		}
		if s.byName == nil {
			s.byName, s.member = map[string]*shareQueue{}, map[*task]*shareQueue{}
		}
		q = &shareQueue{name: share}
		s.byName[share] = q
		s.order = append(s.order, q)
	}
	s.member[t] = q
	q.n++
	q.depth.change(c.now, c.nowFrame, q.n)
}

// shareLeave takes a task that is answered or dropped out of its share's
// depth.
func (c *Conn) shareLeave(t *task) {
	s := &c.qn.shares
	q := s.member[t]
	if q == nil {
		return
	}
	delete(s.member, t)
	q.n--
	if !c.finishing {
		q.depth.change(c.now, c.nowFrame, q.n)
	}
}

// taskQueue is what the protocol calls a command's queue: its share for
// an SMB2 command counted in one, else the connection's queue name.
func (c *Conn) taskQueue(t *task) string {
	if c.proto == SMBD && c.qn.shares.byName[t.share] != nil {
		return t.share
	}
	return c.queueName()
}

// count adds a command reported (answered, or outstanding at the end) to
// the connection's Stats and to its queue's rows.
func (c *Conn) count(cmd *Command) {
	if c.Stats == nil {
		c.Stats = &Stats{}
	}
	c.Stats.add(cmd)
	if c.proto != SMBD {
		return
	}
	s := &c.qn.shares
	if q := s.byName[cmd.QueueName]; q != nil && cmd.QueueName != "" {
		q.rows.add(cmd)
	} else {
		s.rest.add(cmd)
	}
}
