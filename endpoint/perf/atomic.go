package perf

import (
	"fmt"

	"github.com/iwkit/iwkit/endpoint"
)

// AtomicLat is ib_atomic_lat's test: one atomic at a time, its round trip
// the sample.
const AtomicLat = "atomic_lat"

// isAtomicTest: atomic_bw or atomic_lat.
func isAtomicTest(test string) bool { return test == AtomicBW || test == AtomicLat }

// The atomic tests' operations, as perftest's -A names them (ib_atomic_bw,
// ib_atomic_lat).
const (
	FetchAndAdd = "FETCH_AND_ADD"
	CmpAndSwap  = "CMP_AND_SWAP"
)

// AtomicSize is the size of every atomic test's message: RFC 7306 atomics
// work on 64 bits (§5.1), and ib_atomic_bw reports 8 octets whatever -s
// says.
const AtomicSize = 8

// normalizeAtomic fills the atomic tests' defaults in.
func (o *Options) normalizeAtomic() error {
	switch o.Atomic {
	case "":
		o.Atomic = FetchAndAdd
	case FetchAndAdd, CmpAndSwap:
	default:
		return fmt.Errorf("perf: atomic type %q is not %s or %s", o.Atomic, FetchAndAdd, CmpAndSwap)
	}
	o.Size = AtomicSize
	return nil
}

// atomicOpcode is the work request of atomic type a.
func atomicOpcode(a string) endpoint.Opcode {
	if a == CmpAndSwap {
		return endpoint.OpAtomicCmpSwap
	}
	return endpoint.OpAtomicFetchAdd
}

// atomicArgs are perftest's operands: add 1 (ATOMIC_ADD_VALUE); compare 0
// and swap 0 (ATOMIC_SWAP_VALUE), which leaves a zeroed target as it was.
func atomicArgs(a string) endpoint.AtomicArgs {
	switch a {
	case FetchAndAdd:
		return endpoint.FetchAdd(1)
	case CmpAndSwap:
		return endpoint.CmpSwap(0, 0)
	}
	return endpoint.AtomicArgs{}
}

// closingLen is the length of the signaled request that closes a duration
// run: none, but an atomic is always 8 octets.
func closingLen(o *Options) int {
	if o.Test == AtomicBW {
		return AtomicSize
	}
	return 0
}

// title is perftest's banner title, which names the atomic type:
// "Atomic FETCH_AND_ADD BW Test", "Atomic CMP_AND_SWAP Latency Test".
func (r Result) title() string {
	t := Title(r.Test, r.Bidir)
	if isAtomicTest(r.Test) {
		t = "Atomic " + r.Atomic + t[len("Atomic"):]
	}
	return t
}
