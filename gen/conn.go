package gen

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
)

// Packing modes (Connection.Packing).
const (
	packOne = iota
	packPack
	packStream
	packSplit // packOne, each unit cut at Connection.Split
)

// Connection stages.
const (
	stageOpen = iota
	stageOps
	stageClose
	stageDone
)

// conn is one connection being generated.
type conn struct {
	g        *generator
	idx      int
	cfg      *Connection
	h        [2]*half // [0] client→server (i2r), [1] server→client (r2i)
	packing  int
	ackEvery int
	tsClock  int
	rev      int
	enhanced bool
	crc      bool
	request  []byte // MPA Request frame
	reply    []byte // MPA Reply frame

	stage      int
	opIdx      int
	rep        int
	pass       int
	passBytes  int64
	lastSender int
	// pinned: the next frame with payload is stamped at pinAt (Op.Gap,
	// Op.ResponseGap), after lastData, the last frame with payload.
	pinned          bool
	pinAt, lastData time.Duration
	skipped         bool // frames of it were before the capture started
	seen            bool // a frame of it was captured
	// genFrames counts its frames; the capture misses the first skip
	// (mid-stream start).
	genFrames   int
	skip        int
	midstreamID int

	// lastFrom[d] is the last FPDU sent in direction d; opLast[i][d] the
	// last one of op i (for Terminate blame). Ordinal 0: none.
	lastFrom [2]blameRec
	opLast   [][2]blameRec
	// opTO[i] advances the TO of a repeated write or read.
	opTO []uint64

	truth ConnTruth
}

// blameRec is what a Terminate copies from the segment it blames.
type blameRec struct {
	ddp     decode.DDPHeader
	opcode  decode.Opcode
	read    decode.ReadRequest
	ulpdu   int
	ordinal int
	// faulty marks a segment with a fault of its own; rep and pass say
	// which run of the operation it belongs to.
	faulty    bool
	rep, pass int
}

func newConn(g *generator, idx int, cfg *Connection) (*conn, error) {
	c := &conn{g: g, idx: idx, cfg: cfg, lastSender: -1, ackEvery: cfg.AckEvery, tsClock: cfg.TSClock,
		rev: cfg.rev(), enhanced: cfg.enhanced(), crc: cfg.MPA.CRC}
	if c.ackEvery == 0 {
		c.ackEvery = 2
	}
	if c.tsClock == 0 {
		c.tsClock = 1000
	}
	switch cfg.Packing {
	case "pack":
		c.packing = packPack
	case "stream":
		c.packing = packStream
	}
	if len(cfg.Split) > 0 {
		c.packing = packSplit
	}
	client := cfg.Client
	if client == "" {
		client = fmt.Sprintf("10.0.%d.%d:%d", 1+idx/250, 1+idx%250, 40000+idx%20000)
	}
	server := cfg.Server
	if server == "" {
		server = fmt.Sprintf("10.1.%d.%d:%d", 1+idx/250, 1+idx%250, defaultServerPort)
	}
	ca, cp, err := parseEndpoint(client, 40000)
	if err != nil {
		return nil, err
	}
	sa, sp, err := parseEndpoint(server, defaultServerPort)
	if err != nil {
		return nil, err
	}
	if ca.Is4() != sa.Is4() {
		return nil, fmt.Errorf("client %s and server %s are not the same IP version", ca, sa)
	}
	ce := endpoint{mac: macFor(ca), ip: ca, port: cp}
	se := endpoint{mac: macFor(sa), ip: sa, port: sp}
	if cfg.ClientMAC != "" {
		ce.mac, _ = parseMAC(cfg.ClientMAC)
	}
	if cfg.ServerMAC != "" {
		se.mac, _ = parseMAC(cfg.ServerMAC)
	}
	mss := cfg.MSS
	if mss == 0 {
		mss = 1460
		if ca.Is6() {
			mss = 1440
		}
	}
	emss := mss
	if cfg.Timestamps {
		emss -= tsOptLen
	}
	dv, rv := uint8(decode.DDPVersion), uint8(decode.RDMAPVersion)
	if c.rev == 0 {
		dv, rv = 0, 0
	}
	if cfg.DDPVersion != nil {
		dv = *cfg.DDPVersion
	}
	if cfg.RDMAPVersion != nil {
		rv = *cfg.RDMAPVersion
	}
	// ISNs, timestamp bases and IP IDs from the seed, in a fixed order.
	isn := [2]uint32{g.rng.Uint32(), g.rng.Uint32()}
	if cfg.ClientISN != nil {
		isn[0] = *cfg.ClientISN
	}
	if cfg.ServerISN != nil {
		isn[1] = *cfg.ServerISN
	}
	m := &cfg.MPA
	markers := [2]bool{m.MarkersI2R, m.MarkersR2I}
	for d := range 2 {
		src, dst := ce, se
		if d == 1 {
			src, dst = se, ce
		}
		h := &half{c: c, g: g, d: d, name: dirName(d), isn: isn[d], mss: uint16(min(mss, 65535)),
			markers: markers[d], crc: c.crc, crcSwap: c.crc && m.CRCByteSwapped, emss: emss, dv: dv, rv: rv,
			tsBase: g.rng.Uint32(), reqID: 1}
		h.tmpl = newTemplate(src, dst, cfg.VLAN, cfg.Timestamps, uint16(g.rng.Uint32()))
		h.nxt, h.cut, h.unitStart = isn[d]+1, isn[d]+1, isn[d]+1
		h.mulpdu = decode.MULPDU(emss, h.markers)
		if cfg.MaxULPDU > 0 {
			h.mulpdu = cfg.MaxULPDU
		}
		for q := range h.msn {
			h.msn[q] = 1
		}
		h.fpduHead, h.cutFPDU = 1, 1
		c.h[d] = h
	}
	c.h[0].peer, c.h[1].peer = c.h[1], c.h[0]
	c.opLast = make([][2]blameRec, len(cfg.Ops))
	c.opTO = make([]uint64, len(cfg.Ops))
	c.buildMPAFrames()
	c.h[0].s0 = isn[0] + 1 + uint32(len(c.request))
	c.h[1].s0 = isn[1] + 1 + uint32(len(c.reply))
	c.truth = ConnTruth{Index: idx, Client: netip.AddrPortFrom(ca, cp).String(), Server: netip.AddrPortFrom(sa, sp).String(),
		VLAN: cfg.VLAN, MSS: mss, EMSS: emss, ClientISN: isn[0], ServerISN: isn[1],
		MPARev: c.rev, Enhanced: c.enhanced, CRC: c.crc, MarkersI2R: markers[0], MarkersR2I: markers[1],
		Rejected: m.Reject, RTR: m.RTR,
		MULPDUI2R: c.h[0].mulpdu, MULPDUR2I: c.h[1].mulpdu, FPDUSeqI2R: c.h[0].s0, FPDUSeqR2I: c.h[1].s0,
		DV: dv, RV: rv}
	if c.enhanced || m.Rev1IRDORD {
		c.truth.IRD, c.truth.ORD, c.truth.ReplyIRD, c.truth.ReplyORD = m.irdOrd()
		// Reads from the Initiator are bounded by the Responder's IRD, and
		// the other way round (RFC 6581 §9.1, RFC 5040 §6.1).
		c.h[0].peerIRD, c.h[1].peerIRD = int(c.truth.ReplyIRD), int(c.truth.IRD)
	} else {
		c.h[0].peerIRD, c.h[1].peerIRD = -1, -1
	}
	return c, nil
}

func dirName(d int) string {
	if d == 1 {
		return "r2i"
	}
	return "i2r"
}

// buildMPAFrames encodes the Request and the Reply (RFC 5044 §7.1.1, RFC
// 6581 §9).
func (c *conn) buildMPAFrames() {
	m := &c.cfg.MPA
	ird, ord, rird, rord := m.irdOrd()
	req := decode.MPAFrame{Markers: m.MarkersR2I, CRC: m.CRC, Rev: uint8(c.rev), Enhanced: c.enhanced}
	rep := decode.MPAFrame{Reply: true, Markers: m.MarkersI2R, CRC: m.CRC, Rev: uint8(c.rev), Enhanced: c.enhanced, Reject: m.Reject}
	switch {
	case c.enhanced:
		req.HasV2, rep.HasV2 = true, true
		req.V2 = decode.MPAv2{IRD: ird, ORD: ord}
		rep.V2 = decode.MPAv2{IRD: rird, ORD: rord}
		if m.RTR != "" {
			req.V2.PeerToPeer, rep.V2.PeerToPeer = true, true
			switch m.RTR {
			case "send":
				req.V2.ZeroLenSendRTR, rep.V2.ZeroLenSendRTR = true, true
			case "write":
				req.V2.ZeroLenWriteRTR, rep.V2.ZeroLenWriteRTR = true, true
			case "read":
				req.V2.ZeroLenReadRTR, rep.V2.ZeroLenReadRTR = true, true
			}
		}
		req.PrivateData = append(make([]byte, decode.MPAv2Len), m.RequestData...)
		rep.PrivateData = append(make([]byte, decode.MPAv2Len), m.ReplyData...)
	case m.Rev1IRDORD:
		req.Rev1IRDORD, rep.Rev1IRDORD = true, true
		req.Rev1IRD, req.Rev1ORD = uint32(ird), uint32(ord)
		rep.Rev1IRD, rep.Rev1ORD = uint32(rird), uint32(rord)
		req.PrivateData = append(make([]byte, 8), m.RequestData...)
		rep.PrivateData = append(make([]byte, 8), m.ReplyData...)
	default:
		req.PrivateData = m.RequestData
		rep.PrivateData = m.ReplyData
	}
	if e := m.ERDMA; e != nil {
		req.ERDMA, rep.ERDMA = true, true
		req.ERDMAExt = decode.MPAERDMAExt{Cookie: e.Cookie, Bits: uint32(e.CC) & decode.MPAERDMACCMask}
		rep.ERDMAExt = decode.MPAERDMAExt{Cookie: e.ReplyCookie, Bits: uint32(e.ReplyCC) & decode.MPAERDMACCMask}
	}
	c.request = req.Append(nil)
	c.reply = rep.Append(nil)
}

// step runs the next piece of the connection; done when it is closed.
func (c *conn) step() (bool, error) {
	switch c.stage {
	case stageOpen:
		if err := c.open(); err != nil {
			return false, err
		}
		c.stage = stageOps
		if c.cfg.MPA.Reject {
			c.stage = stageClose
		}
		if c.cfg.MPA.ResetRequest {
			c.stage = stageDone // the Responder's RST ended it
			return true, nil
		}
	case stageOps:
		more, err := c.nextOp()
		if err != nil {
			return false, err
		}
		if !more {
			c.stage = stageClose
		}
	case stageClose:
		if err := c.close(); err != nil {
			return false, err
		}
		c.stage = stageDone
		return true, nil
	}
	return false, nil
}

// open runs the TCP three-way handshake, the MPA exchange and the RTR.
func (c *conn) open() error {
	cl, sv := c.h[0], c.h[1]
	if _, err := cl.control(flagSYN, cl.isn); err != nil {
		return err
	}
	if _, err := sv.control(flagSYN|flagACK, sv.isn); err != nil {
		return err
	}
	if err := cl.pureACK(); err != nil {
		return err
	}
	cl.appendUnit(c.request)
	if err := cl.flush(); err != nil {
		return err
	}
	if c.cfg.MPA.ERDMA != nil && c.g.track {
		c.g.addFinding(cl, finding.MPARevERDMA, cl.lastDataFrame, 0, cl.isn+1, 0, "MPA Request Rev 129: Alibaba erdma's extension after PD_Length")
	}
	if c.g.track {
		if v2 := c.fallbackFrom(); v2 != nil {
			c.g.addFinding(cl, finding.MPAV1Fallback, cl.lastDataFrame, 0, cl.isn+1, 0, fmt.Sprintf("MPA v1 retry of the MPA v2 attempt of connection %d", v2.idx))
		}
	}
	if c.cfg.MPA.ResetRequest {
		// An RFC 5044-only Responder cannot parse a Rev 2 Request and
		// resets (RFC 6581 §10; what makes cxgb4 retry with v1).
		frame, err := sv.control(flagRST|flagACK, sv.cut)
		if err != nil {
			return err
		}
		if c.g.track {
			c.g.addFinding(sv, finding.MPAResetInSetup, frame, 0, sv.cut, 0, "the Responder reset the connection after the MPA Request")
		}
		return nil
	}
	sv.appendUnit(c.reply)
	if err := sv.flush(); err != nil {
		return err
	}
	if c.cfg.MPA.Reject {
		if c.g.track {
			c.g.addFinding(sv, finding.MPAReject, sv.lastDataFrame, 0, sv.isn+1, 0, "MPA Reply rejects the connection (R=1)")
		}
		return cl.pureACK()
	}
	switch c.cfg.MPA.RTR {
	case "":
	case "send":
		m := c.untagged(cl, decode.OpSend, decode.QNSend)
		m.rtr = true
		return c.oneWay(cl, m)
	case "write":
		m := &message{opIdx: -1, opc: decode.OpWrite, tagged: true, stag: 1, rtr: true}
		return c.oneWay(cl, m)
	case "read":
		m := c.untagged(cl, decode.OpReadRequest, decode.QNReadReq)
		m.rtr = true
		m.read = decode.ReadRequest{SinkSTag: 1, SrcSTag: 1}
		c.countRead(cl, m)
		if err := cl.sendMessage(m); err != nil {
			return err
		}
		if err := cl.flush(); err != nil {
			return err
		}
		r := &message{opIdx: -1, opc: decode.OpReadResponse, tagged: true, stag: 1, rtr: true}
		if err := sv.sendMessage(r); err != nil {
			return err
		}
		cl.reads--
		if err := sv.flush(); err != nil {
			return err
		}
		return c.ackIdle(-1)
	}
	return c.ackIdle(-1)
}

// oneWay sends m from h and lets the peer acknowledge.
func (c *conn) oneWay(h *half, m *message) error {
	if err := h.sendMessage(m); err != nil {
		return err
	}
	if err := h.flush(); err != nil {
		return err
	}
	return c.ackIdle(-1)
}

// ackIdle has each side that holds unacknowledged data acknowledge it,
// except next, the side that sends next and will carry the ACK.
func (c *conn) ackIdle(next int) error {
	for d, h := range c.h {
		if h.unacked > 0 && d != next {
			if err := h.pureACK(); err != nil {
				return err
			}
		}
	}
	return nil
}

// close ends the connection as configured.
func (c *conn) close() error {
	for _, h := range c.h {
		if err := h.flush(); err != nil {
			return err
		}
	}
	cl, sv := c.h[0], c.h[1]
	switch c.cfg.Close {
	case "", "fin":
		// Client FIN, server FIN, client ACK (RFC 9293 §3.6).
		if _, err := cl.control(flagFIN|flagACK, cl.cut); err != nil {
			return err
		}
		cl.cut++
		cl.nxt++
		if _, err := sv.control(flagFIN|flagACK, sv.cut); err != nil {
			return err
		}
		sv.cut++
		sv.nxt++
		_, err := cl.control(flagACK, cl.cut)
		return err
	case "rst":
		// No finding: an analyzer notes the RST as mpa.llp_closed, a
		// note, as it does a FIN; the truth lists no notes.
		_, err := cl.control(flagRST|flagACK, cl.cut)
		return err
	}
	return c.ackIdle(-1)
}

// nextOp runs the next operation; false when there is none left.
func (c *conn) nextOp() (bool, error) {
	g := c.g
	ops := c.cfg.Ops
	if len(ops) == 0 || g.stopping {
		return false, nil
	}
	before := g.stats.WireOctets
	if err := c.runOp(c.opIdx, &ops[c.opIdx]); err != nil {
		return false, err
	}
	c.passBytes += g.stats.WireOctets - before
	c.rep++
	if ops[c.opIdx].Op == OpNamePause {
		c.rep = max(1, ops[c.opIdx].Repeat) // runOp waited for all repetitions at once
	}
	if c.rep >= max(1, ops[c.opIdx].Repeat) {
		c.rep = 0
		c.opIdx++
	}
	if c.opIdx == len(ops) {
		c.opIdx = 0
		c.pass++
		if g.sc.MaxBytes == 0 && c.pass >= max(1, g.sc.Repeat) {
			return false, nil
		}
		if c.passBytes == 0 {
			return false, nil // nothing to repeat (only pauses)
		}
		c.passBytes = 0
	}
	return !g.stopping, nil
}

// nextSender is the side that sends first in the operation after the
// current one, or -1.
func (c *conn) nextSender() int {
	ops := c.cfg.Ops
	i := c.opIdx
	if c.rep+1 >= max(1, ops[i].Repeat) {
		i++
	}
	if i >= len(ops) {
		if c.g.sc.MaxBytes == 0 && c.pass+1 >= max(1, c.g.sc.Repeat) {
			return -1
		}
		i = 0
	}
	if ops[i].Op == OpNamePause || ops[i].Delay > 0 || ops[i].Gap > 0 {
		return -1
	}
	return dirIndex(ops[i].Dir)
}

// message is one RDMAP message to segment and send.
type message struct {
	opIdx  int
	opc    decode.Opcode
	tagged bool
	qn     uint32
	msn    uint32
	stag   uint32
	to     uint64
	inv    uint32
	read   decode.ReadRequest
	term   decode.Terminate
	areq   decode.AtomicRequest
	aresp  decode.AtomicResponse
	imm    [decode.ImmDataLen]byte
	size   int
	data   []byte // explicit payload, else the pattern
	key    uint64 // pattern offset
	rtr    bool
	resp   bool // the response of its op
	blamed int  // Terminate: ordinal of the blamed FPDU
	// message-wide impairment state
	moSwap      bool
	moValue     *uint32
	respOver    int // octets beyond the requested size (read response)
	respOverImp int
	// finds are findings the message itself causes (on its first FPDU).
	finds []pendingFinding
}

// untagged makes an untagged message with the next MSN of qn.
func (c *conn) untagged(h *half, op decode.Opcode, qn uint32) *message {
	return &message{opIdx: -1, opc: op, qn: qn, msn: h.msn[qn]}
}

// stagFor makes a deterministic STag for a buffer of this connection:
// index in the high 24 bits, a key octet in the low 8 (as verbs STags are).
func (c *conn) stagFor(op, side int) uint32 {
	return uint32(c.idx&0xFFF)<<20 | uint32(op&0xFFF)<<8 | uint32(0x10+side)
}

// baseTO is a plausible virtual address for a buffer.
func (c *conn) baseTO(op, side int) uint64 {
	return 0x7f0000000000 + uint64(c.idx)<<32 + uint64(op)<<20 + uint64(side)<<16
}

// runOp runs one operation (one repetition).
func (c *conn) runOp(i int, op *Op) error {
	g := c.g
	d := dirIndex(op.Dir)
	h, p := c.h[d], c.h[1-d]
	if op.Delay > 0 || op.Op == OpNamePause {
		for _, x := range c.h {
			if err := x.flush(); err != nil {
				return err
			}
		}
		if err := c.ackIdle(-1); err != nil {
			return err
		}
		if op.Op == OpNamePause {
			g.now += time.Duration(op.Delay) * time.Duration(max(1, op.Repeat))
			return nil
		}
		g.now += time.Duration(op.Delay)
	}
	if op.Gap > 0 {
		for _, x := range c.h {
			if err := x.flush(); err != nil {
				return err
			}
		}
		if err := c.ackIdle(-1); err != nil {
			return err
		}
		c.pin(time.Duration(op.Gap))
	}
	size := int(op.Size)
	if len(op.Payload) > 0 {
		size = len(op.Payload)
	}
	key := uint64(c.idx)*7919 + uint64(i)*104729 + uint64(c.rep+c.pass)*31
	var respFrom *half
	var resp *message
	m := &message{opIdx: i, size: size, data: op.Payload, key: key}
	switch op.Op {
	case OpNameSend, OpNameSendSE, OpNameSendInv, OpNameSendSEInv:
		switch op.Op {
		case OpNameSend:
			m.opc = decode.OpSend
		case OpNameSendSE:
			m.opc = decode.OpSendSE
		case OpNameSendInv:
			m.opc = decode.OpSendInv
		default:
			m.opc = decode.OpSendSEInv
		}
		m.qn = decode.QNSend
		m.inv = op.InvSTag
	case OpNameImm, OpNameImmSE:
		m.opc = decode.OpImmData
		if op.Op == OpNameImmSE {
			m.opc = decode.OpImmDataSE
		}
		m.qn, m.size, m.data = decode.QNSend, 0, nil
		binary.BigEndian.PutUint64(m.imm[:], op.Imm)
	case OpNameWrite, OpNameWriteImm:
		m.opc, m.tagged = decode.OpWrite, true
		m.stag = c.stagFor(i, 1-d)
		if op.STag != nil {
			m.stag = *op.STag
		}
		m.to = c.baseTO(i, 1-d)
		if op.TO != nil {
			m.to = *op.TO
		}
		m.to += c.opTO[i]
		c.opTO[i] += uint64(size)
	case OpNameRead:
		m.opc, m.qn = decode.OpReadRequest, decode.QNReadReq
		m.size, m.data = 0, nil
		rr := decode.ReadRequest{SinkSTag: c.stagFor(i, d), SinkTO: c.baseTO(i, d), Size: uint32(size),
			SrcSTag: c.stagFor(i, 1-d), SrcTO: c.baseTO(i, 1-d)}
		if op.SinkSTag != nil {
			rr.SinkSTag = *op.SinkSTag
		}
		if op.SinkTO != nil {
			rr.SinkTO = *op.SinkTO
		}
		if op.STag != nil {
			rr.SrcSTag = *op.STag
		}
		if op.TO != nil {
			rr.SrcTO = *op.TO
		}
		rr.SinkTO += c.opTO[i]
		rr.SrcTO += c.opTO[i]
		c.opTO[i] += uint64(size)
		m.read = rr
		respFrom = p
		resp = &message{opIdx: i, opc: decode.OpReadResponse, tagged: true, stag: rr.SinkSTag, to: rr.SinkTO,
			size: size, data: op.Payload, key: key, resp: true}
	case OpNameFetchAdd, OpNameCmpSwap:
		m.opc, m.qn = decode.OpAtomicRequest, decode.QNReadReq
		m.size, m.data = 0, nil
		ar := decode.AtomicRequest{AOpCode: decode.AOpFetchAdd, RemoteSTag: c.stagFor(i, 1-d), RemoteTO: c.baseTO(i, 1-d),
			AddSwapData: op.AddSwap, AddSwapMask: op.Mask}
		if op.Op == OpNameCmpSwap {
			ar.AOpCode = decode.AOpCmpSwap
			ar.CompareData = op.Compare
			ar.CompareMask = ^uint64(0)
		} else {
			ar.CompareMask = ^uint64(0) // FetchAdd sends all-ones (RFC 7306 §5.2.1)
		}
		if op.CompareMask != nil {
			ar.CompareMask = *op.CompareMask
		}
		if op.STag != nil {
			ar.RemoteSTag = *op.STag
		}
		if op.TO != nil {
			ar.RemoteTO = *op.TO
		}
		m.areq = ar
		respFrom = p
		resp = &message{opIdx: i, opc: decode.OpAtomicResponse, qn: decode.QNAtomicResp,
			aresp: decode.AtomicResponse{OrigValue: op.Orig}, resp: true}
	case OpNameTerminate:
		m.opc, m.qn = decode.OpTerminate, decode.QNTerminate
		m.size, m.data = 0, nil
		m.term, m.blamed = c.terminate(h, op)
	}
	if !m.tagged {
		m.msn = h.msn[m.qn]
	}
	if m.opc == decode.OpReadRequest {
		c.countRead(h, m)
	}
	if err := h.sendMessage(m); err != nil {
		return err
	}
	if op.Op == OpNameWriteImm {
		im := c.untagged(h, decode.OpImmData, decode.QNSend)
		im.opIdx = i
		binary.BigEndian.PutUint64(im.imm[:], op.Imm)
		if err := h.sendMessage(im); err != nil {
			return err
		}
	}
	if resp != nil && op.Unanswered {
		resp = nil
	}
	if resp != nil {
		if err := h.flush(); err != nil {
			return err
		}
		if op.ResponseGap > 0 {
			c.pin(time.Duration(op.ResponseGap))
		}
		if resp.opc == decode.OpAtomicResponse {
			resp.aresp.OrigRequestID = m.areq.RequestID
		}
		if !resp.tagged {
			resp.msn = respFrom.msn[resp.qn]
		}
		if err := respFrom.sendMessage(resp); err != nil {
			return err
		}
		if m.opc == decode.OpReadRequest {
			h.reads--
		}
		if err := respFrom.flush(); err != nil {
			return err
		}
		return c.ackIdle(c.nextSender())
	}
	next := c.nextSender()
	if next == d && c.packing != packOne {
		return nil // keep packing: the same side sends again at once
	}
	if err := h.flush(); err != nil {
		return err
	}
	return c.ackIdle(next)
}

// pin stamps the connection's next frame with payload gap after its last
// one (Op.Gap, Op.ResponseGap).
func (c *conn) pin(gap time.Duration) {
	c.pinned, c.pinAt = true, c.lastData+gap
}

// countRead counts a Read Request from h as outstanding and notes on m
// when that exceeds the IRD the peer announced (RFC 6581 §9.1: the
// requester's ORD is at most the responder's IRD; RFC 5040 §6.1).
func (c *conn) countRead(h *half, m *message) {
	h.reads++
	if h.peerIRD >= 0 && h.peerIRD != decode.MPAv2NoNegotiation && h.reads > h.peerIRD {
		m.finds = append(m.finds, pendingFinding{finding.RDMAPIRDExceeded, 0,
			fmt.Sprintf("%d Read Requests outstanding, the responder's IRD is %d", h.reads, h.peerIRD)})
	}
}

// terminate builds the Terminate header for op sent by h (RFC 5040 §4.8,
// §7.1): the cause from op, and the copied headers of the blamed segment.
func (c *conn) terminate(h *half, op *Op) (decode.Terminate, int) {
	t := decode.Terminate{Layer: op.Layer & 0xF, EType: op.EType & 0xF, Code: op.Code}
	var b *blameRec
	if op.Blame != nil {
		b = &c.opLast[*op.Blame][1-h.d]
	} else {
		b = &c.lastFrom[1-h.d]
	}
	if b.ordinal == 0 {
		b = nil
	}
	hdrs := op.Headers
	if hdrs == "" || hdrs == "auto" {
		hdrs = "none"
		if b != nil {
			switch {
			case t.Layer == decode.TermLayerRDMAP && t.EType == 0: // local catastrophic: no headers
			case t.Layer == decode.TermLayerRDMAP && t.EType == 1 && b.opcode == decode.OpReadRequest && !b.ddp.Tagged:
				hdrs = "ddp_rdma" // remote protection error on a Read Request
			case t.Layer == decode.TermLayerRDMAP, t.Layer == decode.TermLayerDDP:
				hdrs = "ddp"
			}
		}
	}
	if hdrs == "none" {
		return t, 0
	}
	if b == nil {
		b = &blameRec{ddp: decode.DDPHeader{Last: true, DV: h.dv, QN: decode.QNSend, MSN: 1}, opcode: decode.OpSend, ulpdu: decode.DDPUntaggedHdrLen}
		b.ddp.RsvdULP = decode.RDMAPControl{RV: h.rv, Opcode: decode.OpSend}.Octet()
	}
	t.M, t.D, t.HasSegLen, t.HasDDP = true, true, true, true
	// RFC 5040 §4.8: the length handed up by DDP for the segment, i.e. the
	// DDP segment (ULPDU) length. Linux siw writes the payload length.
	t.DDPSegmentLength = uint16(b.ulpdu)
	t.TermDDP = b.ddp
	if hdrs == "ddp_rdma" {
		t.R, t.HasRDMA = true, true
		t.TermRDMA = b.read
	}
	return t, b.ordinal
}

// fallbackFrom returns the connection whose reset MPA v2 attempt this one
// retries with MPA v1: the one it comes After, from the same client host to
// the same server, that reset its Rev 2 Request (nil if none).
func (c *conn) fallbackFrom() *conn {
	a := c.cfg.After
	if a == nil || c.enhanced || c.rev != 1 {
		return nil
	}
	v2 := c.g.conns[*a]
	if !v2.cfg.MPA.ResetRequest || !v2.enhanced {
		return nil
	}
	a1, e1 := netip.ParseAddrPort(v2.truth.Client)
	a2, e2 := netip.ParseAddrPort(c.truth.Client)
	if e1 != nil || e2 != nil || a1.Addr() != a2.Addr() || v2.truth.Server != c.truth.Server {
		return nil
	}
	return v2
}
