package ulp

import (
	"sort"
	"time"

	"github.com/iwkit/iwkit/percentile"
)

// Stats aggregates commands for the -z nvme / iscsi / smb2 / rpc tables.
type Stats struct {
	Messages [numProtos]uint64
	ByName   map[CmdKey]*CmdStats
	// Queues are the queues (connections) with their own rows and depth,
	// Stuck the commands outstanding at the end of the capture (depth.go);
	// the Dropped counts are those past MaxQueues and MaxStuck.
	Queues                      []*Queue
	Stuck                       []Stuck
	QueuesDropped, StuckDropped int
	points                      int // of the Queues' series (MaxSeriesPoints)
}

// CmdKey names a row: protocol and command name.
type CmdKey struct {
	Proto Proto
	Name  string
}

// CmdStats is one row.
type CmdStats struct {
	Count, Unanswered uint64
	Octets            uint64 // moved by RDMA
	Inline            uint64
	Errors            map[string]uint64 // by status name
	// Latency is the distribution of the answered commands' latencies
	// (Command.Latency, ns), as the export's commands.latency_ns holds them.
	Latency percentile.Dist
	// Queue, Transfer and Backend are the distributions of the phases of
	// the answered commands that have them (Command.Phased; phase.go).
	Queue, Transfer, Backend percentile.Dist
}

func (s *Stats) add(c *Command) {
	if s.ByName == nil {
		s.ByName = map[CmdKey]*CmdStats{}
	}
	k := CmdKey{c.Proto, c.Name}
	r := s.ByName[k]
	if r == nil {
		r = &CmdStats{}
		s.ByName[k] = r
	}
	r.Count++
	r.Octets += c.Moved
	r.Inline += c.Inline
	if !c.Answered {
		r.Unanswered++
		return
	}
	if !c.OK {
		if r.Errors == nil {
			r.Errors = map[string]uint64{}
		}
		r.Errors[c.Status]++
	}
	r.Latency.Add(int64(c.Latency))
	if c.Phased {
		r.Queue.Add(int64(c.Queue))
		r.Transfer.Add(int64(c.Transfer))
		r.Backend.Add(int64(c.Backend))
	}
}

// Merge adds o's rows to s; conn maps o's connection numbers
// (Queue.ConnID, SetID) to s's: a shard's numbers to the run's global
// ones (nil: the same numbers).
func (s *Stats) Merge(o *Stats, conn func(int) int) {
	if o == nil {
		return
	}
	for i := range s.Messages {
		s.Messages[i] += o.Messages[i]
	}
	if s.ByName == nil {
		s.ByName = map[CmdKey]*CmdStats{}
	}
	s.QueuesDropped += o.QueuesDropped
	for _, q := range o.Queues {
		if len(s.Queues) >= MaxQueues {
			s.QueuesDropped++
			continue
		}
		if conn != nil {
			q.ConnID = conn(q.ConnID)
		}
		s.Queues = append(s.Queues, q)
		n := len(q.Depth.Series)
		for i := range q.Windows {
			n += len(q.Windows[i].Series)
		}
		if s.points+n > MaxSeriesPoints {
			q.Depth.Series, q.Depth.Truncated = nil, true
			for i := range q.Windows {
				q.Windows[i].Series, q.Windows[i].Truncated = nil, true
			}
			n = 0
		}
		s.points += n
	}
	s.StuckDropped += o.StuckDropped
	for _, x := range o.Stuck {
		if len(s.Stuck) >= MaxStuck {
			s.StuckDropped++
			continue
		}
		s.Stuck = append(s.Stuck, x)
	}
	for k, r := range o.ByName {
		x := s.ByName[k]
		if x == nil {
			x = &CmdStats{}
			s.ByName[k] = x
		}
		x.Count += r.Count
		x.Unanswered += r.Unanswered
		x.Octets += r.Octets
		x.Inline += r.Inline
		x.Latency.Merge(&r.Latency)
		x.Queue.Merge(&r.Queue)
		x.Transfer.Merge(&r.Transfer)
		x.Backend.Merge(&r.Backend)
		for e, n := range r.Errors {
			if x.Errors == nil {
				x.Errors = map[string]uint64{}
			}
			x.Errors[e] += n
		}
	}
}

// Percentile returns the latency at quantile q (0..1) of the answered
// commands by the nearest rank (package percentile), 0 when none.
func (r *CmdStats) Percentile(q float64) time.Duration {
	return time.Duration(r.Latency.Quantile(q))
}

// Rows returns the rows of protocol p, sorted by name.
func (s *Stats) Rows(p Proto) []CmdKey {
	var ks []CmdKey
	for k := range s.ByName {
		if k.Proto == p {
			ks = append(ks, k)
		}
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].Name < ks[j].Name })
	return ks
}
