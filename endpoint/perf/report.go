package perf

import (
	"encoding/json"
	"fmt"
	"io"
)

// The table layout is perftest's (perftest_parameters.h), so that scripts
// that read ib_write_bw's output read iwperf's: bandwidth in MB/sec with
// MB = 2^20 octets, or Gb/sec (10^9 bits) with --report_gbits; message
// rate in millions per second; latency in microseconds.

// Line is perftest's separator.
const Line = "---------------------------------------------------------------------------------------\n"

const (
	headBW     = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
	headBWG    = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
	headLat    = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n"
	mib        = 1 << 20
	gbitOctets = 125_000_000 // 10^9 bits
)

// Title is perftest's name of a test, as its banner prints it.
func Title(test string, bidir bool) string {
	verb := map[string]string{WriteBW: "RDMA_Write", WriteLat: "RDMA_Write", ReadBW: "RDMA_Read", ReadLat: "RDMA_Read",
		SendBW: "Send", SendLat: "Send", AtomicBW: "Atomic", AtomicLat: "Atomic"}[test]
	if bidir {
		verb += " Bidirectional"
	}
	if IsLat(test) {
		return verb + " Latency Test"
	}
	return verb + " BW Test"
}

func onOff(b bool) string {
	if b {
		return "ON"
	}
	return "OFF"
}

// Banner prints the parameters of the run's first connection, as
// perftest prints them before the table.
func Banner(w io.Writer, r Result) {
	p := r.Params
	fmt.Fprint(w, Line)
	fmt.Fprintf(w, "                    %s\n", r.title())
	fmt.Fprintf(w, " Number of qps   : %d\t\tTransport type : iWARP\n", r.QPs)
	fmt.Fprintf(w, " Connection type : RC\t\tUsing SRQ      : OFF\n")
	fmt.Fprintf(w, " TX depth        : %d\n", r.Depth)
	if IsBW(r.Test) {
		fmt.Fprintf(w, " CQ Moderation   : %d\n", r.CQMod)
	}
	fmt.Fprintf(w, " Mtu             : %d[B]\n", p.MULPDU)
	fmt.Fprintf(w, " Link type       : Ethernet\n")
	fmt.Fprintf(w, " MPA revision    : %d\t\tCRC            : %s\n", p.Rev, onOff(p.CRC))
	fmt.Fprintf(w, " Markers tx/rx   : %s/%s\t\tPeer-to-peer   : %s\n", onOff(p.MarkersTx), onOff(p.MarkersRx), onOff(p.PeerToPeer))
	fmt.Fprintf(w, " IRD / ORD       : %d / %d\n", p.IRD, p.ORD)
	fmt.Fprintf(w, " Data ex. method : %s\n", r.exchangeMethod())
	fmt.Fprint(w, Line)
	fmt.Fprintf(w, " local address: %s QPN 0x%04x STag 0x%08x VAddr 0x%012x\n", r.Local.Addr, r.Local.QPN, r.Local.STag, r.Local.VAddr)
	fmt.Fprintf(w, " remote address: %s STag 0x%08x VAddr 0x%012x\n", r.Remote.Addr, r.Remote.STag, r.Remote.VAddr)
	fmt.Fprint(w, Line)
}

// Header prints the table's column heads.
func Header(w io.Writer, test string, gbits bool) {
	switch {
	case IsLat(test):
		fmt.Fprint(w, headLat)
	case gbits:
		fmt.Fprint(w, headBWG)
	default:
		fmt.Fprint(w, headBW)
	}
}

// BWUnit converts octets per second to the table's unit.
func BWUnit(bps float64, gbits bool) float64 {
	if gbits {
		return bps / gbitOctets
	}
	return bps / mib
}

// FormatRow prints one row of the table.
func FormatRow(w io.Writer, test string, r Row, gbits bool) {
	if IsLat(test) {
		l := r.Lat
		if l == nil {
			l = &Latency{}
		}
		fmt.Fprintf(w, " %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
			r.Size, r.Iters, l.Min, l.Max, l.Typical, l.Avg, l.Stdev, l.P99, l.P999)
		return
	}
	fmt.Fprintf(w, " %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f\n",
		r.Size, r.Iters, BWUnit(r.PeakBps, gbits), BWUnit(r.AvgBps, gbits), r.MsgRate/1e6)
}

// Format prints a whole report of one run: banner, head, row, line.
func (r Result) Format(w io.Writer, gbits bool) {
	Banner(w, r)
	Header(w, r.Test, gbits)
	FormatRow(w, r.Test, r.Row, gbits)
	fmt.Fprint(w, Line)
}

// JSONReport is perftest's --out_json document: "test_info" and
// "results" (an array for a size sweep).
type JSONReport struct {
	TestInfo map[string]any `json:"test_info"`
	Results  any            `json:"results"`
}

// JSONRow is one result object with perftest's keys.
func JSONRow(test string, r Row, gbits bool) map[string]any {
	m := map[string]any{"MsgSize": r.Size, "n_iterations": r.Iters}
	if IsLat(test) {
		l := r.Lat
		if l == nil {
			l = &Latency{}
		}
		m["t_min"], m["t_max"], m["t_typical"], m["t_avg"], m["t_stdev"] = l.Min, l.Max, l.Typical, l.Avg, l.Stdev
		m["percentile_99"], m["percentile_99.9"] = l.P99, l.P999
		return m
	}
	m["BW_peak"] = round2(BWUnit(r.PeakBps, gbits))
	m["BW_average"] = round2(BWUnit(r.AvgBps, gbits))
	m["MsgRate"] = float64(int64(r.MsgRate/1e6*1e6+0.5)) / 1e6
	return m
}

func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }

// exchangeMethod is how the sides exchanged their buffers: the banner's
// "Data ex. method", the JSON's Data_ex_method.
func (r Result) exchangeMethod() string {
	if r.Exchange != "" {
		return r.Exchange + ", rdma_cm control QP"
	}
	return "MPA Private Data"
}

// JSON builds the --out_json document of one run or of a sweep's runs.
func JSON(rs []Result, gbits bool) []byte {
	if len(rs) == 0 {
		return []byte("{}\n")
	}
	r := rs[0]
	p := r.Params
	info := map[string]any{"test": r.title(), "Number_of_qps": r.QPs, "Transport_type": "iWARP",
		"Connection_type": "RC", "Using_SRQ": "OFF", "TX_depth": r.Depth, "Mtu": p.MULPDU, "Link_type": "Ethernet",
		"Data_ex_method": r.exchangeMethod(), "MPA_revision": p.Rev, "CRC": onOff(p.CRC),
		"Markers_tx": onOff(p.MarkersTx), "Markers_rx": onOff(p.MarkersRx), "Peer_to_peer": onOff(p.PeerToPeer),
		"IRD": p.IRD, "ORD": p.ORD}
	if IsBW(r.Test) {
		info["CQ_Moderation"] = r.CQMod
	}
	doc := JSONReport{TestInfo: info}
	if len(rs) == 1 {
		doc.Results = JSONRow(r.Test, r.Row, gbits)
	} else {
		var a []map[string]any
		for _, x := range rs {
			a = append(a, JSONRow(x.Test, x.Row, gbits))
		}
		doc.Results = a
	}
	b, _ := json.MarshalIndent(doc, "", " ")
	return append(b, '\n')
}
