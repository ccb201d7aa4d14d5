package endpoint

import (
	"errors"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
)

// watchdog fails the test, and runs unblock, if the test is still running
// after d: a hang becomes a failure instead of a CI timeout. It is not a
// timing assertion: d is far beyond what the work takes.
func watchdog(t *testing.T, d time.Duration, what string, unblock func()) (stop func()) {
	tm := time.AfterFunc(d, func() {
		t.Errorf("watchdog: %s did not return within %v", what, d)
		unblock()
	})
	return func() { tm.Stop() }
}

// TestPostSendNeverBlocks: a post verb queues work and never waits for the
// network (V00 §8.1; issue 17). The peer never reads, so the socket fills
// during the first Write; every PostSend must still return at once, up to
// the SQ depth, then ErrQueueFull. Then the QP is destroyed cleanly and
// every WR completes as Flushed.
func TestPostSendNeverBlocks(t *testing.T) {
	const depth = 4
	const size = 32 << 20 // far beyond loopback's socket buffers
	var mr *MR
	r, sv, _ := rawClient(t, Config{}, v2Req(false, false), QPAttr{SQDepth: depth}, func(sv *side) {
		mr, _ = sv.reg(t, size, AccessAll)
	})
	r.send(tagged(decode.OpWrite, 0, 0, true, nil)) // the first FPDU opens the Responder's gate
	for i := 0; !sv.qp.gateOpenNow(); i++ {
		if i == 2000 {
			t.Fatal("the Responder's gate did not open")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// If a post blocks in a socket write, the watchdog resets the peer,
	// which ends the write, and the test fails.
	stop := watchdog(t, 60*time.Second, "PostSend to a peer that does not read", func() {
		if tc, ok := r.c.(*netTCPConn); ok {
			tc.SetLinger(0)
		}
		r.c.Close()
	})
	for i := 0; i <= depth; i++ {
		wr := SendWR{WRID: uint64(i), Opcode: OpWrite, SGL: []SGE{mr.SGE(0, size)}, RKey: 0x100, Signaled: true}
		n, err := sv.qp.PostSend(wr)
		if i < depth && (n != 1 || err != nil) {
			t.Fatalf("PostSend %d: n %d, %v", i, n, err)
		}
		if i == depth && (n != 0 || !errors.Is(err, ErrQueueFull)) {
			t.Fatalf("PostSend beyond the SQ depth: n %d, %v; want ErrQueueFull", n, err)
		}
	}
	stop()
	if sv.qp.Counters().TxWrites == 0 {
		t.Fatalf("no Write was started")
	}
	if st := sv.qp.State(); st != StateRTS {
		t.Fatalf("QP %v after the posts (err %v)", st, sv.qp.Err())
	}
	stop = watchdog(t, 60*time.Second, "QP.Destroy", func() { r.c.Close() })
	if err := sv.qp.Destroy(); err != nil {
		t.Fatal(err)
	}
	stop()
	seen := map[uint64]bool{}
	var wc [depth + 1]WorkCompletion
	for k := sv.cq.Poll(wc[:]); k > 0; k = sv.cq.Poll(wc[:]) {
		for _, c := range wc[:k] {
			if c.Status != StatusFlushed || c.Opcode != OpWrite {
				t.Errorf("WR %d: %v %v, want a flushed Write", c.WRID, c.Opcode, c.Status)
			}
			seen[c.WRID] = true
		}
	}
	if len(seen) != depth {
		t.Fatalf("%d WRs completed, want %d", len(seen), depth)
	}
}

// gateOpenNow reports whether the Responder may send (its first FPDU came).
func (qp *QP) gateOpenNow() bool {
	qp.mu.Lock()
	defer qp.mu.Unlock()
	return qp.gateOpen
}
