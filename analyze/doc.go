// Package analyze is the analysis pipeline as a library: the one place
// that wires the stages together.
//
//	Source ──► reassembly ──► decode ──► track ──► Record stream ──► Consumer
//	(files merged in time order, stdin, live with a -w tee)
//
// A Source yields frames (OpenFiles, Filtered, OpenLive). Run passes them
// through the TCP reassembly and MPA framer (package reassembly), the
// decoders (decode) and the per-connection tracker (track), and hands out
// one ordered stream of Records: connection opened, MPA parameters
// negotiated, PDU, finding (gaps, resyncs, framing and receiver-check
// findings), operation completed, connection closed, note. Each record
// says where its octets are (frame numbers, TCP sequence range), so a
// consumer can re-read one PDU later without running the capture again.
// At the end Run returns a Report with the statistics.
//
// With Config.Workers > 1 the flow-sharded engine (shard.go) runs behind
// the same API: shards own the flows that hash to them, keep a copy of
// each record they raise (keep.go), and a merger hands the copies to the
// consumer in frame order, with the numbers one worker gives the
// connections: the consumer sees what it would see with one worker. A
// Splitter consumer does the part of its work that needs the record
// whole on the shards (its Preparer), and that record is not copied: the
// consumer gets its place, its time and its connection's number with
// what the Preparer made of it. A Batcher hears where each chunk's
// records end.
//
// RunOrdered is the adapter for consumers whose product is octets in
// capture order (iwdump's text and NDJSON, package render): one consumer
// per shard formats the records where they lie, in parallel, and what
// they write is merged back in frame order, octet for octet what one
// worker would write.
//
// Front ends (iwdump, iwtui, the export, stateful replay) are consumers.
// Warnings of a capture that goes on (a lagging decoder, a -w file that
// does not close) reach the caller through LiveConfig.Warn and Tee.Warn.
//
// Rules: analyze does the wiring and nothing else. It draws no screen and
// formats no records (render does); the words it writes are the messages
// of the findings it raises (gaps, resyncs, inferred parameters) and, for
// a live capture, what goes to LiveConfig.Stderr: lag reports, -w errors
// and tcpdump's end-of-capture summary. The stages below it keep their own
// rules (decode imports nothing of ours and does no I/O; reassembly knows
// no RDMA state; track does no I/O).
package analyze
