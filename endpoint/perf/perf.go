// Package perf runs perftest-style bandwidth and latency tests between two
// iwkit endpoints: RDMA Write, Send and RDMA Read, bandwidth with many work
// requests outstanding or latency by ping-pong, over one or several
// connections (perftest's QPs), one way or both ways.
//
// Each connection has an active side, which posts the measured operations,
// and a passive side, which serves them (it exposes its buffer, reposts
// receives, echoes pings). The client is active on its forward connections
// and passive on the reverse ones a bidirectional run adds. The client names
// the test in its MPA Private Data; the server answers with the
// advertisement of its buffers in the Reply's, or rejects the request with
// the reason in the Reject's. At the end the active side RDMA Writes its
// measurement into the passive side's report slot and sends a solicited
// "done"; the passive side answers with a solicited Send. So both sides can
// print the same table, as perftest's server does.
package perf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"sync/atomic"
	"time"

	"github.com/iwkit/iwkit/endpoint"
)

// Tests.
const (
	WriteBW  = "write_bw"
	SendBW   = "send_bw"
	ReadBW   = "read_bw"
	AtomicBW = "atomic_bw"
	WriteLat = "write_lat"
	SendLat  = "send_lat"
	ReadLat  = "read_lat"
)

// Tests lists the test names the package runs.
var Tests = []string{WriteBW, SendBW, ReadBW, AtomicBW, WriteLat, SendLat, ReadLat, AtomicLat}

// IsBW says whether test is a bandwidth test.
func IsBW(test string) bool {
	return test == WriteBW || test == SendBW || test == ReadBW || test == AtomicBW
}

// IsLat says whether test is a latency test.
func IsLat(test string) bool {
	return test == WriteLat || test == SendLat || test == ReadLat || test == AtomicLat
}

// Defaults and bounds, perftest's where it has them.
const (
	DefaultPort     = 18515   // perftest's DEF_PORT
	DefaultSizeBW   = 65536   // DEF_SIZE_BW
	DefaultSizeLat  = 2       // DEF_SIZE_LAT
	DefaultItersBW  = 5000    // DEF_ITERS_WB
	DefaultItersLat = 1000    // DEF_ITERS
	DefaultDepthBW  = 128     // DEF_TX_BW
	DefaultCQMod    = 100     // DEF_CQ_MOD
	MaxSize         = 1 << 23 // perftest's MAX_SIZE: -a runs 2 .. 8 MiB
	MaxDepth        = 8000    // the SQ holds 2×depth+16 of the endpoint's 16384
	// bufCap bounds a data buffer: bandwidth tests cycle through at most
	// this many octets of slots (one slot when the size is larger).
	bufCap = 16 << 20
)

// SweepSizes are -a's sizes: powers of two from 2 to MaxSize.
func SweepSizes() []int {
	var s []int
	for n := 2; n <= MaxSize; n *= 2 {
		s = append(s, n)
	}
	return s
}

// Options configure a client run.
type Options struct {
	Test     string
	Size     int           // message size (see DefaultSize)
	Iters    int           // messages per connection (0: perftest's default)
	Duration time.Duration // run for this long instead of Iters
	Depth    int           // work requests outstanding per connection (bandwidth tests; 0: 128)
	QPs      int           // connections (perftest's -q; 0: 1)
	Bidir    bool          // both directions at once (-b)
	PostList int           // work requests per PostSend (-l; 0: 1)
	Atomic   string        // atomic_bw's and atomic_lat's operation (-A): FETCH_AND_ADD (the default) or CMP_AND_SWAP
	CQMod    int           // signal one work request in CQMod (-Q; 0: 100, at most Depth)
	IRD, ORD int           // the QPs' IRD/ORD (0: per test)
	Config   endpoint.Config
	Timeout  time.Duration // per wait (10 s)
	// Tick, when set with Every, is called every Every with the traffic
	// of that interval (perftest's --run_infinitely reports).
	Every time.Duration
	Tick  func(Row)
	// Stop ends a run early (a Duration or infinite run), cleanly.
	Stop <-chan struct{}
	// Final marks the last run of a sweep, so that a server that serves
	// one sweep ends after it. Sweep sets it; a single Run always does.
	Final bool
	// Log, for ServePerftest, gets one line per connection passed over
	// before the client's (closed or silent during the MPA exchange).
	Log io.Writer
	// All, for RunPerftest and ServePerftest, runs perftest's -a: every
	// size of SweepSizes on the same connections, Each called with each
	// size's result (the run returns the last).
	All   bool
	Each  func(Result)
	sweep uint64
}

// DefaultSize is perftest's message size for test.
func DefaultSize(test string) int {
	if IsLat(test) {
		return DefaultSizeLat
	}
	return DefaultSizeBW
}

// Normalize fills the defaults in (not the size: zero-length messages are
// a valid test; see DefaultSize) and checks the bounds; Run calls it.
func (o *Options) Normalize() error {
	switch {
	case isAtomicTest(o.Test):
		if err := o.normalizeAtomic(); err != nil {
			return err
		}
	case !IsBW(o.Test) && !IsLat(o.Test):
		return fmt.Errorf("perf: unknown test %q", o.Test)
	}
	if o.Size < 0 || o.Size > MaxSize {
		return fmt.Errorf("perf: size %d is not within 0..%d", o.Size, MaxSize)
	}
	if o.Iters <= 0 {
		o.Iters = DefaultItersBW
		if IsLat(o.Test) {
			o.Iters = DefaultItersLat
		}
	}
	if IsLat(o.Test) {
		o.Depth = 1
	} else if o.Depth <= 0 {
		o.Depth = DefaultDepthBW
	}
	if o.Depth > MaxDepth {
		return fmt.Errorf("perf: tx depth %d above %d", o.Depth, MaxDepth)
	}
	o.QPs = max(o.QPs, 1)
	o.PostList = min(max(o.PostList, 1), o.Depth)
	if o.CQMod <= 0 {
		o.CQMod = DefaultCQMod
	}
	o.CQMod = min(o.CQMod, o.Depth)
	if o.IRD < 0 || o.ORD < 0 || o.IRD > 128 || o.ORD > 128 {
		return fmt.Errorf("perf: IRD/ORD %d/%d not within 0..128", o.IRD, o.ORD)
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	return nil
}

// Latency summarizes latencies in microseconds as perftest does: t_min,
// t_max, t_typical (the median), t_avg, t_stdev and two percentiles. For
// write_lat and send_lat a sample is half a round trip, for read_lat a
// whole one, as in perftest.
type Latency struct {
	Min     float64 `json:"t_min"`
	Max     float64 `json:"t_max"`
	Typical float64 `json:"t_typical"`
	Avg     float64 `json:"t_avg"`
	Stdev   float64 `json:"t_stdev"`
	P99     float64 `json:"percentile_99"`
	P999    float64 `json:"percentile_99.9"`
}

func summarize(samples []time.Duration) *Latency {
	if len(samples) == 0 {
		return nil
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	q := func(p float64) float64 { return us(samples[min(len(samples)-1, int(p*float64(len(samples))))]) }
	var sum, sq float64
	for _, s := range samples {
		sum += us(s)
	}
	avg := sum / float64(len(samples))
	for _, s := range samples {
		sq += (us(s) - avg) * (us(s) - avg)
	}
	return &Latency{Min: us(samples[0]), Max: us(samples[len(samples)-1]), Typical: q(0.5), Avg: avg,
		Stdev: math.Sqrt(sq / float64(len(samples))), P99: q(0.99), P999: q(0.999)}
}

// stats is one connection's measurement, as the active side saw it.
type stats struct {
	Iters   int
	Bytes   int64
	Elapsed time.Duration
	PeakBps float64 // best window, octets per second
	Lat     *Latency
}

// reportSlot is the size of a report slot: 11 little-endian 64-bit words.
const reportSlot = 128

// encode is the report the active side writes into the peer's report slot.
func (s stats) encode(b []byte) {
	le := binary.LittleEndian
	l := s.Lat
	if l == nil {
		l = &Latency{Min: -1}
	}
	for i, v := range []uint64{uint64(s.Iters), uint64(s.Bytes), uint64(s.Elapsed), math.Float64bits(s.PeakBps),
		math.Float64bits(l.Min), math.Float64bits(l.Max), math.Float64bits(l.Typical), math.Float64bits(l.Avg),
		math.Float64bits(l.Stdev), math.Float64bits(l.P99), math.Float64bits(l.P999)} {
		le.PutUint64(b[8*i:], v)
	}
}

func decodeStats(b []byte) stats {
	le := binary.LittleEndian
	w := func(i int) uint64 { return le.Uint64(b[8*i:]) }
	f := func(i int) float64 { return math.Float64frombits(w(i)) }
	s := stats{Iters: int(w(0)), Bytes: int64(w(1)), Elapsed: time.Duration(w(2)), PeakBps: f(3)}
	if f(4) >= 0 {
		s.Lat = &Latency{Min: f(4), Max: f(5), Typical: f(6), Avg: f(7), Stdev: f(8), P99: f(9), P999: f(10)}
	}
	return s
}

// peak finds the best rate over windows of at least minMsgs messages in a
// timeline of (time, messages completed) points.
func peak(tl []mark, size int, minMsgs int) float64 {
	best := 0.0
	j := 0
	for i := 1; i < len(tl); i++ {
		for j < i && tl[i].n-tl[j+1].n >= minMsgs {
			j++
		}
		if tl[i].n-tl[j].n >= minMsgs {
			if dt := tl[i].t.Sub(tl[j].t).Seconds(); dt > 0 {
				best = max(best, float64(tl[i].n-tl[j].n)*float64(size)/dt)
			}
		}
	}
	return best
}

type mark struct {
	t time.Time
	n int
}

// peer is one side of one connection.
type peer struct {
	dev     *endpoint.Device
	qp      *endpoint.QP
	cq      *endpoint.CQ
	buf     *endpoint.MR // data: slots of size octets
	ctl     *endpoint.MR // 64-octet receive slots, then our report, then the peer's
	size    int
	msg     int // the message size of the run's current size (perftest's -a), when not size
	slots   int
	nctl    int
	to      time.Duration
	pend    []endpoint.WorkCompletion
	prog    *atomic.Int64 // messages completed, for Tick
	placed  uint64        // write_lat: the placement generation of the peer's Writes seen (perftest_write.go)
	credits uint64        // send_bw's sender: the credit Writes of the sizes before (perftest_send.go)
}

// slotsFor is the number of data slots a peer cycles through: one for
// the latency tests, up to Depth (at most bufCap octets) otherwise. The
// content does not matter, so slots are reused (a send_bw receiver's 2×Depth
// receives share them).
func slotsFor(test string, size, depth int) int {
	if IsLat(test) {
		return 1
	}
	return max(1, min(depth, bufCap/max(size, 1)))
}

// bufLen is the data buffer a peer allocates.
func bufLen(test string, size, depth int) int {
	return max(size, 1) * slotsFor(test, size, depth)
}

func newPeer(test string, size, depth, ird, ord int, to time.Duration) (*peer, error) {
	slots := slotsFor(test, size, depth)
	p := &peer{dev: endpoint.OpenDevice(endpoint.DeviceAttr{}), size: size, slots: slots, to: to, nctl: 2*depth + 16}
	pd := p.dev.AllocPD()
	var err error
	if p.cq, err = p.dev.CreateCQ(8 * (depth + 16)); err != nil {
		return nil, err
	}
	if ird == 0 {
		ird = 16
		if test == ReadBW || test == ReadLat || test == AtomicBW {
			ird = min(depth, 128)
		}
	}
	if ord == 0 {
		ord = ird
	}
	// An atomic test's request is how the two sides agree to use RFC 7306 (§1.1).
	atomics := isAtomicTest(test)
	if p.qp, err = pd.CreateQP(endpoint.QPAttr{SendCQ: p.cq, RecvCQ: p.cq, SQDepth: 2*depth + 16, RQDepth: 2*depth + 16, IRD: ird, ORD: ord, RFC7306: atomics}); err != nil {
		return nil, err
	}
	acc := endpoint.AccessAll
	if atomics {
		acc |= endpoint.AccessRemoteAtomic
	}
	if p.buf, err = pd.RegisterMR(make([]byte, max(size, 1)*slots), acc, nil); err != nil {
		return nil, err
	}
	p.ctl, err = pd.RegisterMR(make([]byte, 64*p.nctl+2*reportSlot), endpoint.AccessAll, nil)
	return p, err
}

func (p *peer) myReport() []byte   { return p.ctl.Buf()[64*p.nctl : 64*p.nctl+reportSlot] }
func (p *peer) peerReport() []byte { return p.ctl.Buf()[64*p.nctl+reportSlot:] }

// advert is one side's buffers, in the MPA Private Data.
type advert struct {
	Addr    uint64 `json:"addr"`
	RKey    uint32 `json:"rkey"`
	Len     int    `json:"len"`
	CtlAddr uint64 `json:"ctl"` // the report slot
	CtlRKey uint32 `json:"ctlkey"`
}

func (p *peer) advert() advert {
	return advert{Addr: p.buf.Addr(), RKey: uint32(p.buf.STag()), Len: p.buf.Len(),
		CtlAddr: p.ctl.Addr() + uint64(64*p.nctl+reportSlot), CtlRKey: uint32(p.ctl.STag())}
}

func (p *peer) postCtlRecv(i int) error {
	_, err := p.qp.PostRecv(endpoint.RecvWR{WRID: uint64(1<<32 | i), SGL: []endpoint.SGE{p.ctl.SGE(64*(i%p.nctl), 64)}})
	return err
}

// postDataRecv posts a receive of size octets into data slot i.
func (p *peer) postDataRecv(i int) error {
	_, err := p.qp.PostRecv(endpoint.RecvWR{WRID: uint64(i), SGL: []endpoint.SGE{p.buf.SGE((i%p.slots)*p.size, p.size)}})
	return err
}

// repost posts again the receive wc consumed.
func (p *peer) repost(wc endpoint.WorkCompletion) error {
	if wc.WRID>>32 == 1 {
		return p.postCtlRecv(int(uint32(wc.WRID)))
	}
	return p.postDataRecv(int(wc.WRID))
}

// next returns the next completion (error completions are errors). It
// waits at most the peer's timeout unless wait is 0: then until ctx ends or
// the connection fails (which flushes the receives).
func (p *peer) next(ctx context.Context, wait time.Duration) (endpoint.WorkCompletion, error) {
	if len(p.pend) > 0 {
		wc := p.pend[0]
		p.pend = p.pend[1:]
		return wc, nil
	}
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	var wcs [64]endpoint.WorkCompletion
	n, err := p.cq.Wait(ctx, wcs[:])
	if err != nil {
		if qerr := p.qp.Err(); qerr != nil {
			return endpoint.WorkCompletion{}, qerr
		}
		return endpoint.WorkCompletion{}, err
	}
	p.pend = append(p.pend, wcs[1:n]...)
	if wcs[0].Status != endpoint.StatusSuccess {
		err := fmt.Errorf("perf: %v completed with %v", wcs[0].Opcode, wcs[0].Status)
		if qerr := p.qp.Err(); qerr != nil {
			err = fmt.Errorf("%w: %w", err, qerr)
		}
		return wcs[0], err
	}
	return wcs[0], nil
}

// waitRecv returns the next receive completion, skipping others.
func (p *peer) waitRecv(ctx context.Context, wait time.Duration) (endpoint.WorkCompletion, error) {
	for {
		wc, err := p.next(ctx, wait)
		if err != nil || wc.Opcode == endpoint.OpRecv {
			return wc, err
		}
	}
}

func (p *peer) send(se bool) error {
	op := endpoint.OpSend
	if se {
		op = endpoint.OpSendSE
	}
	_, err := p.qp.PostSend(endpoint.SendWR{Opcode: op})
	return err
}

// finish ends the active side: it writes its report into the peer's
// report slot, sends a solicited "done" and waits for the peer's solicited
// answer, reposting the receives that come before it.
func (p *peer) finish(ctx context.Context, s stats, rem advert) error {
	s.encode(p.myReport())
	if _, err := p.qp.PostSend(
		endpoint.SendWR{Opcode: endpoint.OpWrite, SGL: []endpoint.SGE{p.ctl.SGE(64*p.nctl, reportSlot)}, RemoteAddr: rem.CtlAddr, RKey: endpoint.STag(rem.CtlRKey)},
		endpoint.SendWR{Opcode: endpoint.OpSendSE}); err != nil {
		return err
	}
	for {
		wc, err := p.waitRecv(ctx, p.to)
		if err != nil {
			return err
		}
		p.repost(wc)
		if wc.Solicited {
			return nil
		}
	}
}

// clock says whether the active side should post more.
type clock struct {
	iters   int
	end     time.Time // zero: iterations
	stop    <-chan struct{}
	forever bool
}

func (c *clock) more(n int) bool {
	select {
	case <-c.stop:
		return false
	default:
	}
	if c.forever {
		return true
	}
	if !c.end.IsZero() {
		return time.Now().Before(c.end)
	}
	return n < c.iters
}

// activeBW runs write_bw, read_bw or send_bw's sending side.
func (p *peer) activeBW(ctx context.Context, o *Options, rem advert, c *clock) (stats, error) {
	var s stats
	tl := []mark{{time.Now(), 0}}
	start := tl[0].t
	switch o.Test {
	case WriteBW, ReadBW, AtomicBW:
		op := endpoint.OpWrite
		switch o.Test {
		case ReadBW:
			op = endpoint.OpRead
		case AtomicBW:
			op = atomicOpcode(o.Atomic)
		}
		remSlots := max(rem.Len/max(o.Size, 1), 1)
		posted, done := 0, 0
		extra := -1 // a closing zero-length signaled request (duration runs)
		wrs := make([]endpoint.SendWR, 0, o.PostList)
		for c.more(posted) || done < posted {
			for c.more(posted) && posted-done < o.Depth {
				n := min(o.PostList, o.Depth-(posted-done))
				if c.end.IsZero() && !c.forever {
					n = min(n, o.Iters-posted)
				}
				wrs = wrs[:0]
				for i := posted; i < posted+n; i++ {
					wrs = append(wrs, endpoint.SendWR{WRID: uint64(i), Opcode: op,
						SGL:        []endpoint.SGE{p.buf.SGE((i%p.slots)*o.Size, o.Size)},
						RemoteAddr: rem.Addr + uint64(i%remSlots*o.Size), RKey: endpoint.STag(rem.RKey), Atomic: atomicArgs(o.Atomic),
						Signaled: i%o.CQMod == o.CQMod-1 || (c.end.IsZero() && !c.forever && i == o.Iters-1)})
				}
				if _, err := p.qp.PostSend(wrs...); err != nil {
					return s, err
				}
				posted += n
			}
			if !c.more(posted) && extra < 0 && (posted-1)%o.CQMod != o.CQMod-1 && !(c.end.IsZero() && !c.forever) {
				extra = posted
				if _, err := p.qp.PostSend(endpoint.SendWR{WRID: uint64(posted), Opcode: op, Signaled: true,
					SGL: []endpoint.SGE{p.buf.SGE(0, closingLen(o))}, RemoteAddr: rem.Addr, RKey: endpoint.STag(rem.RKey), Atomic: atomicArgs(o.Atomic)}); err != nil {
					return s, err
				}
			}
			if done >= posted {
				break
			}
			wc, err := p.next(ctx, p.to)
			if err != nil {
				return s, err
			}
			if int(wc.WRID) == extra {
				done = posted
			} else {
				done = max(done, int(wc.WRID)+1)
			}
			tl = append(tl, mark{time.Now(), done})
			if p.prog != nil {
				p.prog.Store(int64(done))
			}
		}
		s.Iters = posted
	case SendBW:
		// The passive side credits every Depth receives it reposts.
		sent, credited := 0, 0
		last := -1 // the WRID of the signaled Send that ends the run
		wrs := make([]endpoint.SendWR, 0, o.PostList)
		for c.more(sent) {
			for c.more(sent) && sent-credited < o.Depth {
				n := min(o.PostList, o.Depth-(sent-credited))
				if c.end.IsZero() && !c.forever {
					n = min(n, o.Iters-sent)
				}
				wrs = wrs[:0]
				for i := sent; i < sent+n; i++ {
					wr := endpoint.SendWR{Opcode: endpoint.OpSend, SGL: []endpoint.SGE{p.buf.SGE(0, o.Size)}}
					if c.end.IsZero() && !c.forever && i == o.Iters-1 {
						wr.WRID, wr.Signaled, last = uint64(i), true, i
					}
					wrs = append(wrs, wr)
				}
				if _, err := p.qp.PostSend(wrs...); err != nil {
					return s, err
				}
				sent += n
			}
			if !c.more(sent) {
				break
			}
			wc, err := p.waitRecv(ctx, p.to)
			if err != nil {
				return s, err
			}
			p.repost(wc)
			credited = min(credited+o.Depth, sent)
			tl = append(tl, mark{time.Now(), credited})
			if p.prog != nil {
				p.prog.Store(int64(credited))
			}
		}
		// A posted Send is only queued: the clock stops at the last
		// one's completion, as write_bw's does (a Send Queue's work
		// requests complete in order). A run that ended on time closes
		// with a signaled zero-length Send (the passive side keeps
		// 2×Depth receives, Depth of them beyond the credits).
		if last < 0 {
			last = sent
			if _, err := p.qp.PostSend(endpoint.SendWR{WRID: uint64(last), Opcode: endpoint.OpSend, Signaled: true}); err != nil {
				return s, err
			}
		}
		for {
			wc, err := p.next(ctx, p.to)
			if err != nil {
				return s, err
			}
			if wc.Opcode == endpoint.OpRecv {
				p.repost(wc)
				continue
			}
			if int(wc.WRID) == last {
				break
			}
		}
		tl = append(tl, mark{time.Now(), sent})
		s.Iters = sent
	}
	s.Elapsed = time.Since(start)
	s.Bytes = int64(s.Iters) * int64(o.Size)
	s.PeakBps = peak(tl, o.Size, max(o.Depth, s.Iters/50))
	return s, nil
}

// passive serves one connection until the active side's done, answers
// it, and returns the active side's report. Pings are echoed (latency);
// Send receives are reposted and credited (send_bw).
func (p *peer) passive(ctx context.Context, o *Options, rem advert) (stats, error) {
	n := 0
	for {
		wc, err := p.waitActive(ctx)
		if err != nil {
			return stats{}, err
		}
		p.repost(wc)
		if wc.Solicited { // done
			if err := p.send(true); err != nil {
				return stats{}, err
			}
			return decodeStats(p.peerReport()), nil
		}
		n++
		switch o.Test {
		case SendBW:
			if n%o.Depth == 0 {
				if err := p.send(false); err != nil {
					return stats{}, err
				}
			}
		case SendLat, WriteLat:
			if err := p.ping(o.Test, rem); err != nil {
				return stats{}, err
			}
		}
	}
}

// waitActive is the passive side's wait for its next receive: as long as
// the active side sends anything (a write_bw run completes no receive
// here until its end), and at most the timeout after its last FPDU, so
// that a client that asked for a run and went silent does not hold its
// connection, and its share of the server's limits, for ever.
func (p *peer) waitActive(ctx context.Context) (endpoint.WorkCompletion, error) {
	seen := p.qp.Counters().RxFPDUs
	for {
		wc, err := p.waitRecv(ctx, p.to)
		if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return wc, err
		}
		now := p.qp.Counters().RxFPDUs
		if now == seen {
			return wc, fmt.Errorf("perf: nothing from the peer in %v", p.to)
		}
		seen = now
	}
}

// postInitialRecvs posts what each role receives before the connection
// is up: data receives for a send_bw receiver and for pongs/pings of the
// latency tests, control receives (credits, done, answers) otherwise.
func (p *peer) postInitialRecvs(test string, active bool) {
	switch {
	case test == SendBW && !active:
		for i := 0; i < p.nctl-16; i++ { // 2×Depth
			p.postDataRecv(i)
		}
	case test == SendLat || test == WriteLat:
		for i := 0; i < 8; i++ {
			p.postDataRecv(0)
		}
	default:
		for i := 0; i < 8; i++ {
			p.postCtlRecv(i)
		}
	}
}

// activeLat runs the ping-pong of a latency test.
func (p *peer) activeLat(ctx context.Context, o *Options, rem advert, c *clock) (stats, error) {
	var s stats
	var lat []time.Duration
	start := time.Now()
	n := 0
	for ; c.more(n); n++ {
		t0 := time.Now()
		switch o.Test {
		case ReadLat, AtomicLat:
			wr := endpoint.SendWR{Opcode: endpoint.OpRead, Signaled: true, SGL: []endpoint.SGE{p.buf.SGE(0, o.Size)},
				RemoteAddr: rem.Addr, RKey: endpoint.STag(rem.RKey)}
			if o.Test == AtomicLat {
				wr.Opcode, wr.Atomic = atomicOpcode(o.Atomic), atomicArgs(o.Atomic)
			}
			if _, err := p.qp.PostSend(wr); err != nil {
				return s, err
			}
			if _, err := p.next(ctx, p.to); err != nil {
				return s, err
			}
			lat = append(lat, time.Since(t0)) // a Read's or an atomic's round trip is its latency
		default:
			if err := p.ping(o.Test, rem); err != nil {
				return s, err
			}
			wc, err := p.waitRecv(ctx, p.to)
			if err != nil {
				if !c.end.IsZero() && time.Now().After(c.end) && ctx.Err() == nil && p.qp.Err() == nil {
					// A timed peer may stop first (perftest times itself
					// from its first receive): the round is not counted.
					break
				}
				return s, err
			}
			p.repost(wc)
			lat = append(lat, time.Since(t0)/2)
		}
		if p.prog != nil {
			p.prog.Store(int64(n + 1))
		}
	}
	s.Iters = n
	s.Elapsed = time.Since(start)
	s.Bytes = int64(n) * int64(o.Size)
	s.Lat = summarize(lat)
	return s, nil
}

// ping sends one ping: a Send of size octets, or an RDMA Write of size
// octets followed by a zero-length Send that says it is placed.
func (p *peer) ping(test string, rem advert) error {
	if test == WriteLat {
		_, err := p.qp.PostSend(
			endpoint.SendWR{Opcode: endpoint.OpWrite, SGL: []endpoint.SGE{p.buf.SGE(0, p.msgSize())}, RemoteAddr: rem.Addr, RKey: endpoint.STag(rem.RKey)},
			endpoint.SendWR{Opcode: endpoint.OpSend})
		return err
	}
	_, err := p.qp.PostSend(endpoint.SendWR{Opcode: endpoint.OpSend, SGL: []endpoint.SGE{p.buf.SGE(0, p.msgSize())}})
	return err
}

// msgSize is the size of a ping: the current size of a sweep on the same
// connections, else the buffer's.
func (p *peer) msgSize() int {
	if p.msg > 0 {
		return p.msg
	}
	return p.size
}

// active runs the active side of any test, then finish.
func (p *peer) active(ctx context.Context, o *Options, rem advert, c *clock) (stats, error) {
	var s stats
	var err error
	if IsLat(o.Test) {
		s, err = p.activeLat(ctx, o, rem, c)
	} else {
		s, err = p.activeBW(ctx, o, rem, c)
	}
	if err != nil {
		return s, err
	}
	return s, p.finish(ctx, s, rem)
}
