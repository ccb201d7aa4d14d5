package gen

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"sort"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/pcap"
)

// The checks in this file read a generated capture back with iwkit's own
// pcap reader and decoders, independently of the generator's bookkeeping,
// and compare what is on the wire with the truth.

// generated is one run: the capture octets and the truth.
type generated struct {
	pcap  []byte
	truth *Truth
	stats Stats
}

func generate(t testing.TB, sc *Scenario, format pcap.Format) *generated {
	t.Helper()
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, format, layers.LinkTypeEthernet, 0)
	if err != nil {
		t.Fatal(err)
	}
	var col Collector
	st, err := Run(sc, w, &Options{Truth: &col})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return &generated{pcap: buf.Bytes(), truth: &col.T, stats: st}
}

// capSeg is one captured TCP segment.
type capSeg struct {
	frame      int
	seq, ack   uint32
	flags      uint8
	payload    []byte // as captured
	payloadLen int    // as on the wire
	capLen     int
	origLen    int
}

// dirCapture is what the capture holds of one direction of a connection.
type dirCapture struct {
	conn, dir int
	isn       uint32
	segs      []capSeg // in frame order
}

// capture is a generated capture taken apart.
type capture struct {
	frames int
	dirs   map[[2]int]*dirCapture
	byNum  map[int]*capSeg
	conn   map[int]int // frame -> connection
}

func dirOf(s string) int {
	if s == "r2i" {
		return 1
	}
	return 0
}

// readCapture decodes every frame and sorts the TCP segments by connection
// and direction as the truth names them. It also checks the IPv4 and TCP
// checksums of every complete frame.
func readCapture(t testing.TB, g *generated) *capture {
	t.Helper()
	r, err := pcap.NewReader(bytes.NewReader(g.pcap))
	if err != nil {
		t.Fatal(err)
	}
	type key struct{ src, dst netip.AddrPort }
	flows := map[key][2]int{}
	c := &capture{dirs: map[[2]int]*dirCapture{}, byNum: map[int]*capSeg{}, conn: map[int]int{}}
	for _, ct := range g.truth.Connections {
		cl, sv := netip.MustParseAddrPort(ct.Client), netip.MustParseAddrPort(ct.Server)
		flows[key{cl, sv}] = [2]int{ct.Index, 0}
		flows[key{sv, cl}] = [2]int{ct.Index, 1}
		c.dirs[[2]int{ct.Index, 0}] = &dirCapture{conn: ct.Index, dir: 0, isn: ct.ClientISN}
		c.dirs[[2]int{ct.Index, 1}] = &dirCapture{conn: ct.Index, dir: 1, isn: ct.ServerISN}
	}
	var f pcap.Frame
	var p pcap.Packet
	for {
		err := r.Next(&f)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("frame %d: %v", f.Number, err)
		}
		c.frames++
		if err := pcap.DecodeTCP(f.LinkType, f.Data, &p); err != nil {
			t.Fatalf("frame %d: %v", f.Number, err)
		}
		if !f.Truncated() {
			if msg := checksums(f.Data); msg != "" {
				t.Errorf("frame %d: %s", f.Number, msg)
			}
		}
		k := key{netip.AddrPortFrom(p.Src, p.SrcPort), netip.AddrPortFrom(p.Dst, p.DstPort)}
		cd, ok := flows[k]
		if !ok {
			t.Fatalf("frame %d: flow %v not in the truth", f.Number, k)
		}
		d := c.dirs[cd]
		d.segs = append(d.segs, capSeg{frame: f.Number, seq: p.Seq, ack: p.Ack, flags: p.Flags,
			payload: append([]byte(nil), p.Payload...), payloadLen: p.PayloadLen, capLen: f.CapLen, origLen: f.OrigLen})
		c.byNum[f.Number] = &d.segs[len(d.segs)-1]
		c.conn[f.Number] = cd[0]
	}
	// byNum pointers into slices that grew are stale: rebuild.
	for _, d := range c.dirs {
		for i := range d.segs {
			c.byNum[d.segs[i].frame] = &d.segs[i]
		}
	}
	if c.frames != g.truth.Frames {
		t.Errorf("capture has %d frames, truth says %d", c.frames, g.truth.Frames)
	}
	return c
}

// checksums verifies the IPv4 header and TCP checksums of an Ethernet
// frame with a plain 16-bit one's complement sum (RFC 1071), independent
// of the generator's 64-bit one.
func checksums(b []byte) string {
	off := 12
	et := binary.BigEndian.Uint16(b[off:])
	off += 2
	if et == 0x8100 {
		et = binary.BigEndian.Uint16(b[off+2:])
		off += 4
	}
	sum16 := func(parts ...[]byte) uint16 {
		var s uint32
		for _, p := range parts {
			for i := 0; i+1 < len(p); i += 2 {
				s += uint32(p[i])<<8 | uint32(p[i+1])
			}
			if len(p)%2 == 1 {
				s += uint32(p[len(p)-1]) << 8
			}
		}
		for s>>16 != 0 {
			s = s&0xffff + s>>16
		}
		return uint16(s)
	}
	var pseudo []byte
	var tcp []byte
	switch et {
	case 0x0800:
		ip := b[off:]
		if sum16(ip[:20]) != 0xffff {
			return "bad IPv4 header checksum"
		}
		tl := int(binary.BigEndian.Uint16(ip[2:]))
		tcp = ip[20:tl]
		pseudo = append(append([]byte{}, ip[12:20]...), 0, 6, byte(len(tcp)>>8), byte(len(tcp)))
	case 0x86dd:
		ip := b[off:]
		pl := int(binary.BigEndian.Uint16(ip[4:]))
		tcp = ip[40 : 40+pl]
		pseudo = append(append([]byte{}, ip[8:40]...), 0, 0, byte(len(tcp)>>8), byte(len(tcp)), 0, 0, 0, 6)
	default:
		return fmt.Sprintf("ethertype %#x", et)
	}
	if sum16(pseudo, tcp) != 0xffff {
		return "bad TCP checksum"
	}
	return ""
}

// bytesAt assembles the n octets of the direction's stream from seq on out
// of the captured segments, the first copy of each octet winning (as a
// receiver keeps the first). ok is false when some octet was not captured;
// got counts the captured ones.
func (d *dirCapture) bytesAt(seq uint32, n int) (out []byte, ok bool, got int) {
	out = make([]byte, n)
	have := make([]bool, n)
	for _, s := range d.segs {
		if len(s.payload) == 0 {
			continue
		}
		// Offsets relative to the wanted start, wrap-safe.
		rel := int64(int32(s.seq - seq))
		for i := range s.payload {
			j := rel + int64(i)
			if j < 0 || j >= int64(n) || have[j] {
				continue
			}
			out[j], have[j] = s.payload[i], true
			got++
		}
	}
	return out, got == n, got
}

// framesOf returns the lowest and highest frame holding captured octets of
// [seq, seq+n).
func (d *dirCapture) framesOf(seq uint32, n int) (lo, hi int) {
	for _, s := range d.segs {
		if len(s.payload) == 0 {
			continue
		}
		rel := int64(int32(s.seq - seq))
		if rel < int64(n) && rel+int64(len(s.payload)) > 0 {
			if lo == 0 || s.frame < lo {
				lo = s.frame
			}
			hi = max(hi, s.frame)
		}
	}
	return
}

// checkTruth compares the truth with the capture: every FPDU decoded from
// the capture's octets has the recorded header values, frames, markers and
// CRC; the FPDUs tile each direction's stream; every impairment is visible
// as recorded; findings point at the right frames.
func checkTruth(t *testing.T, g *generated) *capture {
	t.Helper()
	c := readCapture(t, g)
	tr := g.truth
	if int64(len(tr.FPDUs)) != g.stats.FPDUs {
		t.Errorf("truth has %d FPDUs, stats %d", len(tr.FPDUs), g.stats.FPDUs)
	}
	byDir := map[[2]int][]*FPDUTruth{}
	for i := range tr.FPDUs {
		f := &tr.FPDUs[i]
		k := [2]int{f.Conn, dirOf(f.Dir)}
		byDir[k] = append(byDir[k], f)
	}
	badCRC := map[[3]int]bool{}
	for _, im := range tr.Impairments {
		if im.Kind == ImpCorruptCRC {
			badCRC[[3]int{im.Conn, dirOf(im.Dir), im.FPDU}] = true
		}
	}
	for _, f := range tr.FPDUs {
		if tr.Connections[f.Conn].CRC && f.CRCGood == badCRC[[3]int{f.Conn, dirOf(f.Dir), f.Index}] {
			t.Errorf("conn %d %s FPDU %d: CRC good=%v, corrupted=%v", f.Conn, f.Dir, f.Index, f.CRCGood, !f.CRCGood)
		}
	}
	for k, fl := range byDir {
		sort.Slice(fl, func(i, j int) bool { return fl[i].Index < fl[j].Index })
		ct := &tr.Connections[k[0]]
		s0 := ct.FPDUSeqI2R
		if k[1] == 1 {
			s0 = ct.FPDUSeqR2I
		}
		for i, f := range fl {
			if f.Index != i+1 {
				t.Fatalf("conn %d %s: FPDU index %d at position %d", k[0], f.Dir, f.Index, i)
			}
			if i == 0 && f.Seq != s0 {
				t.Errorf("conn %d %s: first FPDU at seq %d, marker origin %d", k[0], f.Dir, f.Seq, s0)
			}
			if i > 0 && fl[i-1].End != f.Seq {
				t.Errorf("conn %d %s FPDU %d: starts at %d, previous ends at %d", k[0], f.Dir, f.Index, f.Seq, fl[i-1].End)
			}
			checkFPDU(t, c.dirs[k], ct, f)
		}
	}
	checkImpairments(t, g, c, byDir)
	checkFindings(t, g, c, byDir)
	return c
}

func checkFPDU(t *testing.T, d *dirCapture, ct *ConnTruth, f *FPDUTruth) {
	t.Helper()
	n := int(f.End - f.Seq)
	where := fmt.Sprintf("conn %d %s FPDU %d (seq %d)", f.Conn, f.Dir, f.Index, f.Seq)
	wire, ok, got := d.bytesAt(f.Seq, n)
	switch {
	case f.Missing && got != 0:
		t.Errorf("%s: truth says missing, capture has %d of %d octets", where, got, n)
		return
	case f.Partial && (ok || got == 0):
		t.Errorf("%s: truth says partial, capture has %d of %d octets", where, got, n)
		return
	case !f.Missing && !f.Partial && !ok:
		t.Errorf("%s: capture has %d of %d octets", where, got, n)
		return
	case f.Missing || f.Partial:
		return
	}
	lo, hi := d.framesOf(f.Seq, n)
	if lo != f.FirstFrame || hi != f.LastFrame {
		t.Errorf("%s: frames %d..%d in the capture, truth %d..%d", where, lo, hi, f.FirstFrame, f.LastFrame)
	}
	markers, s0 := ct.MarkersI2R, ct.FPDUSeqI2R
	if f.Dir == "r2i" {
		markers, s0 = ct.MarkersR2I, ct.FPDUSeqR2I
	}
	var fp decode.FPDU
	var crc uint32
	var marks []decode.MarkerAt
	if markers {
		var used int
		var err error
		used, crc, marks, err = decode.ParseFPDUWithMarkers(wire, f.Seq, s0, make([]byte, 0, 70000), &fp, nil)
		if err != nil || used != n {
			t.Errorf("%s: ParseFPDUWithMarkers: %d of %d octets, %v", where, used, n, err)
			return
		}
	} else {
		used, err := decode.ParseFPDU(wire, &fp)
		if err != nil || used != n {
			t.Errorf("%s: ParseFPDU: %d of %d octets, %v", where, used, n, err)
			return
		}
		crc = fp.ComputedCRC()
	}
	if len(marks) != len(f.Markers) {
		t.Errorf("%s: %d markers on the wire, truth %d", where, len(marks), len(f.Markers))
	} else {
		for i, m := range marks {
			if m.Pos != f.Markers[i].Seq || m.Marker.FPDUPTR != f.Markers[i].FPDUPTR || m.Marker.FPDUPTR != decode.ExpectedFPDUPTR(m.Pos, f.Seq, s0) {
				t.Errorf("%s: marker %d at %d FPDUPTR %d, truth %+v", where, i, m.Pos, m.Marker.FPDUPTR, f.Markers[i])
			}
		}
	}
	if markers && len(marks) == 0 && n > decode.MarkerSpacing {
		t.Errorf("%s: %d octets with markers negotiated and no marker", where, n)
	}
	if int(fp.ULPDULength) != f.ULPDULength || fp.CRC != f.CRC || (fp.CRC == crc) != f.CRCGood {
		t.Errorf("%s: ULPDU_Length %d CRC %#x (computed %#x), truth %d %#x good=%v", where, fp.ULPDULength, fp.CRC, crc, f.ULPDULength, f.CRC, f.CRCGood)
	}
	var s decode.Segment
	if err := decode.ParseSegment(fp.ULPDU, &s); err != nil {
		t.Errorf("%s: ParseSegment: %v", where, err)
		return
	}
	h := &s.DDP
	want := fmt.Sprintf("op %d T%v L%v dv %d rv %d", f.Opcode, f.Tagged, f.Last, f.DV, f.RV)
	gotS := fmt.Sprintf("op %d T%v L%v dv %d rv %d", s.RDMAP.Opcode, h.Tagged, h.Last, h.DV, s.RDMAP.RV)
	if h.Tagged {
		want += fmt.Sprintf(" stag %#x to %#x", f.STag, f.TO)
		gotS += fmt.Sprintf(" stag %#x to %#x", h.STag, h.TO)
	} else {
		want += fmt.Sprintf(" qn %d msn %d mo %d inv %#x", f.QN, f.MSN, f.MO, f.InvSTag)
		inv := uint32(0)
		if s.RDMAP.Opcode == decode.OpSendInv || s.RDMAP.Opcode == decode.OpSendSEInv {
			inv = s.InvalidateSTag
		}
		gotS += fmt.Sprintf(" qn %d msn %d mo %d inv %#x", h.QN, h.MSN, h.MO, inv)
	}
	want += fmt.Sprintf(" pay %d", f.PayloadLen)
	gotS += fmt.Sprintf(" pay %d", len(s.Payload))
	switch s.RDMAP.Opcode {
	case decode.OpReadRequest:
		want += fmt.Sprintf(" %+v", *f.Read)
		r := s.ReadRequest
		gotS += fmt.Sprintf(" %+v", ReadTruth{SinkSTag: r.SinkSTag, SinkTO: r.SinkTO, Size: r.Size, SrcSTag: r.SrcSTag, SrcTO: r.SrcTO})
	case decode.OpTerminate:
		tm := &s.Terminate
		want += fmt.Sprintf(" term %d/%d/%d m%v d%v r%v len %d", f.Term.Layer, f.Term.EType, f.Term.Code, f.Term.M, f.Term.D, f.Term.R, f.Term.SegLen)
		gotS += fmt.Sprintf(" term %d/%d/%d m%v d%v r%v len %d", tm.Layer, tm.EType, tm.Code, tm.M, tm.D, tm.R, tm.DDPSegmentLength)
		if f.Term.DDP != nil {
			dd := f.Term.DDP
			want += fmt.Sprintf(" ddp T%v op %d stag %#x to %#x qn %d msn %d mo %d", dd.Tagged, dd.Opcode, dd.STag, dd.TO, dd.QN, dd.MSN, dd.MO)
			td := tm.TermDDP
			gotS += fmt.Sprintf(" ddp T%v op %d stag %#x to %#x qn %d msn %d mo %d", td.Tagged, td.RsvdULP&0xF, td.STag, td.TO, td.QN, td.MSN, td.MO)
		}
	case decode.OpAtomicRequest:
		a := s.AtomicRequest
		want += fmt.Sprintf(" %+v", *f.AtomicReq)
		gotS += fmt.Sprintf(" %+v", AtomicReqTruth{AOpCode: uint8(a.AOpCode), RequestID: a.RequestID, RemoteSTag: a.RemoteSTag, RemoteTO: a.RemoteTO,
			AddSwapData: a.AddSwapData, AddSwapMask: a.AddSwapMask, CompareData: a.CompareData, CompareMask: a.CompareMask})
	case decode.OpAtomicResponse:
		want += fmt.Sprintf(" %+v", *f.AtomicResp)
		gotS += fmt.Sprintf(" %+v", AtomicRespTruth{OrigRequestID: s.AtomicResponse.OrigRequestID, OrigValue: s.AtomicResponse.OrigValue})
	case decode.OpImmData, decode.OpImmDataSE:
		want += fmt.Sprintf(" imm %#x", *f.Imm)
		gotS += fmt.Sprintf(" imm %#x", binary.BigEndian.Uint64(s.ImmData[:]))
	}
	if want != gotS {
		t.Errorf("%s:\n  wire  %s\n  truth %s", where, gotS, want)
	}
}

// checkImpairments verifies each recorded impairment against the capture.
func checkImpairments(t *testing.T, g *generated, c *capture, byDir map[[2]int][]*FPDUTruth) {
	t.Helper()
	fpdu := func(conn int, dir string, idx int) *FPDUTruth {
		for _, f := range byDir[[2]int{conn, dirOf(dir)}] {
			if f.Index == idx {
				return f
			}
		}
		return nil
	}
	for _, im := range g.truth.Impairments {
		where := fmt.Sprintf("impairment %d %s conn %d %s", im.ID, im.Kind, im.Conn, im.Dir)
		d := c.dirs[[2]int{im.Conn, dirOf(im.Dir)}]
		// copies are the captured segments with the impaired sequence range.
		var copies []capSeg
		for _, s := range d.segs {
			if s.seq == im.Seq && s.payloadLen == im.Len && im.Len > 0 {
				copies = append(copies, s)
			}
		}
		frames := func() []int {
			var fr []int
			for _, s := range copies {
				fr = append(fr, s.frame)
			}
			return fr
		}
		switch im.Kind {
		case ImpDrop, ImpReorder, ImpDuplicate, ImpRetransmit, ImpRetransmitDiff, ImpSnaplen:
			if fmt.Sprint(frames()) != fmt.Sprint(im.Frames) && !(len(im.Frames) == 0 && len(copies) == 0) {
				t.Errorf("%s: segment seq %d len %d in frames %v, truth %v", where, im.Seq, im.Len, frames(), im.Frames)
			}
		}
		switch im.Kind {
		case ImpDrop:
			// Missed by the capture: no frame has any of its octets.
			if _, _, got := d.bytesAt(im.Seq, im.Len); got != 0 && !resent(im) {
				t.Errorf("%s: %d octets of the dropped segment captured", where, got)
			}
			if resent(im) && len(copies) != 1 {
				t.Errorf("%s: lost and resent, %d copies captured", where, len(copies))
			}
			if resent(im) && len(copies) == 1 && !laterSeqBefore(d, copies[0]) && !strings.Contains(im.Detail, "went in order") {
				t.Errorf("%s: resent segment is not out of order", where)
			}
		case ImpReorder:
			if strings.Contains(im.Detail, "went in order") {
				if len(copies) != 1 || laterSeqBefore(d, copies[0]) {
					t.Errorf("%s: in order by the truth, %d copies", where, len(copies))
				}
				continue
			}
			if len(copies) != 1 || !laterSeqBefore(d, copies[0]) {
				t.Errorf("%s: %d copies, out of order=%v", where, len(copies), len(copies) == 1 && laterSeqBefore(d, copies[0]))
			}
		case ImpDuplicate, ImpRetransmit, ImpRetransmitDiff:
			if len(copies) != 2 {
				t.Errorf("%s: %d copies", where, len(copies))
				continue
			}
			diff := 0
			for i := range copies[0].payload {
				if copies[0].payload[i] != copies[1].payload[i] {
					diff++
				}
			}
			if want := b2i(im.Kind == ImpRetransmitDiff); diff != want {
				t.Errorf("%s: copies differ in %d octets, want %d", where, diff, want)
			}
			if im.Kind == ImpDuplicate && copies[1].frame != copies[0].frame+1 && !strings.Contains(im.Detail, "withheld") {
				t.Errorf("%s: duplicate in frames %d and %d", where, copies[0].frame, copies[1].frame)
			}
		case ImpSnaplen:
			if len(copies) != 1 || copies[0].capLen != int(im.New) || copies[0].origLen != int(im.Old) {
				t.Errorf("%s: %d copies, caplen/origlen %v, truth %d/%d", where, len(copies), copies, im.New, im.Old)
			}
		case ImpMidstream:
			for _, dd := range []*dirCapture{c.dirs[[2]int{im.Conn, 0}], c.dirs[[2]int{im.Conn, 1}]} {
				for _, s := range dd.segs {
					if s.flags&flagSYN != 0 || bytes.Contains(s.payload, []byte(decode.MPAKeyReq)) || bytes.Contains(s.payload, []byte(decode.MPAKeyRep)) {
						t.Errorf("%s: frame %d holds a SYN or an MPA frame", where, s.frame)
					}
				}
			}
		case ImpCorruptCRC, ImpWrongMSN, ImpWrongQN, ImpBadDDPVersion, ImpBadRDMAPVersion, ImpMOOutOfOrder, ImpUnknownSTag, ImpReadResponseTooLong:
			f := fpdu(im.Conn, im.Dir, im.FPDU)
			if f == nil {
				t.Errorf("%s: no FPDU %d", where, im.FPDU)
				continue
			}
			if f.Seq != im.Seq || int(f.End-f.Seq) != im.Len {
				t.Errorf("%s: FPDU %d at %d len %d, impairment says %d len %d", where, f.Index, f.Seq, f.End-f.Seq, im.Seq, im.Len)
			}
			found := false
			for _, id := range f.Impairments {
				found = found || id == im.ID
			}
			if !found {
				t.Errorf("%s: FPDU %d does not list it", where, f.Index)
			}
			// checkFPDU compared the FPDU with the wire; here the values
			// must be the impaired ones.
			var gotV uint64
			switch im.Kind {
			case ImpCorruptCRC:
				gotV = uint64(f.CRC)
				if f.CRCGood {
					t.Errorf("%s: CRC still good", where)
				}
			case ImpWrongMSN:
				gotV = uint64(f.MSN)
			case ImpWrongQN:
				gotV = uint64(f.QN)
			case ImpBadDDPVersion:
				gotV = uint64(f.DV)
			case ImpBadRDMAPVersion:
				gotV = uint64(f.RV)
			case ImpMOOutOfOrder:
				gotV = uint64(f.MO)
			case ImpUnknownSTag:
				gotV = uint64(f.STag)
			case ImpReadResponseTooLong:
				total := 0
				for _, x := range byDir[[2]int{im.Conn, dirOf(im.Dir)}] {
					if x.Index >= f.Index && x.Opcode == uint8(decode.OpReadResponse) {
						total += x.PayloadLen
						if x.Last {
							break
						}
					}
				}
				gotV = uint64(total)
			}
			if gotV != im.New {
				t.Errorf("%s: FPDU %d has %s %d, impairment says %d", where, f.Index, im.Field, gotV, im.New)
			}
		}
	}
}

func resent(im ImpairmentTruth) bool { return im.Kind == ImpDrop && len(im.Frames) > 0 }

// laterSeqBefore reports whether a segment with a higher sequence number
// was captured before s in its direction.
func laterSeqBefore(d *dirCapture, s capSeg) bool {
	for _, x := range d.segs {
		if x.frame < s.frame && len(x.payload) > 0 && int32(x.seq-s.seq) > 0 {
			return true
		}
	}
	return false
}

// checkFindings verifies that findings name frames of their connection and,
// for FPDU findings, the frame that completes the FPDU.
func checkFindings(t *testing.T, g *generated, c *capture, byDir map[[2]int][]*FPDUTruth) {
	t.Helper()
	for _, f := range g.truth.Findings {
		where := fmt.Sprintf("finding %s conn %d %s frame %d", f.Code, f.Conn, f.Dir, f.Frame)
		if f.Frame != 0 && c.conn[f.Frame] != f.Conn {
			t.Errorf("%s: frame belongs to connection %d", where, c.conn[f.Frame])
		}
		if f.FPDU > 0 {
			var ft *FPDUTruth
			for _, x := range byDir[[2]int{f.Conn, dirOf(f.Dir)}] {
				if x.Index == f.FPDU {
					ft = x
				}
			}
			if ft == nil || ft.LastFrame != f.Frame || ft.Seq != f.Seq {
				t.Errorf("%s: FPDU %d not at that frame (%+v)", where, f.FPDU, ft)
			}
		}
		if f.Impairment != 0 {
			ok := false
			for _, im := range g.truth.Impairments {
				ok = ok || im.ID == f.Impairment
			}
			if !ok {
				t.Errorf("%s: impairment %d not recorded", where, f.Impairment)
			}
		}
	}
}

// findingCodes counts the findings by code.
func findingCodes(tr *Truth) map[finding.Code]int {
	m := map[finding.Code]int{}
	for _, f := range tr.Findings {
		m[f.Code]++
	}
	return m
}
