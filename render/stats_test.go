package render

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/track"
)

// TestLatencyApprox: percentiles from a histogram (past the exact budget)
// are marked "~" and the table says what the mark means; exact ones are
// not marked.
func TestLatencyApprox(t *testing.T) {
	lat := func(approx bool) track.Latency {
		return track.Latency{Count: 5000, Min: time.Millisecond, Max: 3 * time.Millisecond, Mean: 2 * time.Millisecond,
			P50: 2 * time.Millisecond, P90: 2 * time.Millisecond, P99: 3 * time.Millisecond, P999: 3 * time.Millisecond, Approx: approx}
	}
	for _, approx := range []bool{false, true} {
		rep := &analyze.Report{ConnStats: []track.ConnStats{{Conn: 1, ReadLatency: lat(approx)}}, Stats: track.Stats{ReadLatency: lat(approx)}}
		var b bytes.Buffer
		WriteStat(&b, rep, "", "latency")
		out := b.String()
		if got := strings.Count(out, "~2.00ms"); approx != (got == 4) || !approx && got != 0 {
			t.Errorf("approx %v: %d marked p50/p90 cells:\n%s", approx, got, out)
		}
		if approx != strings.Contains(out, "within 0.1% of the nearest-rank value") || strings.Contains(out, "~1.00ms") {
			t.Errorf("approx %v: the note or the exact min is wrong:\n%s", approx, out)
		}
	}
}
