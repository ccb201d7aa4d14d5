package endpoint

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/iwkit/iwkit/decode"
)

const canary = 0xA5

// fuzzQP runs one QP as Responder on a pipe, feeds it data as the peer's
// FPDU stream, and checks that no octet outside the registered regions
// changed. Regions sit inside one array with canary octets around them.
// ext enables RFC 7306 on the QP.
func fuzzQP(t *testing.T, data []byte, crc, markers bool, rtr uint8, ext bool) {
	// Canary pages around every region.
	const g = 4096
	arena := make([]byte, 3*4096+4*g)
	for i := range arena {
		arena[i] = canary
	}
	regions := [][2]int{{g, g + 4096}, {2*g + 4096, 2*g + 2*4096}, {3*g + 2*4096, 3*g + 3*4096}}
	dev := OpenDevice(DeviceAttr{})
	dev.plain = true // predictable STags for the seeds
	pd := dev.AllocPD()
	cq, _ := dev.CreateCQ(1 << 12)
	qp, err := pd.CreateQP(QPAttr{SendCQ: cq, RecvCQ: cq, IRD: 4, ORD: 4, DrainTimeout: 50 * time.Millisecond, RFC7306: ext})
	if err != nil {
		t.Fatal(err)
	}
	// Predictable STags for the seeds: indexes 1, 2, 3, key 1.
	rw, _ := pd.RegisterMR(arena[regions[0][0]:regions[0][1]:regions[0][1]], AccessAll|AccessRemoteAtomic, &MROptions{ZeroBased: true, Key: 1})
	pd.RegisterMR(arena[regions[1][0]:regions[1][1]:regions[1][1]], AccessAll, &MROptions{VA: 0x10000, Key: 1})
	rb, _ := pd.RegisterMR(arena[regions[2][0]:regions[2][1]:regions[2][1]], AccessLocalWrite, &MROptions{Key: 1})
	for i := 0; i < 4; i++ {
		qp.PostRecv(RecvWR{WRID: uint64(i), SGL: []SGE{rb.SGE(i*1024, 512), rb.SGE(i*1024+512, 512)}})
	}
	_ = rw
	a, b := net.Pipe()
	s := newStream(a, nil, nil)
	s.crc, s.rxMarkers, s.txMarkers, s.mulpdu = crc, markers, markers, 512
	if err := qp.attach(s, nil, false, rtrNone, rtr); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, b)
	b.SetWriteDeadline(time.Now().Add(2 * time.Second))
	b.Write(data)
	b.Close()
	select {
	case <-qp.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("QP did not finish (state %v)", qp.State())
	}
	for i, c := range arena {
		inside := false
		for _, r := range regions {
			if i >= r[0] && i < r[1] {
				inside = true
			}
		}
		if !inside && c != canary {
			t.Fatalf("octet %d outside every region changed", i)
		}
	}
	// Memory stays bounded whatever the stream: the receive buffer never
	// grows, the marker scratch holds one FPDU, the send batches stay at
	// their cap.
	if len(s.rbuf) != rbufSize || cap(s.scratch) > 70<<10 {
		t.Fatalf("receive buffers grew: rbuf %d, scratch %d", len(s.rbuf), cap(s.scratch))
	}
	chunks := 0
	for _, c := range qp.txs.b.chunks {
		chunks += cap(c)
	}
	if chunks > 2*txBatchMax {
		t.Fatalf("send batch chunks hold %d octets", chunks)
	}
	// Every WR completed or was flushed; nothing is left behind.
	var wc [16]WorkCompletion
	n := 0
	for k := cq.Poll(wc[:]); k > 0; k = cq.Poll(wc[:]) {
		n += k
	}
	if n != 4 {
		t.Fatalf("%d receive completions, want 4", n)
	}
}

func fuzzSeeds() [][]byte {
	fp := func(segs ...*decode.Segment) []byte {
		var b []byte
		for _, s := range segs {
			b = decode.AppendFPDU(b, s.Append(nil), true)
		}
		return b
	}
	rr := readReq(1, decode.ReadRequest{SinkSTag: 0x201, SinkTO: 0x10000, Size: 100, SrcSTag: 0x101, SrcTO: 0})
	term := untagged(decode.OpTerminate, 2, 1, 0, true, nil)
	term.Terminate = decode.Terminate{Layer: 1, EType: 1, Code: 0, M: true, D: true, HasSegLen: true, HasDDP: true,
		TermDDP: decode.DDPHeader{Tagged: true, Last: true, DV: 1, STag: 0x101}}
	return [][]byte{
		fp(untagged(decode.OpSend, 0, 1, 0, true, []byte("hello"))),
		fp(untagged(decode.OpSend, 0, 1, 0, false, make([]byte, 600)), untagged(decode.OpSendSE, 0, 1, 600, true, make([]byte, 300))),
		fp(tagged(decode.OpWrite, 0x101, 4000, true, make([]byte, 96))),
		fp(tagged(decode.OpWrite, 0x201, 0x10000+4090, true, make([]byte, 8))),
		fp(rr, untagged(decode.OpSend, 0, 1, 0, true, nil)),
		fp(term),
		fp(tagged(decode.OpWrite, 0, 0, true, nil), untagged(decode.OpSendInv, 0, 1, 0, true, []byte("x"))),
		fp(readReq(1, decode.ReadRequest{Size: 0})),
	}
}

// fuzzSeeds7306 are RFC 7306 streams, run on a QP with the extensions:
// atomics inside, at the edge of and outside region 0x101, Read and Atomic
// Requests interleaved, Immediate Data, a stray Atomic Response.
func fuzzSeeds7306() [][]byte {
	fp := func(segs ...*decode.Segment) []byte {
		var b []byte
		for _, s := range segs {
			b = decode.AppendFPDU(b, s.Append(nil), true)
		}
		return b
	}
	fa := func(msn uint32, to uint64) *decode.Segment {
		return atomicReq(msn, decode.AtomicRequest{AOpCode: decode.AOpFetchAdd, RequestID: msn, RemoteSTag: 0x101, RemoteTO: to, AddSwapData: 1})
	}
	cs := atomicReq(2, decode.AtomicRequest{AOpCode: decode.AOpCmpSwap, RemoteSTag: 0x101, RemoteTO: 8, AddSwapData: 9, AddSwapMask: ^uint64(0), CompareMask: ^uint64(0)})
	rr := readReq(2, decode.ReadRequest{SinkSTag: 0x201, Size: 16, SrcSTag: 0x101})
	return [][]byte{
		fp(fa(1, 0), cs),
		fp(fa(1, 4088), fa(2, 4096)),
		fp(fa(1, 0), rr, fa(3, 0)),
		fp(fa(1, 3)),
		fp(immSeg(decode.OpImmData, 1, 8), immSeg(decode.OpImmDataSE, 2, 8), untagged(decode.OpSend, 0, 3, 0, true, []byte("x"))),
		fp(tagged(decode.OpWrite, 0x101, 0, true, make([]byte, 64)), immSeg(decode.OpImmData, 1, 8)),
		fp(untagged(decode.OpAtomicResponse, decode.QNAtomicResp, 1, 0, true, make([]byte, 12))),
	}
}

// FuzzQPReceive feeds arbitrary FPDU byte streams to a QP's receive engine:
// it must never panic, never hang, never write outside registered memory,
// and always complete or flush every posted receive.
func FuzzQPReceive(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s, true, false, uint8(0))
		f.Add(s, false, false, uint8(0))
	}
	for _, s := range fuzzSeeds7306() {
		f.Add(s, true, false, uint8(fuzzRFC7306))
		f.Add(s, true, false, uint8(0)) // the same without the extensions
	}
	f.Add(fuzzSeeds()[2], true, false, uint8(1<<rtrWrite))
	f.Add(decode.AppendFPDU(nil, tagged(decode.OpWrite, 1, 0, true, nil).Append(nil), false), false, false, uint8(1<<rtrWrite|1<<rtrRead))
	var mk []byte
	pos := uint32(0)
	mk, pos = decode.AppendFPDUWithMarkers(mk, pos, 0, untagged(decode.OpSend, 0, 1, 0, true, make([]byte, 700)).Append(nil), true)
	mk, _ = decode.AppendFPDUWithMarkers(mk, pos, 0, tagged(decode.OpWrite, 0x101, 0, true, make([]byte, 1000)).Append(nil), true)
	f.Add(mk, true, true, uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, crc, markers bool, rtr uint8) {
		fuzzQP(t, data, crc, markers, rtr&(1<<rtrSend|1<<rtrWrite|1<<rtrRead), rtr&fuzzRFC7306 != 0)
	})
}

// TestFuzzSeeds runs the seeds as a plain test (go test runs FuzzQPReceive's
// seed corpus too; this keeps a readable name for the main cases).
func TestFuzzSeedsPlaceInside(t *testing.T) {
	for _, s := range fuzzSeeds() {
		fuzzQP(t, s, true, false, 0, false)
	}
	for _, s := range fuzzSeeds7306() {
		fuzzQP(t, s, true, false, 0, true)
	}
}

// fuzzRFC7306 is the bit of FuzzQPReceive's rtr argument that enables RFC
// 7306 on the QP.
const fuzzRFC7306 = 0x80
