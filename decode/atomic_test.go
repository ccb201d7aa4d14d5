package decode

import "testing"

const (
	atomicReqFixture = "00000002 00000007 00001234 0000000000001000" +
		" 1111111111111111 ffffffffffffffff 2222222222222222 ffffffffffffffff"
	atomicRespFixture = "00000007 0000000000000042"
)

func TestParseAtomicRequest(t *testing.T) {
	b := ddpHex(t, atomicReqFixture)
	var r AtomicRequest
	n, err := ParseAtomicRequest(b, &r)
	if err != nil || n != AtomicReqHdrLen {
		t.Fatalf("n=%d err=%v", n, err)
	}
	want := AtomicRequest{AOpCode: AOpCmpSwap, RequestID: 7, RemoteSTag: 0x1234, RemoteTO: 0x1000,
		AddSwapData: 0x1111111111111111, AddSwapMask: ^uint64(0), CompareData: 0x2222222222222222, CompareMask: ^uint64(0)}
	if r != want {
		t.Fatalf("got %+v want %+v", r, want)
	}
	if got := r.Append(nil); string(got) != string(b) {
		t.Fatalf("Append = %x", got)
	}
	// Reserved bits are kept apart from the AOpCode.
	b[0], b[3] = 0xAB, 0xC0
	if _, err := ParseAtomicRequest(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Reserved != 0x0AB0000C || r.AOpCode != AOpFetchAdd {
		t.Fatalf("Reserved %#x AOpCode %v", r.Reserved, r.AOpCode)
	}
	if got := r.Append(nil); string(got) != string(b) {
		t.Fatalf("Append = %x", got)
	}
}

func TestAtomicOpNames(t *testing.T) {
	for op, want := range map[AtomicOp]string{0: "FetchAdd", 1: "Reserved (0x1)", 2: "CmpSwap", 3: "Unassigned (0x3)", 0xF: "Unassigned (0xF)"} {
		if op.String() != want {
			t.Errorf("%d: %q want %q", op, op.String(), want)
		}
		if op.Known() != (op == 0 || op == 2) {
			t.Errorf("%d: Known %v", op, op.Known())
		}
	}
}

func TestParseAtomicRequestTruncation(t *testing.T) {
	b := ddpHex(t, atomicReqFixture)
	bounds := []struct {
		end   int
		field string
	}{{4, "rdmap.atomic.opcode"}, {8, "rdmap.atomic.request_id"}, {12, "rdmap.atomic.remote_stag"},
		{20, "rdmap.atomic.remote_to"}, {28, "rdmap.atomic.add_swap_data"}, {36, "rdmap.atomic.add_swap_mask"},
		{44, "rdmap.atomic.compare_data"}, {52, "rdmap.atomic.compare_mask"}}
	var r AtomicRequest
	for i := 0; i < len(b); i++ {
		want := ""
		for _, bd := range bounds {
			if i < bd.end {
				want = bd.field
				break
			}
		}
		_, err := ParseAtomicRequest(b[:i], &r)
		ddpWantTrunc(t, err, "rdmap", want, 52, i)
	}
}

func TestParseAtomicResponse(t *testing.T) {
	b := ddpHex(t, atomicRespFixture)
	var r AtomicResponse
	n, err := ParseAtomicResponse(b, &r)
	if err != nil || n != AtomicRespHdrLen || r != (AtomicResponse{OrigRequestID: 7, OrigValue: 0x42}) {
		t.Fatalf("n=%d err=%v r=%+v", n, err, r)
	}
	if got := r.Append(nil); string(got) != string(b) {
		t.Fatalf("Append = %x", got)
	}
	for i := 0; i < len(b); i++ {
		field := "rdmap.atomic.orig_value"
		if i < 4 {
			field = "rdmap.atomic.orig_request_id"
		}
		_, err := ParseAtomicResponse(b[:i], &r)
		ddpWantTrunc(t, err, "rdmap", field, 12, i)
	}
}

func TestParseImmData(t *testing.T) {
	b := ddpHex(t, "0102030405060708 09")
	var d [ImmDataLen]byte
	n, err := ParseImmData(b, &d)
	if err != nil || n != 8 || d != [8]byte{1, 2, 3, 4, 5, 6, 7, 8} {
		t.Fatalf("n=%d err=%v d=%x", n, err, d)
	}
	for i := 0; i < 8; i++ {
		_, err := ParseImmData(b[:i], &d)
		ddpWantTrunc(t, err, "rdmap", "rdmap.imm_data", 8, i)
	}
}
