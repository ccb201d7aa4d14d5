package analyze

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/pcap"
)

// bulkCapture is a capture of 64 KiB RDMA Writes as 1448-octet FPDUs with
// CRC (the DESIGN budget's case) over conns connections, generated in
// memory, and its number of frames.
func bulkCapture(b *testing.B, conns, messages int) ([]byte, int) {
	sc, err := gen.Builtin("bulk-write", gen.Params{Seed: 1, Count: messages / conns, Size: 64 << 10, Conns: conns})
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
	return buf.Bytes(), st.Frames
}

// cpuTime is the process's user+system CPU time: on a machine shared with
// other work the wall clock says little.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runBulk runs the pipeline over data with workers shards, b.N times,
// with consumers that count PDUs and keep nothing, and reports frames/s
// by the wall clock and by CPU time (cpu-frames/s: frames per second of
// the process's CPU time, every goroutine and the GC included) and
// allocations per frame. With records, one consumer gets every record
// through Run (the shards' copies, handed out in capture order), else one
// per shard through RunOrdered.
func runBulk(b *testing.B, data []byte, framesPerOp, workers int, records, split bool) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		r, err := pcap.NewReader(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		counts := make([]int, workers)
		if split {
			_, err = Run(r, Config{Workers: workers, Panics: benchPanics}, &pduCounter{n: &counts[0]})
		} else if records {
			_, err = Run(r, Config{Workers: workers, Panics: benchPanics}, consumerFunc(func(r *Record) {
				if r.Kind == KindPDU {
					counts[0]++
				}
			}))
		} else {
			_, err = RunOrdered(r, Config{Workers: workers, Panics: benchPanics}, Output{W: bufio.NewWriter(io.Discard)}, func(shard int, _ *Out) Consumer {
				return consumerFunc(func(r *Record) {
					if r.Kind == KindPDU {
						counts[shard]++
					}
				})
			})
		}
		n := 0
		for _, c := range counts {
			n += c
		}
		if err != nil || n == 0 {
			b.Fatalf("%v, %d PDUs", err, n)
		}
	}
	cpu := cpuTime() - cpu0
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	frames := float64(framesPerOp) * float64(b.N)
	b.ReportMetric(frames/b.Elapsed().Seconds(), "frames/s")
	if cpu > 0 {
		b.ReportMetric(frames/cpu.Seconds(), "cpu-frames/s")
	}
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/frames, "allocs/frame")
}

// BenchmarkRun measures the whole offline pipeline on one worker: pcap
// reading, TCP reassembly, MPA framing with CRC32c, DDP/RDMAP decoding and
// tracking, records handed to a consumer that keeps nothing, over bulk
// captures of one and four connections (about 40,000 frames each). Run it
// with -cpu 1 for the one-core budget.
func BenchmarkRun(b *testing.B) {
	for _, conns := range []int{1, 4} {
		b.Run(fmt.Sprintf("%dconn", conns), func(b *testing.B) {
			data, frames := bulkCapture(b, conns, 600)
			runBulk(b, data, frames, 1, false, false)
		})
	}
}

// BenchmarkRunWorkers is BenchmarkRun's four-connection capture over 1, 2
// and 4 flow shards; run it with -cpu 2 (or the machine's cores) and
// compare cpu-frames/s (what sharding costs) and frames/s (what it gains,
// when the machine is otherwise idle).
func BenchmarkRunWorkers(b *testing.B) {
	data, frames := bulkCapture(b, 4, 600)
	for _, w := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) { runBulk(b, data, frames, w, false, false) })
	}
}

// BenchmarkRunRecords is BenchmarkRunWorkers through Run: one consumer
// gets every record in capture order, the shards' copies with more than
// one worker (what the copies and the hand-out cost: cpu-frames/s); split:
// the consumer is a Splitter whose preparers take the PDU records, which
// are then not copied whole.
func BenchmarkRunRecords(b *testing.B) {
	data, frames := bulkCapture(b, 4, 600)
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", w), func(b *testing.B) { runBulk(b, data, frames, w, true, false) })
	}
	for _, w := range []int{1, 2} {
		b.Run(fmt.Sprintf("split/workers=%d", w), func(b *testing.B) { runBulk(b, data, frames, w, true, true) })
	}
}

// pduCounter is a Splitter that counts PDUs: its preparers take each PDU
// record (as 8 octets, its sequence range), which then is not copied whole.
type pduCounter struct{ n *int }

type seqPreparer struct{}

func (seqPreparer) Prepare(r *Record, b []byte) ([]byte, bool) {
	if r.Kind != KindPDU {
		return b, false
	}
	return binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(b, r.Seq), r.End), true
}

func (c *pduCounter) Preparer() Preparer { return seqPreparer{} }

func (c *pduCounter) Record(r *Record) {
	if r.Kind == KindPDU {
		*c.n++
	}
}
