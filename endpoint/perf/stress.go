package perf

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/iwkit/iwkit/endpoint"
)

// Stress is the test name of a stress run.
const Stress = "stress"

// Stress runs many connections, each with a random mix of Sends, RDMA
// Writes, RDMA Reads and RFC 7306 atomics (FetchAdd, CmpSwap) whose data is
// verified end to end:
//
//   - the server fills its region with a pattern drawn from the seed; the
//     client keeps a shadow of it, updated by its own Writes in posting
//     order, and checks every Read against the shadow (RDMAP orders a Read
//     Request after the Writes before it on the same QP);
//   - a Send carries its sequence number and a CRC32c of its payload; the
//     server checks both and echoes the message, which the client compares
//     with what it sent;
//   - an atomic's returned value is checked against the shadow, which
//     follows the atomics too, and at the end every word an atomic touched
//     is Read back (stress_atomic.go).
//
// A seed makes a run repeatable: each connection draws its operations,
// sizes, offsets and data from (seed, connection index).

// StressOptions configure a stress run.
type StressOptions struct {
	Seed     uint64
	Conns    int           // connections (QPs) at once (8)
	Window   int           // operations in flight per connection (16)
	MaxSize  int           // largest message (65536); sizes are log-uniform from 1
	Region   int           // the server region each connection targets (1 MiB, at least MaxSize)
	Duration time.Duration // 10 s, from each connection's establishment
	Ops      int           // stop a connection after this many operations (0: no limit)
	IRD, ORD int
	Config   endpoint.Config
	Timeout  time.Duration // per wait (10 s)
	// Errors gets a line per error as it is found.
	Errors io.Writer
	// trace sees every operation as it is posted (tests).
	trace func(conn int, op endpoint.Opcode, size, off int)
}

// Error kinds.
const (
	ErrReadData     = "read-data"   // a Read returned other data than the shadow
	ErrAtomicData   = "atomic-data" // an atomic returned another original value than the shadow's, or left another result
	ErrEchoData     = "echo-data"   // an echoed Send differed from what was sent
	ErrSendData     = "send-data"   // the server found a Send's CRC or sequence wrong
	ErrCompletion   = "completion"  // a work request completed in error
	ErrTerminate    = "terminate"   // a Terminate was received
	ErrConnection   = "connection"  // the connection failed (setup or LLP)
	ErrTimeout      = "timeout"     // nothing completed within the timeout
	stressHeaderLen = 12            // sequence number, CRC32c
)

// StressSummary is a stress run's outcome.
type StressSummary struct {
	Seed       uint64            `json:"seed"`
	Conns      int               `json:"connections"`
	Elapsed    time.Duration     `json:"elapsed_ns"`
	Ops        map[string]uint64 `json:"operations"` // by type: Send, RDMAWrite, RDMARead, FetchAdd, CmpSwap
	Octets     uint64            `json:"octets"`
	Errors     map[string]uint64 `json:"errors"` // by kind
	Terminates uint64            `json:"terminates_received"`
}

// TotalErrors is the sum of the errors of every kind.
func (s StressSummary) TotalErrors() uint64 {
	var n uint64
	for _, v := range s.Errors {
		n += v
	}
	return n
}

// Format prints the summary.
func (s StressSummary) Format(w io.Writer) {
	fmt.Fprintf(w, "stress: seed %d, %d connections, %v\n", s.Seed, s.Conns, s.Elapsed.Round(time.Millisecond))
	var total uint64
	for _, k := range stressOps {
		fmt.Fprintf(w, "  %-10s %12d operations\n", k, s.Ops[k])
		total += s.Ops[k]
	}
	fmt.Fprintf(w, "  %-10s %12d operations, %d octets verified\n", "total", total, s.Octets)
	kinds := make([]string, 0, len(s.Errors))
	for k := range s.Errors {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	fmt.Fprintf(w, "  errors     %12d", s.TotalErrors())
	for _, k := range kinds {
		fmt.Fprintf(w, "  %s %d", k, s.Errors[k])
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  Terminates received %d\n", s.Terminates)
}

func (o *StressOptions) fill() {
	if o.Conns <= 0 {
		o.Conns = 8
	}
	if o.Window <= 0 {
		o.Window = 16
	}
	if o.MaxSize <= 0 {
		o.MaxSize = 65536
	}
	o.MaxSize = max(o.MaxSize, stressHeaderLen+1)
	if o.Region <= 0 {
		o.Region = 1 << 20
	}
	o.Region = max(o.Region, o.MaxSize)
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
}

// pattern fills b with the data stream (seed, stream) from octet off on.
func pattern(b []byte, seed, stream uint64, off int) {
	// A cheap position-keyed generator: every 8-octet word is a hash of
	// its index, so any slice of the region can be made independently.
	for i := range b {
		w := uint64(off+i) / 8
		x := (w + seed*0x9E3779B97F4A7C15) ^ stream*0xBF58476D1CE4E5B9
		x ^= x >> 31
		x *= 0x94D049BB133111EB
		x ^= x >> 29
		b[i] = byte(x >> (8 * ((off + i) % 8)))
	}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// stressStats is one connection's tally.
type stressStats struct {
	ops        map[string]uint64
	octets     uint64
	errs       map[string]uint64
	terminates uint64
}

func (s *stressStats) err(w io.Writer, mu *sync.Mutex, conn int, kind, format string, a ...any) {
	s.errs[kind]++
	if w != nil {
		mu.Lock()
		fmt.Fprintf(w, "stress: conn %d: %s: %s\n", conn, kind, fmt.Sprintf(format, a...))
		mu.Unlock()
	}
}

// RunStress runs a stress test against an iwperf server.
func RunStress(ctx context.Context, dial Dialer, o StressOptions) (StressSummary, error) {
	o.fill()
	sum := StressSummary{Seed: o.Seed, Conns: o.Conns, Ops: map[string]uint64{}, Errors: map[string]uint64{}}
	start := time.Now()
	var mu sync.Mutex // Errors writer
	run := newID()
	stats := make([]*stressStats, o.Conns)
	var wg sync.WaitGroup
	for i := range stats {
		stats[i] = &stressStats{ops: map[string]uint64{}, errs: map[string]uint64{}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			stressConn(ctx, dial, &o, run, i, stats[i], &mu)
		}()
	}
	wg.Wait()
	sum.Elapsed = time.Since(start)
	for _, s := range stats {
		for k, v := range s.ops {
			sum.Ops[k] += v
		}
		for k, v := range s.errs {
			sum.Errors[k] += v
		}
		sum.Octets += s.octets
		sum.Terminates += s.terminates
	}
	return sum, nil
}

type stressOp struct {
	op     endpoint.Opcode
	slot   int
	off    int
	size   int
	expect []byte // Read: the shadow's data
}

func stressConn(ctx context.Context, dial Dialer, o *StressOptions, run uint64, idx int, st *stressStats, mu *sync.Mutex) {
	rng := rand.New(rand.NewPCG(o.Seed, uint64(idx)))
	var wrid uint64
	fail := func(kind string, err error) { st.err(o.Errors, mu, idx, kind, "%v", err) }
	W := o.Window
	p, err := newStressPeer(o.MaxSize, W, o.IRD, o.ORD, o.Timeout)
	if err != nil {
		fail(ErrConnection, err)
		return
	}
	for j := 0; j < W+8; j++ {
		p.postStressRecv(j)
	}
	req := request{Magic: magic, Test: Stress, Size: o.MaxSize, Depth: W, QPs: o.Conns, Run: run, Sweep: run,
		Final: true, Stress: &stressReq{Seed: o.Seed, Stream: uint64(idx), Region: o.Region}}
	pd, _ := json.Marshal(req)
	cfg := o.Config
	cfg.PrivateData = pd
	nc, err := dial(ctx)
	if err != nil {
		fail(ErrConnection, err)
		return
	}
	conn, err := endpoint.Connect(ctx, nc, p.qp, &cfg)
	if err != nil {
		var re *endpoint.RejectError
		if errors.As(err, &re) && len(re.PrivateData) > 0 {
			err = fmt.Errorf("the server refused: %s", re.PrivateData)
		}
		fail(ErrConnection, err)
		return
	}
	defer conn.Close()
	var rem advert
	if err := json.Unmarshal(conn.Params().PeerPrivateData, &rem); err != nil || rem.Len < o.Region {
		fail(ErrConnection, fmt.Errorf("server's Private Data %q: %v", conn.Params().PeerPrivateData, err))
		return
	}
	end := time.Now().Add(o.Duration)
	more := func() bool {
		return time.Now().Before(end) && (o.Ops <= 0 || wrid < uint64(o.Ops)) && ctx.Err() == nil
	}
	shadow := make([]byte, o.Region)
	pattern(shadow, o.Seed, uint64(idx), 0)
	free := make([]int, 0, W)
	for i := W - 1; i >= 0; i-- {
		free = append(free, i)
	}
	inflight := map[uint64]*stressOp{}
	echoes := map[uint64][]byte{} // Sends awaiting their echo
	var seq uint64
	touched := map[int]bool{} // words an atomic targeted
	size := func() int {
		// Log-uniform-ish from 1 to MaxSize: the same draws as with
		// the default 64 Ki for a seed, beyond it for a larger -s.
		return min(o.MaxSize, 1+rng.IntN(1<<rng.IntN(bits.Len(uint(o.MaxSize)))))
	}
	lost := func(err error) {
		if ti := p.qp.Terminate(); ti != nil && !ti.Local {
			st.terminates++
			st.err(o.Errors, mu, idx, ErrTerminate, "%v", (&endpoint.TerminateError{Info: *ti}).Error())
			return
		}
		if errors.Is(err, context.DeadlineExceeded) {
			fail(ErrTimeout, err)
			return
		}
		fail(ErrConnection, err)
	}
	for more() || len(inflight) > 0 || len(echoes) > 0 {
		for more() && len(free) > 0 && len(echoes) < W {
			slot := free[len(free)-1]
			free = free[:len(free)-1]
			n := size()
			buf := p.buf.Buf()[slot*o.MaxSize : slot*o.MaxSize+n]
			so := &stressOp{slot: slot, size: n}
			w := endpoint.SendWR{WRID: wrid, Signaled: true}
			switch r := rng.IntN(5); r {
			case 0: // Send with its sequence number and CRC
				n = max(n, stressHeaderLen)
				so.size = n
				buf = p.buf.Buf()[slot*o.MaxSize : slot*o.MaxSize+n]
				binary.BigEndian.PutUint64(buf, seq)
				pattern(buf[stressHeaderLen:], o.Seed^seq, uint64(idx)+1<<32, 0)
				binary.BigEndian.PutUint32(buf[8:], crc32.Checksum(buf[stressHeaderLen:], castagnoli))
				echoes[seq] = append([]byte(nil), buf...)
				seq++
				so.op, w.Opcode = endpoint.OpSend, endpoint.OpSend
			case 1: // Write: the shadow follows
				so.off = rng.IntN(o.Region - n + 1)
				pattern(buf, o.Seed^wrid, uint64(idx)+2<<32, 0)
				copy(shadow[so.off:], buf)
				so.op, w.Opcode = endpoint.OpWrite, endpoint.OpWrite
				w.RemoteAddr, w.RKey = rem.Addr+uint64(so.off), endpoint.STag(rem.RKey)
				// The responder may read a Read's data after placing
				// later Writes (RFC 5040 §5.5 orders only their
				// placement before later messages): a Write that
				// overlaps a Read in flight waits for it.
				for _, r := range inflight {
					if (r.op == endpoint.OpRead || isAtomic(r.op)) && r.off < so.off+n && so.off < r.off+r.size {
						w.ReadFence = true
						break
					}
				}
			case 3, 4: // an atomic: its original value is the shadow's
				stressAtomic(rng, shadow[:o.Region&^7], so, &w)
				w.RemoteAddr, w.RKey = rem.Addr+uint64(so.off), endpoint.STag(rem.RKey)
				touched[so.off] = true
			default: // Read: compared with the shadow on completion
				so.off = rng.IntN(o.Region - n + 1)
				clear(buf)
				so.expect = append([]byte(nil), shadow[so.off:so.off+n]...)
				so.op, w.Opcode = endpoint.OpRead, endpoint.OpRead
				w.RemoteAddr, w.RKey = rem.Addr+uint64(so.off), endpoint.STag(rem.RKey)
			}
			w.SGL = []endpoint.SGE{p.buf.SGE(slot*o.MaxSize, so.size)}
			if o.trace != nil {
				o.trace(idx, so.op, so.size, so.off)
			}
			if _, err := p.qp.PostSend(w); err != nil {
				lost(err)
				return
			}
			inflight[wrid] = so
			wrid++
		}
		if len(inflight) == 0 && len(echoes) == 0 {
			break
		}
		wc, err := p.next(ctx, p.to)
		if err != nil {
			if ti := p.qp.Terminate(); (ti == nil || ti.Local) && wc.Status != endpoint.StatusSuccess {
				st.err(o.Errors, mu, idx, ErrCompletion, "%v", err)
				return
			}
			lost(err)
			return
		}
		if wc.Opcode == endpoint.OpRecv {
			off := p.recvOff(wc.WRID)
			msg := p.buf.Buf()[off : off+int(wc.ByteLen)]
			if len(msg) >= stressHeaderLen {
				s := binary.BigEndian.Uint64(msg)
				want, ok := echoes[s]
				switch {
				case !ok:
					st.err(o.Errors, mu, idx, ErrEchoData, "echo of Send %d, which is not outstanding", s)
				case !bytes.Equal(msg, want):
					st.err(o.Errors, mu, idx, ErrEchoData, "echo of Send %d (%d octets) differs", s, len(want))
				default:
					st.octets += uint64(len(msg))
				}
				delete(echoes, s)
			}
			p.postStressRecv(int(wc.WRID))
			continue
		}
		so := inflight[wc.WRID]
		if so == nil {
			continue
		}
		delete(inflight, wc.WRID)
		free = append(free, so.slot)
		st.ops[so.op.String()]++
		switch so.op {
		case endpoint.OpRead:
			got := p.buf.Buf()[so.slot*o.MaxSize : so.slot*o.MaxSize+so.size]
			if i := firstDiff(got, so.expect); i >= 0 {
				st.err(o.Errors, mu, idx, ErrReadData, "Read of %d octets at +%d differs from octet %d on", so.size, so.off, i)
			} else {
				st.octets += uint64(so.size)
			}
		case endpoint.OpWrite:
			st.octets += uint64(so.size)
		case endpoint.OpAtomicFetchAdd, endpoint.OpAtomicCmpSwap:
			got := p.buf.Buf()[so.slot*o.MaxSize : so.slot*o.MaxSize+8]
			if firstDiff(got, so.expect) >= 0 {
				st.err(o.Errors, mu, idx, ErrAtomicData, "%v at +%d returned %x, the shadow had %x", so.op, so.off, got, so.expect)
			} else {
				st.octets += 8
			}
		}
	}
	offs := make([]int, 0, len(touched))
	for off := range touched {
		offs = append(offs, off)
	}
	sort.Ints(offs)
	bad, err := p.verifyWords(o, rem, shadow, offs, func() (endpoint.WorkCompletion, error) { return p.next(ctx, p.to) })
	if err != nil {
		lost(err)
		return
	}
	for _, off := range bad {
		st.err(o.Errors, mu, idx, ErrAtomicData, "the word at +%d an atomic left differs from the shadow", off)
	}
	// Done: a solicited Send; the server answers with its count of bad
	// Sends (4 octets) and then a solicited Send.
	if err := p.send(true); err != nil {
		lost(err)
		return
	}
	for {
		wc, err := p.waitRecv(ctx, p.to)
		if err != nil {
			lost(err)
			return
		}
		if wc.ByteLen == 4 {
			off := p.recvOff(wc.WRID)
			if n := binary.BigEndian.Uint32(p.buf.Buf()[off:]); n > 0 {
				st.err(o.Errors, mu, idx, ErrSendData, "the server found %d Sends with a bad CRC or sequence number", n)
				st.errs[ErrSendData] += uint64(n) - 1
			}
		}
		p.postStressRecv(int(wc.WRID))
		if wc.Solicited {
			return
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			return i
		}
	}
	if len(b) > len(a) {
		return len(a)
	}
	return -1
}

// stressReq is the stress part of a request.
type stressReq struct {
	Seed   uint64 `json:"seed"`
	Stream uint64 `json:"stream"`
	Region int    `json:"region"`
}

// newStressPeer has Window source/sink slots of maxSize, then Window+8
// receive slots.
func newStressPeer(maxSize, window, ird, ord int, to time.Duration) (*peer, error) {
	p := &peer{dev: endpoint.OpenDevice(endpoint.DeviceAttr{}), size: maxSize, slots: window, to: to}
	pd := p.dev.AllocPD()
	var err error
	if p.cq, err = p.dev.CreateCQ(8 * (2*window + 16)); err != nil {
		return nil, err
	}
	if ird == 0 {
		ird = min(window, 128)
	}
	if ord == 0 {
		ord = min(window, 128)
	}
	// A stress request is how both sides agree to use RFC 7306 (§1.1).
	if p.qp, err = pd.CreateQP(endpoint.QPAttr{SendCQ: p.cq, RecvCQ: p.cq, SQDepth: 2*window + 16, RQDepth: 2*window + 16, IRD: ird, ORD: ord, RFC7306: true}); err != nil {
		return nil, err
	}
	p.buf, err = pd.RegisterMR(make([]byte, maxSize*(2*window+8)), endpoint.AccessAll, nil)
	return p, err
}

// recvOff is where stress receive j lands: after the Window source slots.
func (p *peer) recvOff(j uint64) int { return (p.slots + int(j)) * p.size }

func (p *peer) postStressRecv(j int) error {
	_, err := p.qp.PostRecv(endpoint.RecvWR{WRID: uint64(j), SGL: []endpoint.SGE{p.buf.SGE(p.recvOff(uint64(j)), p.size)}})
	return err
}

// stressMem is what a stress connection takes on the server.
func stressMem(r *request) int64 {
	if r.Stress == nil {
		return 0
	}
	return int64(r.Stress.Region) + int64(r.Size)*int64(2*r.Depth+8)
}

// serveStress is the server's side of one stress connection: its region
// holds the seed's pattern; each Send is checked and echoed.
func (s *Server) serveStress(ctx context.Context, req *endpoint.ConnRequest, r request) error {
	sr := r.Stress
	if sr == nil || sr.Region < r.Size || r.Size < stressHeaderLen+1 {
		req.Reject([]byte("iwperf: refused: a stress request needs a region at least as large as its largest message"))
		return errors.New("bad stress request")
	}
	dev := endpoint.OpenDevice(endpoint.DeviceAttr{})
	pd := dev.AllocPD()
	W := r.Depth
	cq, err := dev.CreateCQ(8 * (2*W + 16))
	if err != nil {
		req.Close()
		return err
	}
	qp, err := pd.CreateQP(endpoint.QPAttr{SendCQ: cq, RecvCQ: cq, SQDepth: 2*W + 16, RQDepth: 2*W + 16, IRD: max(r.IRD, min(W, 128)), ORD: max(r.ORD, 16), RFC7306: true})
	if err != nil {
		req.Close()
		return err
	}
	region := make([]byte, sr.Region)
	pattern(region, sr.Seed, sr.Stream, 0)
	if s.stressHook != nil {
		s.stressHook(region)
	}
	rmr, err := pd.RegisterMR(region, endpoint.AccessAll|endpoint.AccessRemoteAtomic, nil)
	if err != nil {
		req.Close()
		return err
	}
	// 2W+8 receive slots, and as many echo slots.
	nr := 2*W + 8
	bufs, err := pd.RegisterMR(make([]byte, 2*nr*r.Size), endpoint.AccessAll, nil)
	if err != nil {
		req.Close()
		return err
	}
	for i := 0; i < nr; i++ {
		qp.PostRecv(endpoint.RecvWR{WRID: uint64(i), SGL: []endpoint.SGE{bufs.SGE(i*r.Size, r.Size)}})
	}
	adv, _ := json.Marshal(advert{Addr: rmr.Addr(), RKey: uint32(rmr.STag()), Len: rmr.Len()})
	conn, err := req.Accept(qp, adv)
	if err != nil {
		return err
	}
	defer conn.Close()
	p := &peer{dev: dev, qp: qp, cq: cq, to: s.Timeout}
	var next uint64
	var bad uint32
	echo := 0
	for {
		wc, err := p.waitRecv(ctx, 0)
		if err != nil {
			return err
		}
		i := int(wc.WRID)
		msg := bufs.Buf()[i*r.Size : i*r.Size+int(wc.ByteLen)]
		if wc.Solicited { // done: our count of bad Sends, then the answer
			e := nr + echo%nr
			binary.BigEndian.PutUint32(bufs.Buf()[e*r.Size:], bad)
			if _, err := qp.PostSend(endpoint.SendWR{Opcode: endpoint.OpSend, SGL: []endpoint.SGE{bufs.SGE(e*r.Size, 4)}},
				endpoint.SendWR{Opcode: endpoint.OpSendSE}); err != nil {
				return err
			}
			if bad > 0 {
				return fmt.Errorf("stress: %d Sends with a bad CRC or sequence number", bad)
			}
			return nil
		}
		if len(msg) < stressHeaderLen || binary.BigEndian.Uint64(msg) != next ||
			binary.BigEndian.Uint32(msg[8:]) != crc32.Checksum(msg[stressHeaderLen:], castagnoli) {
			bad++
			s.logf("iwperf: %v: stress: Send %d (%d octets) has a bad sequence number or CRC", req.RemoteAddr(), next, len(msg))
		}
		next++
		// Echo from an echo slot (the client limits its outstanding
		// Sends to W, so nr slots are never reused too soon).
		e := nr + echo%nr
		echo++
		copy(bufs.Buf()[e*r.Size:], msg)
		if _, err := qp.PostSend(endpoint.SendWR{Opcode: endpoint.OpSend, SGL: []endpoint.SGE{bufs.SGE(e*r.Size, len(msg))}}); err != nil {
			return err
		}
		qp.PostRecv(endpoint.RecvWR{WRID: uint64(i), SGL: []endpoint.SGE{bufs.SGE(i*r.Size, r.Size)}})
	}
}
