package reassembly

import (
	"encoding/binary"
	"math/rand/v2"
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
			t.Logf("%s: peak %d octets held, %d gaps, %d skipped, %d resyncs, %d FPDUs", hc.name, st.MemoryPeak, st.Gaps, st.SkippedBytes, st.Resyncs, len(r.fpdus(0)))
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
