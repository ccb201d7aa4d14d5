package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// Reading files under iwdump's own memory limit the collector is off (it
// runs only near the limit), unless GOGC says otherwise; without a limit
// of ours (--mem-limit 0, or GOMEMLIMIT set), or capturing live, GOGC is
// left alone.
func TestMemLimitTurnsGOGCOff(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	for _, c := range []struct {
		gogc, gomemlimit string
		limit            int
		live             bool
		want             int // GC percent after apply
	}{
		{limit: 64, want: -1},
		{limit: 64, live: true, want: 100},
		{gogc: "150", limit: 64, want: 100},
		{limit: 0, want: 100},
		{gomemlimit: "1GiB", limit: 64, want: 100},
	} {
		t.Setenv("GOGC", c.gogc)
		t.Setenv("GOMEMLIMIT", c.gomemlimit)
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
		limitOptions{memLimitMiB: c.limit}.apply(!c.live)
		if got := debug.SetGCPercent(100); got != c.want {
			t.Errorf("GOGC %q, GOMEMLIMIT %q, --mem-limit %d, live %v: GC percent %d, want %d", c.gogc, c.gomemlimit, c.limit, c.live, got, c.want)
		}
		wantLimit := int64(math.MaxInt64)
		if c.limit > 0 && c.gomemlimit == "" {
			wantLimit = int64(c.limit) << 20
		}
		if got := debug.SetMemoryLimit(math.MaxInt64); got != wantLimit {
			t.Errorf("GOGC %q, GOMEMLIMIT %q, --mem-limit %d: memory limit %d, want %d", c.gogc, c.gomemlimit, c.limit, got, wantLimit)
		}
	}
}
