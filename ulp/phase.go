package ulp

import "time"

// Phases of a command (issue 27, "where the time goes"): its latency
// split at the first and the last data operation of the command, the
// RDMA operations the target drives on the command's STags (its Read
// Requests and their Read Responses, its RDMA Writes) or, where the host
// pushes the data itself, the data Sends (iSER unsolicited Data-Out PDUs,
// RFC 7145 §7.3.4):
//
//	Queue    the command Send's last segment to the first data operation
//	         (the target queueing the command before it moves data),
//	Transfer the first data operation to the last data segment (host
//	         memory and the wire),
//	Backend  the last data segment to the response's last segment (the
//	         target's backend: media, file system).
//
// The three sum exactly to Latency (they are differences of the same four
// frame times). A command that moved no data of its own (no RDMA on its
// STags, no data Sends: data in the command capsule or the response
// itself, or none at all) has no phases (Phased false), as has one the
// capture ends before answering.

// phaseMarks are the times of a task's first and last data operation.
type phaseMarks struct {
	first, last time.Time
	seen        bool
}

// dataOp notes a data operation of t spanning first..last (a segment: both
// its time; a data Send: its first and last segment).
func (t *task) dataOp(first, last time.Time) {
	if !t.ph.seen {
		t.ph.first, t.ph.seen = first, true
	}
	if last.After(t.ph.last) || t.ph.last.IsZero() {
		t.ph.last = last
	}
}

// setPhases splits an answered command's latency at its data operations.
// A data time outside Start..End (clocks of a multi-interface capture) is
// clamped into it, so the phases still sum to Latency and none is negative.
func (cmd *Command) setPhases(p *phaseMarks) {
	if !p.seen || !cmd.Answered {
		return
	}
	first := clampTime(p.first, cmd.Start, cmd.End)
	last := clampTime(p.last, first, cmd.End)
	cmd.Queue = first.Sub(cmd.Start)
	cmd.Transfer = last.Sub(first)
	cmd.Backend = cmd.End.Sub(last)
	cmd.Phased = true
}

func clampTime(t, lo, hi time.Time) time.Time {
	if t.Before(lo) {
		return lo
	}
	if t.After(hi) {
		return hi
	}
	return t
}
