package perf

import (
	"fmt"

	"github.com/iwkit/iwkit/endpoint"
)

// atomic_bw's operations, as perftest's -A names them (ib_atomic_bw).
const (
	FetchAndAdd = "FETCH_AND_ADD"
	CmpAndSwap  = "CMP_AND_SWAP"
)

// AtomicSize is the size of every atomic_bw message: RFC 7306 atomics work
// on 64 bits (§5.1), and ib_atomic_bw reports 8 octets whatever -s says.
const AtomicSize = 8

// normalizeAtomic fills atomic_bw's defaults in.
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
// "Atomic FETCH_AND_ADD BW Test".
func (r Result) title() string {
	if r.Test != AtomicBW {
		return Title(r.Test, r.Bidir)
	}
	t := "Atomic " + r.Atomic + " "
	if r.Bidir {
		t += "Bidirectional "
	}
	return t + "BW Test"
}
