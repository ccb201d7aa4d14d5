package endpoint

// Tests for the protection holes of issue 17, each written against the old
// code first (see the commit messages for how each failed there).

import (
	"bytes"
	"context"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
)

// Hole 1 (RFC 5040 §8.1.1 item 6, RFC 5041 §8.3.1, RFC 5042 §6.2.2, §6.3.3): a
// peer sends an RDMA Write's header and part of its payload, the ULP
// invalidates (or deregisters) the region and reuses the buffer, then the
// peer sends the rest. Nothing may land in the revoked buffer and the peer
// gets Invalid STag.
func TestHolePlacementAfterRevocation(t *testing.T) {
	for _, crc := range []bool{false, true} {
		for _, dereg := range []bool{false, true} {
			name := "invalidate"
			if dereg {
				name = "deregister"
			}
			t.Run(name+"/"+crcName(crc), func(t *testing.T) {
				const n = 32 << 10
				var mr *MR
				r, sv, _ := rawClient(t, Config{}, v2Req(false, crc), QPAttr{}, func(sv *side) {
					mr, _ = sv.reg(t, n, AccessAll)
				})
				payload := bytes.Repeat([]byte{0xEE}, n)
				fpdu := decode.AppendFPDU(nil, tagged(decode.OpWrite, uint32(mr.STag()), mr.Addr(), true, payload).Append(nil), r.crc)
				half := len(fpdu) / 2
				r.write(fpdu[:half])
				// Give the endpoint the chance to start placing (the old code
				// read the payload straight from the socket into the region).
				for i := 0; i < 50 && sv.qp.Counters().RxFPDUs == 0; i++ {
					time.Sleep(5 * time.Millisecond)
				}
				if dereg {
					if err := mr.Deregister(); err != nil {
						t.Fatal(err)
					}
				} else {
					mr.Invalidate()
				}
				// The ULP reuses the buffer.
				buf := mr.Buf()
				for i := range buf {
					buf[i] = 0x11
				}
				r.write(fpdu[half:])
				r.expectTerminate(1, 1, 0x00)
				r.c.Close()
				waitDone(t, sv.qp, StateError)
				if i := bytes.IndexByte(buf, 0xEE); i >= 0 {
					t.Fatalf("octet %d of the revoked buffer written by the peer", i)
				}
			})
		}
	}
}

// Hole 2: a Read Request accepted before Deregister is answered afterwards.
// The response must not disclose what the ULP wrote after revoking: the
// STag is checked again when the response is sent (Invalid STag then).
func TestHoleReadAnsweredAfterRevocation(t *testing.T) {
	const big = 16 << 20
	var bigMR, secret *MR
	r, sv, _ := rawClient(t, Config{}, v2Req(false, false), QPAttr{}, func(sv *side) {
		bigMR, _ = sv.reg(t, big, AccessAll)
		secret, _ = sv.reg(t, 4096, AccessAll)
	})
	// The first Read's response fills the socket buffers (we do not read),
	// so the second waits in the inbound Read queue.
	a := readReq(1, decode.ReadRequest{SinkSTag: 0x500, Size: big, SrcSTag: uint32(bigMR.STag()), SrcTO: bigMR.Addr()})
	b := readReq(2, decode.ReadRequest{SinkSTag: 0x600, Size: 4096, SrcSTag: uint32(secret.STag()), SrcTO: secret.Addr()})
	r.send(a)
	r.send(b)
	for i := 0; sv.qp.Counters().RxReadReqs < 2; i++ {
		if i > 2000 {
			t.Fatal("the Read Requests were not accepted")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := secret.Deregister(); err != nil {
		t.Fatal(err)
	}
	sb := secret.Buf()
	for i := range sb {
		sb[i] = 0x5E
	}
	r.c.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		s, _, err := r.readFPDU()
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		if s.RDMAP.Opcode == decode.OpTerminate {
			if s.Terminate.Layer != 0 || s.Terminate.EType != 1 || s.Terminate.Code != 0 {
				t.Fatalf("Terminate %s", s.Terminate.Cause())
			}
			break
		}
		if s.RDMAP.Opcode == decode.OpReadResponse && s.DDP.STag == 0x600 {
			t.Fatalf("Read Response from a deregistered region (%d octets, first %#x)", len(s.Payload), s.Payload[0])
		}
	}
	r.c.Close()
	waitDone(t, sv.qp, StateError)
}

// Hole 3 (RFC 5040 §8.1.1 item 8): STags are not predictable, and a
// deregistered STag does not come back for a long time.
func TestHoleSTagsUnpredictable(t *testing.T) {
	dev := OpenDevice(DeviceAttr{})
	pd := dev.AllocPD()
	buf := make([]byte, 64)
	var first []STag
	for i := 0; i < 4; i++ {
		mr, err := pd.RegisterMR(buf, AccessAll, nil)
		if err != nil {
			t.Fatal(err)
		}
		first = append(first, mr.STag())
	}
	seqIdx := 0
	for i := 1; i < len(first); i++ {
		if first[i].Index() == first[i-1].Index()+1 {
			seqIdx++
		}
	}
	if seqIdx == len(first)-1 {
		t.Fatalf("STag indices are sequential: %v", first)
	}
	other := OpenDevice(DeviceAttr{}).AllocPD()
	mo, _ := other.RegisterMR(buf, AccessAll, nil)
	if mo.STag() == first[0] {
		t.Fatalf("two devices start at the same STag %v", first[0])
	}
	seen := map[STag]bool{}
	for _, s := range first {
		seen[s] = true
	}
	for i := 0; i < 5000; i++ {
		mr, err := pd.RegisterMR(buf, AccessAll, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := mr.STag()
		if seen[s] {
			t.Fatalf("cycle %d: STag %v named an earlier region", i, s)
		}
		seen[s] = true
		mr.Deregister()
	}
}

// Hole 5 (RFC 5044 §6, §8): an FPDU that fails its CRC is not used: its
// payload is not placed.
func TestHoleNoPlacementBeforeCRC(t *testing.T) {
	for _, n := range []int{100, 40 << 10} {
		var mr *MR
		r, sv, _ := rawClient(t, Config{}, v2Req(false, true), QPAttr{}, func(sv *side) {
			mr, _ = sv.reg(t, 64<<10, AccessAll)
		})
		b := decode.AppendFPDU(nil, tagged(decode.OpWrite, uint32(mr.STag()), mr.Addr(), true, bytes.Repeat([]byte{0xEE}, n)).Append(nil), true)
		b[len(b)-1] ^= 0xFF
		r.write(b)
		r.expectTerminate(2, 0, 0x02)
		r.c.Close()
		waitDone(t, sv.qp, StateError)
		if i := bytes.IndexByte(mr.Buf(), 0xEE); i >= 0 {
			t.Fatalf("%d-octet Write: octet %d placed from an FPDU with a bad CRC", n, i)
		}
	}
}

// Hole 6a: DisableRemoteWrite blocks Read Responses too (V00: the RDMA
// Write enable covers every inbound tagged placement).
func TestHoleDisableRemoteWriteBlocksReadResponse(t *testing.T) {
	var sink *MR
	r, sv, _ := rawClient(t, Config{}, v2Req(false, false), QPAttr{DisableRemoteWrite: true}, func(sv *side) {
		sink, _ = sv.reg(t, 4096, AccessAll)
	})
	r.send(tagged(decode.OpWrite, 0, 0, true, nil)) // our first FPDU opens the Responder's gate
	sv.qp.PostSend(SendWR{WRID: 9, Opcode: OpRead, Signaled: true, SGL: []SGE{sink.SGE(0, 64)}, RemoteAddr: 0x1000, RKey: 0x4400})
	r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	s, _, err := r.readFPDU()
	if err != nil || s.RDMAP.Opcode != decode.OpReadRequest {
		t.Fatalf("expected the Read Request: %v", err)
	}
	r.send(tagged(decode.OpReadResponse, s.ReadRequest.SinkSTag, s.ReadRequest.SinkTO, true, bytes.Repeat([]byte{0xEE}, 64)))
	r.expectTerminate(1, 1, 0x02)
	r.c.Close()
	waitDone(t, sv.qp, StateError)
	if i := bytes.IndexByte(sink.Buf(), 0xEE); i >= 0 {
		t.Fatalf("Read Response placed at %d with inbound placement disabled", i)
	}
}

// Hole 6b (RFC 6581 §9.3): the Read RTR is a zero-size Read Request; a Read
// with a size is not an RTR.
func TestHoleReadRTRMustBeZeroSize(t *testing.T) {
	var src *MR
	req := v2Req(true, false)
	req.V2.ZeroLenWriteRTR, req.V2.ZeroLenReadRTR = false, true
	r, sv, _ := rawClient(t, Config{PeerToPeer: true}, req, QPAttr{}, func(sv *side) {
		src, _ = sv.reg(t, 4096, AccessAll)
	})
	r.send(readReq(1, decode.ReadRequest{SinkSTag: 0x500, Size: 8, SrcSTag: uint32(src.STag()), SrcTO: src.Addr()}))
	r.expectTerminate(2, 0, 0x07)
	r.c.Close()
	waitDone(t, sv.qp, StateError)
}

// Hole 6c: unaccepted Requests are bounded: a flood of connections that
// nobody accepts does not grow goroutines (and memory) without bound.
func TestHoleListenerBacklogBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := Listen(ctx, "tcp", "127.0.0.1:0", &Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	base := runtime.NumGoroutine()
	rq := v2Req(false, false)
	req := rq.Append(nil)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 200; i++ {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Write(req)
		conns = append(conns, c)
	}
	// Let the listener read what it will read.
	for i := 0; i < 100; i++ {
		time.Sleep(10 * time.Millisecond)
		if runtime.NumGoroutine()-base > 2*DefaultBacklog+16 {
			break
		}
	}
	if g := runtime.NumGoroutine() - base; g > 2*DefaultBacklog+16 {
		t.Fatalf("%d goroutines for 200 unaccepted Requests (backlog %d)", g, DefaultBacklog)
	}
}

// Hole 6d: the Responder's wait for the Initiator's first FPDU is bounded.
func TestHoleFirstFPDUTimeout(t *testing.T) {
	r, sv, _ := rawClient(t, Config{Timeout: 200 * time.Millisecond}, v2Req(false, false), QPAttr{}, nil)
	_ = r // sends nothing after its Request
	waitDone(t, sv.qp, StateError)
}

// Hole 6e: a Terminate to a peer that stopped reading does not hang the QP.
func TestHoleTerminateWriteDeadline(t *testing.T) {
	var mr *MR
	r, sv, _ := rawClient(t, Config{}, v2Req(false, false), QPAttr{DrainTimeout: 200 * time.Millisecond}, func(sv *side) {
		mr, _ = sv.reg(t, 8<<20, AccessAll)
	})
	r.send(tagged(decode.OpWrite, 0, 0, true, nil))
	// Fill the path towards the peer, which never reads. PostSend never
	// waits for the network (TestPostSendNeverBlocks), so the Writes are
	// posted from the test goroutine.
	for i := 0; i < 8; i++ {
		if _, err := sv.qp.PostSend(SendWR{WRID: uint64(i), Opcode: OpWrite, SGL: []SGE{mr.SGE(0, 8<<20)}, RemoteAddr: 0, RKey: 0x100}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 200 && sv.qp.Counters().TxWrites == 0; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	// A bad FPDU: the endpoint must send a Terminate it cannot write.
	r.send(tagged(decode.OpWrite, 0x7777700, 0, true, make([]byte, 8)))
	select {
	case <-sv.qp.Done():
	case <-time.After(15 * time.Second):
		t.Fatalf("QP stuck in %v writing its Terminate to a peer that does not read", sv.qp.State())
	}
}
