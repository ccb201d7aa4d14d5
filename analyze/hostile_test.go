package analyze

import (
	"bufio"
	"encoding/binary"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/pcap"
)

// synth is a Source that makes frames on the fly: Ethernet/IPv4/TCP
// headers written by hand (the pipeline checks no TCP checksum), so that
// hostile inputs of any size cost no disk and no generator time.
type synth struct {
	n    int
	next func(i int, f *synthFrame) bool // false: the end
	buf  []byte
	ts   time.Time
	// peak heap in use, sampled every sample frames.
	sample int
	peak   uint64
}

type synthFrame struct {
	src, dst     [4]byte
	sport, dport uint16
	seq, ack     uint32
	flags        uint8 // TCP flags
	payload      []byte
}

func (s *synth) Next(f *pcap.Frame) error {
	var sf synthFrame
	if !s.next(s.n, &sf) {
		return io.EOF
	}
	s.n++
	if s.sample > 0 && s.n%s.sample == 0 {
		// The live heap: what a GC leaves (resident memory is about
		// twice it at GOGC=100 unless GOMEMLIMIT is set).
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		s.peak = max(s.peak, m.HeapAlloc)
	}
	b := s.buf[:0]
	b = append(b, 2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00)
	tot := 20 + 20 + len(sf.payload)
	b = append(b, 0x45, 0, byte(tot>>8), byte(tot), 0, 0, 0x40, 0, 64, 6, 0, 0)
	b = append(b, sf.src[:]...)
	b = append(b, sf.dst[:]...)
	b = binary.BigEndian.AppendUint16(b, sf.sport)
	b = binary.BigEndian.AppendUint16(b, sf.dport)
	b = binary.BigEndian.AppendUint32(b, sf.seq)
	b = binary.BigEndian.AppendUint32(b, sf.ack)
	b = append(b, 5<<4, sf.flags, 0xff, 0xff, 0, 0, 0, 0)
	b = append(b, sf.payload...)
	s.buf = b
	s.ts = s.ts.Add(time.Microsecond)
	*f = pcap.Frame{Number: s.n, Timestamp: s.ts, CapLen: len(b), OrigLen: len(b), LinkType: layers.LinkTypeEthernet, Data: b}
	return nil
}

func (s *synth) Close() error { return nil }

const (
	tcpSYN = 0x02
	tcpACK = 0x10
	tcpPSH = 0x08
)

// manyConns makes conns iWARP connections, all open at once: each a SYN,
// an MPA Request and Reply, then the first 1448 octets of an FPDU of
// ULPDU_Length 65000 that never completes (issue 20 item 5).
func manyConns(conns int) func(i int, f *synthFrame) bool {
	fr, fp := decode.MPAFrame{Rev: 1, CRC: true}, decode.MPAFrame{Reply: true, Rev: 1, CRC: true}
	req, rep := fr.Append(nil), fp.Append(nil)
	big := make([]byte, 1448)
	binary.BigEndian.PutUint16(big, 65000)
	big[2], big[3] = decode.DDPFlagT|1, 1<<6|byte(decode.OpWrite) // tagged, DV 1, RV 1, Write
	return func(i int, f *synthFrame) bool {
		c, k := i/4, i%4
		if c >= conns {
			return false
		}
		cli := [4]byte{10, byte(c >> 16), byte(c >> 8), byte(c)}
		srv := [4]byte{10, 200, 0, 1}
		const isnC, isnS = 1000, 5000
		cport := uint16(10000 + c%50000)
		switch k {
		case 0:
			*f = synthFrame{src: cli, dst: srv, sport: cport, dport: 4420, seq: isnC, flags: tcpSYN}
		case 1:
			*f = synthFrame{src: cli, dst: srv, sport: cport, dport: 4420, seq: isnC + 1, ack: isnS + 1, flags: tcpACK | tcpPSH, payload: req}
		case 2:
			*f = synthFrame{src: srv, dst: cli, sport: 4420, dport: cport, seq: isnS + 1, ack: isnC + 1 + uint32(len(req)), flags: tcpACK | tcpPSH, payload: rep}
		case 3:
			*f = synthFrame{src: cli, dst: srv, sport: cport, dport: 4420, seq: isnC + 1 + uint32(len(req)), ack: isnS + 1 + uint32(len(rep)), flags: tcpACK | tcpPSH, payload: big}
		}
		return true
	}
}

// TestManyConnectionsBounded: 100,000 concurrent iWARP connections, each
// holding a partial 64 KiB FPDU. The heap stays within the budget
// (DESIGN.md: 100 MB resident on any input); the flows the table cannot
// hold are evicted with a counted, reported gap.
func TestManyConnectionsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("400,000 frames")
	}
	const conns = 100000
	src := &synth{next: manyConns(conns), sample: 50000}
	runtime.GC()
	rep, err := Run(src, Config{Workers: 1}, bufio.NewWriter(io.Discard), func(int, *Out) Consumer {
		return consumerFunc(func(*Record) {})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("peak live heap %.1f MB; flows %d, evicted %d, iWARP %d; memory peak %d, denied %d, no-memory octets %d",
		float64(src.peak)/1e6, rep.Asm.Flows, rep.Asm.FlowsEvicted, rep.Asm.IWARPConns, rep.Asm.MemoryPeak, rep.Asm.MemoryDenied, rep.Asm.NoMemoryBytes)
	// The budget is 100 MB resident (DESIGN.md), about 50 MB of live
	// heap at GOGC=100: NOT met yet (issue 20 item 5 is partly done; see
	// BENCHMARKS.md). This bound guards what is: 149 MB, where the tracker
	// used to keep every evicted flow's connection with a 256-entry
	// history per direction and a 64 KiB buffer was reserved for each
	// partial FPDU (which also left 96% of the connections unrecognised).
	if src.peak > 170<<20 {
		t.Errorf("peak live heap %.1f MB, want at most 170 MB", float64(src.peak)/1e6)
	}
	if rep.Asm.IWARPConns != conns {
		t.Errorf("%d iWARP connections, want %d", rep.Asm.IWARPConns, conns)
	}
}
