package perf

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/iwkit/iwkit/endpoint"
)

// Atomics in the stress mix (RFC 7306). They target 8-aligned words of the
// same region as the Writes and Reads, and the client's shadow follows them
// in posting order: a connection's atomics are performed in the order they
// were sent (RFC 7306 §5.2.1 rules 6–7), and Reads and atomics are answered
// in QN 1 order (§7). So every atomic's returned value must equal the
// shadow's word before it, and Reads after it, and the final pass over
// every word an atomic touched, must see its result. A Write that overlaps
// an atomic in flight waits for it (its placement is not ordered with the
// atomic's execution, §7), as it waits for an overlapping Read.

// stressAtomic prepares an atomic on the word at a random 8-aligned offset
// and applies it to the shadow; so.expect is the original value the
// response must carry.
func stressAtomic(rng *rand.Rand, shadow []byte, so *stressOp, w *endpoint.SendWR) {
	ne := binary.NativeEndian // the target memory's byte order (RFC 7306 §5.1.1)
	so.size = 8
	so.off = 8 * rng.IntN(len(shadow)/8)
	orig := ne.Uint64(shadow[so.off:])
	so.expect = append([]byte(nil), shadow[so.off:so.off+8]...)
	next := orig
	if rng.IntN(2) == 0 {
		add := rng.Uint64N(1 << 20)
		so.op, w.Atomic = endpoint.OpAtomicFetchAdd, endpoint.FetchAdd(add)
		next = orig + add
	} else {
		cmp, swap := orig, rng.Uint64()
		if rng.IntN(3) == 0 {
			cmp = rng.Uint64() // almost surely a miss: the word stays
		}
		so.op, w.Atomic = endpoint.OpAtomicCmpSwap, endpoint.CmpSwap(cmp, swap)
		if cmp == orig {
			next = swap
		}
	}
	w.Opcode = so.op
	ne.PutUint64(shadow[so.off:], next)
}

func isAtomic(op endpoint.Opcode) bool {
	return op == endpoint.OpAtomicFetchAdd || op == endpoint.OpAtomicCmpSwap
}

// stressOps are the operation kinds a stress summary counts.
var stressOps = []string{"Send", "RDMAWrite", "RDMARead", "FetchAdd", "CmpSwap"}

// verifyWords Reads back the words at offs, Window at a time, and returns
// the offsets whose value differs from the shadow's: the final value of
// every word an atomic touched is the result of all of them.
func (p *peer) verifyWords(o *StressOptions, rem advert, shadow []byte, offs []int, next func() (endpoint.WorkCompletion, error)) ([]int, error) {
	var bad []int
	for len(offs) > 0 {
		n := min(len(offs), o.Window)
		for i, off := range offs[:n] {
			if _, err := p.qp.PostSend(endpoint.SendWR{WRID: uint64(i), Opcode: endpoint.OpRead, Signaled: true,
				SGL: []endpoint.SGE{p.buf.SGE(i*o.MaxSize, 8)}, RemoteAddr: rem.Addr + uint64(off), RKey: endpoint.STag(rem.RKey)}); err != nil {
				return bad, err
			}
		}
		for k := 0; k < n; {
			wc, err := next()
			if err != nil {
				return bad, err
			}
			if wc.Opcode != endpoint.OpRead {
				continue
			}
			k++
			off := offs[wc.WRID]
			if firstDiff(p.buf.Buf()[int(wc.WRID)*o.MaxSize:int(wc.WRID)*o.MaxSize+8], shadow[off:off+8]) >= 0 {
				bad = append(bad, off)
			}
		}
		offs = offs[n:]
	}
	return bad, nil
}
