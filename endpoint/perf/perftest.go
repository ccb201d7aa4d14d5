package perf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iwkit/iwkit/endpoint"
)

// iwperf as either side of perftest's -R tools (ib_write_bw, ib_read_bw,
// ib_send_bw, ib_write_lat, ib_read_lat, ib_send_lat), through perftest's own exchange
// (perftest_comm.go). Both sides need the same -s, -n and -q, as perftest
// needs: they are not exchanged.

// PerftestTests are the tests whose perftest exchange iwperf speaks.
var PerftestTests = []string{WriteBW, ReadBW, SendBW, WriteLat, ReadLat, SendLat}

func checkPerftest(o *Options) error {
	if err := o.Normalize(); err != nil {
		return err
	}
	if ptLayout[o.Test] == nil {
		return fmt.Errorf("perf: perftest's exchange is implemented for %v, not %s", PerftestTests, o.Test)
	}
	// What perftest itself refuses (perftest_parameters.c, 4.5-0.17), in
	// its words. --run_infinitely overrides -a there (the parser sets
	// test_method last), and here.
	inf := o.Every > 0
	if inf {
		o.All = false
	}
	switch {
	case o.Bidir && IsLat(o.Test):
		return errors.New("perf: perftest: Bidirectional is only available in BW test (-b)")
	case o.All && o.Duration > 0:
		return errors.New("perf: perftest: Duration mode currently doesn't support running on all sizes (-a with -D)")
	case inf && IsLat(o.Test):
		return errors.New("perf: perftest: run_infinitely exists only in BW tests for now")
	case inf && o.Bidir && o.Test == SendBW:
		return errors.New("perf: perftest: run_infinitely mode is not supported in SEND Bidirectional BW test")
	}
	if o.Test == WriteLat && o.QPs != 1 {
		return errors.New("perf: perftest's write_lat runs on one QP") // run_iter_lat_write uses QP 0 only
	}
	return nil
}

// ptSizes are the sizes of a run: -s, or -a's.
func ptSizes(o *Options) []int {
	if o.All {
		return SweepSizes()
	}
	return []int{o.Size}
}

// ptAlloc is the message size buffers are made for: -a's largest, as
// perftest's force_dependecies sets size to MAX_SIZE for RUN_ALL.
func ptAlloc(o *Options) int {
	if o.All {
		return MaxSize
	}
	return o.Size
}

// ptRun is one run with perftest: its control channel and test QPs.
type ptRun struct {
	o         Options
	client    bool
	comm      *ptComm
	cycle     int // perftest's cycle buffer, both sides' largest
	peers     []*peer
	conns     []*endpoint.Conn
	mine, rem []ptDest
	res       Result
	// peerWrites counts the peer's RDMA Writes of a -b write_bw run by its
	// reports, per QP.
	peerWrites uint64
}

func newPTRun(o Options, client bool) (*ptRun, error) {
	if err := checkPerftest(&o); err != nil {
		return nil, err
	}
	return &ptRun{o: o, client: client, peers: make([]*peer, o.QPs), conns: make([]*endpoint.Conn, o.QPs),
		res: Result{Test: o.Test, QPs: o.QPs, Depth: o.Depth, CQMod: o.CQMod, Exchange: "perftest " + ptVersion}}, nil
}

func (r *ptRun) close() {
	for _, c := range r.conns {
		if c != nil {
			c.Close()
		}
	}
	if r.comm != nil {
		r.comm.close()
	}
}

// newPeer makes test QP i, whose buffer covers what perftest's client
// touches: a message, or the cycle buffer it walks through
// (BUFF_SIZE(size, cycle buffer) octets from the vaddr).
func (r *ptRun) newPeer(i int) (*endpoint.QP, error) {
	o := &r.o
	depth := o.Depth
	if o.Test == SendBW && (!r.client || o.Bidir) {
		depth = max(depth, (ptRxDepth(o.Iters)+1)/2) // 2×depth receives: rx_depth at least
	}
	p, err := newPeer(o.Test, ptAlloc(o), depth, o.IRD, o.ORD, o.Timeout)
	if err != nil {
		return nil, err
	}
	need := max(ptAlloc(o), r.cycle)
	if o.Test == WriteLat {
		need = ptWriteLatBuf(ptAlloc(o), r.cycle)
	}
	if ptBidirHalves(o) {
		need += p.slots * p.size // our slots, then the part the peer's operations touch
	}
	if p.buf.Len() < need {
		if p.buf, err = p.buf.PD().RegisterMR(make([]byte, need), endpoint.AccessAll, nil); err != nil {
			return nil, err
		}
	}
	switch {
	case o.Test == SendLat:
		p.postInitialRecvs(SendLat, true) // the pings or pongs
	case o.Test == SendBW && (!r.client || o.Bidir):
		p.postInitialRecvs(SendBW, false) // what perftest's sender may send before our first credit
	}
	r.peers[i] = p
	return p.qp, nil
}

// ptBidirHalves says whether a test QP's buffer is split in two parts:
// with -b, write_bw and read_bw both place the peer's data into the
// buffer and send from it at once. perftest uses one buffer for both
// (the octets are not checked); iwperf's receive engine and its transmit
// engine would then copy into and out of the same octets at once (a data
// race in Go), so it works from its slots and advertises to the peer the
// part after them.
func ptBidirHalves(o *Options) bool {
	return o.Bidir && (o.Test == WriteBW || o.Test == ReadBW)
}

// exchange sends the test QPs' records, takes the peer's and fills the
// result's addresses in.
func (r *ptRun) exchange(ctx context.Context) error {
	r.mine = make([]ptDest, len(r.peers))
	for i, p := range r.peers {
		// out_reads is 1 but for the Read tests, as perftest sends it
		// (testdata/siw/ib_write_bw_4096.pcap, frame 65).
		r.mine[i] = ptDest{OutReads: 1, QPN: p.qp.Num(), PSN: rand.Uint32() & 0xffffff, RKey: uint32(p.buf.STag()), VAddr: p.buf.Addr()}
		if ptBidirHalves(&r.o) {
			r.mine[i].VAddr += uint64(p.slots * p.size)
		}
		switch r.o.Test {
		case ReadBW, ReadLat:
			r.mine[i].OutReads = uint32(min(r.o.Depth, 128))
		case SendBW:
			r.mine[i].RKey, r.mine[i].VAddr = uint32(p.ctl.STag()), p.ctl.Addr()+uint64(p.creditOff())
		case WriteLat:
			r.mine[i].VAddr += uint64(ptHalf(ptAlloc(&r.o), r.cycle)) // the half the peer writes
		}
	}
	var err error
	if r.rem, err = r.comm.dests(ctx, r.o.Test, r.mine); err != nil {
		return err
	}
	c0, p0 := r.conns[0], r.peers[0]
	r.res.Params = c0.Params()
	r.res.Local = Address{Addr: c0.LocalAddr().String(), QPN: p0.qp.Num(), STag: uint32(p0.buf.STag()), VAddr: p0.buf.Addr()}
	r.res.Remote = Address{Addr: c0.RemoteAddr().String(), QPN: r.rem[0].QPN, STag: r.rem[0].RKey, VAddr: r.rem[0].VAddr}
	return nil
}

// each runs f on every test QP at once and returns their stats.
func (r *ptRun) each(f func(i int, p *peer) (stats, error)) ([]stats, error) {
	ss := make([]stats, len(r.peers))
	errs := make([]error, len(r.peers))
	var wg sync.WaitGroup
	for i, p := range r.peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ss[i], errs[i] = f(i, p)
		}()
	}
	wg.Wait()
	return ss, errors.Join(errs...)
}

func (r *ptRun) counters() {
	r.res.Counter = endpoint.Counters{}
	for _, p := range r.peers {
		addCounters(&r.res.Counter, p.qp.Counters())
	}
}

// ptConnect dials one rdma_cm connection of perftest's: retried while
// the peer does not listen yet (perftest's server listens for the test
// connections only after an exchange, and a forwarder such as qemu's
// accepts and then closes), never after an MPA Reject. mk makes the QP
// of each try.
func ptConnect(ctx context.Context, dial Dialer, cfg endpoint.Config, mk func() (*endpoint.QP, error)) (*endpoint.Conn, error) {
	for try := 0; ; try++ {
		qp, err := mk()
		if err != nil {
			return nil, err
		}
		nc, err := dial(ctx)
		if err == nil {
			var conn *endpoint.Conn
			if conn, err = endpoint.Connect(ctx, nc, qp, &cfg); err == nil {
				return conn, nil
			}
			nc.Close()
		}
		var re *endpoint.RejectError
		if errors.As(err, &re) || try == ptRetries || ctx.Err() != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// RunPerftest runs one test of one size as the client of perftest's
// server (ib_write_bw -R and its kin).
func RunPerftest(ctx context.Context, dial Dialer, o Options) (Result, error) {
	r, err := newPTRun(o, true)
	if err != nil {
		return Result{}, err
	}
	defer r.close()
	o = r.o
	cfg := o.Config
	cfg.PrivateData = nil
	conn, err := ptConnect(ctx, dial, cfg, func() (*endpoint.QP, error) {
		var err error
		if r.comm, err = newPTComm(true, o.Timeout); err != nil {
			return nil, err
		}
		return r.comm.qp, nil
	})
	if err != nil {
		return r.res, fmt.Errorf("perf: perftest's control connection: %w", err)
	}
	r.comm.conn = conn
	// perftest sleeps a second once its control connection is up (main,
	// after establish_connection). Linux siw needs it: a Send that
	// follows the MPA Reply at once can stay unread on its accept path.
	select {
	case <-ctx.Done():
		return r.res, ctx.Err()
	case <-time.After(ptSettle):
	}
	if r.cycle, err = r.comm.preamble(ctx); err != nil {
		return r.res, err
	}
	for i := range r.peers {
		if r.conns[i], err = ptConnect(ctx, dial, cfg, func() (*endpoint.QP, error) { return r.newPeer(i) }); err != nil {
			return r.res, fmt.Errorf("perf: perftest's test connection %d: %w", i, err)
		}
	}
	if err := r.exchange(ctx); err != nil {
		return r.res, err
	}
	if err := r.sizes(ctx, &o); err != nil {
		return r.res, err
	}
	row := r.res.Row
	if o.Every > 0 && (o.Bidir || o.Test == SendBW) {
		if _, err := r.comm.xchg(ctx, r.mine[0].encode(), o.Timeout); err != nil { // the closing record that ends the server's loop (sizes)
			return r.res, err
		}
	} else if !o.Bidir && ptCloses(o.Test) {
		rep := ptReport{Size: uint64(row.Size), Iters: uint64(row.Iters), Peak: row.PeakBps / mib, Avg: row.AvgBps / mib, MsgRateMpp: row.MsgRate / 1e6}
		if _, err = r.comm.finish(ctx, o.Test, r.mine[0], rep, o.Timeout); err != nil {
			return r.res, err
		}
	} else if o.Bidir {
		if _, err := r.comm.xchg(ctx, r.mine[0].encode(), o.Timeout); err != nil { // ctx_close_connection
			return r.res, err
		}
	}
	// Let the server close first, as perftest's client does (it tears its
	// test QPs down before its control QP): siw completes the server's
	// last Send in error when the connection resets under it, and
	// ib_read_bw then exits 1. The flush of our receives says it closed.
	r.comm.recv(ctx, ptSettle)
	return r.res, nil
}

// sizes runs the run's sizes (-s, or -a's) on the test QPs, as perftest's
// mains do: per size a sync for send_lat and send_bw (after their
// receives) and before a bidirectional run, one after the run in a
// sweep (-a) of send_bw or -b, which then exchanges both sides' reports
// (xchg_bw_reports) and adds the peer's to the row (print_full_bw_report).
// The one-way client is active, the server passive but for write_lat
// (both play it) and -b (both active). r.res holds the last size's; each
// goes to o.Each.
func (r *ptRun) sizes(ctx context.Context, o *Options) error {
	for _, size := range ptSizes(o) {
		so := *o
		so.Size = size
		for _, p := range r.peers {
			p.msg = size
		}
		inf := o.Every > 0
		if o.Test == SendLat || o.Test == SendBW || o.Bidir && !inf {
			if _, err := r.comm.xchg(ctx, r.mine[0].encode(), r.syncWait(o)); err != nil {
				return err
			}
		}
		if inf && !r.client {
			// perftest runs these until it is killed; iwperf's client,
			// when stopped, sends its closing record at once, which ends
			// the server's run here (ServePerftest answers it).
			stop := make(chan struct{})
			so.Stop = stop
			rctx, cancel := context.WithCancel(ctx)
			defer cancel() // a failed run's: no goroutine outlives it
			go func() {
				if _, err := r.comm.recv(rctx, 0); err == nil {
					close(stop)
				}
			}()
		}
		ss, err := r.runSize(ctx, &so)
		if err != nil {
			return err
		}
		if inf {
			r.res.Row, r.res.Bytes, r.res.Msgs = aggregate(size, ss)
			r.res.Bidir = o.Bidir
			r.counters()
			return nil
		}
		// After the run, in a sweep (RUN_ALL) only: write_bw's and
		// read_bw's -b sync, before the reports; send_bw's sync, after
		// them (send_bw.c). A single size (RUN_REGULAR) has none.
		postSync := o.All && (o.Bidir || o.Test == SendBW)
		if postSync && o.Test != SendBW {
			if _, err := r.comm.xchg(ctx, r.mine[0].encode(), r.syncWait(o)); err != nil {
				return err
			}
		}
		if ss == nil {
			// The one-way server of a test it only serves: the client's
			// report (write_bw, read_bw) comes at the end, in finish.
			r.res.Row = Row{Size: size, Iters: o.Iters}
		} else {
			r.res.Row, r.res.Bytes, r.res.Msgs = aggregate(size, ss)
		}
		r.res.Bidir = o.Bidir
		if o.Bidir && !(o.Test == SendBW && o.Duration > 0) {
			row := r.res.Row
			rem, err := r.comm.reports(ctx, ptReport{Size: uint64(size), Iters: uint64(row.Iters), Peak: row.PeakBps / mib, Avg: row.AvgBps / mib, MsgRateMpp: row.MsgRate / 1e6})
			if err != nil {
				return err
			}
			if o.Test == WriteBW {
				// The peer's last Writes may still be on their way (its
				// completions say sent; the control connection can overtake).
				r.peerWrites += rem.Iters
				drainWrites(ctx, r.peers, r.peerWrites, o.Timeout)
			}
			r.res.Row.PeakBps += rem.Peak * mib
			r.res.Row.AvgBps += rem.Avg * mib
			r.res.Row.MsgRate += rem.MsgRateMpp * 1e6
			r.res.Msgs += int64(rem.Iters) * int64(o.QPs)
			r.res.Bytes += int64(rem.Iters) * int64(o.QPs) * int64(size)
		}
		if postSync && o.Test == SendBW {
			if _, err := r.comm.xchg(ctx, r.mine[0].encode(), r.syncWait(o)); err != nil {
				return err
			}
		}
		r.counters()
		if o.Each != nil {
			o.Each(r.res)
		}
	}
	return nil
}

// syncWait bounds a sync's wait: the server's, while its one-way peer
// runs, as long as ctx.
func (r *ptRun) syncWait(o *Options) time.Duration {
	if r.client || o.Bidir {
		return o.Timeout
	}
	return 0
}

// runSize runs one size on every test QP: the active side's loop, or
// the passive side's part (nil stats where it has none to measure).
func (r *ptRun) runSize(ctx context.Context, o *Options) ([]stats, error) {
	active := r.client || o.Bidir
	if o.Every > 0 && o.Tick != nil {
		for _, p := range r.peers {
			p.prog = new(atomic.Int64)
		}
		defer ticker(o, func() (n int64) {
			for _, p := range r.peers {
				n += p.prog.Load()
			}
			return n
		})()
	}
	switch {
	case o.Test == WriteLat:
		// Both sides of write_lat ping-pong, the server first; both
		// measure and print their own row.
		return r.each(func(i int, p *peer) (stats, error) {
			return p.writeLat(ctx, o, ptHalf(ptAlloc(&r.o), r.cycle), r.rem[i], !r.client)
		})
	case o.Test == SendBW && o.Bidir:
		// run_iter_bi: both sides send and receive, with credits both ways.
		return r.each(func(i int, p *peer) (stats, error) { return p.sendCredited(ctx, o, ptRxDepth(o.Iters), &r.rem[i]) })
	case o.Test == SendBW && r.client:
		return r.each(func(i int, p *peer) (stats, error) { return p.sendCredited(ctx, o, ptRxDepth(o.Iters), nil) })
	case o.Test == SendBW:
		// perftest's send_bw receiver measures, and prints, its own row.
		return r.each(func(i int, p *peer) (stats, error) { return p.recvCredited(ctx, o, ptRxDepth(o.Iters), r.rem[i]) })
	case o.Test == SendLat && !r.client:
		for _, p := range r.peers {
			if err := p.echo(ctx, o); err != nil {
				return nil, err
			}
		}
		return nil, nil
	case !active:
		return nil, nil
	}
	clk := &clock{iters: o.Iters, stop: o.Stop}
	if o.Duration > 0 {
		clk.end = time.Now().Add(o.Duration)
	} else if o.Every > 0 {
		clk.forever = true
	}
	return r.each(func(i int, p *peer) (stats, error) {
		adv := advert{Addr: r.rem[i].VAddr, RKey: r.rem[i].RKey, Len: max(o.Size, r.cycle)}
		if IsLat(o.Test) {
			return p.activeLat(ctx, o, adv, clk)
		}
		return p.activeBW(ctx, o, adv, clk)
	})
}

// ServePerftest serves one client of perftest's (ib_write_bw -R HOST and
// its kin) from l and returns the client's measurement from its report
// (write_bw, read_bw), its own as send_bw's receiver, or the run's size
// and count (latency tests). The client's Writes are placed and its
// Reads answered by the endpoint; here ib_send_lat's pings are echoed and
// ib_send_bw's Sends received and credited; write_lat is played with
// the client, the server first, and measured here too. For write_lat, l
// needs endpoint.Config.EarlyResponder: perftest's server writes before
// its client sends anything.
func ServePerftest(ctx context.Context, l *endpoint.Listener, o Options) (Result, error) {
	r, err := newPTRun(o, false)
	if err != nil {
		return Result{}, err
	}
	defer r.close()
	o = r.o
	req, err := acceptClient(ctx, l, o.Log)
	if err != nil {
		return r.res, err
	}
	if r.comm, err = newPTComm(false, o.Timeout); err != nil {
		req.Close()
		return r.res, err
	}
	if r.comm.conn, err = req.Accept(r.comm.qp, nil); err != nil {
		return r.res, fmt.Errorf("perf: perftest's control connection: %w", err)
	}
	if r.cycle, err = r.comm.preamble(ctx); err != nil {
		return r.res, err
	}
	for i := range r.peers {
		// A connection that fails its MPA exchange (a port scanner, a
		// health check, a client that went silent) is not perftest's:
		// skip it, as for the control connection, within the deadline.
		actx, cancel := context.WithTimeout(ctx, o.Timeout)
		req, err := acceptClient(actx, l, o.Log)
		cancel()
		if err == nil {
			var qp *endpoint.QP
			if qp, err = r.newPeer(i); err != nil {
				req.Close()
			} else {
				r.conns[i], err = req.Accept(qp, nil)
			}
		}
		if err != nil {
			return r.res, fmt.Errorf("perf: perftest's test connection %d: %w", i, err)
		}
	}
	if err := r.exchange(ctx); err != nil {
		return r.res, err
	}
	// The client runs now; the server waits for the end as long as ctx
	// lets it. The one-way server of write_bw, read_bw and read_lat only
	// waits (the tests' mains go straight to the end), whatever the sizes.
	if o.Bidir || o.Test != WriteBW && o.Test != ReadBW && o.Test != ReadLat {
		if err := r.sizes(ctx, &o); err != nil {
			return r.res, err
		}
	} else {
		r.res.Row = Row{Size: ptSizes(&o)[len(ptSizes(&o))-1], Iters: o.Iters}
	}
	if o.Every > 0 && (o.Bidir || o.Test == SendBW) {
		// The client's closing record ended the run (sizes): answer it.
		return r.res, r.comm.send(ctx, r.mine[0].encode())
	}
	if o.Bidir || !ptCloses(o.Test) {
		if o.Bidir {
			if _, err := r.comm.xchg(ctx, r.mine[0].encode(), o.Timeout); err != nil { // ctx_close_connection
				return r.res, err
			}
		}
		return r.res, nil
	}
	rep, err := r.comm.finish(ctx, o.Test, r.mine[0], ptReport{Size: uint64(r.res.Row.Size)}, 0)
	if err != nil {
		return r.res, err
	}
	if o.Test == WriteBW {
		// The client's last Writes may still be on their way: its
		// completions say sent, and the control connection can overtake.
		drainWrites(ctx, r.peers, rep.Iters*uint64(len(ptSizes(&o))), o.Timeout)
	}
	r.counters()
	if !ptReports(o.Test) {
		// No report: perftest's latency server prints none either (its
		// size and count are its own); send_bw's row is its own.
		return r.res, nil
	}
	r.res.Row = Row{Size: int(rep.Size), Iters: int(rep.Iters), PeakBps: rep.Peak * mib, AvgBps: rep.Avg * mib, MsgRate: rep.MsgRateMpp * 1e6}
	r.res.Msgs = int64(rep.Iters) * int64(o.QPs)
	r.res.Bytes = r.res.Msgs * int64(rep.Size)
	return r.res, nil
}

// drainWrites waits, at most wait, until every QP has had n RDMA Writes
// placed, so that the result's counters hold the whole run.
func drainWrites(ctx context.Context, peers []*peer, n uint64, wait time.Duration) {
	end := time.Now().Add(wait)
	for _, p := range peers {
		for p.qp.Counters().RxWrites < n && time.Now().Before(end) && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// echo answers o.Iters pings of ib_send_lat's (or, with o.Duration, the
// pings that come within it from the first, as perftest's
// run_iter_lat_send starts its timer on its first receive), each with a
// Send of the size.
func (p *peer) echo(ctx context.Context, o *Options) error {
	wctx := ctx // after the first ping of a timed run: until its end
	for i := 0; o.Duration > 0 || i < o.Iters; i++ {
		wc, err := p.waitRecv(wctx, 0)
		if err != nil {
			if wctx != ctx && wctx.Err() != nil && ctx.Err() == nil {
				return nil // the run's time is up
			}
			return err
		}
		if i == 0 && o.Duration > 0 {
			var cancel context.CancelFunc
			wctx, cancel = context.WithTimeout(ctx, o.Duration)
			defer cancel()
		}
		p.repost(wc)
		if err := p.ping(SendLat, advert{}); err != nil {
			return err
		}
	}
	return nil
}

// ListenerError is the listener's own failure (closed, its socket
// failed, ctx ended): a server cannot go on after it.
type ListenerError struct{ Err error }

func (e *ListenerError) Error() string { return "perf: listening: " + e.Err.Error() }
func (e *ListenerError) Unwrap() error { return e.Err }

// acceptClient waits for a client's first connection, passing over the
// connections that fail before their MPA Request (a port scan, a silent
// one past the MPA deadline, a bad Request), each logged to log.
func acceptClient(ctx context.Context, l *endpoint.Listener, log io.Writer) (*endpoint.ConnRequest, error) {
	for {
		req, err := l.Accept(ctx)
		var ce *endpoint.ConnError
		if errors.As(err, &ce) {
			if log != nil {
				fmt.Fprintf(log, "iwperf: %v\n", err)
			}
			continue
		}
		if err != nil {
			return nil, &ListenerError{err}
		}
		return req, nil
	}
}
