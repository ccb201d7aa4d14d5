package ulp_test

import (
	"slices"
	"testing"

	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/ulp"
)

// TestSMB2CreditWindow: the server grants ids below 1 (NEGOTIATE) + 2 +
// 8 + 0 + 4 + 1 = 16 as the responses come; requests using ids up to the
// top fit (MessageId 8 CreditCharge 4: ids 8..11), the last one (MessageId
// 12 CreditCharge 5: ids 12..16) does not ([MS-SMB2] §3.3.5.2.3).
func TestSMB2CreditWindow(t *testing.T) {
	req := func(mid uint64, charge uint16) []byte {
		h := smb2Hdr(13, false, 0, mid) // ECHO
		le.PutUint16(h[6:], charge)
		return append(h, 4, 0, 0, 0)
	}
	resp := func(mid uint64, credits uint16) []byte {
		h := smb2Hdr(13, true, 0, mid)
		le.PutUint16(h[14:], credits)
		return append(h, 4, 0, 0, 0)
	}
	negResp := smb2Hdr(0, true, 0, 0)
	le.PutUint16(negResp[14:], 2)
	c := smbConn("10.0.0.1:45010", []byte{0, 0, 0, 16, 0, 0, 0, 16}, []byte{0, 0, 0, 16, 0, 0, 0, 16},
		send("i2r", smbdNegReq()),
		send("r2i", smbdNegResp(255)),
		send("i2r", smbdData(255, 0, append(smb2Hdr(0, false, 0, 0), make([]byte, 36)...))),
		send("r2i", smbdData(255, 0, append(negResp, make([]byte, 64)...))),
		send("i2r", smbdData(0, 0, req(1, 1))),
		send("r2i", smbdData(1, 0, resp(1, 8))),
		send("i2r", smbdData(0, 0, req(2, 2))),
		send("r2i", smbdData(1, 0, resp(2, 0))),
		send("i2r", smbdData(0, 0, req(4, 4))),
		send("r2i", smbdData(1, 0, resp(4, 4))),
		send("i2r", smbdData(0, 0, req(8, 4))), // ids 8..11, below 15
		send("r2i", smbdData(1, 0, resp(8, 1))),
		send("i2r", smbdData(0, 0, req(12, 5))), // ids 12..16: 16 is not below 16
	)
	col, rep := analyzeBytes(t, genPcap(t, &gen.Scenario{Name: "smb2-window", Seed: 9, Connections: []gen.Connection{c}}), analyzeConfig())
	n := 0
	for _, f := range col.findings {
		if f == "smb2.credit_window" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d smb2.credit_window findings, want 1 (MessageId 12 CreditCharge 5): %v", n, col.findings)
	}
	// ids granted and not used, at every change: NEGOTIATE uses 0 (0 left),
	// its response grants 2, MessageId 1 uses one, ... the last request
	// overdraws by one.
	want := []int64{0, 2, 1, 9, 7, 3, 7, 3, 4, -1}
	if len(rep.ULP.Queues) != 1 {
		t.Fatalf("%d queues", len(rep.ULP.Queues))
	}
	var got []int64
	for _, p := range rep.ULP.Queues[0].Windows[ulp.WinSMB2Credits].Series {
		got = append(got, p.Value)
	}
	if !slices.Equal(got, want) {
		t.Errorf("smb2 credits over time %v, want %v", got, want)
	}
	// The window's edges: ids granted (1 at the NEGOTIATE, then + 2, 8,
	// 0, 4, 1) and used (MessageId + CreditCharge of each request).
	for w, want := range map[int][]int64{ulp.WinSMB2Granted: {1, 3, 11, 15, 16}, ulp.WinSMB2Used: {1, 2, 4, 8, 12, 17}} {
		got = got[:0]
		for _, p := range rep.ULP.Queues[0].Windows[w].Series {
			got = append(got, p.Value)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s over time %v, want %v", ulp.WindowNames[w], got, want)
		}
	}
}
