package ulp_test

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/pcap"
)

// nvmeIOCapture: one I/O queue doing 4 KiB reads (RDMA Write + Send with
// Invalidate) and 4 KiB writes (in-capsule) and 32 KiB writes (RDMA Read),
// repeated.
func nvmeIOCapture(b testing.TB, repeat int) []byte {
	ops := []gen.Op{
		send("i2r", append(connectSQE(1, 0x01, 0, 1024, 0, 1, 127), connectData(1)...)),
		send("r2i", cqe(1, 1, 1, 1, 0)),
	}
	var io []gen.Op
	io = append(io,
		send("i2r", rw(0x02, 0x2002, 2048, 1, 0x4F, 0x7f0000400000, 4096, 0x48bc2e11)),
		rdmaWrite(0x48bc2e11, 0x7f0000400000, 4096),
		sendInv(cqe(0x2002, 3, 1, 0, 0), 0x48bc2e11),
		send("i2r", append(rw(0x01, 0x3004, 8, 1, 0x01, 0, 4096, 0), make([]byte, 4096)...)),
		send("r2i", cqe(0x3004, 4, 1, 0, 0)),
		send("i2r", rw(0x01, 0x2001, 2048, 8, 0x4F, 0x7f0000300000, 32768, 0x48bc2e10)),
		rdmaRead(0x48bc2e10, 0x7f0000300000, 32768, 0x9002),
		sendInv(cqe(0x2001, 2, 1, 0, 0), 0x48bc2e10),
	)
	for i := 0; i < repeat; i++ {
		ops = append(ops, io...)
	}
	sc := &gen.Scenario{Name: "nvme-io", Seed: 9, Connections: []gen.Connection{nvmeConn("10.0.0.1:40009", 1, ops...)}}
	sc.Connections[0].MPA.CRC = true
	return genPcap(b, sc)
}

// BenchmarkNVMeIO: the pipeline over NVMe-oF I/O with and without the ULP
// layer (the budget: at most 30% more; BENCHMARKS.md "Storage protocols").
func BenchmarkNVMeIO(b *testing.B) {
	data := nvmeIOCapture(b, 300)
	for _, tc := range []struct {
		name string
		off  bool
	}{{"noulp", true}, {"ulp", false}} {
		b.Run(tc.name, func(b *testing.B) {
			frames := 0
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				src, _ := pcap.NewReader(bytes.NewReader(data))
				c := &countFrames{}
				if _, err := analyze.Run(src, analyze.Config{NoULP: tc.off}, c); err != nil {
					b.Fatal(err)
				}
				frames = c.n
			}
			b.ReportMetric(float64(frames)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

type countFrames struct{ n int }

func (c *countFrames) Record(r *analyze.Record) { c.n++ }

// BenchmarkNVMeIOOverhead alternates runs without and with the ULP layer
// and reports the ratio of their fastest runs (a shared, loaded machine
// makes separate sub-benchmarks noisy): "overhead" = ulp/noulp − 1.
func BenchmarkNVMeIOOverhead(b *testing.B) { overhead(b, nvmeIOCapture(b, 300)) }

// BenchmarkRealNVMeOverhead: the same over the real Linux capture
// (testdata/ulp/nvmeof.pcap: small, mostly admin commands).
func BenchmarkRealNVMeOverhead(b *testing.B) {
	data, err := os.ReadFile("../testdata/ulp/nvmeof.pcap")
	if err != nil {
		b.Skip(err)
	}
	overhead(b, data)
}

func overhead(b *testing.B, data []byte) {
	best := [2]time.Duration{1 << 62, 1 << 62}
	for i := 0; i < b.N; i++ {
		for k, off := range []bool{true, false} {
			src, _ := pcap.NewReader(bytes.NewReader(data))
			c := &countFrames{}
			t0 := time.Now()
			if _, err := analyze.Run(src, analyze.Config{NoULP: off}, c); err != nil {
				b.Fatal(err)
			}
			best[k] = min(best[k], time.Since(t0))
		}
	}
	b.ReportMetric(float64(best[0].Microseconds()), "noulp-µs")
	b.ReportMetric(float64(best[1].Microseconds()), "ulp-µs")
	b.ReportMetric(float64(best[1])/float64(best[0])-1, "overhead")
}
