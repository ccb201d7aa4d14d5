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
	if o.Bidir {
		return errors.New("perf: with perftest's exchange, runs go one way (no -b)")
	}
	if (o.Duration > 0 || o.Every > 0) && o.Test != WriteBW && o.Test != ReadBW {
		// write_bw's and read_bw's servers only wait for the client's end
		// of run and its report, whatever the client's loop; the other
		// tests' servers count the client's -n messages.
		return fmt.Errorf("perf: with perftest's exchange, -D and --run_infinitely are for %s and %s", WriteBW, ReadBW)
	}
	if o.Test == WriteLat && o.QPs != 1 {
		return errors.New("perf: perftest's write_lat runs on one QP") // run_iter_lat_write uses QP 0 only
	}
	return nil
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
	if o.Test == SendBW && !r.client {
		depth = max(depth, (ptRxDepth(o.Iters)+1)/2) // 2×depth receives: rx_depth at least
	}
	p, err := newPeer(o.Test, o.Size, depth, o.IRD, o.ORD, o.Timeout)
	if err != nil {
		return nil, err
	}
	need := max(o.Size, r.cycle)
	if o.Test == WriteLat {
		need = ptWriteLatBuf(o.Size, r.cycle)
	}
	if p.buf.Len() < need {
		if p.buf, err = p.buf.PD().RegisterMR(make([]byte, need), endpoint.AccessAll, nil); err != nil {
			return nil, err
		}
	}
	switch {
	case o.Test == SendLat:
		p.postInitialRecvs(SendLat, true) // the pings or pongs
	case o.Test == SendBW && !r.client:
		p.postInitialRecvs(SendBW, false) // what perftest's sender may send before our first credit
	}
	r.peers[i] = p
	return p.qp, nil
}

// exchange sends the test QPs' records, takes the peer's and fills the
// result's addresses in.
func (r *ptRun) exchange(ctx context.Context) error {
	r.mine = make([]ptDest, len(r.peers))
	for i, p := range r.peers {
		// out_reads is 1 but for the Read tests, as perftest sends it
		// (testdata/siw/ib_write_bw_4096.pcap, frame 65).
		r.mine[i] = ptDest{OutReads: 1, QPN: p.qp.Num(), PSN: rand.Uint32() & 0xffffff, RKey: uint32(p.buf.STag()), VAddr: p.buf.Addr()}
		switch r.o.Test {
		case ReadBW, ReadLat:
			r.mine[i].OutReads = uint32(min(r.o.Depth, 128))
		case SendBW:
			r.mine[i].RKey, r.mine[i].VAddr = uint32(p.ctl.STag()), p.ctl.Addr()+uint64(p.creditOff())
		case WriteLat:
			r.mine[i].VAddr += uint64(ptHalf(r.o.Size, r.cycle)) // the half the peer writes
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
	clk := &clock{iters: o.Iters, stop: o.Stop}
	stopTick := func() {}
	if o.Duration > 0 {
		clk.end = time.Now().Add(o.Duration)
	} else if o.Every > 0 {
		clk.forever = true
	}
	if o.Every > 0 && o.Tick != nil {
		for _, p := range r.peers {
			p.prog = new(atomic.Int64)
		}
		stopTick = ticker(&o, func() (n int64) {
			for _, p := range r.peers {
				n += p.prog.Load()
			}
			return n
		})
	}
	ss, err := r.each(func(i int, p *peer) (stats, error) {
		adv := advert{Addr: r.rem[i].VAddr, RKey: r.rem[i].RKey, Len: max(o.Size, r.cycle)}
		switch {
		case o.Test == SendBW:
			return p.sendCredited(ctx, &o, ptRxDepth(o.Iters))
		case o.Test == WriteLat:
			return p.writeLat(ctx, &o, ptHalf(o.Size, r.cycle), r.rem[i], false)
		case IsLat(o.Test):
			return p.activeLat(ctx, &o, adv, clk)
		}
		return p.activeBW(ctx, &o, adv, clk)
	})
	stopTick()
	if err != nil {
		return r.res, err
	}
	r.res.Row, r.res.Bytes, r.res.Msgs = aggregate(o.Size, ss)
	r.counters()
	row := r.res.Row
	rep := ptReport{Size: uint64(o.Size), Iters: uint64(row.Iters), Peak: row.PeakBps / mib, Avg: row.AvgBps / mib, MsgRateMpp: row.MsgRate / 1e6}
	if ptCloses(o.Test) {
		if _, err = r.comm.finish(ctx, o.Test, r.mine[0], rep, o.Timeout); err != nil {
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
	// lets it.
	var ss []stats
	switch o.Test {
	case SendLat:
		for _, p := range r.peers {
			if err := p.echo(ctx, o.Iters); err != nil {
				return r.res, err
			}
		}
	case SendBW:
		// perftest's send_bw receiver measures, and prints, its own row.
		if ss, err = r.each(func(i int, p *peer) (stats, error) {
			return p.recvCredited(ctx, &o, ptRxDepth(o.Iters), r.rem[i])
		}); err != nil {
			return r.res, err
		}
	case WriteLat:
		// Both sides of write_lat ping-pong, the server first; both
		// measure and print their own row.
		if ss, err = r.each(func(i int, p *peer) (stats, error) {
			return p.writeLat(ctx, &o, ptHalf(o.Size, r.cycle), r.rem[i], true)
		}); err != nil {
			return r.res, err
		}
	}
	var rep ptReport
	if ptCloses(o.Test) {
		if rep, err = r.comm.finish(ctx, o.Test, r.mine[0], ptReport{Size: uint64(o.Size)}, 0); err != nil {
			return r.res, err
		}
	}
	if o.Test == WriteBW {
		// The client's last Writes may still be on their way: its
		// completions say sent, and the control connection can overtake.
		drainWrites(ctx, r.peers, rep.Iters, o.Timeout)
	}
	r.counters()
	switch {
	case ss != nil:
		r.res.Row, r.res.Bytes, r.res.Msgs = aggregate(o.Size, ss)
		return r.res, nil
	case IsLat(o.Test):
		// No report: perftest's latency server prints none either.
		r.res.Row = Row{Size: o.Size, Iters: o.Iters}
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

// echo answers n pings of ib_send_lat's, each with a Send of the size.
func (p *peer) echo(ctx context.Context, n int) error {
	for i := 0; i < n; i++ {
		wc, err := p.waitRecv(ctx, 0)
		if err != nil {
			return err
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
