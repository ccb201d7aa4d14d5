package decode

import "encoding/binary"

// ReadReqHdrLen is the size of the RDMA Read Request header (RFC 5040 §4.4).
const ReadReqHdrLen = 28

// ReadRequest is the RDMA Read Request header that follows the untagged DDP
// header of an RDMA Read Request message, and that a Terminate copies back
// when R is set (RFC 5040 §4.4 Figure 6, §4.8).
type ReadRequest struct {
	// SinkSTag is the Data Sink STag: the requester's buffer; the
	// responder copies it into the Read Response's DDP STag.
	SinkSTag uint32
	// SinkTO is the Data Sink Tagged Offset, copied into the first Read
	// Response segment's TO.
	SinkTO uint64
	// Size is the RDMA Read Message Size (RDMARDSZ) in octets.
	Size uint32
	// SrcSTag is the Data Source STag: the responder's buffer.
	SrcSTag uint32
	// SrcTO is the Data Source Tagged Offset.
	SrcTO uint64
}

// readReqTruncField names the first Read Request field that have octets do
// not hold completely.
func readReqTruncField(have int) string {
	switch {
	case have < 4:
		return "rdmap.sink_stag"
	case have < 12:
		return "rdmap.sink_to"
	case have < 16:
		return "rdmap.read_size"
	case have < 20:
		return "rdmap.src_stag"
	}
	return "rdmap.src_to"
}

// ParseReadRequest decodes the 28-octet Read Request header at b[0]
// (RFC 5040 §4.4) and returns 28.
func ParseReadRequest(b []byte, r *ReadRequest) (int, error) {
	if len(b) < ReadReqHdrLen {
		return 0, truncated("rdmap", readReqTruncField(len(b)), ReadReqHdrLen, len(b))
	}
	readReqFrom(b, r)
	return ReadReqHdrLen, nil
}

// readReqFrom decodes a Read Request header from b, which holds at least
// 28 octets.
func readReqFrom(b []byte, r *ReadRequest) {
	_ = b[27]
	r.SinkSTag = binary.BigEndian.Uint32(b[0:4])
	r.SinkTO = binary.BigEndian.Uint64(b[4:12])
	r.Size = binary.BigEndian.Uint32(b[12:16])
	r.SrcSTag = binary.BigEndian.Uint32(b[16:20])
	r.SrcTO = binary.BigEndian.Uint64(b[20:28])
}

// Append encodes the 28-octet Read Request header.
func (r *ReadRequest) Append(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, r.SinkSTag)
	b = binary.BigEndian.AppendUint64(b, r.SinkTO)
	b = binary.BigEndian.AppendUint32(b, r.Size)
	b = binary.BigEndian.AppendUint32(b, r.SrcSTag)
	return binary.BigEndian.AppendUint64(b, r.SrcTO)
}
