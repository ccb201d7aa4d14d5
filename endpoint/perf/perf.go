// Package perf runs perftest-style bandwidth and latency tests between two
// iwkit endpoints (or an iwkit client and an iwkit server): RDMA Write,
// Send and RDMA Read, bandwidth with many work requests outstanding or
// latency by ping-pong. The client names the test in its MPA Private Data;
// the server answers with the advertisement of its buffer in the Reply's.
package perf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/iwkit/iwkit/endpoint"
)

// Tests.
const (
	WriteBW  = "write_bw"
	SendBW   = "send_bw"
	ReadBW   = "read_bw"
	WriteLat = "write_lat"
	SendLat  = "send_lat"
	ReadLat  = "read_lat"
)

// Tests lists the test names.
var Tests = []string{WriteBW, SendBW, ReadBW, WriteLat, SendLat, ReadLat}

// Options configure a client run.
type Options struct {
	Test     string
	Size     int           // message size
	Iters    int           // messages (ignored when Duration is set)
	Duration time.Duration // run for this long instead
	Depth    int           // work requests outstanding (bandwidth tests)
	Config   endpoint.Config
	Timeout  time.Duration // per wait (10 s)
}

// request is the client's MPA Private Data.
type request struct {
	Magic string `json:"iwperf"`
	Test  string `json:"test"`
	Size  int    `json:"size"`
	Depth int    `json:"depth"`
	// The client's buffer, for write_lat's pongs.
	Addr uint64 `json:"addr,omitempty"`
	RKey uint32 `json:"rkey,omitempty"`
}

// advert is the server's MPA Private Data.
type advert struct {
	Addr uint64 `json:"addr"`
	RKey uint32 `json:"rkey"`
	Len  int    `json:"len"`
}

// Result is one run's outcome.
type Result struct {
	Test     string            `json:"test"`
	Size     int               `json:"size"`
	Iters    int               `json:"iters"`
	Bytes    int64             `json:"bytes"`
	Elapsed  time.Duration     `json:"elapsed_ns"`
	MBps     float64           `json:"mb_per_s"`
	Gbps     float64           `json:"gbit_per_s"`
	MsgRate  float64           `json:"msg_per_s"`
	Lat      *Latency          `json:"latency,omitempty"`
	Params   endpoint.Params   `json:"-"`
	Counters endpoint.Counters `json:"counters"`
}

// Latency summarizes one-way latencies (half a round trip) in microseconds.
type Latency struct {
	Min, Mean, P50, P99, P999, Max float64
}

func summarize(samples []time.Duration) *Latency {
	if len(samples) == 0 {
		return nil
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	q := func(p float64) float64 { return us(samples[min(len(samples)-1, int(p*float64(len(samples))))]) }
	var sum time.Duration
	for _, s := range samples {
		sum += s
	}
	return &Latency{Min: us(samples[0]), Mean: us(sum / time.Duration(len(samples))), P50: q(0.5), P99: q(0.99), P999: q(0.999), Max: us(samples[len(samples)-1])}
}

// Format prints r in the style of perftest.
func (r Result) Format(w io.Writer) {
	fmt.Fprintf(w, "%-10s %10s %10s %12s %12s %12s\n", "test", "bytes", "iters", "BW MB/s", "BW Gb/s", "Mmsg/s")
	fmt.Fprintf(w, "%-10s %10d %10d %12.2f %12.3f %12.4f\n", r.Test, r.Size, r.Iters, r.MBps, r.Gbps, r.MsgRate/1e6)
	if r.Lat != nil {
		fmt.Fprintf(w, "latency usec: min %.2f  mean %.2f  p50 %.2f  p99 %.2f  p99.9 %.2f  max %.2f\n",
			r.Lat.Min, r.Lat.Mean, r.Lat.P50, r.Lat.P99, r.Lat.P999, r.Lat.Max)
	}
}

// JSON encodes r.
func (r Result) JSON() []byte {
	b, _ := json.Marshal(r)
	return b
}

type peer struct {
	dev  *endpoint.Device
	qp   *endpoint.QP
	cq   *endpoint.CQ
	buf  *endpoint.MR // data buffer: depth slots of size
	ctl  *endpoint.MR // 64-octet control buffers
	size int
	to   time.Duration
	pend []endpoint.WorkCompletion
}

func newPeer(size, slots, depth int, to time.Duration) (*peer, error) {
	p := &peer{dev: endpoint.OpenDevice(endpoint.DeviceAttr{}), size: size, to: to}
	pd := p.dev.AllocPD()
	var err error
	if p.cq, err = p.dev.CreateCQ(8 * (depth + 16)); err != nil {
		return nil, err
	}
	ord := min(depth, 128)
	if p.qp, err = pd.CreateQP(endpoint.QPAttr{SendCQ: p.cq, RecvCQ: p.cq, SQDepth: 2*depth + 16, RQDepth: 2*depth + 16, IRD: ord, ORD: ord}); err != nil {
		return nil, err
	}
	if p.buf, err = pd.RegisterMR(make([]byte, max(size, 1)*max(slots, 1)), endpoint.AccessAll, nil); err != nil {
		return nil, err
	}
	p.ctl, err = pd.RegisterMR(make([]byte, 64*(2*depth+16)), endpoint.AccessAll, nil)
	return p, err
}

func (p *peer) postCtlRecv(i int) error {
	_, err := p.qp.PostRecv(endpoint.RecvWR{WRID: uint64(1<<32 | i), SGL: []endpoint.SGE{p.ctl.SGE(64*i, 64)}})
	return err
}

// postDataRecv posts a receive of size octets into data slot i.
func (p *peer) postDataRecv(i int) error {
	slots := p.buf.Len() / max(p.size, 1)
	_, err := p.qp.PostRecv(endpoint.RecvWR{WRID: uint64(i), SGL: []endpoint.SGE{p.buf.SGE((i%slots)*p.size, p.size)}})
	return err
}

// repost posts again the receive wc consumed.
func (p *peer) repost(wc endpoint.WorkCompletion) error {
	if wc.WRID>>32 == 1 {
		return p.postCtlRecv(int(uint32(wc.WRID)))
	}
	return p.postDataRecv(int(wc.WRID))
}

// next returns the next completion (error completions are errors).
func (p *peer) next(ctx context.Context) (endpoint.WorkCompletion, error) {
	if len(p.pend) > 0 {
		wc := p.pend[0]
		p.pend = p.pend[1:]
		return wc, nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.to)
	defer cancel()
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
func (p *peer) waitRecv(ctx context.Context) (endpoint.WorkCompletion, error) {
	for {
		wc, err := p.next(ctx)
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

// done tells the server the client is done (a Send with Solicited
// Event) and waits for its answer, the server's solicited Send, reposting
// the receives that come before it.
func (p *peer) done(ctx context.Context) error {
	if err := p.send(true); err != nil {
		return err
	}
	for {
		wc, err := p.waitRecv(ctx)
		if err != nil {
			return err
		}
		p.repost(wc)
		if wc.Solicited {
			return nil
		}
	}
}

func checkOpts(o *Options) error {
	found := false
	for _, t := range Tests {
		found = found || t == o.Test
	}
	if !found {
		return fmt.Errorf("perf: unknown test %q", o.Test)
	}
	if o.Size < 0 || o.Size > 1<<30 {
		return fmt.Errorf("perf: size %d", o.Size)
	}
	if o.Depth <= 0 {
		o.Depth = 64
	}
	if o.Test == SendBW || o.Test == ReadBW || o.Test == WriteBW {
		o.Depth = min(o.Depth, 1024)
	} else {
		o.Depth = 1
	}
	if o.Iters <= 0 && o.Duration <= 0 {
		o.Iters = 1000
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	return nil
}

// Client runs one test against an iwperf server at addr.
func Client(ctx context.Context, addr string, o Options) (Result, error) {
	if err := checkOpts(&o); err != nil {
		return Result{}, err
	}
	slots := o.Depth
	if o.Test == SendBW {
		slots = 1 // the source is reused
	}
	p, err := newPeer(o.Size, slots, o.Depth, o.Timeout)
	if err != nil {
		return Result{}, err
	}
	for i := 0; i < 8; i++ {
		if o.Test == SendLat || o.Test == WriteLat {
			p.postDataRecv(0) // pongs land in the data buffer
		} else {
			p.postCtlRecv(i)
		}
	}
	pd, _ := json.Marshal(request{Magic: "1", Test: o.Test, Size: o.Size, Depth: o.Depth, Addr: p.buf.Addr(), RKey: uint32(p.buf.STag())})
	cfg := o.Config
	cfg.PrivateData = pd
	conn, err := endpoint.Dial(ctx, "tcp", addr, p.qp, &cfg)
	if err != nil {
		return Result{}, err
	}
	defer conn.Close()
	var adv advert
	if err := json.Unmarshal(conn.Params().PeerPrivateData, &adv); err != nil {
		return Result{}, fmt.Errorf("perf: server's Private Data: %w", err)
	}
	res := Result{Test: o.Test, Size: o.Size, Params: conn.Params()}
	more := func(i int, start time.Time) bool {
		if o.Duration > 0 {
			return time.Since(start) < o.Duration
		}
		return i < o.Iters
	}
	start := time.Now()
	var lat []time.Duration
	switch o.Test {
	case WriteBW, ReadBW:
		op := endpoint.OpWrite
		if o.Test == ReadBW {
			op = endpoint.OpRead
		}
		posted, done := 0, 0
		sig := max(o.Depth/4, 1)
		for more(posted, start) || done < posted {
			for more(posted, start) && posted-done < o.Depth {
				slot := posted % o.Depth
				w := endpoint.SendWR{WRID: uint64(posted), Opcode: op, SGL: []endpoint.SGE{p.buf.SGE(slot*o.Size, o.Size)},
					RemoteAddr: adv.Addr + uint64(slot%max(adv.Len/max(o.Size, 1), 1)*o.Size), RKey: endpoint.STag(adv.RKey),
					Signaled: posted%sig == sig-1}
				if _, err := p.qp.PostSend(w); err != nil {
					return res, err
				}
				posted++
			}
			if done < posted && posted-done >= o.Depth || !more(posted, start) {
				// Make sure the last one is signaled.
				if !more(posted, start) && (posted-1)%sig != sig-1 {
					if _, err := p.qp.PostSend(endpoint.SendWR{WRID: uint64(posted), Opcode: op, Signaled: true,
						SGL: []endpoint.SGE{p.buf.SGE(0, 0)}, RemoteAddr: adv.Addr, RKey: endpoint.STag(adv.RKey)}); err != nil {
						return res, err
					}
					posted++
					sig = 1
				}
				wc, err := p.next(ctx)
				if err != nil {
					return res, err
				}
				done = max(done, int(wc.WRID)+1)
			}
		}
		res.Iters = posted
		if err := p.send(true); err != nil { // done; the server acknowledges
			return res, err
		}
		if _, err := p.waitRecv(ctx); err != nil {
			return res, err
		}
	case SendBW:
		// The server credits every Depth receives it reposts.
		sent, credited := 0, 0
		for more(sent, start) || credited < sent {
			for more(sent, start) && sent-credited < o.Depth {
				if _, err := p.qp.PostSend(endpoint.SendWR{Opcode: endpoint.OpSend, SGL: []endpoint.SGE{p.buf.SGE(0, o.Size)}}); err != nil {
					return res, err
				}
				sent++
			}
			if !more(sent, start) {
				if err := p.done(ctx); err != nil {
					return res, err
				}
				credited = sent
				break
			}
			wc, err := p.waitRecv(ctx)
			if err != nil {
				return res, err
			}
			p.repost(wc)
			credited = min(credited+o.Depth, sent)
		}
		res.Iters = sent
	case WriteLat, SendLat, ReadLat:
		n := 0
		for ; more(n, start); n++ {
			t0 := time.Now()
			switch o.Test {
			case ReadLat:
				if _, err := p.qp.PostSend(endpoint.SendWR{Opcode: endpoint.OpRead, Signaled: true, SGL: []endpoint.SGE{p.buf.SGE(0, o.Size)},
					RemoteAddr: adv.Addr, RKey: endpoint.STag(adv.RKey)}); err != nil {
					return res, err
				}
				if _, err := p.next(ctx); err != nil {
					return res, err
				}
			default:
				if err := p.ping(o.Test, adv); err != nil {
					return res, err
				}
				wc, err := p.waitRecv(ctx)
				if err != nil {
					return res, err
				}
				p.repost(wc)
			}
			lat = append(lat, time.Since(t0)/2)
		}
		res.Iters = n
		if err := p.done(ctx); err != nil {
			return res, err
		}
	}
	res.Elapsed = time.Since(start)
	res.Bytes = int64(res.Iters) * int64(o.Size)
	sec := res.Elapsed.Seconds()
	res.MBps = float64(res.Bytes) / sec / 1e6
	res.Gbps = float64(res.Bytes) * 8 / sec / 1e9
	res.MsgRate = float64(res.Iters) / sec
	if o.Test == ReadLat {
		for i := range lat {
			lat[i] *= 2 // a Read's round trip is its latency
		}
	}
	res.Lat = summarize(lat)
	res.Counters = p.qp.Counters()
	return res, nil
}

// ping sends one ping: a Send of size octets, or an RDMA Write of size
// octets followed by a zero-length Send that says it is placed.
func (p *peer) ping(test string, adv advert) error {
	if test == WriteLat {
		_, err := p.qp.PostSend(
			endpoint.SendWR{Opcode: endpoint.OpWrite, SGL: []endpoint.SGE{p.buf.SGE(0, p.size)}, RemoteAddr: adv.Addr, RKey: endpoint.STag(adv.RKey)},
			endpoint.SendWR{Opcode: endpoint.OpSend})
		return err
	}
	_, err := p.qp.PostSend(endpoint.SendWR{Opcode: endpoint.OpSend, SGL: []endpoint.SGE{p.buf.SGE(0, p.size)}})
	return err
}

// Serve accepts iwperf clients from l, one at a time (each until it is
// done); log gets one line per run. It returns when ctx ends or after the
// first client unless persistent.
func Serve(ctx context.Context, l *endpoint.Listener, persistent bool, to time.Duration, log io.Writer) error {
	if to <= 0 {
		to = 10 * time.Second
	}
	for {
		req, err := l.Accept(ctx)
		if err != nil {
			var me *endpoint.MPAError
			if errors.As(err, &me) {
				fmt.Fprintf(log, "iwperf: %v\n", err)
				continue
			}
			return err
		}
		err = serveOne(ctx, req, to, log)
		if err != nil {
			fmt.Fprintf(log, "iwperf: %v: %v\n", req.RemoteAddr(), err)
		}
		if !persistent {
			return err
		}
	}
}

func serveOne(ctx context.Context, req *endpoint.ConnRequest, to time.Duration, log io.Writer) error {
	var r request
	if err := json.Unmarshal(req.PrivateData, &r); err != nil || r.Magic != "1" {
		req.Reject([]byte("not an iwperf client"))
		return fmt.Errorf("rejected: Private Data %q is not an iwperf request", req.PrivateData)
	}
	o := Options{Test: r.Test, Size: r.Size, Depth: r.Depth, Iters: 1}
	if err := checkOpts(&o); err != nil {
		req.Reject([]byte(err.Error()))
		return err
	}
	p, err := newPeer(o.Size, o.Depth, o.Depth, to)
	if err != nil {
		req.Close()
		return err
	}
	switch o.Test {
	case SendBW:
		for i := 0; i < 2*o.Depth; i++ {
			p.postDataRecv(i)
		}
	case SendLat, WriteLat:
		for i := 0; i < 8; i++ {
			p.postDataRecv(0)
		}
	default:
		for i := 0; i < 8; i++ {
			p.postCtlRecv(i)
		}
	}
	adv, _ := json.Marshal(advert{Addr: p.buf.Addr(), RKey: uint32(p.buf.STag()), Len: p.buf.Len()})
	conn, err := req.Accept(p.qp, adv)
	if err != nil {
		return err
	}
	defer conn.Close()
	start := time.Now()
	n := 0
	switch o.Test {
	case WriteBW, ReadBW:
		// Passive: wait for the client's done, acknowledge it.
		if _, err := p.waitRecv(ctx); err != nil {
			return err
		}
		if err := p.send(false); err != nil {
			return err
		}
	case SendBW:
		for {
			wc, err := p.waitRecv(ctx)
			if err != nil {
				return err
			}
			p.repost(wc)
			if wc.Solicited { // the client's done
				if err := p.send(true); err != nil {
					return err
				}
				break
			}
			n++
			if n%o.Depth == 0 {
				if err := p.send(false); err != nil {
					return err
				}
			}
		}
	default:
		// Echo pings until the client's done.
		peerBuf := advert{Addr: r.Addr, RKey: r.RKey}
		for {
			wc, err := p.waitRecv(ctx)
			if err != nil {
				return err
			}
			p.repost(wc)
			if wc.Solicited {
				if err := p.send(true); err != nil {
					return err
				}
				break
			}
			if o.Test == ReadLat {
				continue
			}
			n++
			if err := p.ping(o.Test, peerBuf); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(log, "iwperf: %v: %s size %d done in %v (%d messages seen)\n", conn.RemoteAddr(), o.Test, o.Size, time.Since(start).Round(time.Millisecond), n)
	return nil
}
