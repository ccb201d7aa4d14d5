package reassembly

import "math/bits"

// pool hands out the buffers every flow needs (out-of-order segments,
// FPDUs that span segments, the resync window, the retransmission history)
// from per-size free lists, and keeps the total within a budget. Buffers come
// in power-of-two size classes; returning and taking them again is how the
// steady state stays free of allocations.
type pool struct {
	budget    int64 // bytes that may be handed out at once
	inUse     int64 // bytes handed out now (capacity)
	peak      int64
	free      [nClasses][][]byte
	freeBytes int64
	freeMax   int64 // cap on bytes kept in the free lists
	denied    uint64
}

const (
	minClassShift = 8  // 256 octets
	maxClassShift = 20 // 1 MiB
	nClasses      = maxClassShift - minClassShift + 1
	// maxBuf is the largest buffer the pool hands out.
	maxBuf = 1 << maxClassShift
)

func classOf(n int) int {
	if n <= 1<<minClassShift {
		return 0
	}
	return bits.Len(uint(n-1)) - minClassShift
}

// get returns a buffer of length 0 and capacity at least n, or nil when the
// budget has no room for it (or n > maxBuf).
func (p *pool) get(n int) []byte {
	if n > maxBuf {
		p.denied++
		return nil
	}
	c := classOf(n)
	size := int64(1) << (c + minClassShift)
	if p.inUse+size > p.budget {
		p.denied++
		return nil
	}
	p.inUse += size
	if p.inUse > p.peak {
		p.peak = p.inUse
	}
	if l := len(p.free[c]); l > 0 {
		b := p.free[c][l-1]
		p.free[c][l-1] = nil
		p.free[c] = p.free[c][:l-1]
		p.freeBytes -= size
		return b[:0]
	}
	return make([]byte, 0, size)
}

// put returns a buffer obtained from get. nil is ignored.
func (p *pool) put(b []byte) {
	if b == nil {
		return
	}
	size := int64(cap(b))
	c := classOf(cap(b))
	if int64(1)<<(c+minClassShift) != size {
		return // not one of ours
	}
	p.inUse -= size
	if p.freeBytes+size > p.freeMax {
		return // let the GC have it
	}
	p.free[c] = append(p.free[c], b[:0])
	p.freeBytes += size
}

// grow returns a buffer holding b's content with capacity at least n,
// returning b to the pool if it had to move. It returns nil (and keeps b)
// when the budget has no room.
func (p *pool) grow(b []byte, n int) []byte {
	if n <= cap(b) {
		return b
	}
	nb := p.get(n)
	if nb == nil {
		return nil
	}
	nb = append(nb, b...)
	p.put(b)
	return nb
}
