package perf

import (
	"context"
	"fmt"
	"time"

	"github.com/iwkit/iwkit/endpoint"
)

// ib_write_lat (perftest_resources.c, run_iter_lat_write): each side
// RDMA Writes size octets into the other's buffer and polls the last
// octet of its own for the other's Write; there is no Send and no
// receive completion. perftest's buffer is two halves of
// BUFF_SIZE(size, cycle buffer) octets: Writes go out of the first, whose
// last message octet carries the send count (one octet, wrapping), and
// the peer's come into the second, the one the exchange names. The
// server writes first: it skips its first poll. Each side then waits for
// its Write's completion before the next round, and after n rounds each
// has sent n Writes and seen n.
//
// iwperf cannot poll memory the receive engine writes (a data race in
// Go): it waits for the region's placement generation instead
// (endpoint.MR.WaitPlaced), then reads the octet, which must be the count
// perftest writes.

// ptHalf is perftest's BUFF_SIZE: the offset of the half the peer writes.
func ptHalf(size, cycle int) int { return max(size, cycle) }

// ptWriteLatBuf is the buffer a write_lat peer needs: both halves.
func ptWriteLatBuf(size, cycle int) int { return 2 * ptHalf(size, cycle) }

// writeLat runs perftest's write_lat ping-pong on p, whose buffer's
// second half (at half) the peer writes into, against rem (the peer's
// second half). Its latency, as perftest's, is half the time between
// posting consecutive Writes: one round trip.
func (p *peer) writeLat(ctx context.Context, o *Options, half int, rem ptDest, server bool) (stats, error) {
	var s stats
	n, size, mr := o.Iters, o.Size, p.buf
	// The QP's end ends any wait: its Terminate or close means no more
	// Writes come.
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-p.qp.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	buf := mr.Buf()
	posted := make([]time.Time, 0, n)
	gen := p.placed // the peer's Writes of the sizes before (-a)
	defer func() { p.placed = gen }()
	// A timed run (-D) plays for o.Duration from its start, as perftest's
	// run_iter_lat_write times itself; a wait that reaches the end ends
	// it. perftest's side, at its end, stops waiting for our Write, posts
	// one more of its own and tears down (no closing exchange follows
	// write_lat): a timed run takes two Writes at once, and the peer's
	// close once it has played, as its end.
	timed := o.Duration > 0
	var end time.Time
	if timed {
		end = time.Now().Add(o.Duration)
	}
	more := func(c int) bool { return c < n || timed && time.Now().Before(end) }
	scnt, ccnt, rcnt := 0, 0, 0
loop:
	for more(scnt) || ccnt < scnt || !timed && rcnt < n {
		if (timed || rcnt < n) && !(scnt < 1 && server) {
			wait := p.to
			if !end.IsZero() {
				wait = min(wait, time.Until(end))
			}
			wctx, wcancel := context.WithTimeout(ctx, max(wait, time.Millisecond))
			g, err := mr.WaitPlaced(wctx, gen)
			wcancel()
			if err != nil {
				// The caller's cancel is an error; the QP's end (our ctx,
				// cancelled by the goroutine above) in a timed run is the
				// peer's close once its time was up: its clock started
				// before ours, so it may end first, cleanly (Done with no
				// Err) or not.
				qpEnded := parent.Err() == nil && ctx.Err() != nil
				if timed && parent.Err() == nil && (rcnt > 0 && qpEnded || !time.Now().Before(end)) {
					break loop
				}
				if qerr := p.qp.Err(); qerr != nil {
					err = qerr
				}
				return s, fmt.Errorf("perf: write_lat: waiting for the peer's Write %d: %w", rcnt+1, err)
			}
			if g != gen+1 && !(timed && g > gen) {
				return s, fmt.Errorf("perf: write_lat: the peer placed %d Writes where it owed one", g-gen)
			}
			rcnt += int(g - gen)
			gen = g
			if got := buf[half+size-1]; got != byte(rcnt) {
				return s, fmt.Errorf("perf: write_lat: the peer's Write %d carries count %d", rcnt, got)
			}
			mr.Sync() // our read before the peer's next Write
		}
		if more(scnt) {
			posted = append(posted, time.Now())
			scnt++
			buf[size-1] = byte(scnt)
			if _, err := p.qp.PostSend(endpoint.SendWR{Opcode: endpoint.OpWrite, Signaled: true, SGL: []endpoint.SGE{mr.SGE(0, size)},
				RemoteAddr: rem.VAddr, RKey: endpoint.STag(rem.RKey)}); err != nil {
				return s, err
			}
		}
		if ccnt < scnt {
			if _, err := p.next(ctx, p.to); err != nil {
				if timed && rcnt > 0 && parent.Err() == nil && (p.qp.Err() != nil || ctx.Err() != nil) {
					break // the peer's time was up: it closed
				}
				return s, err
			}
			ccnt++
		}
		if p.prog != nil {
			p.prog.Store(int64(rcnt))
		}
		if timed && !more(scnt) {
			break
		}
	}
	n = len(posted)
	lat := make([]time.Duration, 0, n)
	for i := 1; i < len(posted); i++ {
		lat = append(lat, posted[i].Sub(posted[i-1])/2)
	}
	s.Iters = n
	s.Elapsed = time.Since(posted[0])
	s.Bytes = int64(n) * int64(size)
	s.Lat = summarize(lat)
	return s, nil
}
