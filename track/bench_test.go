package track

import (
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
)

// benchStream is a steady mix on one connection: Writes in 1448-octet
// FPDUs, Sends both ways, and 4 KiB Reads (Read Request, three Read
// Response segments). The PDUs are decoded once; the loop updates their
// MSNs in place, as a framer reusing one decode.PDU would hand them over.
type benchStream struct {
	tr    *Tracker
	pdus  []decode.PDU
	dirs  []Dir
	kinds []int // 0 send i2r, 1 send r2i, 2 read request, else other
	msn   [3]uint32
	at    At
	seq   [2]uint32
}

func newBenchStream(tb testing.TB, cfg Config) *benchStream {
	b := &benchStream{tr: New(cfg)}
	b.at = At{Conn: 1, Time: time.Unix(1700000000, 0), HasSeq: true, HasAck: true}
	s := newScen(tb, Limits{})
	b.tr.Handshake(s.at(I2R, 24), &decode.MPAFrame{Rev: 2, Enhanced: true, HasV2: true, V2: decode.MPAv2{IRD: 16, ORD: 16}, PDLength: 4})
	b.tr.Handshake(s.at(R2I, 24), &decode.MPAFrame{Reply: true, Rev: 2, Enhanced: true, HasV2: true, V2: decode.MPAv2{IRD: 16, ORD: 16}, PDLength: 4})
	add := func(dir Dir, kind int, g decode.Segment) {
		wire := decode.AppendFPDU(nil, g.Append(nil), true)
		var p decode.PDU
		crc := decode.CRCUseOn
		if _, err := decode.DecodeFPDU(wire, crc, &p); err != nil {
			tb.Fatal(err)
		}
		b.pdus = append(b.pdus, p)
		b.dirs = append(b.dirs, dir)
		b.kinds = append(b.kinds, kind)
	}
	const seg = 1440 - decode.DDPTaggedHdrLen
	for i := 0; i < 8; i++ {
		add(I2R, 3, write(0x1000, uint64(i)*seg, seg))
	}
	add(I2R, 0, send(0, 1024))
	add(R2I, 1, send(0, 64))
	add(I2R, 2, rreq(0, 0x2000, 0, 4096, 0x3000, 0))
	for i := 0; i < 2; i++ {
		add(R2I, 3, readResp(0x2000, uint64(i)*seg, seg, false))
	}
	add(R2I, 3, readResp(0x2000, 2*seg, 4096-2*seg, true))
	b.msn = [3]uint32{1, 1, 1}
	b.seq = [2]uint32{s.seq[0], s.seq[1]}
	return b
}

// next feeds the i-th PDU of the cycle.
func (b *benchStream) next(i int) Mark {
	k := i % len(b.pdus)
	p := &b.pdus[k]
	switch b.kinds[k] {
	case 0, 1, 2:
		p.Seg.DDP.MSN = b.msn[b.kinds[k]]
		b.msn[b.kinds[k]]++
	}
	d := b.dirs[k]
	n := uint32(len(p.FPDU.ULPDU) + 6)
	b.at.Dir = d
	b.at.Frame++
	b.at.Time = b.at.Time.Add(time.Microsecond)
	b.at.Seq, b.at.End, b.at.Ack = b.seq[d], b.seq[d]+n, b.seq[d^1]
	b.seq[d] += n
	return b.tr.PDU(b.at, p)
}

func BenchmarkTrackerPDU(b *testing.B) {
	findings := 0
	bs := newBenchStream(b, Config{OnFinding: func(f *Finding) {
		findings++
		b.Logf("%s", f)
	}})
	for i := 0; i < 4*len(bs.pdus); i++ { // warm up: tables and rings grow once
		bs.next(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bs.next(i)
	}
	b.StopTimer()
	if findings != 0 {
		b.Fatalf("%d findings on clean traffic", findings)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "MPDU/s")
}

func BenchmarkTrackerPDURecords(b *testing.B) {
	var msgs, ops int
	bs := newBenchStream(b, Config{
		OnFinding:   func(f *Finding) { b.Fatalf("finding: %s", f) },
		OnMessage:   func(*Message) { msgs++ },
		OnOperation: func(*Operation) { ops++ },
	})
	for i := 0; i < 4*len(bs.pdus); i++ {
		bs.next(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bs.next(i)
	}
}

// TestTrackerNoAllocs pins the steady-state budget: no allocation per PDU.
func TestTrackerNoAllocs(t *testing.T) {
	bs := newBenchStream(t, Config{OnFinding: func(f *Finding) { t.Errorf("finding: %s", f) }})
	i := 0
	for ; i < 4*len(bs.pdus); i++ {
		bs.next(i)
	}
	allocs := testing.AllocsPerRun(2000, func() {
		bs.next(i)
		i++
	})
	if allocs != 0 {
		t.Errorf("%.2f allocations per PDU, want 0", allocs)
	}
	st := bs.tr.Stats()
	ops := st.OpsTotal()
	if ops.Reads == 0 || ops.Reads-ops.ReadsAnswered > 1 || ops.Writes == 0 || ops.Sends == 0 {
		t.Errorf("ops %+v", ops)
	}
}

// BenchmarkDecodeAndTrack puts the tracker next to the decoder it follows:
// one 1448-octet Write FPDU with CRC32c decoded and tracked per op (the
// DecodeOnly variant is the baseline measured in the same run).
func BenchmarkDecodeAndTrack(b *testing.B) {
	const seg = 1448 - 2 - 4 - decode.DDPTaggedHdrLen
	wire := decode.AppendFPDU(nil, segBytes(write(0x1000, 0, seg)), true)
	for _, track := range []bool{false, true} {
		name := "DecodeOnly"
		if track {
			name = "DecodePlusTrack"
		}
		b.Run(name, func(b *testing.B) {
			tr := New(Config{OnFinding: func(f *Finding) { b.Fatalf("finding %s", f) }})
			var p decode.PDU
			crc := decode.CRCUseOn
			at := At{Conn: 1, Dir: I2R, Time: time.Unix(1700000000, 0), HasSeq: true}
			tr.Handshake(at, &decode.MPAFrame{Rev: 1})
			tr.Handshake(At{Conn: 1, Dir: R2I}, &decode.MPAFrame{Rev: 1, Reply: true})
			b.SetBytes(int64(len(wire)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := decode.DecodeFPDU(wire, crc, &p); err != nil {
					b.Fatal(err)
				}
				if track {
					p.Seg.DDP.TO = uint64(i) * seg
					at.Frame++
					at.Seq, at.End = at.End, at.End+uint32(len(wire))
					tr.PDU(at, &p)
				}
			}
		})
	}
}
