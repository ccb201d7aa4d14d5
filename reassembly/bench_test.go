package reassembly

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/pcap"
)

// The budget (DESIGN.md): offline analysis of frames carrying 1448-octet
// FPDUs at ≥ 1.5 M frames/s on one core, 0 allocations per frame in steady
// state. These benchmarks feed pre-built segments (one FPDU each, as a
// sender aligned to MSS 1448 sends them) of one established connection
// through an Assembler whose handler looks at every FPDU.

type countHandler struct {
	Funcs
	fpdus, bytes int
	crcBad       int
	sum          uint32
}

func (h *countHandler) PDU(c *Conn, e *PDUEvent) {
	h.fpdus++
	h.bytes += len(e.PDU.FPDU.ULPDU)
	h.sum += e.PDU.Seg.DDP.MSN + uint32(e.PDU.Seg.RDMAP.Opcode)
	if e.PDU.CRCStatus == decode.CRCBad {
		h.crcBad++
	}
}

// benchStream builds n segments of one direction, each one FPDU of at most
// 1448 octets, after an MPA exchange, and returns the packets of the
// handshake and of the stream (the latter repeats every cycle octets).
func benchStream(markers, crc bool, n int) (setup []pcap.Packet, pkts []pcap.Packet, cycle uint32) {
	c := mpaConv(markers, crc)
	mul := decode.MULPDU(1448, markers)
	for i := range n {
		c.s[0].fpdu(writeULPDU(0x100, uint64(i)*uint64(mul), payload(mul-decode.DDPTaggedHdrLen, byte(i))))
	}
	if markers {
		// Marker positions must repeat with the cycle: end it with an FPDU
		// that brings the stream to a multiple of 512 octets.
		start := c.s[0].fpdus[0].off
		for l := decode.DDPTaggedHdrLen; l <= mul; l++ {
			pos := c.s[0].seqAt(len(c.s[0].data))
			b, _ := decode.AppendFPDUWithMarkers(nil, pos, c.s[0].s0, make([]byte, l), crc)
			if (len(c.s[0].data)+len(b)-start)%decode.MarkerSpacing == 0 {
				c.s[0].fpdu(writeULPDU(0x100, 0, payload(l-decode.DDPTaggedHdrLen, 1)))
				break
			}
		}
	}
	for _, f := range c.s[0].fpdus {
		c.seg(0, f.off, f.len)
	}
	for i := range c.pkts {
		p := c.packet(&c.pkts[i])
		if len(p.Payload) > 0 && i >= 5 {
			pkts = append(pkts, p)
		} else {
			setup = append(setup, p)
		}
	}
	cycle = uint32(len(c.s[0].data) - c.s[0].fpdus[0].off)
	return setup, pkts, cycle
}

// cpuTime is the process's user+system CPU time: on a machine shared with
// other loads the wall clock (ns/op) says little; run with -cpu 1.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports MB/s and ns/op by CPU time (cpu-MB/s, cpu-ns/op).
func reportCPU(b *testing.B, cpu time.Duration, bytesPerOp int) {
	if cpu <= 0 {
		return
	}
	b.ReportMetric(float64(b.N)*float64(bytesPerOp)/cpu.Seconds()/1e6, "cpu-MB/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

func runBench(b *testing.B, markers, crc bool, reorder float64) {
	const n = 4096 // 4096 × 1448 is a multiple of 512: marker positions repeat
	setup, pkts, cycle := benchStream(markers, crc, n)
	if markers && cycle%decode.MarkerSpacing != 0 {
		b.Fatalf("cycle %d not a multiple of 512", cycle)
	}
	order := make([]int, len(pkts))
	for i := range order {
		order[i] = i
	}
	if reorder > 0 {
		rng := rand.New(rand.NewPCG(1, 2))
		for i := 0; i+1 < len(order); i++ {
			if rng.Float64() < reorder {
				order[i], order[i+1] = order[i+1], order[i]
				i++
			}
		}
	}
	h := &countHandler{}
	a := New(Config{}, h)
	ts := time.Unix(1700000000, 0)
	for i := range setup {
		a.Feed(i+1, ts, &setup[i])
	}
	var wire int64
	for _, p := range pkts {
		wire += int64(len(p.Payload))
	}
	// Warm up one cycle so that buffers exist.
	frame := len(setup)
	var p pcap.Packet
	feed := func(k int) {
		cyc, j := k/len(pkts), order[k%len(pkts)]
		p = pkts[j]
		p.Seq += uint32(cyc) * cycle
		frame++
		a.Feed(frame, ts, &p)
	}
	for k := range len(pkts) {
		feed(k)
	}
	b.SetBytes(wire / int64(len(pkts)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for k := range b.N {
		feed(len(pkts) + k)
	}
	b.StopTimer()
	reportCPU(b, cpuTime()-cpu0, int(wire/int64(len(pkts))))
	el := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)/el, "frames/s")
	b.ReportMetric(float64(b.N)*float64(wire)/float64(len(pkts))*8/el/1e9, "Gbit/s")
	if h.crcBad != 0 || h.fpdus < b.N/2 {
		b.Fatalf("%d FPDUs for %d frames, %d bad CRCs; stats %+v", h.fpdus, b.N, h.crcBad, a.Stats())
	}
}

func BenchmarkInOrderCRC(b *testing.B)     { runBench(b, false, true, 0) }
func BenchmarkInOrderNoCRC(b *testing.B)   { runBench(b, false, false, 0) }
func BenchmarkInOrderMarkers(b *testing.B) { runBench(b, true, true, 0) }
func BenchmarkReorder1pct(b *testing.B)    { runBench(b, false, true, 0.01) }

// BenchmarkDetectNonIWARP measures what a flow that is not iWARP costs
// while the framers look for MPA in it (up to Config.DetectLimit), per
// segment: text (HTTP-like) and random binary payloads.
func BenchmarkDetectNonIWARP(b *testing.B) {
	for _, kind := range []string{"text", "binary"} {
		b.Run(kind, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 1))
			seg := make([]byte, 1448)
			for i := range seg {
				if kind == "text" {
					seg[i] = byte(' ' + rng.IntN(90))
				} else {
					seg[i] = byte(rng.Uint32())
				}
			}
			h := &countHandler{}
			a := New(Config{}, h)
			c := newConv(1, 80, 1000, 2000)
			p := c.packet(&tpkt{d: 0, flags: pcap.TCPAck, data: seg})
			b.SetBytes(int64(len(seg)))
			b.ReportAllocs()
			b.ResetTimer()
			port := uint16(1)
			for i := range b.N {
				// A new flow every 200 segments (~290 KB, past the limit).
				if i%200 == 0 {
					port++
					p.SrcPort = port
					p.Seq = 1000
				}
				a.Feed(i, time.Time{}, &p)
				p.Seq += uint32(len(seg))
			}
			if h.fpdus != 0 {
				b.Fatalf("%d FPDUs found in non-iWARP data", h.fpdus)
			}
		})
	}
}

// BenchmarkResyncRandom: random octets after a valid MPA exchange (issue 20
// item 4, budget ≥ 500 MB/s per core): the direction is iWARP, no boundary
// is ever found, and every offset is a candidate the scan must reject.
func BenchmarkResyncRandom(b *testing.B) {
	for _, tc := range []struct {
		name         string
		markers, crc bool
	}{{"crc", false, true}, {"nocrc", false, false}, {"markers", true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			c := mpaConv(tc.markers, tc.crc)
			h := &countHandler{}
			a := New(Config{}, h)
			ts := time.Unix(1700000000, 0)
			for i := range c.pkts {
				p := c.packet(&c.pkts[i])
				a.Feed(i+1, ts, &p)
			}
			rng := rand.New(rand.NewPCG(7, 7))
			const nseg = 1024
			data := make([]byte, nseg*1448)
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			p := c.packet(&tpkt{d: 0, seq: c.s[0].seqAt(len(c.s[0].data)), ack: c.s[1].seqAt(len(c.s[1].data)), flags: pcap.TCPAck})
			h.fpdus = 0 // the MPA frames
			b.SetBytes(1448)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := range b.N {
				k := i % nseg
				p.Payload = data[k*1448 : (k+1)*1448]
				a.Feed(len(c.pkts)+i+1, ts, &p)
				p.Seq += 1448
			}
			b.StopTimer()
			reportCPU(b, cpuTime()-cpu0, 1448)
			b.ReportMetric(float64(h.fpdus), "fpdus")
			if tc.crc && h.fpdus > 0 {
				b.Fatalf("%d FPDUs found in random octets (%d segments)", h.fpdus, b.N)
			}
		})
	}
}
