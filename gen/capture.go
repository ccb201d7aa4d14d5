package gen

import (
	"io"

	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/pcap"
)

// WriteCapture runs sc and writes its frames to w as a capture file of
// format f (Ethernet frames, the scenario's snaplen), flushed.
func WriteCapture(w io.Writer, f pcap.Format, sc *Scenario, opts *Options) (Stats, error) {
	pw, err := pcap.NewWriter(w, f, layers.LinkTypeEthernet, uint32(sc.Snaplen))
	if err != nil {
		return Stats{}, err
	}
	st, err := Run(sc, pw, opts)
	if err != nil {
		return st, err
	}
	return st, pw.Flush()
}
