package reassembly

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/pcap"
)

// Hostile inputs (issue 20 item 6): each is a valid MPA exchange followed
// by octets meant to make the framer or the TCP reassembly work or hold
// as much as possible. The tests check the budgets hold and every octet is
// accounted for; BenchmarkHostile records their cost (BENCHMARKS.md); the
// generators also seed FuzzAssembler.

// hostileConv returns a conversation after the MPA exchange (markers and
// CRC as given) whose initiator then sends n octets made by fill, in
// segments of 1448.
func hostileConv(markers, crc bool, n int, fill func(s *side, b []byte)) *conv {
	c := mpaConv(markers, crc)
	s := c.s[0]
	b := make([]byte, n)
	fill(s, b)
	s.data = append(s.data, b...)
	c.send(0, 1448)
	return c
}

// mpaConv is a connection after its MPA exchange (TCP handshake, Request
// and Reply sent), the initiator's Full Operation Phase begun.
func mpaConv(markers, crc bool) *conv {
	c := newConv(40000, 4420, 1000, 2000)
	c.handshake()
	c.s[0].frame(mpaReq(markers, crc))
	c.s[1].frame(mpaRep(markers, crc))
	c.send(0, 1448)
	c.send(1, 1448)
	c.s[0].fullOp(markers, crc)
	return c
}

// hostileRandom: random octets after the handshake.
func hostileRandom(s *side, b []byte) {
	rng := rand.New(rand.NewPCG(20, 4))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
}

// hostileFFFF: every octet 0xFF, so every ULPDU_Length read is 0xFFFF (the
// largest FPDU, 65 KiB, wherever the framer looks).
func hostileFFFF(s *side, b []byte) {
	for i := range b {
		b[i] = 0xFF
	}
}

// hostileMarkers: a stream with markers where every 4-aligned word looks
// like a marker (Reserved 0, FPDUPTR a multiple of 4) and points somewhere
// else, between words that look like FPDU headers.
func hostileMarkers(s *side, b []byte) {
	rng := rand.New(rand.NewPCG(20, 5))
	for i := 0; i+4 <= len(b); i += 4 {
		if i%8 == 0 {
			binary.BigEndian.PutUint16(b[i:], 0)
			binary.BigEndian.PutUint16(b[i+2:], uint16(rng.IntN(1<<14))*4)
		} else {
			binary.BigEndian.PutUint16(b[i:], uint16(decode.DDPTaggedHdrLen+rng.IntN(2000)))
			b[i+2], b[i+3] = decode.DDPFlagT|decode.DDPFlagL|1, 1<<6|byte(decode.OpWrite)
		}
	}
}

// oooConv: after the handshake, segments that always lie beyond a hole
// that is never filled (each one further out), n octets in all.
func oooConv(n int) *conv {
	c := mpaConv(false, true)
	base := c.s[0].seqAt(len(c.s[0].data))
	seg := payload(1448, 3)
	for k := 0; k*1448 < n; k++ {
		// Every segment 3 segment lengths after the previous one: the
		// hole before each is never filled.
		c.pkts = append(c.pkts, tpkt{d: 0, seq: base + 1448 + uint32(k)*3*1448, ack: c.s[1].seqAt(len(c.s[1].data)), flags: pcap.TCPAck | pcap.TCPPsh, data: seg})
	}
	return c
}

type hostileCase struct {
	name string
	conv func(n int) *conv
}

var hostileCases = []hostileCase{
	{"random", func(n int) *conv { return hostileConv(false, true, n, hostileRandom) }},
	{"random-nocrc", func(n int) *conv { return hostileConv(false, false, n, hostileRandom) }},
	{"ulpdu-ffff", func(n int) *conv { return hostileConv(false, true, n, hostileFFFF) }},
	{"markers-fpduptr", func(n int) *conv { return hostileConv(true, true, n, hostileMarkers) }},
	{"out-of-order", oooConv},
}

// TestHostileBounded: each hostile input of 8 MB goes through an Assembler
// with the default configuration: the buffers stay within the memory
// budget, no FPDU with a good CRC is found in octets that hold none (the
// framing the handshake gave is followed until it fails, so the first
// ones may be reported, CRC bad), and every octet after the handshake is
// accounted for.
func TestHostileBounded(t *testing.T) {
	for _, hc := range hostileCases {
		t.Run(hc.name, func(t *testing.T) {
			c := hc.conv(8 << 20)
			r := c.feed(t, Config{})
			st := r.stats
			if st.MemoryPeak > 32<<20 || st.MemoryInUse != 0 {
				t.Errorf("memory peak %d, in use after Flush %d", st.MemoryPeak, st.MemoryInUse)
			}
			good := 0
			for _, p := range r.fpdus(0) {
				if p.crc == decode.CRCGood {
					good++
				}
			}
			if good != 0 {
				t.Errorf("%d FPDUs with a good CRC found in octets that hold none", good)
			}
			if hc.name != "out-of-order" {
				r.checkCoverage(t, 0, c.s[0], c.s[0].fpdus0())
			}
			// Bounded work: the resync examines a few candidates per
			// octet and parses each candidate FPDU once (a.work counts
			// both); a rescan of the window at each segment, as the
			// marker candidates once were, costs hundreds per octet.
			if per := float64(r.a.work) / float64(8<<20); per > 4 {
				t.Errorf("resync work %.2f per octet, want at most 4", per)
			}
			t.Logf("%s: peak %d octets held, %d gaps, %d skipped, %d resyncs, %d FPDUs, work %.3f per octet", hc.name, st.MemoryPeak, st.Gaps, st.SkippedBytes, st.Resyncs, len(r.fpdus(0)), float64(r.a.work)/float64(8<<20))
		})
	}
}

// fpdus0 is the offset after the MPA frame (the Full Operation Phase).
func (s *side) fpdus0() int { return int(s.s0 - s.isn - 1) }

// BenchmarkHostile: the cost per 1448-octet segment of each hostile input
// (cpu-MB/s by getrusage; run with -cpu 1 on a shared machine), and the
// buffer octets held at the peak.
func BenchmarkHostile(b *testing.B) {
	for _, hc := range hostileCases {
		b.Run(hc.name, func(b *testing.B) {
			c := hc.conv(16 << 20)
			var pkts []pcap.Packet
			for i := range c.pkts {
				pkts = append(pkts, c.packet(&c.pkts[i]))
			}
			setup := 0
			for setup < len(pkts) && (len(pkts[setup].Payload) == 0 || setup < 5) {
				setup++
			}
			h := &countHandler{}
			a := New(Config{}, h)
			ts := time.Unix(1700000000, 0)
			for i := range setup {
				a.Feed(i+1, ts, &pkts[i])
			}
			data := pkts[setup:]
			b.SetBytes(1448)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := range b.N {
				// Past the end of the input, the same segments again,
				// 16 MB further on.
				p := data[i%len(data)]
				p.Seq += uint32(i/len(data)) * (16 << 20)
				a.Feed(setup+i+1, ts, &p)
			}
			b.StopTimer()
			reportCPU(b, cpuTime()-cpu0, 1448)
			b.ReportMetric(float64(a.Stats().MemoryPeak)/1e6, "peak-MB")
		})
	}
}

// manyFlows is n iWARP connections open at once, each an MPA exchange and
// then the first 1448 octets of an FPDU of ULPDU_Length 65000 that never
// completes (issue 20 items 5 and 6); conn k's packets are in pkts[k].
func manyFlows(n int) [][]pcap.Packet {
	big := make([]byte, 1448)
	binary.BigEndian.PutUint16(big, 65000)
	big[2], big[3] = decode.DDPFlagT|1, 1<<6|byte(decode.OpWrite)
	out := make([][]pcap.Packet, n)
	for k := range out {
		c := newConv(uint16(10000+k%50000), 4420, 1000, 2000)
		c.addr[0] = netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1 + byte(k>>16), byte(k >> 8), byte(k)}), c.addr[0].Port())
		c.handshake()
		c.s[0].frame(mpaReq(false, true))
		c.send(0, 1448)
		c.s[1].frame(mpaRep(false, true))
		c.send(1, 1448)
		c.s[0].data = append(c.s[0].data, big...)
		c.send(0, 1448)
		for i := range c.pkts {
			out[k] = append(out[k], c.packet(&c.pkts[i]))
		}
	}
	return out
}

// TestHostileManyFlows: 100,000 concurrent connections through an
// Assembler with the default configuration. The flow table and the
// buffers stay within their limits; the flows past Config.MaxFlows are
// evicted least recently used first, each counted, its connection closed
// (CloseEvicted) and its partial FPDU reported as a gap, so every
// connection is accounted for.
func TestHostileManyFlows(t *testing.T) {
	n := 100000
	if testing.Short() {
		n = 20000
	}
	flows := manyFlows(n)
	r := &recorder{t: t}
	a := New(Config{}, r)
	r.a = a
	ts := time.Unix(1700000000, 0)
	frame := 0
	maxActive := 0
	for _, pkts := range flows {
		for i := range pkts {
			frame++
			a.Feed(frame, ts, &pkts[i])
		}
		if frame%64 == 0 {
			maxActive = max(maxActive, a.Stats().FlowsActive)
		}
	}
	a.Flush()
	st := a.Stats()
	max := a.cfg.MaxFlows
	if maxActive > max || st.MemoryPeak > a.cfg.MemoryBudget || st.MemoryInUse != 0 {
		t.Errorf("%d flows active at most (limit %d), memory peak %d (budget %d), %d in use after Flush", maxActive, max, st.MemoryPeak, a.cfg.MemoryBudget, st.MemoryInUse)
	}
	// An evicted flow's partial FPDU is cut by a gap (and one more while
	// the buffers were full: the 16,384 flows of the table hold 32 MiB);
	// at the end of the input it is only partial. Either way every
	// connection's FPDU is reported, its missing octets counted.
	if st.FlowsEvicted != uint64(n-max) || st.IWARPConns != uint64(n) || st.Gaps < st.FlowsEvicted {
		t.Errorf("%d flows evicted (want %d), %d iWARP (want %d), %d gaps (want at least one per eviction)", st.FlowsEvicted, n-max, st.IWARPConns, n, st.Gaps)
	}
	partial := 0
	for _, p := range r.pdus {
		if !p.frame && p.missing > 0 {
			partial++
		}
	}
	if partial != n {
		t.Errorf("%d partial FPDUs reported, want %d", partial, n)
	}
	evicted := 0
	for _, e := range r.closes {
		if e.Reason == CloseEvicted {
			evicted++
		}
	}
	if evicted != n-max || len(r.closes) != n {
		t.Errorf("%d connections closed, %d evicted, want %d and %d", len(r.closes), evicted, n, n-max)
	}
	t.Logf("%d flows: peak %d octets held, %d evicted, %d gaps", n, st.MemoryPeak, st.FlowsEvicted, st.Gaps)
}

// BenchmarkHostileManyFlows: the cost of a connection (an MPA exchange
// and a partial 64 KiB FPDU, evicted later) with 100,000 of them open at
// once, and the buffers held at the peak.
func BenchmarkHostileManyFlows(b *testing.B) {
	const n = 100000
	flows := manyFlows(n)
	a := New(Config{}, &countHandler{})
	ts := time.Unix(1700000000, 0)
	frame := 0
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := range b.N {
		pkts := flows[i%n]
		for j := range pkts {
			p := pkts[j]
			// Past n, the same connections again on other ports.
			p.SrcPort += uint16(i / n)
			p.DstPort += uint16(i / n)
			frame++
			a.Feed(frame, ts, &p)
		}
	}
	b.StopTimer()
	if cpu := cpuTime() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/conn")
	}
	b.ReportMetric(float64(a.Stats().MemoryPeak)/1e6, "peak-MB")
}

// BenchmarkResyncTiny: 64 KiB of random octets in segments of 1 or 10
// octets, from the start of a capture that saw no handshake (mid-stream:
// alignment, markers and CRC unknown) and after an MPA exchange. The scan's
// work per segment must not grow with the segments held: it walked them all
// from the first at every segment (3.2 s for 64 KiB of 1-octet segments).
func BenchmarkResyncTiny(b *testing.B) {
	const n = 64 << 10
	for _, tc := range []struct {
		name    string
		seg     int
		handsh  bool
		markers bool
	}{{"mid/1", 1, false, false}, {"mid/10", 10, false, false},
		{"after/1", 1, true, false}, {"after-markers/1", 1, true, true}} {
		b.Run(tc.name, func(b *testing.B) {
			random := make([]byte, n)
			hostileRandom(nil, random)
			c := newConv(50000, 3260, 123456, 654321)
			if tc.handsh {
				c = mpaConv(tc.markers, true)
			}
			c.s[0].data = append(c.s[0].data, random...)
			c.send(0, tc.seg)
			b.SetBytes(n)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for range b.N {
				c.feed(b, Config{})
			}
			b.StopTimer()
			reportCPU(b, cpuTime()-cpu0, n)
		})
	}
}
