package frame

import (
	"encoding/binary"
	"math/bits"
)

// ChecksumAdd adds b to an unfolded one's complement sum of 16-bit words
// (RFC 1071 §4.1, with 64-bit words and end-around carry). b must start at
// an even offset of the checksummed data; only the last call for that data
// may pass an odd length (its last octet is the high half of a word padded
// with zero, RFC 9293 §3.1).
func ChecksumAdd(sum uint64, b []byte) uint64 {
	var carry uint64
	for len(b) >= 32 {
		sum, carry = bits.Add64(sum, binary.BigEndian.Uint64(b), 0)
		sum, carry = bits.Add64(sum, binary.BigEndian.Uint64(b[8:]), carry)
		sum, carry = bits.Add64(sum, binary.BigEndian.Uint64(b[16:]), carry)
		sum, carry = bits.Add64(sum, binary.BigEndian.Uint64(b[24:]), carry)
		sum += carry
		b = b[32:]
	}
	for len(b) >= 8 {
		sum, carry = bits.Add64(sum, binary.BigEndian.Uint64(b), 0)
		sum += carry
		b = b[8:]
	}
	for len(b) >= 2 {
		sum, carry = bits.Add64(sum, uint64(binary.BigEndian.Uint16(b)), 0)
		sum += carry
		b = b[2:]
	}
	if len(b) == 1 {
		sum, carry = bits.Add64(sum, uint64(b[0])<<8, 0)
		sum += carry
	}
	return sum
}

// ChecksumFold folds an unfolded sum to 16 bits and complements it: the
// value of an IPv4 header, TCP or UDP checksum field (RFC 1071, RFC 791
// §3.1, RFC 9293 §3.1).
func ChecksumFold(sum uint64) uint16 {
	sum = (sum >> 32) + (sum & 0xffffffff)
	sum = (sum >> 32) + (sum & 0xffffffff)
	sum = (sum >> 16) + (sum & 0xffff)
	sum = (sum >> 16) + (sum & 0xffff)
	sum = (sum >> 16) + (sum & 0xffff)
	return ^uint16(sum)
}

// Checksum is the Internet checksum of b.
func Checksum(b []byte) uint16 { return ChecksumFold(ChecksumAdd(0, b)) }
