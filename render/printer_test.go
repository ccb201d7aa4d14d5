package render

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// appendSeconds must print what the float formatting it replaces prints.
func TestAppendSeconds(t *testing.T) {
	ds := []time.Duration{0, 1, 499, 500, 501, 999, 1000, 1499, 1500, 1501, 999999499, 999999500, 999999501,
		time.Second, 59*time.Second + 999999999, 1e6*time.Second - 1, 1e6 * time.Second, -1, -1500, 1<<63 - 1}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		ds = append(ds, time.Duration(r.Int64N(int64(2e6*time.Second))), time.Duration(r.Int64N(int64(10*time.Second))))
	}
	for _, d := range ds {
		got := string(appendSeconds(nil, d))
		want := strconv.FormatFloat(d.Seconds(), 'f', 6, 64)
		if got != want {
			t.Fatalf("appendSeconds(%d) = %s, want %s", int64(d), got, want)
		}
	}
}
