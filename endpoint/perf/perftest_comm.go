package perf

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/iwkit/iwkit/endpoint"
)

// perftest's own exchange, so that iwperf meets ib_write_bw, ib_read_bw,
// ib_send_bw, ib_write_lat, ib_read_lat and ib_send_lat with -R (linux-rdma/perftest, the 6.06 that
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
//	           IRD/ORD = out_reads for the Read tests, 0 otherwise ...
//	dest       zero again
//	dest ...   each QP's record (rkey, vaddr of the buffer to Write/Read,
//	           or of send_bw's credit word), in each test's own order
//	           (ptLayout), with syncs between
//	           ... the client runs; the server waits in the next exchange
//	           (ib_send_lat's server echoes each Send first, ib_send_bw's
//	           receives and credits) ...
//	dest       end of the run (write_bw, read_bw)
//	report     5 × 8 octets (write_bw, read_bw): size, iterations, BW peak,
//	           BW average (MB/sec, or Gb/sec with the client's
//	           --report_gbits), MsgRate (Mpps); integers and IEEE doubles
//	           in network order
//	dest       close (all but write_lat, which ends with the run)
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

// ptLayout is each test's order of the pingpong_dest exchanges after the
// test connections' closing sync: "q" is one per QP (its record), "1" a
// sync with QP 0's.
var ptLayout = map[string][]string{
	WriteBW:  {"q", "q", "1"},      // write_bw.c
	ReadBW:   {"q", "q", "1"},      // read_bw.c
	ReadLat:  {"1", "q", "q", "1"}, // read_lat.c
	WriteLat: {"1", "q", "q", "1"}, // write_lat.c
	SendLat:  {"q", "1", "q"},      // send_lat.c; then, per size, a sync after posting its receives (sizes)
	SendBW:   {"q", "1", "q"},      // send_bw.c: the same; the records name credit words
}

// ptCloses says whether test exchanges anything after the run: all but
// write_lat, whose main (perftest 6.06) goes from the run straight to
// tearing down, with no ctx_close_connection.
func ptCloses(test string) bool { return test != WriteLat }

// ptReports says whether test exchanges its reports after the run
// (xchg_bw_reports: the one-way RDMA bandwidth tests).
func ptReports(test string) bool { return test == WriteBW || test == ReadBW }

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

// finish runs what follows a one-way run: for write_bw and read_bw the
// end, the reports (it returns the peer's) and the close; for the others
// the close. wait bounds the first exchange (the server waits there
// while the client runs).
func (c *ptComm) finish(ctx context.Context, test string, d ptDest, my ptReport, wait time.Duration) (ptReport, error) {
	if _, err := c.xchg(ctx, d.encode(), wait); err != nil || !ptReports(test) {
		return ptReport{}, err
	}
	rem, err := c.reports(ctx, my)
	if err != nil {
		return rem, err
	}
	_, err = c.xchg(ctx, d.encode(), c.to)
	return rem, err
}

// reports exchanges the sides' reports (xchg_bw_reports: five 8-octet
// Sends each way) and returns the peer's.
func (c *ptComm) reports(ctx context.Context, my ptReport) (ptReport, error) {
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
	return ptReport{Size: f[0], Iters: f[1], Peak: math.Float64frombits(f[2]), Avg: math.Float64frombits(f[3]), MsgRateMpp: math.Float64frombits(f[4])}, nil
}

func (c *ptComm) close() {
	if c.conn != nil {
		c.conn.Close()
	}
}
