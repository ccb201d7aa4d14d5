package render

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

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
	fmt.Fprintln(tw, "command\tcount\tunanswered\tRDMA octets\tinline octets\tp50\tp90\tp99\tmax\terrors\t")
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
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t\n", k.Name, r.Count, r.Unanswered, r.Octets, r.Inline,
				pctl(r.Percentile(0.5), a), pctl(r.Percentile(0.9), a), pctl(r.Percentile(0.99), a), dur(time.Duration(r.Latency.Max())), e)
		}
	}
	tw.Flush()
	approxNote(w, approx)
	fmt.Fprintln(w, line)
}
