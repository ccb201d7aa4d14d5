package perf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/iwkit/iwkit/endpoint"
)

// perftest's own exchange, so that iwperf meets ib_write_bw, ib_read_bw,
// ib_read_lat and ib_send_lat with -R (linux-rdma/perftest, the 6.06 that
// Debian bookworm's 4.5-0.17 package builds; perftest_communication.c and
// each test's main).
//
// With -R, perftest opens its control channel as an rdma_cm connection of
// its own (one RC QP, no Private Data, IRD/ORD 0) to the test's port, and
// every exchange is a pair of Sends on it: the client sends its record
// and then receives the server's, the server receives and then answers.
// Each record is a Send of exactly its size into a receive of 56 octets.
// In order:
//
//	version    16 octets, NUL-padded text ("6.06"); both sides refuse < 5.70
//	cycle      4 octets, network order: the cycle buffer (page size); max taken
//	cache line 4 octets, network order; max taken
//	MTU        2 octets: the ibv_mtu enum as text ("3" = 1024), min taken
//	dest       56 octets, a pingpong_dest (below), all zero
//	           ... the test connections: -q rdma_cm connections to the same
//	           port (the server listens again only now), no Private Data,
//	           IRD/ORD = out_reads for read_bw, 0 otherwise ...
//	dest       zero again
//	dest ...   each QP's record (rkey, vaddr of the buffer to Write/Read),
//	           in each test's own order (ptLayout), with syncs between
//	           ... the client runs; the server waits in the next exchange
//	           (ib_send_lat's server echoes each Send first) ...
//	dest       end of the run (bandwidth tests)
//	report     5 × 8 octets (bandwidth tests): size, iterations, BW peak,
//	           BW average (MB/sec, or Gb/sec with the client's
//	           --report_gbits), MsgRate (Mpps); integers and IEEE doubles
//	           in network order
//	dest       close
//
// The 56-octet pingpong_dest, every field in network order: lid (4),
// out_reads (4), qpn (4), psn (4), rkey (4), 4 octets of padding, vaddr
// (8), gid (16), srqn (4), gid_index (4).
const (
	ptVersion     = "6.06" // the perftest whose exchange this is
	ptMinVersion  = 5.70   // check_version_compatibility
	ptVersionLen  = 16     // MAX_VERSION
	ptDestLen     = 56     // sizeof(struct pingpong_dest)
	ptCycleBuffer = 4096   // sysconf(_SC_PAGESIZE) on x86-64
	ptCacheLine   = 64
	ptMTU         = "3" // IBV_MTU_1024, what siw's port reports
	ptRecvs       = 4   // receives kept posted on the control QP
	ptRetries     = 50  // test connections dialled before the server listens
	ptSettle      = time.Second
)

// PerftestTests are the tests whose perftest exchange iwperf speaks.
var PerftestTests = []string{WriteBW, ReadBW, ReadLat, SendLat}

// ptLayout is each test's order of the pingpong_dest exchanges after the
// test connections' closing sync: "q" is one per QP (its record), "1" a
// sync with QP 0's.
var ptLayout = map[string][]string{
	WriteBW: {"q", "q", "1"},      // write_bw.c
	ReadBW:  {"q", "q", "1"},      // read_bw.c
	ReadLat: {"1", "q", "q", "1"}, // read_lat.c
	SendLat: {"q", "1", "q", "1"}, // send_lat.c: the last after posting its receives
}

// ptDest is perftest's pingpong_dest.
type ptDest struct {
	OutReads, QPN, PSN, RKey uint32
	VAddr                    uint64
}

func (d ptDest) encode() []byte {
	b := make([]byte, ptDestLen)
	be := binary.BigEndian
	be.PutUint32(b[4:], d.OutReads)
	be.PutUint32(b[8:], d.QPN)
	be.PutUint32(b[12:], d.PSN)
	be.PutUint32(b[16:], d.RKey)
	be.PutUint64(b[24:], d.VAddr)
	return b
}

func decodeDest(b []byte) (ptDest, error) {
	if len(b) != ptDestLen {
		return ptDest{}, fmt.Errorf("perf: perftest sent a %d-octet record where its pingpong_dest (%d) belongs", len(b), ptDestLen)
	}
	be := binary.BigEndian
	return ptDest{OutReads: be.Uint32(b[4:]), QPN: be.Uint32(b[8:]), PSN: be.Uint32(b[12:]), RKey: be.Uint32(b[16:]), VAddr: be.Uint64(b[24:])}, nil
}

// ptReport is perftest's bw_report_data as xchg_bw_reports sends it.
type ptReport struct {
	Size, Iters           uint64
	Peak, Avg, MsgRateMpp float64
}

func (r ptReport) fields() [][]byte {
	f := make([][]byte, 5)
	for i, v := range []uint64{r.Size, r.Iters, math.Float64bits(r.Peak), math.Float64bits(r.Avg), math.Float64bits(r.MsgRateMpp)} {
		f[i] = binary.BigEndian.AppendUint64(nil, v)
	}
	return f
}

// ptComm is the control channel: one QP whose Sends carry the records.
type ptComm struct {
	client     bool
	qp         *endpoint.QP
	scq, rcq   *endpoint.CQ
	sbuf, rbuf *endpoint.MR
	conn       *endpoint.Conn
	to         time.Duration
}

func newPTComm(client bool, to time.Duration) (*ptComm, error) {
	dev := endpoint.OpenDevice(endpoint.DeviceAttr{})
	pd := dev.AllocPD()
	c := &ptComm{client: client, to: to}
	var err error
	if c.scq, err = dev.CreateCQ(16); err != nil {
		return nil, err
	}
	if c.rcq, err = dev.CreateCQ(16); err != nil {
		return nil, err
	}
	if c.qp, err = pd.CreateQP(endpoint.QPAttr{SendCQ: c.scq, RecvCQ: c.rcq, SQDepth: 4, RQDepth: ptRecvs}); err != nil {
		return nil, err
	}
	if c.sbuf, err = pd.RegisterMR(make([]byte, 64), endpoint.AccessLocalRead, nil); err != nil {
		return nil, err
	}
	if c.rbuf, err = pd.RegisterMR(make([]byte, 64*ptRecvs), endpoint.AccessLocalWrite, nil); err != nil {
		return nil, err
	}
	for i := 0; i < ptRecvs; i++ {
		if err := c.postRecv(i); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *ptComm) postRecv(i int) error {
	_, err := c.qp.PostRecv(endpoint.RecvWR{WRID: uint64(i), SGL: []endpoint.SGE{c.rbuf.SGE(64*i, ptDestLen)}})
	return err
}

func (c *ptComm) send(ctx context.Context, b []byte) error {
	copy(c.sbuf.Buf(), b)
	if _, err := c.qp.PostSend(endpoint.SendWR{Opcode: endpoint.OpSend, Signaled: true, SGL: []endpoint.SGE{c.sbuf.SGE(0, len(b))}}); err != nil {
		return err
	}
	_, err := c.wait(ctx, c.scq, c.to)
	return err
}

// recv waits for the peer's next record; wait 0 waits as long as ctx.
func (c *ptComm) recv(ctx context.Context, wait time.Duration) ([]byte, error) {
	wc, err := c.wait(ctx, c.rcq, wait)
	if err != nil {
		return nil, err
	}
	i := int(wc.WRID)
	b := append([]byte(nil), c.rbuf.Buf()[64*i:64*i+int(wc.ByteLen)]...)
	return b, c.postRecv(i)
}

func (c *ptComm) wait(ctx context.Context, cq *endpoint.CQ, wait time.Duration) (endpoint.WorkCompletion, error) {
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	var wcs [1]endpoint.WorkCompletion
	if _, err := cq.Wait(ctx, wcs[:]); err != nil {
		if qerr := c.qp.Err(); qerr != nil {
			return wcs[0], fmt.Errorf("perf: perftest's control connection: %w", qerr)
		}
		return wcs[0], fmt.Errorf("perf: waiting for perftest: %w", err)
	}
	if wcs[0].Status != endpoint.StatusSuccess {
		return wcs[0], fmt.Errorf("perf: perftest's control connection: %v completed with %v", wcs[0].Opcode, wcs[0].Status)
	}
	return wcs[0], nil
}

// xchg is one exchange: the client sends first, the server answers.
func (c *ptComm) xchg(ctx context.Context, my []byte, wait time.Duration) ([]byte, error) {
	if c.client {
		if err := c.send(ctx, my); err != nil {
			return nil, err
		}
		return c.recv(ctx, wait)
	}
	rem, err := c.recv(ctx, wait)
	if err != nil {
		return nil, err
	}
	return rem, c.send(ctx, my)
}

// preamble runs the exchanges before the test connections and returns
// the cycle buffer both sides use.
func (c *ptComm) preamble(ctx context.Context) (int, error) {
	ver := make([]byte, ptVersionLen)
	copy(ver, ptVersion)
	rem, err := c.xchg(ctx, ver, c.to)
	if err != nil {
		return 0, err
	}
	rv := string(rem)
	if i := indexNUL(rem); i >= 0 {
		rv = rv[:i]
	}
	if v, err := strconv.ParseFloat(rv, 64); err != nil || v < ptMinVersion {
		return 0, fmt.Errorf("perf: perftest version %q: this exchange is perftest %s's (at least %.2f)", rv, ptVersion, ptMinVersion)
	}
	cycle := ptCycleBuffer
	for _, mine := range []uint32{ptCycleBuffer, ptCacheLine} {
		rem, err := c.xchg(ctx, binary.BigEndian.AppendUint32(nil, mine), c.to)
		if err != nil {
			return 0, err
		}
		if mine == ptCycleBuffer && len(rem) == 4 {
			cycle = max(cycle, int(binary.BigEndian.Uint32(rem)))
		}
	}
	if _, err := c.xchg(ctx, []byte(ptMTU+"\x00"), c.to); err != nil {
		return 0, err
	}
	_, err = c.xchg(ctx, ptDest{}.encode(), c.to)
	return cycle, err
}

func indexNUL(b []byte) int {
	for i, x := range b {
		if x == 0 {
			return i
		}
	}
	return -1
}

// dests exchanges the QPs' records in test's order (ptLayout), after
// the test connections' closing sync; it returns the peer's.
func (c *ptComm) dests(ctx context.Context, test string, mine []ptDest) ([]ptDest, error) {
	if _, err := c.xchg(ctx, ptDest{}.encode(), c.to); err != nil {
		return nil, err
	}
	rem := make([]ptDest, len(mine))
	for _, step := range ptLayout[test] {
		if step == "1" {
			if _, err := c.xchg(ctx, mine[0].encode(), c.to); err != nil {
				return nil, err
			}
			continue
		}
		for i, d := range mine {
			b, err := c.xchg(ctx, d.encode(), c.to)
			if err != nil {
				return nil, err
			}
			if rem[i], err = decodeDest(b); err != nil {
				return nil, err
			}
		}
	}
	return rem, nil
}

// finish runs what follows the run: for the bandwidth tests the end,
// the reports (it returns the peer's) and the close; for the latency
// tests the close. wait bounds the first exchange (the server waits
// there while the client runs).
func (c *ptComm) finish(ctx context.Context, test string, d ptDest, my ptReport, wait time.Duration) (ptReport, error) {
	if _, err := c.xchg(ctx, d.encode(), wait); err != nil || IsLat(test) {
		return ptReport{}, err
	}
	var f [5]uint64
	for i, b := range my.fields() {
		rem, err := c.xchg(ctx, b, c.to)
		if err != nil {
			return ptReport{}, err
		}
		if len(rem) != 8 {
			return ptReport{}, fmt.Errorf("perf: perftest sent a %d-octet report field", len(rem))
		}
		f[i] = binary.BigEndian.Uint64(rem)
	}
	_, err := c.xchg(ctx, d.encode(), c.to)
	return ptReport{Size: f[0], Iters: f[1], Peak: math.Float64frombits(f[2]), Avg: math.Float64frombits(f[3]), MsgRateMpp: math.Float64frombits(f[4])}, err
}

func (c *ptComm) close() {
	if c.conn != nil {
		c.conn.Close()
	}
}

func checkPerftest(o *Options) error {
	if err := o.Normalize(); err != nil {
		return err
	}
	if ptLayout[o.Test] == nil {
		return fmt.Errorf("perf: perftest's exchange is implemented for %v, not %s", PerftestTests, o.Test)
	}
	if o.Bidir || o.Duration > 0 || o.Every > 0 {
		return errors.New("perf: with perftest's exchange, only a run of -n iterations one way")
	}
	return nil
}

// ptPeer makes one test QP whose buffer covers what perftest's client
// touches: a message, or the cycle buffer it walks through.
func ptPeer(o *Options, cycle int) (*peer, error) {
	p, err := newPeer(o.Test, o.Size, o.Depth, o.IRD, o.ORD, o.Timeout)
	if err != nil {
		return nil, err
	}
	if need := max(o.Size, cycle); p.buf.Len() < need {
		if p.buf, err = p.buf.PD().RegisterMR(make([]byte, need), endpoint.AccessAll, nil); err != nil {
			return nil, err
		}
	}
	if o.Test == SendLat {
		p.postInitialRecvs(SendLat, true) // the pings or pongs
	}
	return p, nil
}

func (p *peer) ptDest(o *Options) ptDest {
	d := ptDest{QPN: p.qp.Num(), PSN: rand.Uint32() & 0xffffff, RKey: uint32(p.buf.STag()), VAddr: p.buf.Addr()}
	if o.Test == ReadBW || o.Test == ReadLat {
		d.OutReads = uint32(min(o.Depth, 128))
	}
	return d
}

// ptConnect dials one rdma_cm connection of perftest's: retried while
// the peer does not listen yet (perftest's server listens for the test
// connections only after an exchange, and a forwarder such as qemu's
// accepts and then closes), never after an MPA Reject.
func ptConnect(ctx context.Context, dial Dialer, cfg endpoint.Config, mk func() (*endpoint.QP, error)) (*endpoint.Conn, *endpoint.QP, error) {
	for try := 0; ; try++ {
		qp, err := mk()
		if err != nil {
			return nil, nil, err
		}
		nc, err := dial(ctx)
		if err == nil {
			var conn *endpoint.Conn
			if conn, err = endpoint.Connect(ctx, nc, qp, &cfg); err == nil {
				return conn, qp, nil
			}
			nc.Close()
		}
		var re *endpoint.RejectError
		if errors.As(err, &re) || try == ptRetries || ctx.Err() != nil {
			return nil, nil, err
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// RunPerftest runs one test of one size as the client of perftest's
// server (ib_write_bw -R, ib_read_bw -R; the same -s, -n, -q on both
// sides, as perftest needs).
func RunPerftest(ctx context.Context, dial Dialer, o Options) (Result, error) {
	if err := checkPerftest(&o); err != nil {
		return Result{}, err
	}
	res := Result{Test: o.Test, QPs: o.QPs, Depth: o.Depth, CQMod: o.CQMod, Exchange: "perftest " + ptVersion}
	cfg := o.Config
	cfg.PrivateData = nil
	var comm *ptComm
	conn, _, err := ptConnect(ctx, dial, cfg, func() (*endpoint.QP, error) {
		var err error
		comm, err = newPTComm(true, o.Timeout)
		if err != nil {
			return nil, err
		}
		return comm.qp, nil
	})
	if err != nil {
		return res, fmt.Errorf("perf: perftest's control connection: %w", err)
	}
	comm.conn = conn
	defer comm.close()
	// perftest sleeps a second once its control connection is up (main,
	// after establish_connection). Linux siw needs it: a Send that
	// follows the MPA Reply at once can stay unread on its accept path.
	select {
	case <-ctx.Done():
		return res, ctx.Err()
	case <-time.After(ptSettle):
	}
	cycle, err := comm.preamble(ctx)
	if err != nil {
		return res, err
	}
	peers := make([]*peer, o.QPs)
	conns := make([]*endpoint.Conn, o.QPs)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range peers {
		conns[i], _, err = ptConnect(ctx, dial, cfg, func() (*endpoint.QP, error) {
			var err error
			peers[i], err = ptPeer(&o, cycle)
			if err != nil {
				return nil, err
			}
			return peers[i].qp, nil
		})
		if err != nil {
			return res, fmt.Errorf("perf: perftest's test connection %d: %w", i, err)
		}
	}
	mine := make([]ptDest, o.QPs)
	for i, p := range peers {
		mine[i] = p.ptDest(&o)
	}
	rem, err := comm.dests(ctx, o.Test, mine)
	if err != nil {
		return res, err
	}
	c0 := conns[0]
	res.Params = c0.Params()
	res.Local = Address{Addr: c0.LocalAddr().String(), QPN: peers[0].qp.Num(), STag: uint32(peers[0].buf.STag()), VAddr: peers[0].buf.Addr()}
	res.Remote = Address{Addr: c0.RemoteAddr().String(), QPN: rem[0].QPN, STag: rem[0].RKey, VAddr: rem[0].VAddr}

	ss := make([]stats, o.QPs)
	errs := make([]error, o.QPs)
	done := make(chan int)
	clk := &clock{iters: o.Iters, stop: o.Stop}
	for i, p := range peers {
		go func() {
			// perftest's server region for QP i: BUFF_SIZE(size, cycle
			// buffer) octets from its vaddr.
			adv := advert{Addr: rem[i].VAddr, RKey: rem[i].RKey, Len: max(o.Size, cycle)}
			if IsLat(o.Test) {
				ss[i], errs[i] = p.activeLat(ctx, &o, adv, clk)
			} else {
				ss[i], errs[i] = p.activeBW(ctx, &o, adv, clk)
			}
			done <- i
		}()
	}
	for range peers {
		<-done
	}
	if err := errors.Join(errs...); err != nil {
		return res, err
	}
	res.Row, res.Bytes, res.Msgs = aggregate(o.Size, ss)
	for _, p := range peers {
		addCounters(&res.Counter, p.qp.Counters())
	}
	rep := ptReport{Size: uint64(o.Size), Iters: uint64(res.Row.Iters), Peak: res.Row.PeakBps / mib, Avg: res.Row.AvgBps / mib, MsgRateMpp: res.Row.MsgRate / 1e6}
	if _, err = comm.finish(ctx, o.Test, mine[0], rep, o.Timeout); err != nil {
		return res, err
	}
	// Let the server close first, as perftest's client does (it tears its
	// test QPs down before its control QP): siw completes the server's
	// last Send in error when the connection resets under it, and
	// ib_read_bw then exits 1. The flush of our receives says it closed.
	comm.recv(ctx, ptSettle)
	return res, nil
}

// ServePerftest serves one client of perftest's (ib_write_bw -R HOST,
// ib_read_bw -R HOST) from l with o's test, size and QPs (perftest's
// server, too, knows them only from its own flags), and returns the
// client's measurement from its report. The client's Writes are placed
// and its Reads answered by the endpoint; nothing is posted on the test
// QPs.
func ServePerftest(ctx context.Context, l *endpoint.Listener, o Options) (Result, error) {
	if err := checkPerftest(&o); err != nil {
		return Result{}, err
	}
	res := Result{Test: o.Test, QPs: o.QPs, Depth: o.Depth, CQMod: o.CQMod, Exchange: "perftest " + ptVersion}
	req, err := l.Accept(ctx)
	if err != nil {
		return res, err
	}
	comm, err := newPTComm(false, o.Timeout)
	if err != nil {
		req.Close()
		return res, err
	}
	if comm.conn, err = req.Accept(comm.qp, nil); err != nil {
		return res, fmt.Errorf("perf: perftest's control connection: %w", err)
	}
	defer comm.close()
	cycle, err := comm.preamble(ctx)
	if err != nil {
		return res, err
	}
	peers := make([]*peer, o.QPs)
	conns := make([]*endpoint.Conn, o.QPs)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range peers {
		actx, cancel := context.WithTimeout(ctx, o.Timeout)
		req, err := l.Accept(actx)
		cancel()
		if err != nil {
			return res, fmt.Errorf("perf: perftest's test connection %d: %w", i, err)
		}
		if peers[i], err = ptPeer(&o, cycle); err != nil {
			req.Close()
			return res, err
		}
		if conns[i], err = req.Accept(peers[i].qp, nil); err != nil {
			return res, fmt.Errorf("perf: perftest's test connection %d: %w", i, err)
		}
	}
	mine := make([]ptDest, o.QPs)
	for i, p := range peers {
		mine[i] = p.ptDest(&o)
	}
	rem, err := comm.dests(ctx, o.Test, mine)
	if err != nil {
		return res, err
	}
	c0 := conns[0]
	res.Params = c0.Params()
	res.Local = Address{Addr: c0.LocalAddr().String(), QPN: peers[0].qp.Num(), STag: uint32(peers[0].buf.STag()), VAddr: peers[0].buf.Addr()}
	res.Remote = Address{Addr: c0.RemoteAddr().String(), QPN: rem[0].QPN, STag: rem[0].RKey, VAddr: rem[0].VAddr}
	// The client runs now: ib_send_lat's pings are echoed, everything
	// else is the endpoint's; the server waits for the end as long as ctx
	// lets it.
	if o.Test == SendLat {
		for _, p := range peers {
			if err := p.echo(ctx, o.Iters); err != nil {
				return res, err
			}
		}
	}
	rep, err := comm.finish(ctx, o.Test, mine[0], ptReport{Size: uint64(o.Size)}, 0)
	if err != nil {
		return res, err
	}
	if o.Test == WriteBW {
		// The client's last Writes may still be on their way: its
		// completions say sent, and the control connection can overtake.
		drainWrites(ctx, peers, rep.Iters, o.Timeout)
	}
	for _, p := range peers {
		addCounters(&res.Counter, p.qp.Counters())
	}
	if IsLat(o.Test) {
		// No report: perftest's latency server prints none either.
		res.Row = Row{Size: o.Size, Iters: o.Iters}
		return res, nil
	}
	res.Row = Row{Size: int(rep.Size), Iters: int(rep.Iters), PeakBps: rep.Peak * mib, AvgBps: rep.Avg * mib, MsgRate: rep.MsgRateMpp * 1e6}
	res.Msgs = int64(rep.Iters) * int64(o.QPs)
	res.Bytes = res.Msgs * int64(rep.Size)
	return res, nil
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
