// Package rping speaks the exchange of rdma-core's rping over an iwkit
// endpoint, so that an iwkit client can ping an rping server and an rping
// client can ping an iwkit server.
//
// One iteration ("ping"), as rping.c does it:
//
//  1. the client fills its source buffer (start_buf) with "rdma-ping-N: "
//     followed by a rotating run of the letters 'A'..'z' and a final NUL,
//     and Sends its advertisement {buf, rkey, size} (struct rping_rdma_info:
//     64-bit address, 32-bit rkey, 32-bit size, network order);
//  2. the server RDMA Reads that buffer into its own (rdma_buf) and Sends a
//     16-octet go-ahead;
//  3. the client Sends the advertisement of its sink buffer (rdma_buf);
//  4. the server RDMA Writes strlen(rdma_buf)+1 octets into it and Sends a
//     16-octet "done";
//  5. the client checks (with validation on) that the sink equals the source.
//
// rping's receives are exactly 16 octets; both sides repost one after each.
package rping

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/iwkit/iwkit/endpoint"
)

// InfoLen is the size of struct rping_rdma_info.
const InfoLen = 16

// MinSize is rping's smallest buffer: room for the message prefix.
const MinSize = 26

// Info is struct rping_rdma_info: a buffer advertisement.
type Info struct {
	Addr uint64
	RKey uint32
	Size uint32
}

// Append encodes the advertisement in network order.
func (i Info) Append(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, i.Addr)
	b = binary.BigEndian.AppendUint32(b, i.RKey)
	return binary.BigEndian.AppendUint32(b, i.Size)
}

// ParseInfo decodes an advertisement.
func ParseInfo(b []byte) (Info, error) {
	if len(b) != InfoLen {
		return Info{}, fmt.Errorf("rping: advertisement of %d octets, want %d", len(b), InfoLen)
	}
	return Info{Addr: binary.BigEndian.Uint64(b), RKey: binary.BigEndian.Uint32(b[8:]), Size: binary.BigEndian.Uint32(b[12:])}, nil
}

// Pattern fills b as the rping client fills its source buffer for ping
// number ping: "rdma-ping-<ping>: ", then letters from start ('A' + ping
// mod 58) rotating through 'A'..'z', and a NUL in the last octet.
func Pattern(b []byte, ping int) {
	if len(b) == 0 {
		return
	}
	pre := "rdma-ping-" + strconv.Itoa(ping) + ": "
	cc := copy(b, pre)
	// snprintf truncates to size-1 characters plus NUL.
	if len(pre) >= len(b) {
		cc = len(b) - 1
	}
	c := byte(65 + ping%58)
	for i := cc; i < len(b); i++ {
		b[i] = c
		c++
		if c > 122 {
			c = 65
		}
	}
	b[len(b)-1] = 0
}

// Options configure a client or a server.
type Options struct {
	// Size is the buffer size (rping -S, default 64).
	Size int
	// Count is the number of pings (rping -C); the client needs it > 0,
	// a server serves until the client disconnects when it is 0.
	Count int
	// Validate checks the data of every ping (rping -V); the server checks
	// what it read against Pattern.
	Validate bool
	// Verbose, when set, gets rping -v style lines.
	Verbose io.Writer
	// Log, when set, gets one line per connection a server gave up on
	// (closed or silent during the MPA exchange, a bad Request, a ping
	// that failed); the server goes on with the next.
	Log io.Writer
	// Config is the MPA configuration.
	Config endpoint.Config
	// Device to use; nil opens one.
	Device *endpoint.Device
	// IRD and ORD of the QP (rping asks 1 and 1).
	IRD, ORD int
	// RFC7306 enables RFC 7306 on the QP and lets peers' atomics target
	// rdma_buf (AccessRemoteAtomic): a target for iwconform's atomic cases
	// (iwconform --serve --rfc7306). rping has no such option.
	RFC7306 bool
	// Timeout bounds each wait for a completion (10 s).
	Timeout time.Duration
	// StartDelay is how long the client waits after connecting before its
	// first Send. rping itself starts only after its ESTABLISHED event;
	// an Initiator that sends at once can hit a window in Linux siw's
	// accept path (the MPA Reply goes out before the QP's socket callbacks
	// are installed) where the first FPDU stays unread.
	StartDelay time.Duration
	// Dial makes the TCP connection for Client; nil dials addr directly.
	Dial func(ctx context.Context) (net.Conn, error)
}

// Result reports a run.
type Result struct {
	Pings    int
	Bytes    int64 // octets moved by RDMA Read and RDMA Write
	Duration time.Duration
	Params   endpoint.Params
	Counters endpoint.Counters
}

type res struct {
	dev  *endpoint.Device
	pd   *endpoint.PD
	cq   *endpoint.CQ
	qp   *endpoint.QP
	recv *endpoint.MR // 16-octet receive buffer
	send *endpoint.MR // 16-octet send buffer
	src  *endpoint.MR // client start_buf
	rdma *endpoint.MR // rdma_buf (client sink, server Read sink / Write source)
	o    Options
	// completions reaped while waiting for another kind
	pending []endpoint.WorkCompletion
}

func setup(o *Options, client bool) (*res, error) {
	if o.Size == 0 {
		o.Size = 64
	}
	if o.Size < MinSize {
		return nil, fmt.Errorf("rping: size %d below %d", o.Size, MinSize)
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.IRD == 0 {
		o.IRD = 1
	}
	if o.ORD == 0 {
		o.ORD = 1
	}
	r := &res{o: *o, dev: o.Device}
	if r.dev == nil {
		r.dev = endpoint.OpenDevice(endpoint.DeviceAttr{})
	}
	r.pd = r.dev.AllocPD()
	var err error
	if r.cq, err = r.dev.CreateCQ(64); err != nil {
		return nil, err
	}
	if r.qp, err = r.pd.CreateQP(endpoint.QPAttr{SendCQ: r.cq, RecvCQ: r.cq, SQDepth: 16, RQDepth: 2, IRD: o.IRD, ORD: o.ORD, RFC7306: o.RFC7306}); err != nil {
		return nil, err
	}
	reg := func(n int, a endpoint.Access) *endpoint.MR {
		if err != nil {
			return nil
		}
		var mr *endpoint.MR
		mr, err = r.pd.RegisterMR(make([]byte, n), a, nil)
		return mr
	}
	r.recv = reg(InfoLen, endpoint.AccessLocalWrite)
	r.send = reg(InfoLen, endpoint.AccessLocalRead)
	if client {
		r.src = reg(o.Size, endpoint.AccessLocalRead|endpoint.AccessLocalWrite|endpoint.AccessRemoteRead)
	}
	acc := endpoint.AccessAll
	if o.RFC7306 {
		acc |= endpoint.AccessRemoteAtomic
	}
	r.rdma = reg(o.Size, acc)
	if err != nil {
		return nil, err
	}
	return r, r.postRecv()
}

func (r *res) postRecv() error {
	_, err := r.qp.PostRecv(endpoint.RecvWR{WRID: 1, SGL: []endpoint.SGE{r.recv.SGE(0, InfoLen)}})
	return err
}

func (r *res) logf(format string, args ...any) {
	if r.o.Verbose != nil {
		fmt.Fprintf(r.o.Verbose, format+"\n", args...)
	}
}

// waitFor waits for the completion of op, collecting other completions on
// the way; a Send completion is not waited for unless asked. It fails on
// any error completion.
func (r *res) waitFor(ctx context.Context, op endpoint.Opcode) (endpoint.WorkCompletion, error) {
	for i, wc := range r.pending {
		if wc.Opcode == op {
			r.pending = append(r.pending[:i], r.pending[i+1:]...)
			return wc, nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, r.o.Timeout)
	defer cancel()
	var wc [1]endpoint.WorkCompletion
	for {
		if _, err := r.cq.Wait(ctx, wc[:]); err != nil {
			if qerr := r.qp.Err(); qerr != nil {
				return wc[0], fmt.Errorf("rping: waiting for %v: %w", op, qerr)
			}
			return wc[0], fmt.Errorf("rping: waiting for %v: %w (QP %v)", op, err, r.qp.State())
		}
		if wc[0].Status != endpoint.StatusSuccess {
			err := fmt.Errorf("rping: %v completed with %v", wc[0].Opcode, wc[0].Status)
			if qerr := r.qp.Err(); qerr != nil {
				err = fmt.Errorf("%w: %w", err, qerr)
			}
			return wc[0], err
		}
		if wc[0].Opcode == op {
			return wc[0], nil
		}
		r.pending = append(r.pending, wc[0])
	}
}

func (r *res) sendInfo(ctx context.Context, i Info) error {
	i.Append(r.send.Buf()[:0])
	if _, err := r.qp.PostSend(endpoint.SendWR{WRID: 2, Opcode: endpoint.OpSend, Signaled: true,
		SGL: []endpoint.SGE{r.send.SGE(0, InfoLen)}}); err != nil {
		return err
	}
	// The send buffer is reused: wait until the engine is done with it.
	_, err := r.waitFor(ctx, endpoint.OpSend)
	return err
}

func (r *res) recvInfo(ctx context.Context) (Info, error) {
	wc, err := r.waitFor(ctx, endpoint.OpRecv)
	if err != nil {
		return Info{}, err
	}
	if wc.ByteLen != InfoLen {
		return Info{}, fmt.Errorf("rping: received %d octets, want %d", wc.ByteLen, InfoLen)
	}
	info, _ := ParseInfo(bytes.Clone(r.recv.Buf()))
	r.recv.Sync()
	return info, r.postRecv()
}

// Client pings an rping server at addr ("host:port").
func Client(ctx context.Context, addr string, o Options) (Result, error) {
	if o.Count <= 0 {
		return Result{}, errors.New("rping: client needs Count > 0")
	}
	r, err := setup(&o, true)
	if err != nil {
		return Result{}, err
	}
	var conn *endpoint.Conn
	if o.Dial != nil {
		c, err := o.Dial(ctx)
		if err != nil {
			return Result{}, err
		}
		conn, err = endpoint.Connect(ctx, c, r.qp, &o.Config)
		if err != nil {
			return Result{}, err
		}
	} else if conn, err = endpoint.Dial(ctx, "tcp", addr, r.qp, &o.Config); err != nil {
		return Result{}, err
	}
	defer conn.Close()
	res := Result{Params: conn.Params()}
	if o.StartDelay > 0 {
		select {
		case <-time.After(o.StartDelay):
		case <-ctx.Done():
			return res, ctx.Err()
		}
	}
	start := time.Now()
	src, sink := r.src.Buf(), r.rdma.Buf()
	for ping := 0; ping < o.Count; ping++ {
		Pattern(src, ping)
		r.src.Sync()
		if err := r.sendInfo(ctx, Info{Addr: r.src.Addr(), RKey: uint32(r.src.STag()), Size: uint32(o.Size)}); err != nil {
			return res, fmt.Errorf("ping %d: %w", ping, err)
		}
		if _, err := r.recvInfo(ctx); err != nil { // go-ahead
			return res, fmt.Errorf("ping %d: %w", ping, err)
		}
		if err := r.sendInfo(ctx, Info{Addr: r.rdma.Addr(), RKey: uint32(r.rdma.STag()), Size: uint32(o.Size)}); err != nil {
			return res, fmt.Errorf("ping %d: %w", ping, err)
		}
		if _, err := r.recvInfo(ctx); err != nil { // done
			return res, fmt.Errorf("ping %d: %w", ping, err)
		}
		if o.Validate && !bytes.Equal(src, sink) {
			return res, fmt.Errorf("rping: ping %d: data mismatch: got %q", ping, sink)
		}
		r.logf("ping data: %s", bytes.TrimRight(sink, "\x00"))
		clear(sink)
		r.rdma.Sync()
		res.Pings++
		res.Bytes += 2 * int64(o.Size)
	}
	res.Duration = time.Since(start)
	res.Counters = r.qp.Counters()
	return res, nil
}

func (o *Options) logConn(format string, a ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, format+"\n", a...)
	}
}

// Serve accepts connections from l one after another and serves each
// (like rping -s -P when count is 0); it returns after the first
// connection unless persistent is set.
func Serve(ctx context.Context, l *endpoint.Listener, o Options, persistent bool) (Result, error) {
	for {
		req, err := l.Accept(ctx)
		if err != nil {
			// A connection closed, silent past the MPA deadline or
			// with a bad Request is that connection's failure; only
			// the listener's own error ends Serve.
			var ce *endpoint.ConnError
			if errors.As(err, &ce) {
				o.logConn("%v", err)
				continue
			}
			return Result{}, err
		}
		res, err := ServeRequest(ctx, req, o)
		if !persistent {
			return res, err
		}
		if err != nil {
			o.logConn("rping: %v: %v", req.RemoteAddr(), err)
		}
	}
}

// ServeRequest accepts one connection request and serves rping on it until
// Count pings are done or the client disconnects.
func ServeRequest(ctx context.Context, req *endpoint.ConnRequest, o Options) (Result, error) {
	r, err := setup(&o, false)
	if err != nil {
		req.Close()
		return Result{}, err
	}
	conn, err := req.Accept(r.qp, nil)
	if err != nil {
		return Result{}, err
	}
	defer conn.Close()
	res := Result{Params: conn.Params()}
	start := time.Now()
	buf := r.rdma.Buf()
	want := make([]byte, o.Size)
	for ping := 0; o.Count == 0 || ping < o.Count; ping++ {
		adv, err := r.recvInfo(ctx)
		if err != nil {
			if ping > 0 && o.Count == 0 && r.qp.State() != endpoint.StateRTS && r.qp.Err() == nil {
				break // the client closed after its last ping
			}
			return res, fmt.Errorf("ping %d: waiting for the source advertisement: %w", ping, err)
		}
		if _, err := r.qp.PostSend(endpoint.SendWR{WRID: 3, Opcode: endpoint.OpRead, Signaled: true,
			SGL:        []endpoint.SGE{{Addr: r.rdma.Addr(), Length: adv.Size, LKey: r.rdma.STag()}},
			RemoteAddr: adv.Addr, RKey: endpoint.STag(adv.RKey)}); err != nil {
			return res, err
		}
		if _, err := r.waitFor(ctx, endpoint.OpRead); err != nil {
			return res, fmt.Errorf("ping %d: RDMA Read: %w", ping, err)
		}
		r.logf("server ping data: %s", bytes.TrimRight(buf, "\x00"))
		if o.Validate {
			Pattern(want[:adv.Size], ping)
			if !bytes.Equal(buf[:adv.Size], want[:adv.Size]) {
				return res, fmt.Errorf("rping: ping %d: read %q, want %q", ping, buf[:adv.Size], want[:adv.Size])
			}
		}
		if err := r.sendInfo(ctx, Info{}); err != nil { // go-ahead
			return res, err
		}
		sink, err := r.recvInfo(ctx)
		if err != nil {
			return res, fmt.Errorf("ping %d: waiting for the sink advertisement: %w", ping, err)
		}
		n := bytes.IndexByte(buf, 0) + 1 // strlen(rdma_buf) + 1
		if n == 0 {
			n = len(buf)
		}
		if _, err := r.qp.PostSend(endpoint.SendWR{WRID: 4, Opcode: endpoint.OpWrite, Signaled: true,
			SGL:        []endpoint.SGE{r.rdma.SGE(0, n)},
			RemoteAddr: sink.Addr, RKey: endpoint.STag(sink.RKey)}); err != nil {
			return res, err
		}
		if _, err := r.waitFor(ctx, endpoint.OpWrite); err != nil {
			return res, fmt.Errorf("ping %d: RDMA Write: %w", ping, err)
		}
		if err := r.sendInfo(ctx, Info{}); err != nil { // done
			return res, err
		}
		r.rdma.Sync()
		res.Pings++
		res.Bytes += int64(adv.Size) + int64(n)
	}
	// Give the client a moment to disconnect, so that our close does not
	// race its last receive.
	select {
	case <-r.qp.Done():
	case <-time.After(min(r.o.Timeout, 2*time.Second)):
	case <-ctx.Done():
	}
	res.Duration = time.Since(start)
	res.Counters = r.qp.Counters()
	return res, nil
}
