package analyze

import (
	"bufio"
	"bytes"
	"io"
	"runtime"
	"testing"

	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/pcap"
)

// BenchmarkRun measures the whole offline pipeline on one core: pcap
// reading, TCP reassembly, MPA framing with CRC32c, DDP/RDMAP decoding and
// tracking, records handed to a consumer that keeps nothing. The capture
// is bulk 64 KiB RDMA Writes as 1448-octet FPDUs with CRC (the DESIGN
// budget's case), generated in memory. Reported: frames/s and allocations
// per frame.
func BenchmarkRun(b *testing.B) {
	for _, conns := range []int{1, 4} {
		b.Run(map[int]string{1: "1conn", 4: "4conns"}[conns], func(b *testing.B) {
			sc, err := gen.Builtin("bulk-write", gen.Params{Seed: 1, Count: 300 / conns, Size: 64 << 10, Conns: conns})
			if err != nil {
				b.Fatal(err)
			}
			var buf bytes.Buffer
			w, err := pcap.NewWriter(&buf, pcap.FormatPcap, layers.LinkTypeEthernet, 0)
			if err != nil {
				b.Fatal(err)
			}
			st, err := gen.Run(sc, w, nil)
			if err != nil {
				b.Fatal(err)
			}
			w.Flush()
			data := buf.Bytes()
			frames := 0
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r, err := pcap.NewReader(bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				_, err = Run(r, Config{Workers: 1}, bufio.NewWriter(io.Discard), func(int, *Out) Consumer {
					return consumerFunc(func(r *Record) {
						if r.Kind == KindPDU {
							n++
						}
					})
				})
				if err != nil || n == 0 {
					b.Fatalf("%v, %d PDUs", err, n)
				}
				frames += st.Frames
			}
			b.StopTimer()
			runtime.ReadMemStats(&ms1)
			b.ReportMetric(float64(frames)/b.Elapsed().Seconds(), "frames/s")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(frames), "allocs/frame")
		})
	}
}
