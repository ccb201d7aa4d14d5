package decode

import (
	"encoding/binary"
	"hash/crc32"
)

// CRCLen is the size of the MPA CRC field at the end of every FPDU. The field
// is present even when CRCs were not negotiated (RFC 5044 §4.1).
const CRCLen = 4

// castagnoli is the CRC32c table. MPA computes its CRC "in the manner
// described in the iSCSI Protocol document for Header and Data Digests"
// (RFC 5044 §4.4): CRC-32C, polynomial 0x1EDC6F41 (reflected 0x82F63B78),
// initial value and final XOR 0xFFFFFFFF. hash/crc32 uses SSE4.2 / ARMv8 CRC
// instructions for this table when the CPU has them.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32c returns the MPA CRC value of b (the value, not its wire order; see
// PutCRC).
func CRC32c(b []byte) uint32 { return crc32.Update(0, castagnoli, b) }

// CRC32cUpdate extends crc (a value returned by CRC32c or CRC32cUpdate; start
// from 0) with b, with hash/crc32.Update semantics:
// CRC32cUpdate(CRC32c(a), b) == CRC32c(a‖b).
func CRC32cUpdate(crc uint32, b []byte) uint32 {
	// Short runs (ULPDU_Length, PAD, a marker) are folded in by table lookup
	// here: crc32.Update calls through a function variable, so a slice
	// passed to it escapes, and a caller's stack array would be moved to the
	// heap. This keeps CRC checks of scattered fields allocation-free.
	if len(b) <= 8 {
		return crc32cSmall(crc, b)
	}
	return crc32.Update(crc, castagnoli, b)
}

// crc32cSmall is crc32.Update for a few octets, one table lookup per octet.
func crc32cSmall(crc uint32, b []byte) uint32 {
	crc = ^crc
	for _, v := range b {
		crc = castagnoli[byte(crc)^v] ^ (crc >> 8)
	}
	return ^crc
}

// CRC32cParts returns the CRC of the concatenation of parts, for an FPDU
// whose octets are scattered (ULPDU_Length, DDP header, payload, PAD,
// markers). It does not allocate.
func CRC32cParts(parts ...[]byte) uint32 {
	var crc uint32
	for _, p := range parts {
		crc = CRC32cUpdate(crc, p)
	}
	return crc
}

// PutCRC writes crc into b[0:4] in MPA wire order: least significant octet
// first (RFC 5044 §4.4, Figures 5 and 6: CRC value 0x83992352 is sent as
// 52 23 99 83), the same order as the iSCSI digests. Like
// binary.LittleEndian.PutUint32, it panics if len(b) < 4.
func PutCRC(b []byte, crc uint32) { binary.LittleEndian.PutUint32(b, crc) }

// WireCRC reads a CRC value from b[0:4] in MPA wire order (least significant
// octet first). Like binary.LittleEndian.Uint32, it panics if len(b) < 4.
func WireCRC(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

// appendCRC appends crc in wire order.
func appendCRC(b []byte, crc uint32) []byte { return binary.LittleEndian.AppendUint32(b, crc) }
