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
	"github.com/iwkit/iwkit/finding"
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
// holding a partial 64 KiB FPDU (issue 20 item 5). The live heap stays
// within the budget (DESIGN.md: 100 MB resident on any input; iwdump's
// resident peak is measured in BENCHMARKS.md); the flows the table cannot
// hold are evicted, each with a tcp.flow_evicted finding and its partial
// FPDU reported as a gap; Report.Conns keeps Config.KeepConns of the
// ended connections and counts the others.
func TestManyConnectionsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("400,000 frames")
	}
	const conns = 100000
	for _, workers := range []int{1, 2} {
		src := &synth{next: manyConns(conns), sample: 50000}
		runtime.GC()
		// One tally per shard: the shards' consumers run concurrently.
		tally := make([]int, max(workers, 1))
		rep, err := RunOrdered(src, Config{Workers: workers}, Output{W: bufio.NewWriter(io.Discard)}, func(shard int, _ *Out) Consumer {
			return consumerFunc(func(r *Record) {
				if r.Kind == KindFinding && r.Finding.Code == finding.TCPFlowEvicted {
					tally[shard]++
				}
			})
		})
		evicted := 0
		for _, n := range tally {
			evicted += n
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d workers: peak live heap %.1f MB; flows %d, evicted %d, iWARP %d; memory peak %d, denied %d, no-memory octets %d; conns kept %d, dropped %d",
			workers, float64(src.peak)/1e6, rep.Asm.Flows, rep.Asm.FlowsEvicted, rep.Asm.IWARPConns, rep.Asm.MemoryPeak, rep.Asm.MemoryDenied, rep.Asm.NoMemoryBytes,
			len(rep.Conns), rep.ConnsDropped)
		// About 40 MB of live heap leaves room for the garbage collector
		// under iwdump's soft limit (--mem-limit 64 MiB). It was 192.5 MB
		// before issue 20, then 149 MB.
		if src.peak > 50<<20 {
			t.Errorf("%d workers: peak live heap %.1f MB, want at most 50 MiB", workers, float64(src.peak)/1e6)
		}
		if rep.Asm.IWARPConns != conns {
			t.Errorf("%d workers: %d iWARP connections, want %d", workers, rep.Asm.IWARPConns, conns)
		}
		// Every connection but those the table holds at the end was
		// evicted, with a finding; each one's partial FPDU is a gap.
		if want := conns - DefaultMaxFlows; rep.Asm.FlowsEvicted != uint64(want) || evicted != want {
			t.Errorf("%d workers: %d flows evicted, %d tcp.flow_evicted findings, want %d", workers, rep.Asm.FlowsEvicted, evicted, want)
		}
		if rep.Asm.Gaps != conns {
			t.Errorf("%d workers: %d gaps, want %d", workers, rep.Asm.Gaps, conns)
		}
		if len(rep.Conns) > DefaultKeepConns+DefaultMaxFlows || len(rep.Conns)+rep.ConnsDropped != conns {
			t.Errorf("%d workers: Report.Conns holds %d, %d dropped, want at most %d and %d in all", workers, len(rep.Conns), rep.ConnsDropped, DefaultKeepConns+DefaultMaxFlows, conns)
		}
	}
}
