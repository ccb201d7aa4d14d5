package track

import (
	"net/netip"
	"time"

	"github.com/iwkit/iwkit/finding"
)

// This file correlates connections: an MPA v2 attempt that a reset ended
// before the Reply, and the MPA v1 connection the same Initiator opens to
// the same Responder afterwards. Linux cxgb4 does this on a peer abort in
// MPA_REQ_SENT (c4iw_reconnect with retry_with_mpa_v1, "Add support for
// MPAv2 Enhanced RDMA Negotiation"): an RFC 5044 Responder that cannot
// parse Rev 2 resets, and the Initiator retries without the RFC 6581 block
// (RFC 6581 §10). Without the link a reader sees a reset and an unrelated
// v1 connection.

// fallbackWindow is how long after the aborted v2 attempt a v1 Request
// still counts as its retry (cxgb4 reconnects at once; the MPA timers of
// RNICs run to tens of seconds).
const fallbackWindow = 60 * time.Second

// maxAttempts bounds the aborted attempts remembered (oldest go first).
const maxAttempts = 1024

// peerKey names an Initiator host and a Responder listener: the retry comes
// from another source port.
type peerKey struct {
	ini  netip.Addr
	resp netip.AddrPort
}

// v2Attempt is an MPA v2 Request that a reset ended before the Reply.
// The message names it by its frames, not by a connection number: with
// several workers a shard's numbers are its own until the merger's.
type v2Attempt struct {
	reqFrame, rstFrame int
	reqTime, rstTime   time.Time
	resetByResponder   bool
}

type fallbacks struct {
	m     map[peerKey]v2Attempt
	order []peerKey
}

// Peers tells the tracker the two ends of conn: the MPA Initiator's
// address and the Responder's. The pipeline calls it before the Request's
// Handshake; without it no fallback is linked.
func (t *Tracker) Peers(conn int, initiator, responder netip.AddrPort) {
	c := t.conn(conn)
	c.peers = peerKey{ini: initiator.Addr(), resp: responder}
	c.hasPeers = true
}

// abortedV2 remembers c's MPA v2 attempt, reset at at before its Reply.
func (t *Tracker) abortedV2(c *conn, at *At) {
	fb := &t.fallback
	if fb.m == nil {
		fb.m = make(map[peerKey]v2Attempt)
	}
	if _, ok := fb.m[c.peers]; !ok {
		if len(fb.order) >= maxAttempts {
			delete(fb.m, fb.order[0])
			fb.order = fb.order[1:]
		}
		fb.order = append(fb.order, c.peers)
	}
	fb.m[c.peers] = v2Attempt{reqFrame: c.hs.reqFrame, reqTime: c.hs.reqTime,
		rstFrame: at.Frame, rstTime: at.Time, resetByResponder: at.Dir&1 == R2I}
}

// v1Request checks whether c's MPA v1 Request (at) retries an aborted v2
// attempt of the same peers, and names the fallback.
func (c *conn) v1Request(at *At) {
	fb := &c.t.fallback
	if !c.hasPeers || fb.m == nil {
		return
	}
	a, ok := fb.m[c.peers]
	if !ok {
		return
	}
	delete(fb.m, c.peers)
	for i, k := range fb.order {
		if k == c.peers {
			fb.order = append(fb.order[:i], fb.order[i+1:]...)
			break
		}
	}
	cost := at.Time.Sub(a.reqTime)
	if cost < 0 || cost > fallbackWindow {
		return
	}
	who := "the Initiator"
	if a.resetByResponder {
		who = "the Responder"
	}
	c.finding(finding.MPAV1Fallback, I2R, at, a.reqFrame, "MPA v1 Request from %s to %s after its MPA v2 attempt (Request frame %d) was reset by %s at frame %d: the Initiator fell back to MPA v1 without the RFC 6581 IRD/ORD block (RFC 6581 §10; Linux cxgb4 c4iw_reconnect); the fallback cost %v from the v2 Request to this one",
		c.peers.ini, c.peers.resp, a.reqFrame, who, a.rstFrame, cost)
}
