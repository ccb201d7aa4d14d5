package render

import (
	"os"
	"testing"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/gen"
)

// A benchSet is a sample of a capture's PDUs.
type benchSet struct {
	name string
	pdus []decode.PDU
}

// benchPDUs are the PDUs the encoder benchmarks run over: real siw
// traffic and a generated bulk Write run (the NDJSON hot path).
func benchPDUs(b *testing.B) []benchSet {
	var sets []benchSet
	for _, name := range []string{"rping", "crc_ib_read_bw_4096", "mtu1500_ib_send_bw_32768", "mtu1500gso_ib_write_bw_32768"} {
		f, err := os.Open("../testdata/siw/" + name + ".pcap")
		if err != nil {
			b.Fatal(err)
		}
		sets = append(sets, benchSet{"siw-" + name, samplePDUs(readPDUs(b, f))})
		f.Close()
	}
	bulk := readPDUs(b, generatedCapture(b, "bulk-write", gen.Params{Count: 20}))
	return append(sets, benchSet{"gen-bulk-write", samplePDUs(bulk)})
}

// samplePDUs picks at most 256 PDUs spread over the capture. In iwdump
// the encoder reads a PDU the decoder has just written, from the cache;
// cycling through thousands of copies would time cache misses instead.
func samplePDUs(pdus []decode.PDU) []decode.PDU {
	const max = 256
	if len(pdus) <= max {
		return pdus
	}
	out := make([]decode.PDU, max)
	for i := range out {
		out[i] = pdus[i*len(pdus)/max]
	}
	return out
}

// BenchmarkJSONFields times the NDJSON field encoder per PDU: the
// table walk (generic) against AppendJSONFields (fast where the
// specialized encoder covers the PDU).
func BenchmarkJSONFields(b *testing.B) {
	for _, set := range benchPDUs(b) {
		b.Run(set.name+"/generic", func(b *testing.B) { benchEncoder(b, set.pdus, appendJSONFieldsGeneric) })
		b.Run(set.name+"/fast", func(b *testing.B) { benchEncoder(b, set.pdus, AppendJSONFields) })
	}
}

// benchEncoder reports the time per PDU of one encoder over pdus.
func benchEncoder(b *testing.B, pdus []decode.PDU, enc func([]byte, *decode.PDU, bool) []byte) {
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		buf = enc(buf[:0], &pdus[i%len(pdus)], false)
	}
}
