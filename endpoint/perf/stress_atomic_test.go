package perf

import (
	"strings"
	"testing"
	"time"
)

// TestStressFindsAtomicCorruption: when every word of the server region
// differs from the seed's pattern, every atomic's original value differs
// from the shadow's, and the run says so.
func TestStressFindsAtomicCorruption(t *testing.T) {
	ts := startServer(t, true, Limits{}, nil)
	ts.srv.stressHook = func(region []byte) {
		for i := 0; i < len(region); i += 8 {
			region[i] ^= 0x01
		}
	}
	sum, tr, errs := stressRun(t, ts, 11, time.Minute, 100)
	atomics := 0
	for _, ops := range tr {
		for _, o := range ops {
			if isAtomic(o.op) {
				atomics++
			}
		}
	}
	if atomics == 0 || sum.Errors[ErrAtomicData] < uint64(atomics) || !strings.Contains(errs, "atomic-data: ") {
		t.Fatalf("%d atomics, errors %v", atomics, sum.Errors)
	}
}
