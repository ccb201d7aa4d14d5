package render

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/iwkit/iwkit/percentile"
	"github.com/iwkit/iwkit/ulp"
)

// The storage-protocol tables: -z nvme, -z iscsi, -z smb2, -z rpc. One row
// per command name: count, unanswered, octets moved by RDMA and inline,
// latency percentiles (command Send to response), errors by status.

var ulpStats = map[string]ulp.Proto{"nvme": ulp.NVMe, "iscsi": ulp.ISER, "smb2": ulp.SMBD, "rpc": ulp.RPCRDMA}

var ulpStatTitles = map[ulp.Proto]string{
	ulp.NVMe:    "NVMe-oF commands (RDMA transport)",
	ulp.ISER:    "iSCSI commands over iSER",
	ulp.SMBD:    "SMB2 commands over SMB Direct",
	ulp.RPCRDMA: "RPC calls over RPC-over-RDMA",
}

func writeULPStat(w io.Writer, s *ulp.Stats, p ulp.Proto) {
	line := strings.Repeat("=", 78)
	fmt.Fprintln(w, line)
	fmt.Fprintln(w, ulpStatTitles[p])
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "command\tcount\tunanswered\tRDMA octets\tinline octets\tmin\tmean\tp50\tp90\tp99\tmax\terrors\t")
	approx := false
	if s != nil {
		for _, k := range s.Rows(p) {
			r := s.ByName[k]
			var errs []string
			for st, n := range r.Errors {
				errs = append(errs, fmt.Sprintf("%s:%d", st, n))
			}
			sort.Strings(errs)
			e := "-"
			if len(errs) > 0 {
				e = strings.Join(errs, ",")
			}
			a := !r.Latency.Exact()
			approx = approx || a
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", k.Name, r.Count, r.Unanswered, r.Octets, r.Inline,
				dur(time.Duration(r.Latency.Min())), dur(time.Duration(r.Latency.Mean())),
				pctl(r.Percentile(0.5), a), pctl(r.Percentile(0.9), a), pctl(r.Percentile(0.99), a), dur(time.Duration(r.Latency.Max())), e)
		}
	}
	tw.Flush()
	approx = writeULPPhases(w, s, p) || approx
	approx = writeULPQueues(w, s, p) || approx
	writeULPStuck(w, s, p)
	approxNote(w, approx)
	fmt.Fprintln(w, line)
}

// writeULPPhases is the phases part of a -z table: per command, the
// percentiles of the three phases its latency splits into (ulp phase.go),
// over the answered commands that moved data of their own. It says
// whether a cell came from a histogram.
func writeULPPhases(w io.Writer, s *ulp.Stats, p ulp.Proto) bool {
	if s == nil {
		return false
	}
	var keys []ulp.CmdKey
	for _, k := range s.Rows(p) {
		if s.ByName[k].Queue.Count() > 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return false
	}
	fmt.Fprintln(w, "")
	fmt.Fprintln(w, "Phases: queue = command to the target's first data operation, transfer = first to last data")
	fmt.Fprintln(w, "operation (RDMA Read/Write, or data Sends), backend = last data to the response")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "command	phased	queue p50	p90	p99	transfer p50	p90	p99	backend p50	p90	p99	")
	approx := false
	for _, k := range keys {
		r := s.ByName[k]
		fmt.Fprintf(tw, "%s	%d	", k.Name, r.Queue.Count())
		for _, d := range []*percentile.Dist{&r.Queue, &r.Transfer, &r.Backend} {
			a := !d.Exact()
			approx = approx || a
			for _, q := range []float64{0.5, 0.9, 0.99} {
				fmt.Fprintf(tw, "%s	", phaseCell(time.Duration(d.Quantile(q)), a))
			}
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	return approx
}

// phaseCell is a phase percentile: a phase may be 0 (a one-segment
// transfer), which is a value, not the "-" of no sample.
func phaseCell(d time.Duration, approx bool) string {
	if d == 0 {
		return "0"
	}
	return pctl(d, approx)
}
