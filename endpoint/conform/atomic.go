package conform

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/iwkit/iwkit/endpoint"
)

// The RFC 7306 cases. A target without the extensions must refuse each
// with Remote Operation Error / Unexpected OpCode (RFC 7306 §1.1; Linux
// siw does); one with them (Options.RFC7306) must answer atomics on the
// learned rping buffer with the right original values, leave it as it
// was, and refuse the faulty ones with the RFC 5040 §4.8 codes RFC 7306
// §8 names. The probe is the RFC's own: a FetchAdd of 0 changes nothing.
func atomicCases() []Case {
	unsupported := func(f func(c *conn) (string, error)) func(c *conn) (string, error) {
		return func(c *conn) (string, error) {
			if c.o.RFC7306 {
				return "the target supports RFC 7306 (--rfc7306)", nil
			}
			return f(c)
		}
	}
	supported := func(f func(c *conn) (string, error)) func(c *conn) (string, error) {
		return func(c *conn) (string, error) {
			if !c.o.RFC7306 {
				return "RFC 7306 support not agreed (--rfc7306)", nil
			}
			return f(c)
		}
	}
	// at posts one atomic on the learned buffer, off octets in.
	at := func(op endpoint.Opcode, a endpoint.AtomicArgs, key uint8, off uint64) func(c *conn) (string, error) {
		return func(c *conn) (string, error) {
			s, to, _ := c.stag()
			return "", c.post(c.atomic(op, s^endpoint.STag(key), to+off, a))
		}
	}
	return []Case{
		{ID: "rdmap-atomic-unsupported", Clause: "RFC 7306 §1.1, RFC 5040 §7.2 (RD-02)", Sent: "FetchAdd of 0 (the RFC's probe) on the learned buffer",
			needSTag: true, expect: term(0, 2, 0x06), run: unsupported(at(endpoint.OpAtomicFetchAdd, endpoint.FetchAdd(0), 0, 0))},
		{ID: "rdmap-immediate-unsupported", Clause: "RFC 7306 §1.1, §6 (RD-02)", Sent: "Immediate Data message",
			expect: term(0, 2, 0x06), run: unsupported(func(c *conn) (string, error) {
				return "", c.post(endpoint.SendWR{WRID: 70, Opcode: endpoint.OpImmData, Imm: 0x1706})
			})},
		{ID: "rdmap-atomic-fetchadd", Clause: "RFC 7306 §5.1.1, §5.2 (RD-26, RD-28)", Sent: "FetchAdd 0, +5, -5 on the learned buffer, then a Read of it",
			needSTag: true, expect: expect{ok: true}, run: supported(func(c *conn) (string, error) {
				x, err := c.atomicWait(endpoint.OpAtomicFetchAdd, endpoint.FetchAdd(0))
				if err != nil {
					return "", err
				}
				for _, step := range []struct{ add, want uint64 }{{5, x}, {^uint64(4), x + 5}} {
					if got, err := c.atomicWait(endpoint.OpAtomicFetchAdd, endpoint.FetchAdd(step.add)); err != nil || got != step.want {
						return "", fmt.Errorf("FetchAdd returned %#x (%v), want %#x", got, err, step.want)
					}
				}
				return "", c.readBack(x)
			})},
		{ID: "rdmap-atomic-cmpswap", Clause: "RFC 7306 §5.1.2, §5.2 (RD-26, RD-28)", Sent: "CmpSwap that misses, one that swaps, one that swaps back",
			needSTag: true, expect: expect{ok: true}, run: supported(func(c *conn) (string, error) {
				x, err := c.atomicWait(endpoint.OpAtomicFetchAdd, endpoint.FetchAdd(0))
				if err != nil {
					return "", err
				}
				for _, step := range []struct{ cmp, swap, want uint64 }{{x + 1, 7, x}, {x, ^x, x}, {^x, x, ^x}} {
					if got, err := c.atomicWait(endpoint.OpAtomicCmpSwap, endpoint.CmpSwap(step.cmp, step.swap)); err != nil || got != step.want {
						return "", fmt.Errorf("CmpSwap(%#x, %#x) returned %#x (%v), want %#x", step.cmp, step.swap, got, err, step.want)
					}
				}
				return "", c.readBack(x)
			})},
		{ID: "rdmap-atomic-misaligned", Clause: "RFC 7306 §5.1, §8.2 (RD-26)", Sent: "FetchAdd of 0 at the learned buffer + 4",
			needSTag: true, expect: term(0, 2, 0x07), run: supported(at(endpoint.OpAtomicFetchAdd, endpoint.FetchAdd(0), 0, 4))},
		{ID: "rdmap-atomic-invalid", Clause: "RFC 7306 §9, RFC 5040 §7.2 (RD-08)", Sent: "FetchAdd on the learned STag with another key",
			needSTag: true, expect: term(0, 1, 0x00), run: supported(at(endpoint.OpAtomicFetchAdd, endpoint.FetchAdd(1), 0x80, 0))},
		{ID: "rdmap-atomic-bounds", Clause: "RFC 7306 §9, RFC 5040 §7.2 (RD-10)", Sent: "CmpSwap 1 MiB past the learned buffer",
			needSTag: true, expect: term(0, 1, 0x01), run: supported(at(endpoint.OpAtomicCmpSwap, endpoint.CmpSwap(0, 1), 0, 1<<20))},
	}
}

// atomic is an atomic work request on the target; the original value
// lands in the first 8 octets of our data buffer.
func (c *conn) atomic(op endpoint.Opcode, stag endpoint.STag, to uint64, a endpoint.AtomicArgs) endpoint.SendWR {
	return endpoint.SendWR{WRID: 80, Opcode: op, Signaled: true, SGL: []endpoint.SGE{c.data.SGE(0, 8)}, RemoteAddr: to, RKey: stag, Atomic: a}
}

// atomicWait performs one atomic on the learned buffer and returns the
// original value it reported.
func (c *conn) atomicWait(op endpoint.Opcode, a endpoint.AtomicArgs) (uint64, error) {
	s, to, _ := c.stag()
	if err := c.post(c.atomic(op, s, to, a)); err != nil {
		return 0, err
	}
	if err := c.waitSend(op); err != nil {
		return 0, err
	}
	return binary.NativeEndian.Uint64(c.data.Buf()), nil
}

// readBack RDMA Reads the learned buffer's first word: it must be want.
func (c *conn) readBack(want uint64) error {
	s, to, _ := c.stag()
	if err := c.post(endpoint.SendWR{WRID: 81, Opcode: endpoint.OpRead, Signaled: true, SGL: []endpoint.SGE{c.data.SGE(8, 8)}, RemoteAddr: to, RKey: s}); err != nil {
		return err
	}
	if err := c.waitSend(endpoint.OpRead); err != nil {
		return err
	}
	if got := binary.NativeEndian.Uint64(c.data.Buf()[8:]); got != want {
		return fmt.Errorf("the buffer holds %#x after the atomics, want %#x", got, want)
	}
	return nil
}

// waitSend waits for our work request of kind op to complete successfully.
func (c *conn) waitSend(op endpoint.Opcode) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.o.Timeout)
	defer cancel()
	var wc [1]endpoint.WorkCompletion
	for {
		if _, err := c.cq.Wait(ctx, wc[:]); err != nil {
			return fmt.Errorf("waiting for the %v: %w (QP %v: %v)", op, err, c.qp.State(), c.qp.Err())
		}
		if wc[0].Opcode == endpoint.OpRecv && wc[0].Status == endpoint.StatusSuccess {
			continue
		}
		if wc[0].Status != endpoint.StatusSuccess || wc[0].Opcode != op {
			return fmt.Errorf("%v completed with %v (%v)", wc[0].Opcode, wc[0].Status, c.qp.Err())
		}
		return nil
	}
}
