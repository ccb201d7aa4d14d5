package reassembly

import (
	"encoding/binary"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/iwkit/iwkit/decode"
)

// This file finds an FPDU boundary where the framer has none: at the start
// of a capture without handshake, after a gap that swallowed a boundary, and
// after the framing was found wrong. The data are gathered in acc (bounded by
// Config.ResyncWindow) and candidates are examined in stream order:
//
//   - with markers (RFC 5044 §4.2-4.3), the FPDU a marker's FPDUPTR points
//     at; markers of an unknown phase are inferred from marker-like words
//     512 octets apart whose FPDUPTRs agree;
//   - otherwise every offset (those at the direction's FPDU alignment and
//     segment starts when the alignment is known), accepted only when a chain
//     of Config.ChainLength FPDUs validates, or fewer reaching the end of the
//     data with a CRC32c that matches each of them.
//
// An FPDU validates when its ULPDU_Length is possible, its DDP and RDMAP
// headers are plausible (plausibleHead), its markers point back at it, and its
// CRC matches where CRCs are in use (byte-swapped counts: crcMatch). Where the handshake did not say whether
// CRCs are in use, the first FPDU of a chain decides (a matching CRC32c is
// proof; draft-differences §7 item 5).

type crcMode uint8

const (
	crcOff crcMode = iota
	crcOn
	crcInfer
)

// hyp is a hypothesis about a direction's framing.
type hyp struct {
	markers bool
	s0      uint32
	crc     crcMode
	// open: the direction's markers are not known, and this hypothesis
	// says none. Only a chain spanning more than a marker period proves it
	// (a marker inside an FPDU would break the chain).
	open  bool
	valid bool
}

type verdict uint8

const (
	vReject verdict = iota
	vMore
	vAccept
)

type chainRes struct {
	v verdict
	// ready (vMore): the stream offset up to which octets must be at hand
	// before the chain can move on; until then the candidate is not
	// examined again.
	ready    uint64
	n        int  // FPDUs validated
	crcOn    bool // CRCs matched (in use)
	markerOK int  // markers with a non-zero FPDUPTR that pointed right
	how      ResyncHow
	// waiting: the FPDU the chain stopped at has a plausible header and
	// needs more octets.
	waiting bool
}

// liveCand is an undecided candidate offset in acc and the stream offset
// its chain waits for (chainRes.ready).
type liveCand struct {
	ready uint64
	o     int32
	// n > 0: the scan's quick test (quick) deferred the candidate, whose
	// FPDU is n octets: its successor's header at acc[o+n] is checked
	// before anything else once it is at hand. n == liveAtSeg: a segment
	// starts at o. (16 octets: scan reads every one at every segment.)
	n int32
}

const liveAtSeg = -1

func (c liveCand) seg() segKnown {
	if c.n == liveAtSeg {
		return segYes
	}
	return segNo
}

// segKnown says whether a delivered segment starts at a candidate offset
// (segAsk: not known, f.segStart tells).
type segKnown uint8

const (
	segAsk segKnown = iota
	segNo
	segYes
)

// maxLive bounds the undecided candidates; past it the oldest half is
// given up (random octets make many candidates whose FPDU, up to 64 KiB,
// has not arrived yet).
const maxLive = 512

type exState uint8

const (
	exBad exState = iota
	exMore
	exOK
)

func (f *framer) resetScan() {
	f.scanned = 0
	f.live = f.live[:0]
	f.scanHyp = hyp{}
}

// huntData gathers octets while no boundary is known and tries to find one.
func (f *framer) huntData(b []byte, frame int, ts time.Time, ack uint32, hasAck bool) {
	if !f.appendAcc(b, frame, ts, ack, hasAck) {
		f.skipFront(len(f.acc))
		f.flushSkip(frame)
		f.fl.a.stats.NoMemoryBytes += uint64(len(b))
		f.reportGap(f.pos, f.off, uint64(len(b)), GapNoMemory, frame, f.estimate(uint64(len(b)), false))
		f.pos += uint32(len(b))
		f.off += uint64(len(b))
		f.resetScan()
		return
	}
	if f.st == stDetect {
		f.examined += len(b)
		if f.scanKey(frame, ts) {
			return
		}
	}
	if f.tryHunt(false, frame) {
		return
	}
	if f.st == stDetect && !f.fl.c.IWARP && !f.fl.declared {
		limit := f.fl.a.cfg.DetectLimit
		if f.promising {
			// A candidate with a whole valid FPDU waits for the next
			// ones: large FPDUs (64 KiB with siw's GSO) need room.
			limit *= 4
		}
		if f.examined > limit {
			f.giveUp()
		}
	}
}

// tryHunt looks for a boundary in acc. When it finds one it switches to
// stFPDU and replays acc from there, and reports true. Otherwise it drops the
// octets that can no longer hold a boundary (reported as skipped). final says
// no more octets will follow acc (a gap or the end).
func (f *framer) tryHunt(final bool, frame int) bool {
	a := f.fl.a
	f.promising = false
	c, h, r, ok := f.search(final)
	if ok {
		f.accept(c, h, r, frame)
		return true
	}
	if final {
		return false
	}
	// Octets before the first undecided candidate hold no boundary.
	cut := f.scanned
	if len(f.live) > 0 {
		cut = min(cut, int(f.live[0].o))
	}
	if f.anchor {
		cut = 0
	}
	if f.st == stDetect {
		cut = min(cut, f.keyScan)
	}
	if f.params().MarkersSource == SourceUnknown {
		// Keep enough to infer a marker phase from.
		cut = min(cut, max(0, len(f.acc)-3*decode.MarkerSpacing-decode.MarkerLen))
	}
	if over := len(f.acc) - a.cfg.ResyncWindow; over > cut {
		cut = over
		f.anchor = false
	}
	// Drop the dead prefix only once it is as large as what stays: each
	// drop moves the rest of acc to its front, and random octets keep
	// candidates waiting for FPDUs of up to 64 KiB, so dropping at every
	// segment moved some 40 times the octets scanned.
	if cut > 0 && (2*cut >= len(f.acc) || f.anchor) {
		f.skipFront(cut)
	}
	return false
}

// search returns the earliest acceptable boundary in acc.
func (f *framer) search(final bool) (int, hyp, chainRes, bool) {
	fl := f.fl
	P := f.params()
	strict := !fl.c.IWARP
	need := fl.a.cfg.ChainLength
	crc := crcInfer
	if P.CRCSource == SourceHandshake || (P.CRCSource == SourceInferred && P.CRC) {
		crc = crcOff
		if P.CRC {
			crc = crcOn
		}
	}
	if f.anchor {
		// acc[0] starts the Full Operation Phase: only the parameters are
		// unknown. The first marker would sit right there (RFC 5044 §4.3).
		more := false
		for _, m := range [2]bool{true, false} {
			if P.MarkersSource == SourceHandshake && P.Markers != m {
				continue
			}
			h := hyp{markers: m, s0: f.pos, crc: crc, valid: true}
			if P.MarkersSource == SourceHandshake {
				h.s0 = P.S0
			}
			r := f.chain(0, h, 1, false, final)
			switch r.v {
			case vAccept:
				r.how = ResyncStart
				return 0, h, r, true
			case vMore:
				more = true
			}
		}
		if more && !final {
			return 0, hyp{}, chainRes{}, false
		}
		f.anchor = false
	}

	best, bestH, bestR := -1, hyp{}, chainRes{}
	try := func(c int, h hyp, r chainRes) {
		if best < 0 || c < best {
			best, bestH, bestR = c, h, r
		}
	}
	known := P.MarkersSource == SourceHandshake
	scanH := hyp{crc: crc, valid: true, open: !known}
	switch {
	case P.Markers && P.MarkersSource != SourceUnknown && f.s0Known:
		// The phase is known: the offset scan finds every FPDU a marker
		// points at, and the ones before it (scan labels the resync by
		// markers when they pointed right).
		scanH.markers, scanH.s0, scanH.open = true, P.S0, false
	case known && !P.Markers:
		// No markers, for sure.
	default:
		// Markers possible (or known, at an unknown phase): infer the phase
		// from marker-like words.
		var phases [8]uint32
		for _, s0 := range f.phases(phases[:0]) {
			h := hyp{markers: true, s0: s0, crc: crc, valid: true}
			if c, r, ok := f.markerCands(h, need, strict, final, 8); ok {
				// FPDUs before the first one a marker points at (too small
				// to hold a marker) can be found now that the phase is.
				if c2, r2, ok := f.scanRange(h, need, strict, final, 0, c); ok {
					c, r = c2, r2
				}
				try(c, h, r)
			}
		}
		if known {
			// Markers for sure, phase unknown: no marker-free scan.
			scanH.valid = false
		}
	}
	if scanH.valid {
		if c, r, ok := f.scan(scanH, need, strict, final, best); ok {
			if r.markerOK > 0 {
				r.how = ResyncMarker
			}
			try(c, scanH, r)
		}
	}
	if best < 0 {
		return 0, hyp{}, chainRes{}, false
	}
	return best, bestH, bestR, true
}

// scan examines acc offsets in order (incrementally: offsets decided before
// are not examined again) under hypothesis h, and returns the first
// accepted one below limit (limit < 0: any).
func (f *framer) scan(h hyp, need int, strict, final bool, limit int) (int, chainRes, bool) {
	if h != f.scanHyp {
		f.scanned = 0
		f.live = f.live[:0]
		f.scanHyp = h
	}
	w := 0
	have := f.off + uint64(len(f.acc))
	tab := headTab(f.ver, strict)
	keys := keyTab(f.ver, strict)
	// quick: without markers, with CRCs possibly in use (examine's pre) or
	// a chain of two or more, a candidate inside a segment is refuted by
	// its successor's header whatever its own octets (quick, succBad).
	quick := quickScan && !h.markers && (h.crc != crcOff || need >= 2) && !final
	for i, c := range f.live {
		co := int(c.o)
		if limit >= 0 && co >= limit {
			copy(f.live[w:], f.live[i:])
			w += len(f.live) - i
			break
		}
		if c.ready > have && !final {
			// Still waiting: nothing new to examine.
			if w != i {
				f.live[w] = c
			}
			w++
			continue
		}
		if c.n > 0 && quick && f.succBad(co+int(c.n), tab) {
			continue // refuted by its successor's header
		}
		r := f.chainAt(co, h, need, strict, final, c.seg())
		switch r.v {
		case vAccept:
			f.live = f.live[:0]
			return co, r, true
		case vMore:
			if r.crcOn {
				f.promising = true
			}
			f.live[w] = liveCand{o: c.o, ready: r.ready, n: min(c.n, 0)}
			w++
		}
	}
	f.live = f.live[:w]
	end := len(f.acc)
	if limit >= 0 {
		end = min(end, limit)
	}
	// The candidates: with the alignment known, offsets at it and segment
	// starts; else every offset. Between two segment starts, the loop below
	// refutes most offsets of octets that are not FPDUs by their DDP and
	// RDMAP control octets (one look-up in headTab) and, for an untagged
	// segment, its queue number; what passes, about one offset in 60 of
	// random octets, goes through examine's checks (ULPDU_Length, the
	// successor's header, markers) before any CRC is computed.
	step := 1
	if f.align >= 0 {
		step = 4
	}
	acc := f.acc
	s0 := h.s0 - f.pos // the marker phase relative to acc[0]
	// The first segment starting at or after f.scanned (a binary search:
	// with tiny segments acc holds thousands, and walking them from the
	// first at every segment made the scan quadratic).
	si, hi := 0, len(f.segs)
	for si < hi {
		if m := int(uint(si+hi) >> 1); f.segs[m].at < f.scanned {
			si = m + 1
		} else {
			hi = m
		}
	}
	for o := f.scanned; o < end; {
		for si < len(f.segs) && f.segs[si].at < o {
			si++
		}
		stop := end
		if si < len(f.segs) && f.segs[si].at < stop {
			stop = f.segs[si].at
		}
		if o == stop {
			// A segment start: a candidate whatever its octets' alignment,
			// refuted at once (as head would) where its 12 octets hold no
			// marker and keys refutes them.
			clean := o+12 <= len(acc) && (!h.markers || ((uint32(o)-s0)%decode.MarkerSpacing)-1 < decode.MarkerSpacing-12)
			refuted := clean && quickScan && keyHit(keys, binary.BigEndian.Uint32(acc[o:]), binary.BigEndian.Uint32(acc[o+8:])) == 0
			if !refuted && (o > 0 || !f.headCut) {
				if r, ok := f.candidate(o, h, need, strict, final, true); ok {
					f.scanned = o + 1
					return o, r, true
				}
			}
			si++
			o++
			continue
		}
		if step == 4 {
			o += (f.align - int((f.pos+uint32(o))&3) + 4) & 3
		}
		for ; o < stop; o += step {
			// hi: the offsets in [o, hi) have their 12 octets at hand and
			// no marker among them, the common case.
			hi := min(stop, len(acc)-11)
			if h.markers {
				if mo := (uint32(o) - s0) % decode.MarkerSpacing; mo-1 < decode.MarkerSpacing-12 {
					hi = min(hi, o+int(decode.MarkerSpacing-11-mo))
				} else {
					hi = o
				}
			}
			if o < hi {
				// skip passes over the offsets that keys refutes, 98% of
				// random octets, four at a time.
				if o = skip(acc, o, hi, step, keys); o >= hi {
					o -= step // the loop's step brings o back to the first offset past hi
					continue
				}
				b := acc[o : o+12]
				if b[2]&decode.DDPFlagT == 0 && binary.BigEndian.Uint32(b[8:]) != opQN[b[3]&decode.RDMAPOpMask] {
					continue
				}
				if quick && f.quick(o, tab) {
					continue
				}
				if quickScan && h.markers && f.quickMarked(o, h.s0, strict) {
					continue
				}
				if r, ok := f.candidate(o, h, need, strict, final, false); ok {
					f.scanned = o + 1
					return o, r, true
				}
				continue
			}
			// The octets before the next marker are the FPDU's own.
			clean := len(acc) - o
			if h.markers {
				if mo := int((uint32(o) - s0) % decode.MarkerSpacing); mo == 0 {
					clean = 0 // a marker first: examine checks it
				} else {
					clean = min(clean, decode.MarkerSpacing-mo)
				}
			}
			if clean >= 4 {
				x := uint(acc[o+2])<<8 | uint(acc[o+3])
				if tab[x>>3]&(1<<(x&7)) == 0 {
					continue
				}
				if clean >= 12 && acc[o+2]&decode.DDPFlagT == 0 && binary.BigEndian.Uint32(acc[o+8:]) != opQN[acc[o+3]&decode.RDMAPOpMask] {
					continue
				}
			}
			if r, ok := f.candidate(o, h, need, strict, final, false); ok {
				f.scanned = o + 1
				return o, r, true
			}
		}
	}
	if end == len(f.acc) {
		f.scanned = end
	}
	return 0, chainRes{}, false
}

// candidate examines the chain at acc[o] (atSeg: a segment starts there)
// for scan: it accepts it, or keeps it in live while it waits for more
// octets.
func (f *framer) candidate(o int, h hyp, need int, strict, final, atSeg bool) (chainRes, bool) {
	seg := segNo
	if atSeg {
		seg = segYes
	}
	r := f.chainAt(o, h, need, strict, final, seg)
	switch r.v {
	case vAccept:
		return r, true
	case vMore:
		if r.crcOn || ((r.n > 0 || r.waiting) && atSeg) {
			// FPDUs with a matching CRC, or a valid header at a segment
			// start, waiting for more octets.
			f.promising = true
		}
		c := liveCand{o: int32(o), ready: r.ready}
		if atSeg {
			c.n = liveAtSeg
		}
		f.addLive(c)
	}
	return r, false
}

func (f *framer) addLive(c liveCand) {
	if len(f.live) >= maxLive {
		k := copy(f.live, f.live[maxLive/2:])
		f.live = f.live[:k]
	}
	f.live = append(f.live, c)
}

// quickScan enables scan's quick tests (quick, quickMarked); tests turn
// it off to check that they decide as chain does.
var quickScan = true

// quick decides, for scan and as chain would, most candidates at acc[o]
// whose 12 octets passed the scan's header tests: inside a segment, no
// markers, the successor's header checked first (examine's pre, or a
// chain of two or more without CRCs). A candidate whose ULPDU_Length is
// impossible or whose successor's header is not plausible is refuted; one
// whose FPDU is not at hand waits in f.live for it. It reports whether the
// candidate is decided; if not, chain examines it.
func (f *framer) quick(o int, tab *[8192]byte) bool {
	acc := f.acc
	f.fl.a.work++
	l := int(binary.BigEndian.Uint16(acc[o:]))
	if l < opMinULPDU[acc[o+3]&decode.RDMAPOpMask] || l > f.fl.a.cfg.MaxULPDU {
		return true
	}
	if f.hasBad && f.pos+uint32(o) == f.badPos {
		return false
	}
	n := decode.FPDULen(l)
	if o+n > len(acc) {
		f.addLive(liveCand{o: int32(o), ready: f.off + uint64(o+n), n: int32(n)})
		return true
	}
	return f.succBad(o+n, tab)
}

// quickMarked refutes, for scan and as chain would, a candidate at acc[o]
// whose 12 octets, with no marker among them, passed the scan's header
// tests, on a stream with markers at phase s0: by its ULPDU_Length, or by
// the first marker inside its FPDU, which must point back at its header
// (RFC 5044 §4.3; random octets pass one in 2^14). It reports whether it
// did; if not, chain examines the candidate.
func (f *framer) quickMarked(o int, s0 uint32, strict bool) bool {
	acc := f.acc
	f.fl.a.work++
	l := int(binary.BigEndian.Uint16(acc[o:]))
	if l < opMinULPDU[acc[o+3]&decode.RDMAPOpMask] || l > f.fl.a.cfg.MaxULPDU {
		return true
	}
	p := f.pos + uint32(o)
	if decode.MarkerOffset(p, s0) < decode.MarkerLen {
		return false // inside a marker: head decides
	}
	m := decode.NextMarkerPos(p+1, s0)
	k := o + int(m-p)
	// The FPDU's wire size is at least FPDULen(l): beyond m-p, the marker
	// at m is inside it.
	if decode.FPDULen(l) <= int(m-p) || k+decode.MarkerLen > len(acc) {
		return false
	}
	return binary.BigEndian.Uint16(acc[k+2:])&^3 != decode.ExpectedFPDUPTR(m, p, s0)&^3 || (strict && binary.BigEndian.Uint16(acc[k:]) != 0)
}

// succBad reports whether the FPDU header at acc[s] (no markers) is all at
// hand and not plausible: head would find it bad. tab is headTab's for the
// direction.
func (f *framer) succBad(s int, tab *[8192]byte) bool {
	acc := f.acc
	if s < 0 || s+decode.ULPDULenLen+2 > len(acc) {
		return false
	}
	l := int(binary.BigEndian.Uint16(acc[s:]))
	if l < minULPDU || l > f.fl.a.cfg.MaxULPDU {
		return true
	}
	ctrl, rc := acc[s+2], acc[s+3]
	if s+decode.ULPDULenLen+headNeed(ctrl) > len(acc) {
		return false // head checks only the version pair: not decided here
	}
	x := uint(ctrl)<<8 | uint(rc)
	if tab[x>>3]&(1<<(x&7)) == 0 || l < opMinULPDU[rc&decode.RDMAPOpMask] {
		return true
	}
	return ctrl&decode.DDPFlagT == 0 && binary.BigEndian.Uint32(acc[s+8:]) != opQN[rc&decode.RDMAPOpMask]
}

// opMinULPDU is the smallest ULPDU_Length plausibleHead accepts for each
// RDMAP opcode: the DDP header and the RDMAP header of its kind.
var opMinULPDU = func() (m [16]int) {
	for op := range m {
		o := decode.Opcode(op)
		m[op] = decode.DDPUntaggedHdrLen + o.HeaderLen()
		if o.Tagged() {
			m[op] = decode.DDPTaggedHdrLen + o.HeaderLen()
		}
	}
	return m
}()

// head checks the header of the FPDU candidate at the start of w (stream
// position p): its ULPDU_Length is possible and its DDP and RDMAP headers
// are plausible (plausibleHead), with markers taken out. It returns exOK
// and the FPDU's wire size, exBad, or exMore and the octets from w's start
// needed to tell.
func (f *framer) head(w []byte, p uint32, h *hyp, strict bool) (int, exState) {
	var hb [20]byte
	var hdr []byte
	if h.markers {
		if off := decode.MarkerOffset(p, h.s0); off == 0 {
			if len(w) < decode.MarkerLen {
				return len(w) + 1, exMore
			}
			// A marker at an FPDU start lies between FPDUs: FPDUPTR 0.
			if binary.BigEndian.Uint16(w[2:])&^3 != 0 || (strict && binary.BigEndian.Uint16(w) != 0) {
				return 0, exBad
			}
		} else if off < decode.MarkerLen {
			return 0, exBad
		}
		hdr = decode.AppendUnmarked(hb[:0], w, p, h.s0, len(hb))
	} else {
		hdr = w[:min(len(w), len(hb))]
	}
	if len(hdr) < decode.ULPDULenLen+2 {
		if len(hdr) >= 2 && int(binary.BigEndian.Uint16(hdr)) < minULPDU {
			return 0, exBad
		}
		return len(w) + 1, exMore
	}
	l := int(binary.BigEndian.Uint16(hdr))
	if l < minULPDU || l > f.fl.a.cfg.MaxULPDU {
		return 0, exBad
	}
	u := hdr[decode.ULPDULenLen:]
	if need := headNeed(u[0]); len(u) < need {
		// Check what is there: the version pair first.
		if dv, rv := u[0]&decode.DDPDVMask, u[1]>>6; dv > 1 || rv > 1 || (f.ver >= 0 && int(dv)<<2|int(rv) != f.ver) {
			return 0, exBad
		}
		if h.markers {
			return decode.WireSpan(p, h.s0, decode.ULPDULenLen+need), exMore
		}
		return decode.ULPDULenLen + need, exMore
	}
	if !plausibleHead(u, l, strict, f.ver) {
		return 0, exBad
	}
	if h.markers {
		return decode.FPDUWireLen(p, h.s0, l), exOK
	}
	return decode.FPDULen(l), exOK
}

// segStart reports whether a delivered segment starts at acc offset o.
func (f *framer) segStart(o int) bool {
	lo, hi := 0, len(f.segs)
	for lo < hi {
		m := (lo + hi) / 2
		if f.segs[m].at < o {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < len(f.segs) && f.segs[lo].at == o && (o > 0 || !f.headCut)
}

// headTab returns, as a bitmap indexed by ctrl<<8|rc, the pairs of DDP
// control and RDMAP control octets that plausibleHead accepts for the
// version pair ver (-1: unknown) and strict, whatever the ULPDU_Length and
// queue number: the scan's first test of an offset. The 34 tables are built
// on first use.
func headTab(ver int, strict bool) *[8192]byte {
	i := (ver + 1) * 2
	if strict {
		i++
	}
	if t := headTabs[i].Load(); t != nil {
		return t
	}
	t := new([8192]byte)
	var u [10]byte
	for x := range 1 << 16 {
		u[0], u[1] = byte(x>>8), byte(x)
		binary.BigEndian.PutUint32(u[6:], opQN[u[1]&decode.RDMAPOpMask])
		if plausibleHead(u[:], 0xFFFF, strict, ver) {
			t[x>>3] |= 1 << (x & 7)
		}
	}
	headTabs[i].Store(t)
	return t
}

var headTabs [34]atomic.Pointer[[8192]byte]

// keySet is the scan's first test of an offset (keyTab).
type keySet struct {
	// bits is a bitmap indexed by key (keyHit: a 17-bit summary of a
	// candidate's 12 octets) of the keys that headTab and the queue number
	// test of an untagged segment can pass: the DDP and RDMAP control
	// octets, and whether the word where an untagged segment has its queue
	// number exceeds every queue number (RFC 5040 §4.1, RFC 7306 §4.1).
	// Random octets pass in about one offset in 64 (the tagged segments
	// headTab accepts) where headTab alone passes up to one in 11 (untagged
	// ones, refuted next by their queue number).
	bits [1 << 14]byte
	// The bits that every tagged control pair in bits has (tm, tv), and
	// the queue number bits no untagged segment has (qm), as masks of two
	// 32-bit little-endian lanes, each a candidate's first word (skip's
	// test of four offsets at once).
	tm, tv, qm uint64
}

// keyTab returns the keySet for the version pair ver (-1: unknown) and
// strict, built on first use from headTab.
func keyTab(ver int, strict bool) *keySet {
	i := (ver + 1) * 2
	if strict {
		i++
	}
	if t := keyTabs[i].Load(); t != nil {
		return t
	}
	ht := headTab(ver, strict)
	t := new(keySet)
	// and/or over the passing tagged pairs: the bits where and = or are
	// the same in all of them.
	and, or := uint32(0xFFFF), uint32(0)
	for x := range 1 << 16 {
		if ht[x>>3]&(1<<(x&7)) == 0 {
			continue
		}
		t.bits[x>>3] |= 1 << (x & 7)
		if x>>8&decode.DDPFlagT != 0 {
			k := x | 1<<16 // a tagged segment has no queue number
			t.bits[k>>3] |= 1 << (k & 7)
			and &= uint32(x)
			or |= uint32(x)
		}
	}
	// lanes places a control pair's bits (ctrl<<8 | rc) where they sit in
	// both lanes: the control octets are a lane's third and fourth.
	lanes := func(x uint32) uint64 {
		l := uint64(x>>8&0xFF)<<16 | uint64(x&0xFF)<<24
		return l | l<<32
	}
	if and > or {
		t.tm, t.tv = 0, 1<<16|1<<48 // none passes: a lane never matches
	} else {
		c := ^(and ^ or) & 0xFFFF
		t.tm, t.tv = lanes(c), lanes(and&c)
	}
	// A queue number word at most maxQN: the bits above maxQN's are 0.
	q := uint64(bits.ReverseBytes32(^(uint32(1)<<bits.Len32(maxQN) - 1)))
	t.qm = q | q<<32
	keyTabs[i].Store(t)
	return t
}

var keyTabs [34]atomic.Pointer[keySet]

// maxQN is the largest queue number an untagged segment names.
var maxQN = func() (m uint32) {
	for op := range opQN {
		if o := decode.Opcode(op); o.Known() && !o.Tagged() {
			m = max(m, opQN[op])
		}
	}
	return m
}()

// keyHit looks a candidate up in keys: w is the big-endian word at its
// start (ULPDU_Length, DDP and RDMAP control), q the one 8 octets on (an
// untagged segment's queue number). It returns 1 if the candidate passes,
// without a branch.
func keyHit(keys *keySet, w, q uint32) byte {
	k := w&0xFFFF | uint32((uint64(maxQN)-uint64(q))>>63)<<16
	return keys.bits[k>>3] >> (k & 7) & 1
}

// skip returns the first of the offsets o, o+step, … below hi that passes
// keys, or the first at or past hi if none does; acc holds 12 octets from
// each (hi+11 <= len(acc)). step is 1 or 4. The offsets of 16 octets are
// tested at once with one branch (mayPass: at step 1, four times), and
// those of a group that may pass one by one by keyHit.
func skip(acc []byte, o, hi, step int, keys *keySet) int {
	be, le := binary.BigEndian, binary.LittleEndian
	tm, tv, qm := keys.tm, keys.tv, keys.qm
	for {
		if step == 4 {
			for ; o+16 <= hi; o += 16 {
				s := acc[o : o+24]
				if mayPass(le.Uint64(s[0:]), le.Uint64(s[8:]), le.Uint64(s[16:]), tm, tv, qm) != 0 {
					break
				}
			}
		} else {
			for ; o+16 <= hi; o += 16 {
				s := acc[o : o+27]
				if mayPass(le.Uint64(s[0:]), le.Uint64(s[8:]), le.Uint64(s[16:]), tm, tv, qm)|
					mayPass(le.Uint64(s[1:]), le.Uint64(s[9:]), le.Uint64(s[17:]), tm, tv, qm)|
					mayPass(le.Uint64(s[2:]), le.Uint64(s[10:]), le.Uint64(s[18:]), tm, tv, qm)|
					mayPass(le.Uint64(s[3:]), le.Uint64(s[11:]), le.Uint64(s[19:]), tm, tv, qm) != 0 {
					break
				}
			}
		}
		// The group that may pass, or the last offsets before hi.
		for end := min(hi, o+16); o < end; o += step {
			s := acc[o : o+12]
			if keyHit(keys, be.Uint32(s[0:]), be.Uint32(s[8:])) != 0 {
				return o
			}
		}
		if o >= hi {
			return o
		}
	}
}

// mayPass tests the four candidates at 0, 4, 8 and 12 octets into the
// little-endian words a, b, c (24 octets) as two-lane vectors, without a
// branch: it returns 0 if keys refutes all four (keySet's masks: tagged
// control octets against the bits every passing pair has, untagged ones by
// their queue number word alone, which in random octets passes once in
// 2^30).
func mayPass(a, b, c, tm, tv, qm uint64) uint64 {
	const lo, top = 0x0000_0001_0000_0001, 0x8000_0000_8000_0000
	// A lane of x (tagged) or y (untagged) is 0 where a candidate may pass.
	x1, y1 := a&tm^tv, b&qm
	x2, y2 := b&tm^tv, c&qm
	return ((x1-lo)&^x1 | (y1-lo)&^y1 | (x2-lo)&^x2 | (y2-lo)&^y2) & top
}

// opQN is the queue number an untagged segment of each opcode names
// (RFC 5040 §4.1, RFC 7306 §4.1).
var opQN = func() (q [16]uint32) {
	for op := range q {
		q[op] = decode.Opcode(op).QN()
	}
	return q
}()

// scanRange examines the offsets in [from, to) under h, without the
// incremental state of scan, and returns the first accepted one.
func (f *framer) scanRange(h hyp, need int, strict, final bool, from, to int) (int, chainRes, bool) {
	for o := from; o < to; o++ {
		if f.align >= 0 && int((f.pos+uint32(o))&3) != f.align {
			continue
		}
		if r := f.chain(o, h, need, strict, final); r.v == vAccept {
			return o, r, true
		}
	}
	return 0, chainRes{}, false
}

// markerCands examines the FPDUs that the first maxMarks markers in acc
// point at (markers at a phase being inferred).
func (f *framer) markerCands(h hyp, need int, strict, final bool, maxMarks int) (int, chainRes, bool) {
	last := -1
	m := decode.NextMarkerPos(f.pos, h.s0)
	for k := 0; k < maxMarks; k++ {
		o := int(m - f.pos)
		if o+decode.MarkerLen > len(f.acc) || o < 0 {
			break
		}
		ptr := binary.BigEndian.Uint16(f.acc[o+2:]) &^ 3
		m += decode.MarkerSpacing
		start := m - decode.MarkerSpacing
		if ptr != 0 {
			hp := start - uint32(ptr)
			start = hp
			if decode.IsMarkerPos(hp-decode.MarkerLen, h.s0) {
				start = hp - decode.MarkerLen
			}
		}
		so := int(int32(start - f.pos))
		if so < 0 || so >= len(f.acc) || so == last {
			continue
		}
		last = so
		r := f.chain(so, h, need, strict, final)
		if r.v == vAccept {
			if ptr != 0 || r.markerOK > 0 {
				r.how = ResyncMarker
			}
			return so, r, true
		}
	}
	return 0, chainRes{}, false
}

// phaseSpan is the octets from acc's start that phases reads: four words
// 512 octets apart from each of 512 phases.
const phaseSpan = decode.MarkerSpacing - 1 + 3*decode.MarkerSpacing + decode.MarkerLen

// phases returns candidate first-marker positions for a direction whose
// markers are not known: phases at which up to four words 512 octets apart
// all look like markers (Reserved 0, FPDUPTR a multiple of 4) and point at
// FPDU headers that do not go backwards.
func (f *framer) phases(dst []uint32) []uint32 {
	b := f.acc
	// The words read lie in acc's first phaseSpan octets: while those are
	// the same, so is the answer (tiny segments ask once per octet).
	n := min(len(b), phaseSpan)
	if f.phOK && f.phOff == f.off && f.phPos == f.pos && f.phLen == n && f.phN <= cap(dst) {
		return append(dst, f.ph[:f.phN]...)
	}
	start := len(dst)
	defer func() {
		f.phOK, f.phOff, f.phPos, f.phLen = true, f.off, f.pos, n
		f.phN = copy(f.ph[:], dst[start:])
	}()
	if len(b) < 2*decode.MarkerSpacing+decode.MarkerLen {
		return dst
	}
	for ph := 0; ph < decode.MarkerSpacing && len(dst) < cap(dst); ph++ {
		cnt, nz := 0, 0
		var prev uint32
		ok := true
		for o := ph; o+decode.MarkerLen <= len(b) && cnt < 4; o += decode.MarkerSpacing {
			res := binary.BigEndian.Uint16(b[o:])
			ptr := binary.BigEndian.Uint16(b[o+2:])
			if res != 0 || ptr&3 != 0 {
				ok = false
				break
			}
			m := f.pos + uint32(o)
			hp := m + decode.MarkerLen
			if ptr != 0 {
				hp = m - uint32(ptr)
				nz++
			}
			if cnt > 0 && int32(hp-prev) < 0 {
				ok = false
				break
			}
			prev = hp
			cnt++
		}
		if ok && cnt >= 2 && nz > 0 {
			dst = append(dst, f.pos+uint32(ph))
		}
	}
	return dst
}

// chain validates up to need FPDUs from acc[o] under hypothesis h.
func (f *framer) chain(o int, h hyp, need int, strict, final bool) chainRes {
	return f.chainAt(o, h, need, strict, final, segAsk)
}

// chainAt is chain with whether a segment starts at acc[o] (seg) known.
func (f *framer) chainAt(o int, h hyp, need int, strict, final bool, seg segKnown) chainRes {
	var r chainRes
	crc := h.crc
	p := f.pos + uint32(o)
	if f.hasBad && p == f.badPos {
		return r // where the framing was just found wrong
	}
	span, minSpan := 0, 0
	if h.open && !final {
		minSpan = decode.MarkerSpacing + decode.MarkerLen
	}
	for r.n < need || span < minSpan {
		// A first FPDU that no segment starts at has its successor's
		// header checked before its CRC is computed (see examine).
		pre := r.n == 0 && crc != crcOff && !h.markers && (seg == segNo || (seg == segAsk && !f.segStart(o)))
		n, st, match, mk := f.examine(f.acc[o:], p, &h, crc, strict, pre, r.n == 0, final)
		switch st {
		case exBad:
			if r.n > 0 && (r.markerOK > 0 || r.crcOn) && span >= minSpan {
				return f.accepted(r, need)
			}
			r.v = vReject
			return r
		case exMore:
			if r.n > 0 && (r.markerOK > 0 || r.crcOn || (final && !strict)) && span >= minSpan {
				return f.accepted(r, need)
			}
			r.waiting = n > 0
			if n > 0 {
				r.ready = f.off + uint64(o+n)
			} else {
				r.ready = f.off + uint64(len(f.acc)) + 1
			}
			if final {
				r.v = vReject
			} else {
				r.v = vMore
			}
			return r
		}
		if crc == crcInfer {
			crc = crcOff
			if match {
				crc = crcOn
			}
		}
		if crc == crcOn {
			r.crcOn = true
		}
		r.n++
		r.markerOK += mk
		span += n
		o += n
		p += uint32(n)
	}
	return f.accepted(r, need)
}

func (f *framer) accepted(r chainRes, need int) chainRes {
	r.v = vAccept
	switch {
	case r.n >= need:
		r.how = ResyncChain
	case r.markerOK > 0:
		r.how = ResyncMarker
	case r.crcOn:
		r.how = ResyncCRC
	default:
		r.how = ResyncChain
	}
	return r
}

// examine checks the FPDU candidate at the start of w (stream position p).
// It returns the FPDU's wire size, whether it is bad, needs more octets or
// is valid, whether its CRC matched, and how many of its markers with a
// non-zero FPDUPTR pointed right.
//
// pre (a first FPDU of a chain, CRCs possibly in use, no markers, not at a
// segment start) checks the successor's header before the CRC: in octets
// that are not FPDUs about one offset in 60 passes the scan's first tests
// and waits for its FPDU of up to 64 KiB, and computing the CRC of each
// made the scan of random octets cost some 500 times their length
// (45 MB/s). With the successor's header first (head), only about one
// offset in 4000 costs a CRC. The price: a real FPDU inside a segment whose
// next header is odd is not a boundary candidate (the chain would stop at
// that header anyway, and its successor's segment start is one). While the
// successor's header is not at hand, the candidate waits (exMore). With
// markers, those inside the FPDU are checked before its CRC instead.
func (f *framer) examine(w []byte, p uint32, h *hyp, crc crcMode, strict, pre, first, final bool) (int, exState, bool, int) {
	a := f.fl.a
	a.work++
	n, st := f.head(w, p, h, strict)
	if st != exOK {
		return 0, st, false, 0
	}
	if len(w) < n {
		if h.markers && first && !final {
			// The markers at hand refute the first FPDU of a chain now
			// rather than when all its octets are (random octets: one
			// in 2^14 passes), and the chain waits for the next marker
			// rather than for all of an FPDU of up to 64 KiB.
			for m := decode.NextMarkerPos(p+1, h.s0); m-p < uint32(n); m += decode.MarkerSpacing {
				if e := int(m-p) + decode.MarkerLen; e > len(w) {
					return e, exMore, false, 0
				}
				mw := w[m-p:]
				if binary.BigEndian.Uint16(mw[2:])&^3 != decode.ExpectedFPDUPTR(m, p, h.s0)&^3 || (strict && binary.BigEndian.Uint16(mw) != 0) {
					return 0, exBad, false, 0
				}
			}
		}
		return n, exMore, false, 0
	}
	if pre {
		switch m, st := f.head(w[n:], p+uint32(n), h, strict); {
		case st == exBad:
			return 0, exBad, false, 0
		case st == exMore && !final:
			return n + m, exMore, false, 0
		}
	}
	if h.markers {
		// The markers inside the FPDU point back at its header (RFC 5044
		// §4.3): checked before the octets are copied out and their CRC
		// computed, they refute all but one candidate in 2^14 of octets
		// that are not an FPDU.
		for m := decode.NextMarkerPos(p+1, h.s0); m-p < uint32(n); m += decode.MarkerSpacing {
			mw := w[m-p:]
			if binary.BigEndian.Uint16(mw[2:])&^3 != decode.ExpectedFPDUPTR(m, p, h.s0)&^3 || (strict && binary.BigEndian.Uint16(mw) != 0) {
				return 0, exBad, false, 0
			}
		}
	}
	if crc != crcOff || h.markers {
		a.work += uint64(n) // the octets are read: CRC, markers
	}
	fp := &a.fp
	var match bool
	mk := 0
	if h.markers {
		_, crcv, marks, err := decode.ParseFPDUWithMarkers(w[:n], p, h.s0, a.scratch, fp, a.marks[:0])
		if err != nil {
			return 0, exBad, false, 0
		}
		a.marks = marks
		for _, m := range marks {
			want := decode.ExpectedFPDUPTR(m.Pos, p, h.s0) &^ 3
			if m.Marker.FPDUPTR&^3 != want || (strict && m.Marker.Reserved != 0) {
				return 0, exBad, false, 0
			}
			if want != 0 {
				mk++
			}
		}
		match = crcMatch(crcv, fp.CRC)
	} else {
		if _, err := decode.ParseFPDU(w[:n], fp); err != nil {
			return 0, exBad, false, 0
		}
		if crc != crcOff {
			match = crcMatch(fp.ComputedCRC(), fp.CRC)
		}
	}
	if strict {
		for _, c := range fp.Pad {
			if c != 0 {
				return 0, exBad, false, 0
			}
		}
	}
	if crc == crcOn && !match {
		return 0, exBad, false, 0
	}
	return n, exOK, match, mk
}

// crcMatch reports whether a CRC field vouches for the octets it covers:
// it holds their CRC32c, or (a sender that writes it in the wrong byte
// order; emitFPDU names the defect) the same value byte-swapped. Either way
// a chance match on octets that are not an FPDU is 2 in 2^32.
func crcMatch(computed, field uint32) bool {
	return computed == field || bits.ReverseBytes32(computed) == field
}

// accept takes the boundary at acc[c] found under h: parameters that were
// not known are recorded as inferred, the skipped octets and the resync are
// reported, and acc is replayed from c in sync.
func (f *framer) accept(c int, h hyp, r chainRes, frame int) {
	fl := f.fl
	a := fl.a
	conn := &fl.c
	P := &conn.Params[f.d]
	changed := false
	if P.MarkersSource != SourceHandshake {
		if P.MarkersSource != SourceInferred || P.Markers != h.markers || (h.markers && decode.MarkerOffset(P.S0, h.s0) != 0) {
			changed = true
		}
		P.Markers, P.MarkersSource = h.markers, SourceInferred
	}
	if h.markers {
		if !f.s0Known || decode.MarkerOffset(P.S0, h.s0) != 0 {
			changed = true
		}
		P.S0 = h.s0
		f.s0Known = true
	}
	if P.CRCSource != SourceHandshake {
		if P.CRCSource != SourceInferred || P.CRC != r.crcOn {
			changed = true
		}
		P.CRC, P.CRCSource = r.crcOn, SourceInferred
	}
	if !conn.IWARP {
		fl.becomeIWARP()
	}
	if changed {
		a.h.Negotiated(conn, f.d)
	}
	// CRC use is one for both directions (RFC 5044 §7.1.1).
	if O := &conn.Params[f.d.Other()]; O.CRCSource == SourceUnknown && P.CRC {
		O.CRC, O.CRCSource = true, SourceInferred
		a.h.Negotiated(conn, f.d.Other())
	}
	f.skipFront(c)
	skipped := f.flushSkip(frame)
	a.stats.Resyncs++
	a.evResync = ResyncEvent{Dir: f.d, How: r.how, Seq: f.pos, Offset: f.off, Frame: frame, Chain: r.n, Skipped: skipped}
	a.h.Resync(conn, &a.evResync)
	f.st = stFPDU
	f.anchor = false
	f.align = int(f.pos & 3)
	f.replayFrom(0)
}

// snapAligned handles a frame cut by the snaplen while no boundary is known.
// A cut frame leaves too few octets for a chain, but its length is known:
// when a plausible FPDU header at the start of the frame's captured octets
// (after any whole FPDUs there) announces an FPDU that ends exactly where the
// frame ended, the frame is FPDU-aligned, as senders align them (RFC 5044
// §5.1). One such frame is enough in a known iWARP stream; Config.ChainLength
// consecutive ones recognize a stream. On acceptance the framer is in sync at
// the frame's start (the caller then handles the gap in sync) and it reports
// true.
func (f *framer) snapAligned(miss uint64, frame int) bool {
	if len(f.segs) == 0 {
		f.snapRun = 0
		return false
	}
	P := f.params()
	o := f.segs[len(f.segs)-1].at
	h := hyp{crc: crcOff, valid: true}
	switch {
	case P.MarkersSource != SourceUnknown && P.Markers && f.s0Known:
		h.markers, h.s0 = true, P.S0
	case P.MarkersSource != SourceUnknown && P.Markers:
		f.snapRun = 0
		return false // markers at an unknown phase
	}
	strict := !f.fl.c.IWARP
	end := uint64(len(f.acc)-o) + miss // the frame's octets from o
	w := f.acc[o:]
	p := f.pos + uint32(o)
	var at uint64
	n := 0
	ok := false
	for {
		l, st, _, _ := f.examine(w, p, &h, crcOff, strict, false, false, false)
		if st == exBad || l == 0 {
			break
		}
		if st == exMore {
			ok = at+uint64(l) == end
			break
		}
		n++
		w = w[l:]
		p += uint32(l)
		at += uint64(l)
	}
	if !ok {
		f.snapRun = 0
		return false
	}
	f.snapRun++
	if strict && f.snapRun < f.fl.a.cfg.ChainLength {
		return false
	}
	fl := f.fl
	a := fl.a
	conn := &fl.c
	if !conn.IWARP {
		fl.becomeIWARP()
	}
	if P.MarkersSource == SourceUnknown {
		P.Markers, P.MarkersSource = false, SourceInferred
		a.h.Negotiated(conn, f.d)
	}
	f.skipFront(o)
	skipped := f.flushSkip(frame)
	a.stats.Resyncs++
	a.evResync = ResyncEvent{Dir: f.d, How: ResyncChain, Seq: f.pos, Offset: f.off, Frame: frame, Chain: f.snapRun, Skipped: skipped}
	a.h.Resync(conn, &a.evResync)
	f.snapRun = 0
	f.st = stFPDU
	f.anchor = false
	f.align = int(f.pos & 3)
	f.replayFrom(0)
	return true
}
