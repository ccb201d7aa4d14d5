package endpoint

import (
	"fmt"
	"net"
)

// ConnError is a Listener's failure on one connection, before its MPA
// Request was read whole: the Initiator closed or reset (a port scan, a
// health check), sent a bad Request (wrapping *MPAError), or sent nothing
// within Config.Timeout (5 s by default for a Responder, RFC 5044 §7.1.2
// leaves the wait to the implementation; siw's is the same). The
// connection is closed and the Listener goes on; a server logs it and
// keeps accepting. Any other error from Listener.Accept is the Listener's
// own (closed, its socket failed, ctx ended) and ends it.
type ConnError struct {
	Remote net.Addr
	Err    error
}

func (e *ConnError) Error() string {
	return fmt.Sprintf("endpoint: connection from %v: %v", e.Remote, e.Err)
}

func (e *ConnError) Unwrap() error { return e.Err }
