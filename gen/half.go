package gen

import (
	"fmt"

	"github.com/iwkit/iwkit/finding"
)

// half is one direction of a connection, seen from its sender: the octet
// stream it appends FPDUs to, the segmenter that cuts the stream into TCP
// segments, the impairments that act on those segments, and the truth kept
// for the FPDUs in flight.
type half struct {
	c    *conn
	g    *generator
	d    int // 0: i2r (client to server), 1: r2i
	name string
	peer *half
	tmpl *frameTemplate
	isn  uint32

	// Sequence space: nxt is the sequence number of the next octet appended
	// to the stream; cut the first octet not yet cut into a segment.
	// Pending octets buf[off:] start at cut.
	nxt, cut uint32
	buf      []byte
	off      int
	units    []uint32 // ends of the units (frames, FPDUs) not yet wholly cut
	unitHead int
	// unitStart is where units[unitHead] starts (Connection.Split).
	unitStart uint32

	// MPA framing of this direction.
	markers     bool
	s0          uint32 // stream position of the first FPDU (marker grid origin)
	fpduStarted bool
	crc         bool
	crcSwap     bool // MPA.CRCByteSwapped
	swapTold    bool // the mpa.crc_byte_order truth is written
	mulpdu      int
	emss        int
	msn         [4]uint32 // next MSN per QN (RFC 5041 §5.1: first message MSN 1)
	reqID       uint32    // next atomic Request Identifier
	// peerIRD is the IRD the peer announced in the MPA exchange (-1: not
	// known); reads counts this side's Read Requests not yet answered.
	peerIRD int
	reads   int
	dv, rv  uint8

	// TCP timestamps (RFC 7323).
	tsBase    uint32
	lastTSval uint32
	mss       uint16

	// unacked counts the peer's data segments this side received since it
	// last sent an ACK.
	unacked int

	nSeg  int // data segments cut (original transmissions)
	nFPDU int // FPDUs built

	// Impairments.
	held       []*copySeg    // copies waiting for later segments to go first
	newHeld    []*copySeg    // copies made for the segment being sent
	pendingGap []*gapFinding // tcp.gap waiting for the ACK that makes it certain
	tcpImps    map[int][]*Impairment
	fpduImps   []*pendingImp

	// Truth: FPDUs not yet finished, in order; fpdus[0] has ordinal
	// fpduHead. cutFPDU is the ordinal of the first FPDU not wholly cut.
	fpdus    fpduQueue
	fpduHead int
	cutFPDU  int

	lastDataFrame int // frame number of the latest captured data frame
	scratch       []byte
	payScratch    []byte
}

// segRec is one original data segment and its copies' fate.
type segRec struct {
	seq      uint32
	n        int
	fLo, fHi int // ordinals of the FPDUs it overlaps (fHi < fLo: none)
	pending  int // copies still to be emitted or dropped
	bestCap  int // most payload octets one copy had captured
	// partFrame is the first frame that holds a cut copy; skipped says a
	// copy went before the capture started.
	partFrame int
	skipped   bool
	imps      []*ImpairmentTruth
}

// copySeg is a copy of a segment held back by an impairment.
type copySeg struct {
	rec      *segRec
	data     []byte
	wait     int  // original segments of this direction still to go first
	passed   int  // original segments that went first
	original bool // the first transmission (reorder, lost and resent): a hole until sent
	kind     string
	imp      *ImpairmentTruth
}

// fpduState is the truth of one FPDU being cut and sent.
type fpduState struct {
	t        FPDUTruth
	start    uint32
	end      uint32
	cut      bool
	segs     int // overlapping original segments not yet finished
	captured int
	finds    []Finding
}

// pendingImp is an FPDU-level impairment waiting for its FPDU or message.
type pendingImp struct {
	im     Impairment
	src    *Impairment // in the scenario
	fpdu   int         // target ordinal, 0 when op-targeted
	op     int         // op index, -1 when FPDU-targeted
	target int         // for op targets: 0 the op's first message, 1 its response
	done   bool
}

func (h *half) pending() int { return len(h.buf) - h.off }

// appendUnit appends octets that form one unit of the stream (an MPA frame).
func (h *half) appendUnit(b []byte) {
	h.buf = append(h.buf, b...)
	h.nxt += uint32(len(b))
	h.units = append(h.units, h.nxt)
}

// pump cuts pending octets into segments as the packing mode allows; with
// final, everything pending goes out.
func (h *half) pump(final bool) error {
	for h.pending() > 0 {
		var n int
		switch h.c.packing {
		case packOne:
			end := h.units[h.unitHead]
			n = min(int(end-h.cut), h.emss)
		case packPack:
			if !final && h.pending() <= h.emss {
				return nil // everything pending fits: wait for more
			}
			// Whole units while they fit; a unit larger than EMSS goes
			// alone, split. (The scan covers one segment's units.)
			for i := h.unitHead; i < len(h.units); i++ {
				l := int(h.units[i] - h.cut)
				if l > h.emss {
					break
				}
				n = l
			}
			if n == 0 {
				n = min(int(h.units[h.unitHead]-h.cut), h.emss)
			}
		case packStream:
			n = min(h.pending(), h.emss)
			if n < h.emss && !final {
				return nil
			}
		case packSplit:
			end := h.units[h.unitHead]
			n = min(int(end-h.cut), h.emss, h.splitRun())
		}
		if err := h.sendOriginal(n); err != nil {
			return err
		}
	}
	return nil
}

// splitRun is how many octets of the unit being cut go before its next
// split point (Connection.Split; a large number past the last one).
func (h *half) splitRun() int {
	at := int(h.cut - h.unitStart) // octets of the unit already cut
	for _, p := range h.c.cfg.Split {
		if p > at {
			return p - at
		}
	}
	return 1 << 30
}

// sendOriginal cuts the next n pending octets into a segment and sends it
// through the impairments.
func (h *half) sendOriginal(n int) error {
	g := h.g
	data := h.buf[h.off : h.off+n]
	seq := h.cut
	h.off += n
	h.cut += uint32(n)
	for h.unitHead < len(h.units) && int32(h.units[h.unitHead]-h.cut) <= 0 {
		h.unitStart = h.units[h.unitHead]
		h.unitHead++
	}
	if h.unitHead == len(h.units) {
		h.units, h.unitHead = h.units[:0], 0
	}
	h.nSeg++
	rec := g.newRec(seq, n)
	if g.track {
		h.overlap(rec)
	}
	// The impairments for this segment, explicit then random.
	var kinds []string
	var imps []*Impairment
	if l := h.tcpImps[h.nSeg]; len(l) > 0 {
		for _, im := range l {
			kinds = append(kinds, im.Kind)
			imps = append(imps, im)
		}
		delete(h.tcpImps, h.nSeg)
	}
	if r := &g.sc.Rates; g.rates {
		for _, k := range []struct {
			p    float64
			kind string
		}{{r.Drop, ImpDrop}, {r.Reorder, ImpReorder}, {r.Duplicate, ImpDuplicate}, {r.Retransmit, ImpRetransmit}, {r.RetransmitDiff, ImpRetransmitDiff}} {
			if k.p > 0 && g.rng.Float64() < k.p {
				if k.kind == ImpReorder && h.pending() == 0 {
					continue // nothing would overtake it
				}
				kinds = append(kinds, k.kind)
				imps = append(imps, nil)
			}
		}
	}
	// A segment the capture misses has no other impairment: nothing of it
	// is seen.
	for i, kind := range kinds {
		if kind == ImpDrop && (imps[i] == nil || !imps[i].Resend) {
			kinds, imps = kinds[i:i+1], imps[i:i+1]
			break
		}
	}
	psh := h.pending() == 0
	// The first TCP kind that withholds or cuts the segment decides what
	// happens to the original; the others add copies.
	sendNow := true
	snap := 0
	var afterCopies []*copySeg
	for i, kind := range kinds {
		im := imps[i]
		it := g.newImpTruth(h, kind, im == nil)
		it.Segment, it.Seq, it.Len = h.nSeg, seq, n
		rec.imps = append(rec.imps, it)
		after := 0
		if im != nil {
			after = im.After
		}
		switch kind {
		case ImpDrop:
			if im != nil && im.Resend {
				if after == 0 {
					after = 3
				}
				it.Detail = "lost in the network"
				if sendNow {
					sendNow = false
					h.hold(rec, data, after, true, kind, it)
				}
			} else if sendNow {
				sendNow = false
				it.Detail = "missed by the capture; the receiver got it"
				rec.pending++
				h.finishCopy(rec, 0, true, it)
			}
		case ImpReorder:
			if after == 0 {
				after = 1
			}
			it.Detail = "held back"
			if sendNow {
				sendNow = false
				h.hold(rec, data, after, true, kind, it)
			}
		case ImpDuplicate:
			it.Detail = "sent twice in a row"
			afterCopies = append(afterCopies, &copySeg{data: data, kind: kind, imp: it})
		case ImpRetransmit, ImpRetransmitDiff:
			if after == 0 {
				after = 3
			}
			d := data
			if kind == ImpRetransmitDiff {
				d = append([]byte(nil), data...)
				d[len(d)/2] ^= 0xFF
				it.Field, it.Old, it.New = "tcp.payload_octet", uint64(data[len(d)/2]), uint64(d[len(d)/2])
				it.Detail = fmt.Sprintf("octet %d of the payload changed", len(d)/2)
			} else {
				it.Detail = "same octets"
			}
			h.hold(rec, d, after, false, kind, it)
		case ImpSnaplen:
			v := int(*im.Value)
			snap = v
			it.Field, it.Old, it.New = "frame.caplen", uint64(h.tmpl.headerLen()+n), uint64(v)
			it.Detail = fmt.Sprintf("frame cut to %d octets", v)
		}
	}
	if sendNow {
		rec.pending++
		if err := h.emit(rec, data, psh, snap, "", nil); err != nil {
			return err
		}
		for _, cs := range afterCopies {
			rec.pending++
			if err := h.emit(rec, cs.data, psh, 0, cs.kind, cs.imp); err != nil {
				return err
			}
		}
		if err := h.maybeACK(); err != nil {
			return err
		}
	} else {
		// A duplicate of a withheld segment: both go when it goes.
		for _, cs := range afterCopies {
			cs.imp.Detail += " (with the withheld original)"
			h.hold(rec, cs.data, 0, false, cs.kind, cs.imp)
		}
	}
	// The copies held before this segment count it; then this segment's
	// own copies join them.
	if err := h.tickHeld(); err != nil {
		return err
	}
	h.held = append(h.held, h.newHeld...)
	clear(h.newHeld)
	h.newHeld = h.newHeld[:0]
	h.doneIfIdle(rec)
	if h.off == len(h.buf) {
		h.buf, h.off = h.buf[:0], 0
	} else if h.off > 1<<16 && h.off > len(h.buf)/2 {
		n := copy(h.buf, h.buf[h.off:])
		h.buf, h.off = h.buf[:n], 0
	}
	return nil
}

// hold keeps a copy of data to send after wait more original segments. It
// joins the held copies after the current segment has been counted (see
// sendOriginal).
func (h *half) hold(rec *segRec, data []byte, wait int, original bool, kind string, it *ImpairmentTruth) {
	rec.pending++
	cs := &copySeg{rec: rec, data: append([]byte(nil), data...), wait: wait, original: original, kind: kind, imp: it}
	// A copy with wait 0 goes right after the segment (a duplicate of a
	// withheld one): it stays behind the held original in the list.
	h.newHeld = append(h.newHeld, cs)
}

// tickHeld counts one original segment off every held copy and sends those
// whose turn has come, in the order they were held.
func (h *half) tickHeld() error {
	if len(h.held) == 0 {
		return nil
	}
	for _, cs := range h.held {
		cs.wait--
		cs.passed++
	}
	return h.releaseHeld(false)
}

// releaseHeld sends the held copies that are due (all of them with all).
func (h *half) releaseHeld(all bool) error {
	for len(h.held) > 0 {
		i := -1
		for j, cs := range h.held {
			if all || cs.wait <= 0 {
				i = j
				break
			}
		}
		if i < 0 {
			return nil
		}
		cs := h.held[i]
		h.held = append(h.held[:i], h.held[i+1:]...)
		if it := cs.imp; it != nil {
			switch {
			case cs.original && cs.passed == 0:
				// Nothing went ahead of it: it leaves in order after all.
				it.Detail += "; no later segment came before the burst ended, so it went in order"
				cs.kind = ""
			case cs.kind == ImpDuplicate:
			case cs.original:
				it.Detail = fmt.Sprintf("%s, sent after %d later segments", it.Detail, cs.passed)
			default:
				it.Detail = fmt.Sprintf("%s, resent after %d later segments", it.Detail, cs.passed)
			}
		}
		if err := h.emit(cs.rec, cs.data, true, 0, cs.kind, cs.imp); err != nil {
			return err
		}
		h.doneIfIdle(cs.rec)
	}
	return h.maybeACK()
}

// ackPoint is the sequence number the receiver of this direction
// acknowledges: everything cut so far, except that a segment still held as
// a first transmission (reordered, or lost in the network) is a hole.
func (h *half) ackPoint() uint32 {
	a := h.cut
	for _, cs := range h.held {
		if cs.original && int32(cs.rec.seq-a) < 0 {
			a = cs.rec.seq
		}
	}
	return a
}

// emit builds and writes one data frame for rec with payload data.
func (h *half) emit(rec *segRec, data []byte, psh bool, snap int, kind string, it *ImpairmentTruth) error {
	g := h.g
	f := h.tcp(flagACK)
	if psh {
		f.flags |= flagPSH
	}
	f.seq = rec.seq
	frame, capPay, err := g.writeFrame(h, &f, data, snap)
	if err != nil {
		return err
	}
	h.peer.unacked++
	h.finishCopy(rec, capPay, false, nil)
	if frame == 0 {
		rec.skipped = true // before the capture started (mid-stream)
	} else if capPay < len(data) && rec.partFrame == 0 {
		rec.partFrame = frame
	}
	if frame > 0 {
		h.lastDataFrame = frame
		for _, gf := range h.pendingGap {
			if gf.next == 0 {
				gf.next = frame
			}
		}
	}
	if g.track {
		if frame > 0 && capPay > 0 {
			h.frameFPDUs(rec, frame, capPay)
		}
		if frame > 0 {
			for _, rit := range rec.imps {
				rit.Frames = append(rit.Frames, frame)
			}
		}
		// Duplicates, retransmissions and reordering are TCP doing its
		// job: the analyzer delivers the stream in order and raises
		// nothing (the impairments are in the truth). Only a copy with
		// different octets is a finding. A frame cut by the snaplen is
		// the tcp.gap that gap reports at the same frame.
		if it != nil && kind == ImpRetransmitDiff {
			g.addFinding(h, finding.TCPRetransInconsistent, frame, 0, rec.seq, it.ID, "retransmission with different octets of "+segDesc(rec))
		}
	}
	return nil
}

// impOf is the id of rec's impairment of that kind (0: none).
func (rec *segRec) impOf(kind string) int {
	for _, it := range rec.imps {
		if it.Kind == kind {
			return it.ID
		}
	}
	return 0
}

// maybeACK lets the receiver acknowledge after AckEvery data segments.
func (h *half) maybeACK() error {
	if ack := h.c.ackEvery; ack > 0 && h.peer.unacked >= ack {
		return h.peer.pureACK()
	}
	return nil
}

func segDesc(rec *segRec) string {
	return fmt.Sprintf("segment seq %d len %d", rec.seq, rec.n)
}

// finishCopy records that one copy of rec is done with capPay payload
// octets captured. dropped marks a copy the capture missed though the
// receiver got it.
func (h *half) finishCopy(rec *segRec, capPay int, dropped bool, it *ImpairmentTruth) {
	rec.pending--
	rec.bestCap = max(rec.bestCap, capPay)
	if dropped {
		h.peer.unacked++
	}
}

// gap reports the octets of rec that no copy brought into the capture
// (tcp.gap): at the truncated frame when the snaplen cut them, else at the
// direction's next captured data frame.
func (h *half) gap(rec *segRec) {
	if rec.bestCap >= rec.n || rec.skipped {
		return
	}
	imp := rec.impOf(ImpDrop)
	if imp == 0 {
		imp = rec.impOf(ImpSnaplen)
	}
	seq := rec.seq + uint32(rec.bestCap)
	f := Finding{Code: finding.TCPGap, Severity: finding.TCPGap.Severity(), Conn: h.c.idx, Dir: h.name, Seq: seq, Impairment: imp,
		Message: fmt.Sprintf("%d octets at seq %d never captured (the receiver acknowledged them)", rec.n-rec.bestCap, seq)}
	if rec.partFrame > 0 {
		f.Frame = rec.partFrame
		if err := h.g.finding(&f); err != nil && h.g.err == nil {
			h.g.err = err
		}
		return
	}
	h.pendingGap = append(h.pendingGap, &gapFinding{f: f, end: rec.seq + uint32(rec.n)})
}

// gapFinding is a tcp.gap of a segment the capture missed. It is certain
// at the first captured frame of the other direction that acknowledges
// its octets (Wireshark's "ACKed unseen segment"); next is the direction's
// next captured data frame, where the hole first shows, used if no such
// ACK is captured.
type gapFinding struct {
	f    Finding
	end  uint32
	next int
}

// acked resolves the pending gaps of h that an ACK of ack, captured in
// frame, covers.
func (h *half) acked(ack uint32, frame int) {
	n := 0
	for _, gf := range h.pendingGap {
		if int32(ack-gf.end) >= 0 {
			gf.f.Frame = frame
			if err := h.g.finding(&gf.f); err != nil && h.g.err == nil {
				h.g.err = err
			}
			continue
		}
		h.pendingGap[n] = gf
		n++
	}
	clear(h.pendingGap[n:])
	h.pendingGap = h.pendingGap[:n]
}

// flushGaps reports the gaps no captured ACK covered.
func (h *half) flushGaps() error {
	for _, gf := range h.pendingGap {
		gf.f.Frame = gf.next
		if err := h.g.finding(&gf.f); err != nil {
			return err
		}
	}
	h.pendingGap = nil
	return nil
}

// doneIfIdle finishes rec when no copy is outstanding: its impairments are
// reported and the FPDUs it overlaps learn how much of them was captured.
func (h *half) doneIfIdle(rec *segRec) {
	if rec.pending > 0 {
		return
	}
	g := h.g
	if g.track {
		h.gap(rec)
		for _, it := range rec.imps {
			g.impairment(it)
		}
		end := rec.seq + uint32(rec.n)
		capEnd := rec.seq + uint32(rec.bestCap)
		for o := rec.fLo; o <= rec.fHi; o++ {
			fs := h.fpdus.at(o - h.fpduHead)
			ps, pe := fs.start, fs.end
			if int32(ps-rec.seq) < 0 {
				ps = rec.seq
			}
			if int32(pe-end) > 0 {
				pe = end
			}
			if c := int32(capEnd - ps); c > 0 {
				fs.captured += min(int(c), int(pe-ps))
			}
			fs.segs--
		}
		h.finishFPDUs()
	}
	g.freeRec(rec)
}

// overlap notes which FPDUs rec holds octets of.
func (h *half) overlap(rec *segRec) {
	end := rec.seq + uint32(rec.n)
	rec.fLo, rec.fHi = h.cutFPDU, h.cutFPDU-1
	for o := h.cutFPDU; o < h.fpduHead+h.fpdus.len(); o++ {
		fs := h.fpdus.at(o - h.fpduHead)
		if int32(fs.start-end) >= 0 {
			break
		}
		rec.fHi = o
		fs.segs++
		if int32(fs.end-end) <= 0 {
			fs.cut = true
			h.cutFPDU = o + 1
		}
	}
	if rec.fHi < rec.fLo {
		rec.fLo, rec.fHi = 1, 0
	}
}

// frameFPDUs records that frame holds octets of the FPDUs in rec.
func (h *half) frameFPDUs(rec *segRec, frame, capPay int) {
	capEnd := rec.seq + uint32(capPay)
	for o := rec.fLo; o <= rec.fHi; o++ {
		fs := h.fpdus.at(o - h.fpduHead)
		ps := fs.start
		if int32(ps-rec.seq) < 0 {
			ps = rec.seq
		}
		if int32(capEnd-ps) <= 0 {
			continue
		}
		if fs.t.FirstFrame == 0 || frame < fs.t.FirstFrame {
			fs.t.FirstFrame = frame
		}
		fs.t.LastFrame = max(fs.t.LastFrame, frame)
	}
}

// finishFPDUs reports the FPDUs at the head that are done.
func (h *half) finishFPDUs() {
	g := h.g
	for h.fpdus.len() > 0 {
		fs := h.fpdus.at(0)
		if !fs.cut || fs.segs > 0 {
			return
		}
		wire := int(fs.end - fs.start)
		fs.t.Missing = fs.captured == 0
		fs.t.Partial = fs.captured > 0 && fs.captured < wire
		if err := g.truth.FPDU(&fs.t); err != nil && g.err == nil {
			g.err = err
		}
		for i := range fs.finds {
			f := &fs.finds[i]
			f.Frame = fs.t.LastFrame
			if err := g.finding(f); err != nil && g.err == nil {
				g.err = err
			}
		}
		h.fpdus.pop()
		g.freeFPDUState(fs)
		h.fpduHead++
	}
}

// flush sends everything pending and every held copy.
func (h *half) flush() error {
	if err := h.pump(true); err != nil {
		return err
	}
	return h.releaseHeld(true)
}

// tcp fills the fields every segment of this side carries.
func (h *half) tcp(flags uint8) tcpFields {
	g := h.g
	f := tcpFields{flags: flags, ack: h.peer.ackPoint(), ts: h.c.cfg.Timestamps}
	if flags&flagSYN != 0 && flags&flagACK == 0 {
		f.ack = 0
	}
	if f.ts {
		f.tsVal = h.tsBase + uint32(uint64(g.now)*uint64(h.c.tsClock)/1e9)
		f.tsEcr = h.peer.lastTSval
		h.lastTSval = f.tsVal
		if flags&flagSYN != 0 && flags&flagACK == 0 {
			f.tsEcr = 0
		}
	}
	h.unacked = 0
	return f
}

// control sends a segment without payload (SYN, pure ACK, FIN, RST).
func (h *half) control(flags uint8, seq uint32) (int, error) {
	f := h.tcp(flags)
	f.seq = seq
	f.mss = h.mss
	frame, _, err := h.g.writeFrame(h, &f, nil, 0)
	return frame, err
}

// pureACK acknowledges the peer's data.
func (h *half) pureACK() error {
	_, err := h.control(flagACK, h.cut)
	return err
}

// fpduQueue is a FIFO of FPDU states that reuses its storage.
type fpduQueue struct {
	s   []*fpduState
	off int
}

func (q *fpduQueue) len() int            { return len(q.s) - q.off }
func (q *fpduQueue) at(i int) *fpduState { return q.s[q.off+i] }
func (q *fpduQueue) push(f *fpduState)   { q.s = append(q.s, f) }
func (q *fpduQueue) pop() {
	q.s[q.off] = nil
	q.off++
	if q.off == len(q.s) {
		q.s, q.off = q.s[:0], 0
	} else if q.off > 1024 && q.off > len(q.s)/2 {
		n := copy(q.s, q.s[q.off:])
		clear(q.s[n:])
		q.s, q.off = q.s[:n], 0
	}
}
