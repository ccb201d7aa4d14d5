package reassembly

import (
	"encoding/binary"
	"math/bits"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
)

// This file is the MPA framer of one direction: it finds the MPA
// Request/Reply (RFC 5044 §7.1), then delineates FPDUs by ULPDU_Length
// (§4.1), with markers stripped (§4.3) and CRC32c checked (§4.4) where the
// direction uses them. FPDUs whole inside one delivered segment are handed
// out aliasing it; the octets of an FPDU that spans segments are gathered in
// acc. resync.go finds boundaries when the framer has none.

type state uint8

const (
	stDetect state = iota // no MPA seen in this direction: key scan and FPDU-chain search
	stFrame               // inside an MPA Request/Reply
	stFPDU                // in sync: pos is an FPDU boundary (or acc[0] is)
	stHunt                // iWARP, boundary unknown: looking for it
	stULP                 // after a rejecting Reply: the ULP's streaming mode
	stOff                 // not iWARP: payload ignored
)

// segRec marks where a delivered segment starts in acc.
type segRec struct {
	at    int
	frame int
	ts    time.Time
	// ack/hasAck: the segment's acknowledgment number and ACK flag.
	ack    uint32
	hasAck bool
}

type framer struct {
	fl *flow
	d  Dir
	st state

	// pos/off: sequence number and stream offset of acc[0], or of the next
	// octet when acc is empty. In stFPDU with acc empty it is an FPDU
	// boundary.
	pos uint32
	off uint64

	acc  []byte   // pooled: a partial FPDU (stFPDU), an MPA frame, or the search window
	segs []segRec // segments in acc
	// headCut: segs[0] started before acc[0] (its head was dropped), so
	// acc[0] is no segment start.
	headCut bool
	need    int // stFPDU: wire octets of the FPDU in acc; 0 while its header is incomplete
	skip    int // stFPDU: octets still to pass of an FPDU already reported partial

	// Boundary search (resync.go).
	anchor   bool       // acc[0] is a known boundary (start of Full Operation Phase)
	align    int        // FPDU boundaries are at sequence numbers ≡ align (mod 4); -1 unknown
	scanned  int        // acc offsets below this were examined by the offset scan
	live     []liveCand // offsets still undecided (need more octets)
	scanHyp  hyp        // the hypothesis scanned and live belong to
	keyScan  int        // acc offsets below this hold no MPA key start
	examined int        // stDetect: octets examined (against Config.DetectLimit)
	// phases' last answer, for acc at phOff and phPos holding phLen octets
	// of the ones it reads (phN valid when phOK).
	phOK       bool
	phOff      uint64
	phPos      uint32
	phLen, phN int
	ph         [8]uint32
	// promising: the last search left a candidate with a whole valid FPDU
	// waiting for more octets.
	promising bool
	toldULP   bool

	// A skipped region not reported yet.
	skipSeq uint32
	skipOff uint64
	skipN   uint64

	avg int // mean FPDU wire size, to estimate FPDUs lost in a gap
	ver int // DV<<2|RV of the direction's FPDUs; -1 before the first
	// s0Known: Params.S0 holds the direction's marker phase (its MPA frame
	// was seen, or the phase was inferred).
	s0Known bool
	// snapRun counts consecutive frames cut by the snaplen whose FPDUs end
	// exactly where the frame did (see snapAligned).
	snapRun int
	// probation: the last FPDU was odd and the link after it could not be
	// checked (see emitFPDU); swapTold: MPACRCByteOrder was reported.
	probation bool
	oddVer    int // the version pair of the last odd FPDU
	swapTold  bool
	// badPos is where the framing was last found lost: never a candidate.
	badPos uint32
	hasBad bool
}

func (f *framer) init(fl *flow, d Dir) {
	f.release()
	segs, live := f.segs[:0], f.live[:0]
	*f = framer{fl: fl, d: d, st: stDetect, align: -1, ver: -1, segs: segs, live: live}
}

// reset sets the position of the first octet the stream delivers.
func (f *framer) reset(seq uint32) {
	f.pos, f.off = seq, 0
}

// release returns the buffers to the pool.
func (f *framer) release() {
	if f.fl != nil && f.acc != nil {
		f.fl.a.pool.put(f.acc)
	}
	f.acc = nil
	f.segs = f.segs[:0]
	f.need, f.skip = 0, 0
}

func (f *framer) params() *Params { return &f.fl.c.Params[f.d] }

// data takes in-order octets of one segment: frame and ts are the segment's
// frame number and capture time, ack and hasAck its acknowledgment number and
// ACK flag.
func (f *framer) data(b []byte, frame int, ts time.Time, ack uint32, hasAck bool) {
	if len(b) == 0 {
		return
	}
	switch f.st {
	case stFPDU:
		f.fpduData(b, frame, ts, ack, hasAck)
	case stDetect, stHunt:
		f.huntData(b, frame, ts, ack, hasAck)
	case stFrame:
		f.frameData(b, frame, ts, ack, hasAck)
	case stULP:
		f.pos += uint32(len(b))
		f.off += uint64(len(b))
		if !f.toldULP {
			f.toldULP = true
			f.finding(finding.MPADataAfterReject, f.pos-uint32(len(b)), len(b), f.off-uint64(len(b)), frame)
		}
	case stOff:
		f.pos += uint32(len(b))
		f.off += uint64(len(b))
	}
}

// appendAcc appends b to acc, recording the segment; false when the memory
// budget has no room.
func (f *framer) appendAcc(b []byte, frame int, ts time.Time, ack uint32, hasAck bool) bool {
	if len(b) == 0 {
		return true
	}
	if n := len(f.acc) + len(b); n > cap(f.acc) {
		want := max(n, 2*cap(f.acc), 2048)
		if f.st == stFPDU && f.need > 0 {
			// Grow towards the FPDU's size, not to it at once: 100,000
			// connections that each hold the first segment of a 64 KiB
			// FPDU would pin 64 KiB each.
			want = max(n, min(want, f.need))
		}
		nb := f.fl.a.pool.grow(f.acc, want)
		if nb == nil && want > n {
			nb = f.fl.a.pool.grow(f.acc, n)
		}
		if nb == nil {
			return false
		}
		f.acc = nb
	}
	if len(f.acc) == 0 {
		f.headCut = false
	}
	f.segs = append(f.segs, segRec{at: len(f.acc), frame: frame, ts: ts, ack: ack, hasAck: hasAck})
	f.acc = append(f.acc, b...)
	return true
}

// frameAt returns the frame that delivered acc[i].
func (f *framer) frameAt(i int) (int, time.Time) {
	if r := f.segAt(i); r != nil {
		return r.frame, r.ts
	}
	return 0, time.Time{}
}

// ackAt returns the acknowledgment number (and whether the ACK flag was set)
// of the segment that delivered acc[i].
func (f *framer) ackAt(i int) (uint32, bool) {
	if r := f.segAt(i); r != nil {
		return r.ack, r.hasAck
	}
	return 0, false
}

// segAt returns the record of the segment that delivered acc[i] (nil when
// acc holds none).
func (f *framer) segAt(i int) *segRec {
	lo, hi := 0, len(f.segs)-1
	for lo < hi {
		m := (lo + hi + 1) / 2
		if f.segs[m].at <= i {
			lo = m
		} else {
			hi = m - 1
		}
	}
	if len(f.segs) == 0 {
		return nil
	}
	return &f.segs[lo]
}

// dropFront removes the first k octets of acc.
func (f *framer) dropFront(k int) {
	if k <= 0 {
		return
	}
	if k >= len(f.acc) {
		k = len(f.acc)
		f.acc = f.acc[:0]
		f.segs = f.segs[:0]
	} else {
		n := copy(f.acc, f.acc[k:])
		f.acc = f.acc[:n]
		i := 0
		for i+1 < len(f.segs) && f.segs[i+1].at <= k {
			i++
		}
		m := copy(f.segs, f.segs[i:])
		f.segs = f.segs[:m]
		f.headCut = m > 0 && f.segs[0].at < k
		for j := range f.segs {
			f.segs[j].at = max(f.segs[j].at-k, 0)
		}
	}
	f.pos += uint32(k)
	f.off += uint64(k)
	f.scanned = max(f.scanned-k, 0)
	f.keyScan = max(f.keyScan-k, 0)
	w := 0
	for _, c := range f.live {
		if int(c.o) >= k {
			c.o -= int32(k)
			f.live[w] = c
			w++
		}
	}
	f.live = f.live[:w]
}

// skipFront drops the first k octets of acc as skipped (reported later by
// flushSkip).
func (f *framer) skipFront(k int) {
	if k <= 0 {
		return
	}
	k = min(k, len(f.acc))
	f.noteSkip(f.pos, f.off, uint64(k))
	f.dropFront(k)
}

func (f *framer) noteSkip(seq uint32, off uint64, n uint64) {
	if f.skipN == 0 {
		f.skipSeq, f.skipOff = seq, off
	}
	f.skipN += n
}

// flushSkip reports the pending skipped region (for iWARP connections).
func (f *framer) flushSkip(frame int) uint64 {
	n := f.skipN
	if n == 0 || !f.fl.c.IWARP {
		// Before the stream is recognized the region grows on; it is
		// reported if the stream turns out to be iWARP.
		return 0
	}
	f.skipN = 0
	{
		a := f.fl.a
		a.stats.SkippedBytes += n
		a.evGap = GapEvent{Dir: f.d, Reason: GapSkipped, Seq: f.skipSeq, Len: n, Offset: f.skipOff,
			Frame: frame, FPDUsLost: f.estimate(n, false)}
		a.h.Gap(&f.fl.c, &a.evGap)
	}
	return n
}

// estimate returns the FPDUs estimated to lie in n octets.
func (f *framer) estimate(n uint64, atLeastOne bool) int {
	if n == 0 {
		return 0
	}
	avg := uint64(f.avg)
	if avg == 0 {
		if atLeastOne {
			return 1
		}
		return 0
	}
	e := int((n + avg/2) / avg)
	if e == 0 && atLeastOne {
		e = 1
	}
	return e
}

func (f *framer) reportGap(seq uint32, off uint64, n uint64, reason GapReason, frame int, lost int) {
	if !f.fl.c.IWARP {
		return
	}
	a := f.fl.a
	a.stats.Gaps++
	a.stats.GapBytes += n
	a.evGap = GapEvent{Dir: f.d, Reason: reason, Seq: seq, Len: n, Offset: off, Frame: frame, FPDUsLost: lost}
	a.h.Gap(&f.fl.c, &a.evGap)
}

func (f *framer) finding(code finding.Code, seq uint32, n int, off uint64, frame int) {
	if !f.fl.c.IWARP {
		return
	}
	a := f.fl.a
	a.evFinding = FindingEvent{Dir: f.d, Code: code, Seq: seq, Len: n, Offset: off, Frame: frame}
	a.h.Finding(&f.fl.c, &a.evFinding)
}

// ---- Full Operation Phase: FPDUs in sync ----

func (f *framer) hdrSpan(pos uint32) int {
	p := f.params()
	if !p.Markers {
		return decode.ULPDULenLen
	}
	return decode.WireSpan(pos, p.S0, decode.ULPDULenLen)
}

func (f *framer) readLen(b []byte, pos uint32) int {
	p := f.params()
	if !p.Markers {
		return int(binary.BigEndian.Uint16(b))
	}
	var h [decode.ULPDULenLen]byte
	l := decode.AppendUnmarked(h[:0], b, pos, p.S0, decode.ULPDULenLen)
	return int(l[0])<<8 | int(l[1])
}

func (f *framer) wireLen(pos uint32, l int) int {
	p := f.params()
	if !p.Markers {
		return decode.FPDULen(l)
	}
	return decode.FPDUWireLen(pos, p.S0, l)
}

// minULPDU is a tagged DDP header: every FPDU carries at least that.
const minULPDU = decode.DDPTaggedHdrLen

func (f *framer) fpduData(b []byte, frame int, ts time.Time, ack uint32, hasAck bool) {
	for len(b) > 0 {
		if f.skip > 0 {
			k := min(f.skip, len(b))
			f.skip -= k
			b = b[k:]
			f.pos += uint32(k)
			f.off += uint64(k)
			continue
		}
		if len(f.acc) > 0 {
			if f.need == 0 {
				hs := f.hdrSpan(f.pos)
				k := min(hs-len(f.acc), len(b))
				if !f.appendAcc(b[:k], frame, ts, ack, hasAck) {
					f.noMemory(b, frame)
					return
				}
				b = b[k:]
				if len(f.acc) < hs {
					return
				}
				l := f.readLen(f.acc, f.pos)
				if l < minULPDU {
					f.lostSync(frame)
					f.data(b, frame, ts, ack, hasAck)
					return
				}
				f.need = f.wireLen(f.pos, l)
			}
			k := min(f.need-len(f.acc), len(b))
			if !f.appendAcc(b[:k], frame, ts, ack, hasAck) {
				// No room to gather the FPDU: report what we have as a
				// partial FPDU and pass over the rest.
				f.partialAcc(frame, GapNoMemory)
				continue
			}
			b = b[k:]
			if len(f.acc) == f.need {
				s0 := &f.segs[0]
				if !f.emitFPDU(f.acc, b, f.pos, f.off, s0.frame, s0.ts, s0.ack, s0.hasAck, frame, ts) {
					f.lostSync(frame)
					f.data(b, frame, ts, ack, hasAck)
					return
				}
				f.pos += uint32(f.need)
				f.off += uint64(f.need)
				f.acc = f.acc[:0]
				f.segs = f.segs[:0]
				f.need = 0
			}
			continue
		}
		// At an FPDU boundary with nothing gathered.
		hs := f.hdrSpan(f.pos)
		if len(b) < hs {
			if !f.appendAcc(b, frame, ts, ack, hasAck) {
				f.noMemory(b, frame)
			}
			return
		}
		l := f.readLen(b, f.pos)
		if l < minULPDU {
			f.lostSync(frame)
			f.data(b, frame, ts, ack, hasAck)
			return
		}
		n := f.wireLen(f.pos, l)
		if n <= len(b) {
			if !f.emitFPDU(b[:n], b[n:], f.pos, f.off, frame, ts, ack, hasAck, frame, ts) {
				f.lostSync(frame)
				f.data(b, frame, ts, ack, hasAck)
				return
			}
			b = b[n:]
			f.pos += uint32(n)
			f.off += uint64(n)
			continue
		}
		f.need = n
		if !f.appendAcc(b, frame, ts, ack, hasAck) {
			// No room to gather the FPDU: report what there is as a
			// partial FPDU and pass over the rest.
			f.need = 0
			f.emitPartial(b, f.pos, f.off, n, frame, ts, ack, hasAck, frame, ts)
			rem := n - len(b)
			f.fl.a.stats.NoMemoryBytes += uint64(rem)
			f.reportGap(f.pos+uint32(len(b)), f.off+uint64(len(b)), uint64(rem), GapNoMemory, frame, 0)
			f.pos += uint32(len(b))
			f.off += uint64(len(b))
			f.skip = rem
		}
		return
	}
}

// noMemory drops b (which could not be buffered) and whatever acc holds, and
// goes looking for the next boundary.
func (f *framer) noMemory(b []byte, frame int) {
	a := f.fl.a
	n := uint64(len(f.acc) + len(b))
	a.stats.NoMemoryBytes += n
	seq, off := f.pos, f.off
	f.dropFront(len(f.acc))
	f.pos += uint32(len(b))
	f.off += uint64(len(b))
	f.need = 0
	f.reportGap(seq, off, n, GapNoMemory, frame, f.estimate(n, false))
	if f.st == stFPDU {
		f.st = stHunt
		f.resetScan()
	}
}

// partialAcc reports the FPDU gathered in acc as partial (the rest is not
// held) and passes over its remaining octets.
func (f *framer) partialAcc(frame int, reason GapReason) {
	have := len(f.acc)
	rem := f.need - have
	lf, lt := f.frameAt(have - 1)
	s0 := &f.segs[0]
	f.emitPartial(f.acc, f.pos, f.off, f.need, s0.frame, s0.ts, s0.ack, s0.hasAck, lf, lt)
	if reason == GapNoMemory {
		f.fl.a.stats.NoMemoryBytes += uint64(rem)
		f.reportGap(f.pos+uint32(have), f.off+uint64(have), uint64(rem), reason, frame, 0)
	}
	f.pos += uint32(have)
	f.off += uint64(have)
	f.acc = f.acc[:0]
	f.segs = f.segs[:0]
	f.need = 0
	f.skip = rem
}

// lostSync: in sync, the FPDU at pos cannot be right. acc (or the caller's
// data, passed on with data) is searched for the next boundary.
func (f *framer) lostSync(frame int) {
	f.finding(finding.MPAFramingLost, f.pos, len(f.acc), f.off, frame)
	f.badPos, f.hasBad = f.pos, true
	f.st = stHunt
	f.anchor = false
	f.need = 0
	f.resetScan()
	if len(f.acc) > 0 {
		f.tryHunt(false, frame)
	}
}

// emitFPDU decodes the whole FPDU w (at pos/off) and sends it. It reports
// false, sending nothing, when the FPDU shows the framing is lost (see
// below). next holds the octets that follow w, as many as are at hand (the
// next FPDU's header, when the framing is right).
// ff/ft and fack/fhasAck are the frame, time and ACK of the segment holding
// w[0]; lf/lt the frame and time of the one holding its last octet.
func (f *framer) emitFPDU(w, next []byte, pos uint32, off uint64, ff int, ft time.Time, fack uint32, fhasAck bool, lf int, lt time.Time) bool {
	fl := f.fl
	a := fl.a
	p := f.params()
	ev := &a.evPDU
	pdu := &ev.PDU
	*pdu = decode.PDU{}
	var computed uint32
	markerErrs := 0
	if p.Markers {
		_, crc, marks, err := decode.ParseFPDUWithMarkers(w, pos, p.S0, a.scratch, &pdu.FPDU, a.marks[:0])
		if err != nil {
			return false
		}
		a.marks = marks
		pdu.Markers = marks
		computed = crc
		for _, m := range marks {
			if m.Marker.FPDUPTR&^3 != decode.ExpectedFPDUPTR(m.Pos, pos, p.S0)&^3 {
				markerErrs++
			}
		}
	} else {
		if _, err := decode.ParseFPDU(w, &pdu.FPDU); err != nil {
			return false
		}
		if p.CRC {
			computed = pdu.FPDU.ComputedCRC()
		}
	}
	pdu.CRCStatus = p.crcUse().Verdict(computed, pdu.FPDU.CRC)
	pdu.ComputedCRC = computed
	// A CRC32c written in the wrong byte order (RFC 5044 §4.4 sends it
	// big-endian) is still a bad CRC to the receiver, but it vouches for
	// the octets, and so for the framing, as well as a good one.
	swapped := pdu.CRCStatus == decode.CRCBad && bits.ReverseBytes32(computed) == pdu.FPDU.CRC
	vouched := pdu.CRCStatus == decode.CRCGood || swapped
	// In sync, the length chain is trusted: an FPDU with odd headers is
	// the tracker's to judge. An FPDU is odd when its DDP/RDMAP version
	// pair is not the stream's (it is fixed per stream) or a CRC fails on
	// octets that do not look like a DDP segment at all. An odd FPDU that
	// no CRC vouches for keeps the framing when the next ULPDU_Length link
	// holds: the header after it is one of the stream's. When that header
	// is not at hand yet, the odd FPDU is taken on probation: the next
	// FPDU must not be odd. A CRC failure on a framing that was inferred
	// loses it.
	u := pdu.FPDU.ULPDU
	ver := int(u[0]&decode.DDPDVMask)<<2 | int(u[1]>>6)
	odd := f.ver >= 0 && ver != f.ver
	if pdu.CRCStatus == decode.CRCBad && !swapped {
		if p.MarkersSource == SourceInferred || p.CRCSource == SourceInferred {
			return false
		}
		if len(u) >= headNeed(u[0]) && !plausibleHead(u, len(u), false, f.ver) {
			odd = true
		}
	}
	probation := false
	if odd && !vouched {
		// A message whose every segment is odd in the same way (one
		// corruption applied to all) is not a walk through random octets.
		same := f.probation && ver == f.oddVer && len(u) >= headNeed(u[0]) && plausibleHead(u, len(u), false, ver)
		switch lk := f.link(next, pos+uint32(len(w)), ver); {
		case lk == exBad, f.probation && !same:
			return false
		case lk == exMore:
			probation = true
		}
		f.oddVer = ver
	}
	f.probation = probation
	if swapped && !f.swapTold {
		f.swapTold = true
		f.finding(finding.MPACRCByteOrder, pos, len(w), off, ff)
	}
	// The stream's version pair is learnt once, from an FPDU of versions
	// that exist (0 or 1): an FPDU of another, even one a CRC vouches
	// for, is one odd FPDU, and resync keeps looking for the stream's.
	if f.ver < 0 && !odd && ver&^5 == 0 {
		f.ver = ver
	}
	pdu.SegErr = decode.ParseSegment(u, &pdu.Seg)
	ev.Dir = f.d
	ev.Seq, ev.Len, ev.Offset = pos, len(w), off
	ev.FirstFrame, ev.FirstTime, ev.LastFrame, ev.LastTime = ff, ft, lf, lt
	ev.HasAck, ev.Ack = fhasAck, fack
	ev.Wire = w
	ev.Missing = 0
	ev.MarkerErrors = markerErrs
	ev.Err = nil
	a.stats.FPDUs++
	if pdu.CRCStatus == decode.CRCBad {
		a.stats.CRCBad++
	}
	if f.avg == 0 {
		f.avg = len(w)
	} else {
		f.avg += (len(w) - f.avg) / 8
	}
	a.h.PDU(&fl.c, ev)
	return true
}

// link checks the ULPDU_Length link after an FPDU: next holds the octets
// from stream position pos on. exOK: the FPDU header there is possible and
// of the stream's DDP/RDMAP versions (or of alt, those of the odd FPDU
// before it: the next segment of the same message); exBad: it is not;
// exMore: too few octets to tell.
func (f *framer) link(next []byte, pos uint32, alt int) exState {
	p := f.params()
	var hb [decode.ULPDULenLen + 10]byte
	hdr := next[:min(len(next), len(hb))]
	if p.Markers {
		hdr = decode.AppendUnmarked(hb[:0], next, pos, p.S0, len(hb))
	}
	if len(hdr) < decode.ULPDULenLen+2 {
		return exMore
	}
	l := int(binary.BigEndian.Uint16(hdr))
	if l < minULPDU {
		return exBad
	}
	u := hdr[decode.ULPDULenLen:]
	ver := f.ver
	if v := int(u[0]&decode.DDPDVMask)<<2 | int(u[1]>>6); v == alt {
		ver = alt
	}
	if len(u) < headNeed(u[0]) {
		if ver >= 0 && int(u[0]&decode.DDPDVMask)<<2|int(u[1]>>6) != ver {
			return exBad
		}
		return exMore
	}
	if !plausibleHead(u, l, false, ver) {
		return exBad
	}
	return exOK
}

// emitPartial sends an FPDU of which only the prefix w (of total wire
// octets) was captured: ULPDU_Length and as much of the segment as there is.
func (f *framer) emitPartial(w []byte, pos uint32, off uint64, total int, ff int, ft time.Time, fack uint32, fhasAck bool, lf int, lt time.Time) {
	fl := f.fl
	a := fl.a
	p := f.params()
	ev := &a.evPDU
	pdu := &ev.PDU
	*pdu = decode.PDU{}
	lb := w
	if p.Markers {
		lb, a.marks = decode.StripMarkers(a.scratch[:0], a.marks[:0], w, pos, p.S0)
		pdu.Markers = a.marks
	}
	if len(lb) >= decode.ULPDULenLen {
		l := int(binary.BigEndian.Uint16(lb))
		pdu.FPDU.ULPDULength = uint16(l)
		u := lb[decode.ULPDULenLen:min(len(lb), decode.ULPDULenLen+l)]
		pdu.FPDU.ULPDU = u
		pdu.SegErr = decode.ParseSegment(u, &pdu.Seg)
	}
	pdu.CRCStatus = decode.CRCUnknown
	ev.Dir = f.d
	ev.Seq, ev.Len, ev.Offset = pos, total, off
	ev.FirstFrame, ev.FirstTime, ev.LastFrame, ev.LastTime = ff, ft, lf, lt
	ev.HasAck, ev.Ack = fhasAck, fack
	ev.Wire = w
	ev.Missing = total - len(w)
	ev.MarkerErrors = 0
	ev.Err = nil
	a.stats.FPDUs++
	a.stats.PartialFPDUs++
	if fl.c.IWARP {
		a.h.PDU(&fl.c, ev)
	}
}

// ---- MPA Request/Reply ----

// scanKey looks for an MPA key in acc; when it finds one, the octets before
// it are the ULP's (streaming mode, RFC 5044 §7.1) and the frame is read.
func (f *framer) scanKey(frame int, ts time.Time) bool {
	from := f.keyScan
	i := decode.FindMPAKey(f.acc[from:])
	if i < 0 {
		f.keyScan = max(from, len(f.acc)-(decode.MPAKeyLen-1))
		return false
	}
	f.dropFront(from + i)
	f.skipN = 0
	f.st = stFrame
	f.resetScan()
	f.frameProgress(frame)
	return true
}

func (f *framer) frameData(b []byte, frame int, ts time.Time, ack uint32, hasAck bool) {
	if !f.appendAcc(b, frame, ts, ack, hasAck) {
		f.noMemory(b, frame)
		f.st = stDetect
		return
	}
	f.frameProgress(frame)
}

// frameProgress decodes the MPA frame in acc once it is complete.
func (f *framer) frameProgress(frame int) {
	if len(f.acc) < decode.MPAFrameHdrLen {
		return
	}
	fl := f.fl
	a := fl.a
	pdl := int(binary.BigEndian.Uint16(f.acc[18:]))
	if pdl > decode.MPAMaxPDLength {
		// Not a frame a receiver accepts (RFC 5044 §7.1.1): report it and
		// look on after the key.
		if !fl.c.IWARP {
			fl.becomeIWARP()
		}
		ev := &a.evPDU
		*ev = PDUEvent{Dir: f.d, Seq: f.pos, Len: decode.MPAFrameHdrLen, Offset: f.off, Wire: f.acc[:decode.MPAFrameHdrLen]}
		ev.FirstFrame, ev.FirstTime = f.frameAt(0)
		ev.Ack, ev.HasAck = f.ackAt(0)
		ev.LastFrame, ev.LastTime = f.frameAt(decode.MPAFrameHdrLen - 1)
		ev.PDU.IsMPAFrame = true
		_, ev.Err = decode.ParseMPAFrame(f.acc, &ev.PDU.MPA)
		a.h.PDU(&fl.c, ev)
		f.finding(finding.MPABadFrame, f.pos, decode.MPAFrameHdrLen, f.off, frame)
		f.st = stDetect
		f.dropFront(1) // not a key any more: the search goes on after it
		f.replayFrom(0)
		return
	}
	// Alibaba erdma's Rev 129 carries 8 octets PD_Length does not count
	// (decode.MPAExtLen): framing by PD_Length alone would start the
	// first FPDU inside the Private Data.
	n := decode.MPAFrameLen(f.acc)
	if len(f.acc) < n {
		return
	}
	f.frameDone(n, frame)
}

// frameDone handles the complete frame acc[:n]: records what it negotiates
// and moves both directions on.
func (f *framer) frameDone(n int, frame int) {
	fl := f.fl
	a := fl.a
	c := &fl.c
	if !c.IWARP {
		fl.becomeIWARP()
	}
	ev := &a.evPDU
	*ev = PDUEvent{Dir: f.d, Seq: f.pos, Len: n, Offset: f.off, Wire: f.acc[:n]}
	ev.FirstFrame, ev.FirstTime = f.frameAt(0)
	ev.Ack, ev.HasAck = f.ackAt(0)
	ev.LastFrame, ev.LastTime = f.frameAt(n - 1)
	ev.PDU.IsMPAFrame = true
	_, ev.Err = decode.ParseMPAFrame(f.acc[:n], &ev.PDU.MPA)
	fr := &ev.PDU.MPA
	d, o := f.d, f.d.Other()
	P, O := &c.Params[d], &c.Params[o]
	P.HasFrame = true
	P.Frame = *fr
	c.pd[d] = append(c.pd[d][:0], fr.PrivateData...)
	P.Frame.PrivateData = c.pd[d]
	P.FrameSeq = f.pos
	P.S0 = f.pos + uint32(n) // the first marker sits before the first FPDU (RFC 5044 §4.3)
	f.s0Known = true
	// M asks for markers towards the frame's sender, i.e. on the other
	// direction; C is OR-ed over both frames (RFC 5044 §7.1.1).
	O.Markers, O.MarkersSource = fr.Markers, SourceHandshake
	if !fr.Reply && c.Initiator < 0 {
		c.Initiator = int8(d)
	}
	if fr.Reply && fr.Reject {
		c.Rejected = true
	}
	crc := fr.CRC || (O.HasFrame && O.Frame.CRC)
	if crc || O.HasFrame {
		P.CRC, P.CRCSource = crc, SourceHandshake
		O.CRC, O.CRCSource = crc, SourceHandshake
	}
	a.stats.MPAFrames++
	a.h.PDU(c, ev)
	a.h.Negotiated(c, o)
	if O.HasFrame || fr.Reply {
		a.h.Negotiated(c, d)
	}
	if c.Rejected {
		// Both ends leave MPA; the stream is the ULP's (RFC 5044 §7.1.2).
		for i := range fl.fr {
			g := &fl.fr[i]
			if g != f {
				g.dropFront(len(g.acc))
				g.need, g.skip = 0, 0
			}
			g.st = stULP
		}
		f.dropFront(n)
		if rest := len(f.acc); rest > 0 {
			f.toldULP = true
			f.finding(finding.MPADataAfterReject, f.pos, rest, f.off, frame)
			f.dropFront(rest)
		}
		return
	}
	if P.Settled() {
		f.st = stFPDU
	} else {
		f.st = stHunt
		f.anchor = true
	}
	f.align = int((f.pos + uint32(n)) & 3)
	// The other direction waiting at the start of its Full Operation Phase
	// can go on once its parameters are known.
	g := &fl.fr[o]
	if g.st == stHunt && g.anchor && O.Settled() && len(g.acc) == 0 {
		g.st = stFPDU
		g.anchor = false
	}
	f.replayFrom(n)
}

// replayFrom detaches acc and feeds acc[c:] again, segment by segment, in the
// state the framer is in now (after a frame, or after a boundary was found).
func (f *framer) replayFrom(c int) {
	buf, segs := f.acc, f.segs
	f.acc = nil
	f.segs = nil
	f.need = 0
	f.resetScan()
	f.keyScan = 0
	f.pos += uint32(c)
	f.off += uint64(c)
	for i, r := range segs {
		end := len(buf)
		if i+1 < len(segs) {
			end = segs[i+1].at
		}
		if st := max(r.at, c); st < end {
			f.data(buf[st:end], r.frame, r.ts, r.ack, r.hasAck)
		}
	}
	if f.segs == nil {
		f.segs = segs[:0]
	}
	f.fl.a.pool.put(buf)
}

// becomeIWARP marks the connection iWARP: Opened is sent, retransmission
// history starts, and directions that had given up look again.
func (fl *flow) becomeIWARP() {
	a := fl.a
	fl.c.IWARP = true
	a.stats.IWARPConns++
	a.h.Opened(&fl.c)
	for d := range fl.s {
		s := &fl.s[d]
		if a.cfg.RetransCheck > 0 && s.hist == nil {
			if b := a.pool.get(a.cfg.RetransCheck); b != nil {
				s.hist = b[:cap(b)]
				s.histFrom = s.nextOff
			}
		}
		g := &fl.fr[d]
		if g.st == stOff {
			s.untracked = false
			g.st = stDetect
			g.pos, g.off = s.next, s.nextOff
			g.examined = 0
		}
	}
}

// giveUp: no MPA in this direction; stop looking (unless the connection
// turns out iWARP through the other direction).
func (f *framer) giveUp() {
	fl := f.fl
	f.st = stOff
	f.pos += uint32(len(f.acc))
	f.off += uint64(len(f.acc))
	f.release()
	f.skipN = 0
	f.resetScan()
	s := &fl.s[f.d]
	s.untracked = true
	for i := range s.ooo {
		fl.a.pool.put(s.ooo[i].data)
	}
	s.ooo = s.ooo[:0]
	s.oooBytes = 0
	if len(fl.s[0].ooo) == 0 && len(fl.s[1].ooo) == 0 {
		fl.a.oooUnlink(fl)
	}
}

// ---- gaps and the end ----

// gap: n octets at seq are missing.
func (f *framer) gap(seq uint32, n uint64, reason GapReason, frame int) {
	switch f.st {
	case stOff, stULP:
		f.pos += uint32(n)
		f.off += n
		return
	case stDetect, stHunt:
		if reason == GapSnaplen && f.snapAligned(n, frame) {
			f.gap(seq, n, reason, frame)
			return
		}
		for i := 0; i < 64 && len(f.acc) > 0 && (f.st == stDetect || f.st == stHunt); i++ {
			if !f.tryHunt(true, frame) {
				break
			}
		}
		if f.st != stDetect && f.st != stHunt {
			f.gap(seq, n, reason, frame)
			return
		}
		f.skipFront(len(f.acc))
		f.flushSkip(frame)
		f.anchor = false
		f.resetScan()
		f.keyScan = 0
		if !f.fl.c.IWARP {
			// Not recognized yet: the hole joins the region before the
			// first boundary (reported as skipped if one is found).
			f.noteSkip(seq, f.off, n)
		} else {
			f.reportGap(seq, f.off, n, reason, frame, f.estimate(n, true))
		}
		f.pos += uint32(n)
		f.off += n
		return
	case stFrame:
		// The frame is cut: what it said is lost.
		f.skipFront(len(f.acc))
		f.flushSkip(frame)
		if !f.fl.c.IWARP {
			f.noteSkip(seq, f.off, n)
		}
		f.reportGap(seq, f.off, n, reason, frame, 0)
		f.pos += uint32(n)
		f.off += n
		f.keyScan = 0
		if f.fl.c.IWARP {
			f.st = stHunt
		} else {
			f.st = stDetect
		}
		return
	}
	// stFPDU
	off0 := f.off + uint64(len(f.acc))
	left := n
	if f.skip > 0 {
		k := min(uint64(f.skip), left)
		f.skip -= int(k)
		f.pos += uint32(k)
		f.off += k
		left -= k
		if left == 0 {
			f.reportGap(seq, off0, n, reason, frame, 0)
			return
		}
	}
	if len(f.acc) > 0 {
		if f.need > 0 {
			have := len(f.acc)
			rem := f.need - have
			f.partialAcc(frame, reason) // sets skip = rem, pos after the captured part
			k := min(uint64(f.skip), left)
			f.skip -= int(k)
			f.pos += uint32(k)
			f.off += k
			left -= k
			_ = rem
			if left == 0 {
				f.reportGap(seq, off0, n, reason, frame, 0)
				return
			}
		} else {
			f.skipFront(len(f.acc))
		}
	}
	f.flushSkip(frame)
	f.reportGap(seq, off0, n, reason, frame, f.estimate(left, true))
	f.pos += uint32(left)
	f.off += left
	f.st = stHunt
	f.anchor = false
	f.resetScan()
}

// end: the stream ends (close, idle, end of capture). Partial FPDUs and held
// octets are reported.
func (f *framer) end(frame int) {
	for range 64 {
		switch f.st {
		case stDetect, stHunt:
			if len(f.acc) > 0 && f.tryHunt(true, frame) {
				continue
			}
			f.skipFront(len(f.acc))
			f.flushSkip(frame)
			return
		case stFrame:
			f.skipFront(len(f.acc))
			f.flushSkip(frame)
			return
		case stFPDU:
			if len(f.acc) > 0 {
				if f.need > 0 {
					have := len(f.acc)
					rem := f.need - have
					seq, off := f.pos+uint32(have), f.off+uint64(have)
					f.partialAcc(frame, GapClose)
					f.skip = 0
					f.reportGap(seq, off, uint64(rem), GapClose, frame, 0)
				} else {
					f.skipFront(len(f.acc))
					f.flushSkip(frame)
				}
			}
			return
		default:
			return
		}
	}
}
