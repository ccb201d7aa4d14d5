package endpoint

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// SRQAttr are the attributes of a shared receive queue (V00 §5.4).
type SRQAttr struct {
	MaxWR  int // receives it holds (1024, at most the device's MaxWR)
	MaxSGE int // SGEs per receive (the device's MaxSGE)
	// Limit arms the limit event at once (0: not armed); see SetLimit.
	Limit int
}

// SRQ is a shared receive queue: receives posted once, consumed by the
// Sends arriving on any QP created with it (QPAttr.SRQ), each receive by
// one message. Its buffers are checked against its PD; QP-scoped regions
// cannot serve it.
type SRQ struct {
	pd    *PD
	attr  SRQAttr
	mu    sync.Mutex
	rq    []*rqe
	limit int
	dead  bool
	users atomic.Int32
}

// CreateSRQ creates a shared receive queue on pd.
func (pd *PD) CreateSRQ(attr SRQAttr) (*SRQ, error) {
	d := pd.dev
	if attr.MaxWR <= 0 {
		attr.MaxWR = 1024
	}
	if attr.MaxSGE <= 0 {
		attr.MaxSGE = d.attr.MaxSGE
	}
	if attr.MaxWR > d.attr.MaxWR || attr.MaxSGE > d.attr.MaxSGE || attr.Limit < 0 || attr.Limit > attr.MaxWR {
		return nil, fmt.Errorf("%w: SRQ attributes %+v beyond the device's", ErrInvalidWR, attr)
	}
	return &SRQ{pd: pd, attr: attr, limit: attr.Limit}, nil
}

// SetLimit arms the SRQ limit event (V00 §5.4 Modify S-RQ): once fewer than
// n receives are posted, the device's AsyncEvent gets one
// EventSRQLimitReached and the limit disarms. 0 disarms it.
func (s *SRQ) SetLimit(n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return ErrClosed
	}
	if n < 0 || n > s.attr.MaxWR {
		return fmt.Errorf("%w: SRQ limit %d", ErrInvalidWR, n)
	}
	s.limit = n
	return nil
}

// Len is the number of receives posted and not yet taken by a message.
func (s *SRQ) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rq)
}

// PostRecv posts receives to the SRQ; each SGE must name Local Write
// memory of the SRQ's PD that no QP scope restricts.
func (s *SRQ) PostRecv(wrs ...RecvWR) (n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return 0, ErrClosed
	}
	for i := range wrs {
		wr := &wrs[i]
		if len(wr.SGL) > s.attr.MaxSGE {
			return n, fmt.Errorf("%w: %d SGEs > %d", ErrInvalidWR, len(wr.SGL), s.attr.MaxSGE)
		}
		if len(s.rq) >= s.attr.MaxWR {
			return n, ErrQueueFull
		}
		r, err := resolveRecv(s.pd, nil, wr)
		if err != nil {
			return n, err
		}
		s.rq = append(s.rq, r)
		n++
	}
	return n, nil
}

// take hands the oldest receive to a message; it reports whether the
// limit event fired.
func (s *SRQ) take() (r *rqe, fired bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.rq) == 0 {
		return nil, false
	}
	r = s.rq[0]
	s.rq[0] = nil
	s.rq = s.rq[1:]
	if s.limit > 0 && len(s.rq) < s.limit {
		s.limit = 0
		fired = true
	}
	return r, fired
}

// Destroy destroys the SRQ; it fails while a QP that was not destroyed
// uses it. Receives still posted are dropped without completions (they
// belong to no QP's CQ).
func (s *SRQ) Destroy() error {
	if n := s.users.Load(); n > 0 {
		return fmt.Errorf("%w: %d QPs use the SRQ", ErrResourceBusy, n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		return ErrClosed
	}
	s.dead, s.rq = true, nil
	return nil
}

// resolveRecv resolves a receive's scatter list: Local Write on regions of
// pd (and of qp's stream when qp is set; a QP-scoped region never serves an
// SRQ).
func resolveRecv(pd *PD, qp *QP, wr *RecvWR) (*rqe, error) {
	r := &rqe{wr: RecvWR{WRID: wr.WRID}}
	for _, sge := range wr.SGL {
		if sge.Length == 0 {
			continue // zero-length SGEs are not validated (V00 §8.1.1)
		}
		mr, b, e := pd.dev.checkPD(sge.LKey, pd, qp, AccessLocalWrite, sge.Addr, uint64(sge.Length))
		if e != accOK {
			return nil, fmt.Errorf("%w: receive SGE %v: %v", ErrInvalidWR, sge.LKey, e)
		}
		r.parts = append(r.parts, b)
		r.mrs = append(r.mrs, mr)
		r.keys = append(r.keys, sge.LKey)
		r.size += uint64(len(b))
	}
	return r, nil
}
