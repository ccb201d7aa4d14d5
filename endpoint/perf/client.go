package perf

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iwkit/iwkit/endpoint"
)

// request is the client's MPA Private Data (at most 508 octets).
type request struct {
	Magic    string     `json:"iwperf"`
	Test     string     `json:"t"`
	Size     int        `json:"s"`
	Depth    int        `json:"d"`
	Iters    int        `json:"n"`
	DurMS    int64      `json:"D,omitempty"`
	PostList int        `json:"l,omitempty"`
	Atomic   string     `json:"A,omitempty"`
	CQMod    int        `json:"Q,omitempty"`
	IRD      int        `json:"ird,omitempty"`
	ORD      int        `json:"ord,omitempty"`
	Run      uint64     `json:"run"`
	Sweep    uint64     `json:"sweep"`
	QPs      int        `json:"q"`
	Bidir    bool       `json:"b,omitempty"`
	Reverse  bool       `json:"rev,omitempty"` // the server is the active side
	Final    bool       `json:"final,omitempty"`
	Peer     advert     `json:"peer"`
	Stress   *stressReq `json:"stress,omitempty"`
}

const magic = "2"

// Row is one line of a result table.
type Row struct {
	Size    int      `json:"MsgSize"`
	Iters   int      `json:"n_iterations"`
	PeakBps float64  `json:"-"` // octets per second
	AvgBps  float64  `json:"-"`
	MsgRate float64  `json:"-"` // messages per second
	Lat     *Latency `json:"-"`
	Elapsed time.Duration
}

// Result is one run's outcome: every connection together.
type Result struct {
	Test    string
	Atomic  string // the atomic tests' operation
	Bidir   bool
	QPs     int
	Depth   int
	CQMod   int
	Row     Row
	Bytes   int64 // octets moved, every connection and direction
	Msgs    int64
	Params  endpoint.Params   // the first connection's
	Local   Address           // the first connection's
	Remote  Address           // the first connection's
	Counter endpoint.Counters // summed over the client's QPs
	// Exchange names how the sides exchanged their buffers when it was
	// not iwperf's MPA Private Data ("perftest 6.06": perftest's own).
	Exchange string
}

// Address is what perftest prints as a side's "address".
type Address struct {
	Addr  string
	QPN   uint32
	STag  uint32
	VAddr uint64
}

// aggregate folds the connections' stats into a row.
func aggregate(size int, ss []stats) (Row, int64, int64) {
	r := Row{Size: size}
	var bytes, msgs int64
	var peakSum float64
	for i, s := range ss {
		if i == 0 {
			r.Iters = s.Iters
			r.Lat = s.Lat
		}
		bytes += s.Bytes
		msgs += int64(s.Iters)
		r.Elapsed = max(r.Elapsed, s.Elapsed)
		peakSum += s.PeakBps
	}
	if sec := r.Elapsed.Seconds(); sec > 0 {
		r.AvgBps = float64(bytes) / sec
		r.MsgRate = float64(msgs) / sec
	}
	r.PeakBps = max(peakSum, r.AvgBps)
	return r, bytes, msgs
}

func newID() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// Dialer opens the TCP connection of one QP.
type Dialer func(ctx context.Context) (net.Conn, error)

// TCPDialer dials addr.
func TCPDialer(addr string) Dialer {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
}

type clientConn struct {
	p       *peer
	conn    *endpoint.Conn
	rem     advert
	reverse bool
}

// Run runs one test of one size against an iwperf server: o.QPs
// connections (twice as many with Bidir: the server is active on the
// reverse ones) at once.
func Run(ctx context.Context, dial Dialer, o Options) (Result, error) {
	if err := o.Normalize(); err != nil {
		return Result{}, err
	}
	if o.Bidir && IsLat(o.Test) {
		return Result{}, errors.New("perf: -b is for the bandwidth tests")
	}
	if o.Bidir && o.Duration <= 0 && o.Every > 0 {
		return Result{}, errors.New("perf: -b does not run infinitely")
	}
	if o.sweep == 0 {
		o.sweep = newID()
		o.Final = true
	}
	run := newID()
	res := Result{Test: o.Test, Atomic: o.Atomic, Bidir: o.Bidir, QPs: o.QPs, Depth: o.Depth, CQMod: o.CQMod}
	var conns []*clientConn
	defer func() {
		for _, c := range conns {
			c.conn.Close()
		}
	}()
	n := o.QPs
	if o.Bidir {
		n *= 2
	}
	for i := 0; i < n; i++ {
		c, err := dialOne(ctx, dial, &o, run, i >= o.QPs)
		if err != nil {
			return res, err
		}
		conns = append(conns, c)
	}
	c0 := conns[0]
	res.Params = c0.conn.Params()
	res.Local = Address{Addr: c0.conn.LocalAddr().String(), QPN: c0.p.qp.Num(), STag: uint32(c0.p.buf.STag()), VAddr: c0.p.buf.Addr()}
	res.Remote = Address{Addr: c0.conn.RemoteAddr().String(), STag: c0.rem.RKey, VAddr: c0.rem.Addr}

	c := &clock{iters: o.Iters, stop: o.Stop}
	if o.Duration > 0 {
		c.end = time.Now().Add(o.Duration)
	} else if o.Every > 0 {
		c.forever = true
	}
	// The reverse connections' servers start on our go.
	for _, cc := range conns {
		if cc.reverse {
			if err := cc.p.send(false); err != nil {
				return res, err
			}
		}
	}
	var stopTick func()
	if o.Every > 0 && o.Tick != nil {
		stopTick = ticker(&o, func() (n int64) {
			for _, c := range conns {
				if c.p.prog != nil {
					n += c.p.prog.Load()
				}
			}
			return n
		})
	}
	ss := make([]stats, len(conns))
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for i, cc := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if cc.reverse {
				ss[i], errs[i] = cc.p.passive(ctx, &o, cc.rem)
			} else {
				ss[i], errs[i] = cc.p.active(ctx, &o, cc.rem, c)
			}
		}()
	}
	wg.Wait()
	if stopTick != nil {
		stopTick()
	}
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	res.Row, res.Bytes, res.Msgs = aggregate(o.Size, ss)
	for _, cc := range conns {
		addCounters(&res.Counter, cc.p.qp.Counters())
	}
	return res, nil
}

// ticker calls o.Tick every o.Every with the row of the messages that
// progress says completed in the period, until the func it returns.
func ticker(o *Options, progress func() int64) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(o.Every)
		defer t.Stop()
		var last int64
		lastT := time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				n := progress()
				sec := now.Sub(lastT).Seconds()
				d := n - last
				r := Row{Size: o.Size, Iters: int(d), Elapsed: now.Sub(lastT), AvgBps: float64(d) * float64(o.Size) / sec, MsgRate: float64(d) / sec}
				r.PeakBps = r.AvgBps
				o.Tick(r)
				last, lastT = n, now
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func addCounters(a *endpoint.Counters, b endpoint.Counters) {
	a.TxFPDUs += b.TxFPDUs
	a.RxFPDUs += b.RxFPDUs
	a.TxOctets += b.TxOctets
	a.RxOctets += b.RxOctets
	a.TxPayload += b.TxPayload
	a.RxPayload += b.RxPayload
	a.TxSends += b.TxSends
	a.RxSends += b.RxSends
	a.TxWrites += b.TxWrites
	a.RxWrites += b.RxWrites
	a.TxReadReqs += b.TxReadReqs
	a.RxReadReqs += b.RxReadReqs
	a.TxReadResps += b.TxReadResps
	a.RxReadResps += b.RxReadResps
	a.TxTerminates += b.TxTerminates
	a.RxTerminates += b.RxTerminates
	a.CRCErrors += b.CRCErrors
	a.MarkerErrors += b.MarkerErrors
	a.ReadStalls += b.ReadStalls
	a.TxAtomicReqs += b.TxAtomicReqs
	a.RxAtomicReqs += b.RxAtomicReqs
	a.TxAtomicResps += b.TxAtomicResps
	a.RxAtomicResps += b.RxAtomicResps
	a.TxImmData += b.TxImmData
	a.RxImmData += b.RxImmData
}

func dialOne(ctx context.Context, dial Dialer, o *Options, run uint64, reverse bool) (*clientConn, error) {
	p, err := newPeer(o.Test, o.Size, o.Depth, o.IRD, o.ORD, o.Timeout)
	if err != nil {
		return nil, err
	}
	p.prog = new(atomic.Int64)
	p.postInitialRecvs(o.Test, !reverse)
	req := request{Magic: magic, Test: o.Test, Size: o.Size, Depth: o.Depth, Iters: o.Iters, DurMS: o.Duration.Milliseconds(),
		PostList: o.PostList, Atomic: o.Atomic, CQMod: o.CQMod, IRD: o.IRD, ORD: o.ORD, Run: run, Sweep: o.sweep, QPs: o.QPs, Bidir: o.Bidir,
		Reverse: reverse, Final: o.Final, Peer: p.advert()}
	pd, _ := json.Marshal(req)
	cfg := o.Config
	cfg.PrivateData = pd
	nc, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	conn, err := endpoint.Connect(ctx, nc, p.qp, &cfg)
	if err != nil {
		nc.Close()
		var re *endpoint.RejectError
		if errors.As(err, &re) && len(re.PrivateData) > 0 {
			return nil, fmt.Errorf("perf: the server refused: %s", re.PrivateData)
		}
		return nil, err
	}
	var rem advert
	if err := json.Unmarshal(conn.Params().PeerPrivateData, &rem); err != nil {
		conn.Close()
		return nil, fmt.Errorf("perf: server's Private Data: %w", err)
	}
	return &clientConn{p: p, conn: conn, rem: rem, reverse: reverse}, nil
}

// Sweep runs o once per size (perftest's -a), every run on new
// connections; each is called after each size. It stops at the first
// error.
func Sweep(ctx context.Context, dial Dialer, o Options, sizes []int, each func(Result)) error {
	o.sweep = newID()
	for i, s := range sizes {
		oo := o
		oo.Size = s
		oo.Final = i == len(sizes)-1
		r, err := Run(ctx, dial, oo)
		if err != nil {
			return fmt.Errorf("size %d: %w", s, err)
		}
		each(r)
	}
	return nil
}
