package decode

import "testing"

// The RDMA Read Request of SoftUiWARP rping frame 10, after its DDP header.
const readReqFixture = "40cc4300 0000563616bbc670 00000040 ffffe080 00007fffffffe080"

func TestParseReadRequest(t *testing.T) {
	b := ddpHex(t, readReqFixture)
	var r ReadRequest
	n, err := ParseReadRequest(b, &r)
	if err != nil || n != ReadReqHdrLen {
		t.Fatalf("n=%d err=%v", n, err)
	}
	want := ReadRequest{SinkSTag: 0x40cc4300, SinkTO: 0x563616bbc670, Size: 64, SrcSTag: 0xffffe080, SrcTO: 0x7fffffffe080}
	if r != want {
		t.Fatalf("got %+v want %+v", r, want)
	}
	if got := r.Append(nil); string(got) != string(b) {
		t.Fatalf("Append = %x", got)
	}
}

func TestParseReadRequestTruncation(t *testing.T) {
	b := ddpHex(t, readReqFixture)
	field := func(i int) string {
		switch {
		case i < 4:
			return "rdmap.sink_stag"
		case i < 12:
			return "rdmap.sink_to"
		case i < 16:
			return "rdmap.read_size"
		case i < 20:
			return "rdmap.src_stag"
		}
		return "rdmap.src_to"
	}
	var r ReadRequest
	for i := 0; i < len(b); i++ {
		_, err := ParseReadRequest(b[:i], &r)
		ddpWantTrunc(t, err, "rdmap", field(i), 28, i)
	}
}
