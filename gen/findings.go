package gen

// Finding codes: what an analyzer should raise for what the generator put on
// the wire. They are stable strings (the truth files and the analyzer's
// tests compare them); the analyzer in track/ is expected to use the same
// codes. The receiver-check ids in brackets refer to
// spec/receiver-checks.md.
const (
	// FindTCPGap: octets of a direction never appear in the capture (a
	// dropped segment that is not retransmitted, i.e. capture loss); the
	// receiver acknowledged them.
	FindTCPGap = "tcp.gap"
	// FindTCPRetransmission: a segment's octets appear again with the same
	// content (duplicate or retransmission).
	FindTCPRetransmission = "tcp.retransmission"
	// FindTCPRetransInconsistent: a retransmission carries different
	// octets for the same sequence numbers.
	FindTCPRetransInconsistent = "tcp.retrans_inconsistent"
	// FindTCPOutOfOrder: a segment arrives after segments with higher
	// sequence numbers (reordering, or a retransmission after a network
	// loss).
	FindTCPOutOfOrder = "tcp.out_of_order"
	// FindTCPMidstream: the capture starts inside the connection: no SYN
	// and no MPA handshake, the analyzer must attach mid-stream.
	FindTCPMidstream = "tcp.midstream"
	// FindTCPReset: the connection ends with an RST.
	FindTCPReset = "tcp.rst"
	// FindFrameTruncated: the capture cut the frame (snaplen); FPDU octets
	// are missing.
	FindFrameTruncated = "frame.truncated"

	// FindMPAReject: the MPA Reply rejects the connection (R=1, RFC 5044
	// §7.1.2) [MPA-06].
	FindMPAReject = "mpa.reject"
	// FindMPACRCBad: CRC negotiated and the FPDU's CRC field does not
	// match (RFC 5044 §4.4, §8) [MPA-16].
	FindMPACRCBad = "mpa.crc_bad"

	// FindDDPMSNGap: an untagged message's MSN is above the next expected
	// one for its queue (RFC 5041 §5.1) [DDP-05].
	FindDDPMSNGap = "ddp.msn_gap"
	// FindDDPMSNRepeat: an untagged message's MSN is below the next
	// expected one (duplicate or going backwards) [DDP-05].
	FindDDPMSNRepeat = "ddp.msn_repeat"
	// FindDDPQNInvalid: an untagged segment names a queue RDMAP does not
	// use (RFC 5040 §3.1: 0, 1, 2; 3 with RFC 7306) [DDP-03].
	FindDDPQNInvalid = "ddp.qn_invalid"
	// FindDDPDVInvalid: DDP Version other than the stream's (1 for RFC
	// 5041; 0 only with MPA Rev 0) [DDP-01].
	FindDDPDVInvalid = "ddp.dv_invalid"
	// FindDDPMOOutOfOrder: an untagged segment's MO does not continue the
	// message (first segment MO 0, segments contiguous) [DDP-06].
	FindDDPMOOutOfOrder = "ddp.mo_out_of_order"

	// FindRDMAPRVInvalid: RDMAP Version other than the stream's (RFC 5040
	// §4.1) [RD-01].
	FindRDMAPRVInvalid = "rdmap.rv_invalid"
	// FindRDMAPOpcodeMismatch: an untagged message on a valid queue that
	// is not its opcode's (a Send on QN 1, ...) [RD-03].
	FindRDMAPOpcodeMismatch = "rdmap.opcode_mismatch"
	// FindRDMAPSTagUnknown: a tagged message targets an STag that was
	// never advertised: for a Read Response, not the Read Request's Data
	// Sink STag (definite); for an RDMA Write, no advertisement seen
	// (inferred) [DDP-08, RD-15].
	FindRDMAPSTagUnknown = "rdmap.stag_unknown"
	// FindRDMAPReadResponseTooLong: the Read Response carries more octets
	// than the Read Request's RDMA Read Message Size [RD-15, DDP-10].
	FindRDMAPReadResponseTooLong = "rdmap.read_response_too_long"
	// FindRDMAPTerminate: a Terminate was sent; the finding names its
	// cause (RFC 5040 §4.8).
	FindRDMAPTerminate = "rdmap.terminate"
)

// Severities of findings.
const (
	SevError   = "error"
	SevWarning = "warning"
	SevInfo    = "info"
)
