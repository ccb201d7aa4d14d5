package endpoint

import (
	"context"
	"testing"
	"time"
)

// TestEarlyResponder: a Responder with EarlyResponder sends first, with
// nothing from the Initiator (perftest's write_lat server), and its Write
// is placed; without it, the same Write goes once the Initiator's first
// FPDU came (RFC 5044 §7.1.2 rule 4). (Without EarlyResponder, the first
// case waits for ever: TestPerftestLoopback/write_lat failed so.)
func TestEarlyResponder(t *testing.T) {
	for _, early := range []bool{true, false} {
		cl, sv := connect(t, pairOpts{server: Config{EarlyResponder: early}})
		cmr, _ := cl.reg(t, 64, AccessAll)
		smr, _ := sv.reg(t, 64, AccessAll)
		smr.Buf()[63] = 1
		if _, err := sv.qp.PostSend(SendWR{Opcode: OpWrite, SGL: []SGE{smr.SGE(0, 64)}, RemoteAddr: cmr.Addr(), RKey: cmr.STag()}); err != nil {
			t.Fatal(err)
		}
		if !early {
			// The Initiator's first FPDU opens the gate: a Write of its own.
			if _, err := cl.qp.PostSend(SendWR{Opcode: OpWrite, SGL: []SGE{cmr.SGE(0, 1)}, RemoteAddr: smr.Addr(), RKey: smr.STag()}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			if _, err := smr.WaitPlaced(ctx, 0); err != nil {
				t.Fatal(err)
			}
			cancel()
			smr.Sync()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		g, err := cmr.WaitPlaced(ctx, 0)
		cancel()
		if err != nil || g != 1 || cmr.Buf()[63] != 1 {
			t.Fatalf("early %v: the Responder's Write: generation %d, %v", early, g, err)
		}
	}
}
