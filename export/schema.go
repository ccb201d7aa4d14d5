package export

import (
	"math/bits"

	"github.com/iwkit/iwkit/decode"
)

// The tables and their columns: a contract (docs/parquet.md). Columns may
// be added; none changes name, type or meaning. The capture name is not a
// column of the files: it is the Hive partition (capture=NAME in the
// path), which every engine reads as a column.

// where are the columns every row that points at frames starts with.
func where(frameDesc string) []Column {
	return []Column{
		{Name: "frame", Type: Int64, Desc: frameDesc},
		{Name: "time", Type: Time, Desc: "capture time of that frame (UTC, ns)"},
		{Name: "time_rel_ns", Type: Int64, Desc: "nanoseconds since the first frame of the capture (NDJSON's \"time\" is this in seconds)"},
	}
}

// connCols are a row's connection and direction (NULL when unknown).
func connCols(optional bool) []Column {
	return []Column{
		{Name: "conn", Type: Int64, Optional: optional, Desc: "connection number, as iwdump's NDJSON \"conn\""},
		{Name: "dir", Type: String, Optional: optional, Desc: `"i2r" (from the MPA initiator) or "r2i"`},
		{Name: "src", Type: String, Optional: optional, Desc: "sender, ip:port ([v6]:port)"},
		{Name: "dst", Type: String, Optional: optional, Desc: "receiver, ip:port"},
	}
}

func cat(groups ...[]Column) []Column {
	var out []Column
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// pduField is a field-table field with its column.
type pduField struct {
	f   *decode.Field
	typ ColType
}

// fieldType is the column type of a field: unsigned integers as wide as
// the field is on the wire, named values by their name.
func fieldType(f *decode.Field) ColType {
	switch f.Kind {
	case decode.KindBool:
		return Bool
	case decode.KindEnum, decode.KindString:
		return String
	case decode.KindBytes:
		return Bytes
	}
	n := f.Size * 8
	if f.Size == 0 {
		n = 32 // a count the decoder derives
		if f.Mask != 0 {
			n = bits.Len64(f.Mask)
		}
	}
	switch {
	case n > 32:
		return Uint64
	case n > 16:
		return Uint32
	case n > 8:
		return Uint16
	}
	return Uint8
}

// pduFields are the field-table columns of the pdus table: every field
// but "data" (the payload), in table order.
var pduFields = func() []pduField {
	var out []pduField
	fs := decode.Fields()
	for i := range fs {
		if fs[i].Name == "data" {
			continue
		}
		out = append(out, pduField{f: &fs[i], typ: fieldType(&fs[i])})
	}
	return out
}()

// Pdus: every MPA frame and FPDU.
var Pdus = func() *Table {
	cols := cat(where("frame holding the PDU's last octet"), connCols(false), []Column{
		{Name: "first_frame", Type: Int64, Desc: "frame holding the PDU's first octet"},
		{Name: "tcp_seq", Type: Uint32, Desc: "TCP sequence number of the PDU's first octet (a leading marker included)"},
		{Name: "wire_length", Type: Uint32, Desc: "octets on the wire, markers included"},
		{Name: "missing", Type: Uint32, Desc: "octets at the PDU's end not captured (gap or snaplen); 0 when whole"},
	})
	for _, pf := range pduFields {
		cols = append(cols, Column{Name: fieldColumn(pf.f.Name), Type: pf.typ, Optional: true, Desc: pf.f.Name + ": " + pf.f.Desc})
	}
	return newTable("pdus", "every MPA Request/Reply frame and FPDU, with the field table's fields as columns (NULL where the PDU does not carry the field)", cols)
}()

// Findings: everything iwdump reports as a finding.
var Findings = newTable("findings", "every finding (receiver checks, framing, TCP gaps and resyncs), as iwdump -T json reports them",
	cat(where("frame the finding is reported at (0: the end of the capture)"), connCols(true), []Column{
		{Name: "severity", Type: String, Desc: "note, warning or error"},
		{Name: "code", Type: String, Desc: "stable finding code, e.g. ddp.msn_gap"},
		{Name: "message", Type: String, Desc: "what was found, with its RFC reference"},
		{Name: "frames", Type: Int64s, Desc: "every frame involved: the one that raised it first, then context (e.g. the Read Request a response was matched against)"},
		{Name: "checks", Type: String, Optional: true, Desc: "receiver-check rows behind the code"},
		{Name: "tcp_seq", Type: Uint32, Optional: true, Desc: "TCP sequence number where it applies (gaps, resyncs, framing)"},
	}))

// Operations: RDMA operations and Terminates.
var Operations = newTable("operations", "RDMA operations (Writes, Sends, Reads with their responses and latency, atomics, immediates, RTRs) and Terminates with the frame they blame",
	cat(where("last frame of the operation (its response's last frame, if any)"), connCols(true), []Column{
		{Name: "kind", Type: String, Desc: "write, send, read, atomic, immediate, rtr, terminate"},
		{Name: "opcode", Type: String, Desc: "RDMAP opcode of the request (or the only message)"},
		{Name: "status", Type: String, Optional: true, Desc: "ok, mismatch, unanswered, terminated, incomplete (NULL for a Terminate)"},
		{Name: "length", Type: Uint64, Optional: true, Desc: "payload octets: the Write's or Send's, the Read Response's"},
		{Name: "read_size", Type: Uint32, Optional: true, Desc: "RDMA Read Message Size requested"},
		{Name: "sink_stag", Type: Uint32, Optional: true, Desc: "Data Sink STag: the Write's, or the Read's (where the Read Response goes)"},
		{Name: "sink_to", Type: Uint64, Optional: true, Desc: "Data Sink Tagged Offset of the Write or Read"},
		{Name: "src_stag", Type: Uint32, Optional: true, Desc: "Read: Data Source STag; atomic: Remote STag"},
		{Name: "src_to", Type: Uint64, Optional: true, Desc: "Read: Data Source Tagged Offset; atomic: Remote Tagged Offset"},
		{Name: "inval_stag", Type: Uint32, Optional: true, Desc: "Send with Invalidate: the STag invalidated"},
		{Name: "msn", Type: Uint32, Optional: true, Desc: "MSN of the untagged request or Send"},
		{Name: "atomic_op", Type: String, Optional: true, Desc: "FetchAdd or CmpSwap"},
		{Name: "request_id", Type: Uint32, Optional: true, Desc: "atomic Request Identifier"},
		{Name: "request_frame", Type: Int64, Desc: "first frame of the request (or message); the Terminate's frame"},
		{Name: "last_request_frame", Type: Int64, Desc: "last frame of the request (or message)"},
		{Name: "response_first_frame", Type: Int64, Optional: true, Desc: "first frame of the response"},
		{Name: "response_last_frame", Type: Int64, Optional: true, Desc: "last frame of the response"},
		{Name: "start_time", Type: Time, Desc: "time of the request's first segment"},
		{Name: "end_time", Type: Time, Optional: true, Desc: "time of the last segment (response's, if any)"},
		{Name: "latency_ns", Type: Int64, Optional: true, Desc: "request to the response's last segment, ns (Reads, atomics)"},
		{Name: "term_layer", Type: String, Optional: true, Desc: "Terminate: layer (RDMAP, DDP, LLP)"},
		{Name: "term_etype", Type: String, Optional: true, Desc: "Terminate: error type"},
		{Name: "term_code", Type: String, Optional: true, Desc: "Terminate: error code"},
		{Name: "term_cause", Type: String, Optional: true, Desc: "Terminate: layer/type/code in words, as read in context"},
		{Name: "term_siw_encoding", Type: Bool, Optional: true, Desc: "Terminate: control word in Linux siw's encoding"},
		{Name: "blamed_frame", Type: Int64, Optional: true, Desc: "Terminate: frame of the segment its copied header names"},
		{Name: "blamed_opcode", Type: String, Optional: true, Desc: "Terminate: opcode of that segment"},
		{Name: "verdict", Type: String, Optional: true, Desc: "Terminate: whether the capture supports the blame (consistent, plausible, inconsistent, unmatched, unknown, no header)"},
		{Name: "verdict_reason", Type: String, Optional: true, Desc: "Terminate: why the verdict"},
		{Name: "community_id", Type: String, Optional: true, Desc: "the connection's Community ID v1 (seed 0, TCP), as Zeek, Suricata and Arkime write it: joins with their flow records"},
	}))

// dirCols are the per-direction columns of connections, prefixed i2r_
// and r2i_.
func dirCols(d string) []Column {
	c := func(name string, t ColType, opt bool, desc string) Column {
		return Column{Name: d + "_" + name, Type: t, Optional: opt, Desc: desc + " (" + d + ")"}
	}
	return []Column{
		c("markers", Bool, false, "FPDUs carry markers"),
		c("crc", Bool, false, "FPDUs carry a CRC32c to check"),
		c("params_source", String, false, "how markers and CRC are known: handshake, inferred, unknown"),
		c("ird", Int64, true, "IRD the sender announced (MPA v2 or Rev 1 Private Data)"),
		c("ord", Int64, true, "ORD the sender announced"),
		c("fpdus", Uint64, false, "FPDUs"),
		c("ulpdu_octets", Uint64, false, "DDP segment octets"),
		c("payload_octets", Uint64, false, "ULP payload octets"),
		c("crc_good", Uint64, false, "FPDUs whose CRC matched"),
		c("crc_bad", Uint64, false, "FPDUs whose CRC did not match"),
		c("gaps", Uint64, false, "TCP gaps"),
		c("gap_octets", Uint64, false, "octets missing in gaps"),
		c("retransmissions", Uint64, false, "retransmitted segments"),
		c("writes", Uint64, false, "RDMA Writes sent"),
		c("sends", Uint64, false, "Sends sent"),
		c("reads", Uint64, false, "RDMA Read Requests sent"),
		c("reads_answered", Uint64, false, "of those, answered"),
		c("atomics", Uint64, false, "Atomic Requests sent"),
		c("terminates", Uint64, false, "Terminates sent"),
	}
}

// Connections: one row per iWARP connection.
var Connections = newTable("connections", "one row per iWARP connection: addresses, MPA parameters per direction, counters, first and last frame and time",
	cat([]Column{
		{Name: "conn", Type: Int64, Desc: "connection number, as iwdump's NDJSON \"conn\""},
		{Name: "initiator", Type: String, Desc: "MPA initiator (the Request's sender; before a Request is seen, the TCP client), ip:port"},
		{Name: "responder", Type: String, Desc: "the other end, ip:port"},
		{Name: "initiator_ip", Type: String, Desc: "initiator address"},
		{Name: "initiator_port", Type: Uint16, Desc: "initiator TCP port"},
		{Name: "responder_ip", Type: String, Desc: "responder address"},
		{Name: "responder_port", Type: Uint16, Desc: "responder TCP port"},
		{Name: "syn", Type: Bool, Desc: "the TCP handshake was captured (else attached mid-stream)"},
		{Name: "first_frame", Type: Int64, Desc: "first frame of the connection"},
		{Name: "last_frame", Type: Int64, Desc: "last frame of the connection"},
		{Name: "first_time", Type: Time, Desc: "time of the first frame"},
		{Name: "last_time", Type: Time, Desc: "time of the last frame"},
		{Name: "era", Type: String, Desc: "RFC 6581, RFC 5044, RDMAC (MPA Rev 0) or direct start (no handshake)"},
		{Name: "mpa_request_rev", Type: Uint8, Optional: true, Desc: "MPA revision of the Request"},
		{Name: "mpa_reply_rev", Type: Uint8, Optional: true, Desc: "MPA revision of the Reply"},
		{Name: "enhanced", Type: Bool, Desc: "RFC 6581 IRD/ORD block on both frames"},
		{Name: "p2p", Type: Bool, Desc: "peer-to-peer mode (RFC 6581)"},
		{Name: "rtr", Type: String, Optional: true, Desc: "ready-to-receive message the initiator sent: send, write, read"},
		{Name: "rejected", Type: Bool, Desc: "the MPA Reply rejected the connection"},
		{Name: "crc", Type: Bool, Desc: "CRC32c in use"},
	}, dirCols("i2r"), dirCols("r2i"), []Column{
		{Name: "findings", Type: Uint64, Desc: "findings raised on the connection"},
		{Name: "closed", Type: String, Optional: true, Desc: "how it ended: fin, rst, idle, end (of capture), evicted, reused"},
		{Name: "close_frame", Type: Int64, Optional: true, Desc: "frame that closed it"},
		{Name: "community_id", Type: String, Optional: false, Desc: "the connection's Community ID v1 (seed 0, TCP), as Zeek, Suricata and Arkime write it: joins with their flow records"},
	}, queueCols()))

// Commands: the storage-protocol commands, one row per command answered
// or left unanswered (analyze.KindCommand with Config.Unanswered;
// docs/storage.md). One table for the
// four protocols, not one each: every command has the same shape (an id,
// a name, a status, octets moved by RDMA and inline, STags, frames and
// latency); what only some have (NSID, LUN, LBA, file offset) is a few
// NULL-able columns, and one table keeps "p99 per protocol" one query and
// a capture set's files few.
var Commands = newTable("commands", "storage-protocol commands (NVMe-oF, iSCSI over iSER, SMB2 over SMB Direct, RPC/NFS over RPC-over-RDMA), answered or still outstanding at the end: ids, what they address, octets moved, STags, latency or age, and findings",
	cat(where("frame of the response's last segment (the PDU whose ulp.command names the command); unanswered: the frame that ended its connection, 0 for the capture's end"), connCols(false), []Column{
		{Name: "proto", Type: String, Desc: "nvme, iser, smbd or rpcrdma (ulp.proto)"},
		{Name: "command", Type: String, Desc: "the command, as ulp.command: Write, READ(10), SMB2 READ, NFSv3 WRITE, NFSv4 READ"},
		{Name: "id", Type: Uint64, Desc: "the task's id: NVMe CID, iSCSI ITT, SMB2 MessageId, RPC XID"},
		{Name: "status", Type: String, Optional: true, Desc: "the response's status by name (Success, GOOD, STATUS_SUCCESS, SUCCESS)"},
		{Name: "ok", Type: Bool, Desc: "the status is a success"},
		{Name: "data_dir", Type: String, Optional: true, Desc: "read (the responder RDMA-Writes to the advertiser) or write (it RDMA-Reads from it)"},
		{Name: "nsid", Type: Uint32, Optional: true, Desc: "NVMe namespace ID"},
		{Name: "lun", Type: Uint64, Optional: true, Desc: "iSCSI LUN"},
		{Name: "lba", Type: Uint64, Optional: true, Desc: "NVMe SLBA or SCSI LBA"},
		{Name: "blocks", Type: Uint64, Optional: true, Desc: "NVMe NLB (1-based) or SCSI transfer length, blocks"},
		{Name: "file_offset", Type: Uint64, Optional: true, Desc: "NFS or SMB2 READ/WRITE file offset"},
		{Name: "length", Type: Uint64, Optional: true, Desc: "NFS READ/WRITE count, SMB2 READ/WRITE Length"},
		{Name: "object", Type: String, Optional: true, Desc: "the file or share the command acts on, where the capture holds what named its handle: SMB2 \\\\server\\share\\file (smb2.share, smb2.filename), NFS dir/name (nfs.name)"},
		{Name: "expected_octets", Type: Uint64, Desc: "octets the command said would move by RDMA (ulp.expected)"},
		{Name: "rdma_octets", Type: Uint64, Desc: "octets the RDMA Writes and Read Responses on its STags moved (ulp.rdma_octets)"},
		{Name: "inline_octets", Type: Uint64, Desc: "data octets carried in the Sends (ulp.inline)"},
		{Name: "rdma_reads", Type: Uint64, Desc: "RDMA Read Requests against its STags"},
		{Name: "rdma_writes", Type: Uint64, Desc: "RDMA Write messages into its STags"},
		{Name: "stags", Type: Uint32s, Desc: "the STags the command advertised (NVMe SGL key, iSER read/write STag, SMB2 descriptor token, RPC chunk handles)"},
		{Name: "request_frame", Type: Int64, Desc: "frame of the command Send's last segment"},
		{Name: "start_time", Type: Time, Desc: "time of that frame"},
		{Name: "latency_ns", Type: Int64, Optional: true, Desc: "the command Send's last segment to the response's last segment, ns (NULL: unanswered)"},
		{Name: "queue_ns", Type: Int64, Optional: true, Desc: "latency phase: the command to the target's first data operation (ulp.phase_queue_ns); NULL when the command moved no data of its own"},
		{Name: "transfer_ns", Type: Int64, Optional: true, Desc: "latency phase: the first to the last data operation (ulp.phase_transfer_ns)"},
		{Name: "backend_ns", Type: Int64, Optional: true, Desc: "latency phase: the last data operation to the response (ulp.phase_backend_ns); queue_ns + transfer_ns + backend_ns = latency_ns"},
		{Name: "queue", Type: String, Optional: true, Desc: "what the protocol calls the command's queue: NVMe \"qid Q cntlid C SUBNQN\" (Connect), iSCSI \"TARGETNAME tsih 0xT\" (Login); SMB2: the share the command names (\\\\server\\share, its TREE_CONNECT path), a queue of its own; NULL for NFS and SMB2 commands naming no share (the connection is the queue)"},
		{Name: "findings", Type: Strings, Desc: "codes of the findings raised on the connection at the request or the response frame"},
		{Name: "community_id", Type: String, Optional: false, Desc: "the connection's Community ID v1 (seed 0, TCP), as Zeek, Suricata and Arkime write it: joins with their flow records"},
		{Name: "answered", Type: Bool, Desc: "the capture holds the response; false: the command was still outstanding when its connection or the capture ended (frame, time: that end; frame 0: the capture's)"},
		{Name: "age_ns", Type: Int64, Optional: true, Desc: "unanswered: how long it had waited at that end (time minus start_time), ns; NULL when answered"},
		{Name: "standing", Type: Bool, Desc: "outstanding by design until the target has news (NVMe Asynchronous Event Request, SMB2 CHANGE_NOTIFY): leave it out when looking for hung commands"},
		{Name: "rdma_ops", Type: Strings, Desc: "the operations that moved its data, in the order they began (ulp.rdma.*): \"W 14-17\" an RDMA Write's first-last frame, \"R 32→33-49\" an RDMA Read's Read Request frame → its Read Responses' frames, \"S 12\" a Send that carried data; \"+N\" last when N more were not kept (ulp.rdma_dropped)"},
		{Name: "rdma_frames", Type: Int64s, Desc: "the frames of those operations, in order: each Write's and Send's first and last, each Read's Read Request and its Read Responses' first and last (a frame once where first = last): iwdump -Y 'frame == N' shows one"},
	}))

// Captures: one row per capture set.
var Captures = newTable("captures", "one row per exported capture set: its files and counts",
	[]Column{
		{Name: "files", Type: Strings, Desc: "the capture files, as given to iwdump (iwdump -r FILE -Y 'frame == N' opens a row's frame)"},
		{Name: "frames", Type: Int64, Desc: "frames read"},
		{Name: "first_time", Type: Time, Optional: true, Desc: "time of the first frame"},
		{Name: "last_time", Type: Time, Optional: true, Desc: "time of the last frame"},
		{Name: "connections", Type: Int64, Desc: "rows in connections"},
		{Name: "pdus", Type: Int64, Desc: "rows in pdus"},
		{Name: "operations", Type: Int64, Desc: "rows in operations"},
		{Name: "findings", Type: Int64, Desc: "rows in findings"},
		{Name: "exported_at", Type: Time, Desc: "when the export finished"},
		{Name: "commands", Type: Int64, Desc: "rows in commands"},
		{Name: "commit_id", Type: String, Desc: "the commit this row records: every table's part of the set is part-<commit_id>.parquet; of a set's commits the greatest is the live one (docs/export.md \"The export: layout\")"},
		{Name: "writer", Type: String, Desc: "the writer that made the commit (its temporary files were .part-<writer>.parquet.tmp)"},
		{Name: "host", Type: String, Desc: "host name of the machine that wrote it"},
		{Name: "iwkit_version", Type: String, Desc: "iwkit module version and VCS revision of the writer"},
		{Name: "content_hash", Type: String, Desc: "xxh3-128:<hex>, the XXH3 128-bit hash of the files' octets concatenated in order (xxhsum -H2 of one file; empty for a pipe); the capture set's identity"},
		{Name: "paths", Type: Strings, Desc: "the capture files as absolute paths on host"},
		{Name: "tags", Type: Strings, Desc: "iwdump --tag KEY=VALUE, in order given (iwsql adds a column tag_KEY for each KEY)"},
		{Name: "truncated", Type: Bool, Desc: "reading stopped early: a damaged or truncated file (the rows before the damage are exported)"},
		{Name: "error", Type: String, Optional: true, Desc: "the read error that stopped it"},
		{Name: "latency_hist", Type: Int64, Desc: "rows in latency_hist"},
	})

// Tables lists the exported tables, in the order docs/parquet.md shows them.
// Captures goes last: its part's rename is a commit (docs/export.md, "The
// commit protocol").
var Tables = []*Table{Connections, Pdus, Operations, Findings, Commands, LatencyHist, Captures}
