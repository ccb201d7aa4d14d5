package wirefuzz

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/endpoint"
)

// player plays inputs against the peer at addr.
type player struct {
	addr    string
	crc     bool          // the baseline Request asks for CRCs
	timeout time.Duration // the wait for an MPA Reply, and for the peer to answer a probe
	drain   time.Duration // how long an input reads the peer's reaction at its end
	down    func() bool   // Options.Down
}

// Outcome is what the peer did with one input.
type Outcome struct {
	// Reply: "accept" with the negotiated features, "reject", "none"
	// (no await step, or nothing within the timeout), or "bad" with why.
	Reply string `json:"reply"`
	// Reaction after the input's last step: "terminate L/E/C name",
	// "fin", "reset", "silence", "fpdus N" (octets that were not a
	// Terminate), or the error that ended the input early.
	Reaction string `json:"reaction"`
}

// conn is an input's connection and its recording.
type conn struct {
	c   net.Conn
	tap *endpoint.Tap
	rx  []byte // octets received and not yet consumed
	p   *player
}

func (p *player) dial(ctx context.Context, capt *endpoint.Capture) (*conn, error) {
	d := net.Dialer{Timeout: p.timeout}
	c, err := d.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	cn := &conn{c: c, p: p}
	if capt != nil {
		cn.tap = capt.Tap(c, true)
	}
	return cn, nil
}

func (c *conn) write(b []byte) error {
	c.c.SetWriteDeadline(time.Now().Add(c.p.timeout))
	n, err := c.c.Write(b)
	if c.tap != nil && n > 0 {
		c.tap.Sent(b[:n])
	}
	return err
}

// writeSplit writes b in two segments cut at split (a pause between, so
// that TCP does not coalesce them), or whole.
func (c *conn) writeSplit(b []byte, split int) error {
	if split <= 0 || split >= len(b) {
		return c.write(b)
	}
	if err := c.write(b[:split]); err != nil {
		return err
	}
	time.Sleep(20 * time.Millisecond)
	return c.write(b[split:])
}

// fill reads once into rx, waiting until deadline.
func (c *conn) fill(deadline time.Time) error {
	c.c.SetReadDeadline(deadline)
	var buf [4096]byte
	n, err := c.c.Read(buf[:])
	if n > 0 {
		c.rx = append(c.rx, buf[:n]...)
		if c.tap != nil {
			c.tap.Recv(buf[:n])
		}
	}
	return err
}

// readMPA waits for a whole MPA frame from the peer (RFC 5044 §7.1.2),
// at most timeout.
func (c *conn) readMPA() (decode.MPAFrame, error) {
	end := time.Now().Add(c.p.timeout)
	var f decode.MPAFrame
	for {
		if len(c.rx) >= decode.MPAFrameHdrLen {
			n, err := decode.ParseMPAFrame(c.rx, &f)
			if err == nil {
				f.PrivateData = append([]byte(nil), f.PrivateData...)
				c.rx = c.rx[n:]
				return f, nil
			}
			var de *decode.Error
			if !errors.As(err, &de) || de.Kind != decode.Truncated {
				return f, err
			}
		}
		if err := c.fill(end); err != nil {
			return f, err
		}
	}
}

func (c *conn) fin() {
	if tc, ok := c.c.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	if c.tap != nil {
		c.tap.Fin(true)
	}
}

func (c *conn) reset() {
	if tc, ok := c.c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.c.Close()
	if c.tap != nil {
		c.tap.Reset(true)
	}
}

func (c *conn) close() {
	c.c.Close()
	if c.tap != nil {
		c.tap.Fin(true)
	}
}

// play runs one input. An error means the input could not start (no
// connection); what happened after that is in the Outcome.
func (p *player) play(ctx context.Context, in Input, capt *endpoint.Capture) (Outcome, error) {
	o := Outcome{Reply: "none"}
	c, err := p.dial(ctx, capt)
	if err != nil {
		return o, err
	}
	req, split := request(p.crc, in.Request)
	var reqFrame decode.MPAFrame
	decode.ParseMPAFrame(req, &reqFrame)
	crc := reqFrame.CRC
	q := newQueues()
	replied := false
	if err := c.writeSplit(req, split); err != nil {
		o.Reaction = "write: " + errText(err)
		c.close()
		return o, nil
	}
	for _, s := range in.Steps {
		if ctx.Err() != nil {
			break
		}
		var err error
		switch s.Op {
		case OpAwait:
			if replied {
				break // the Reply is in: a later await waits for nothing
			}
			replied = true
			var f decode.MPAFrame
			f, err = c.readMPA()
			switch {
			case err != nil:
				o.Reply = "none (" + errText(err) + ")"
			case !f.Reply:
				o.Reply = "bad (a Request's key)"
			case f.Reject:
				o.Reply = "reject"
			default:
				o.Reply = replyText(&f)
				crc = crc || f.CRC // RFC 5044 §7.1.2: CRCs when either side asks
			}
			err = nil
		case OpFPDU:
			b, split := fpdu(s, &q, crc)
			err = c.writeSplit(b, split)
		case OpRaw:
			b, _ := hex.DecodeString(s.Data)
			err = c.write(b)
		case OpSleep:
			time.Sleep(time.Duration(min(max(s.MS, 0), 2000)) * time.Millisecond)
		case OpReset:
			c.reset()
			o.Reaction = "reset sent"
			return o, nil
		case OpFin:
			c.fin()
		}
		if err != nil {
			o.Reaction = "write: " + errText(err)
			c.reset()
			return o, nil
		}
	}
	o.Reaction = c.reaction()
	c.close()
	return o, nil
}

// reaction reads what the peer sends within the drain time: a Terminate
// (RFC 5040 §5.4) named by its cause, else how the stream ended.
func (c *conn) reaction() string {
	end := time.Now().Add(c.p.drain)
	var err error
	for err == nil {
		err = c.fill(end)
	}
	for len(c.rx) > 0 {
		var f decode.FPDU
		n, perr := decode.ParseFPDU(c.rx, &f)
		if perr != nil || n <= 0 {
			break
		}
		var s decode.Segment
		if decode.ParseSegment(f.ULPDU, &s) == nil && s.RDMAP.Opcode == decode.OpTerminate {
			t := s.Terminate
			return fmt.Sprintf("terminate 0x%x/0x%x/0x%02x %s", t.Layer, t.EType, t.Code, t.Cause().Short())
		}
		c.rx = c.rx[n:]
	}
	var ne net.Error
	switch {
	case len(c.rx) > 0:
		return fmt.Sprintf("%d octets, no Terminate", len(c.rx))
	case errors.Is(err, io.EOF):
		return "fin"
	case errors.Is(err, syscall.ECONNRESET):
		return "reset"
	case errors.As(err, &ne) && ne.Timeout():
		return "silence"
	}
	return errText(err)
}

func replyText(f *decode.MPAFrame) string {
	s := "accept"
	if f.CRC {
		s += " crc"
	}
	if f.Markers {
		s += " markers"
	}
	if f.HasV2 {
		s += fmt.Sprintf(" ird=%d ord=%d", f.V2.IRD, f.V2.ORD)
		if f.V2.PeerToPeer {
			s += " p2p"
			switch {
			case f.V2.ZeroLenWriteRTR:
				s += " rtr=write"
			case f.V2.ZeroLenReadRTR:
				s += " rtr=read"
			case f.V2.ZeroLenSendRTR:
				s += " rtr=send"
			}
		}
	}
	return s
}

func errText(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF):
		return "fin"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "reset"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return err.Error()
}

// alive checks the peer's liveness: a new connection with a valid,
// client-server MPA Request (never peer-to-peer: a probe must not be an
// input) gets an MPA Reply, an acceptance or a Reject, within the
// timeout. It tries until twice the timeout has passed (a server may take
// a moment to listen again), or until Options.Down says the peer cannot
// answer, and returns why the peer is taken for dead.
func (p *player) alive(ctx context.Context, capt *endpoint.Capture) error {
	end := time.Now().Add(2 * p.timeout)
	for {
		err := p.probe(ctx, capt)
		if err == nil || time.Now().After(end) || ctx.Err() != nil {
			return err
		}
		if p.down != nil && p.down() {
			return fmt.Errorf("%w (and the peer is down)", err)
		}
		select {
		case <-time.After(300 * time.Millisecond):
		case <-ctx.Done():
		}
	}
}

func (p *player) probe(ctx context.Context, capt *endpoint.Capture) error {
	c, err := p.dial(ctx, capt)
	if err != nil {
		return fmt.Errorf("connecting: %s", errText(err))
	}
	defer c.close()
	req, _ := request(p.crc, nil)
	if err := c.write(req); err != nil {
		return fmt.Errorf("sending the MPA Request: %s", errText(err))
	}
	f, err := c.readMPA()
	if err != nil {
		return fmt.Errorf("no MPA Reply within %v: %s", p.timeout, errText(err))
	}
	if !f.Reply {
		return errors.New("the answer to an MPA Request was not an MPA Reply")
	}
	return nil
}

// newPcap starts a pcap file at path; done flushes and closes it.
var newPcap = endpoint.CreateCapture
