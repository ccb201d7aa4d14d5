// Package gen synthesizes iWARP traffic: it runs iwkit's pipeline backwards,
// from a Scenario (connections, MPA parameters, RDMA operations, impairments)
// through RDMAP, DDP segmentation, MPA framing with markers and CRC, TCP
// segmentation, and Ethernet/IP/TCP frames, into a FrameSink such as a
// pcap.Writer.
//
// # Scenarios
//
// A Scenario is plain data with JSON and YAML tags, so the same value is a
// scenario file (Load, Parse; WriteYAML and WriteJSON write one back).
// Built-in scenarios come from Builtin. A small one:
//
//	name: demo
//	seed: 7
//	connections:
//	  - client: 10.0.0.1:40000          # the client is the MPA Initiator
//	    server: 10.0.0.2:4791
//	    client_isn: 4294967000          # sequence numbers wrap
//	    mpa: {rev: 2, crc: true, markers_r2i: true, rtr: write}
//	    ops:
//	      - {op: send, size: 3000}       # i2r unless dir: r2i
//	      - {op: write, size: 64KiB}
//	      - {op: read, dir: r2i, size: 8KiB}
//	      - {op: terminate, dir: r2i, layer: 1, etype: 2, code: 3}
//	impairments:
//	  - {kind: corrupt_crc, op: 0}
//	  - {kind: drop, segment: 5}         # the 5th i2r data segment
//
// # Running
//
// Run streams: frames go to the sink as they are built and nothing per
// frame is kept, so a multi-gigabyte capture (Scenario.MaxBytes) takes
// constant memory. Alongside the frames, Run can report the ground truth to
// a TruthSink: every FPDU with the frames that hold its octets, its TCP
// sequence range and header values; every impairment exactly as applied;
// and the findings an analyzer should raise (codes from package finding).
// Collector gathers it into a Truth value; JSONTruthWriter streams the same
// JSON to a file in constant memory.
//
// # What goes on the wire
//
// The generator behaves like a real sender: DDP segments never exceed the
// MULPDU derived from the effective MSS (RFC 5044 §4.5), untagged segments
// advance the MO and tagged ones the TO (RFC 5041 §5.2), MSNs count per
// queue and direction from 1 (RFC 5041 §5.1), markers sit at every 512th
// octet of the TCP sequence space from each direction's first FPDU on (RFC
// 5044 §4.3), the CRC32c covers markers and PAD (RFC 5044 §4.4), the MPA
// Request and Reply carry M per receive direction and the RFC 6581 block,
// and a peer-to-peer Initiator sends its RTR first (RFC 6581 §9.3). The
// receiver acknowledges every AckEvery data segments and at the end of each
// burst; a segment still held back (reordered, lost in the network) is a
// hole its ACKs do not pass. Frame timestamps follow the link rate, with a
// latency whenever the other side answers.
//
// Everything is deterministic for a given Scenario (its Seed included): the
// same scenario gives the same octets.
package gen
