package decode

// Segment is one whole DDP segment (the ULPDU of an FPDU) decoded through
// RDMAP: the DDP header (RFC 5041 §4), the RDMAP control octet (RFC 5040
// §4.1), the opcode's RDMAP header if it has one, and the ULP payload.
type Segment struct {
	DDP   DDPHeader
	RDMAP RDMAPControl
	// InvalidateSTag is RsvdULP[8:39] of an untagged header (RFC 5040
	// §4.1); meaningful for Send with Invalidate and Send with SE and
	// Invalidate, 0 on send and ignored for the other untagged opcodes.
	InvalidateSTag uint32
	ReadRequest    ReadRequest      // OpReadRequest
	Terminate      Terminate        // OpTerminate
	AtomicRequest  AtomicRequest    // OpAtomicRequest
	AtomicResponse AtomicResponse   // OpAtomicResponse
	ImmData        [ImmDataLen]byte // OpImmData, OpImmDataSE
	// Payload is everything after the headers (aliases the input): the
	// ULP payload, or octets a header-only message should not carry.
	Payload []byte
	// HdrLen is the DDP + RDMAP header octets.
	HdrLen int
}

// ParseSegment decodes a DDP segment into s (which it resets first). The
// RDMAP header is chosen by the opcode alone and read right after the DDP
// header, whatever its T bit says: a mismatch between T, QN and opcode is
// for the tracker to report, not a decode error, and so is an unknown
// opcode (decoded with Opcode.Known false and no RDMAP header). Errors are
// *Error values of layer "ddp" (the DDP header is short) or "rdmap" (the
// opcode's header is short, named by its field-table spelling, e.g.
// "rdmap.read_size" or "rdmap.term.ddp_header"); Need and Have count from
// the start of the segment. After an "rdmap" error s.DDP and s.RDMAP are
// filled. It does not allocate.
func ParseSegment(ulpdu []byte, s *Segment) error {
	*s = Segment{}
	n, err := ParseDDP(ulpdu, &s.DDP)
	if err != nil {
		return err
	}
	s.RDMAP = ParseRDMAPControl(s.DDP.RsvdULP)
	if !s.DDP.Tagged {
		s.InvalidateSTag = s.DDP.RsvdULP2
	}
	rest := ulpdu[n:]
	var m int
	switch s.RDMAP.Opcode {
	case OpReadRequest:
		m, err = ParseReadRequest(rest, &s.ReadRequest)
	case OpTerminate:
		m, err = ParseTerminate(rest, &s.Terminate)
	case OpImmData, OpImmDataSE:
		m, err = ParseImmData(rest, &s.ImmData)
	case OpAtomicRequest:
		m, err = ParseAtomicRequest(rest, &s.AtomicRequest)
	case OpAtomicResponse:
		m, err = ParseAtomicResponse(rest, &s.AtomicResponse)
	}
	if err != nil {
		if e, ok := err.(*Error); ok {
			// Count Need and Have from the start of the segment.
			e.Need += n
			e.Have += n
		}
		return err
	}
	s.HdrLen = n + m
	s.Payload = ulpdu[n+m:]
	return nil
}

// Append encodes the segment: the DDP header from s.DDP, except that the
// RDMAP control octet comes from s.RDMAP and, in an untagged header of a
// Send with Invalidate or Send with SE and Invalidate, octets 2–5 come from
// s.InvalidateSTag; then the opcode's RDMAP header; then Payload. HdrLen
// is not used.
func (s *Segment) Append(b []byte) []byte {
	h := s.DDP
	h.RsvdULP = s.RDMAP.Octet()
	if !h.Tagged && (s.RDMAP.Opcode == OpSendInv || s.RDMAP.Opcode == OpSendSEInv) {
		h.RsvdULP2 = s.InvalidateSTag
	}
	b = h.Append(b)
	switch s.RDMAP.Opcode {
	case OpReadRequest:
		b = s.ReadRequest.Append(b)
	case OpTerminate:
		b = s.Terminate.Append(b)
	case OpImmData, OpImmDataSE:
		b = append(b, s.ImmData[:]...)
	case OpAtomicRequest:
		b = s.AtomicRequest.Append(b)
	case OpAtomicResponse:
		b = s.AtomicResponse.Append(b)
	}
	return append(b, s.Payload...)
}

// PreIETF reports the RDMA Consortium protocol family: DDP Version 0 or
// RDMA Version 00b (RFC 5040 §4.1, RFC 5044 App. C).
func (s *Segment) PreIETF() bool { return s.DDP.DV == 0 || s.RDMAP.RV == 0 }
