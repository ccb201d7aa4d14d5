// Package rudepeer is the client a server must survive: a port scanner's
// connect-and-close, half an MPA Request and then silence, and a crowd of
// silent connections. The servers' tests (iwperf --persistent, the rping
// servers, iwconform --serve) run it against a real listening socket and
// then check that a well-behaved client is still served.
package rudepeer

import (
	"fmt"
	"net"
	"runtime"
	"time"
)

// halfRequest is the first 10 octets of an MPA Request's 16-octet key
// "MPA ID Req Frame" (RFC 5044 §7.1): the Responder has read part of the
// frame and must not wait for the rest forever.
const halfRequest = "MPA ID Req"

// Report says what the server did to the crowd.
type Report struct {
	Silent           int  // silent connections opened
	MaxGoroutines    int  // goroutines of this process above the start while they were open
	ClosedByServer   int  // silent connections the server closed (backlog full or deadline)
	HalfClosedByPeer bool // the half Request's connection was closed by the server
}

// Abuse connects to addr and does, in order: connect and close at once;
// write half an MPA Request and wait up to wait for the server to close
// the connection (its MPA negotiation deadline); open n connections that
// send nothing, hold them until the server closes them or wait ends, and
// close the rest. The goroutine count is sampled while the crowd is open:
// a server that spends a goroutine (or a buffer) per silent connection
// without a cap shows it there.
func Abuse(addr string, n int, wait time.Duration) (Report, error) {
	var rep Report
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return rep, fmt.Errorf("rudepeer: bare connect: %w", err)
	}
	c.Close()

	c, err = net.Dial("tcp", addr)
	if err != nil {
		return rep, fmt.Errorf("rudepeer: half Request: %w", err)
	}
	if _, err := c.Write([]byte(halfRequest)); err != nil {
		c.Close()
		return rep, fmt.Errorf("rudepeer: half Request: %w", err)
	}
	rep.HalfClosedByPeer = closedWithin(c, wait)
	c.Close()

	base := runtime.NumGoroutine()
	cs := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return rep, fmt.Errorf("rudepeer: silent connection %d: %w", len(cs), err)
		}
		cs = append(cs, c)
		rep.MaxGoroutines = max(rep.MaxGoroutines, runtime.NumGoroutine()-base)
	}
	rep.Silent = len(cs)
	end := time.Now().Add(wait)
	for _, c := range cs {
		if closedWithin(c, time.Until(end)) {
			rep.ClosedByServer++
		}
		rep.MaxGoroutines = max(rep.MaxGoroutines, runtime.NumGoroutine()-base)
	}
	return rep, nil
}

// closedWithin reports whether the peer closed (or reset) c within d.
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(max(d, time.Millisecond)))
	var b [1]byte
	_, err := c.Read(b[:])
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return err != nil
}

// Problems lists what the server did wrong with the crowd: the half
// Request kept past the MPA deadline, silent connections left open, or
// goroutines beyond what a server holding at most backlog negotiations
// (and a few of its own) may spend. Empty when it survived as it should.
func (r Report) Problems(backlog int) []string {
	var p []string
	if !r.HalfClosedByPeer {
		p = append(p, "half a Request: the server kept the connection past its MPA deadline")
	}
	if r.ClosedByServer != r.Silent {
		p = append(p, fmt.Sprintf("%d of %d silent connections closed by the server", r.ClosedByServer, r.Silent))
	}
	if r.MaxGoroutines > backlog+16 {
		p = append(p, fmt.Sprintf("%d goroutines for %d silent connections: not bounded by the backlog (%d)", r.MaxGoroutines, r.Silent, backlog))
	}
	return p
}
