package frame

import "encoding/binary"

// TCP header layout and flags (RFC 9293 §3.1).
const (
	TCPMinLen = 20

	TCPFlagFIN = 0x01
	TCPFlagSYN = 0x02
	TCPFlagRST = 0x04
	TCPFlagPSH = 0x08
	TCPFlagACK = 0x10
)

// TCP options the builder writes.
const (
	// TCPOptionMSSLen is the Maximum Segment Size option: kind 2, length 4
	// (RFC 9293 §3.2), sent on SYNs.
	TCPOptionMSSLen = 4
	// TCPTimestampsLen is the Timestamps option (kind 8, length 10, RFC
	// 7323 §3) after two NOPs, the layout of RFC 7323 Appendix A.
	TCPTimestampsLen = 12
)

// TCP is a view of a TCP header and what follows it.
type TCP []byte

// TCPFields are the fields Encode writes; the checksum is left 0 and
// urgent pointer is 0.
type TCPFields struct {
	SrcPort, DstPort uint16
	Seq, Ack         uint32
	DataOffset       int // header octets, options included: 20..60, a multiple of 4
	Flags            uint8
	Window           uint16
}

// Encode writes the fixed 20 octets of the header.
func (b TCP) Encode(f *TCPFields) {
	binary.BigEndian.PutUint16(b[0:], f.SrcPort)
	binary.BigEndian.PutUint16(b[2:], f.DstPort)
	binary.BigEndian.PutUint32(b[4:], f.Seq)
	binary.BigEndian.PutUint32(b[8:], f.Ack)
	b[12] = byte(f.DataOffset / 4 << 4)
	b[13] = f.Flags
	binary.BigEndian.PutUint16(b[14:], f.Window)
	b[16], b[17], b[18], b[19] = 0, 0, 0, 0
}

func (b TCP) SrcPort() uint16      { return binary.BigEndian.Uint16(b[0:]) }
func (b TCP) DstPort() uint16      { return binary.BigEndian.Uint16(b[2:]) }
func (b TCP) Seq() uint32          { return binary.BigEndian.Uint32(b[4:]) }
func (b TCP) Ack() uint32          { return binary.BigEndian.Uint32(b[8:]) }
func (b TCP) DataOffset() int      { return int(b[12]>>4) * 4 }
func (b TCP) Flags() uint8         { return b[13] }
func (b TCP) Window() uint16       { return binary.BigEndian.Uint16(b[14:]) }
func (b TCP) Checksum() uint16     { return binary.BigEndian.Uint16(b[16:]) }
func (b TCP) SetChecksum(v uint16) { binary.BigEndian.PutUint16(b[16:], v) }
func (b TCP) Options() []byte      { return b[TCPMinLen:b.DataOffset()] }
func (b TCP) Payload() []byte      { return b[b.DataOffset():] }

// AppendMSS appends the MSS option.
func AppendMSS(b []byte, mss uint16) []byte {
	return append(b, 2, TCPOptionMSSLen, byte(mss>>8), byte(mss))
}

// AppendTimestamps appends NOP, NOP and the Timestamps option.
func AppendTimestamps(b []byte, tsVal, tsEcr uint32) []byte {
	b = append(b, 1, 1, 8, 10)
	b = binary.BigEndian.AppendUint32(b, tsVal)
	return binary.BigEndian.AppendUint32(b, tsEcr)
}
