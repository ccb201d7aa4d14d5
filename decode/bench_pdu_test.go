package decode

import "testing"

// BenchmarkDecodeFPDU is the unit of work: one FPDU taken apart
// through MPA (ULPDU_Length, PAD, CRC32c checked), DDP and RDMAP, for a
// 64-octet and a 1448-octet FPDU (a full segment at MSS 1448).
func BenchmarkDecodeFPDU(b *testing.B) {
	for _, size := range []int{64, 1448} {
		seg := Segment{DDP: DDPHeader{Tagged: true, Last: true, DV: 1, STag: 0x2a, TO: 0x1000}, RDMAP: RDMAPControl{RV: 1, Opcode: OpWrite}}
		seg.Payload = make([]byte, size-FPDULen(DDPTaggedHdrLen)) // FPDU of exactly size octets
		wire := AppendFPDU(nil, seg.Append(nil), true)
		if len(wire) != size {
			b.Fatalf("built %d octets, want %d", len(wire), size)
		}
		name := "64"
		if size == 1448 {
			name = "1448"
		}
		b.Run(name, func(b *testing.B) {
			crc := CRCUseOn
			var p PDU
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := DecodeFPDU(wire, crc, &p); err != nil || p.CRCStatus != CRCGood || p.SegErr != nil {
					b.Fatal(err, p.CRCStatus, p.SegErr)
				}
			}
		})
	}
}
