package perf

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/iwkit/iwkit/endpoint"
)

// ib_send_bw over iWARP (perftest's send_rcredit; send_bw.c and
// perftest_resources.c). iWARP has no RNR retry, so a Send that finds no
// receive posted is a Terminate: perftest's sender keeps at most rx_depth
// Sends beyond the count of receives the receiver last RDMA Wrote into
// the sender's credit word (4 octets, host order, little-endian on the
// x86 perftest runs on), which the receiver does every rx_depth/3
// receives. The records of send_bw's exchange name the credit words
// (ctx_alloc_credit), not the data buffers.
//
// iwperf's sender does not read its credit word: memory a peer's RDMA
// Write placed has no happens-before edge to the application in Go (no
// completion marks it). It counts the credit Writes instead (an atomic
// counter of the QP), and knows their values from the receiver's rule.

// ptRxDepth is perftest's rx_depth of a send_bw run: 512, at most the
// iterations.
func ptRxDepth(iters int) int { return min(512, iters) }

// creditDue says whether perftest's receiver writes a credit after its
// n-th receive (run_iter_bw_server: rcnt % rx_depth % (rx_depth/3) == 0).
func creditDue(n, rx int) bool { return (n%rx)%max(1, rx/3) == 0 }

// creditSeq follows the receiver's credit Writes: the count the k-th
// carries (creditDue's n, counted from the size's first receive).
type creditSeq struct {
	rx, k, n int
}

// at returns the count carried by the k-th credit Write (k from 1), 0
// for none; k only grows.
func (c *creditSeq) at(k int) int {
	for c.k < k {
		c.n++
		if creditDue(c.n, c.rx) {
			c.k++
		}
	}
	if k == 0 {
		return 0
	}
	return c.n
}

// creditOff is where a peer keeps its credit word: its report slot,
// which perftest's exchange does not use.
func (p *peer) creditOff() int { return 64 * p.nctl }

// sendCredited is the sender: o.Iters Sends of o.Size octets (or as many
// as o.Duration allows, or until o.Stop), at most o.Depth outstanding and
// at most rx beyond the receiver's credit. The credit Writes of sizes
// before (-a) are p.credits: each size's receiver counts from 0 again, as
// perftest's sender zeroes its credit word after each size's sync. With
// rem (send_bw -b, perftest's run_iter_bi) it is also the receiver of the
// peer's Sends, crediting them into rem, in the same loop over the CQ (the
// completions of one role would be lost to the other's wait); the row is
// this side's Sends.
func (p *peer) sendCredited(ctx context.Context, o *Options, rx int, rem *ptDest) (stats, error) {
	var s stats
	seq := &creditSeq{rx: rx}
	base := p.credits
	credit := func() int { return seq.at(int(p.qp.Counters().RxWrites - base)) }
	c := &clock{iters: o.Iters, stop: o.Stop, forever: o.Every > 0}
	if o.Duration > 0 {
		c.end = time.Now().Add(o.Duration)
	}
	timed := o.Duration > 0 || o.Every > 0
	tl := []mark{{time.Now(), 0}}
	start, idle := tl[0].t, tl[0].t
	sent, done, recvd, k := 0, 0, 0, 0
	var wcs [64]endpoint.WorkCompletion
	for c.more(sent) || done < sent || rem != nil && !timed && recvd < o.Iters {
		for c.more(sent) && sent-done < o.Depth && sent-credit() < rx {
			// A timed run signals every Send: its last is not known ahead.
			sig := sent%o.CQMod == o.CQMod-1 || sent == o.Iters-1 || timed
			if _, err := p.qp.PostSend(endpoint.SendWR{WRID: uint64(sent), Opcode: endpoint.OpSend, Signaled: sig,
				SGL: []endpoint.SGE{p.buf.SGE((sent%p.slots)*o.Size, o.Size)}}); err != nil {
				return s, err
			}
			sent++
		}
		n := p.cq.Poll(wcs[:])
		for _, wc := range wcs[:n] {
			if wc.Status != endpoint.StatusSuccess {
				return s, fmt.Errorf("perf: %v completed with %v", wc.Opcode, wc.Status)
			}
			switch wc.Opcode {
			case endpoint.OpSend:
				done = max(done, int(wc.WRID)+1)
				tl = append(tl, mark{time.Now(), done})
				if p.prog != nil {
					p.prog.Store(int64(done))
				}
			case endpoint.OpRecv:
				if err := p.repost(wc); err != nil {
					return s, err
				}
				recvd++
				if creditDue(recvd, rx) {
					if err := p.writeCredit(&k, recvd, *rem); err != nil {
						return s, err
					}
				}
			}
		}
		switch {
		case n > 0:
			idle = time.Now()
		case p.qp.Err() != nil:
			return s, p.qp.Err()
		case ctx.Err() != nil:
			return s, ctx.Err()
		case time.Since(idle) > p.to:
			return s, fmt.Errorf("perf: send_bw: nothing completed in %v (%d sent, %d completed, %d credited, %d received)", p.to, sent, done, credit(), recvd)
		default:
			// Credits come as RDMA Writes, which complete nothing here:
			// poll, as perftest does.
			time.Sleep(20 * time.Microsecond)
		}
	}
	if !timed {
		// The size's credit Writes, some perhaps still on their way.
		p.credits += uint64(len(credits(o.Iters, rx)))
	}
	s.Iters = sent
	s.Elapsed = time.Since(start)
	s.Bytes = int64(s.Iters) * int64(o.Size)
	s.PeakBps = peak(tl, o.Size, max(o.Depth, s.Iters/50))
	return s, nil
}

// writeCredit RDMA Writes receive count n into the sender's credit word
// (rem), the k-th credit, each from its own 4 octets of the peer report
// slot so that one in flight is not overwritten.
func (p *peer) writeCredit(k *int, n int, rem ptDest) error {
	off := p.creditOff() + reportSlot + 4*(*k%(reportSlot/4))
	*k++
	binary.LittleEndian.PutUint32(p.ctl.Buf()[off:], uint32(n))
	_, err := p.qp.PostSend(endpoint.SendWR{WRID: ^uint64(0), Opcode: endpoint.OpWrite, Signaled: true,
		SGL: []endpoint.SGE{p.ctl.SGE(off, 4)}, RemoteAddr: rem.VAddr, RKey: endpoint.STag(rem.RKey)})
	return err
}

// credits lists the receive counts the receiver's credit Writes carry
// in a run of iters receives, in order.
func credits(iters, rx int) []int {
	var c []int
	for n := 1; n <= iters; n++ {
		if creditDue(n, rx) {
			c = append(c, n)
		}
	}
	return c
}

// recvCredited is the receiver: o.Iters receives (or, with o.Duration,
// as many as come within it from the first, as perftest's
// run_iter_bw_server starts its timer on the first), reposted, and the
// count RDMA Written to the sender's credit word every rx/3 of them.
func (p *peer) recvCredited(ctx context.Context, o *Options, rx int, rem ptDest) (stats, error) {
	var s stats
	var start time.Time
	k := 0 // credits written
	n := 1
	wctx := ctx // after the first receive of a timed run: until its end
	if o.Stop != nil {
		// An infinite run ends when o.Stop closes.
		var cancel context.CancelFunc
		wctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-o.Stop:
				cancel()
			case <-wctx.Done():
			}
		}()
	}
	for ; o.Duration > 0 || o.Every > 0 || n <= o.Iters; n++ {
		wc, err := p.waitRecv(wctx, 0)
		if err != nil {
			if wctx != ctx && wctx.Err() != nil && ctx.Err() == nil {
				break // the run's time is up, or it was stopped
			}
			return s, err
		}
		if p.prog != nil {
			p.prog.Store(int64(n))
		}
		if n == 1 {
			start = time.Now()
			if o.Duration > 0 {
				var cancel context.CancelFunc
				wctx, cancel = context.WithDeadline(wctx, start.Add(o.Duration))
				defer cancel()
			}
		}
		p.repost(wc)
		if creditDue(n, rx) {
			if err := p.writeCredit(&k, n, rem); err != nil {
				return s, err
			}
		}
	}
	s.Iters = n - 1
	s.Elapsed = time.Since(start)
	s.Bytes = int64(s.Iters) * int64(o.Size)
	return s, nil
}
