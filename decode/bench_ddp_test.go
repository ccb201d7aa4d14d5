package decode

import "testing"

func BenchmarkParseSegment(b *testing.B) {
	payload := make([]byte, 1400)
	send := append(ddpHex(b, "41 43 00000000 00000000 00000001 00000000"), payload...)
	write := append(ddpHex(b, "c1 40 11223344 0000000000001000"), payload...)
	for _, bc := range []struct {
		name string
		seg  []byte
	}{
		{"Send", send},
		{"Write", write},
		{"ReadRequest", ddpHex(b, "41 41 00000000 00000001 00000001 00000000 "+readReqFixture)},
		{"Terminate", ddpHex(b, "41 47 00000000 00000002 00000001 00000000 01 00 e0 00 0000 "+termCopyRR+" "+termCopyRRHdr)},
		{"TerminateSiw", ddpHex(b, "41 47 00000000 00000002 00000001 00000000 10 00 07 00 0000 "+termCopyRR+" "+termCopyRRHdr)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var s Segment
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.seg)))
			for b.Loop() {
				if err := ParseSegment(bc.seg, &s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
