package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/pcap"
)

func mustBuiltin(t testing.TB, name string, p Params) *Scenario {
	t.Helper()
	sc, err := Builtin(name, p)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// Every built-in decodes back to its truth with our own decoders.
func TestBuiltinsRoundTrip(t *testing.T) {
	for _, b := range Builtins() {
		t.Run(b[0], func(t *testing.T) {
			p := Params{Seed: 7}
			if b[0] == "bulk-write" || b[0] == "read-heavy" {
				p.Count = 12
			}
			g := generate(t, mustBuiltin(t, b[0], p), pcap.FormatPcap)
			checkTruth(t, g)
			if len(g.truth.FPDUs) == 0 {
				t.Fatal("no FPDUs")
			}
		})
	}
}

// The hostile scenario carries every impairment kind and raises the
// findings the brief lists.
func TestHostileFindings(t *testing.T) {
	g := generate(t, mustBuiltin(t, "hostile", Params{}), pcap.FormatPcapNG)
	checkTruth(t, g)
	kinds := map[string]int{}
	for _, im := range g.truth.Impairments {
		kinds[im.Kind]++
	}
	for _, k := range []string{ImpDrop, ImpReorder, ImpDuplicate, ImpRetransmit, ImpRetransmitDiff, ImpSnaplen, ImpMidstream,
		ImpCorruptCRC, ImpWrongMSN, ImpWrongQN, ImpBadDDPVersion, ImpBadRDMAPVersion, ImpMOOutOfOrder, ImpUnknownSTag, ImpReadResponseTooLong} {
		if kinds[k] == 0 {
			t.Errorf("no %s impairment", k)
		}
	}
	codes := findingCodes(g.truth)
	for _, c := range []finding.Code{finding.MPACRCBad, finding.DDPMSNGap, finding.DDPMSNRepeat, finding.DDPQNInvalid, finding.DDPDVInvalid,
		finding.RDMAPRVInvalid, finding.DDPMOGap, finding.RDMAPReadResponseMismatch, finding.RDMAPReadResponseTooLong, finding.TCPGap,
		finding.TCPRetransInconsistent, finding.TrackNoHandshake} {
		if codes[c] == 0 {
			t.Errorf("no %s finding", c)
		}
	}
	// Every finding but the mid-stream one is caused by an impairment.
	for _, f := range g.truth.Findings {
		if f.Impairment == 0 {
			t.Errorf("finding %s at frame %d has no impairment", f.Code, f.Frame)
		}
	}
}

// Each explicit header impairment changes exactly the field it names, and
// the MSN count goes on from a wrong MSN.
func TestHeaderImpairmentValues(t *testing.T) {
	sc := &Scenario{Connections: []Connection{{MPA: MPA{CRC: true}, Ops: []Op{
		{Op: OpNameSend, Size: 10}, {Op: OpNameSend, Size: 10}, {Op: OpNameSend, Size: 10}, {Op: OpNameSend, Size: 10},
	}}}, Impairments: []Impairment{{Kind: ImpWrongMSN, FPDU: 2, Value: ptr[uint64](40)}, {Kind: ImpWrongQN, FPDU: 4, Value: ptr[uint64](9)}}}
	g := generate(t, sc, pcap.FormatPcap)
	checkTruth(t, g)
	var msns, qns []uint32
	for _, f := range g.truth.FPDUs {
		msns = append(msns, f.MSN)
		qns = append(qns, f.QN)
	}
	// MSN 1, then 40, then 41 (the count goes on), then 42 on QN 9.
	if got := fmt.Sprint(msns); got != "[1 40 41 42]" {
		t.Errorf("MSNs %v", msns)
	}
	if qns[3] != 9 || qns[2] != 0 {
		t.Errorf("QNs %v", qns)
	}
	codes := findingCodes(g.truth)
	if codes[finding.DDPMSNGap] != 1 || codes[finding.DDPQNInvalid] != 1 || len(g.truth.Findings) != 2 {
		t.Errorf("findings %+v", g.truth.Findings)
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Same scenario and seed: the same octets and the same truth; another seed:
// other octets.
func TestDeterminism(t *testing.T) {
	for _, name := range []string{"mixed", "hostile", "rping"} {
		sc := mustBuiltin(t, name, Params{Seed: 42})
		sc.Rates = Rates{Drop: 0.02, Reorder: 0.02, Duplicate: 0.02, Retransmit: 0.02, RetransmitDiff: 0.02, CorruptCRC: 0.02, CorruptHeader: 0.02}
		a := generate(t, sc, pcap.FormatPcap)
		b := generate(t, sc, pcap.FormatPcap)
		if !bytes.Equal(a.pcap, b.pcap) {
			t.Errorf("%s: two runs with seed 42 differ", name)
		}
		if jsonOf(a.truth) != jsonOf(b.truth) {
			t.Errorf("%s: truths differ", name)
		}
		sc.Seed = 43
		c := generate(t, sc, pcap.FormatPcap)
		if bytes.Equal(a.pcap, c.pcap) {
			t.Errorf("%s: seeds 42 and 43 give the same capture", name)
		}
	}
}

// Random impairments are recorded exactly like explicit ones.
func TestRandomImpairments(t *testing.T) {
	sc := mustBuiltin(t, "mixed", Params{Seed: 5, Count: 3})
	sc.Rates = Rates{Drop: 0.03, Reorder: 0.03, Duplicate: 0.03, Retransmit: 0.03, RetransmitDiff: 0.03, CorruptCRC: 0.05, CorruptHeader: 0.05}
	g := generate(t, sc, pcap.FormatPcap)
	checkTruth(t, g)
	if len(g.truth.Impairments) < 5 {
		t.Errorf("only %d impairments", len(g.truth.Impairments))
	}
	for _, im := range g.truth.Impairments {
		if !im.Random {
			t.Errorf("impairment %d not marked random", im.ID)
		}
	}
}

// Sequence numbers that wrap past 2^32 inside the data, with markers in
// both directions (their positions are taken modulo 2^32, RFC 5044 §4.3)
// and every packing mode.
func TestSeqWrap(t *testing.T) {
	for _, packing := range []string{"one", "pack", "stream"} {
		for _, isn := range []uint32{0xFFFFFFFF, 0xFFFFF000, 0xFFFFFFF0 - 20} {
			sc := &Scenario{Connections: []Connection{{
				ClientISN: ptr(isn), ServerISN: ptr(isn - 3000), Packing: packing, Timestamps: true,
				MPA: MPA{CRC: true, MarkersI2R: true, MarkersR2I: true, Rev: ptr(1)},
				Ops: []Op{{Op: OpNameWrite, Size: 9000}, {Op: OpNameRead, Size: 7000}, {Op: OpNameSend, Size: 100, Repeat: 5},
					{Op: OpNameSend, Dir: "r2i", Size: 3000}},
			}}}
			g := generate(t, sc, pcap.FormatPcap)
			checkTruth(t, g)
			wrapped := false
			for _, f := range g.truth.FPDUs {
				if f.Dir == "i2r" && f.End < f.Seq || f.Seq < isn && f.Seq > 0 && f.Dir == "i2r" {
					wrapped = true
				}
			}
			if !wrapped {
				t.Errorf("packing %s isn %#x: no FPDU past the wrap", packing, isn)
			}
		}
	}
}

// Segmentation follows MULPDU from the MSS (RFC 5044 §4.5), and the packing
// modes put FPDUs into segments as documented.
func TestSegmentation(t *testing.T) {
	for _, tc := range []struct {
		packing  string
		maxULPDU int
		ts, mark bool
	}{{"one", 0, false, false}, {"one", 0, true, true}, {"pack", 300, false, false}, {"stream", 4000, true, false}, {"one", 3000, false, true}} {
		sc := &Scenario{Connections: []Connection{{Packing: tc.packing, MaxULPDU: tc.maxULPDU, Timestamps: tc.ts, MSS: 1460,
			MPA: MPA{CRC: true, MarkersI2R: tc.mark},
			Ops: []Op{{Op: OpNameSend, Size: 5000}, {Op: OpNameSend, Size: 40, Repeat: 10}, {Op: OpNameWrite, Size: 20000}}}}}
		g := generate(t, sc, pcap.FormatPcap)
		c := checkTruth(t, g)
		ct := g.truth.Connections[0]
		emss := 1460
		if tc.ts {
			emss -= 12
		}
		mulpdu := decode.MULPDU(emss, tc.mark)
		if tc.maxULPDU > 0 {
			mulpdu = tc.maxULPDU
		}
		if ct.EMSS != emss || ct.MULPDUI2R != mulpdu {
			t.Errorf("%+v: EMSS %d MULPDU %d, want %d %d", tc, ct.EMSS, ct.MULPDUI2R, emss, mulpdu)
		}
		perFrame := map[int]int{}
		multi := false
		for _, f := range g.truth.FPDUs {
			if f.ULPDULength > mulpdu {
				t.Errorf("%+v: FPDU %d ULPDU %d above MULPDU %d", tc, f.Index, f.ULPDULength, mulpdu)
			}
			if f.FirstFrame != f.LastFrame {
				multi = true
			}
			perFrame[f.FirstFrame]++
		}
		maxPer := 0
		for _, n := range perFrame {
			maxPer = max(maxPer, n)
		}
		for _, s := range c.dirs[[2]int{0, 0}].segs {
			if s.payloadLen > emss {
				t.Errorf("%+v: segment of %d octets above EMSS %d", tc, s.payloadLen, emss)
			}
		}
		switch {
		case tc.packing == "one" && tc.maxULPDU == 0 && (multi || maxPer != 1):
			t.Errorf("%+v: FPDUs not one per segment (multi %v, max %d per frame)", tc, multi, maxPer)
		case tc.packing == "pack" && (multi || maxPer < 3):
			t.Errorf("%+v: pack mode: multi %v, max %d per frame", tc, multi, maxPer)
		case tc.maxULPDU > emss && !multi:
			t.Errorf("%+v: no FPDU larger than a segment", tc)
		}
	}
}

// DDP segmentation as RFC 5041 §5.2's example: MO and TO advance by the
// payload of each segment, MSN per queue starts at 1 and counts messages.
func TestDDPSegmentation(t *testing.T) {
	sc := &Scenario{Connections: []Connection{{MaxULPDU: 1500, MSS: 9000, MPA: MPA{CRC: true}, Ops: []Op{
		{Op: OpNameSend, Size: 2048}, {Op: OpNameWrite, Size: 2048, TO: ptr[uint64](16384), STag: ptr[uint32](0x42)},
		{Op: OpNameRead, Size: 10}, {Op: OpNameSend, Size: 1}, {Op: OpNameRead, Size: 0}, {Op: OpNameFetchAdd}, {Op: OpNameImm, Imm: 9},
	}}}}
	g := generate(t, sc, pcap.FormatPcap)
	checkTruth(t, g)
	var got []string
	for _, f := range g.truth.FPDUs {
		if f.Dir != "i2r" {
			continue
		}
		if f.Tagged {
			got = append(got, strings.Join([]string{f.OpName, itoa(int(f.TO)), itoa(f.PayloadLen), itoa(b2i(f.Last))}, "/"))
		} else {
			got = append(got, strings.Join([]string{f.OpName, itoa(int(f.QN)), itoa(int(f.MSN)), itoa(int(f.MO)), itoa(f.PayloadLen), itoa(b2i(f.Last))}, "/"))
		}
	}
	want := []string{
		"Send/0/1/0/1482/0", "Send/0/1/1482/566/1", // D07 §5.2: 1482 + 566
		"RDMA Write/16384/1486/0", "RDMA Write/17870/562/1", // 1486 + 562
		"RDMA Read Request/1/1/0/0/1", "Send/0/2/0/1/1", "RDMA Read Request/1/2/0/0/1",
		"Atomic Request/1/3/0/0/1", "Immediate Data/0/3/0/0/1",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("segments\n got %v\nwant %v", got, want)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// A scenario file in YAML and JSON gives the same traffic, and unknown keys
// are refused.
func TestParse(t *testing.T) {
	y := `
name: demo
seed: 3
connections:
  - client: "[fd00::1]:5000"
    server: "[fd00::2]:4791"
    vlan: 12
    mpa: {rev: 2, crc: true, rtr: read, ird: 4, ord: 4, reply_ird: 4, reply_ord: 4, request_data: "hello"}
    ops:
      - {op: write, size: 8KiB}
      - {op: read, dir: r2i, size: 3000}
      - {op: send, payload: "0x00010203"}
      - {op: terminate, layer: 1, etype: 2, code: 3}
impairments:
  - {kind: corrupt_crc, fpdu: 2}
`
	sc, err := Parse([]byte(y), true)
	if err != nil {
		t.Fatal(err)
	}
	var jb bytes.Buffer
	if err := sc.WriteJSON(&jb); err != nil {
		t.Fatal(err)
	}
	sc2, err := Parse(jb.Bytes(), false)
	if err != nil {
		t.Fatalf("%v\n%s", err, jb.String())
	}
	var yb bytes.Buffer
	if err := sc2.WriteYAML(&yb); err != nil {
		t.Fatal(err)
	}
	sc3, err := Parse(yb.Bytes(), true)
	if err != nil {
		t.Fatalf("%v\n%s", err, yb.String())
	}
	a, b := generate(t, sc, pcap.FormatPcap), generate(t, sc3, pcap.FormatPcap)
	if !bytes.Equal(a.pcap, b.pcap) {
		t.Error("YAML → JSON → YAML changed the traffic")
	}
	checkTruth(t, a)
	if a.truth.FPDUs[0].TO != 0 && a.truth.FPDUs[0].OpName != "RDMA Write" {
		t.Errorf("first FPDU %+v", a.truth.FPDUs[0])
	}
	if sc.Connections[0].Ops[0].Size != 8192 || string(sc.Connections[0].Ops[2].Payload) != "\x00\x01\x02\x03" {
		t.Errorf("size/payload parsed as %v %q", sc.Connections[0].Ops[0].Size, sc.Connections[0].Ops[2].Payload)
	}
	for _, bad := range []string{
		`{"connections":[{"mss":1460,"bogus":1}]}`,
		`{"connections":[]}`,
		`{"connections":[{"ops":[{"op":"fly"}]}]}`,
		`{"connections":[{}],"impairments":[{"kind":"drop"}]}`,
		`{"connections":[{"ops":[{"op":"write"}]}],"impairments":[{"kind":"wrong_msn","op":0}]}`,
		`{"connections":[{"client":"1.2.3.4:99999"}]}`,
		`{"connections":[{"client":"1.2.3.4:1","server":"[::1]:2"}]}`,
	} {
		sc, err := Parse([]byte(bad), false)
		if err == nil {
			_, err = Run(sc, discard{}, nil)
		}
		if err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

type discard struct{}

func (discard) WriteFrame(time.Time, []byte, int) error { return nil }

// The MPA Request and Reply carry what the scenario asks (RFC 5044 §7.1.1,
// RFC 6581 §9), the peer-to-peer Initiator sends its RTR first, and a
// rejected connection carries no FPDU.
func TestMPAFrames(t *testing.T) {
	conns := []Connection{
		{MPA: MPA{Rev: ptr(0), CRC: true, MarkersI2R: true, MarkersR2I: true}},
		{MPA: MPA{Rev: ptr(1), MarkersR2I: true, RequestData: Data("req"), ReplyData: Data("rep")}},
		{MPA: MPA{Rev: ptr(2), CRC: true, RTR: "read", IRD: ptr[uint16](3), ORD: ptr[uint16](2), ReplyIRD: ptr[uint16](2), ReplyORD: ptr[uint16](3), RequestData: Data("x")}},
		{MPA: MPA{Rev: ptr(2), RTR: "write", IRD: ptr[uint16](decode.MPAv2NoNegotiation), ORD: ptr[uint16](5), ReplyIRD: ptr[uint16](5), ReplyORD: ptr[uint16](decode.MPAv2NoNegotiation)}},
		{MPA: MPA{Rev: ptr(2), RTR: "send"}},
		{MPA: MPA{Rev: ptr(1), Rev1IRDORD: true, IRD: ptr[uint16](16), ORD: ptr[uint16](16), ReplyIRD: ptr[uint16](16), ReplyORD: ptr[uint16](8)}},
		{MPA: MPA{Rev: ptr(2), Enhanced: ptr(false)}},
		{MPA: MPA{Rev: ptr(1), Reject: true, ReplyData: Data("go away")}},
	}
	for i := range conns {
		conns[i].Ops = []Op{{Op: OpNameSend, Size: 2000}, {Op: OpNameWrite, Dir: "r2i", Size: 700}}
	}
	g := generate(t, &Scenario{Connections: conns}, pcap.FormatPcap)
	c := checkTruth(t, g)
	for i, cfg := range conns {
		m := cfg.MPA
		var frames [2]decode.MPAFrame
		for d := range 2 {
			segs := c.dirs[[2]int{i, d}].segs
			var payload []byte
			for _, s := range segs {
				if len(s.payload) > 0 {
					payload = s.payload
					break
				}
			}
			n, err := decode.ParseMPAFrame(payload, &frames[d])
			if err != nil || n != len(payload) {
				t.Fatalf("conn %d dir %d: MPA frame: %d of %d octets, %v", i, d, n, len(payload), err)
			}
		}
		req, rep := &frames[0], &frames[1]
		if req.Reply || !rep.Reply || int(req.Rev) != *m.Rev || int(rep.Rev) != *m.Rev {
			t.Errorf("conn %d: keys/revs %v %v %d %d", i, req.Reply, rep.Reply, req.Rev, rep.Rev)
		}
		// M is per receive direction: the Request asks for markers toward
		// the Initiator, the Reply toward the Responder.
		if req.Markers != m.MarkersR2I || rep.Markers != m.MarkersI2R || req.CRC != m.CRC || rep.CRC != m.CRC || req.Reject || rep.Reject != m.Reject {
			t.Errorf("conn %d: flags req %+v rep %+v", i, req, rep)
		}
		enh := cfg.enhanced()
		if req.HasV2 != enh || rep.HasV2 != enh || req.Enhanced != enh {
			t.Errorf("conn %d: enhanced %v, frames %v %v", i, enh, req.HasV2, rep.HasV2)
		}
		if enh {
			p2p := m.RTR != ""
			ird, ord, rird, rord := m.irdOrd()
			if req.V2.IRD != ird || req.V2.ORD != ord || rep.V2.IRD != rird || rep.V2.ORD != rord ||
				req.V2.PeerToPeer != p2p || rep.V2.PeerToPeer != p2p ||
				req.V2.ZeroLenReadRTR != (m.RTR == "read") || req.V2.ZeroLenWriteRTR != (m.RTR == "write") || req.V2.ZeroLenSendRTR != (m.RTR == "send") ||
				rep.V2.ZeroLenReadRTR != (m.RTR == "read") || rep.V2.ZeroLenWriteRTR != (m.RTR == "write") || rep.V2.ZeroLenSendRTR != (m.RTR == "send") {
				t.Errorf("conn %d: v2 blocks %+v %+v", i, req.V2, rep.V2)
			}
		}
		if ird, _, _, rord := m.irdOrd(); m.Rev1IRDORD && (!req.Rev1IRDORD || req.Rev1IRD != uint32(ird) || rep.Rev1ORD != uint32(rord)) {
			t.Errorf("conn %d: Rev 1 IRD/ORD %+v %+v", i, req, rep)
		}
		if string(req.ULPPrivateData()) != string(m.RequestData) || string(rep.ULPPrivateData()) != string(m.ReplyData) {
			t.Errorf("conn %d: private data %q %q", i, req.ULPPrivateData(), rep.ULPPrivateData())
		}
		var first [2]*FPDUTruth
		for j := range g.truth.FPDUs {
			f := &g.truth.FPDUs[j]
			if f.Conn == i && f.Index == 1 {
				first[dirOf(f.Dir)] = f
			}
		}
		ct := g.truth.Connections[i]
		if m.Reject {
			if first[0] != nil || first[1] != nil || !ct.Rejected || findingCodes(g.truth)[finding.MPAReject] != 1 {
				t.Errorf("conn %d: rejected, yet FPDUs %v %v", i, first[0], first[1])
			}
			continue
		}
		wantDV := uint8(1)
		if *m.Rev == 0 {
			wantDV = 0
		}
		if ct.DV != wantDV || first[0].DV != wantDV || first[0].RV != wantDV {
			t.Errorf("conn %d: versions %d/%d/%d for Rev %d", i, ct.DV, first[0].DV, first[0].RV, *m.Rev)
		}
		f := first[0]
		switch m.RTR {
		case "":
			if f.RTR || f.OpName != "Send" {
				t.Errorf("conn %d: first FPDU %s rtr %v", i, f.OpName, f.RTR)
			}
		case "write":
			if !f.RTR || f.Opcode != uint8(decode.OpWrite) || f.ULPDULength != decode.DDPTaggedHdrLen {
				t.Errorf("conn %d: Write RTR %+v", i, f)
			}
		case "send":
			if !f.RTR || f.Opcode != uint8(decode.OpSend) || f.MSN != 1 || f.PayloadLen != 0 {
				t.Errorf("conn %d: Send RTR %+v", i, f)
			}
		case "read":
			r := first[1]
			if !f.RTR || f.Opcode != uint8(decode.OpReadRequest) || f.Read.Size != 0 || !r.RTR || r.Opcode != uint8(decode.OpReadResponse) || r.PayloadLen != 0 || r.STag != f.Read.SinkSTag {
				t.Errorf("conn %d: Read RTR %+v answered by %+v", i, f, r)
			}
		}
	}
}

// Terminates of every cause carry the headers RFC 5040 §7.1 prescribes,
// copied from the segment they blame.
func TestTerminateHeaders(t *testing.T) {
	g := generate(t, mustBuiltin(t, "every-terminate", Params{}), pcap.FormatPcap)
	checkTruth(t, g)
	causes := decode.TermCauses()
	n := 0
	for _, f := range g.truth.FPDUs {
		if f.Term == nil {
			continue
		}
		tc := causes[f.Conn]
		tm := f.Term
		if tm.Layer != tc.Layer || tm.EType != tc.EType || tm.Code != tc.Code || f.QN != decode.QNTerminate || f.MSN != 1 || f.Dir != "r2i" {
			t.Errorf("conn %d: Terminate %+v for cause %v", f.Conn, tm, tc)
		}
		var blamed *FPDUTruth
		for j := range g.truth.FPDUs {
			b := &g.truth.FPDUs[j]
			if b.Conn == f.Conn && b.Dir == "i2r" && b.Index == tm.BlamedFPDU {
				blamed = b
			}
		}
		wantD := tc.Layer == decode.TermLayerDDP || tc.Layer == decode.TermLayerRDMAP && tc.EType != 0
		wantR := tc.Layer == decode.TermLayerRDMAP && tc.EType == 1
		if tm.D != wantD || tm.M != wantD || tm.R != wantR {
			t.Errorf("conn %d (%v): M %v D %v R %v", f.Conn, tc, tm.M, tm.D, tm.R)
		}
		if wantD {
			if blamed == nil || tm.DDP == nil || tm.SegLen != uint16(blamed.ULPDULength) || tm.DDP.Opcode != blamed.Opcode ||
				tm.DDP.Tagged != blamed.Tagged || tm.DDP.MSN != blamed.MSN || tm.DDP.STag != blamed.STag || tm.DDP.TO != blamed.TO {
				t.Errorf("conn %d (%v): copied header %+v, blamed %+v", f.Conn, tc, tm.DDP, blamed)
			}
		}
		if wantR && (tm.RDMA == nil || blamed.Read == nil || *tm.RDMA != *blamed.Read) {
			t.Errorf("conn %d (%v): copied Read Request %+v, blamed %+v", f.Conn, tc, tm.RDMA, blamed)
		}
		n++
	}
	// Where the wire can show the cause, the blamed message has the fault.
	fault := map[[3]uint8]finding.Code{
		{0, 1, 0}: finding.RDMAPSTagZero, {0, 1, 4}: finding.RDMAPReadTOWrap, {0, 2, 5}: finding.RDMAPRVInvalid,
		{1, 1, 0}: finding.DDPSTagZero, {1, 1, 3}: finding.DDPTOWrap, {1, 1, 4}: finding.DDPDVInvalid,
		{1, 2, 1}: finding.DDPQNInvalid, {1, 2, 2}: finding.RDMAPNoReceivePosted, {1, 2, 3}: finding.DDPMSNGap, {1, 2, 4}: finding.DDPMOGap, {1, 2, 6}: finding.DDPDVInvalid,
	}
	for i, tc := range causes {
		want := fault[[3]uint8{tc.Layer, tc.EType, tc.Code}]
		var got []finding.Code
		for _, f := range g.truth.Findings {
			if f.Conn == i && f.Code != finding.RDMAPTerminate {
				got = append(got, f.Code)
			}
		}
		if (want == 0 && len(got) > 0) || (want != 0 && (len(got) != 1 || got[0] != want)) {
			t.Errorf("conn %d (%v): findings %v, want %v", i, tc, got, want)
		}
	}
	if n != len(causes) || findingCodes(g.truth)[finding.RDMAPTerminate] != n {
		t.Errorf("%d Terminates, %d causes", n, len(causes))
	}
}

// Read Requests beyond the responder's IRD from the MPA exchange raise
// rdmap.ird_exceeded; answered ones do not count.
func TestIRDExceeded(t *testing.T) {
	sc := &Scenario{Connections: []Connection{{MPA: MPA{Rev: ptr(2), ReplyIRD: ptr[uint16](2), IRD: ptr[uint16](0)}, Ops: []Op{
		{Op: OpNameRead, Size: 100, Repeat: 4}, // answered: never more than one outstanding
		{Op: OpNameRead, Size: 100, Unanswered: true, Repeat: 3},
		{Op: OpNameRead, Dir: "r2i", Size: 100}, // the Initiator announced IRD 0
	}}}}
	g := generate(t, sc, pcap.FormatPcap)
	checkTruth(t, g)
	var got []string
	for _, f := range g.truth.Findings {
		if f.Code == finding.RDMAPIRDExceeded {
			got = append(got, fmt.Sprintf("%s#%d", f.Dir, f.FPDU))
		}
	}
	// i2r FPDUs: 4 requests (1..4), then unanswered 5, 6, 7: the third is
	// the one over IRD 2. r2i: 4 responses, then the server's request.
	if fmt.Sprint(got) != "[i2r#7 r2i#5]" {
		t.Errorf("ird_exceeded at %v", got)
	}
}

// The streaming truth writer's hand-made FPDU encoding is json.Marshal's,
// and the whole file decodes to the Truth a Collector gathers.
func TestJSONTruthWriter(t *testing.T) {
	for _, name := range []string{"mixed", "hostile", "read-heavy", "every-terminate"} {
		sc := mustBuiltin(t, name, Params{Seed: 1, Count: 2})
		g := generate(t, sc, pcap.FormatPcap)
		for i := range g.truth.FPDUs {
			f := &g.truth.FPDUs[i]
			want, _ := json.Marshal(f)
			if got, ok := appendFPDUJSON(nil, f); ok && string(got) != string(want) {
				t.Fatalf("%s FPDU %d:\n got %s\nwant %s", name, i, got, want)
			}
		}
		var buf bytes.Buffer
		tw, err := NewJSONTruthWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Run(sc, discard{}, &Options{Truth: tw}); err != nil {
			t.Fatal(err)
		}
		tw.Close()
		got, err := DecodeTruth(&buf)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, buf.String())
		}
		if jsonOf(got) != jsonOf(g.truth) {
			t.Errorf("%s: streamed truth differs from the collected one", name)
		}
	}
}

// Explicit impairments whose target never comes are reported, not lost
// silently.
func TestUnapplied(t *testing.T) {
	sc := &Scenario{Connections: []Connection{{Ops: []Op{{Op: OpNameSend, Size: 10}}}},
		Impairments: []Impairment{{Kind: ImpDrop, Segment: 50}, {Kind: ImpCorruptCRC, FPDU: 9}, {Kind: ImpWrongMSN, FPDU: 1, Dir: "r2i"}, {Kind: ImpDrop, Segment: 2}}}
	st, err := Run(sc, discard{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Unapplied) != 3 || !strings.Contains(st.Unapplied[0], "impairment 0 (drop)") || !strings.Contains(st.Unapplied[2], "r2i") {
		t.Errorf("unapplied %q", st.Unapplied)
	}
}
