package endpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestPlacedPingPong plays perftest's write_lat with the placement
// notification instead of polling: each side RDMA Writes a message of
// several segments into the other's region, then waits for the other's
// Write and checks every octet of it. Under go test -race, a read of the
// region not ordered after the engine's copies is reported; the octets
// must be the whole of the latest Write, and each wait must see exactly
// one more Write.
func TestPlacedPingPong(t *testing.T) {
	const size, n = 100_000, 60
	cl, sv := connect(t, pairOpts{})
	// Each region: [0,size) is written from, [size,2size) is the peer's.
	cmr, _ := cl.reg(t, 2*size, AccessAll)
	smr, _ := sv.reg(t, 2*size, AccessAll)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// play is one side: the client writes message k from seed 2k, the
	// server answers it from seed 2k+1.
	play := func(s *side, mr, rem *MR, client bool) error {
		var gen uint64
		buf := mr.Buf()
		send := func(seed uint64) error {
			fillRand(buf[:size], seed)
			if _, err := s.qp.PostSend(SendWR{Opcode: OpWrite, Signaled: true, SGL: []SGE{mr.SGE(0, size)},
				RemoteAddr: rem.Addr() + size, RKey: rem.STag()}); err != nil {
				return err
			}
			var wc [1]WorkCompletion
			if _, err := s.cq.Wait(ctx, wc[:]); err != nil || wc[0].Status != StatusSuccess {
				return fmt.Errorf("write completion %+v, %v", wc[0], err)
			}
			return nil
		}
		recv := func(seed uint64) error {
			g, err := mr.WaitPlaced(ctx, gen)
			if err != nil {
				return err
			}
			if g != gen+1 || mr.Placed() != g {
				return fmt.Errorf("generation %d after %d", g, gen)
			}
			gen = g
			w := make([]byte, size)
			fillRand(w, seed)
			if !bytes.Equal(buf[size:], w) {
				return fmt.Errorf("message %d: the region does not hold the peer's Write", seed)
			}
			mr.Sync() // our reads before the peer's next Write
			return nil
		}
		for k := uint64(1); k <= n; k++ {
			var err error
			if client {
				if err = send(2 * k); err == nil {
					err = recv(2*k + 1)
				}
			} else if err = recv(2 * k); err == nil {
				err = send(2*k + 1)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- play(sv, smr, cmr, false) }()
	if err := play(cl, cmr, smr, true); err != nil {
		t.Fatalf("client: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("server: %v", err)
	}
	if cmr.Placed() != n || smr.Placed() != n {
		t.Fatalf("placed %d and %d Writes, want %d", cmr.Placed(), smr.Placed(), n)
	}
	// A generation already passed is returned at once.
	if g, err := smr.WaitPlaced(ctx, n-1); g != n || err != nil {
		t.Fatalf("WaitPlaced(%d) = %d, %v", n-1, g, err)
	}
}

// TestPlacedRejected: a Write the receiver rejects advances nothing, not
// even when its earlier segments were placed (one that runs past the
// region's end), and a waiter is not woken by it.
func TestPlacedRejected(t *testing.T) {
	const size = 100_000
	for _, tc := range []struct {
		name string
		acc  Access // the target's rights
		len  int    // octets written from its start
	}{
		{"rights", AccessLocalWrite | AccessLocalRead | AccessRemoteRead, 16},
		{"bounds", AccessAll, size + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, sv := connect(t, pairOpts{})
			cmr, _ := cl.reg(t, size+1, AccessAll)
			ok, _ := sv.reg(t, 64, AccessAll)
			dst, _ := sv.reg(t, size, tc.acc)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			woke := make(chan error, 1)
			go func() {
				_, err := dst.WaitPlaced(ctx, 0)
				woke <- err
			}()
			// One Write that counts, into another region, then the rejected one.
			cl.qp.PostSend(SendWR{Opcode: OpWrite, Signaled: true, SGL: []SGE{cmr.SGE(0, 64)}, RemoteAddr: ok.Addr(), RKey: ok.STag()})
			cl.waitOK(t, OpWrite)
			cl.qp.PostSend(SendWR{Opcode: OpWrite, Signaled: true, SGL: []SGE{cmr.SGE(0, tc.len)}, RemoteAddr: dst.Addr(), RKey: dst.STag()},
				SendWR{Opcode: OpSend, Signaled: true})
			// The receiver's Terminate ends the client's QP: by then the
			// receiver has dealt with the Write.
			select {
			case <-cl.qp.Done():
			case <-ctx.Done():
				t.Fatal("the receiver took the Write")
			}
			if sv.qp.Err() == nil {
				t.Fatal("the receiver took the Write")
			}
			if got := ok.Placed(); got != 1 {
				t.Errorf("the valid Write: generation %d, want 1", got)
			}
			if got := dst.Placed(); got != 0 {
				t.Errorf("the rejected Write advanced the generation to %d", got)
			}
			cancel()
			if err := <-woke; !errors.Is(err, context.Canceled) {
				t.Errorf("the waiter returned %v, want only its context's end", err)
			}
		})
	}
}
