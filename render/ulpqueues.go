package render

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/iwkit/iwkit/ulp"
)

// The per-queue parts of the -z nvme/iscsi/smb2/rpc tables (ulp
// depth.go): each queue (connection; an SMB2 share, ulp sharequeue.go)
// with what the protocol calls it, its depth (outstanding commands: the
// most, and the mean over time from its first command to the end of the
// capture), its rows with min, mean and percentiles; then the commands
// still outstanding at the end.

// ULPQueues returns the queues of protocol p in s, by connection and name.
func ULPQueues(s *ulp.Stats, p ulp.Proto) []*ulp.Queue {
	if s == nil {
		return nil
	}
	var qs []*ulp.Queue
	for _, q := range s.Queues {
		if q.Key.Proto == p {
			qs = append(qs, q)
		}
	}
	slices.SortStableFunc(qs, func(a, b *ulp.Queue) int {
		return cmp.Or(cmp.Compare(a.Key.Conn, b.Key.Conn), cmp.Compare(a.Key.Name, b.Key.Name))
	})
	return qs
}

// QueueLabel is a queue as the tables and plots name it.
func QueueLabel(k ulp.QueueKey) string {
	l := orDash(k.Conn)
	if k.Name != "" {
		l += " " + k.Name
	}
	return l
}

func writeULPQueues(w io.Writer, s *ulp.Stats, p ulp.Proto) bool {
	qs := ULPQueues(s, p)
	if len(qs) == 0 {
		return false
	}
	fmt.Fprintln(w, "")
	fmt.Fprintln(w, "Queues (one per connection): depth = commands outstanding; mean over time from the queue's first command to the end")
	if slices.ContainsFunc(qs, func(q *ulp.Queue) bool { return q.ID.Share != "" }) {
		fmt.Fprintln(w, "SMB2: a share's queue (its TREE_CONNECT path) holds the commands naming the share; the connection's the others,")
		fmt.Fprintln(w, "its depth counting every command on the connection, as the credit windows bound them")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "queue\tcommand\tcount\tunanswered\tmin\tmean\tp50\tp90\tp99\tmax\t")
	approx := false
	for _, q := range qs {
		fmt.Fprintf(tw, "%s\t(depth)\tmax %d\tmean %.2f\t\t\t\t\t\t\t\n", QueueLabel(q.Key), q.Depth.Max, q.Depth.Mean())
		for i := range q.Windows {
			if ws := q.Windows[i].Series; len(ws) > 0 && !ulp.Sequence[i] { // positions: --plot draws them
				lo, hi := ws[0].Value, ws[0].Value
				for _, p := range ws {
					lo, hi = min(lo, p.Value), max(hi, p.Value)
				}
				fmt.Fprintf(tw, "\t(%s)\tmin %d\tmax %d\tlast %d\t%d changes\t\t\t\t\t\n", ulp.WindowNames[i], lo, hi, ws[len(ws)-1].Value, len(ws))
			}
		}
		keys := make([]ulp.CmdKey, 0, len(q.Rows))
		for k := range q.Rows {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b ulp.CmdKey) int { return cmp.Compare(a.Name, b.Name) })
		for _, k := range keys {
			r := q.Rows[k]
			a := !r.Latency.Exact()
			approx = approx || a
			fmt.Fprintf(tw, "\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", k.Name, r.Count, r.Unanswered,
				dur(time.Duration(r.Latency.Min())), dur(time.Duration(r.Latency.Mean())),
				pctl(r.Percentile(0.5), a), pctl(r.Percentile(0.9), a), pctl(r.Percentile(0.99), a), dur(time.Duration(r.Latency.Max())))
		}
	}
	tw.Flush()
	if s.QueuesDropped > 0 {
		fmt.Fprintf(w, "(%d more queues, counted in the totals above)\n", s.QueuesDropped)
	}
	return approx
}

// maxStuckLines bounds the outstanding commands a -z table lists.
const maxStuckLines = 20

func writeULPStuck(w io.Writer, s *ulp.Stats, p ulp.Proto) {
	if s == nil {
		return
	}
	var st []ulp.Stuck
	aers := 0
	for _, x := range s.Stuck {
		if x.Queue.Proto != p {
			continue
		}
		if x.AER {
			aers++
			continue
		}
		st = append(st, x)
	}
	if len(st) == 0 && aers == 0 {
		return
	}
	slices.SortStableFunc(st, func(a, b ulp.Stuck) int { return cmp.Compare(b.Age, a.Age) })
	fmt.Fprintln(w, "")
	fmt.Fprintf(w, "Outstanding at the end of the capture: %d", len(st))
	if aers > 0 {
		fmt.Fprintf(w, " (and %d Asynchronous Event Requests, outstanding by design)", aers)
	}
	fmt.Fprintln(w)
	if len(st) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "queue\tcommand\tid\trequest frame\tage\t")
	for i, x := range st {
		if i == maxStuckLines {
			fmt.Fprintf(tw, "(%d more)\t\t\t\t\t\n", len(st)-i)
			break
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t\n", QueueLabel(x.Queue), x.Name, ulp.AppendID(nil, p, x.ID), x.RequestFrame, phaseCell(x.Age, false))
	}
	tw.Flush()
	if s.StuckDropped > 0 {
		fmt.Fprintf(w, "(%d more outstanding commands not listed)\n", s.StuckDropped)
	}
}
