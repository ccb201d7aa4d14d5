package finding

// Code identifies a kind of finding. Its String form ("ddp.msn_gap") is
// stable: outputs, filters, truth files and tests use it. The numeric
// values are not: they follow the declaration order and change when codes
// are added, so nothing may store them. The zero Code is no finding.
//
// The codes are declared here once, grouped by the layer they judge; a
// comment after each gives the receiver-check rows (spec/receiver-checks.md)
// it implements. To add a block (a ULP's codes, say): add its constants
// before numCodes, its rows to infos, a Stage if a new stage raises them,
// and run go test ./finding -run TestREADME -update for the list in docs/findings.md.
// The tests check that every code has a row with a severity, a stage and a
// summary, a unique name of the form layer.what, that a layer's codes form
// one block, and that its receiver-check ids are rows of
// receiver-checks.md (testdata/receiver-check-ids.txt; add new ids there).
type Code uint16

const (
	none Code = iota

	// Capture: frames the pipeline cannot take apart.
	FrameUndecodable // a frame with a TCP segment that does not decode

	// Internal: the analyzer's own failures on hostile input.
	InternalDecoderPanic // a decoder panicked on a PDU or storage message: contained (analyze/contain.go)

	// TCP (reassembly/): what the capture lacks or holds twice.
	TCPGap                 // octets not captured (dropped, snaplen) or given up
	TCPLateData            // octets for a hole already given up
	TCPRetransInconsistent // a retransmission carries different octets
	TCPFlowEvicted         // the flow table was full: the least recently active connection was dropped

	// MPA framing (reassembly/, RFC 5044 §4, §7).
	MPABadFrame        // MPA-04: an MPA Request/Reply that does not decode
	MPAFramingLost     // MPA-21: in sync, an FPDU that cannot be right
	MPADataAfterReject // MPA-06: octets after a rejecting Reply, not decoded
	MPASkipped         // octets skipped while resynchronising
	MPAResync          // FPDU delineation restarted
	MPAParamsInferred  // markers and CRC inferred without a handshake
	MPACRCByteOrder    // MPA-16: every CRC32c is the right one byte-swapped

	// MPA (track/, RFC 5044, RFC 6581).
	MPAKeyInvalid           // MPA-01: wrong key for the frame's role, or an unparseable key
	MPARevUnknown           // MPA-02: Rev > 2
	MPARev0                 // MPA-02: Rev 0, RDMA Consortium era
	MPARevERDMA             // MPA-02: Rev 129, Alibaba erdma's extension after PD_Length
	MPARequestRejectBit     // MPA-03: R set in a Request
	MPAPDLengthInvalid      // MPA-04: PD_Length > 512 or not matching the data
	MPAResBits              // MPA-05: reserved flag bits set
	MPASiwGSO               // MPA-05: siw's GSO bit (0x08) with Rev >= 2
	MPAFrameUnexpected      // RFC 5044 §7.1: a second Request/Reply, or a frame after FPDUs
	MPAReject               // MPA-06: the Reply rejects the connection
	MPAFPDUAfterReject      // MPA-06: FPDUs after a rejecting Reply
	MPAFPDUBeforeReply      // MPA-07: Initiator FPDU before it received the Reply
	MPAResponderSentFirst   // MPA-08: Responder FPDU before it received the Initiator's first FPDU
	MPAEnhancedInvalid      // MPA-09: S with Rev < 2 or PD_Length < 4
	MPAEnhancedMismatch     // MPA-10: Request and Reply differ in S
	MPAP2PMismatch          // MPA-11: Request and Reply differ in A
	MPARTRNoneOffered       // MPA-12: Reply with A=1 and none of B/C/D
	MPARTRBitsIgnored       // MPA-12: B/C/D set with A=0
	MPARTRTypeMismatch      // MPA-12: the RTR sent is a type the Reply did not accept
	MPAIRDORDViolation      // MPA-13: Responder ORD > Initiator IRD, or 0x3FFF not echoed
	MPARTRMissing           // MPA-14: P2P Initiator's first FPDU is not a zero-length RTR
	MPAFPDUBeforeRTR        // MPA-15: P2P Responder FPDU before the RTR arrived
	MPACRCBad               // MPA-16: CRC in use and wrong
	MPACRCRetransmitted     // MPA-16: a bad-CRC FPDU retransmitted good (silent drop)
	MPAMarkerMismatch       // MPA-18: FPDUPTR does not point at the FPDU's ULPDU_Length
	MPAMarkersUnexpected    // MPA-19: markers in a direction that did not negotiate them
	MPAMarkersMissing       // MPA-19: no marker where the negotiated spacing needs one
	MPAMarkerReserved       // MPA-20: marker Reserved != 0
	MPAPadNonzero           // MPA-20: PAD != 0
	MPAULPDUTooShort        // MPA-21: ULPDU_Length too small for the DDP header
	MPAULPDUExceedsMULPDU   // MPA-21: ULPDU_Length above MULPDU (when the MSS is known)
	MPALLPClosed            // MPA-22: TCP FIN or RST
	MPASiwTerminateEncoding // RD-20 with reference §5.1: Terminate in siw's bit-field encoding
	MPAResetInSetup         // MPA-22: a RST before the MPA exchange completed
	MPAV1Fallback           // RFC 6581 §10: an aborted MPA v2 attempt retried as v1 by the same peers

	// DDP (track/, RFC 5041).
	DDPDVInvalid           // DDP-01 (+ draft-differences §7): DV not 1 (or 0 in the RDMAC era), or changing
	DDPRsvdNonzero         // DDP-02: DDP control Rsvd bits set
	DDPQNInvalid           // DDP-03: QN not 0–3
	DDPMSNGap              // DDP-05: MSN skipped (or the first is not 1)
	DDPMSNRepeat           // DDP-05: MSN repeated or going backwards
	DDPMOGap               // DDP-06, DDP-15: a hole in a message's MOs (first segment not at MO 0, a skip, the L segment early)
	DDPMOOverlap           // DDP-06: a segment goes back into octets its message already sent
	DDPMOWrap              // DDP-06: MO + length reaches 2^32
	DDPSTagZero            // DDP-08: tagged segment with STag 0 and a payload
	DDPTOWrap              // DDP-11: TO + length wraps 2^64
	DDPSegmentInconsistent // DDP-14: RsvdULP / RDMAP control differ within a message
	DDPLMissing            // DDP-15: a new MSN on a queue whose previous message had no L segment
	DDPInterleaved         // DDP-15: TO discontinuity, or messages interleaved

	// RDMAP (track/, RFC 5040, RFC 7306).
	RDMAPRVInvalid               // RD-01: RV not 01b (or 00b in the RDMAC era), changing, or disagreeing with DV
	RDMAPOpcodeUnexpected        // RD-02: opcode 0xC–0xF
	RDMAPExtension               // RD-02: RFC 7306 opcodes in use
	RDMAPOpcodeMismatch          // RD-03, RD-28: opcode does not fit T / QN
	RDMAPRsvNonzero              // RD-04, RD-20: RDMAP Rsv bits, Terminate Reserved bits
	RDMAPInvSTagNonzero          // RD-04, RD-27: Invalidate STag != 0 where unused
	RDMAPReadRequestMalformed    // RD-05, MPA-21: Read Request not one 46-octet L segment at MO 0
	RDMAPSTagZero                // RD-07, RD-08: STag 0 to invalidate, to read from or as atomic target
	RDMAPSTagInvalidatedUse      // DDP-08, RD-08: STag used after a Send with Invalidate
	RDMAPReadTOWrap              // RD-11 (and DDP-11 for the sink): Read Request TO + size wraps
	RDMAPIRDExceeded             // RD-14: more outstanding Read Requests than the responder's IRD
	RDMAPReadResponseUnmatched   // RD-15: Read Response with no Read Request outstanding
	RDMAPReadResponseMismatch    // RD-15: Read Response STag / TO differ from the oldest request
	RDMAPReadResponseTooLong     // RD-15, RD-13, DDP-10: more octets than requested
	RDMAPReadResponseShort       // RD-15, RD-13: L segment before the requested size
	RDMAPRequestUnanswered       // RD-13, RD-28: a Read or Atomic Request never answered
	RDMAPResponseOrder           // RD-28 (RFC 7306 §7): Read and Atomic Responses out of QN 1 order
	RDMAPAfterTerminate          // RD-17: a message after the sender's own Terminate
	RDMAPTerminateRepeat         // RD-18: a second Terminate in one direction
	RDMAPTermAfterTerminate      // RD-19: a Terminate answering a Terminate
	RDMAPTerminate               // RD-20, RD-21, RD-25, MPA-23: a Terminate, decoded in context
	RDMAPNoReceivePosted         // RD-20: a Send arrived with no receive posted (Terminate DDP 0x1/0x01)
	RDMAPTerminateMalformed      // RD-20: undefined cause, wrong length, headers that do not belong
	RDMAPTerminateV00Code        // RD-20 (draft-differences §5): V00-style LLP code
	RDMAPTerminateBlameUnmatched // RD-21: the copied header matches no segment sent
	RDMAPTerminateInconsistent   // RD-21: the blamed segment does not fit the cause
	RDMAPSentAfterPeerTerminate  // RD-22: data sent after receiving a Terminate
	RDMAPBadLLPClose             // RD-23: FIN while Read Requests from its sender were unanswered
	RDMAPDataAfterClose          // RD-24: data sent after receiving the peer's FIN
	RDMAPAtomicAOpCodeInvalid    // RD-26: AOpCode not FetchAdd or CmpSwap
	RDMAPAtomicFieldIgnored      // RD-26: Reserved or FetchAdd compare fields not as sent by the rules
	RDMAPAtomicMisaligned        // RD-26: atomic target TO not 8-octet aligned
	RDMAPImmediateMalformed      // RD-27: Immediate Data not one 26-octet L segment at MO 0
	RDMAPAtomicMalformed         // RD-28: Atomic Request/Response not one 70/30-octet L segment at MO 0
	RDMAPAtomicResponseUnmatched // RD-28: Atomic Response with no Atomic Request outstanding
	RDMAPAtomicResponseMismatch  // RD-28: Original Request Identifier not the oldest request's

	// Analyzer state (track/).
	TrackUncertainAfterGap  // a capture gap makes later checks on the queues uncertain
	TrackNoHandshake        // FPDUs without an MPA exchange: mid-stream attach or direct start
	TrackFindingsSuppressed // a code fired too often on one connection; later ones are counted only
	TrackTableOverflow      // a bounded table (reads, atomics, STags, open messages) overflowed

	// Storage protocols above RDMAP (ulp/; ulp-reference §6).
	ULPSTagUnknown         // RDMA Write or Read Request on an STag no outstanding command advertised
	ULPSTagWrongOp         // RDMA Write into a buffer advertised for reading, or RDMA Read from one advertised for writ
	ULPSTagUnused          // STag of a successful command never used by an RDMA operation
	ULPInvalidateForeign   // Send with Invalidate names an STag that is not the completed command's
	ULPInvalidateNotAsked  // Send with Invalidate where the advertiser did not offer remote invalidation
	ULPMovedMismatch       // octets moved by RDMA differ from the command's length
	ULPUnknownTask         // response for a command id / tag / xid that is not outstanding
	ULPTaskConflict        // two outstanding commands with the same id / tag / xid
	ULPReadSinkRights      // the responder rejects the Read Response into its own Read sink: an iWARP Read sink needs r
	ULPObjectsFull         // more handles named on a connection than the object tables keep: newer names are not learnt
	NVMeCMData             // NVMe-oF CM private data malformed (length, RECFMT)
	NVMeConnectParam       // Fabrics Connect QID/SQSIZE differ from the CM private data
	NVMePRP                // PSDT 00 (PRP) on a fabric
	NVMeRespSize           // NVMe response capsule not 16 octets
	NVMeSQID               // CQE SQID differs from the connection's QID
	NVMeReject             // NVMe-oF CM reject
	NVMeSQOverrun          // more commands outstanding on a queue than its negotiated size
	NVMeKeepAlive          // KATO set, and no admin command within it
	NVMeSGLOffset          // an in-capsule (offset) SGL whose offset + length lies beyond the capsule
	RPCRDMAVers            // rdma_vers is not 1
	RPCRDMAXID             // transport xid differs from the RPC xid
	RPCRDMACredits         // more outstanding calls than the credits granted
	RPCRDMAZeroCredit      // reply grants zero credits
	RPCRDMAInline          // Send larger than the receiver's inline receive size
	RPCRDMAObsolete        // RDMA_MSGP or RDMA_DONE (obsolete)
	RPCRDMAError           // RDMA_ERROR
	RPCRDMAReplyCut        // RDMA_NOMSG reply larger than the octets kept of its reply chunk: decoded from a prefix
	RPCDenied              // RPC call denied (MSG_DENIED)
	ISEROpcode             // iSER header with an invalid opcode or reserved bits
	ISERWSV                // iSCSI W/R bits and iSER WSV/RSV disagree
	ISCSICmdSN             // non-immediate command outside the ExpCmdSN..MaxCmdSN window
	SMBDLegacyLE           // legacy IRD/ORD private data in little-endian (Linux cifs.ko)
	SMBDLegacyV2           // legacy IRD/ORD block disagrees with the MPA v2 block
	SMBDCredits            // SMB Direct data message sent with no send credits
	SMBDTooLarge           // SMB Direct message larger than the peer's MaxReceiveSize
	SMBDFragment           // SMB Direct fragment sequence broken (RemainingDataLength)
	SMBDNegotiate          // SMB Direct negotiate message malformed
	SMBDFragmentedTooLarge // reassembled SMB Direct message larger than the receiver's MaxFragmentedSize
	SMB2Magic              // reassembled SMB Direct message does not start with an SMB2 header
	SMB2Channel            // READ/WRITE RDMA channel info not whole 16-octet descriptors inside the message
	SMB2SizeLimit          // READ/WRITE length above the MaxReadSize/MaxWriteSize of SMB2 NEGOTIATE
	// issue 27 windows (h-stor2)
	SMB2CreditWindow // SMB2 request whose MessageId + CreditCharge lies beyond the credits the server granted

	numCodes
)

// NumCodes is the number of codes plus one: Code values are 1..NumCodes-1,
// so [NumCodes]T arrays index by Code.
const NumCodes = int(numCodes)

// infos describes every code; the index is the Code.
var infos = [numCodes]Info{
	FrameUndecodable: {Name: "frame.undecodable", Severity: Note, Stage: StageCapture, Ref: "analyzer", Summary: "frame whose TCP segment does not decode (iwdump prints it as a note, without the code)"},

	InternalDecoderPanic: {Name: "internal.decoder_panic", Severity: Error, Stage: StagePipeline, Ref: "analyzer", Summary: "a decoder panicked on this PDU (an iwkit bug, contained): that layer stops for the connection; iwdump exits 5"},

	TCPGap:                 {Name: "tcp.gap", Severity: Warning, Stage: StageReassembly, Ref: "analyzer", Summary: "octets of a direction missing from the capture"},
	TCPLateData:            {Name: "tcp.late_data", Severity: Note, Stage: StageReassembly, Ref: "analyzer", Summary: "octets arrived for a hole already reported as a gap"},
	TCPRetransInconsistent: {Name: "tcp.retrans_inconsistent", Severity: Warning, Stage: StageReassembly, Ref: "analyzer", Summary: "retransmitted octets differ from the first copy"},
	TCPFlowEvicted:         {Name: "tcp.flow_evicted", Severity: Warning, Stage: StageReassembly, Ref: "analyzer", Summary: "flow table full (iwdump --max-flows): the least recently active connection was dropped, what it held reported as a gap"},

	MPABadFrame:        {Name: "mpa.bad_frame", Severity: Error, Stage: StageReassembly, Checks: []string{"MPA-04"}, Summary: "MPA key followed by a frame that does not decode (RFC 5044 §7.1.1)"},
	MPAFramingLost:     {Name: "mpa.framing_lost", Severity: Error, Stage: StageReassembly, Checks: []string{"MPA-21"}, Summary: "FPDU with an impossible ULPDU_Length or DDP/RDMAP header: looking for the next boundary"},
	MPADataAfterReject: {Name: "mpa.data_after_reject", Severity: Warning, Stage: StageReassembly, Checks: []string{"MPA-06"}, Summary: "octets after a rejecting MPA Reply (ULP streaming mode, RFC 5044 §7.1.2)"},
	MPASkipped:         {Name: "mpa.skipped", Severity: Warning, Stage: StageReassembly, Ref: "analyzer", Summary: "captured octets skipped while looking for an FPDU boundary"},
	MPAResync:          {Name: "mpa.resync", Severity: Note, Stage: StageReassembly, Ref: "analyzer", Summary: "FPDU boundary found again after a gap or a loss of framing"},
	MPACRCByteOrder:    {Name: "mpa.crc_byte_order", Severity: Error, Stage: StageReassembly, Checks: []string{"MPA-16"}, Summary: "CRC32c written in the wrong byte order: the framing holds, every FPDU's CRC is bad"},
	MPAParamsInferred:  {Name: "mpa.params_inferred", Severity: Note, Stage: StageReassembly, Ref: "analyzer (draft-differences §7)", Summary: "no handshake seen: markers and CRC inferred from the FPDUs"},

	MPAKeyInvalid:           {Name: "mpa.key_invalid", Severity: Error, Stage: StageTrack, Checks: []string{"MPA-01"}, Summary: "MPA frame key wrong for its role or unreadable"},
	MPARevUnknown:           {Name: "mpa.rev_unknown", Severity: Warning, Stage: StageTrack, Checks: []string{"MPA-02"}, Summary: "MPA Rev above 2"},
	MPARev0:                 {Name: "mpa.rev0", Severity: Note, Stage: StageTrack, Checks: []string{"MPA-02"}, Summary: "MPA Rev 0 (RDMA Consortium era)"},
	MPARevERDMA:             {Name: "mpa.rev_erdma", Severity: Note, Stage: StageTrack, Checks: []string{"MPA-02"}, Ref: "Linux erdma_cm.h", Summary: "MPA Rev 129, Alibaba erdma (not an RFC revision): 8-octet cookie/CC extension after PD_Length"},
	MPARequestRejectBit:     {Name: "mpa.request_reject_bit", Severity: Warning, Stage: StageTrack, Checks: []string{"MPA-03"}, Summary: "R set in an MPA Request"},
	MPAPDLengthInvalid:      {Name: "mpa.pd_length_invalid", Severity: Error, Stage: StageTrack, Checks: []string{"MPA-04"}, Summary: "PD_Length above 512 or not matching the data"},
	MPAResBits:              {Name: "mpa.res_bits", Severity: Warning, Stage: StageTrack, Checks: []string{"MPA-05"}, Summary: "reserved MPA flag bits set"},
	MPASiwGSO:               {Name: "mpa.siw_gso", Severity: Note, Stage: StageTrack, Checks: []string{"MPA-05"}, Summary: "siw GSO bit: FPDUs may exceed one TCP segment"},
	MPAFrameUnexpected:      {Name: "mpa.frame_unexpected", Severity: Warning, Stage: StageTrack, Ref: "RFC 5044 §7.1", Summary: "MPA frame repeated or after FPDUs"},
	MPAReject:               {Name: "mpa.reject", Severity: Warning, Stage: StageTrack, Checks: []string{"MPA-06"}, Summary: "MPA Reply rejects the connection (R=1)"},
	MPAFPDUAfterReject:      {Name: "mpa.fpdu_after_reject", Severity: Error, Stage: StageTrack, Checks: []string{"MPA-06"}, Summary: "FPDU after a rejecting Reply", Fatal: true},
	MPAFPDUBeforeReply:      {Name: "mpa.fpdu_before_reply", Severity: Error, Stage: StageTrack, Checks: []string{"MPA-07"}, Summary: "Initiator sent an FPDU before receiving the Reply"},
	MPAResponderSentFirst:   {Name: "mpa.responder_sent_first", Severity: Error, Stage: StageTrack, Checks: []string{"MPA-08"}, Summary: "Responder sent an FPDU before receiving the Initiator's first FPDU"},
	MPAEnhancedInvalid:      {Name: "mpa.enhanced_invalid", Severity: Error, Stage: StageTrack, Checks: []string{"MPA-09"}, Summary: "S flag with Rev < 2 or PD_Length < 4"},
	MPAEnhancedMismatch:     {Name: "mpa.enhanced_mismatch", Severity: Error, Stage: StageTrack, Checks: []string{"MPA-10"}, Summary: "Request and Reply differ in the enhanced (S) form"},
	MPAP2PMismatch:          {Name: "mpa.p2p_mismatch", Severity: Error, Stage: StageTrack, Checks: []string{"MPA-11"}, Summary: "Request and Reply differ in the A (peer-to-peer) bit"},
	MPARTRNoneOffered:       {Name: "mpa.rtr_none_offered", Severity: Error, Stage: StageTrack, Checks: []string{"MPA-12"}, Summary: "peer-to-peer Reply accepts no RTR type"},
	MPARTRBitsIgnored:       {Name: "mpa.rtr_bits_ignored", Severity: Warning, Stage: StageTrack, Checks: []string{"MPA-12"}, Summary: "RTR type bits set without A"},
	MPARTRTypeMismatch:      {Name: "mpa.rtr_type_mismatch", Severity: Error, Stage: StageTrack, Checks: []string{"MPA-12"}, Summary: "RTR of a type the Reply did not accept"},
	MPAIRDORDViolation:      {Name: "mpa.ird_ord_violation", Severity: Error, Stage: StageTrack, Checks: []string{"MPA-13"}, Summary: "Responder ORD above Initiator IRD, or 0x3FFF not echoed"},
	MPARTRMissing:           {Name: "mpa.rtr_missing", Severity: Error, Stage: StageTrack, Checks: []string{"MPA-14"}, Summary: "peer-to-peer Initiator's first FPDU is not a zero-length RTR", Fatal: true},
	MPAFPDUBeforeRTR:        {Name: "mpa.fpdu_before_rtr", Severity: Error, Stage: StageTrack, Checks: []string{"MPA-15"}, Summary: "peer-to-peer Responder sent an FPDU before the RTR arrived"},
	MPACRCBad:               {Name: "mpa.crc_bad", Severity: Error, Stage: StageTrack, Checks: []string{"MPA-16"}, Summary: "MPA CRC mismatch", Fatal: true},
	MPACRCRetransmitted:     {Name: "mpa.crc_retransmitted", Severity: Note, Stage: StageTrack, Checks: []string{"MPA-16"}, Summary: "bad-CRC FPDU retransmitted with a good CRC (silent drop)"},
	MPAMarkerMismatch:       {Name: "mpa.marker_mismatch", Severity: Error, Stage: StageTrack, Checks: []string{"MPA-18"}, Summary: "marker FPDUPTR does not point at the FPDU", Fatal: true},
	MPAMarkersUnexpected:    {Name: "mpa.markers_unexpected", Severity: Error, Stage: StageTrack, Checks: []string{"MPA-19"}, Summary: "markers where none were negotiated", Fatal: true},
	MPAMarkersMissing:       {Name: "mpa.markers_missing", Severity: Error, Stage: StageTrack, Checks: []string{"MPA-19"}, Summary: "no marker where negotiated markers are due", Fatal: true},
	MPAMarkerReserved:       {Name: "mpa.marker_reserved", Severity: Warning, Stage: StageTrack, Checks: []string{"MPA-20"}, Summary: "marker Reserved field not zero"},
	MPAPadNonzero:           {Name: "mpa.pad_nonzero", Severity: Warning, Stage: StageTrack, Checks: []string{"MPA-20"}, Summary: "FPDU PAD not zero"},
	MPAULPDUTooShort:        {Name: "mpa.ulpdu_too_short", Severity: Error, Stage: StageTrack, Checks: []string{"MPA-21"}, Summary: "ULPDU too short for its DDP header", Fatal: true},
	MPAULPDUExceedsMULPDU:   {Name: "mpa.ulpdu_exceeds_mulpdu", Severity: Warning, Stage: StageTrack, Checks: []string{"MPA-21"}, Summary: "ULPDU longer than the MULPDU of the path"},
	MPALLPClosed:            {Name: "mpa.llp_closed", Severity: Note, Stage: StageTrack, Checks: []string{"MPA-22"}, Summary: "TCP connection closed (FIN or RST)"},
	MPASiwTerminateEncoding: {Name: "mpa.siw_terminate_encoding", Severity: Note, Stage: StageTrack, Checks: []string{"RD-20"}, Ref: "reference §5.1", Summary: "Terminate control word in Linux siw's encoding, or ambiguous"},
	MPAResetInSetup:         {Name: "mpa.reset_in_setup", Severity: Error, Stage: StageTrack, Checks: []string{"MPA-22"}, Summary: "a peer reset the connection before the MPA exchange completed (the other side's connect fails)"},
	MPAV1Fallback:           {Name: "mpa.v1_fallback", Severity: Note, Stage: StageTrack, Ref: "RFC 6581 §10, Linux cxgb4 c4iw_reconnect", Summary: "an MPA v2 attempt aborted and the same peers reconnected with MPA v1 (the message gives the time lost)"},

	DDPDVInvalid:           {Name: "ddp.dv_invalid", Severity: Error, Stage: StageTrack, Checks: []string{"DDP-01"}, Summary: "DDP Version invalid for the connection or changing", Fatal: true},
	DDPRsvdNonzero:         {Name: "ddp.rsvd_nonzero", Severity: Warning, Stage: StageTrack, Checks: []string{"DDP-02"}, Summary: "DDP control Rsvd bits set"},
	DDPQNInvalid:           {Name: "ddp.qn_invalid", Severity: Error, Stage: StageTrack, Checks: []string{"DDP-03"}, Summary: "untagged QN not used by RDMAP", Fatal: true},
	DDPMSNGap:              {Name: "ddp.msn_gap", Severity: Error, Stage: StageTrack, Checks: []string{"DDP-05"}, Summary: "MSN skipped", Fatal: true},
	DDPMSNRepeat:           {Name: "ddp.msn_repeat", Severity: Error, Stage: StageTrack, Checks: []string{"DDP-05"}, Summary: "MSN repeated or going backwards", Fatal: true},
	DDPMOGap:               {Name: "ddp.mo_gap", Severity: Error, Stage: StageTrack, Checks: []string{"DDP-06", "DDP-15"}, Summary: "hole in a message's Message Offsets (segments not sent in MO order)", Fatal: true},
	DDPMOOverlap:           {Name: "ddp.mo_overlap", Severity: Error, Stage: StageTrack, Checks: []string{"DDP-06"}, Summary: "segments of a message overlap", Fatal: true},
	DDPMOWrap:              {Name: "ddp.mo_wrap", Severity: Error, Stage: StageTrack, Checks: []string{"DDP-06"}, Summary: "MO + length reaches 2^32", Fatal: true},
	DDPSTagZero:            {Name: "ddp.stag_zero", Severity: Error, Stage: StageTrack, Checks: []string{"DDP-08"}, Summary: "tagged data to STag 0", Fatal: true},
	DDPTOWrap:              {Name: "ddp.to_wrap", Severity: Error, Stage: StageTrack, Checks: []string{"DDP-11"}, Summary: "TO + length wraps 2^64", Fatal: true},
	DDPSegmentInconsistent: {Name: "ddp.segment_inconsistent", Severity: Warning, Stage: StageTrack, Checks: []string{"DDP-14"}, Summary: "segments of one message differ in RsvdULP"},
	DDPLMissing:            {Name: "ddp.l_missing", Severity: Error, Stage: StageTrack, Checks: []string{"DDP-15"}, Summary: "new message on a queue before the previous one's L segment", Fatal: true},
	DDPInterleaved:         {Name: "ddp.interleaved", Severity: Warning, Stage: StageTrack, Checks: []string{"DDP-15"}, Summary: "TO discontinuity or interleaved messages"},

	RDMAPRVInvalid:               {Name: "rdmap.rv_invalid", Severity: Error, Stage: StageTrack, Checks: []string{"RD-01"}, Summary: "RDMAP Version invalid for the connection", Fatal: true},
	RDMAPOpcodeUnexpected:        {Name: "rdmap.opcode_unexpected", Severity: Error, Stage: StageTrack, Checks: []string{"RD-02"}, Summary: "unassigned or experimental RDMAP opcode", Fatal: true},
	RDMAPExtension:               {Name: "rdmap.extension", Severity: Note, Stage: StageTrack, Checks: []string{"RD-02"}, Summary: "RFC 7306 opcodes in use"},
	RDMAPOpcodeMismatch:          {Name: "rdmap.opcode_mismatch", Severity: Error, Stage: StageTrack, Checks: []string{"RD-03", "RD-28"}, Summary: "opcode inconsistent with the T bit or QN", Fatal: true},
	RDMAPRsvNonzero:              {Name: "rdmap.rsv_nonzero", Severity: Warning, Stage: StageTrack, Checks: []string{"RD-04", "RD-20"}, Summary: "RDMAP reserved bits set"},
	RDMAPInvSTagNonzero:          {Name: "rdmap.inv_stag_nonzero", Severity: Warning, Stage: StageTrack, Checks: []string{"RD-04", "RD-27"}, Summary: "Invalidate STag set on a message that has none"},
	RDMAPReadRequestMalformed:    {Name: "rdmap.read_request_malformed", Severity: Error, Stage: StageTrack, Checks: []string{"RD-05", "MPA-21"}, Summary: "Read Request not a single 46-octet segment", Fatal: true},
	RDMAPSTagZero:                {Name: "rdmap.stag_zero", Severity: Error, Stage: StageTrack, Checks: []string{"RD-07", "RD-08"}, Summary: "STag 0 used remotely", Fatal: true},
	RDMAPSTagInvalidatedUse:      {Name: "rdmap.stag_invalidated_use", Severity: Error, Stage: StageTrack, Checks: []string{"DDP-08", "RD-08"}, Summary: "STag used after a Send with Invalidate"},
	RDMAPReadTOWrap:              {Name: "rdmap.read_to_wrap", Severity: Error, Stage: StageTrack, Checks: []string{"RD-11", "DDP-11"}, Summary: "Read Request TO + size wraps 2^64", Fatal: true},
	RDMAPIRDExceeded:             {Name: "rdmap.ird_exceeded", Severity: Error, Stage: StageTrack, Checks: []string{"RD-14"}, Summary: "more Read Requests outstanding than the responder's IRD", Fatal: true},
	RDMAPReadResponseUnmatched:   {Name: "rdmap.read_response_unmatched", Severity: Error, Stage: StageTrack, Checks: []string{"RD-15"}, Summary: "Read Response without an outstanding Read Request"},
	RDMAPReadResponseMismatch:    {Name: "rdmap.read_response_mismatch", Severity: Error, Stage: StageTrack, Checks: []string{"RD-15"}, Summary: "Read Response STag/TO differ from the oldest Read Request"},
	RDMAPReadResponseTooLong:     {Name: "rdmap.read_response_too_long", Severity: Error, Stage: StageTrack, Checks: []string{"RD-15", "RD-13", "DDP-10"}, Summary: "Read Response longer than requested"},
	RDMAPReadResponseShort:       {Name: "rdmap.read_response_short", Severity: Error, Stage: StageTrack, Checks: []string{"RD-15", "RD-13"}, Summary: "Read Response shorter than requested"},
	RDMAPRequestUnanswered:       {Name: "rdmap.request_unanswered", Severity: Note, Stage: StageTrack, Checks: []string{"RD-13", "RD-28"}, Summary: "Read or Atomic Request never answered in the capture"},
	RDMAPResponseOrder:           {Name: "rdmap.response_order", Severity: Error, Stage: StageTrack, Checks: []string{"RD-28"}, Summary: "Read and Atomic Responses out of request order"},
	RDMAPAfterTerminate:          {Name: "rdmap.after_terminate", Severity: Error, Stage: StageTrack, Checks: []string{"RD-17"}, Summary: "message sent after the sender's own Terminate"},
	RDMAPTerminateRepeat:         {Name: "rdmap.terminate_repeat", Severity: Error, Stage: StageTrack, Checks: []string{"RD-18"}, Summary: "more than one Terminate in a direction"},
	RDMAPTermAfterTerminate:      {Name: "rdmap.term_after_terminate", Severity: Warning, Stage: StageTrack, Checks: []string{"RD-19"}, Summary: "Terminate answered by a Terminate"},
	RDMAPTerminate:               {Name: "rdmap.terminate", Severity: Error, Stage: StageTrack, Checks: []string{"RD-20", "RD-21", "RD-25", "MPA-23"}, Summary: "Terminate: the peer reports an error"},
	RDMAPNoReceivePosted:         {Name: "rdmap.no_receive_posted", Severity: Error, Stage: StageTrack, Checks: []string{"RD-20"}, Summary: "Send arrived with no receive posted: the receiver Terminated (no buffer available), the Send fails"},
	RDMAPTerminateMalformed:      {Name: "rdmap.terminate_malformed", Severity: Error, Stage: StageTrack, Checks: []string{"RD-20"}, Summary: "Terminate malformed"},
	RDMAPTerminateV00Code:        {Name: "rdmap.terminate_v00_code", Severity: Note, Stage: StageTrack, Checks: []string{"RD-20"}, Ref: "draft-differences §5", Summary: "Terminate code as the 2003 verbs draft wrote LLP errors"},
	RDMAPTerminateBlameUnmatched: {Name: "rdmap.terminate_blame_unmatched", Severity: Warning, Stage: StageTrack, Checks: []string{"RD-21"}, Summary: "Terminate blames a segment that was not sent"},
	RDMAPTerminateInconsistent:   {Name: "rdmap.terminate_inconsistent", Severity: Warning, Stage: StageTrack, Checks: []string{"RD-21"}, Summary: "Terminate cause does not fit the segment it blames"},
	RDMAPSentAfterPeerTerminate:  {Name: "rdmap.sent_after_peer_terminate", Severity: Note, Stage: StageTrack, Checks: []string{"RD-22"}, Summary: "data sent after receiving a Terminate"},
	RDMAPBadLLPClose:             {Name: "rdmap.bad_llp_close", Severity: Warning, Stage: StageTrack, Checks: []string{"RD-23"}, Summary: "FIN while Read Requests from its sender were unanswered"},
	RDMAPDataAfterClose:          {Name: "rdmap.data_after_close", Severity: Warning, Stage: StageTrack, Checks: []string{"RD-24"}, Summary: "data sent after receiving the peer's FIN"},
	RDMAPAtomicAOpCodeInvalid:    {Name: "rdmap.atomic_aopcode_invalid", Severity: Error, Stage: StageTrack, Checks: []string{"RD-26"}, Summary: "Atomic Request AOpCode not FetchAdd or CmpSwap", Fatal: true},
	RDMAPAtomicFieldIgnored:      {Name: "rdmap.atomic_field_ignored", Severity: Warning, Stage: StageTrack, Checks: []string{"RD-26"}, Summary: "Atomic Request field sent against the rules (ignored on receipt)"},
	RDMAPAtomicMisaligned:        {Name: "rdmap.atomic_misaligned", Severity: Warning, Stage: StageTrack, Checks: []string{"RD-26"}, Summary: "atomic target TO not 8-octet aligned"},
	RDMAPImmediateMalformed:      {Name: "rdmap.immediate_malformed", Severity: Error, Stage: StageTrack, Checks: []string{"RD-27"}, Summary: "Immediate Data not a single 26-octet segment", Fatal: true},
	RDMAPAtomicMalformed:         {Name: "rdmap.atomic_malformed", Severity: Error, Stage: StageTrack, Checks: []string{"RD-28"}, Summary: "Atomic Request/Response not a single 70/30-octet segment", Fatal: true},
	RDMAPAtomicResponseUnmatched: {Name: "rdmap.atomic_response_unmatched", Severity: Error, Stage: StageTrack, Checks: []string{"RD-28"}, Summary: "Atomic Response without an outstanding Atomic Request"},
	RDMAPAtomicResponseMismatch:  {Name: "rdmap.atomic_response_mismatch", Severity: Error, Stage: StageTrack, Checks: []string{"RD-28"}, Summary: "Atomic Response does not answer the oldest Atomic Request"},

	TrackUncertainAfterGap:  {Name: "track.uncertain_after_gap", Severity: Note, Stage: StageTrack, Ref: "analyzer", Summary: "capture gap: checks on the affected queues are uncertain until resynchronised"},
	TrackNoHandshake:        {Name: "track.no_handshake", Severity: Note, Stage: StageTrack, Ref: "analyzer (draft-differences §7)", Summary: "FPDUs without an MPA exchange: mid-stream attach or direct start"},
	TrackFindingsSuppressed: {Name: "track.findings_suppressed", Severity: Note, Stage: StageTrack, Ref: "analyzer", Summary: "further findings of a code on this connection are only counted"},
	TrackTableOverflow:      {Name: "track.table_overflow", Severity: Note, Stage: StageTrack, Ref: "analyzer", Summary: "a bounded table overflowed; its oldest entries were dropped"},
	ULPSTagUnknown:          {Name: "ulp.stag_unknown", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.1", Summary: "RDMA Write or Read Request on an STag no outstanding command advertised"},
	ULPSTagWrongOp:          {Name: "ulp.stag_wrong_op", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.1", Summary: "RDMA Write into a buffer advertised for reading, or RDMA Read from one advertised for writing"},
	ULPSTagUnused:           {Name: "ulp.stag_unused", Severity: Warning, Stage: StageULP, Ref: "ulp-reference §6.1", Summary: "STag of a successful command never used by an RDMA operation"},
	ULPInvalidateForeign:    {Name: "ulp.invalidate_foreign", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.1", Summary: "Send with Invalidate names an STag that is not the completed command's"},
	ULPInvalidateNotAsked:   {Name: "ulp.invalidate_not_offered", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.1", Summary: "Send with Invalidate where the advertiser did not offer remote invalidation"},
	ULPMovedMismatch:        {Name: "ulp.moved_mismatch", Severity: Warning, Stage: StageULP, Ref: "ulp-reference §6.1", Summary: "octets moved by RDMA differ from the command's length"},
	ULPUnknownTask:          {Name: "ulp.unknown_task", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.1", Summary: "response for a command id / tag / xid that is not outstanding"},
	ULPTaskConflict:         {Name: "ulp.task_conflict", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.1", Summary: "two outstanding commands with the same id / tag / xid"},
	ULPObjectsFull:          {Name: "ulp.objects_full", Severity: Note, Stage: StageULP, Ref: "ulp-reference §6.1", Summary: "more handles named on a connection than the object tables keep (4096 each): newer names are not learnt"},
	ULPReadSinkRights:       {Name: "ulp.read_sink_rights", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.1", Summary: "the responder rejects the Read Response into its own Read sink: an iWARP Read sink needs remote write access"},
	NVMeCMData:              {Name: "nvme.cm_private_data", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.2", Summary: "NVMe-oF CM private data malformed (length, RECFMT)"},
	NVMeConnectParam:        {Name: "nvme.connect_mismatch", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.2", Summary: "Fabrics Connect QID/SQSIZE differ from the CM private data"},
	NVMePRP:                 {Name: "nvme.psdt_prp", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.2", Summary: "PSDT 00 (PRP) on a fabric"},
	NVMeRespSize:            {Name: "nvme.response_size", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.2", Summary: "NVMe response capsule not 16 octets"},
	NVMeSQID:                {Name: "nvme.sqid_mismatch", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.2", Summary: "CQE SQID differs from the connection's QID"},
	NVMeReject:              {Name: "nvme.cm_reject", Severity: Note, Stage: StageULP, Ref: "ulp-reference §6.2", Summary: "NVMe-oF CM reject"},
	NVMeSQOverrun:           {Name: "nvme.sq_overrun", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.2", Summary: "more commands outstanding on a queue than its negotiated size (HSQSIZE/SQSIZE + 1)"},
	NVMeKeepAlive:           {Name: "nvme.keep_alive", Severity: Note, Stage: StageULP, Ref: "ulp-reference §6.2", Summary: "Keep Alive Timeout set, and no admin command within it"},
	NVMeSGLOffset:           {Name: "nvme.sgl_offset", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.2", Summary: "in-capsule data SGL (Data Block/Offset) whose offset + length lies beyond the capsule's data"},
	RPCRDMAVers:             {Name: "rpcrdma.version", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.5", Summary: "rdma_vers is not 1"},
	RPCRDMAXID:              {Name: "rpcrdma.xid_mismatch", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.5", Summary: "transport xid differs from the RPC xid"},
	RPCRDMACredits:          {Name: "rpcrdma.credit_overrun", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.5", Summary: "more outstanding calls than the credits granted"},
	RPCRDMAZeroCredit:       {Name: "rpcrdma.zero_credits", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.5", Summary: "reply grants zero credits"},
	RPCRDMAInline:           {Name: "rpcrdma.inline_too_large", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.5", Summary: "Send larger than the receiver's inline receive size"},
	RPCRDMAObsolete:         {Name: "rpcrdma.obsolete_proc", Severity: Warning, Stage: StageULP, Ref: "ulp-reference §6.5", Summary: "RDMA_MSGP or RDMA_DONE (obsolete)"},
	RPCRDMAError:            {Name: "rpcrdma.error", Severity: Note, Stage: StageULP, Ref: "ulp-reference §6.5", Summary: "RDMA_ERROR"},
	RPCDenied:               {Name: "rpc.denied", Severity: Warning, Stage: StageULP, Ref: "ulp-reference §6.5", Summary: "RPC call denied (MSG_DENIED)"},
	RPCRDMAReplyCut:         {Name: "rpcrdma.reply_chunk_cut", Severity: Note, Stage: StageULP, Ref: "RFC 8166 §3.6", Summary: "RDMA_NOMSG reply larger than the octets kept of its reply chunk: decoded from a prefix"},
	ISEROpcode:              {Name: "iser.bad_header", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.3", Summary: "iSER header with an invalid opcode or reserved bits"},
	ISERWSV:                 {Name: "iser.stag_flags", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.3", Summary: "iSCSI W/R bits and iSER WSV/RSV disagree"},
	ISCSICmdSN:              {Name: "iscsi.cmdsn_window", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.3", Summary: "non-immediate command whose CmdSN is outside the ExpCmdSN..MaxCmdSN window the target announced"},
	SMBDLegacyLE:            {Name: "smbd.broken_le_legacy", Severity: Note, Stage: StageULP, Ref: "ulp-reference §6.4", Summary: "legacy IRD/ORD private data in little-endian (Linux cifs.ko)"},
	SMBDLegacyV2:            {Name: "smbd.legacy_mismatch", Severity: Warning, Stage: StageULP, Ref: "ulp-reference §6.4", Summary: "legacy IRD/ORD block disagrees with the MPA v2 block"},
	SMBDCredits:             {Name: "smbd.credit_overrun", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.4", Summary: "SMB Direct data message sent with no send credits"},
	SMBDTooLarge:            {Name: "smbd.too_large", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.4", Summary: "SMB Direct message larger than the peer's MaxReceiveSize"},
	SMBDFragment:            {Name: "smbd.fragment", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.4", Summary: "SMB Direct fragment sequence broken (RemainingDataLength)"},
	SMBDNegotiate:           {Name: "smbd.negotiate", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.4", Summary: "SMB Direct negotiate message malformed"},
	SMBDFragmentedTooLarge:  {Name: "smbd.fragmented_too_large", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.4", Summary: "reassembled SMB Direct message larger than the receiver's MaxFragmentedSize"},
	SMB2Magic:               {Name: "smb2.bad_magic", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.4", Summary: "reassembled SMB Direct message does not start with an SMB2 header"},
	SMB2Channel:             {Name: "smb2.channel_info", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.4", Summary: "READ/WRITE RDMA channel info not whole 16-octet descriptors inside the message"},
	SMB2SizeLimit:           {Name: "smb2.size_limit", Severity: Error, Stage: StageULP, Ref: "ulp-reference §6.4", Summary: "READ Length or WRITE Length/RemainingBytes above the MaxReadSize/MaxWriteSize of SMB2 NEGOTIATE"},
	SMB2CreditWindow:        {Name: "smb2.credit_window", Severity: Error, Stage: StageULP, Ref: "MS-SMB2 §3.3.5.2.3", Summary: "SMB2 request whose MessageId + CreditCharge lies beyond the sequence window the server's credits granted"},
}
