package gen

// Finding codes: what an analyzer should raise for what the generator put on
// the wire. They are stable strings (the truth files and the analyzer's
// tests compare them). Where the analyzer in track/ has a check for the same
// thing, the code is its name (track/codes.go); the tcp.* and frame.* codes
// are for the TCP reassembly. The truth lists errors and warnings the
// traffic causes plus tcp.midstream; it does not list the informational
// notes an analyzer adds (connection closed, extensions in use, resync).
// The receiver-check ids in brackets refer to spec/receiver-checks.md.
const (
	// FindTCPGap: octets of a direction never appear in the capture (a
	// segment the capture dropped, or cut by the snaplen); the receiver
	// acknowledged them. Raised at the truncated frame, or at the first
	// captured ACK that covers the missing octets.
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
	// FindDDPMOOutOfOrder: an untagged message's segments do not continue
	// from MO 0 in order: the first is not at MO 0, or one skips ahead or
	// goes back (RFC 5041 §5.3) [DDP-06, DDP-15]. Raised once per message.
	FindDDPMOOutOfOrder = "ddp.mo_out_of_order"

	// FindDDPSTagZero: a tagged message with payload to STag 0, which is
	// never remotely usable (V00 §7.2.1) [DDP-08].
	FindDDPSTagZero = "ddp.stag_zero"
	// FindDDPTOWrap: a tagged segment's TO + length wraps 2^64 (RFC 5041
	// §7.2, 0x1/0x1/0x03) [DDP-11].
	FindDDPTOWrap = "ddp.to_wrap"

	// FindRDMAPRVInvalid: RDMAP Version other than the stream's (RFC 5040
	// §4.1) [RD-01].
	FindRDMAPRVInvalid = "rdmap.rv_invalid"
	// FindRDMAPOpcodeMismatch: an untagged message on a valid queue that
	// is not its opcode's (a Send on QN 1, ...) [RD-03].
	FindRDMAPOpcodeMismatch = "rdmap.opcode_mismatch"
	// FindRDMAPSTagUnknown: an RDMA Write targets an STag that was never
	// advertised. Inferred: an analyzer sees advertisements only through
	// Read Requests, Send with Invalidate or a ULP plugin [DDP-08].
	FindRDMAPSTagUnknown = "rdmap.stag_unknown"
	// FindRDMAPReadResponseMismatch: a Read Response does not answer the
	// oldest outstanding Read Request: its STag is not the request's Data
	// Sink STag (or its TO not the Data Sink TO) [RD-15].
	FindRDMAPReadResponseMismatch = "rdmap.read_response_mismatch"
	// FindRDMAPIRDExceeded: more Read Requests outstanding than the
	// responder's IRD from the MPA exchange (RFC 6581 §9.1) [RD-14].
	FindRDMAPIRDExceeded = "rdmap.ird_exceeded"
	// FindRDMAPSTagZero: STag 0 used remotely: a Read Request's Data
	// Source, a Send with Invalidate's STag, an Atomic Request's target
	// [RD-07, RD-08].
	FindRDMAPSTagZero = "rdmap.stag_zero"
	// FindRDMAPReadTOWrap: a Read Request's SrcTO (or SinkTO) + size wraps
	// 2^64 (RFC 5040 §5.2.1, 0x0/0x1/0x04) [RD-11].
	FindRDMAPReadTOWrap = "rdmap.read_to_wrap"
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
