package ulp_test

import (
	"slices"
	"testing"

	"github.com/iwkit/iwkit/gen"
)

// SMB Direct + SMB2 builders ([MS-SMBD] §2.2, [MS-SMB2] §2.2; ulp-reference.md §3).

func smbdNegReq() []byte {
	b := make([]byte, 20)
	le.PutUint16(b, 0x100)
	le.PutUint16(b[2:], 0x100)
	le.PutUint16(b[6:], 255)
	le.PutUint32(b[8:], 1364)
	le.PutUint32(b[12:], 1364)
	le.PutUint32(b[16:], 1048576)
	return b
}

func smbdNegResp(granted uint16) []byte {
	b := make([]byte, 32)
	le.PutUint16(b, 0x100)
	le.PutUint16(b[2:], 0x100)
	le.PutUint16(b[4:], 0x100)
	le.PutUint16(b[8:], 255)
	le.PutUint16(b[10:], granted)
	le.PutUint32(b[16:], 1048576)
	le.PutUint32(b[20:], 1364)
	le.PutUint32(b[24:], 8192)
	le.PutUint32(b[28:], 1048576)
	return b
}

// smbdData wraps data in a data transfer message.
func smbdData(granted uint16, remaining uint32, data []byte) []byte {
	n := 24
	if len(data) == 0 {
		n = 20
	}
	b := make([]byte, n)
	le.PutUint16(b, 255)
	le.PutUint16(b[2:], granted)
	le.PutUint32(b[8:], remaining)
	if len(data) > 0 {
		le.PutUint32(b[12:], 24)
		le.PutUint32(b[16:], uint32(len(data)))
	}
	return append(b, data...)
}

func smb2Hdr(cmd uint16, resp bool, status uint32, mid uint64) []byte {
	h := make([]byte, 64)
	copy(h, "\xfeSMB")
	le.PutUint16(h[4:], 64)
	le.PutUint32(h[8:], status)
	le.PutUint16(h[12:], cmd)
	le.PutUint16(h[14:], 1)
	if resp {
		le.PutUint32(h[16:], 1)
	}
	le.PutUint64(h[24:], mid)
	le.PutUint32(h[36:], 1)
	le.PutUint64(h[40:], 0x1122334455667788)
	return h
}

// smb2RW is a READ (cmd 8) or WRITE (cmd 9) request with one
// RDMA_V1_INVALIDATE buffer descriptor ([MS-SMB2] §2.2.19, §2.2.21).
func smb2RW(cmd uint16, mid uint64, length uint32, token uint32, addr uint64) []byte {
	b := smb2Hdr(cmd, false, 0, mid)
	body := make([]byte, 48)
	le.PutUint16(body, 49)
	if cmd == 8 {
		le.PutUint32(body[4:], length) // Length
		le.PutUint32(body[36:], 2)     // Channel
		le.PutUint16(body[44:], 112)   // ReadChannelInfoOffset
		le.PutUint16(body[46:], 16)
	} else {
		le.PutUint32(body[32:], 2)      // Channel
		le.PutUint32(body[36:], length) // RemainingBytes
		le.PutUint16(body[40:], 112)    // WriteChannelInfoOffset
		le.PutUint16(body[42:], 16)
	}
	d := make([]byte, 16)
	le.PutUint64(d, addr)
	le.PutUint32(d[8:], token)
	le.PutUint32(d[12:], length)
	return append(append(b, body...), d...)
}

func smb2Read(mid uint64, length, token uint32, addr uint64) []byte {
	return smb2RW(8, mid, length, token, addr)
}
func smb2Write(mid uint64, length, token uint32, addr uint64) []byte {
	return smb2RW(9, mid, length, token, addr)
}

func smb2ReadResp(mid uint64, remaining uint32) []byte {
	body := make([]byte, 16)
	le.PutUint16(body, 17)
	le.PutUint32(body[8:], remaining)
	return append(smb2Hdr(8, true, 0, mid), body...)
}

func smb2WriteResp(mid uint64, count uint32) []byte {
	body := make([]byte, 16)
	le.PutUint16(body, 17)
	le.PutUint32(body[4:], count)
	return append(smb2Hdr(9, true, 0, mid), body...)
}

func smbConn(client string, reqPD, repPD []byte, ops ...gen.Op) gen.Connection {
	return gen.Connection{Client: client, Server: "10.0.0.2:5445",
		MPA: gen.MPA{Rev: pint(2), RequestData: reqPD, ReplyData: repPD}, Ops: ops}
}

func smbScenario() *gen.Scenario {
	neg := append(smb2Hdr(0, false, 0, 0), make([]byte, 36)...)
	negResp := smb2Hdr(0, true, 0, 0)
	le.PutUint16(negResp[14:], 64) // CreditResponse: MessageIds 1..64 ([MS-SMB2] §3.3.1.1)
	c := smbConn("10.0.0.1:45001",
		[]byte{0x10, 0, 0, 0, 1, 0, 0, 0}, // Linux cifs.ko: little-endian IRD 16 ORD 1
		[]byte{0, 0, 0, 16, 0, 0, 0, 16},
		send("i2r", smbdNegReq()),
		send("r2i", smbdNegResp(255)),
		send("i2r", smbdData(255, 0, nil)),
		// an SMB2 NEGOTIATE in two fragments, as cifs.ko splits its requests
		send("i2r", smbdData(0, 36, neg[:64])),
		send("i2r", smbdData(0, 0, neg[64:])),
		send("r2i", smbdData(1, 0, append(negResp, make([]byte, 64)...))),
		send("i2r", smbdData(0, 0, smb2Read(5, 65536, 0x7a01, 0x7f0000000000))),
		rdmaWrite(0x7a01, 0x7f0000000000, 65536),
		sendInv(smbdData(1, 0, smb2ReadResp(5, 65536)), 0x7a01),
		send("i2r", smbdData(0, 0, smb2Write(6, 32768, 0x7a02, 0x7f0000100000))),
		rdmaRead(0x7a02, 0x7f0000100000, 32768, 0x9200),
		sendInv(smbdData(1, 0, smb2WriteResp(6, 32768)), 0x7a02),
	)
	return &gen.Scenario{Name: "smbd", Seed: 7, Connections: []gen.Connection{c}}
}

func smbFindingsScenario() *gen.Scenario {
	c := smbConn("10.0.0.1:45002", []byte{0, 0, 0, 16, 0, 0, 0, 16}, []byte{0, 0, 0, 8, 0, 0, 0, 8},
		send("i2r", smbdNegReq()),
		send("r2i", smbdNegResp(1)),
		// two data messages on one credit
		send("i2r", smbdData(1, 0, append(smb2Hdr(13, false, 0, 1), 4, 0, 0, 0))),
		send("i2r", smbdData(0, 0, append(smb2Hdr(13, false, 0, 2), 4, 0, 0, 0))),
		send("r2i", smbdData(8, 0, append(smb2Hdr(13, true, 0, 1), 4, 0, 0, 0))),
		// a broken fragment chain
		send("i2r", smbdData(0, 100, make([]byte, 64))),
		send("i2r", smbdData(0, 10, make([]byte, 64))),
		send("i2r", smbdData(0, 0, make([]byte, 10))),
		// larger than the server's MaxReceiveSize (8192)
		send("i2r", smbdData(0, 0, append(smb2Hdr(13, false, 0, 3), make([]byte, 9000)...))),
		// a WRITE whose response Count differs from the octets read
		send("i2r", smbdData(0, 0, smb2Write(7, 4096, 0x7b01, 0x1000))),
		rdmaRead(0x7b01, 0x1000, 4096, 0x9300),
		sendInv(smbdData(1, 0, smb2WriteResp(7, 8192)), 0x7b01),
	)
	return &gen.Scenario{Name: "smbd-findings", Seed: 8, Connections: []gen.Connection{c}}
}

func TestSMBDGenerated(t *testing.T) {
	data := writeCapture(t, "gen_smbd.pcap", genPcap(t, smbScenario()))
	col, _ := analyzeBytes(t, data, analyzeConfig())
	got := checkClean(t, col, []string{"SMB Direct legacy IRD 16 ORD 1 (little-endian)", "SMB Direct Negotiate Request credits 255",
		"SMB2 READ request mid 5 len 65536 off 0 token 0x7a01", "fragment, remaining 36", "SMB2 NEGOTIATE request mid 0"}, "smbd.broken_le_legacy")
	if !slices.Contains(col.findings, "smbd.broken_le_legacy") {
		t.Errorf("the little-endian legacy block was not noted: %v", col.findings)
	}
	if c := got["SMB2 READ"]; c.moved != 65536 || c.writes != 1 || !c.ok {
		t.Errorf("READ: %+v", c)
	}
	if c := got["SMB2 WRITE"]; c.moved != 32768 || c.reads != 1 || !c.ok {
		t.Errorf("WRITE: %+v", c)
	}
	golden(t, "gen_smbd.pcap", data, "smb2")
}

func TestSMBDFindings(t *testing.T) {
	data := writeCapture(t, "gen_smbd_findings.pcap", genPcap(t, smbFindingsScenario()))
	col, _ := analyzeBytes(t, data, analyzeConfig())
	want := []string{"smbd.credit_overrun", "smbd.fragment", "smbd.too_large", "ulp.moved_mismatch", "smbd.legacy_mismatch", "smb2.bad_magic"}
	checkFindings(t, col, want)
	golden(t, "gen_smbd_findings.pcap", data, "smb2")
}

// A first fragment's RemainingDataLength + DataLength is the whole
// message's size: a RemainingDataLength near 2^32 wrapped the uint32 sum
// to a few octets and the message escaped the MaxFragmentedSize check
// (issue 32 audit).
func TestSMBDFragmentTotalWraps(t *testing.T) {
	pd := []byte{0, 0, 0, 16, 0, 0, 0, 16}
	sc := &gen.Scenario{Name: "smbd-wrap", Seed: 32, Connections: []gen.Connection{smbConn("10.0.0.1:45200", pd, pd,
		send("i2r", smbdNegReq()),
		send("r2i", smbdNegResp(255)),
		send("i2r", smbdData(255, 0xFFFFFFF0, make([]byte, 64))),
	)}}
	col, _ := analyzeBytes(t, genPcap(t, sc), analyzeConfig())
	checkFindings(t, col, []string{"smbd.fragmented_too_large"}, "smbd.fragment")
}
