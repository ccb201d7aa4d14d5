package perf

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iwkit/iwkit/endpoint"
)

type traced struct {
	op        endpoint.Opcode
	size, off int
}

func stressRun(t *testing.T, ts *testServer, seed uint64, d time.Duration, ops int) (StressSummary, map[int][]traced, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	tr := map[int][]traced{}
	errs := &syncBuf{}
	sum, err := RunStress(ctx, TCPDialer(ts.addr), StressOptions{Seed: seed, Conns: 4, Window: 8, MaxSize: 16384, Region: 256 << 10,
		Duration: d, Ops: ops, Errors: errs, Config: endpoint.Config{CRC: true},
		trace: func(c int, op endpoint.Opcode, size, off int) {
			mu.Lock()
			tr[c] = append(tr[c], traced{op, size, off})
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	return sum, tr, errs.String()
}

// TestStress: a clean run finds no error, exercises every operation, and
// a seed repeats the same operations.
func TestStress(t *testing.T) {
	ts := startServer(t, true, Limits{}, nil)
	sum, tr1, errs := stressRun(t, ts, 42, 700*time.Millisecond, 0)
	if sum.TotalErrors() != 0 || errs != "" || sum.Terminates != 0 {
		t.Fatalf("errors %v %q", sum.Errors, errs)
	}
	for _, k := range stressOps {
		if sum.Ops[k] == 0 {
			t.Fatalf("no %s: %+v", k, sum)
		}
	}
	if sum.Octets == 0 || sum.Conns != 4 {
		t.Fatalf("%+v", sum)
	}
	var b strings.Builder
	sum.Format(&b)
	if !strings.Contains(b.String(), "seed 42") || !strings.Contains(b.String(), "errors                0") {
		t.Fatalf("summary:\n%s", b.String())
	}
	_, tr1, _ = stressRun(t, ts, 42, time.Minute, 60)
	_, tr2, _ := stressRun(t, ts, 42, time.Minute, 60)
	_, tr3, _ := stressRun(t, ts, 43, time.Minute, 60)
	for c := 0; c < 4; c++ {
		if len(tr1[c]) != 60 || len(tr2[c]) != 60 {
			t.Fatalf("conn %d: %d and %d operations, want 60", c, len(tr1[c]), len(tr2[c]))
		}
		for i := range tr1[c] {
			if tr1[c][i] != tr2[c][i] {
				t.Fatalf("seed 42, conn %d, op %d: %+v then %+v", c, i, tr1[c][i], tr2[c][i])
			}
		}
	}
	same := 0
	for i := 0; i < min(len(tr1[0]), len(tr3[0]), 50); i++ {
		if tr1[0][i] == tr3[0][i] {
			same++
		}
	}
	if same > 10 {
		t.Fatalf("seeds 42 and 43 made %d of the same first operations", same)
	}
}

// TestStressFindsCorruption: a server region changed behind the client's
// back makes Reads fail verification, reported as found.
func TestStressFindsCorruption(t *testing.T) {
	ts := startServer(t, true, Limits{}, nil)
	ts.srv.stressHook = func(region []byte) {
		for i := 0; i < len(region); i += 512 {
			region[i] ^= 0xff // a faulty peer: not the seed's pattern
		}
	}
	sum, _, errs := stressRun(t, ts, 7, time.Minute, 200)
	if sum.Errors[ErrReadData] == 0 || !strings.Contains(errs, "read-data: Read of") {
		t.Fatalf("corruption not found: %v %q", sum.Errors, errs)
	}
}

func TestStressLimits(t *testing.T) {
	// Each connection asks for 640 KiB: one fits in 1 MiB, the others
	// find the server busy; alone, one is too large for 512 KiB.
	ts := startServer(t, true, Limits{MaxMem: 1 << 20}, nil)
	sum, _, errs := stressRun(t, ts, 1, 1500*time.Millisecond, 0) // long enough to overlap the others' dials
	if sum.Errors[ErrConnection] != 3 || !strings.Contains(errs, "refused: busy") {
		t.Fatalf("%v %q", sum.Errors, errs)
	}
	ts = startServer(t, true, Limits{MaxMem: 512 << 10}, nil)
	sum, _, errs = stressRun(t, ts, 1, 100*time.Millisecond, 0)
	if sum.Errors[ErrConnection] != 4 || !strings.Contains(errs, "655360 octets of buffers asked, above this server's limit of 524288") {
		t.Fatalf("%v %q", sum.Errors, errs)
	}
}

// Stress sends messages up to what -s says, not at most 64 KiB (issue
// 31, broken item 4).
func TestStressHonoursMaxSize(t *testing.T) {
	ts := startServer(t, false, Limits{}, &endpoint.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	largest := 0
	const maxSize = 1 << 20
	sum, err := RunStress(ctx, TCPDialer(ts.addr), StressOptions{Seed: 7, Conns: 2, Window: 4, MaxSize: maxSize, Ops: 200,
		trace: func(c int, op endpoint.Opcode, size, off int) {
			mu.Lock()
			largest = max(largest, size)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.TotalErrors() != 0 {
		t.Fatalf("errors: %v", sum.Errors)
	}
	if largest <= 64<<10 || largest > maxSize {
		t.Fatalf("largest message %d octets with -s %d", largest, maxSize)
	}
}
