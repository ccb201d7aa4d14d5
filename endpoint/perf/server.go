package perf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iwkit/iwkit/endpoint"
)

// Limits bound what one client can make the server allocate or run. A
// request beyond them is refused with an MPA Reject whose Private Data
// says why; the server goes on serving the others.
type Limits struct {
	MaxSize  int           // message size (MaxSize: 8 MiB)
	MaxDepth int           // work requests outstanding per connection (1024)
	MaxQPs   int           // connections of one run (64)
	MaxConns int           // connections served at once, all clients (128)
	MaxMem   int64         // data buffers of the connections served at once (512 MiB)
	MaxIters int           // iterations of a run the server drives (-b; 100 000 000, perftest's MAX_ITER)
	MaxDur   time.Duration // duration of a run the server drives (-b; 1 h)
}

// DefaultLimits are the server's limits unless told otherwise.
var DefaultLimits = Limits{MaxSize: MaxSize, MaxDepth: 1024, MaxQPs: 64, MaxConns: 128, MaxMem: 512 << 20,
	MaxIters: 100_000_000, MaxDur: time.Hour}

func (l *Limits) fill() {
	d := DefaultLimits
	set := func(v *int, dv int) {
		if *v <= 0 {
			*v = dv
		}
	}
	set(&l.MaxSize, d.MaxSize)
	set(&l.MaxDepth, d.MaxDepth)
	set(&l.MaxQPs, d.MaxQPs)
	set(&l.MaxConns, d.MaxConns)
	set(&l.MaxIters, d.MaxIters)
	if l.MaxMem <= 0 {
		l.MaxMem = d.MaxMem
	}
	if l.MaxDur <= 0 {
		l.MaxDur = d.MaxDur
	}
}

// connMem is what a connection's buffers take.
func connMem(r *request) int64 {
	if r.Test == Stress {
		return stressMem(r)
	}
	return int64(bufLen(r.Test, r.Size, r.Depth)) + int64(64*(2*r.Depth+16)+2*reportSlot)
}

// Server serves iwperf clients.
type Server struct {
	Limits  Limits
	Timeout time.Duration // per wait while the server is active (10 s)
	// Log gets one line per refused request or failed connection.
	Log io.Writer
	// Out gets the result tables, as the client prints them.
	Out   io.Writer
	Gbits bool // tables in Gb/sec
	// OnResult is called with each run's result (every connection of it).
	OnResult func(Result)
	// OnStress is called when a stress run ends: its connections, and
	// how many ended in error.
	OnStress func(conns, failed int)

	// stressHook sees each stress region before it is registered (tests).
	stressHook func(region []byte)

	connErrs atomic.Int64 // connections refused or failed before a run

	mu     sync.Mutex
	conns  int
	mem    int64
	runs   map[uint64]*runState
	sweeps map[uint64]bool // banner printed
}

type runState struct {
	since  time.Time
	req    request
	want   int
	got    int
	ss     []stats
	errs   []error
	params endpoint.Params
	local  Address
	remote Address
}

// maxPending bounds the runs a server remembers while their connections
// finish.
const maxPending = 1024

// Refusal is why a request was refused.
type Refusal string

func (r Refusal) Error() string { return "iwperf: refused: " + string(r) }

// admit checks a request against the limits and reserves its share.
func (s *Server) admit(r *request) error {
	l := &s.Limits
	switch {
	case !IsBW(r.Test) && !IsLat(r.Test) && r.Test != Stress:
		return Refusal(fmt.Sprintf("unknown test %q", r.Test))
	case r.Size < 0 || r.Size > l.MaxSize:
		return Refusal(fmt.Sprintf("size %d is not within this server's 0..%d", r.Size, l.MaxSize))
	case r.Depth < 1 || r.Depth > l.MaxDepth:
		return Refusal(fmt.Sprintf("tx depth %d is not within this server's 1..%d", r.Depth, l.MaxDepth))
	case r.QPs < 1 || r.QPs > l.MaxQPs:
		return Refusal(fmt.Sprintf("%d QPs is not within this server's 1..%d", r.QPs, l.MaxQPs))
	case r.Reverse && (r.Iters > l.MaxIters || time.Duration(r.DurMS)*time.Millisecond > l.MaxDur || r.DurMS < 0):
		return Refusal(fmt.Sprintf("a run of %d iterations or %d ms is above this server's %d or %v", r.Iters, r.DurMS, l.MaxIters, l.MaxDur))
	}
	need := connMem(r)
	if need > l.MaxMem {
		return Refusal(fmt.Sprintf("%d octets of buffers asked, above this server's limit of %d", need, l.MaxMem))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns >= l.MaxConns {
		return Refusal(fmt.Sprintf("busy: %d connections being served, this server's limit", s.conns))
	}
	if s.mem+need > l.MaxMem {
		return Refusal(fmt.Sprintf("busy: %d octets of buffers asked, %d of this server's %d in use", need, s.mem, l.MaxMem))
	}
	s.conns++
	s.mem += need
	return nil
}

func (s *Server) release(r *request) {
	s.mu.Lock()
	s.conns--
	s.mem -= connMem(r)
	s.mu.Unlock()
}

func (s *Server) logf(format string, a ...any) {
	if s.Log != nil {
		fmt.Fprintf(s.Log, format+"\n", a...)
	}
}

// ConnErrors is how many connections the server gave up on before a run:
// closed or silent during the MPA exchange (Config.Timeout bounds it),
// a bad Request, not an iwperf client, or refused by the limits.
func (s *Server) ConnErrors() int64 { return s.connErrs.Load() }

// Serve accepts iwperf clients from l, each connection in its own
// goroutine. It returns when ctx ends, or, unless persistent, after the
// first client's last run (with that run's error).
func (s *Server) Serve(ctx context.Context, l *endpoint.Listener, persistent bool) error {
	s.Limits.fill()
	if s.Timeout <= 0 {
		s.Timeout = 10 * time.Second
	}
	s.mu.Lock()
	s.runs = map[uint64]*runState{}
	s.sweeps = map[uint64]bool{}
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	var once sync.Once
	var last error
	for {
		req, err := l.Accept(ctx)
		if err != nil {
			// One connection's failure (closed, silent past the MPA
			// deadline, a bad Request) is that connection's: log it
			// and go on. Only the listener's own error ends Serve.
			var ce *endpoint.ConnError
			if errors.As(err, &ce) {
				s.connErrs.Add(1)
				s.logf("iwperf: %v", err)
				continue
			}
			if ctx.Err() != nil && !persistent {
				wg.Wait()
				return last
			}
			return err
		}
		var r request
		if err := json.Unmarshal(req.PrivateData, &r); err != nil || r.Magic != magic {
			s.connErrs.Add(1)
			req.Reject([]byte("iwperf: refused: not an iwperf client (or another version)"))
			s.logf("iwperf: %v: refused: Private Data %.40q is not an iwperf request", req.RemoteAddr(), req.PrivateData)
			continue
		}
		if err := s.admit(&r); err != nil {
			s.connErrs.Add(1)
			req.Reject([]byte(err.Error()))
			s.logf("iwperf: %v: %v", req.RemoteAddr(), err)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.release(&r)
			final, err := s.serveConn(ctx, req, r)
			if final && !persistent {
				once.Do(func() {
					last = err
					cancel()
				})
			}
		}()
	}
}

// serveConn serves one connection and, when it is its run's last, prints
// the run's row; final says the client's last run ended.
func (s *Server) serveConn(ctx context.Context, req *endpoint.ConnRequest, r request) (final bool, err error) {
	o := Options{Test: r.Test, Size: r.Size, Depth: r.Depth, Iters: r.Iters, Duration: time.Duration(r.DurMS) * time.Millisecond,
		PostList: r.PostList, Atomic: r.Atomic, CQMod: r.CQMod, IRD: r.IRD, ORD: r.ORD, QPs: r.QPs, Timeout: s.Timeout}
	if r.Test == Stress {
		err := s.serveStress(ctx, req, r)
		if err != nil {
			s.logf("iwperf: %v: stress: %v", req.RemoteAddr(), err)
		}
		return s.record(r, stats{}, err, endpoint.Params{}, Address{}, Address{}), err
	}
	var st stats
	var params endpoint.Params
	var local, remote Address
	err = func() error {
		if err := o.Normalize(); err != nil {
			req.Reject([]byte("iwperf: refused: " + err.Error()))
			return err
		}
		p, err := newPeer(o.Test, o.Size, o.Depth, o.IRD, o.ORD, s.Timeout)
		if err != nil {
			req.Close()
			return err
		}
		p.postInitialRecvs(o.Test, r.Reverse)
		adv, _ := json.Marshal(p.advert())
		conn, err := req.Accept(p.qp, adv)
		if err != nil {
			return err
		}
		defer conn.Close()
		params = conn.Params()
		local = Address{Addr: conn.LocalAddr().String(), QPN: p.qp.Num(), STag: uint32(p.buf.STag()), VAddr: p.buf.Addr()}
		remote = Address{Addr: conn.RemoteAddr().String(), STag: r.Peer.RKey, VAddr: r.Peer.Addr}
		if !r.Reverse {
			st, err = p.passive(ctx, &o, r.Peer)
			return err
		}
		// Wait for the client's go, then drive the run.
		wc, err := p.waitRecv(ctx, s.Timeout)
		if err != nil {
			return err
		}
		p.repost(wc)
		c := &clock{iters: o.Iters, stop: ctx.Done()}
		if o.Duration > 0 {
			c.end = time.Now().Add(o.Duration)
		}
		st, err = p.active(ctx, &o, r.Peer, c)
		return err
	}()
	if err != nil {
		s.logf("iwperf: %v: %s: %v", req.RemoteAddr(), r.Test, err)
	}
	return s.record(r, st, err, params, local, remote), err
}

// record adds one connection's outcome to its run; the run's last prints
// the row. It says whether the client's last run has ended.
func (s *Server) record(r request, st stats, err error, params endpoint.Params, local, remote Address) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	rs := s.runs[r.Run]
	if rs == nil {
		// A client that announces more connections than it opens
		// leaves its run pending: keep at most maxPending, forgetting
		// the oldest.
		if len(s.runs) >= maxPending {
			var old uint64
			var t time.Time
			for id, x := range s.runs {
				if t.IsZero() || x.since.Before(t) {
					old, t = id, x.since
				}
			}
			delete(s.runs, old)
		}
		rs = &runState{since: time.Now(), req: r, want: r.QPs, params: params, local: local, remote: remote}
		if r.Bidir {
			rs.want *= 2
		}
		s.runs[r.Run] = rs
	}
	rs.got++
	if err != nil {
		rs.errs = append(rs.errs, err)
	} else {
		rs.ss = append(rs.ss, st)
	}
	if rs.got < rs.want {
		return false
	}
	delete(s.runs, r.Run)
	if r.Test == Stress {
		s.logf("iwperf: stress run of %d connections ended, %d of them with an error", rs.want, len(rs.errs))
		if s.OnStress != nil {
			s.OnStress(rs.want, len(rs.errs))
		}
		return r.Final
	}
	if len(rs.errs) > 0 {
		if r.Final {
			delete(s.sweeps, r.Sweep)
		}
		return true // a failed run ends the client's
	}
	res := Result{Test: r.Test, Atomic: r.Atomic, Bidir: r.Bidir, QPs: r.QPs, Depth: r.Depth, CQMod: r.CQMod, Params: rs.params, Local: rs.local, Remote: rs.remote}
	if IsLat(r.Test) {
		res.Depth = 1
	}
	res.Row, res.Bytes, res.Msgs = aggregate(r.Size, rs.ss)
	if s.Out != nil {
		if !s.sweeps[r.Sweep] {
			s.sweeps[r.Sweep] = true
			Banner(s.Out, res)
			Header(s.Out, r.Test, s.Gbits)
		}
		FormatRow(s.Out, r.Test, res.Row, s.Gbits)
		if r.Final {
			fmt.Fprint(s.Out, Line)
		}
	}
	if r.Final {
		delete(s.sweeps, r.Sweep)
	}
	if s.OnResult != nil {
		s.OnResult(res)
	}
	return r.Final
}
