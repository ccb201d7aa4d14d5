package decode_test

import (
	"fmt"
	"testing"

	"github.com/iwkit/iwkit/decode"
)

// benchParseFPDU parses one marker-free FPDU of size octets on the wire and
// checks its CRC, as the framer does for every FPDU.
func benchParseFPDU(b *testing.B, size int) {
	n := size - 6 // FPDULen(n) == size for sizes with n+2 a multiple of 4
	wire := decode.AppendFPDU(nil, fpULPDU(n), true)
	if len(wire) != size {
		b.Fatalf("FPDU is %d octets, want %d", len(wire), size)
	}
	var f decode.FPDU
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decode.ParseFPDU(wire, &f); err != nil || !f.CRCOK() {
			b.Fatal("parse failed")
		}
	}
}

func BenchmarkParseFPDU64(b *testing.B)   { benchParseFPDU(b, 64) }
func BenchmarkParseFPDU1448(b *testing.B) { benchParseFPDU(b, 1448) }

// The same with markers on (one or two per FPDU), as for a marker-enabled
// direction.
func BenchmarkParseFPDUWithMarkers1448(b *testing.B) {
	const s0 = 0
	var wire []byte
	var starts []uint32
	pos := uint32(s0)
	for range 64 {
		starts = append(starts, pos)
		wire, pos = decode.AppendFPDUWithMarkers(wire, pos, s0, fpULPDU(1430), true)
	}
	scratch := make([]byte, 0, decode.FPDULen(65535))
	marks := make([]decode.MarkerAt, 0, 8)
	var f decode.FPDU
	b.SetBytes(int64(len(wire) / len(starts)))
	b.ReportAllocs()
	i, off := 0, 0
	for b.Loop() {
		n, crc, _, err := decode.ParseFPDUWithMarkers(wire[off:], starts[i], s0, scratch, &f, marks[:0])
		if err != nil || crc != f.CRC {
			b.Fatal("parse failed")
		}
		if i++; i == len(starts) {
			i, off = 0, 0
		} else {
			off += n
		}
	}
}

func BenchmarkCRC32c(b *testing.B) {
	for _, size := range []int{20, 64, 1448, 9000} {
		data := fpULPDU(size)
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			var sink uint32
			for b.Loop() {
				sink += decode.CRC32c(data)
			}
			_ = sink
		})
	}
}

func BenchmarkParseMPAFrame(b *testing.B) {
	wire := fpHex(b, mpaSiwV2Req)
	var f decode.MPAFrame
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decode.ParseMPAFrame(wire, &f); err != nil {
			b.Fatal(err)
		}
	}
}
