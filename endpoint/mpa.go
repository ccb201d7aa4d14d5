package endpoint

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/iwkit/iwkit/decode"
)

// RTRSet is a set of RFC 6581 ready-to-receive message types.
type RTRSet uint8

const (
	RTRSend  RTRSet = 1 << rtrSend  // zero-length Send (B)
	RTRWrite RTRSet = 1 << rtrWrite // zero-length RDMA Write (C)
	RTRRead  RTRSet = 1 << rtrRead  // zero-length RDMA Read (D)
	RTRAll          = RTRSend | RTRWrite | RTRRead
)

func (r RTRSet) String() string { return rtrSetString(uint8(r)) }

// Config is the MPA configuration of one side of a connection.
type Config struct {
	// Rev is the MPA revision of our frame: 1 (RFC 5044) or 2 (RFC 6581,
	// enhanced: IRD/ORD and peer-to-peer). 0 means 2. A Responder answers
	// with the Request's revision. 129 speaks Alibaba erdma's MPA (Linux
	// erdma_cm.c, MPA_REVISION_EXT_1, not an RFC revision): frames carry
	// the 8-octet extension ERDMA after PD_Length, no IRD/ORD block; a
	// Responder with Rev 129 takes Rev 129 Requests only, as erdma does.
	Rev int
	// ERDMA is the extension our Rev 129 frames carry: the QP's cookie
	// and congestion-control algorithm (bits 3:0 of Bits).
	ERDMA decode.MPAERDMAExt
	// FallbackV1, on an Initiator that Dials with Rev 2: when the
	// Responder resets or closes the connection instead of replying (an
	// RFC 5044-only peer, RFC 6581 §10), Dial connects again with Rev 1,
	// as Linux cxgb4 does (c4iw_reconnect). Params.FellBackV1 says so.
	FallbackV1 bool
	// RefuseV2, on a Responder, resets the connection on a Rev 2 Request
	// instead of replying, as an RFC 5044-only peer does; a Rev 1 retry is
	// accepted. It makes a target for an Initiator's fallback.
	RefuseV2 bool
	// CRC asks for MPA CRCs. CRCs are used in both directions when either
	// frame asks (RFC 5044 §7.1.1), so they are used when the peer asks
	// even if CRC is false.
	CRC bool
	// Markers asks the peer to put markers into the FPDUs it sends us
	// (M is per receive direction, RFC 5044 §7.1.1). We put markers into
	// ours when the peer's frame asks.
	Markers bool
	// PeerToPeer selects the RFC 6581 peer-to-peer model (Rev 2): the
	// Initiator's first FPDU is an RTR of a type both sides accept.
	PeerToPeer bool
	// RTR is the set of RTR types we can send (Initiator) or accept
	// (Responder); 0 means all three. The Initiator prefers Write, then
	// Read, then Send, like siw.
	RTR RTRSet
	// PrivateData is the ULP's Private Data (at most 512 octets, 508 with
	// Rev 2); for a Responder, ConnRequest.Accept takes its own.
	PrivateData []byte
	// Timeout bounds the MPA exchange: 10 s for an Initiator waiting for
	// the Reply, 5 s for a Responder waiting for the Request (siw's values).
	// A Responder also waits at most this long (5 s) for the Initiator's
	// first FPDU after its Reply (RFC 5044 §7.1.2 rule 4, RFC 6581 §5).
	Timeout time.Duration
	// EarlyResponder, on a Listener, lets the Responder send before the
	// Initiator's first FPDU arrived, breaking RFC 5044 §7.1.2 rule 4 as
	// Linux siw's Responder does (it leaves the order to the application;
	// siw's Initiator uses no RTR). Only for a ULP whose server speaks
	// first, such as perftest's ib_write_lat: with the rule, its server
	// and its siw client would each wait for the other. The peer-to-peer
	// model (an RTR first) keeps the rule.
	EarlyResponder bool
	// Backlog bounds, on a Listener, the connections whose MPA Request is
	// being read or waits for Accept (DefaultBacklog); connections beyond
	// it are closed at once.
	Backlog int
	// MULPDU caps the ULPDUs we send; 0 derives it from the TCP MSS
	// (RFC 5044 §4.5).
	MULPDU int
	// Capture, when set, records the connection's traffic.
	Capture *Capture
	// Device, on a Listener, receives its unaffiliated errors (a
	// connection that failed before any QP had it, the listening socket
	// failing) as EventListenerError on Device.Events.
	Device *Device
}

func (c *Config) rev() uint8 {
	if c == nil || c.Rev == 0 {
		return 2
	}
	return uint8(c.Rev)
}

func (c *Config) rtr() RTRSet {
	if c.RTR == 0 {
		return RTRAll
	}
	return c.RTR & RTRAll
}

// Params are a connection's negotiated MPA parameters.
type Params struct {
	Initiator       bool
	Rev, PeerRev    uint8
	Enhanced        bool // RFC 6581 frames were exchanged
	CRC             bool
	MarkersTx       bool // markers in the FPDUs we send
	MarkersRx       bool // markers in the FPDUs we receive
	PeerToPeer      bool
	RTR             RTRSet // the RTR used (single type), 0 without P2P
	IRD, ORD        int    // our values after negotiation
	PeerIRD         int    // -1 when the frames carried none
	PeerORD         int
	PeerPrivateData []byte
	MULPDU          int
	Request, Reply  []byte // the two frames as on the wire
	// ERDMA: the frames were Alibaba erdma's Rev 129; PeerERDMA is the
	// peer's extension (its cookie and congestion control).
	ERDMA     bool
	PeerERDMA decode.MPAERDMAExt
	// FellBackV1: the Rev 2 attempt was reset or closed by the Responder
	// and this connection is Dial's Rev 1 retry (Config.FallbackV1);
	// FallbackCost is the time from the first attempt to the retry's
	// Reply.
	FellBackV1   bool
	FallbackCost time.Duration
}

// MPAError is a failed MPA exchange. When the failure happened after the
// frames (IRD/ORD or RTR negotiation), Term is the Terminate that was sent.
type MPAError struct {
	Reason string
	Term   *TermInfo
	// ERDMA: the peer's frame was Alibaba erdma's Rev 129.
	ERDMA bool
}

func (e *MPAError) Error() string {
	if e.Term != nil {
		return fmt.Sprintf("endpoint: MPA: %s (sent Terminate %s)", e.Reason, e.Term.Cause.Short())
	}
	return "endpoint: MPA: " + e.Reason
}

// RejectError is the Initiator's error when the Responder rejected the
// connection (Reply with R set); it carries the Reply's Private Data.
type RejectError struct {
	Rev         uint8
	PrivateData []byte
	PeerIRD     int
	PeerORD     int
}

func (e *RejectError) Error() string {
	return fmt.Sprintf("endpoint: connection rejected by peer (MPA Rev %d, %d octets of Private Data)", e.Rev, len(e.PrivateData))
}

// Conn is an established connection: a QP in RTS on an MPA stream.
type Conn struct {
	qp *QP
	c  net.Conn
	p  Params
}

// QP is the connection's queue pair.
func (c *Conn) QP() *QP { return c.qp }

// Params returns the negotiated parameters.
func (c *Conn) Params() Params { return c.p }

// LocalAddr and RemoteAddr are the TCP addresses.
func (c *Conn) LocalAddr() net.Addr  { return c.c.LocalAddr() }
func (c *Conn) RemoteAddr() net.Addr { return c.c.RemoteAddr() }

// Close closes gracefully when the QP is in RTS (Modify to Closing: FIN,
// wait for the peer's FIN) and waits until the QP is done.
func (c *Conn) Close() error {
	qp := c.qp
	// Let posted work drain first (RDMAP has no graceful close of its own;
	// closing with work outstanding would be a Bad Close and a reset).
	end := time.Now().Add(qp.attr.DrainTimeout)
	for time.Now().Before(end) {
		qp.mu.Lock()
		busy := qp.state == StateRTS && (len(qp.sq) > 0 || qp.irrqBusy > 0 || len(qp.irrq) > 0)
		qp.mu.Unlock()
		if !busy {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if qp.State() == StateRTS {
		qp.Modify(StateClosing)
	}
	select {
	case <-qp.Done():
	case <-time.After(qp.attr.DrainTimeout + time.Second):
		qp.abort(errors.New("endpoint: close timed out"), EventBadClose)
		<-qp.Done()
	}
	return nil
}

// deadline applies the exchange timeout and ctx to c; the returned func
// clears them.
func deadline(ctx context.Context, c net.Conn, d time.Duration) func() {
	dl := time.Now().Add(d)
	if t, ok := ctx.Deadline(); ok && t.Before(dl) {
		dl = t
	}
	c.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	return func() {
		stop()
		c.SetDeadline(time.Time{})
	}
}

// readFrame reads one MPA Request or Reply frame, exactly its octets.
// erdma allows Alibaba erdma's Rev 129 (with its 8-octet extension).
func readFrame(c net.Conn, tap *flowTap, reply, erdma bool) (decode.MPAFrame, []byte, error) {
	var f decode.MPAFrame
	hdr := make([]byte, decode.MPAFrameHdrLen, decode.MPAFrameHdrLen+decode.MPAERDMAExtLen+decode.MPAMaxPDLength)
	n, err := io.ReadFull(c, hdr)
	if tap != nil && n > 0 {
		tap.recv(hdr[:n])
	}
	if err != nil {
		return f, nil, fmt.Errorf("reading the MPA %s: %w", frameName(reply), err)
	}
	isRep, ok := decode.IsMPAKey(hdr)
	if !ok || isRep != reply {
		// MPA-01: close TCP, report locally (RFC 5044 §7.1.2 rule 5).
		return f, hdr, &MPAError{Reason: fmt.Sprintf("bad key %q where an MPA %s was due", hdr[:decode.MPAKeyLen], frameName(reply))}
	}
	pdl := int(binary.BigEndian.Uint16(hdr[18:]))
	if pdl > decode.MPAMaxPDLength {
		// MPA-04 (RFC 5044 §7.1.1).
		return f, hdr, &MPAError{Reason: fmt.Sprintf("PD_Length %d > 512", pdl)}
	}
	b := hdr[:decode.MPAFrameLen(hdr)] // erdma's extension comes before the Private Data
	n, err = io.ReadFull(c, b[decode.MPAFrameHdrLen:])
	if tap != nil && n > 0 {
		tap.recv(b[decode.MPAFrameHdrLen : decode.MPAFrameHdrLen+n])
	}
	if err != nil {
		return f, b, fmt.Errorf("reading the MPA %s Private Data: %w", frameName(reply), err)
	}
	if _, err := decode.ParseMPAFrame(b, &f); err != nil {
		return f, b, &MPAError{Reason: err.Error()}
	}
	// MPA-02: we work with Rev 1 and 2 (RFC 5044 §7.1.1, RFC 6581 §6), and
	// with erdma's 129 when configured.
	if f.ERDMA && !erdma {
		return f, b, &MPAError{Reason: fmt.Sprintf("MPA Rev 129: the peer speaks Alibaba erdma's MPA (an 8-octet extension after PD_Length, cookie 0x%08x, congestion control %d), not an RFC revision; configure Rev 129 to talk to it", f.ERDMAExt.Cookie, f.ERDMAExt.CC()), ERDMA: true}
	}
	if f.Rev != 1 && f.Rev != 2 && !f.ERDMA {
		return f, b, &MPAError{Reason: fmt.Sprintf("MPA Rev %d not supported", f.Rev)}
	}
	// MPA-09: S needs Rev >= 2 and the 4-octet block (RFC 6581 §6).
	if f.Enhanced && !f.HasV2 {
		return f, b, &MPAError{Reason: fmt.Sprintf("enhanced flag with Rev %d and PD_Length %d", f.Rev, f.PDLength)}
	}
	return f, b, nil
}

func frameName(reply bool) string {
	if reply {
		return "Reply"
	}
	return "Request"
}

func v2Clamp(v int) uint16 { return uint16(min(v, decode.MPAv2NoNegotiation-1)) }

// Dial connects to addr and runs the MPA exchange as Initiator, then moves
// qp (in Idle, receives posted) to RTS.
func Dial(ctx context.Context, network, addr string, qp *QP, cfg *Config) (*Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	conn, err := Connect(ctx, c, qp, cfg)
	if err != nil && cfg != nil && cfg.FallbackV1 && cfg.rev() == 2 && aborted(err) && qp.State() == StateIdle {
		// The Responder reset or closed on our Rev 2 Request: an RFC
		// 5044-only peer (RFC 6581 §10). Retry with Rev 1 from a new
		// connection, as Linux cxgb4 does (c4iw_reconnect).
		v1 := *cfg
		v1.Rev, v1.PeerToPeer = 1, false
		if c, err = d.DialContext(ctx, network, addr); err != nil {
			return nil, err
		}
		if conn, err = Connect(ctx, c, qp, &v1); err == nil {
			conn.p.FellBackV1, conn.p.FallbackCost = true, time.Since(start)
		}
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return conn, nil
}

// aborted: err is the connection reset or closed while the MPA Reply was
// awaited (not a Reply that rejected, not a bad frame).
func aborted(err error) bool {
	var me *MPAError
	var re *RejectError
	if errors.As(err, &me) || errors.As(err, &re) {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// Connect runs the Initiator's side of the MPA exchange on an established
// TCP connection (RFC 5044 §7.1, RFC 6581 §9) and moves qp to RTS. On
// failure c is closed.
func Connect(ctx context.Context, c net.Conn, qp *QP, cfg *Config) (conn *Conn, err error) {
	if cfg == nil {
		cfg = &Config{}
	}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if qp.State() != StateIdle {
		return nil, ErrInvalidState
	}
	to := cfg.Timeout
	if to <= 0 {
		to = 10 * time.Second
	}
	clear := deadline(ctx, c, to)
	defer clear()
	var tap *flowTap
	if cfg.Capture != nil {
		tap = cfg.Capture.newFlow(c, true)
	}
	ird, ord := qp.IRDORD()
	rev := cfg.rev()
	erdma := rev == decode.MPARevERDMA
	if rev != 1 && rev != 2 && !erdma {
		return nil, fmt.Errorf("%w: MPA Rev %d", ErrInvalidWR, rev)
	}
	req := decode.MPAFrame{Markers: cfg.Markers, CRC: cfg.CRC, Rev: rev, PrivateData: cfg.PrivateData, ERDMA: erdma, ERDMAExt: cfg.ERDMA}
	if erdma && cfg.PeerToPeer {
		return nil, fmt.Errorf("%w: peer-to-peer needs MPA Rev 2", ErrInvalidWR)
	}
	if rev == 2 {
		req.Enhanced, req.HasV2 = true, true
		req.V2 = decode.MPAv2{PeerToPeer: cfg.PeerToPeer, IRD: v2Clamp(ird), ORD: v2Clamp(ord)}
		if cfg.PeerToPeer {
			r := cfg.rtr()
			req.V2.ZeroLenSendRTR = r&RTRSend != 0
			req.V2.ZeroLenWriteRTR = r&RTRWrite != 0
			req.V2.ZeroLenReadRTR = r&RTRRead != 0
		}
		req.PrivateData = append(make([]byte, decode.MPAv2Len), cfg.PrivateData...)
	} else if cfg.PeerToPeer {
		return nil, fmt.Errorf("%w: peer-to-peer needs MPA Rev 2", ErrInvalidWR)
	}
	if len(req.PrivateData) > decode.MPAMaxPDLength {
		return nil, fmt.Errorf("%w: %d octets of Private Data", ErrInvalidWR, len(req.PrivateData))
	}
	reqb := req.Append(nil)
	if tap != nil {
		tap.sent(reqb)
	}
	if _, err := c.Write(reqb); err != nil {
		return nil, err
	}
	rep, repb, err := readFrame(c, tap, true, erdma)
	if err != nil {
		return nil, err
	}
	// erdma answers a Rev 129 Request in kind (erdma_accept).
	if erdma != rep.ERDMA {
		return nil, &MPAError{Reason: fmt.Sprintf("MPA Request Rev %d answered by a Reply of Rev %d", rev, rep.Rev), ERDMA: rep.ERDMA}
	}
	p := Params{Initiator: true, Rev: rev, PeerRev: rep.Rev, PeerIRD: -1, PeerORD: -1,
		Request: reqb, Reply: append([]byte(nil), repb...),
		PeerPrivateData: append([]byte(nil), rep.ULPPrivateData()...),
		ERDMA:           erdma, PeerERDMA: rep.ERDMAExt}
	if rep.HasV2 {
		p.PeerIRD, p.PeerORD = int(rep.V2.IRD), int(rep.V2.ORD)
	}
	if rep.Reject {
		return nil, &RejectError{Rev: rep.Rev, PrivateData: p.PeerPrivateData, PeerIRD: p.PeerIRD, PeerORD: p.PeerORD}
	}
	// MPA-10: an enhanced Request gets an enhanced Reply, a plain one a
	// plain Reply (RFC 6581 §6, §10); siw reports this locally.
	if req.HasV2 != rep.HasV2 {
		return nil, &MPAError{Reason: fmt.Sprintf("enhanced Request answered by a Reply with S=%v Rev %d", rep.Enhanced, rep.Rev)}
	}
	p.Enhanced = rep.HasV2
	p.CRC = req.CRC || rep.CRC
	p.MarkersRx = req.Markers
	p.MarkersTx = rep.Markers
	p.MULPDU = mulpdu(c, cfg.MULPDU, p.MarkersTx)
	s := newStream(c, tap, nil)
	s.crc, s.txMarkers, s.rxMarkers, s.mulpdu = p.CRC, p.MarkersTx, p.MarkersRx, p.MULPDU

	// After the frames, failures are reported with an LLP Terminate (RFC
	// 6581 §8–9).
	fail := func(code uint8, reason string) (*Conn, error) {
		ti := localTerm(decode.TermLayerLLP, 0, code, reason)
		var b txBatch
		qp.emitTerminate(s, &b, &ti.Header)
		s.flush(&b, true)
		return nil, &MPAError{Reason: reason, Term: &ti}
	}
	var rtr rtrType
	if rep.HasV2 {
		// RFC 6581 §9.1: IRD := at least the Responder's ORD, ORD := at
		// most the Responder's IRD; 0x3FFF = no negotiation.
		if rep.V2.IRD != decode.MPAv2NoNegotiation {
			ord = min(ord, int(rep.V2.IRD))
		}
		if rep.V2.ORD != decode.MPAv2NoNegotiation && int(rep.V2.ORD) > ird {
			if int(rep.V2.ORD) > qp.dev.attr.MaxIRD {
				return fail(0x06, fmt.Sprintf("Responder ORD %d exceeds our IRD (at most %d)", rep.V2.ORD, qp.dev.attr.MaxIRD))
			}
			ird = int(rep.V2.ORD)
		}
		// MPA-11: the Responder MUST copy A (RFC 6581 §9.2).
		if rep.V2.PeerToPeer != req.V2.PeerToPeer {
			return fail(0x07, fmt.Sprintf("connection model: Request P2P=%v, Reply P2P=%v", req.V2.PeerToPeer, rep.V2.PeerToPeer))
		}
		if req.V2.PeerToPeer {
			p.PeerToPeer = true
			// MPA-12: the Initiator picks one type the Reply offers.
			mine := cfg.rtr()
			switch {
			case rep.V2.ZeroLenWriteRTR && mine&RTRWrite != 0:
				rtr = rtrWrite
			case rep.V2.ZeroLenReadRTR && mine&RTRRead != 0 && ord > 0:
				rtr = rtrRead
			case rep.V2.ZeroLenSendRTR && mine&RTRSend != 0:
				rtr = rtrSend
			default:
				return fail(0x07, fmt.Sprintf("no usable RTR type in the Reply (B=%v C=%v D=%v, ours %v, ORD %d)",
					rep.V2.ZeroLenSendRTR, rep.V2.ZeroLenWriteRTR, rep.V2.ZeroLenReadRTR, mine, ord))
			}
			p.RTR = 1 << rtr
		}
	}
	qp.mu.Lock()
	qp.ird, qp.ord = ird, ord
	qp.mu.Unlock()
	p.IRD, p.ORD = ird, ord
	conn = &Conn{qp: qp, c: c, p: p}
	clear()
	if err := qp.attach(s, conn, true, rtr, 0); err != nil {
		return nil, err
	}
	return conn, nil
}

// DefaultBacklog is the Listener's default Backlog.
const DefaultBacklog = 32

// Listener accepts MPA connections. Each TCP connection's Request is read
// in its own goroutine; Accept returns them as ConnRequests in arrival order.
type Listener struct {
	l    net.Listener
	cfg  Config
	ch   chan acceptResult
	sem  chan struct{} // one token per connection in the backlog
	done chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

type acceptResult struct {
	r   *ConnRequest
	err error
}

// Listen listens on a TCP address for MPA Initiators.
func Listen(ctx context.Context, network, addr string, cfg *Config) (*Listener, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return NewListener(l, cfg), nil
}

// NewListener serves MPA on an existing listener.
func NewListener(l net.Listener, cfg *Config) *Listener {
	ln := &Listener{l: l, done: make(chan struct{})}
	if cfg != nil {
		ln.cfg = *cfg
	}
	if ln.cfg.Backlog <= 0 {
		ln.cfg.Backlog = DefaultBacklog
	}
	ln.ch = make(chan acceptResult, ln.cfg.Backlog+1)
	ln.sem = make(chan struct{}, ln.cfg.Backlog)
	ln.wg.Add(1)
	go ln.loop()
	return ln
}

// Addr is the listening address.
func (l *Listener) Addr() net.Addr { return l.l.Addr() }

// Close stops listening; requests not yet accepted are closed.
func (l *Listener) Close() error {
	var err error
	l.once.Do(func() {
		close(l.done)
		err = l.l.Close()
		l.wg.Wait()
		for {
			select {
			case r := <-l.ch:
				if r.r != nil {
					r.r.c.Close()
				}
			default:
				return
			}
		}
	})
	return err
}

func (l *Listener) loop() {
	defer l.wg.Done()
	for {
		c, err := l.l.Accept()
		if err != nil {
			select {
			case <-l.done:
			default:
				l.event(err)
			}
			select {
			case l.ch <- acceptResult{err: err}:
			case <-l.done:
			}
			return
		}
		select {
		case l.sem <- struct{}{}:
		default:
			// The backlog is full: no goroutine, no buffer for this one.
			c.Close()
			continue
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			r, err := AcceptConn(context.Background(), c, &l.cfg)
			if err != nil {
				<-l.sem
				err = &ConnError{Remote: c.RemoteAddr(), Err: err}
				l.event(err)
			}
			select {
			case l.ch <- acceptResult{r: r, err: err}:
			case <-l.done:
				c.Close()
			}
		}()
	}
}

// event reports an unaffiliated error of the Listener (V00 §8.3.1, Fig. 25:
// no QP exists for it yet).
func (l *Listener) event(err error) {
	if d := l.cfg.Device; d != nil {
		d.unaffiliated(AsyncEvent{Type: EventListenerError, Listener: l, Err: err})
	}
}

// Accept returns the next connection request. A *ConnError (a connection
// closed, silent or with a bad Request, wrapping an *MPAError for the last)
// concerns one connection only: the Listener goes on. Connections whose
// Request is being read are at most Config.Backlog, each for at most
// Config.Timeout; beyond the backlog a connection is closed at once.
func (l *Listener) Accept(ctx context.Context) (*ConnRequest, error) {
	select {
	case r := <-l.ch:
		if r.r != nil {
			<-l.sem
		}
		return r.r, r.err
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ConnRequest is an MPA Request received by a Responder, to be accepted
// onto a QP or rejected.
type ConnRequest struct {
	c   net.Conn
	tap *flowTap
	cfg Config
	req decode.MPAFrame
	raw []byte

	Rev             uint8
	Enhanced        bool // RFC 6581 block present
	PeerToPeer      bool
	RTROffered      RTRSet
	PeerIRD         int // -1 without the block
	PeerORD         int
	CRC             bool // the Initiator asked for CRC
	Markers         bool // the Initiator wants markers in what we send
	PrivateData     []byte
	RemoteAddress   net.Addr
	RequestReceived time.Time
}

// AcceptConn reads the Initiator's MPA Request on an established TCP
// connection (the Responder's side, RFC 5044 §7.1.2). A bad Request closes c
// and returns an *MPAError (MPA-01/02/04/09: no Terminate exists yet).
func AcceptConn(ctx context.Context, c net.Conn, cfg *Config) (*ConnRequest, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	to := cfg.Timeout
	if to <= 0 {
		to = 5 * time.Second
	}
	clear := deadline(ctx, c, to)
	defer clear()
	var tap *flowTap
	if cfg.Capture != nil {
		tap = cfg.Capture.newFlow(c, false)
	}
	f, raw, err := readFrame(c, tap, false, cfg.rev() == decode.MPARevERDMA)
	if err != nil {
		c.Close()
		return nil, err
	}
	if cfg.rev() == decode.MPARevERDMA && !f.ERDMA {
		// erdma_recv_mpa_rr takes Rev 129 only (-EPROTO, the socket is
		// released without a Reply).
		c.Close()
		return nil, &MPAError{Reason: fmt.Sprintf("MPA Request Rev %d refused: an erdma Responder takes Rev 129 only", f.Rev)}
	}
	if cfg.RefuseV2 && f.HasV2 {
		// An RFC 5044-only peer cannot parse Rev 2: it resets (RFC 6581
		// §10), and an Initiator may retry with Rev 1.
		(&ConnRequest{c: c}).Reset()
		return nil, &MPAError{Reason: "MPA v2 Request refused with a reset (RefuseV2)"}
	}
	raw = append([]byte(nil), raw...)
	decode.ParseMPAFrame(raw, &f) // re-alias into our copy
	r := &ConnRequest{c: c, tap: tap, cfg: *cfg, req: f, raw: raw, Rev: f.Rev, Enhanced: f.HasV2,
		PeerIRD: -1, PeerORD: -1, CRC: f.CRC, Markers: f.Markers,
		PrivateData: f.ULPPrivateData(), RemoteAddress: c.RemoteAddr(), RequestReceived: time.Now()}
	if f.HasV2 {
		r.PeerIRD, r.PeerORD = int(f.V2.IRD), int(f.V2.ORD)
		r.PeerToPeer = f.V2.PeerToPeer
		if f.V2.PeerToPeer {
			if f.V2.ZeroLenSendRTR {
				r.RTROffered |= RTRSend
			}
			if f.V2.ZeroLenWriteRTR {
				r.RTROffered |= RTRWrite
			}
			if f.V2.ZeroLenReadRTR {
				r.RTROffered |= RTRRead
			}
		}
	}
	return r, nil
}

// RemoteAddr is the Initiator's address.
func (r *ConnRequest) RemoteAddr() net.Addr { return r.c.RemoteAddr() }

func (r *ConnRequest) reply(reject bool, ird, ord int, rtrs RTRSet, pd []byte, markers bool) ([]byte, error) {
	rep := decode.MPAFrame{Reply: true, Reject: reject, Markers: markers, CRC: r.cfg.CRC || r.req.CRC, Rev: r.req.Rev, PrivateData: pd,
		ERDMA: r.req.ERDMA, ERDMAExt: r.cfg.ERDMA}
	if r.req.HasV2 {
		rep.Enhanced, rep.HasV2 = true, true
		rep.V2 = decode.MPAv2{PeerToPeer: r.req.V2.PeerToPeer, IRD: uint16(ird), ORD: uint16(ord),
			ZeroLenSendRTR: rtrs&RTRSend != 0, ZeroLenWriteRTR: rtrs&RTRWrite != 0, ZeroLenReadRTR: rtrs&RTRRead != 0}
		rep.PrivateData = append(make([]byte, decode.MPAv2Len), pd...)
	}
	if len(rep.PrivateData) > decode.MPAMaxPDLength {
		return nil, fmt.Errorf("%w: %d octets of Private Data", ErrInvalidWR, len(rep.PrivateData))
	}
	b := rep.Append(nil)
	if r.tap != nil {
		r.tap.sent(b)
	}
	_, err := r.c.Write(b)
	return b, err
}

// Reject answers with a rejecting Reply (R set) carrying privateData and
// closes the connection (RFC 5044 §7.1.2).
func (r *ConnRequest) Reject(privateData []byte) error {
	ird, ord := 0, 0
	if r.req.HasV2 {
		ird, ord = int(r.req.V2.ORD), int(r.req.V2.IRD)
	}
	_, err := r.reply(true, ird, ord, 0, privateData, false)
	if r.tap != nil {
		r.tap.fin(true)
	}
	r.c.Close()
	return err
}

// Close drops the request without a Reply.
func (r *ConnRequest) Close() error { return r.c.Close() }

// Reset drops the request with a TCP reset and no Reply, as an RFC
// 5044-only Responder answers a Rev 2 Request it cannot parse (RFC 6581
// §10); an Initiator such as Linux cxgb4 then retries with Rev 1.
func (r *ConnRequest) Reset() error {
	if tc, ok := r.c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	return r.c.Close()
}

// Accept answers with a Reply carrying privateData (nil: the Listener's
// Config.PrivateData) and moves qp (Idle, receives posted) to RTS. The
// Reply mirrors the Request's revision and form; IRD/ORD follow RFC 6581
// §9.1 (our ORD ≤ the Initiator's IRD, our IRD ≥ its ORD where we can);
// CRC is on if either side asks.
func (r *ConnRequest) Accept(qp *QP, privateData []byte) (*Conn, error) {
	if qp.State() != StateIdle {
		return nil, ErrInvalidState
	}
	if privateData == nil {
		privateData = r.cfg.PrivateData
	}
	ird, ord := qp.IRDORD()
	repIRD, repORD := ird, ord
	var rtrs RTRSet
	var rtrIn uint8
	if r.req.HasV2 {
		if r.req.V2.IRD == decode.MPAv2NoNegotiation {
			repORD = decode.MPAv2NoNegotiation
		} else {
			ord = min(ord, int(r.req.V2.IRD))
			repORD = ord
		}
		if r.req.V2.PeerToPeer {
			mine := r.cfg.rtr()
			rtrs = r.RTROffered & mine
			if rtrs == 0 {
				rtrs = mine // none offered that we take: name at least one we do
			}
			rtrIn = uint8(rtrs)
		}
		if r.req.V2.ORD == decode.MPAv2NoNegotiation {
			repIRD = decode.MPAv2NoNegotiation
		} else {
			if int(r.req.V2.ORD) > ird {
				ird = min(int(r.req.V2.ORD), qp.dev.attr.MaxIRD)
			}
			if rtrs&RTRRead != 0 && ird == 0 {
				ird = 1 // so a Read RTR works (RFC 6581 §9.1)
			}
			repIRD = ird
		}
	}
	repb, err := r.reply(false, repIRD, repORD, rtrs, privateData, r.cfg.Markers)
	if err != nil {
		r.c.Close()
		return nil, err
	}
	p := Params{Rev: r.req.Rev, PeerRev: r.req.Rev, Enhanced: r.req.HasV2, CRC: r.cfg.CRC || r.req.CRC,
		MarkersTx: r.req.Markers, MarkersRx: r.cfg.Markers, PeerToPeer: r.PeerToPeer,
		IRD: ird, ORD: ord, PeerIRD: r.PeerIRD, PeerORD: r.PeerORD,
		PeerPrivateData: r.PrivateData, Request: r.raw, Reply: repb,
		ERDMA: r.req.ERDMA, PeerERDMA: r.req.ERDMAExt}
	p.MULPDU = mulpdu(r.c, r.cfg.MULPDU, p.MarkersTx)
	s := newStream(r.c, r.tap, nil)
	s.crc, s.txMarkers, s.rxMarkers, s.mulpdu = p.CRC, p.MarkersTx, p.MarkersRx, p.MULPDU
	qp.mu.Lock()
	qp.ird, qp.ord = ird, ord
	qp.mu.Unlock()
	conn := &Conn{qp: qp, c: r.c, p: p}
	qp.firstTimeout = r.cfg.Timeout
	if qp.firstTimeout <= 0 {
		qp.firstTimeout = 5 * time.Second
	}
	if err := qp.attach(s, conn, r.cfg.EarlyResponder && !r.PeerToPeer, rtrNone, rtrIn); err != nil {
		r.c.Close()
		return nil, err
	}
	return conn, nil
}

// mulpdu is the largest ULPDU to send: the configured cap, or the TCP EMSS
// rule of RFC 5044 §4.5, never above what ULPDU_Length can carry.
func mulpdu(c net.Conn, cfg int, markers bool) int {
	if cfg > 0 {
		return min(max(cfg, decode.MinMULPDU), 0xFFFF)
	}
	return min(decode.MULPDU(tcpMSS(c), markers), 0xFFFF)
}
