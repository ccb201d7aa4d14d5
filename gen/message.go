package gen

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
)

// Defaults of the header impairments.
var zeroPad [4]byte

const (
	defaultMSNSkip     = 5
	defaultBadQN       = 7
	defaultBadVersion  = 2
	defaultSingleMO    = 4096
	defaultRespOver    = 64
	unknownSTagPattern = 0xDEAD0000
)

// sendMessage segments m as DDP does (RFC 5041 §5.2: at most MULPDU per
// segment, untagged MO and tagged TO advancing, L on the last) and appends
// the FPDUs to the stream.
func (h *half) sendMessage(m *message) error {
	g := h.g
	c := h.c
	g.stats.Messages++
	hdrLen := decode.DDPUntaggedHdrLen
	if m.tagged {
		hdrLen = decode.DDPTaggedHdrLen
	}
	hdrLen += m.opc.HeaderLen()
	maxPay := h.mulpdu - hdrLen
	if maxPay < 1 {
		maxPay = 1
	}
	if m.opc == decode.OpAtomicRequest {
		m.areq.RequestID = h.reqID
		h.reqID++
	}
	nseg := 1
	if m.size > maxPay {
		nseg = (m.size + maxPay - 1) / maxPay
	}
	first := h.nFPDU + 1
	// Message-wide impairments (explicit, then random).
	dv, rv := h.dv, h.rv
	msn, qn, stag := m.msn, m.qn, m.stag
	var its []*ImpairmentTruth
	finds := m.finds
	apply := func(kind string, val *uint64, random bool) error {
		it := g.newImpTruth(h, kind, random)
		it.FPDU = first
		its = append(its, it)
		v := func(def uint64) uint64 {
			if val != nil {
				return *val
			}
			return def
		}
		switch kind {
		case ImpWrongMSN:
			nv := uint32(v(uint64(m.msn) + defaultMSNSkip))
			it.Field, it.Old, it.New = "ddp.msn", uint64(m.msn), uint64(nv)
			it.Detail = fmt.Sprintf("MSN %d instead of %d on QN %d; the sender counts on from it", nv, m.msn, m.qn)
			msn = nv
			switch {
			case int32(nv-m.msn) > 0:
				finds = append(finds, pendingFinding{finding.DDPMSNGap, 0, fmt.Sprintf("QN %d MSN %d, expected %d", m.qn, nv, m.msn)})
			case nv != m.msn:
				finds = append(finds, pendingFinding{finding.DDPMSNRepeat, 0, fmt.Sprintf("QN %d MSN %d, expected %d", m.qn, nv, m.msn)})
			}
		case ImpWrongQN:
			nv := uint32(v(defaultBadQN))
			it.Field, it.Old, it.New = "ddp.qn", uint64(m.qn), uint64(nv)
			it.Detail = fmt.Sprintf("QN %d instead of %d; the QN %d MSN count is not consumed", nv, m.qn, m.qn)
			qn = nv
			if nv > decode.QNAtomicResp {
				finds = append(finds, pendingFinding{finding.DDPQNInvalid, 0, fmt.Sprintf("QN %d is not an RDMAP queue", nv)})
			} else if nv != m.qn {
				finds = append(finds, pendingFinding{finding.RDMAPOpcodeMismatch, 0, fmt.Sprintf("%s on QN %d", m.opc, nv)})
			}
		case ImpBadDDPVersion:
			nv := uint8(v(defaultBadVersion) & 3)
			it.Field, it.Old, it.New = "ddp.dv", uint64(h.dv), uint64(nv)
			it.Detail = fmt.Sprintf("DDP version %d on every segment of the message", nv)
			dv = nv
			if nv != h.dv {
				finds = append(finds, pendingFinding{finding.DDPDVInvalid, 0, fmt.Sprintf("DDP version %d, stream uses %d", nv, h.dv)})
			}
		case ImpBadRDMAPVersion:
			nv := uint8(v(defaultBadVersion) & 3)
			it.Field, it.Old, it.New = "rdmap.rv", uint64(h.rv), uint64(nv)
			it.Detail = fmt.Sprintf("RDMAP version %d on every segment of the message", nv)
			rv = nv
			if nv != h.rv {
				finds = append(finds, pendingFinding{finding.RDMAPRVInvalid, 0, fmt.Sprintf("RDMAP version %d, stream uses %d", nv, h.rv)})
			}
		case ImpMOOutOfOrder:
			if nseg >= 2 {
				m.moSwap = true
				it.Field, it.Old, it.New = "ddp.mo", 0, uint64(maxPay)
				it.Detail = fmt.Sprintf("the first two segments sent in swapped order: MO %d before MO 0", maxPay)
			} else {
				nv := uint32(v(defaultSingleMO))
				m.moValue = &nv
				it.Field, it.Old, it.New = "ddp.mo", 0, uint64(nv)
				it.Detail = fmt.Sprintf("single-segment message with MO %d", nv)
			}
			finds = append(finds, pendingFinding{finding.DDPMOGap, 0, "message does not start at MO 0"})
		case ImpUnknownSTag:
			nv := uint32(unknownSTagPattern | uint32(it.ID&0xFFFF))
			it.Field, it.Old, it.New = "ddp.stag", uint64(m.stag), uint64(nv)
			stag = nv
			if m.opc == decode.OpReadResponse {
				it.Detail = fmt.Sprintf("Read Response to STag %#x, not the Read Request's Data Sink STag", nv)
				finds = append(finds, pendingFinding{finding.RDMAPReadResponseMismatch, 0, it.Detail})
			} else {
				// No finding: an analyzer learns of advertised STags only
				// through Read Requests, Send with Invalidate or a ULP
				// (receiver-checks DDP-08: invisible without them).
				it.Detail = fmt.Sprintf("RDMA Write to STag %#x that was never advertised", nv)
			}
		case ImpReadResponseTooLong:
			over := int(min(v(defaultRespOver), 1<<20))
			it.Field, it.Old, it.New = "rdmap.read_response_len", uint64(m.size), uint64(m.size+over)
			it.Detail = fmt.Sprintf("Read Response of %d octets for a %d-octet Read Request", m.size+over, m.size)
			m.respOver = over
			m.respOverImp = it.ID
		}
		return nil
	}
	for _, p := range h.fpduImps {
		if p.done || p.im.Kind == ImpCorruptCRC {
			continue
		}
		hit := false
		if p.op >= 0 {
			hit = p.op == m.opIdx && c.rep == 0 && c.pass == 0 && p.target == b2i(m.resp) && !m.rtr
		} else {
			hit = p.fpdu <= first+nseg-1
		}
		if hit && eligible(p.im.Kind, m) {
			p.done = true
			if err := apply(p.im.Kind, p.im.Value, false); err != nil {
				return err
			}
		}
	}
	if g.rates && g.sc.Rates.CorruptHeader > 0 && g.rng.Float64() < g.sc.Rates.CorruptHeader {
		kinds := []string{ImpBadDDPVersion, ImpBadRDMAPVersion}
		if !m.tagged {
			kinds = append(kinds, ImpWrongMSN, ImpWrongQN)
		}
		if err := apply(kinds[g.rng.IntN(len(kinds))], nil, true); err != nil {
			return err
		}
	}
	// Recompute the segmentation if the size changed.
	size := m.size + m.respOver
	nseg = 1
	if size > maxPay {
		nseg = (size + maxPay - 1) / maxPay
	}
	if !m.tagged && qn == m.qn {
		// The sender's count for the queue goes on from the MSN sent.
		if qn < uint32(len(h.msn)) {
			h.msn[qn] = msn + 1
		}
	}
	var seg decode.Segment
	seg.RDMAP = decode.RDMAPControl{RV: rv, Opcode: m.opc}
	seg.InvalidateSTag = m.inv
	seg.ReadRequest = m.read
	seg.Terminate = m.term
	seg.AtomicRequest = m.areq
	seg.AtomicResponse = m.aresp
	seg.ImmData = m.imm
	respTotal := m.size // the requested size, for read_response_too_long
	overReported := false
	// What the message itself breaks, whatever the impairments (values the
	// scenario chose): STag 0 used remotely, TOs that wrap 2^64.
	switch m.opc {
	case decode.OpReadRequest:
		rr := &m.read
		if rr.Size > 0 && rr.SrcSTag == 0 {
			finds = append(finds, pendingFinding{finding.RDMAPSTagZero, 0, "Read Request from Data Source STag 0"})
		}
		switch n := uint64(rr.Size); {
		case n > 0 && rr.SrcTO+n-1 < rr.SrcTO:
			finds = append(finds, pendingFinding{finding.RDMAPReadTOWrap, 0, fmt.Sprintf("SrcTO %#x + %d octets wraps 2^64", rr.SrcTO, n)})
		case n > 0 && rr.SinkTO+n-1 < rr.SinkTO:
			finds = append(finds, pendingFinding{finding.RDMAPReadTOWrap, 0, fmt.Sprintf("SinkTO %#x + %d octets wraps 2^64", rr.SinkTO, n)})
		}
	case decode.OpSendInv, decode.OpSendSEInv:
		if m.inv == 0 {
			finds = append(finds, pendingFinding{finding.RDMAPSTagZero, 0, "Send with Invalidate of STag 0"})
		}
	case decode.OpAtomicRequest:
		if m.areq.RemoteSTag == 0 {
			finds = append(finds, pendingFinding{finding.RDMAPSTagZero, 0, "Atomic Request to STag 0"})
		}
	case decode.OpWrite, decode.OpReadResponse:
		if stag == 0 && size > 0 {
			finds = append(finds, pendingFinding{finding.DDPSTagZero, 0, fmt.Sprintf("%s of %d octets to STag 0", m.opc, size)})
		}
	}
	for k := 0; k < nseg; k++ {
		idx := k
		if m.moSwap && k < 2 {
			idx = 1 - k
		}
		off := idx * maxPay
		n := min(maxPay, size-off)
		if n < 0 {
			n = 0
		}
		seg.DDP = decode.DDPHeader{Tagged: m.tagged, Last: idx == nseg-1, DV: dv}
		if m.tagged {
			seg.DDP.STag, seg.DDP.TO = stag, m.to+uint64(off)
		} else {
			seg.DDP.QN, seg.DDP.MSN, seg.DDP.MO = qn, msn, uint32(off)
			if m.moValue != nil {
				seg.DDP.MO = *m.moValue
			}
		}
		seg.Payload = h.payload(m, off, n)
		var fpduFinds []pendingFinding
		if k == 0 {
			fpduFinds = finds
		}
		if m.tagged && n > 0 && seg.DDP.TO+uint64(n)-1 < seg.DDP.TO {
			fpduFinds = append(fpduFinds, pendingFinding{finding.DDPTOWrap, 0,
				fmt.Sprintf("%s to STag %#x: TO %#x + %d octets wraps 2^64", m.opc, stag, seg.DDP.TO, n)})
		}
		if m.respOver > 0 && !overReported && off+n > respTotal {
			overReported = true
			fpduFinds = append(fpduFinds, pendingFinding{finding.RDMAPReadResponseTooLong, m.respOverImp,
				fmt.Sprintf("Read Response reaches %d octets, Read Request asked for %d", size, respTotal)})
		}
		if err := h.appendFPDU(&seg, m, fpduFinds, its); err != nil {
			return err
		}
		its = nil
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// eligible says whether a message-wide impairment can act on m.
func eligible(kind string, m *message) bool {
	switch kind {
	case ImpWrongMSN, ImpWrongQN, ImpMOOutOfOrder:
		return !m.tagged
	case ImpUnknownSTag:
		return m.tagged && (m.opc == decode.OpWrite || m.opc == decode.OpReadResponse) && !m.rtr
	case ImpReadResponseTooLong:
		return m.opc == decode.OpReadResponse && !m.rtr
	}
	return true
}

// pendingFinding is a finding waiting for its FPDU's frame.
type pendingFinding struct {
	code finding.Code
	imp  int
	msg  string
}

// payload returns n octets of m's payload at offset off.
func (h *half) payload(m *message, off, n int) []byte {
	if n == 0 {
		return nil
	}
	if m.data != nil {
		if off+n <= len(m.data) {
			return m.data[off : off+n]
		}
		// A too-long read response runs past the data: pad with the pattern.
		h.payScratch = h.payScratch[:0]
		if off < len(m.data) {
			h.payScratch = append(h.payScratch, m.data[off:]...)
		}
		h.payScratch = append(h.payScratch, h.g.pattern[:n-len(h.payScratch)]...)
		return h.payScratch
	}
	s := int((m.key + uint64(off)) % patternLen)
	return h.g.pattern[s : s+n]
}

// appendFPDU frames one DDP segment as an FPDU (RFC 5044 §4: ULPDU_Length,
// ULPDU, PAD, CRC; markers when negotiated for this direction) and appends
// it to the stream.
func (h *half) appendFPDU(seg *decode.Segment, m *message, finds []pendingFinding, its []*ImpairmentTruth) error {
	g := h.g
	c := h.c
	h.nFPDU++
	g.stats.FPDUs++
	ord := h.nFPDU
	pos := h.nxt
	if !h.fpduStarted {
		h.fpduStarted = true
		h.s0 = pos // the marker grid starts at the first FPDU (RFC 5044 §4.3)
	}
	start := len(h.buf)
	var end uint32
	if h.markers {
		h.scratch = seg.Append(h.scratch[:0])
		h.buf, end = decode.AppendFPDUWithMarkers(h.buf, pos, h.s0, h.scratch, h.crc)
	} else {
		h.buf = append(h.buf, 0, 0)
		h.buf = seg.Append(h.buf)
		n := len(h.buf) - start - decode.ULPDULenLen
		binary.BigEndian.PutUint16(h.buf[start:], uint16(n))
		h.buf = append(h.buf, zeroPad[:decode.PadLen(n)]...)
		var crc uint32
		if h.crc {
			crc = decode.CRC32c(h.buf[start:])
		}
		h.buf = binary.LittleEndian.AppendUint32(h.buf, crc)
		end = pos + uint32(len(h.buf)-start)
	}
	wire := h.buf[start:]
	ulpduLen := int(binary.BigEndian.Uint16(wire[leadMarker(pos, h):]))
	crcAt := len(wire) - decode.CRCLen
	crcVal := decode.WireCRC(wire[crcAt:])
	computed := crcVal
	if !h.crc && g.track {
		computed = decode.CRC32c(wire[:crcAt])
	}
	// CRC corruption (explicit, then random): one bit of the CRC value.
	corrupt := false
	var crcImp *ImpairmentTruth
	for _, p := range h.fpduImps {
		if !p.done && p.im.Kind == ImpCorruptCRC {
			if (p.op < 0 && p.fpdu == ord) || (p.op >= 0 && p.op == m.opIdx && c.rep == 0 && c.pass == 0 && p.target == b2i(m.resp)) {
				p.done = true
				corrupt = true
				crcImp = g.newImpTruth(h, ImpCorruptCRC, false)
				break
			}
		}
	}
	if !corrupt && g.rates && g.sc.Rates.CorruptCRC > 0 && g.rng.Float64() < g.sc.Rates.CorruptCRC {
		corrupt = true
		crcImp = g.newImpTruth(h, ImpCorruptCRC, true)
	}
	if corrupt {
		nv := crcVal ^ 1
		decode.PutCRC(wire[crcAt:], nv)
		crcImp.FPDU, crcImp.Seq, crcImp.Len = ord, pos, len(wire)
		crcImp.Field, crcImp.Old, crcImp.New = "mpa.crc", uint64(crcVal), uint64(nv)
		crcImp.Detail = "CRC field off by one bit"
		if !h.crc {
			crcImp.Detail += "; CRC not negotiated, so nothing to detect"
		}
		crcVal = nv
		its = append(its, crcImp)
	}
	if h.crcSwap {
		crcVal = bits.ReverseBytes32(crcVal)
		decode.PutCRC(wire[crcAt:], crcVal)
	}
	good := crcVal == computed
	h.units = append(h.units, end)
	h.nxt = end
	// Blame bookkeeping for Terminates.
	b := &c.lastFrom[h.d]
	*b = blameRec{ddp: seg.DDP, opcode: seg.RDMAP.Opcode, read: seg.ReadRequest, ulpdu: ulpduLen, ordinal: ord}
	b.ddp.RsvdULP = seg.RDMAP.Octet()
	if !b.ddp.Tagged && (seg.RDMAP.Opcode == decode.OpSendInv || seg.RDMAP.Opcode == decode.OpSendSEInv) {
		b.ddp.RsvdULP2 = seg.InvalidateSTag
	}
	if m.opIdx >= 0 {
		// A Terminate blames the first faulty segment of the operation
		// (RFC 5040 §7.1 rule 4), else its last one.
		ob := &c.opLast[m.opIdx][h.d]
		faulty := len(finds) > 0 || corrupt
		if !ob.faulty || ob.ordinal == 0 || c.rep != ob.rep || c.pass != ob.pass {
			*ob = *b
			ob.faulty, ob.rep, ob.pass = faulty, c.rep, c.pass
		}
	}
	if g.track {
		fs := g.newFPDUState()
		fs.start, fs.end = pos, end
		h.fillTruth(&fs.t, seg, m, ord, pos, end, ulpduLen, crcVal, good, wire)
		for _, it := range its {
			if it.Len == 0 {
				it.Seq, it.Len = pos, len(wire)
			}
			fs.t.Impairments = append(fs.t.Impairments, it.ID)
			g.impairment(it)
		}
		for _, pf := range finds {
			imp := pf.imp
			if imp == 0 && len(fs.t.Impairments) > 0 {
				imp = fs.t.Impairments[0]
			}
			fs.finds = append(fs.finds, Finding{Code: pf.code, Severity: pf.code.Severity(), Conn: c.idx, Dir: h.name, FPDU: ord, Seq: pos, Impairment: imp, Message: pf.msg})
		}
		if corrupt && h.crc {
			fs.finds = append(fs.finds, Finding{Code: finding.MPACRCBad, Severity: finding.MPACRCBad.Severity(), Conn: c.idx, Dir: h.name, FPDU: ord, Seq: pos, Impairment: crcImp.ID,
				Message: fmt.Sprintf("CRC %#08x, computed %#08x", crcVal, crcVal^1)})
		}
		if h.crcSwap {
			if !h.swapTold {
				h.swapTold = true
				fs.finds = append(fs.finds, Finding{Code: finding.MPACRCByteOrder, Severity: finding.MPACRCByteOrder.Severity(), Conn: c.idx, Dir: h.name, FPDU: ord, Seq: pos,
					Message: "every CRC32c written in the wrong byte order"})
			}
			if !corrupt {
				fs.finds = append(fs.finds, Finding{Code: finding.MPACRCBad, Severity: finding.MPACRCBad.Severity(), Conn: c.idx, Dir: h.name, FPDU: ord, Seq: pos,
					Message: fmt.Sprintf("CRC %#08x, computed %#08x (byte-swapped)", crcVal, computed)})
			}
		}
		if seg.RDMAP.Opcode == decode.OpTerminate && !seg.DDP.Tagged {
			fs.finds = append(fs.finds, Finding{Code: finding.RDMAPTerminate, Severity: finding.RDMAPTerminate.Severity(), Conn: c.idx, Dir: h.name, FPDU: ord, Seq: pos,
				Message: "Terminate: " + seg.Terminate.Cause().String()})
			if tc := seg.Terminate.Cause(); tc.Layer == decode.TermLayerDDP && tc.EType == 2 && tc.Code == 0x02 {
				// No buffer available: the receiver had no receive posted.
				fs.finds = append(fs.finds, Finding{Code: finding.RDMAPNoReceivePosted, Severity: finding.RDMAPNoReceivePosted.Severity(), Conn: c.idx, Dir: h.name, FPDU: ord, Seq: pos,
					Message: "Terminate for a Send with no receive posted"})
			}
		}
		h.fpdus.push(fs)
	}
	return h.pump(false)
}

// leadMarker is the offset of ULPDU_Length in an FPDU at pos: 4 when a
// marker leads it.
func leadMarker(pos uint32, h *half) int {
	if h.markers && decode.IsMarkerPos(pos, h.s0) {
		return decode.MarkerLen
	}
	return 0
}

// fillTruth writes the FPDU's header values into t.
func (h *half) fillTruth(t *FPDUTruth, seg *decode.Segment, m *message, ord int, pos, end uint32, ulpduLen int, crc uint32, good bool, wire []byte) {
	*t = FPDUTruth{Conn: h.c.idx, Dir: h.name, Index: ord, Seq: pos, End: end, ULPDULength: ulpduLen,
		Opcode: uint8(seg.RDMAP.Opcode), OpName: seg.RDMAP.Opcode.String(), Tagged: seg.DDP.Tagged, Last: seg.DDP.Last,
		DV: seg.DDP.DV, RV: seg.RDMAP.RV, PayloadLen: len(seg.Payload), CRC: crc, CRCGood: good, RTR: m.rtr}
	if seg.DDP.Tagged {
		t.STag, t.TO = seg.DDP.STag, seg.DDP.TO
	} else {
		t.QN, t.MSN, t.MO = seg.DDP.QN, seg.DDP.MSN, seg.DDP.MO
		if seg.RDMAP.Opcode == decode.OpSendInv || seg.RDMAP.Opcode == decode.OpSendSEInv {
			t.InvSTag = seg.InvalidateSTag
		}
	}
	switch seg.RDMAP.Opcode {
	case decode.OpReadRequest:
		r := seg.ReadRequest
		t.Read = &ReadTruth{SinkSTag: r.SinkSTag, SinkTO: r.SinkTO, Size: r.Size, SrcSTag: r.SrcSTag, SrcTO: r.SrcTO}
	case decode.OpTerminate:
		tm := &seg.Terminate
		tt := &TermTruth{Layer: tm.Layer, EType: tm.EType, Code: tm.Code, Cause: tm.Cause().String(), M: tm.M, D: tm.D, R: tm.R,
			BlamedFPDU: m.blamed}
		if tm.HasSegLen {
			tt.SegLen = tm.DDPSegmentLength
		}
		if tm.HasDDP {
			d := tm.TermDDP
			tt.DDP = &TermDDPTruth{Tagged: d.Tagged, Last: d.Last, Opcode: d.RsvdULP & decode.RDMAPOpMask,
				STag: d.STag, TO: d.TO, QN: d.QN, MSN: d.MSN, MO: d.MO}
		}
		if tm.HasRDMA {
			r := tm.TermRDMA
			tt.RDMA = &ReadTruth{SinkSTag: r.SinkSTag, SinkTO: r.SinkTO, Size: r.Size, SrcSTag: r.SrcSTag, SrcTO: r.SrcTO}
		}
		t.Term = tt
	case decode.OpAtomicRequest:
		a := seg.AtomicRequest
		t.AtomicReq = &AtomicReqTruth{AOpCode: uint8(a.AOpCode), RequestID: a.RequestID, RemoteSTag: a.RemoteSTag, RemoteTO: a.RemoteTO,
			AddSwapData: a.AddSwapData, AddSwapMask: a.AddSwapMask, CompareData: a.CompareData, CompareMask: a.CompareMask}
	case decode.OpAtomicResponse:
		a := seg.AtomicResponse
		t.AtomicResp = &AtomicRespTruth{OrigRequestID: a.OrigRequestID, OrigValue: a.OrigValue}
	case decode.OpImmData, decode.OpImmDataSE:
		v := binary.BigEndian.Uint64(seg.ImmData[:])
		t.Imm = &v
	}
	if h.markers {
		for _, p := range decode.MarkerPositions(nil, h.s0, pos, end) {
			off := int(p - pos)
			t.Markers = append(t.Markers, MarkerTruth{Seq: p, FPDUPTR: binary.BigEndian.Uint16(wire[off+2:])})
		}
	}
}
