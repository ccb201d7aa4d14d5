package gen

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/iwkit/iwkit/finding"
)

// FrameSink receives the generated frames in capture order. data holds the
// captured octets (cut by a snaplen), origLen the frame's length on the
// wire. data is only valid during the call. *pcap.Writer is one.
type FrameSink interface {
	WriteFrame(ts time.Time, data []byte, origLen int) error
}

// Options tune a run.
type Options struct {
	// Truth, when set, receives the ground truth. Leave it nil for big
	// runs that need no truth: the generator then keeps no per-FPDU state.
	Truth TruthSink
	// Progress, when set, is called about every ProgressEvery octets of
	// frames written with the running totals.
	Progress      func(Stats)
	ProgressEvery int64
}

// Stats counts what a run produced.
type Stats struct {
	Frames      int   // frames written
	Octets      int64 // captured octets written (frame data, no file headers)
	WireOctets  int64 // octets of all frames on the wire, captured or not
	FPDUs       int64 // FPDUs built
	Messages    int64 // RDMAP messages built
	Impairments int   // impairments applied
	Findings    int   // findings reported
	// Unapplied lists the explicit impairments whose target never came
	// (no such segment, FPDU or eligible message), e.g. "impairment 2
	// (drop): conn 0 i2r has 14 data segments".
	Unapplied []string
}

// Default values of the scenario.
var defaultStart = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	defaultLinkRate = 10e9
	defaultLatency  = 10 * time.Microsecond
	// wireOverhead is what a frame costs on an Ethernet link beyond its
	// octets: FCS 4, preamble and SFD 8, inter-frame gap 12.
	wireOverhead = 24
	patternLen   = 1 << 16
)

// generator holds one run's state.
type generator struct {
	sc       *Scenario
	sink     FrameSink
	truth    TruthSink
	track    bool
	rates    bool
	progress func(Stats)
	progStep int64
	progNext int64
	rng      *rand.Rand

	start     time.Time
	now       time.Duration // since start
	psPerByte float64
	latency   time.Duration

	snaplen   int
	genFrames int
	stopping  bool
	stats     Stats
	frame     []byte
	pattern   []byte
	conns     []*conn
	impID     int
	err       error
	recPool   []*segRec
	fpduPool  []*fpduState
}

// Run generates sc into sink. It returns when every connection is closed or
// on the first error (from the sink, the truth sink, or an impairment that
// cannot be applied).
func Run(sc *Scenario, sink FrameSink, opts *Options) (Stats, error) {
	if err := sc.Validate(); err != nil {
		return Stats{}, err
	}
	if opts == nil {
		opts = &Options{}
	}
	g := &generator{sc: sc, sink: sink, truth: opts.Truth, track: opts.Truth != nil, rates: sc.Rates.any(),
		progress: opts.Progress, progStep: opts.ProgressEvery,
		rng: rand.New(rand.NewPCG(sc.Seed, sc.Seed^0x6977676e)), snaplen: sc.Snaplen,
		frame: make([]byte, 0, 1<<16+256)}
	if g.progStep <= 0 {
		g.progStep = 1 << 20
	}
	g.progNext = g.progStep
	g.start = sc.Start
	if g.start.IsZero() {
		g.start = defaultStart
	}
	rate := float64(sc.LinkRate)
	if rate == 0 {
		rate = defaultLinkRate
	}
	g.psPerByte = 8e12 / rate
	g.latency = time.Duration(sc.Latency)
	if sc.Latency == 0 {
		g.latency = defaultLatency
	}
	g.pattern = make([]byte, 2*patternLen)
	pr := rand.New(rand.NewPCG(sc.Seed^0x7061747465726e, 1))
	for i := 0; i < len(g.pattern); i += 8 {
		v := pr.Uint64()
		for j := 0; j < 8; j++ {
			g.pattern[i+j] = byte(v >> (8 * j))
		}
	}
	for i := range sc.Connections {
		c, err := newConn(g, i, &sc.Connections[i])
		if err != nil {
			return g.stats, fmt.Errorf("connection %d: %w", i, err)
		}
		g.conns = append(g.conns, c)
	}
	if err := g.placeImpairments(); err != nil {
		return g.stats, err
	}
	if g.track {
		if err := g.truth.Begin(sc.Name, sc.Seed); err != nil {
			return g.stats, err
		}
		for _, c := range g.conns {
			if err := g.truth.Connection(&c.truth); err != nil {
				return g.stats, err
			}
		}
		for _, c := range g.conns {
			if c.skip > 0 {
				it := g.newImpTruth(c.h[0], ImpMidstream, false)
				it.Dir = ""
				it.Field, it.New = "frame.skipped", uint64(c.skip)
				it.Detail = fmt.Sprintf("the capture misses the first %d frames of the connection", c.skip)
				c.midstreamID = it.ID
				g.impairment(it)
			}
		}
	}
	err := g.loop()
	if err == nil {
		err = g.err
	}
	if err != nil {
		return g.stats, err
	}
	if g.track {
		for _, c := range g.conns {
			for _, h := range c.h {
				if err := h.flushGaps(); err != nil {
					return g.stats, err
				}
			}
		}
		if err := g.truth.End(g.stats.Frames, g.stats.Octets); err != nil {
			return g.stats, err
		}
	}
	g.unapplied()
	if g.progress != nil {
		g.progress(g.stats)
	}
	return g.stats, nil
}

// unapplied notes the explicit impairments that found no target.
func (g *generator) unapplied() {
	for i := range g.sc.Impairments {
		im := &g.sc.Impairments[i]
		if im.Kind == ImpMidstream {
			continue
		}
		h := g.conns[im.Conn].h[dirIndex(im.Dir)]
		var left bool
		var have string
		if tcpKinds[im.Kind] {
			for _, p := range h.tcpImps[im.Segment] {
				left = left || p == im
			}
			have = fmt.Sprintf("%d data segments", h.nSeg)
		} else {
			for _, c := range g.conns[im.Conn].h {
				for _, p := range c.fpduImps {
					if p.src == im && !p.done {
						left, h = true, c
					}
				}
			}
			have = fmt.Sprintf("%d FPDUs", h.nFPDU)
		}
		if left {
			g.stats.Unapplied = append(g.stats.Unapplied, fmt.Sprintf("impairment %d (%s): conn %d %s has %s and no target for it", i, im.Kind, im.Conn, h.name, have))
		}
	}
}

// loop runs the connections interleaved: one step (handshake, one
// operation, or the close) of each in turn.
func (g *generator) loop() error {
	active := append([]*conn(nil), g.conns...)
	for len(active) > 0 {
		n := 0
		for _, c := range active {
			if a := c.cfg.After; a != nil && g.conns[*a].stage != stageDone {
				active[n] = c // a reconnect waits for the connection before it
				n++
				continue
			}
			done, err := c.step()
			if err != nil {
				return err
			}
			if g.err != nil {
				return g.err
			}
			if !done {
				active[n] = c
				n++
			}
		}
		active = active[:n]
	}
	return nil
}

// writeFrame builds the frame for one segment of h and writes it, unless
// the capture misses it. It returns the frame number (0: not captured) and
// how many payload octets were captured.
func (g *generator) writeFrame(h *half, f *tcpFields, payload []byte, snap int) (int, int, error) {
	c := h.c
	if c.pinned && len(payload) > 0 {
		// A planted gap: the whole time since the last payload frame, no
		// turnaround latency on top.
		c.pinned, c.lastSender = false, h.d
		g.now = max(g.now, c.pinAt)
	}
	if c.lastSender != h.d {
		if c.lastSender >= 0 {
			g.now += g.latency
		}
		c.lastSender = h.d
	}
	g.frame = h.tmpl.build(g.frame[:0], f, payload)
	wire := len(g.frame)
	capLen := wire
	if g.snaplen > 0 && capLen > g.snaplen {
		capLen = g.snaplen
	}
	if snap > 0 && snap < capLen {
		capLen = snap
	}
	ts := g.start.Add(g.now)
	if len(payload) > 0 {
		c.lastData = g.now
	}
	g.now += time.Duration(float64(wire+wireOverhead)*g.psPerByte) / 1000
	g.genFrames++
	c.genFrames++
	g.stats.WireOctets += int64(wire)
	if g.sc.MaxBytes > 0 && g.stats.WireOctets >= int64(g.sc.MaxBytes) {
		g.stopping = true
	}
	if c.genFrames <= c.skip {
		c.skipped = true
		return 0, 0, nil
	}
	if err := g.sink.WriteFrame(ts, g.frame[:capLen], wire); err != nil {
		return 0, 0, err
	}
	g.stats.Frames++
	g.stats.Octets += int64(capLen)
	frame := g.stats.Frames
	if c.skipped && !c.seen && g.track {
		g.addFinding(h, finding.TrackNoHandshake, frame, 0, f.seq, c.midstreamID,
			"capture starts inside the connection: no SYN, no MPA handshake")
	}
	c.seen = true
	if g.track && len(h.peer.pendingGap) > 0 && f.flags&flagACK != 0 {
		h.peer.acked(f.ack, frame)
	}
	if g.progress != nil && g.stats.Octets >= g.progNext {
		g.progNext = g.stats.Octets + g.progStep
		g.progress(g.stats)
	}
	capPay := capLen - (wire - len(payload))
	if capPay < 0 {
		capPay = 0
	}
	return frame, capPay, nil
}

// newRec takes a segment record from the pool.
func (g *generator) newRec(seq uint32, n int) *segRec {
	var r *segRec
	if k := len(g.recPool); k > 0 {
		r = g.recPool[k-1]
		g.recPool = g.recPool[:k-1]
	} else {
		r = &segRec{}
	}
	*r = segRec{seq: seq, n: n, fLo: 1, imps: r.imps[:0]}
	return r
}

func (g *generator) freeRec(r *segRec) {
	clear(r.imps)
	g.recPool = append(g.recPool, r)
}

// newFPDUState takes an FPDU state from the pool. The truth's slices
// (markers, impairments) are never reused: a sink may keep them.
func (g *generator) newFPDUState() *fpduState {
	if k := len(g.fpduPool); k > 0 {
		fs := g.fpduPool[k-1]
		g.fpduPool = g.fpduPool[:k-1]
		*fs = fpduState{finds: fs.finds[:0]}
		return fs
	}
	return &fpduState{}
}

func (g *generator) freeFPDUState(fs *fpduState) {
	clear(fs.finds)
	g.fpduPool = append(g.fpduPool, fs)
}

// newImpTruth numbers a new impairment record.
func (g *generator) newImpTruth(h *half, kind string, random bool) *ImpairmentTruth {
	g.impID++
	g.stats.Impairments++
	it := &ImpairmentTruth{ID: g.impID, Kind: kind, Random: random}
	if h != nil {
		it.Conn, it.Dir = h.c.idx, h.name
	}
	return it
}

// impairment reports an impairment record.
func (g *generator) impairment(it *ImpairmentTruth) {
	if !g.track {
		return
	}
	if err := g.truth.Impairment(it); err != nil && g.err == nil {
		g.err = err
	}
}

// finding reports a finding.
func (g *generator) finding(f *Finding) error {
	if !g.track {
		return nil
	}
	g.stats.Findings++
	return g.truth.Finding(f)
}

// addFinding reports a finding tied to a frame that is known now.
func (g *generator) addFinding(h *half, code finding.Code, frame, fpdu int, seq uint32, imp int, msg string) {
	if !g.track {
		return
	}
	f := Finding{Code: code, Severity: code.Severity(), Conn: h.c.idx, Dir: h.name, Frame: frame, FPDU: fpdu, Seq: seq, Impairment: imp, Message: msg}
	if err := g.finding(&f); err != nil && g.err == nil {
		g.err = err
	}
}

// placeImpairments hands every explicit impairment to the direction it
// acts on.
func (g *generator) placeImpairments() error {
	for i := range g.sc.Impairments {
		im := g.sc.Impairments[i]
		c := g.conns[im.Conn]
		if im.Kind == ImpMidstream {
			c.skip += int(min(*im.Value, 1<<40))
			continue
		}
		d := 0
		if im.Dir == "r2i" {
			d = 1
		}
		if tcpKinds[im.Kind] {
			h := c.h[d]
			if h.tcpImps == nil {
				h.tcpImps = map[int][]*Impairment{}
			}
			h.tcpImps[im.Segment] = append(h.tcpImps[im.Segment], &g.sc.Impairments[i])
			continue
		}
		p := &pendingImp{im: im, src: &g.sc.Impairments[i], fpdu: im.FPDU, op: -1}
		if im.Op != nil {
			p.op = *im.Op
			op := &c.cfg.Ops[p.op]
			d = dirIndex(op.Dir)
			resp := (op.Op == OpNameRead && (im.Kind == ImpReadResponseTooLong || im.Kind == ImpUnknownSTag))
			if resp {
				d, p.target = 1-d, 1
			}
			if err := opAccepts(op, im.Kind, resp); err != nil {
				return fmt.Errorf("impairment %d (%s): %w", i, im.Kind, err)
			}
		}
		c.h[d].fpduImps = append(c.h[d].fpduImps, p)
	}
	return nil
}

// opAccepts checks that an op-targeted impairment has a message to act on.
func opAccepts(op *Op, kind string, resp bool) error {
	tagged := op.Op == OpNameWrite || op.Op == OpNameWriteImm
	switch kind {
	case ImpWrongMSN, ImpWrongQN, ImpMOOutOfOrder:
		if tagged {
			return fmt.Errorf("op %s has no untagged first message", op.Op)
		}
	case ImpUnknownSTag:
		if !tagged && !resp {
			return fmt.Errorf("op %s has no tagged message", op.Op)
		}
	case ImpReadResponseTooLong:
		if !resp {
			return fmt.Errorf("op %s is not a read", op.Op)
		}
	}
	return nil
}

func dirIndex(s string) int {
	if s == "r2i" {
		return 1
	}
	return 0
}

var errStop = errors.New("stop")
