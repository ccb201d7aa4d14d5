package ulp

import (
	"sort"
	"time"
)

// Stats aggregates commands for the -z nvme / iscsi / smb2 / rpc tables.
type Stats struct {
	Messages [numProtos]uint64
	ByName   map[CmdKey]*CmdStats
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
	lat               []time.Duration   // kept sorted on demand; capped
	latN              uint64
}

const maxLatSamples = 1 << 16

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
	r.latN++
	if len(r.lat) < maxLatSamples {
		r.lat = append(r.lat, c.Latency)
	} else if i := r.latN % maxLatSamples; true {
		r.lat[i] = c.Latency // keeps a spread of samples, bounded
	}
}

// Merge adds o's rows to s.
func (s *Stats) Merge(o *Stats) {
	if o == nil {
		return
	}
	for i := range s.Messages {
		s.Messages[i] += o.Messages[i]
	}
	if s.ByName == nil {
		s.ByName = map[CmdKey]*CmdStats{}
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
		x.latN += r.latN
		x.lat = append(x.lat, r.lat...)
		for e, n := range r.Errors {
			if x.Errors == nil {
				x.Errors = map[string]uint64{}
			}
			x.Errors[e] += n
		}
	}
}

// Percentile returns the latency at quantile q (0..1) of the answered
// commands, 0 when none.
func (r *CmdStats) Percentile(q float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	if !sort.SliceIsSorted(r.lat, func(i, j int) bool { return r.lat[i] < r.lat[j] }) {
		sort.Slice(r.lat, func(i, j int) bool { return r.lat[i] < r.lat[j] })
	}
	i := int(q*float64(len(r.lat)) + 0.5)
	if i > 0 {
		i--
	}
	return r.lat[min(i, len(r.lat)-1)]
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
