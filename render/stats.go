package render

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/percentile"
	"github.com/iwkit/iwkit/reassembly"
	"github.com/iwkit/iwkit/track"
	"github.com/iwkit/iwkit/ulp"
)

// The -z tables, in tshark's habit: printed after the PDUs (or alone with
// -q), one table per statistic, a row per connection.

// StatNames are the tables WriteStat knows.
var StatNames = []string{"conv", "ops", "findings", "latency", "nvme", "iscsi", "smb2", "rpc"}

// ValidStat says whether WriteStat knows table s.
func ValidStat(s string) bool {
	for _, n := range StatNames {
		if s == n {
			return true
		}
	}
	return false
}

// report is what the tables are drawn from.
type report struct {
	conns map[int]*reassembly.Conn
	cs    []track.ConnStats
	all   track.Stats
	asm   reassembly.Stats
	live  string // capture statistics line of a live capture, if any
	// findings are the pipeline's counts of the findings it handed out
	// (every stage's): -z conv and -z findings both read them.
	findings *finding.Tally
}

// WriteStat writes the statistics table stat (one of StatNames) of what a
// run found. live is the capture statistics line of a live capture ("" for
// files), shown under the conv table.
func WriteStat(w io.Writer, rep *analyze.Report, live, stat string) {
	if p, ok := ulpStats[stat]; ok { // ulpstats.go
		writeULPStat(w, rep.ULP, p)
		if p == ulp.NVMe {
			writeDiscovery(w, rep.Discovery) // discovery.go
		}
		return
	}
	r := &report{conns: rep.Conns, cs: rep.ConnStats, all: rep.Stats, asm: rep.Asm, live: live, findings: rep.Findings}
	r.write(w, stat)
}

// Duration is a duration as the -z tables print it: "-" for none, else
// ns, µs with one decimal, ms with two or s with three.
func Duration(d time.Duration) string { return dur(d) }

func dur(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", d.Nanoseconds())
	case d < time.Millisecond:
		return fmt.Sprintf("%.1fµs", float64(d.Nanoseconds())/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d.Nanoseconds())/1e6)
	}
	return fmt.Sprintf("%.3fs", d.Seconds())
}

func (r *report) addrs(id int) (string, string) {
	c := r.conns[id]
	if c == nil {
		return "?", "?"
	}
	init := reassembly.DirAB
	if c.Initiator >= 0 {
		init = reassembly.Dir(c.Initiator)
	}
	return c.Addr[init].String(), c.Addr[init.Other()].String()
}

func (r *report) write(w io.Writer, stat string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := strings.Repeat("=", 78)
	fmt.Fprintln(w, line)
	switch stat {
	case "conv":
		fmt.Fprintln(w, "iWARP connections (i2r: from the MPA initiator)")
		fmt.Fprintln(tw, "conn\tinitiator\tresponder\tera\tCRC\tFPDUs i2r\toctets i2r\tFPDUs r2i\toctets r2i\tgaps\tCRC bad\tfindings\tclosed\t")
		for _, c := range r.cs {
			a, b := r.addrs(c.Conn)
			nf := r.findings.Conn(c.Conn)
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%v\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n", c.Conn, a, b, c.Era.Name(), c.Era.CRC,
				c.Dir[0].FPDUs, c.Dir[0].ULPDUOctets, c.Dir[1].FPDUs, c.Dir[1].ULPDUOctets,
				c.Dir[0].Gaps+c.Dir[1].Gaps, c.Dir[0].CRCBad+c.Dir[1].CRCBad, nf, orDash(c.Closed))
		}
	case "ops":
		fmt.Fprintln(w, "RDMA operations by the side that starts them")
		fmt.Fprintln(tw, "conn\tdir\tWrites\tSends\tSendInv\tReads\tanswered\tAtomics\tImm\tTerminates\tRTR\tpayload octets\t")
		for _, c := range r.cs {
			for d := 0; d < 2; d++ {
				o, s := c.Dir[d].Ops, c.Dir[d]
				fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", c.Conn, track.Dir(d), o.Writes, o.Sends, o.SendsWithInvalidate,
					o.Reads, o.ReadsAnswered, o.Atomics, o.Immediates, o.Terminates, o.RTRs, s.PayloadOctets)
			}
		}
		tw.Flush()
		fmt.Fprintln(w)
		fmt.Fprintln(tw, "opcode\tsegments\tmessages\toctets\t")
		for op := 0; op < 16; op++ {
			seg := r.all.Dir[0].Segments[op] + r.all.Dir[1].Segments[op]
			if seg == 0 {
				continue
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t\n", decode.Opcode(op), seg, r.all.Dir[0].Messages[op]+r.all.Dir[1].Messages[op], r.all.Dir[0].Octets[op]+r.all.Dir[1].Octets[op])
		}
	case "findings":
		fmt.Fprintln(w, "Findings by code")
		fmt.Fprintln(tw, "severity\tcode\tcount\tchecks\tsummary\t")
		for _, x := range r.findings.Codes() {
			info := x.Code.Info()
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t\n", info.Severity, info.Name, x.N, info.ChecksText(), info.Summary)
		}
		a := r.asm
		fmt.Fprintf(tw, "\treassembly: gaps\t%d\t%d octets\t\t\n", a.Gaps, a.GapBytes)
		fmt.Fprintf(tw, "\treassembly: skipped\t%d\toctets\t\t\n", a.SkippedBytes)
		fmt.Fprintf(tw, "\treassembly: resyncs\t%d\t\t\t\n", a.Resyncs)
		fmt.Fprintf(tw, "\treassembly: inconsistent retransmissions\t%d\t\t\t\n", a.InconsistentRetran)
		fmt.Fprintf(tw, "\treassembly: flows evicted\t%d\t\t\t\n", a.FlowsEvicted)
	case "latency":
		fmt.Fprintln(w, "RDMA Read latency (Read Request to the Read Response's last segment)")
		fmt.Fprintln(tw, "conn\treads\tmin\tmean\tp50\tp90\tp99\tp99.9\tmax\t")
		approx := false
		row := func(name string, l *track.Latency) {
			p := func(d time.Duration) string { return pctl(d, l.Approx) }
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, l.Count, dur(l.Min), dur(l.Mean), p(l.P50), p(l.P90), p(l.P99), p(l.P999), dur(l.Max))
			approx = approx || l.Approx
		}
		for _, c := range r.cs {
			row(fmt.Sprint(c.Conn), &c.ReadLatency)
		}
		row("all", &r.all.ReadLatency)
		tw.Flush()
		approxNote(w, approx)
	}
	tw.Flush()
	if stat == "conv" && r.live != "" {
		fmt.Fprintln(w, r.live)
	}
	fmt.Fprintln(w, line)
}

// pctl is a percentile cell: "~" before one from a histogram.
func pctl(d time.Duration, approx bool) string {
	if approx {
		return "~" + dur(d)
	}
	return dur(d)
}

// approxNote says what "~" means, under a table that has one.
func approxNote(w io.Writer, approx bool) {
	if approx {
		fmt.Fprintf(w, "~: more than %d samples, from an HdrHistogram of %d significant digits: within %.1f%% of the nearest-rank value\n",
			percentile.Budget, percentile.Digits, percentile.RelError*100)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
