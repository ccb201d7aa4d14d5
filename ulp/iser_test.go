package ulp_test

import (
	"testing"

	"github.com/iwkit/iwkit/gen"
)

// iSER + iSCSI builders (RFC 7145 §9.2, RFC 7143 §11; ulp-reference.md §2).

func iserHdr(flags uint8, wstag uint32, wva uint64, rstag uint32, rva uint64) []byte {
	b := make([]byte, 28)
	b[0] = flags
	be.PutUint32(b[4:], wstag)
	be.PutUint64(b[8:], wva)
	be.PutUint32(b[16:], rstag)
	be.PutUint64(b[20:], rva)
	return b
}

func bhs(op, f1 uint8, itt uint32, data []byte) []byte {
	b := make([]byte, 48)
	b[0], b[1] = op, f1
	b[5], b[6], b[7] = byte(len(data)>>16), byte(len(data)>>8), byte(len(data))
	be.PutUint32(b[16:], itt)
	b = append(b, data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func scsiCmd(flags uint8, wstag uint32, rstag uint32, va uint64, f1 uint8, itt, edtl uint32, cdb []byte, imm []byte) []byte {
	h := iserHdr(flags, wstag, va, rstag, va)
	p := bhs(0x01, f1, itt, imm)
	be.PutUint32(p[20:], edtl)
	copy(p[32:], cdb)
	return append(h, p...)
}

func rw10(op uint8, lba uint32, blocks uint16) []byte {
	c := make([]byte, 16)
	c[0] = op
	be.PutUint32(c[2:], lba)
	be.PutUint16(c[7:], blocks)
	return c
}

func scsiResp(itt uint32, status uint8, sense []byte) []byte {
	p := bhs(0x21, 0x80, itt, sense)
	p[3] = status
	return append(iserHdr(0x10, 0, 0, 0, 0), p...)
}

func iserConn(client string, ops ...gen.Op) gen.Connection {
	return gen.Connection{Client: client, Server: "10.0.0.2:3260",
		MPA: gen.MPA{Rev: pint(2), RequestData: []byte{0x80, 0, 0, 0}, ReplyData: []byte{0x80, 0, 0, 0}}, Ops: ops}
}

func iserScenario() *gen.Scenario {
	keys := []byte("InitiatorName=iqn.2024-01.org.iwkit:init\x00TargetName=iqn.2024-01.org.iwkit:tgt\x00RDMAExtensions=Yes\x00")
	login := append(iserHdr(0x10, 0, 0, 0, 0), bhs(0x43, 0x87, 0, keys)...)
	lresp := append(iserHdr(0x10, 0, 0, 0, 0), bhs(0x23, 0x87, 0, []byte("RDMAExtensions=Yes\x00TargetRecvDataSegmentLength=262144\x00"))...)
	sense := make([]byte, 2+18)
	be.PutUint16(sense, 18)
	sense[2], sense[4], sense[14], sense[15] = 0x70, 0x05, 0x20, 0x00
	inq := make([]byte, 16)
	inq[0], inq[4] = 0x12, 36
	c := iserConn("10.0.0.1:60001",
		send("i2r", login),
		send("r2i", lresp),
		send("i2r", scsiCmd(0x14, 0, 0x100, 0x7f0000000000, 0xC1, 1, 4096, rw10(0x28, 2048, 8), nil)),
		rdmaWrite(0x100, 0x7f0000000000, 4096),
		sendInv(scsiResp(1, 0, nil), 0x100),
		send("i2r", scsiCmd(0x18, 0x200, 0, 0x7f0000010400, 0xA1, 2, 8192, rw10(0x2A, 4096, 16), make([]byte, 1024))),
		rdmaRead(0x200, 0x7f0000010400, 7168, 0x9100),
		sendInv(scsiResp(2, 0, nil), 0x200),
		send("i2r", scsiCmd(0x14, 0, 0x300, 0x7f0000020000, 0xC1, 3, 96, inq, nil)),
		rdmaWrite(0x300, 0x7f0000020000, 96),
		sendInv(scsiResp(3, 0x02, sense), 0x300),
	)
	return &gen.Scenario{Name: "iser", Seed: 5, Connections: []gen.Connection{c}}
}

func iserFindingsScenario() *gen.Scenario {
	c := iserConn("10.0.0.1:60002",
		// W without WSV although EDTL exceeds the immediate data
		send("i2r", scsiCmd(0x10, 0, 0, 0, 0xA1, 7, 8192, rw10(0x2A, 0, 16), make([]byte, 512))),
		send("r2i", scsiResp(7, 0, nil)),
		// a response for an ITT nobody used
		send("r2i", scsiResp(0x99, 0, nil)),
		// a read that gets more than EDTL
		send("i2r", scsiCmd(0x14, 0, 0x400, 0x10000, 0xC1, 8, 4096, rw10(0x28, 0, 8), nil)),
		rdmaWrite(0x400, 0x10000, 8192),
		sendInv(scsiResp(8, 0, nil), 0x400),
		// a read whose buffer the target never writes, ending GOOD
		send("i2r", scsiCmd(0x14, 0, 0x500, 0x20000, 0xC1, 9, 4096, rw10(0x28, 0, 8), nil)),
		sendInv(scsiResp(9, 0, nil), 0x500),
		// a header with an invalid iSER opcode
		send("i2r", append(iserHdr(0x50, 0, 0, 0, 0), bhs(0x00, 0x80, 0xFFFFFFFF, nil)...)),
	)
	return &gen.Scenario{Name: "iser-findings", Seed: 6, Connections: []gen.Connection{c}}
}

func TestISERGenerated(t *testing.T) {
	data := writeCapture(t, "gen_iser.pcap", genPcap(t, iserScenario()))
	col, _ := analyzeBytes(t, data, analyzeConfig())
	got := checkClean(t, col, []string{"iSER CM flags 0x80 no-ZBVA", "iSCSI Login Request itt 0x0 csg 1 nsg 3 keys 3",
		"iSCSI SCSI Command itt 0x1 READ(10) lba 2048 blocks 8 edtl 4096 rstag 0x100", "CHECK CONDITION ILLEGAL REQUEST"})
	if c := got["READ(10)"]; c.moved != 4096 || c.writes != 1 || !c.ok {
		t.Errorf("READ(10): %+v", c)
	}
	if c := got["WRITE(10)"]; c.moved != 7168 || c.inl != 1024 || c.reads != 1 || !c.ok {
		t.Errorf("WRITE(10): %+v", c)
	}
	if c := got["INQUIRY"]; c.ok || !c.answered {
		t.Errorf("INQUIRY: %+v", c)
	}
	golden(t, "gen_iser.pcap", data, "iscsi")
}

func TestISERFindings(t *testing.T) {
	data := writeCapture(t, "gen_iser_findings.pcap", genPcap(t, iserFindingsScenario()))
	col, _ := analyzeBytes(t, data, analyzeConfig())
	want := []string{"iser.stag_flags", "ulp.unknown_task", "ulp.moved_mismatch", "ulp.stag_unused", "iser.bad_header"}
	checkFindings(t, col, want)
	golden(t, "gen_iser_findings.pcap", data, "iscsi")
}
