package render

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/iwkit/iwkit/ulp"
)

// writeDiscovery writes, under -z nvme, the NVMe-oF discovery log entries
// the capture holds and the connections that used each (ulp.Discovery's
// links): entry, the listener and subsystem it names, and every later
// Connect to them as conn/QID@frame. Nothing when no log page was seen.
func writeDiscovery(w io.Writer, d *ulp.Discovery) {
	if d == nil || len(d.Announced) == 0 {
		return
	}
	fmt.Fprintln(w, "NVMe-oF discovery log entries (Get Log Page 0x70) and the Connects to what they name")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "frame\tconn\tentry\ttrtype/prtype\ttraddr:trsvcid\tsubnqn\tconnected (conn/qid@frame)\t")
	for _, l := range d.Links() {
		var to []string
		for _, k := range l.Connected {
			to = append(to, fmt.Sprintf("%d/%d@%d", k.Conn, k.QID, k.Frame))
		}
		used := "-"
		if len(to) > 0 {
			used = strings.Join(to, " ")
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s/%s\t%s:%s\t%s\t%s\t\n", l.Frame, l.Conn, l.Entry, l.Trtype, l.Prtype, l.Traddr, l.Trsvcid, l.SubNQN, used)
	}
	tw.Flush()
	if d.Dropped > 0 {
		fmt.Fprintf(w, "(%d entries or Connects beyond the first %d not kept)\n", d.Dropped, ulp.MaxDiscovery)
	}
	fmt.Fprintln(w, strings.Repeat("=", 78))
}
