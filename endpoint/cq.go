package endpoint

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// CQ is a completion queue (V00 §5.3, §8.2.4–8.2.5). Completions are
// appended by the QPs' engines and reaped with Poll; Wait blocks for the
// next one; ReqNotify + WaitNotify give the verbs' one-shot completion
// notification, for the next completion or only the next solicited one
// (a Send with Solicited Event consumed a receive, or any error completion).
type CQ struct {
	dev   *Device
	depth int

	mu        sync.Mutex
	q         []WorkCompletion // ring
	head, n   int
	overflow  bool
	armed     uint8 // 0 off, 1 next completion, 2 next solicited
	fired     bool
	wake      chan struct{} // Wait
	notify    chan struct{} // WaitNotify
	destroyed bool
	users     atomic.Int32 // QPs using the CQ
}

// CreateCQ creates a CQ holding at least depth completions.
func (d *Device) CreateCQ(depth int) (*CQ, error) {
	if depth <= 0 {
		depth = 1
	}
	if depth > d.attr.MaxCQE {
		return nil, ErrTooManyQPs
	}
	return &CQ{dev: d, depth: depth, q: make([]WorkCompletion, depth),
		wake: make(chan struct{}, 1), notify: make(chan struct{}, 1)}, nil
}

// Depth is the number of completions the CQ holds.
func (cq *CQ) Depth() int {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	return cq.depth
}

// push appends wc; it reports false on overflow (the QP then fails, other
// QPs and CQs are not affected, V00 §5.3).
func (cq *CQ) push(wc WorkCompletion) bool {
	cq.mu.Lock()
	if cq.n == cq.depth || cq.destroyed {
		first := !cq.overflow && !cq.destroyed
		cq.overflow = true
		cq.mu.Unlock()
		if first {
			// Unaffiliated (V00 Fig. 37, CQ overflow); from a goroutine
			// of its own, as the caller may hold a QP's lock that the
			// handler's verbs would need.
			go cq.dev.unaffiliated(AsyncEvent{Type: EventCQOverflow, CQ: cq, Err: ErrCQOverflow})
		}
		return false
	}
	cq.q[(cq.head+cq.n)%cq.depth] = wc
	cq.n++
	fire := false
	if cq.armed == 1 || cq.armed == 2 && (wc.Solicited || wc.Status != StatusSuccess) {
		cq.armed = 0
		fire = true
	}
	cq.mu.Unlock()
	select {
	case cq.wake <- struct{}{}:
	default:
	}
	if fire {
		select {
		case cq.notify <- struct{}{}:
		default:
		}
	}
	return true
}

// Poll moves up to len(wc) completions into wc, oldest first, and returns
// how many.
func (cq *CQ) Poll(wc []WorkCompletion) int {
	cq.mu.Lock()
	k := 0
	for k < len(wc) && cq.n > 0 {
		wc[k] = cq.q[cq.head]
		cq.q[cq.head] = WorkCompletion{}
		cq.head = (cq.head + 1) % cq.depth
		cq.n--
		k++
	}
	cq.mu.Unlock()
	return k
}

// Len is the number of completions waiting.
func (cq *CQ) Len() int {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	return cq.n
}

// Overflowed reports whether a completion was ever lost to a full CQ.
func (cq *CQ) Overflowed() bool {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	return cq.overflow
}

// Wait polls into wc and, when nothing is there, blocks until at least one
// completion arrives or ctx ends.
func (cq *CQ) Wait(ctx context.Context, wc []WorkCompletion) (int, error) {
	for {
		if n := cq.Poll(wc); n > 0 {
			return n, nil
		}
		select {
		case <-cq.wake:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// ReqNotify arms the CQ once: the next completion (solicitedOnly false), or
// the next solicited or error completion (solicitedOnly true), makes
// WaitNotify return. Use poll → arm → poll to avoid missing one (V00 §8.2.5).
func (cq *CQ) ReqNotify(solicitedOnly bool) {
	cq.mu.Lock()
	if solicitedOnly {
		if cq.armed != 1 {
			cq.armed = 2
		}
	} else {
		cq.armed = 1
	}
	cq.mu.Unlock()
}

// WaitNotify blocks until an armed notification fires or ctx ends.
func (cq *CQ) WaitNotify(ctx context.Context) error {
	select {
	case <-cq.notify:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Notify is the channel a fired notification is delivered on (one value per
// firing), for use in a select.
func (cq *CQ) Notify() <-chan struct{} { return cq.notify }

// Resize changes the number of completions the CQ holds (V00 §5.3 Resize
// CQ). Completions waiting are kept; a depth below their number, or above
// the device's MaxCQE, is an immediate error and changes nothing.
func (cq *CQ) Resize(depth int) error {
	if depth <= 0 || depth > cq.dev.attr.MaxCQE {
		return fmt.Errorf("%w: CQ depth %d", ErrInvalidWR, depth)
	}
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.destroyed {
		return ErrClosed
	}
	if depth < cq.n {
		return fmt.Errorf("%w: %d completions waiting, more than %d", ErrResourceBusy, cq.n, depth)
	}
	q := make([]WorkCompletion, depth)
	for i := 0; i < cq.n; i++ {
		q[i] = cq.q[(cq.head+i)%cq.depth]
	}
	cq.q, cq.head, cq.depth = q, 0, depth
	return nil
}

// Destroy destroys the CQ (V00 §5.3 Destroy CQ); it fails while a QP that
// was not destroyed uses it.
func (cq *CQ) Destroy() error {
	if n := cq.users.Load(); n > 0 {
		return fmt.Errorf("%w: %d QPs use the CQ", ErrResourceBusy, n)
	}
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.destroyed {
		return ErrClosed
	}
	cq.destroyed = true
	cq.q, cq.n = nil, 0
	return nil
}
