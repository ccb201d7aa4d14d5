package endpoint

import (
	"context"
	"sync"
	"sync/atomic"
)

// Placement notification: how the local user learns that a peer's RDMA
// Write was placed into a region, without a completion.
//
// An RDMA Write completes nothing at its Data Sink (RFC 5040 §4.8): with
// verbs, the ULP sees tagged placement only through a later message's
// completion, or by polling the buffer itself (perftest's write_lat polls
// the last octet). Polling memory that another goroutine writes is a data
// race in Go, so the receive engine publishes each placed Write instead:
// it advances the region's placement generation after it copied a Write's
// last segment (DDP L bit set) into it, and wakes whoever waits.

// placed is a region's placement generation and its waiters.
type placed struct {
	gen  atomic.Uint64
	mu   sync.Mutex
	wake chan struct{} // closed at the next advance; nil while no one waits
}

// advance publishes the Write whose last segment the receive engine has
// just placed: the atomic Add orders every octet it placed before it.
func (p *placed) advance() {
	p.gen.Add(1)
	p.mu.Lock()
	if p.wake != nil {
		close(p.wake)
		p.wake = nil
	}
	p.mu.Unlock()
}

// Placed returns the region's placement generation: the count of inbound
// RDMA Writes whose last segment (DDP L bit) the receive engine placed
// into it, through its STag, since it was registered. A Write that was
// rejected (wrong STag, rights, bounds, an invalidated or deregistered
// region, a Write disabled on the QP), a zero-length Write, and RDMA Read
// Responses, which complete their Read instead, do not count.
//
// Memory model: when Placed (or WaitPlaced) returns a generation g, every
// octet the receive engine placed into the region for the g Writes it
// counts happens before the caller's next accesses (the engine advances
// the generation with an atomic operation after its last copy). So the
// application may read the region then without a data race, as a verbs
// application polls its buffer for the last octet of a peer's Write.
// Nothing more is promised: octets of a Write whose last segment has not
// been placed yet, or of a later Write, may be written concurrently; the
// application must know (as perftest's ping-pong does) that the peer
// writes nothing more until it is answered. (Segments are placed in TCP
// order, so a Write's earlier segments were placed before its last.) Before the
// application lets the peer write the region again, it calls Sync after
// its reads (see Sync), so that they happen before the engine's next
// copy.
//
// For a memory window, the window's own MR counts the Writes placed
// through the window's STag; its region's MR does not.
func (mr *MR) Placed() uint64 { return mr.placed.gen.Load() }

// WaitPlaced waits until the region's placement generation (Placed) is
// beyond after, and returns it: WaitPlaced(ctx, g) returns as soon as one
// more Write than the g already seen was placed. The guarantee of Placed
// holds for the generation returned. It returns ctx's error, and the
// generation as it was, when ctx ends first; a region that is
// invalidated or deregistered simply gets no more Writes.
func (mr *MR) WaitPlaced(ctx context.Context, after uint64) (uint64, error) {
	p := &mr.placed
	for {
		if g := p.gen.Load(); g > after {
			return g, nil
		}
		p.mu.Lock()
		if p.wake == nil {
			p.wake = make(chan struct{})
		}
		w := p.wake
		p.mu.Unlock()
		// An advance that came before the channel existed is seen here;
		// one after it closes the channel.
		if g := p.gen.Load(); g > after {
			return g, nil
		}
		select {
		case <-w:
		case <-ctx.Done():
			return p.gen.Load(), ctx.Err()
		}
	}
}
