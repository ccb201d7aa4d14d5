package track

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
)

func TestRecordsAndStats(t *testing.T) {
	s := newScen(t, Limits{})
	s.handshake()
	// a Send in three segments
	s.seg(I2R, untagged(decode.OpSend, 0, 1, 0, false, 1000))
	s.seg(I2R, untagged(decode.OpSend, 0, 1, 1000, false, 1000))
	s.seg(I2R, untagged(decode.OpSend, 0, 1, 2000, true, 500))
	// a Write in two segments
	s.seg(R2I, tagged(decode.OpWrite, 0xAB00, 0x10000, false, 1000))
	s.seg(R2I, tagged(decode.OpWrite, 0xAB00, 0x10000+1000, true, 24))
	// a Read of 3000 octets, answered in two segments 5 ms later
	s.seg(I2R, rreq(1, 0x5500, 0x8000, 3000, 0x6600, 0x100))
	reqFrame := s.frame
	s.now = s.now.Add(4 * time.Millisecond)
	s.seg(R2I, readResp(0x5500, 0x8000, 2000, false))
	s.seg(R2I, readResp(0x5500, 0x8000+2000, 1000, true))
	respLast := s.frame
	// the Responder invalidates ... the Initiator invalidates the
	// Responder's STag 0xAB00? No: a Send with Invalidate from the
	// Responder invalidates the Initiator's sink 0x5500.
	s.seg(R2I, sendInv(1, 0x5500, 8))
	s.finish()

	if len(s.fs) != 0 {
		t.Fatalf("findings on clean traffic:\n%s", dumpFindings(s.fs))
	}
	// Messages.
	var sendMsg, writeMsg *Message
	for i := range s.msgs {
		m := &s.msgs[i]
		if m.State != MsgComplete {
			t.Errorf("message %+v not complete", m)
		}
		switch {
		case m.Opcode == decode.OpSend:
			sendMsg = m
		case m.Opcode == decode.OpWrite:
			writeMsg = m
		}
	}
	if sendMsg == nil || sendMsg.Length != 2500 || sendMsg.Segments != 3 || sendMsg.FirstFrame != 3 || sendMsg.LastFrame != 5 || sendMsg.MSN != 1 {
		t.Errorf("Send message %+v", sendMsg)
	}
	if writeMsg == nil || writeMsg.Length != 1024 || writeMsg.Segments != 2 || !writeMsg.Tagged || writeMsg.STag != 0xAB00 || writeMsg.TO != 0x10000 || writeMsg.Dir != R2I {
		t.Errorf("Write message %+v", writeMsg)
	}
	// Operations.
	var read *Operation
	for i := range s.ops {
		if s.ops[i].Kind == OpRead {
			read = &s.ops[i]
		}
	}
	if read == nil || read.Status != OpOK || read.Length != 3000 || read.Size != 3000 || read.RequestFrame != reqFrame ||
		read.ResponseFirstFrame != reqFrame+1 || read.ResponseLastFrame != respLast || read.Latency != 6*time.Millisecond || read.Dir != I2R {
		t.Errorf("Read operation %+v", read)
	}
	// STags.
	tags := s.tr.STags(1)
	want := map[[2]uint32]STagInfo{
		{uint32(I2R), 0xAB00}: {Owner: I2R, STag: 0xAB00, Roles: RoleWriteSink, MinTO: 0x10000, MaxTO: 0x10000 + 1024, Bytes: 1024},
		{uint32(I2R), 0x5500}: {Owner: I2R, STag: 0x5500, Roles: RoleReadSink | RoleInvalidated, MinTO: 0x8000, MaxTO: 0x8000 + 3000, Bytes: 3000, Invalidated: true},
		{uint32(R2I), 0x6600}: {Owner: R2I, STag: 0x6600, Roles: RoleReadSource, MinTO: 0x100, MaxTO: 0x100 + 3000, Bytes: 3000},
	}
	if len(tags) != len(want) {
		t.Fatalf("STags %+v", tags)
	}
	for _, g := range tags {
		w, ok := want[[2]uint32{uint32(g.Owner), g.STag}]
		if !ok || g.Roles != w.Roles || g.MinTO != w.MinTO || g.MaxTO != w.MaxTO || g.Bytes != w.Bytes || g.Invalidated != w.Invalidated {
			t.Errorf("STag %+v, want %+v", g, w)
		}
	}
	// Statistics.
	cs, ok := s.tr.ConnStats(1)
	if !ok {
		t.Fatal("no ConnStats")
	}
	i, r := cs.Dir[I2R], cs.Dir[R2I]
	if i.Ops.Sends != 1 || i.Ops.Reads != 1 || i.Ops.ReadsAnswered != 1 || r.Ops.Writes != 1 || r.Ops.ReadResponses != 1 || r.Ops.SendsWithInvalidate != 1 {
		t.Errorf("ops i2r %+v r2i %+v", i.Ops, r.Ops)
	}
	if i.Octets[decode.OpSend] != 2500 || r.Octets[decode.OpWrite] != 1024 || r.Octets[decode.OpReadResponse] != 3000 || r.Segments[decode.OpReadResponse] != 2 {
		t.Errorf("octets by opcode i2r %v r2i %v", i.Octets, r.Octets)
	}
	if i.MsgSizes[12] != 1 { // 2500 is in [2048, 4096)
		t.Errorf("message sizes %v", i.MsgSizes)
	}
	if cs.ReadLatency.Count != 1 || cs.ReadLatency.P50 < 5900*time.Microsecond || cs.ReadLatency.P50 > 6100*time.Microsecond {
		t.Errorf("read latency %+v", cs.ReadLatency)
	}
	if cs.Era.Name() != "RFC 6581" || cs.Negotiated.IRD != [2]int{4, 4} || cs.Era.DV != [2]int8{1, 1} {
		t.Errorf("era %+v negotiated %+v", cs.Era, cs.Negotiated)
	}
	st := s.tr.Stats()
	if st.Conns != 1 || st.OpsTotal().Reads != 1 || st.ReadLatency.Count != 1 || st.Dir[R2I].Octets[decode.OpWrite] != 1024 {
		t.Errorf("overall stats %+v", st)
	}
}

func TestStatsCountsImpairments(t *testing.T) {
	s := newScen(t, Limits{})
	s.crc = true
	q := mpaReq(2)
	q.CRC = true
	s.mpa(I2R, q)
	s.mpa(R2I, mpaRep(2))
	s.seg(I2R, send(1, 16))
	b := decode.AppendFPDU(nil, segBytes(send(2, 16)), true)
	b[4] ^= 1
	s.wire(I2R, b)
	s.tr.Gap(s.at(I2R, 100), 100, 2)
	s.tr.Retransmission(s.at(R2I, 0), 40)
	s.finish()
	cs, _ := s.tr.ConnStats(1)
	d := cs.Dir[I2R]
	if d.CRCGood != 1 || d.CRCBad != 1 || d.Gaps != 1 || d.GapOctets != 100 || d.FPDUsLost != 2 || cs.Dir[R2I].RetransOctets != 40 {
		t.Errorf("impairments %+v", d)
	}
	if cs.Findings[finding.MPACRCBad] != 1 || cs.Findings[finding.TrackUncertainAfterGap] != 1 {
		t.Errorf("findings by code: %v", codesOf(s.fs))
	}
}

// After a gap nothing that the loss explains is reported as an error:
// the tail of a cut Write, a Read Response whose request was lost, MSNs
// that skip the lost messages.
func TestGapMakesChecksUncertain(t *testing.T) {
	s := newScen(t, Limits{})
	s.handshake()
	s.seg(I2R, rreq(1, 1, 0, 100, 2, 0))
	s.seg(I2R, tagged(decode.OpWrite, 9, 0, false, 1000))
	s.tr.Gap(s.at(I2R, 3000), 3000, -1)
	// lost: the middle of the Write, Send MSN 1, the head of Send MSN 2,
	// a Read Request (MSN 2)
	s.seg(I2R, tagged(decode.OpWrite, 9, 1800, true, 200))
	s.seg(I2R, untagged(decode.OpSend, 0, 2, 2500, true, 100))
	s.seg(I2R, send(3, 16))
	s.seg(R2I, readResp(1, 0, 100, true))
	s.seg(R2I, readResp(1, 0x500, 64, true)) // answers the lost request
	s.tr.Gap(s.at(R2I, 500), 500, -1)
	s.seg(I2R, rreq(3, 1, 0x900, 8, 2, 0))
	s.seg(I2R, rreq(4, 1, 0x980, 8, 2, 0))
	s.seg(R2I, readResp(1, 0x980, 8, true)) // the first response was in the gap
	s.seg(I2R, send(4, 16))
	s.finish()
	for _, f := range s.fs {
		if f.Code != finding.TrackUncertainAfterGap {
			t.Errorf("unexpected %s", f.String())
		}
	}
	if n := len(s.fs); n != 2 {
		t.Errorf("%d findings, want the 2 gap notes", n)
	}
	inc := 0
	for _, m := range s.msgs {
		if m.State == MsgIncomplete {
			inc++
		}
	}
	if inc != 2 { // the Send and the Write the first gap cut
		t.Errorf("%d incomplete messages, want 2: %+v", inc, s.msgs)
	}
	// The second gap took a Read Response: its Read is incomplete, the
	// next one completes.
	var st []OpStatus
	for _, o := range s.ops {
		if o.Kind == OpRead {
			st = append(st, o.Status)
		}
	}
	if len(st) != 3 || st[0] != OpOK || st[1] != OpIncomplete || st[2] != OpOK {
		t.Errorf("read statuses %v", st)
	}
}

// Terminates that cross on the wire are no RD-19 violation.
func TestCrossingTerminates(t *testing.T) {
	s := newScen(t, Limits{})
	s.handshake()
	s.seg(I2R, send(1, 16))
	s.seg(R2I, send(1, 16))
	s.seg(R2I, terminate(decode.Terminate{}))
	s.ackLag = uint32(s.pduLen(terminate(decode.Terminate{}))) // sent before the other one arrived
	s.seg(I2R, terminate(decode.Terminate{}))
	s.finish()
	got := codesOf(s.fs)
	if len(got) != 2 || got[0] != finding.RDMAPTerminate || got[1] != finding.RDMAPTerminate {
		t.Errorf("findings %v, want two Terminates", got)
	}
}

func (s *scen) pduLen(g decode.Segment) int { return decode.FPDULen(len(g.Append(nil))) }

// siw's Terminate for a Read Request copies the Read size into the MSN
// field and a DDP Segment Length of 0 (reference §5; decode author's note).
func TestSiwReadTerminate(t *testing.T) {
	s := newScen(t, Limits{})
	s.handshake()
	s.seg(I2R, send(1, 16))
	s.seg(I2R, rreq(1, 0x2ffcfe00, 0x55a0dddc20b0, 256, 0x49206000, 0x5637a1796320))
	blamed := s.frame
	h := decode.DDPHeader{Last: true, DV: 1, QN: 1, MSN: 256, RsvdULP: decode.RDMAPControl{RV: 1, Opcode: decode.OpReadRequest}.Octet()}
	tm := decode.Terminate{Layer: 0, EType: 1, Code: 0, M: true, D: true, R: true, HasSegLen: true, HasDDP: true, TermDDP: h,
		HasRDMA: true, TermRDMA: decode.ReadRequest{SinkSTag: 0x2ffcfe00, SinkTO: 0x55a0dddc20b0, Size: 256, SrcSTag: 0x49206000, SrcTO: 0x5637a1796320}}
	s.seg(R2I, terminate(tm), func(u []byte) []byte {
		copy(u[18:22], []byte{0x10, 0x00, 0x07, 0x00}) // as siw writes it
		return u
	})
	s.finish()
	got := codesOf(s.fs)
	if len(got) != 2 || got[0] != finding.MPASiwTerminateEncoding || got[1] != finding.RDMAPTerminate {
		t.Fatalf("findings:\n%s", dumpFindings(s.fs))
	}
	if len(s.terms) != 1 {
		t.Fatal("no TerminateReport")
	}
	r := s.terms[0]
	if !r.Siw || r.BlamedFrame != blamed || r.BlamedOpcode != decode.OpReadRequest || !r.SiwReadMSN || r.Verdict != VerdictPlausible ||
		r.Cause.Layer != 0 || r.Cause.EType != 1 || r.Cause.Code != 0 || !r.R {
		t.Errorf("report %+v", r)
	}
	// The Read is not reported unanswered: the Terminate answered it.
	for _, o := range s.ops {
		if o.Kind == OpRead && o.Status != OpTerminated {
			t.Errorf("read %+v", o)
		}
	}
}

// A partly served Read Request comes back with its TOs advanced and its
// size reduced (RFC 5040 §4.8).
func TestTerminateBlamesPartlyServedRead(t *testing.T) {
	s := newScen(t, Limits{})
	s.handshake()
	s.seg(I2R, rreq(1, 0x10, 0x1000, 300, 0x20, 0x2000))
	blamed := s.frame
	s.seg(R2I, readResp(0x10, 0x1000, 100, false))
	h := decode.DDPHeader{Last: true, DV: 1, QN: 1, MSN: 1, RsvdULP: decode.RDMAPControl{RV: 1, Opcode: decode.OpReadRequest}.Octet()}
	tm := decode.Terminate{Layer: 0, EType: 1, Code: 1, D: true, R: true, HasSegLen: true, HasDDP: true, TermDDP: h,
		HasRDMA: true, TermRDMA: decode.ReadRequest{SinkSTag: 0x10, SinkTO: 0x1000 + 100, Size: 200, SrcSTag: 0x20, SrcTO: 0x2000 + 100}}
	s.seg(R2I, terminate(tm))
	s.finish()
	if len(s.terms) != 1 || s.terms[0].BlamedFrame != blamed || s.terms[0].Verdict != VerdictPlausible {
		t.Errorf("reports %+v\nfindings:\n%s", s.terms, dumpFindings(s.fs))
	}
}

// Connections beyond Limits.Conns are retired: closed ones first, so a
// long-lived connection survives a churn of short ones.
func TestConnEviction(t *testing.T) {
	var ended []int
	tr := New(Config{Limits: Limits{Conns: 3}, OnFinding: func(*Finding) {}, OnConnEnd: func(s ConnStats) { ended = append(ended, s.Conn) }})
	var p decode.PDU
	feed := func(conn int, g decode.Segment) {
		crc := decode.CRCUseOff
		if _, err := decode.DecodeFPDU(decode.AppendFPDU(nil, g.Append(nil), false), crc, &p); err != nil {
			t.Fatal(err)
		}
		tr.PDU(At{Conn: conn, Dir: I2R, Frame: 1}, &p)
	}
	feed(1, send(1, 8)) // long-lived
	for id := 2; id <= 50; id++ {
		feed(id, send(1, 8))
		tr.Close(At{Conn: id, Dir: I2R}, CloseFIN)
		feed(1, send(uint32(id), 8))
	}
	if len(tr.conns) > 3 || tr.conns[1] == nil {
		t.Fatalf("%d live connections, conn 1 live: %t", len(tr.conns), tr.conns[1] != nil)
	}
	if len(tr.createdQ)+len(tr.closedQ) > 200 {
		t.Errorf("eviction queues grew to %d+%d", len(tr.createdQ), len(tr.closedQ))
	}
	st := tr.Stats()
	if st.Conns != 50 || st.ConnsEvicted != 47 || st.Dir[I2R].FPDUs != 50+49 {
		t.Errorf("stats %+v", st)
	}
	if len(ended) != 47 || ended[0] != 2 {
		t.Errorf("ended %v", ended)
	}
	if cs, ok := tr.ConnStats(2); !ok || cs.Dir[I2R].Ops.Sends != 1 || cs.Closed != "FIN" {
		t.Errorf("retained stats of conn 2: %+v %t", cs, ok)
	}
}

// A partial FPDU (its end not captured) is sized by its ULPDU_Length; a
// header the capture cut is treated like lost data, not as malformed.
func TestPartialFPDU(t *testing.T) {
	s := newScen(t, Limits{})
	s.handshake()
	partial := func(dir Dir, g decode.Segment, keep int) {
		b := decode.AppendFPDU(nil, g.Append(nil), false)
		crc := decode.CRCUseOff
		if _, err := decode.DecodeFPDU(b, crc, &s.pdu); err != nil {
			t.Fatal(err)
		}
		if keep < len(s.pdu.FPDU.ULPDU) {
			s.pdu.FPDU.ULPDU = s.pdu.FPDU.ULPDU[:keep]
			s.pdu.SegErr = decode.ParseSegment(s.pdu.FPDU.ULPDU, &s.pdu.Seg)
		}
		a := s.at(dir, len(b))
		a.Missing = len(b) - 2 - keep
		s.tr.PDU(a, &s.pdu)
	}
	partial(I2R, untagged(decode.OpSend, 0, 1, 0, false, 1000), 400)
	s.seg(I2R, untagged(decode.OpSend, 0, 1, 1000, true, 10)) // continues at MO 1000
	partial(I2R, rreq(1, 1, 0, 8, 2, 0), 30)                  // Read Request header cut
	s.seg(R2I, readResp(1, 0, 8, true))                       // answers it: not unmatched
	s.seg(I2R, send(2, 16))
	s.finish()
	if len(s.fs) != 0 {
		t.Errorf("findings:\n%s", dumpFindings(s.fs))
	}
	if len(s.msgs) == 0 || s.msgs[0].Length != 1010 || s.msgs[0].Opcode != decode.OpSend || s.msgs[0].State != MsgIncomplete {
		t.Errorf("messages %+v", s.msgs)
	}
}

// Two Trackers that each saw one connection report together what one
// Tracker that saw both would: counts add, latency percentiles come from
// the merged histograms.
func TestMergedStats(t *testing.T) {
	run := func(wait time.Duration) *Tracker {
		s := newScen(t, Limits{})
		s.handshake()
		s.seg(I2R, rreq(1, 0x5500, 0x8000, 100, 0x6600, 0x100))
		s.now = s.now.Add(wait)
		s.seg(R2I, readResp(0x5500, 0x8000, 100, true))
		s.finish()
		return s.tr
	}
	a, b := run(time.Millisecond), run(9*time.Millisecond)
	m := MergedStats(a, b)
	sa, sb := a.Stats(), b.Stats()
	if m.Conns != 2 || m.Dir[I2R].FPDUs != sa.Dir[I2R].FPDUs+sb.Dir[I2R].FPDUs || m.OpsTotal().Reads != 2 {
		t.Errorf("merged counts %+v", m)
	}
	if l := m.ReadLatency; l.Count != 2 || l.Min != sa.ReadLatency.Min || l.Max != sb.ReadLatency.Max || l.P50 > 3*time.Millisecond {
		t.Errorf("merged latency %+v from %+v and %+v", l, sa.ReadLatency, sb.ReadLatency)
	}
}

// Issue 20 item 3: min, max and mean of the Read latency are exact (a single
// Read of 905.2 µs was shown as min 901.1 µs, mean 903.2 µs, max 905.2 µs),
// the percentiles within the histogram's precision and never outside
// [min, max], per connection and capture-wide, merged or not.
func TestLatencyExact(t *testing.T) {
	waits := []time.Duration{905217 * time.Nanosecond, 1234567 * time.Nanosecond, 999 * time.Microsecond, 17*time.Millisecond + 3}
	run := func(waits []time.Duration) *Tracker {
		s := newScen(t, Limits{})
		s.handshake()
		for i, w := range waits {
			s.seg(I2R, rreq(uint32(i+1), 0x5500, 0x8000, 100, 0x6600, 0x100))
			s.now = s.now.Add(w)
			s.seg(R2I, readResp(0x5500, 0x8000, 100, true))
		}
		s.finish()
		return s.tr
	}
	check := func(name string, l Latency, waits []time.Duration, prec float64) {
		t.Helper()
		// The scenario's clock also moves 1 ms per segment.
		waits = slices.Clone(waits)
		for i := range waits {
			waits[i] += time.Millisecond
		}
		lo, hi, sum := waits[0], waits[0], time.Duration(0)
		for _, w := range waits {
			lo, hi, sum = min(lo, w), max(hi, w), sum+w
		}
		if l.Count != uint64(len(waits)) || l.Min != lo || l.Max != hi || l.Mean != sum/time.Duration(len(waits)) {
			t.Errorf("%s: %+v, want count %d min %v max %v mean %v", name, l, len(waits), lo, hi, sum/time.Duration(len(waits)))
		}
		sorted := slices.Clone(waits)
		slices.Sort(sorted)
		for _, p := range []struct {
			q   float64
			got time.Duration
		}{{50, l.P50}, {90, l.P90}, {99, l.P99}, {99.9, l.P999}} {
			want := sorted[max(0, int(math.Ceil(p.q/100*float64(len(sorted))))-1)]
			if p.got < lo || p.got > hi || math.Abs(float64(p.got-want)) > prec*float64(want) {
				t.Errorf("%s: p%v %v, want %v within %v", name, p.q, p.got, want, prec)
			}
		}
	}
	one := run(waits[:1])
	cs, _ := one.ConnStats(1)
	check("one read, connection", cs.ReadLatency, waits[:1], 0)
	check("one read, capture", one.Stats().ReadLatency, waits[:1], 0)
	all := run(waits)
	cs, _ = all.ConnStats(1)
	check("four reads, connection", cs.ReadLatency, waits, 0.01)
	check("four reads, capture", all.Stats().ReadLatency, waits, 0.001)
	check("merged", MergedStats(one, all).ReadLatency, append(slices.Clone(waits[:1]), waits...), 0.001)
}
