package track

// Code identifies a kind of finding. Its String form ("ddp.msn_gap") is
// stable: outputs, filters and tests use it. Every code lists the rows of
// ../shared/spec/receiver-checks.md it implements (Info.Checks).
type Code uint8

// Finding codes, grouped by layer. The comment after each gives the
// receiver-check rows it implements.
const (
	codeNone Code = iota

	// MPA (RFC 5044, RFC 6581).
	CodeKeyInvalid        // MPA-01: wrong key for the frame's role, or an unparseable key
	CodeRevUnknown        // MPA-02: Rev > 2
	CodeRev0              // MPA-02: Rev 0, RDMA Consortium era
	CodeRequestRejectBit  // MPA-03: R set in a Request
	CodePDLengthInvalid   // MPA-04: PD_Length > 512 or not matching the data
	CodeResBits           // MPA-05: reserved flag bits set
	CodeSiwGSO            // MPA-05: siw's GSO bit (0x08) with Rev >= 2
	CodeFrameUnexpected   // RFC 5044 §7.1: a second Request/Reply, or a frame after FPDUs
	CodeReject            // MPA-06: the Reply rejects the connection
	CodeFPDUAfterReject   // MPA-06: FPDUs after a rejecting Reply
	CodeFPDUBeforeReply   // MPA-07: Initiator FPDU before it received the Reply
	CodeResponderFirst    // MPA-08: Responder FPDU before it received the Initiator's first FPDU
	CodeEnhancedInvalid   // MPA-09: S with Rev < 2 or PD_Length < 4
	CodeEnhancedMismatch  // MPA-10: Request and Reply differ in S
	CodeP2PMismatch       // MPA-11: Request and Reply differ in A
	CodeRTRNoneOffered    // MPA-12: Reply with A=1 and none of B/C/D
	CodeRTRBitsIgnored    // MPA-12: B/C/D set with A=0
	CodeRTRTypeMismatch   // MPA-12: the RTR sent is a type the Reply did not accept
	CodeIRDORDViolation   // MPA-13: Responder ORD > Initiator IRD, or 0x3FFF not echoed
	CodeRTRMissing        // MPA-14: P2P Initiator's first FPDU is not a zero-length RTR
	CodeFPDUBeforeRTR     // MPA-15: P2P Responder FPDU before the RTR arrived
	CodeCRCBad            // MPA-16: CRC in use and wrong
	CodeCRCRetransmitted  // MPA-16: a bad-CRC FPDU retransmitted good (silent drop)
	CodeMarkerMismatch    // MPA-18: FPDUPTR does not point at the FPDU's ULPDU_Length
	CodeMarkersUnexpected // MPA-19: markers in a direction that did not negotiate them
	CodeMarkersMissing    // MPA-19: no marker where the negotiated spacing needs one
	CodeMarkerReserved    // MPA-20: marker Reserved != 0
	CodePadNonzero        // MPA-20: PAD != 0
	CodeULPDUTooShort     // MPA-21: ULPDU_Length too small for the DDP header
	CodeULPDUTooLong      // MPA-21: ULPDU_Length above MULPDU (when the MSS is known)
	CodeLLPClosed         // MPA-22: TCP FIN or RST
	CodeSiwTermEncoding   // RD-20 with reference §5.1: Terminate in siw's bit-field encoding

	// DDP (RFC 5041).
	CodeDVInvalid       // DDP-01 (+ draft-differences §7): DV not 1 (or 0 in the RDMAC era), or changing
	CodeDDPRsvdNonzero  // DDP-02: DDP control Rsvd bits set
	CodeQNInvalid       // DDP-03: QN not 0–3
	CodeMSNGap          // DDP-05: MSN skipped (or the first is not 1)
	CodeMSNRepeat       // DDP-05: MSN repeated or going backwards
	CodeMOGap           // DDP-06, DDP-15: a hole in a message's MOs (first segment not at MO 0, a skip, the L segment early)
	CodeMOOverlap       // DDP-06: a segment goes back into octets its message already sent
	CodeMOWrap          // DDP-06: MO + length reaches 2^32
	CodeSTagZero        // DDP-08: tagged segment with STag 0 and a payload
	CodeTOWrap          // DDP-11: TO + length wraps 2^64
	CodeSegInconsistent // DDP-14: RsvdULP / RDMAP control differ within a message
	CodeLMissing        // DDP-15: a new MSN on a queue whose previous message had no L segment
	CodeInterleaved     // DDP-15: TO discontinuity, or messages interleaved

	// RDMAP (RFC 5040, RFC 7306).
	CodeRVInvalid             // RD-01: RV not 01b (or 00b in the RDMAC era), changing, or disagreeing with DV
	CodeOpcodeUnexpected      // RD-02: opcode 0xC–0xF
	CodeExtension             // RD-02: RFC 7306 opcodes in use
	CodeOpcodeMismatch        // RD-03, RD-28: opcode does not fit T / QN
	CodeRsvNonzero            // RD-04, RD-20: RDMAP Rsv bits, Terminate Reserved bits
	CodeInvSTagNonzero        // RD-04, RD-27: Invalidate STag != 0 where unused
	CodeReadRequestMalformed  // RD-05, MPA-21: Read Request not one 46-octet L segment at MO 0
	CodeRDMAPSTagZero         // RD-07, RD-08: STag 0 to invalidate, to read from or as atomic target
	CodeSTagInvalidatedUse    // DDP-08, RD-08: STag used after a Send with Invalidate
	CodeReadTOWrap            // RD-11 (and DDP-11 for the sink): Read Request TO + size wraps
	CodeIRDExceeded           // RD-14: more outstanding Read Requests than the responder's IRD
	CodeReadResponseUnmatched // RD-15: Read Response with no Read Request outstanding
	CodeReadResponseMismatch  // RD-15: Read Response STag / TO differ from the oldest request
	CodeReadResponseTooLong   // RD-15, RD-13, DDP-10: more octets than requested
	CodeReadResponseShort     // RD-15, RD-13: L segment before the requested size
	CodeRequestUnanswered     // RD-13, RD-28: a Read or Atomic Request never answered
	CodeResponseOrder         // RD-28 (RFC 7306 §7): Read and Atomic Responses out of QN 1 order
	CodeAfterTerminate        // RD-17: a message after the sender's own Terminate
	CodeTerminateRepeat       // RD-18: a second Terminate in one direction
	CodeTermAfterTerminate    // RD-19: a Terminate answering a Terminate
	CodeTerminate             // RD-20, RD-21, RD-25, MPA-23: a Terminate, decoded in context
	CodeTerminateMalformed    // RD-20: undefined cause, wrong length, headers that do not belong
	CodeTermV00Code           // RD-20 (draft-differences §5): V00-style LLP code
	CodeTermBlameUnmatched    // RD-21: the copied header matches no segment sent
	CodeTermInconsistent      // RD-21: the blamed segment does not fit the cause
	CodeSentAfterPeerTerm     // RD-22: data sent after receiving a Terminate
	CodeBadLLPClose           // RD-23: FIN while Read Requests from its sender were unanswered
	CodeDataAfterClose        // RD-24: data sent after receiving the peer's FIN
	CodeAtomicAOpInvalid      // RD-26: AOpCode not FetchAdd or CmpSwap
	CodeAtomicFieldIgnored    // RD-26: Reserved or FetchAdd compare fields not as sent by the rules
	CodeAtomicMisaligned      // RD-26: atomic target TO not 8-octet aligned
	CodeImmediateMalformed    // RD-27: Immediate Data not one 26-octet L segment at MO 0
	CodeAtomicMalformed       // RD-28: Atomic Request/Response not one 70/30-octet L segment at MO 0
	CodeAtomicRespUnmatched   // RD-28: Atomic Response with no Atomic Request outstanding
	CodeAtomicRespMismatch    // RD-28: Original Request Identifier not the oldest request's

	// Analyzer state.
	CodeUncertainAfterGap  // a capture gap makes later checks on the queues uncertain
	CodeNoHandshake        // FPDUs without an MPA exchange: mid-stream attach or direct start
	CodeFindingsSuppressed // a code fired too often on one connection; later ones are counted only
	CodeTableOverflow      // a bounded table (reads, atomics, STags, open messages) overflowed

	numCodes
)

// NumCodes is the number of finding codes; Code values are 1..NumCodes-1.
const NumCodes = int(numCodes)

// Info describes a finding code.
type Info struct {
	Code     Code
	Name     string   // stable name, e.g. "ddp.msn_gap"
	Severity Severity // severity of every finding with this code
	Checks   string   // receiver-checks.md rows (or the RFC section) it implements
	Summary  string
	// fatal marks errors a conforming receiver detects on the segment
	// itself: later segments in that direction are "after error" (DDP-16,
	// RFC 5044 §8).
	fatal bool
}

var infos = [numCodes]Info{
	CodeKeyInvalid:        {Name: "mpa.key_invalid", Severity: Error, Checks: "MPA-01", Summary: "MPA frame key wrong for its role or unreadable"},
	CodeRevUnknown:        {Name: "mpa.rev_unknown", Severity: Warning, Checks: "MPA-02", Summary: "MPA Rev above 2"},
	CodeRev0:              {Name: "mpa.rev0", Severity: Note, Checks: "MPA-02", Summary: "MPA Rev 0 (RDMA Consortium era)"},
	CodeRequestRejectBit:  {Name: "mpa.request_reject_bit", Severity: Warning, Checks: "MPA-03", Summary: "R set in an MPA Request"},
	CodePDLengthInvalid:   {Name: "mpa.pd_length_invalid", Severity: Error, Checks: "MPA-04", Summary: "PD_Length above 512 or not matching the data"},
	CodeResBits:           {Name: "mpa.res_bits", Severity: Warning, Checks: "MPA-05", Summary: "reserved MPA flag bits set"},
	CodeSiwGSO:            {Name: "mpa.siw_gso", Severity: Note, Checks: "MPA-05", Summary: "siw GSO bit: FPDUs may exceed one TCP segment"},
	CodeFrameUnexpected:   {Name: "mpa.frame_unexpected", Severity: Warning, Checks: "RFC 5044 §7.1", Summary: "MPA frame repeated or after FPDUs"},
	CodeReject:            {Name: "mpa.reject", Severity: Warning, Checks: "MPA-06", Summary: "MPA Reply rejects the connection (R=1)"},
	CodeFPDUAfterReject:   {Name: "mpa.fpdu_after_reject", Severity: Error, Checks: "MPA-06", Summary: "FPDU after a rejecting Reply", fatal: true},
	CodeFPDUBeforeReply:   {Name: "mpa.fpdu_before_reply", Severity: Error, Checks: "MPA-07", Summary: "Initiator sent an FPDU before receiving the Reply"},
	CodeResponderFirst:    {Name: "mpa.responder_sent_first", Severity: Error, Checks: "MPA-08", Summary: "Responder sent an FPDU before receiving the Initiator's first FPDU"},
	CodeEnhancedInvalid:   {Name: "mpa.enhanced_invalid", Severity: Error, Checks: "MPA-09", Summary: "S flag with Rev < 2 or PD_Length < 4"},
	CodeEnhancedMismatch:  {Name: "mpa.enhanced_mismatch", Severity: Error, Checks: "MPA-10", Summary: "Request and Reply differ in the enhanced (S) form"},
	CodeP2PMismatch:       {Name: "mpa.p2p_mismatch", Severity: Error, Checks: "MPA-11", Summary: "Request and Reply differ in the A (peer-to-peer) bit"},
	CodeRTRNoneOffered:    {Name: "mpa.rtr_none_offered", Severity: Error, Checks: "MPA-12", Summary: "peer-to-peer Reply accepts no RTR type"},
	CodeRTRBitsIgnored:    {Name: "mpa.rtr_bits_ignored", Severity: Warning, Checks: "MPA-12", Summary: "RTR type bits set without A"},
	CodeRTRTypeMismatch:   {Name: "mpa.rtr_type_mismatch", Severity: Error, Checks: "MPA-12", Summary: "RTR of a type the Reply did not accept"},
	CodeIRDORDViolation:   {Name: "mpa.ird_ord_violation", Severity: Error, Checks: "MPA-13", Summary: "Responder ORD above Initiator IRD, or 0x3FFF not echoed"},
	CodeRTRMissing:        {Name: "mpa.rtr_missing", Severity: Error, Checks: "MPA-14", Summary: "peer-to-peer Initiator's first FPDU is not a zero-length RTR", fatal: true},
	CodeFPDUBeforeRTR:     {Name: "mpa.fpdu_before_rtr", Severity: Error, Checks: "MPA-15", Summary: "peer-to-peer Responder sent an FPDU before the RTR arrived"},
	CodeCRCBad:            {Name: "mpa.crc_bad", Severity: Error, Checks: "MPA-16", Summary: "MPA CRC mismatch", fatal: true},
	CodeCRCRetransmitted:  {Name: "mpa.crc_retransmitted", Severity: Note, Checks: "MPA-16", Summary: "bad-CRC FPDU retransmitted with a good CRC (silent drop)"},
	CodeMarkerMismatch:    {Name: "mpa.marker_mismatch", Severity: Error, Checks: "MPA-18", Summary: "marker FPDUPTR does not point at the FPDU", fatal: true},
	CodeMarkersUnexpected: {Name: "mpa.markers_unexpected", Severity: Error, Checks: "MPA-19", Summary: "markers where none were negotiated", fatal: true},
	CodeMarkersMissing:    {Name: "mpa.markers_missing", Severity: Error, Checks: "MPA-19", Summary: "no marker where negotiated markers are due", fatal: true},
	CodeMarkerReserved:    {Name: "mpa.marker_reserved", Severity: Warning, Checks: "MPA-20", Summary: "marker Reserved field not zero"},
	CodePadNonzero:        {Name: "mpa.pad_nonzero", Severity: Warning, Checks: "MPA-20", Summary: "FPDU PAD not zero"},
	CodeULPDUTooShort:     {Name: "mpa.ulpdu_too_short", Severity: Error, Checks: "MPA-21", Summary: "ULPDU too short for its DDP header", fatal: true},
	CodeULPDUTooLong:      {Name: "mpa.ulpdu_exceeds_mulpdu", Severity: Warning, Checks: "MPA-21", Summary: "ULPDU longer than the MULPDU of the path"},
	CodeLLPClosed:         {Name: "mpa.llp_closed", Severity: Note, Checks: "MPA-22", Summary: "TCP connection closed (FIN or RST)"},
	CodeSiwTermEncoding:   {Name: "mpa.siw_terminate_encoding", Severity: Note, Checks: "RD-20 (reference §5.1)", Summary: "Terminate control word in Linux siw's encoding, or ambiguous"},

	CodeDVInvalid:       {Name: "ddp.dv_invalid", Severity: Error, Checks: "DDP-01", Summary: "DDP Version invalid for the connection or changing", fatal: true},
	CodeDDPRsvdNonzero:  {Name: "ddp.rsvd_nonzero", Severity: Warning, Checks: "DDP-02", Summary: "DDP control Rsvd bits set"},
	CodeQNInvalid:       {Name: "ddp.qn_invalid", Severity: Error, Checks: "DDP-03", Summary: "untagged QN not used by RDMAP", fatal: true},
	CodeMSNGap:          {Name: "ddp.msn_gap", Severity: Error, Checks: "DDP-05", Summary: "MSN skipped", fatal: true},
	CodeMSNRepeat:       {Name: "ddp.msn_repeat", Severity: Error, Checks: "DDP-05", Summary: "MSN repeated or going backwards", fatal: true},
	CodeMOGap:           {Name: "ddp.mo_gap", Severity: Error, Checks: "DDP-06, DDP-15", Summary: "hole in a message's Message Offsets (segments not sent in MO order)", fatal: true},
	CodeMOOverlap:       {Name: "ddp.mo_overlap", Severity: Error, Checks: "DDP-06", Summary: "segments of a message overlap", fatal: true},
	CodeMOWrap:          {Name: "ddp.mo_wrap", Severity: Error, Checks: "DDP-06", Summary: "MO + length reaches 2^32", fatal: true},
	CodeSTagZero:        {Name: "ddp.stag_zero", Severity: Error, Checks: "DDP-08", Summary: "tagged data to STag 0", fatal: true},
	CodeTOWrap:          {Name: "ddp.to_wrap", Severity: Error, Checks: "DDP-11", Summary: "TO + length wraps 2^64", fatal: true},
	CodeSegInconsistent: {Name: "ddp.segment_inconsistent", Severity: Warning, Checks: "DDP-14", Summary: "segments of one message differ in RsvdULP"},
	CodeLMissing:        {Name: "ddp.l_missing", Severity: Error, Checks: "DDP-15", Summary: "new message on a queue before the previous one's L segment", fatal: true},
	CodeInterleaved:     {Name: "ddp.interleaved", Severity: Warning, Checks: "DDP-15", Summary: "TO discontinuity or interleaved messages"},

	CodeRVInvalid:             {Name: "rdmap.rv_invalid", Severity: Error, Checks: "RD-01", Summary: "RDMAP Version invalid for the connection", fatal: true},
	CodeOpcodeUnexpected:      {Name: "rdmap.opcode_unexpected", Severity: Error, Checks: "RD-02", Summary: "unassigned or experimental RDMAP opcode", fatal: true},
	CodeExtension:             {Name: "rdmap.extension", Severity: Note, Checks: "RD-02", Summary: "RFC 7306 opcodes in use"},
	CodeOpcodeMismatch:        {Name: "rdmap.opcode_mismatch", Severity: Error, Checks: "RD-03, RD-28", Summary: "opcode inconsistent with the T bit or QN", fatal: true},
	CodeRsvNonzero:            {Name: "rdmap.rsv_nonzero", Severity: Warning, Checks: "RD-04, RD-20", Summary: "RDMAP reserved bits set"},
	CodeInvSTagNonzero:        {Name: "rdmap.inv_stag_nonzero", Severity: Warning, Checks: "RD-04, RD-27", Summary: "Invalidate STag set on a message that has none"},
	CodeReadRequestMalformed:  {Name: "rdmap.read_request_malformed", Severity: Error, Checks: "RD-05, MPA-21", Summary: "Read Request not a single 46-octet segment", fatal: true},
	CodeRDMAPSTagZero:         {Name: "rdmap.stag_zero", Severity: Error, Checks: "RD-07, RD-08", Summary: "STag 0 used remotely", fatal: true},
	CodeSTagInvalidatedUse:    {Name: "rdmap.stag_invalidated_use", Severity: Error, Checks: "DDP-08, RD-08", Summary: "STag used after a Send with Invalidate"},
	CodeReadTOWrap:            {Name: "rdmap.read_to_wrap", Severity: Error, Checks: "RD-11, DDP-11", Summary: "Read Request TO + size wraps 2^64", fatal: true},
	CodeIRDExceeded:           {Name: "rdmap.ird_exceeded", Severity: Error, Checks: "RD-14", Summary: "more Read Requests outstanding than the responder's IRD", fatal: true},
	CodeReadResponseUnmatched: {Name: "rdmap.read_response_unmatched", Severity: Error, Checks: "RD-15", Summary: "Read Response without an outstanding Read Request"},
	CodeReadResponseMismatch:  {Name: "rdmap.read_response_mismatch", Severity: Error, Checks: "RD-15", Summary: "Read Response STag/TO differ from the oldest Read Request"},
	CodeReadResponseTooLong:   {Name: "rdmap.read_response_too_long", Severity: Error, Checks: "RD-15, RD-13, DDP-10", Summary: "Read Response longer than requested"},
	CodeReadResponseShort:     {Name: "rdmap.read_response_short", Severity: Error, Checks: "RD-15, RD-13", Summary: "Read Response shorter than requested"},
	CodeRequestUnanswered:     {Name: "rdmap.request_unanswered", Severity: Note, Checks: "RD-13, RD-28", Summary: "Read or Atomic Request never answered in the capture"},
	CodeResponseOrder:         {Name: "rdmap.response_order", Severity: Error, Checks: "RD-28", Summary: "Read and Atomic Responses out of request order"},
	CodeAfterTerminate:        {Name: "rdmap.after_terminate", Severity: Error, Checks: "RD-17", Summary: "message sent after the sender's own Terminate"},
	CodeTerminateRepeat:       {Name: "rdmap.terminate_repeat", Severity: Error, Checks: "RD-18", Summary: "more than one Terminate in a direction"},
	CodeTermAfterTerminate:    {Name: "rdmap.term_after_terminate", Severity: Warning, Checks: "RD-19", Summary: "Terminate answered by a Terminate"},
	CodeTerminate:             {Name: "rdmap.terminate", Severity: Error, Checks: "RD-20, RD-21, RD-25, MPA-23", Summary: "Terminate: the peer reports an error"},
	CodeTerminateMalformed:    {Name: "rdmap.terminate_malformed", Severity: Error, Checks: "RD-20", Summary: "Terminate malformed"},
	CodeTermV00Code:           {Name: "rdmap.terminate_v00_code", Severity: Note, Checks: "RD-20 (draft-differences §5)", Summary: "Terminate code as the 2003 verbs draft wrote LLP errors"},
	CodeTermBlameUnmatched:    {Name: "rdmap.terminate_blame_unmatched", Severity: Warning, Checks: "RD-21", Summary: "Terminate blames a segment that was not sent"},
	CodeTermInconsistent:      {Name: "rdmap.terminate_inconsistent", Severity: Warning, Checks: "RD-21", Summary: "Terminate cause does not fit the segment it blames"},
	CodeSentAfterPeerTerm:     {Name: "rdmap.sent_after_peer_terminate", Severity: Note, Checks: "RD-22", Summary: "data sent after receiving a Terminate"},
	CodeBadLLPClose:           {Name: "rdmap.bad_llp_close", Severity: Warning, Checks: "RD-23", Summary: "FIN while Read Requests from its sender were unanswered"},
	CodeDataAfterClose:        {Name: "rdmap.data_after_close", Severity: Warning, Checks: "RD-24", Summary: "data sent after receiving the peer's FIN"},
	CodeAtomicAOpInvalid:      {Name: "rdmap.atomic_aopcode_invalid", Severity: Error, Checks: "RD-26", Summary: "Atomic Request AOpCode not FetchAdd or CmpSwap", fatal: true},
	CodeAtomicFieldIgnored:    {Name: "rdmap.atomic_field_ignored", Severity: Warning, Checks: "RD-26", Summary: "Atomic Request field sent against the rules (ignored on receipt)"},
	CodeAtomicMisaligned:      {Name: "rdmap.atomic_misaligned", Severity: Warning, Checks: "RD-26", Summary: "atomic target TO not 8-octet aligned"},
	CodeImmediateMalformed:    {Name: "rdmap.immediate_malformed", Severity: Error, Checks: "RD-27", Summary: "Immediate Data not a single 26-octet segment", fatal: true},
	CodeAtomicMalformed:       {Name: "rdmap.atomic_malformed", Severity: Error, Checks: "RD-28", Summary: "Atomic Request/Response not a single 70/30-octet segment", fatal: true},
	CodeAtomicRespUnmatched:   {Name: "rdmap.atomic_response_unmatched", Severity: Error, Checks: "RD-28", Summary: "Atomic Response without an outstanding Atomic Request"},
	CodeAtomicRespMismatch:    {Name: "rdmap.atomic_response_mismatch", Severity: Error, Checks: "RD-28", Summary: "Atomic Response does not answer the oldest Atomic Request"},

	CodeUncertainAfterGap:  {Name: "track.uncertain_after_gap", Severity: Note, Checks: "analyzer", Summary: "capture gap: checks on the affected queues are uncertain until resynchronised"},
	CodeNoHandshake:        {Name: "track.no_handshake", Severity: Note, Checks: "analyzer (draft-differences §7)", Summary: "FPDUs without an MPA exchange: mid-stream attach or direct start"},
	CodeFindingsSuppressed: {Name: "track.findings_suppressed", Severity: Note, Checks: "analyzer", Summary: "further findings of a code on this connection are only counted"},
	CodeTableOverflow:      {Name: "track.table_overflow", Severity: Note, Checks: "analyzer", Summary: "a bounded table overflowed; its oldest entries were dropped"},
}

var codeByName = func() map[string]Code {
	m := make(map[string]Code, numCodes)
	for c := Code(1); c < numCodes; c++ {
		infos[c].Code = c
		m[infos[c].Name] = c
	}
	return m
}()

// String returns the stable name, e.g. "ddp.msn_gap".
func (c Code) String() string {
	if c == codeNone || c >= numCodes {
		return "track.unknown"
	}
	return infos[c].Name
}

// MarshalText makes a Code print as its name in JSON.
func (c Code) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// Info returns the description of c.
func (c Code) Info() Info {
	if c >= numCodes {
		return Info{}
	}
	return infos[c]
}

// Severity is the severity every finding with code c carries.
func (c Code) Severity() Severity { return c.Info().Severity }

// ParseCode looks a code up by its name.
func ParseCode(name string) (Code, bool) {
	c, ok := codeByName[name]
	return c, ok
}

// Codes lists every finding code in declaration order.
func Codes() []Info {
	out := make([]Info, 0, numCodes-1)
	for c := Code(1); c < numCodes; c++ {
		out = append(out, infos[c])
	}
	return out
}
