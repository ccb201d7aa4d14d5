package track

import (
	"math/bits"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/percentile"
)

// OpCounts counts RDMA operations by type, for the side that starts them
// (the sender of a Write or Send, the requester of a Read or Atomic).
type OpCounts struct {
	Writes, Sends, SendsWithInvalidate uint64
	// Reads counts Read Requests sent, ReadsAnswered those whose Read
	// Response was seen to its L segment.
	Reads, ReadsAnswered uint64
	// ReadResponses counts Read Response messages sent.
	ReadResponses                     uint64
	Atomics, AtomicsAnswered          uint64
	AtomicResponses                   uint64
	Immediates                        uint64
	Terminates                        uint64
	RTRs                              uint64 // MPA v2 zero-length RTRs (RFC 6581 §5), not counted above
	ZeroLengthReads, ZeroLengthWrites uint64 // of Reads and Writes, those of size 0
}

func (o *OpCounts) add(x *OpCounts) {
	o.Writes += x.Writes
	o.Sends += x.Sends
	o.SendsWithInvalidate += x.SendsWithInvalidate
	o.Reads += x.Reads
	o.ReadsAnswered += x.ReadsAnswered
	o.ReadResponses += x.ReadResponses
	o.Atomics += x.Atomics
	o.AtomicsAnswered += x.AtomicsAnswered
	o.AtomicResponses += x.AtomicResponses
	o.Immediates += x.Immediates
	o.Terminates += x.Terminates
	o.RTRs += x.RTRs
	o.ZeroLengthReads += x.ZeroLengthReads
	o.ZeroLengthWrites += x.ZeroLengthWrites
}

// SizeHist is a histogram of message sizes: bucket 0 counts empty
// messages, bucket i (1..64) sizes in [2^(i-1), 2^i).
type SizeHist [65]uint64

func (h *SizeHist) add(n uint64) { h[bits.Len64(n)]++ }

// Bucket returns the size range [lo, hi] of bucket i.
func (h *SizeHist) Bucket(i int) (lo, hi uint64) {
	if i == 0 {
		return 0, 0
	}
	lo = 1 << (i - 1)
	return lo, lo<<1 - 1
}

// DirStats are the statistics of one direction of a connection.
type DirStats struct {
	// FPDUs and ULPDUOctets count every FPDU and its ULPDU (DDP segment)
	// octets; PayloadOctets the ULP payload after DDP/RDMAP headers.
	FPDUs, ULPDUOctets, PayloadOctets uint64
	// Segments, Messages and Octets are by RDMAP opcode: segments seen,
	// messages ended, and ULP payload octets.
	Segments, Messages, Octets [16]uint64
	Ops                        OpCounts
	// MsgSizes holds the sizes of the complete messages.
	MsgSizes             SizeHist
	IncompleteMessages   uint64
	InconsistentMessages uint64
	CRCGood, CRCBad      uint64
	// Gaps counts holes in the captured TCP stream (reassembly GapEvents
	// of every reason but GapSkipped), as reassembly.Stats.Gaps does;
	// Skips the regions the framer passed over looking for an FPDU
	// boundary (GapSkipped). FPDUsLost estimates the FPDUs in both.
	Gaps, GapOctets, FPDUsLost     uint64
	Skips, SkippedOctets           uint64
	Retransmissions, RetransOctets uint64
	AfterError, AfterTerminate     uint64 // segments so marked
	Uncertain                      uint64 // segments processed with relaxed checks
	MaxOutstandingReads            int    // as requester
	MaxOutstandingAtomics          int
	UnmatchedUncertain             uint64 // responses that may answer requests lost in a gap
}

func (s *DirStats) add(x *DirStats) {
	s.FPDUs += x.FPDUs
	s.ULPDUOctets += x.ULPDUOctets
	s.PayloadOctets += x.PayloadOctets
	for i := range s.Segments {
		s.Segments[i] += x.Segments[i]
		s.Messages[i] += x.Messages[i]
		s.Octets[i] += x.Octets[i]
	}
	s.Ops.add(&x.Ops)
	for i := range s.MsgSizes {
		s.MsgSizes[i] += x.MsgSizes[i]
	}
	s.IncompleteMessages += x.IncompleteMessages
	s.InconsistentMessages += x.InconsistentMessages
	s.CRCGood += x.CRCGood
	s.CRCBad += x.CRCBad
	s.Gaps += x.Gaps
	s.GapOctets += x.GapOctets
	s.Skips += x.Skips
	s.SkippedOctets += x.SkippedOctets
	s.FPDUsLost += x.FPDUsLost
	s.Retransmissions += x.Retransmissions
	s.RetransOctets += x.RetransOctets
	s.AfterError += x.AfterError
	s.AfterTerminate += x.AfterTerminate
	s.Uncertain += x.Uncertain
	s.MaxOutstandingReads = max(s.MaxOutstandingReads, x.MaxOutstandingReads)
	s.MaxOutstandingAtomics = max(s.MaxOutstandingAtomics, x.MaxOutstandingAtomics)
	s.UnmatchedUncertain += x.UnmatchedUncertain
}

// Overflows count entries dropped from the bounded tables.
type Overflows struct {
	Reads, Atomics, STags, OpenMessages uint64
}

func (o *Overflows) add(x *Overflows) {
	o.Reads += x.Reads
	o.Atomics += x.Atomics
	o.STags += x.STags
	o.OpenMessages += x.OpenMessages
}

// Latency summarises a latency distribution (package percentile): Count,
// Min, Max and Mean exact; the percentiles by the nearest rank, exactly
// while the distribution holds at most percentile.Budget samples, else
// within percentile.RelError (Approx set), never outside [Min, Max].
type Latency struct {
	Count               uint64
	Min, Max, Mean      time.Duration
	P50, P90, P99, P999 time.Duration
	Approx              bool
}

func latencyOf(d *percentile.Dist) Latency {
	if d.Count() == 0 {
		return Latency{}
	}
	q := func(p float64) time.Duration { return time.Duration(d.Quantile(p)) }
	return Latency{
		Count:  d.Count(),
		Min:    time.Duration(d.Min()),
		Max:    time.Duration(d.Max()),
		Mean:   time.Duration(d.Mean()),
		P50:    q(0.5),
		P90:    q(0.9),
		P99:    q(0.99),
		P999:   q(0.999),
		Approx: !d.Exact(),
	}
}

// Era classifies a connection's protocol generation
// (draft-differences.md §7): MPA Rev of each frame, DDP and RDMAP versions
// of each direction's first FPDU, markers, CRC, RFC 7306 use.
type Era struct {
	Handshake      bool
	ReqRev, RepRev uint8
	Enhanced, P2P  bool // RFC 6581 block on both frames; A on both
	DV, RV         [2]int8
	Markers        [2]bool // markers in FPDUs sent in each direction
	CRC            bool
	Ext7306        bool
}

// Name is a short label: "RFC 6581", "RFC 5044", "RDMAC", "direct start".
func (e Era) Name() string {
	switch {
	case !e.Handshake:
		return "direct start"
	case e.ReqRev == 0 || e.RepRev == 0:
		return "RDMAC (MPA Rev 0)"
	case e.Enhanced:
		return "RFC 6581"
	}
	return "RFC 5044"
}

// Negotiated is what the MPA exchange settled.
type Negotiated struct {
	// IRD and ORD of each side (-1: not negotiated, or 0x3FFF: the ULP
	// handles it). Index by the side's sending direction: [I2R] is the
	// Initiator's.
	IRD, ORD [2]int
	// RTR is the RTR the Initiator sent in peer-to-peer mode ("send",
	// "write", "read"), empty otherwise.
	RTR      string
	Rejected bool
}

// ConnStats are the statistics of one connection.
type ConnStats struct {
	Conn       int
	Era        Era
	Negotiated Negotiated
	Dir        [2]DirStats
	// ReadLatency is from each Read Request to its response's L segment.
	ReadLatency Latency
	// Findings counts the findings raised, by code.
	Findings           [finding.NumCodes]uint32
	FindingsSuppressed uint64
	Overflow           Overflows
	// STags is the number of STags in the table at the end.
	STags  int
	Closed string // "FIN", "RST", "" while open
}

// Stats are the statistics over all connections.
type Stats struct {
	Conns        uint64 // connections seen
	ConnsEvicted uint64 // retired early to stay within Limits.Conns
	// Dir sums the connections' statistics per direction.
	Dir         [2]DirStats
	ReadLatency Latency
	// Findings counts the findings raised, by code and by severity.
	Findings           [finding.NumCodes]uint64
	BySeverity         [3]uint64
	FindingsSuppressed uint64
	FindingsDropped    uint64 // not stored (Limits.StoredFindings)
	Overflow           Overflows
	RetainedDropped    uint64 // ConnStats not kept (Limits.RetainedConns)
}

// OpsTotal sums the operation counts of both directions.
func (s *Stats) OpsTotal() OpCounts {
	var o OpCounts
	o.add(&s.Dir[0].Ops)
	o.add(&s.Dir[1].Ops)
	return o
}

// aggregate accumulates retired connections.
type aggregate struct {
	conns, evicted uint64
	dir            [2]DirStats
	overflow       Overflows
}

// Stats returns the statistics over all connections so far.
func (t *Tracker) Stats() Stats {
	s := Stats{
		Conns:              t.total.conns,
		ConnsEvicted:       t.total.evicted,
		Dir:                t.total.dir,
		Overflow:           t.total.overflow,
		Findings:           t.byCode,
		BySeverity:         t.bySeverity,
		FindingsSuppressed: t.suppressed,
		FindingsDropped:    t.findingsDropped,
		RetainedDropped:    t.retiredDropped,
		ReadLatency:        latencyOf(&t.latency),
	}
	for _, c := range t.conns {
		s.Dir[0].add(&c.st.Dir[0])
		s.Dir[1].add(&c.st.Dir[1])
		s.Overflow.add(&c.st.Overflow)
	}
	return s
}

// MergedStats returns the statistics of several Trackers together, as one
// Tracker that saw all their connections would give them: a program that
// shards connections over Trackers (one per goroutine) reports with it.
// The read latency percentiles are those of the merged distributions.
func MergedStats(ts ...*Tracker) Stats {
	var s Stats
	var lat percentile.Dist
	for _, t := range ts {
		x := t.Stats()
		s.Conns += x.Conns
		s.ConnsEvicted += x.ConnsEvicted
		s.Dir[0].add(&x.Dir[0])
		s.Dir[1].add(&x.Dir[1])
		for i := range s.Findings {
			s.Findings[i] += x.Findings[i]
		}
		for i := range s.BySeverity {
			s.BySeverity[i] += x.BySeverity[i]
		}
		s.FindingsSuppressed += x.FindingsSuppressed
		s.FindingsDropped += x.FindingsDropped
		s.Overflow.add(&x.Overflow)
		s.RetainedDropped += x.RetainedDropped
		lat.Merge(&t.latency)
	}
	s.ReadLatency = latencyOf(&lat)
	return s
}

// ConnStats returns the statistics of a live or retained connection.
func (t *Tracker) ConnStats(id int) (ConnStats, bool) {
	if c := t.conns[id]; c != nil {
		return c.snapshot(), true
	}
	for i := len(t.retired) - 1; i >= 0; i-- {
		if t.retired[i].Conn == id {
			return t.retired[i], true
		}
	}
	return ConnStats{}, false
}

// AllConnStats returns the statistics of the retained (finished) and live
// connections, in connection order.
func (t *Tracker) AllConnStats() []ConnStats {
	out := make([]ConnStats, 0, len(t.retired)+len(t.conns))
	out = append(out, t.retired...)
	for _, c := range t.conns {
		out = append(out, c.snapshot())
	}
	sortConnStats(out)
	return out
}

func (c *conn) snapshot() ConnStats {
	s := c.st
	s.Conn = c.id
	s.Era = c.era()
	s.Negotiated = c.negotiated()
	s.ReadLatency = latencyOf(&c.lat)
	s.STags = c.stags.len()
	return s
}

// recordLatency adds a Read's latency to the connection's and the
// capture's distributions, as the operation's record carries it.
func (c *conn) recordLatency(d time.Duration) {
	c.lat.Add(int64(d))
	c.t.latency.Add(int64(d))
}

// opIndex maps an opcode to the statistics arrays.
func opIndex(op decode.Opcode) int { return int(op & 0xF) }
