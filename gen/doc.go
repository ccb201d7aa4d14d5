// Package gen synthesizes iWARP traffic: it runs iwkit's pipeline backwards,
// from a Scenario (connections, MPA parameters, RDMA operations, impairments)
// through RDMAP, DDP segmentation, MPA framing with markers and CRC, TCP
// segmentation, and Ethernet/IP/TCP frames, into a FrameSink such as a
// pcap.Writer.
//
// A Scenario is plain data with JSON and YAML tags, so the same value is a
// scenario file (see Load). Run streams: frames go to the sink as they are
// built and nothing per frame is kept, so a multi-gigabyte capture takes
// constant memory. Alongside the frames, Run can report the ground truth to
// a TruthSink: every FPDU with the frames that hold its octets and its header
// values, every impairment exactly as applied, and the findings an analyzer
// should raise (codes in findings.go). Collect gathers it into a Truth value;
// NewJSONTruthWriter streams the same JSON to a file.
//
// The generator behaves like a real sender: DDP segments never exceed the
// MULPDU derived from the effective MSS (RFC 5044 §4.5), untagged segments
// advance the MO and tagged ones the TO (RFC 5041 §5.2), MSNs count per queue
// and direction from 1 (RFC 5041 §5.1), markers sit at every 512th octet of
// the TCP sequence space from the first FPDU on (RFC 5044 §4.3), the CRC32c
// covers markers and PAD (RFC 5044 §4.4), and the receiver acknowledges.
//
// Everything is deterministic for a given Scenario (its Seed included):
// the same scenario gives the same octets.
package gen
