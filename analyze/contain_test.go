package analyze

import (
	"bufio"
	"io"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/finding"
)

// kept is what a test keeps of a record (records are reused).
type kept struct {
	kind  Kind
	frame int
	conn  uint64
	ulp   bool
	code  finding.Code
	msg   string
}

type panicKeeper struct {
	out   *[]kept
	panic func(r *Record) // the consumer's own bug, when set
}

func (k panicKeeper) Record(r *Record) {
	if k.panic != nil {
		k.panic(r)
	}
	x := kept{kind: r.Kind, frame: r.Frame, ulp: r.ULP != nil, code: r.Finding.Code, msg: r.Finding.Message}
	if r.Conn != nil {
		x.conn = r.Conn.ID
	}
	*k.out = append(*k.out, x)
}

// runKept runs the capture with containment in mode and returns the
// records in order (one consumer's order whatever the workers: the
// shards' consumers append to their own slices, merged by frame order is
// not needed here, so multi-worker runs count, not order).
func runKept(t *testing.T, file string, mode PanicMode, workers int, hook func(s *site), consumerPanic func(r *Record)) ([]kept, *Report) {
	t.Helper()
	panicHook = hook
	defer func() { panicHook = nil }()
	src, _, err := OpenFiles([]string{file})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	outs := make([][]kept, workers)
	rep, err := RunOrdered(src, Config{Workers: workers, Panics: mode}, Output{W: bufio.NewWriter(io.Discard)}, func(shard int, _ *Out) Consumer {
		return panicKeeper{out: &outs[shard], panic: consumerPanic}
	})
	if err != nil {
		t.Fatal(err)
	}
	var all []kept
	for _, o := range outs {
		all = append(all, o...)
	}
	return all, rep
}

const containCapture = "../testdata/ulp/gen_nvme.pcap"

type injected struct{}

func (injected) String() string { return "injected decoder bug" }

// A panic in the ULP decoder becomes one internal.decoder_panic finding on
// the PDU's frame; the connection's ULP decoding stops there, everything
// else (PDUs, the tracker's operations, the other connections) goes on.
func TestContainULPPanic(t *testing.T) {
	base, brep := runKept(t, containCapture, PanicCrash, 1, nil, nil)
	if brep.Panics != 0 {
		t.Fatalf("baseline: %d panics", brep.Panics)
	}
	// The fifth PDU the ULP decoded (past the handshake): its connection
	// and frame.
	var victim kept
	n := 0
	for _, r := range base {
		if r.kind == KindPDU && r.ulp {
			if n++; n == 5 {
				victim = r
			}
		}
	}
	if victim.frame == 0 {
		t.Fatal("fewer than 5 ULP messages in " + containCapture)
	}
	count := func(rs []kept, f func(kept) bool) int {
		c := 0
		for _, r := range rs {
			if f(r) {
				c++
			}
		}
		return c
	}
	for _, workers := range []int{1, 2} {
		got, rep := runKept(t, containCapture, PanicContain, workers, func(s *site) {
			if s.ulp != nil && s.frame == victim.frame {
				panic(injected{})
			}
		}, nil)
		if rep.Panics != 1 {
			t.Fatalf("%d workers: Report.Panics %d, want 1", workers, rep.Panics)
		}
		var f []kept
		for _, r := range got {
			if r.code == finding.InternalDecoderPanic {
				f = append(f, r)
			}
		}
		if len(f) != 1 || f[0].frame != victim.frame || workers == 1 && f[0].conn != victim.conn ||
			!strings.Contains(f[0].msg, "ulp (nvme)") || !strings.Contains(f[0].msg, "stream offset") || !strings.Contains(f[0].msg, "injected decoder bug") {
			t.Fatalf("%d workers: findings %+v, want one internal.decoder_panic at frame %d naming the layer, the offset and the panic", workers, f, victim.frame)
		}
		// The ULP messages are the baseline's but for the victim
		// connection's from the panic on (connection numbers are the
		// shard's own with several workers: count, do not match).
		lost := count(base, func(r kept) bool {
			return r.kind == KindPDU && r.ulp && r.conn == victim.conn && r.frame >= victim.frame
		})
		if a, b := count(got, func(r kept) bool { return r.kind == KindPDU && r.ulp }), count(base, func(r kept) bool { return r.kind == KindPDU && r.ulp }); lost == 0 || a != b-lost {
			t.Errorf("%d workers: %d ULP messages, want %d (%d lost on the connection from the panic on)", workers, a, b-lost, lost)
		}
		for _, k := range []Kind{KindPDU, KindOperation, KindClosed} {
			if a, b := count(got, func(r kept) bool { return r.kind == k }), count(base, func(r kept) bool { return r.kind == k }); a != b {
				t.Errorf("%d workers: %d %v records, want %d as without the panic", workers, a, k, b)
			}
		}
	}
}

// A panic in the tracker stops the tracker for that connection only: the
// PDUs and their ULP messages still come out.
func TestContainTrackPanic(t *testing.T) {
	base, _ := runKept(t, containCapture, PanicCrash, 1, nil, nil)
	var victim kept
	n := 0
	for _, r := range base {
		if r.kind == KindPDU {
			if n++; n == 5 {
				victim = r
			}
		}
	}
	got, rep := runKept(t, containCapture, PanicContain, 1, func(s *site) {
		if s.layer == "track" && s.what == "the PDU" && s.frame == victim.frame {
			panic("track bug")
		}
	}, nil)
	if rep.Panics != 1 || rep.Worst != int(finding.Error) {
		t.Fatalf("Report.Panics %d, Worst %d: want 1 and error", rep.Panics, rep.Worst)
	}
	pdus, ulps, found := 0, 0, 0
	for _, r := range got {
		switch {
		case r.kind == KindPDU:
			pdus++
			if r.ulp {
				ulps++
			}
		case r.code == finding.InternalDecoderPanic:
			found++
			if r.frame != victim.frame || !strings.HasPrefix(r.msg, "track decoder panicked on the PDU at stream offset") || !strings.Contains(r.msg, "track bug") {
				t.Errorf("finding at frame %d: %q", r.frame, r.msg)
			}
		case r.kind == KindOperation && r.conn == victim.conn && r.frame > victim.frame:
			t.Errorf("operation at frame %d after the tracker of its connection panicked", r.frame)
		}
	}
	bp, bu := 0, 0
	for _, r := range base {
		if r.kind == KindPDU {
			bp++
			if r.ulp {
				bu++
			}
		}
	}
	if found != 1 || pdus != bp || ulps != bu {
		t.Errorf("%d panic findings, %d PDUs (%d with ULP): want 1, %d (%d)", found, pdus, ulps, bp, bu)
	}
}

// Containment never hides a panic from a test: under the default mode a
// test binary sees it, and a consumer's panic is never contained.
func TestContainmentNeverHidesFromTests(t *testing.T) {
	crashes := func(name string, mode PanicMode, hook func(*site), cp func(*Record)) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: the panic was contained", name)
			}
		}()
		runKept(t, containCapture, mode, 1, hook, cp)
	}
	crashes("PanicAuto in a test binary", PanicAuto, func(s *site) {
		if s.ulp != nil {
			panic(injected{})
		}
	}, nil)
	// The consumer panics on an operation record, which the tracker hands
	// out from inside a guarded call.
	crashes("a consumer's panic", PanicContain, nil, func(r *Record) {
		if r.Kind == KindOperation {
			panic("consumer bug")
		}
	})
}

// benchPanics is the containment mode of runBulk's runs.
var benchPanics PanicMode

// BenchmarkContain is BenchmarkRun's four-connection capture with the
// containment of decoder panics off (as in every test binary) and on (as
// in the programs): what the guard around each tracker and ULP call costs.
func BenchmarkContain(b *testing.B) {
	data, frames := bulkCapture(b, 4, 600)
	for _, m := range []struct {
		name string
		mode PanicMode
	}{{"off", PanicCrash}, {"on", PanicContain}} {
		b.Run(m.name, func(b *testing.B) {
			benchPanics = m.mode
			defer func() { benchPanics = PanicAuto }()
			runBulk(b, data, frames, 1, false, false)
		})
	}
}
