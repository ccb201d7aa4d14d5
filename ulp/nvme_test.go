package ulp_test

import (
	"testing"

	"github.com/iwkit/iwkit/gen"
)

// NVMe-oF message builders (ulp-reference.md §1).

func nvmeCMReq(qid, hrq, hsq uint16) []byte {
	b := make([]byte, 32)
	le.PutUint16(b[2:], qid)
	le.PutUint16(b[4:], hrq)
	le.PutUint16(b[6:], hsq)
	return b
}

func nvmeCMAcc(crq uint16) []byte {
	b := make([]byte, 32)
	le.PutUint16(b[2:], crq)
	return b
}

// sqe builds a 64-octet SQE; sgl is keyed when key != 0 or l == 0 with
// id 0x40/0x4F, else in-capsule offset (0x01).
func sqe(opc uint8, cid uint16, nsid uint32, id uint8, addr uint64, l uint32, key uint32) []byte {
	b := make([]byte, 64)
	b[0], b[1] = opc, 0x40
	le.PutUint16(b[2:], cid)
	le.PutUint32(b[4:], nsid)
	le.PutUint64(b[24:], addr)
	if id == 0x01 {
		le.PutUint32(b[32:], l)
	} else {
		b[32], b[33], b[34] = byte(l), byte(l>>8), byte(l>>16)
		le.PutUint32(b[35:], key)
	}
	b[39] = id
	return b
}

func connectSQE(cid uint16, id uint8, addr uint64, l, key uint32, qid, sqsize uint16) []byte {
	b := sqe(0x7F, cid, 0, id, addr, l, key)
	b[4] = 0x01
	le.PutUint16(b[42:], qid)
	le.PutUint16(b[44:], sqsize)
	le.PutUint32(b[48:], 120000)
	return b
}

func connectData(cntlid uint16) []byte {
	b := make([]byte, 1024)
	copy(b, "0123456789abcdef")
	le.PutUint16(b[16:], cntlid)
	copy(b[256:], "nqn.2024-01.org.iwkit:sub1")
	copy(b[512:], "nqn.2014-08.org.nvmexpress:uuid:iwkit-host")
	return b
}

func rw(opc uint8, cid uint16, slba uint64, nlb uint16, id uint8, addr uint64, l, key uint32) []byte {
	b := sqe(opc, cid, 1, id, addr, l, key)
	le.PutUint64(b[40:], slba)
	le.PutUint16(b[48:], nlb-1)
	return b
}

func cqe(cid, sqhd, sqid uint16, dw0 uint32, status uint16) []byte {
	b := make([]byte, 16)
	le.PutUint32(b, dw0)
	le.PutUint16(b[8:], sqhd)
	le.PutUint16(b[10:], sqid)
	le.PutUint16(b[12:], cid)
	le.PutUint16(b[14:], status<<1)
	return b
}

func send(dir string, b []byte) gen.Op { return gen.Op{Op: "send", Dir: dir, Payload: b} }
func sendInv(b []byte, stag uint32) gen.Op {
	return gen.Op{Op: "send_inv", Dir: "r2i", Payload: b, InvSTag: stag}
}
func rdmaRead(stag uint32, to uint64, size int, sink uint32) gen.Op {
	return gen.Op{Op: "read", Dir: "r2i", Size: gen.Size(size), STag: p32(stag), TO: p64(to), SinkSTag: p32(sink), SinkTO: p64(0x1000)}
}
func rdmaWrite(stag uint32, to uint64, size int) gen.Op {
	return gen.Op{Op: "write", Dir: "r2i", Size: gen.Size(size), STag: p32(stag), TO: p64(to)}
}

func nvmeConn(client string, qid uint16, ops ...gen.Op) gen.Connection {
	return gen.Connection{Client: client, Server: "10.0.0.2:4420",
		MPA: gen.MPA{Rev: pint(2), RequestData: nvmeCMReq(qid, 32, 31), ReplyData: nvmeCMAcc(32)}, Ops: ops}
}

// nvmeScenario: an admin queue (Connect by RDMA Read, Property Get,
// Identify by RDMA Write) and an I/O queue (in-capsule Connect, a Write by
// RDMA Read, a Read by RDMA Write, an in-capsule Write, a Flush).
func nvmeScenario() *gen.Scenario {
	cd := append(connectSQE(1, 0x01, 0, 1024, 0, 1, 31), connectData(1)...)
	pg := sqe(0x7F, 0x1002, 0, 0x40, 0, 0, 0)
	pg[4] = 0x04
	le.PutUint32(pg[44:], 0) // CAP
	pg[40] = 1
	ident := sqe(0x06, 0x1003, 0, 0x4F, 0x7f0000100000, 4096, 0x48bc2e02)
	ident[40] = 1
	icw := append(rw(0x01, 0x3004, 8, 1, 0x01, 0, 4096, 0), make([]byte, 4096)...)
	admin := nvmeConn("10.0.0.1:40001", 0,
		send("i2r", connectSQE(0x1001, 0x4F, 0x7f0000200000, 1024, 0x1a2b3c01, 0, 31)),
		gen.Op{Op: "read", Dir: "r2i", Payload: connectData(0xFFFF), STag: p32(0x1a2b3c01), TO: p64(0x7f0000200000), SinkSTag: p32(0x9001), SinkTO: p64(0x1000)},
		sendInv(cqe(0x1001, 1, 0, 1, 0), 0x1a2b3c01),
		send("i2r", pg),
		send("r2i", cqe(0x1002, 2, 0, 0x0040ff, 0)),
		send("i2r", ident),
		rdmaWrite(0x48bc2e02, 0x7f0000100000, 4096),
		sendInv(cqe(0x1003, 3, 0, 0, 0), 0x48bc2e02),
	)
	io := nvmeConn("10.0.0.1:40002", 1,
		send("i2r", cd),
		send("r2i", cqe(1, 1, 1, 1, 0)),
		send("i2r", rw(0x01, 0x2001, 2048, 8, 0x4F, 0x7f0000300000, 32768, 0x48bc2e10)),
		rdmaRead(0x48bc2e10, 0x7f0000300000, 32768, 0x9002),
		sendInv(cqe(0x2001, 2, 1, 0, 0), 0x48bc2e10),
		send("i2r", rw(0x02, 0x2002, 2048, 8, 0x4F, 0x7f0000400000, 32768, 0x48bc2e11)),
		rdmaWrite(0x48bc2e11, 0x7f0000400000, 16384),
		gen.Op{Op: "write", Dir: "r2i", Size: 16384, STag: p32(0x48bc2e11), TO: p64(0x7f0000404000)},
		sendInv(cqe(0x2002, 3, 1, 0, 0), 0x48bc2e11),
		send("i2r", icw),
		send("r2i", cqe(0x3004, 4, 1, 0, 0)),
		send("i2r", sqe(0x00, 0x2005, 1, 0x40, 0, 0, 0)),
		send("r2i", cqe(0x2005, 5, 1, 0, 0)),
	)
	return &gen.Scenario{Name: "nvme", Seed: 1, Connections: []gen.Connection{admin, io}}
}

// nvmeFindingsScenario breaks one rule per command (ulp-reference.md §6.2).
func nvmeFindingsScenario() *gen.Scenario {
	prp := sqe(0x00, 0x0010, 1, 0x40, 0, 0, 0)
	prp[1] = 0x00
	c := nvmeConn("10.0.0.1:40003", 1,
		// Connect whose QID differs from the CM private data's
		send("i2r", append(connectSQE(1, 0x01, 0, 1024, 0, 2, 31), connectData(1)...)),
		send("r2i", cqe(1, 1, 1, 1, 0)),
		// Read of 8 KiB of which 4 KiB come: moved ≠ SGL length
		send("i2r", rw(0x02, 2, 0, 2, 0x4F, 0x10000, 8192, 0x100)),
		rdmaWrite(0x100, 0x10000, 4096),
		sendInv(cqe(2, 2, 1, 0, 0), 0x100),
		// completion for a CID never sent
		send("r2i", cqe(99, 3, 1, 0, 0)),
		// a Write whose buffer the controller RDMA-Writes into
		send("i2r", rw(0x01, 3, 0, 1, 0x4F, 0x20000, 4096, 0x200)),
		rdmaWrite(0x200, 0x20000, 4096),
		sendInv(cqe(3, 4, 1, 0, 0), 0x200),
		// a Write whose buffer is never read, completed successfully
		send("i2r", rw(0x01, 4, 0, 1, 0x4F, 0x30000, 4096, 0x300)),
		sendInv(cqe(4, 5, 1, 0, 0), 0x301),
		// PRP on a fabric; a 20-octet response capsule; wrong SQID
		send("i2r", prp),
		send("r2i", append(cqe(0x10, 6, 3, 0, 0), 0, 0, 0, 0)),
		// a Read that fails: its unused key is no finding
		send("i2r", rw(0x02, 5, 1<<40, 1, 0x4F, 0x40000, 4096, 0x400)),
		sendInv(cqe(5, 7, 1, 0, 0x80), 0x400),
		// an RDMA Write to an STag nobody advertised
		rdmaWrite(0x777, 0x0, 512),
		// a Write whose data the controller RDMA-Reads into a sink it
		// registered without remote write: it terminates on the Read
		// Response (SPDK over iWARP)
		send("i2r", rw(0x01, 6, 0, 1, 0x4F, 0x50000, 4096, 0x600)),
		rdmaRead(0x600, 0x50000, 4096, 0x9600),
		gen.Op{Op: "terminate", Dir: "r2i", Layer: 1, EType: 1, Code: 0, Headers: "ddp"},
	)
	return &gen.Scenario{Name: "nvme-findings", Seed: 2, Connections: []gen.Connection{c}}
}

func TestNVMeGenerated(t *testing.T) {
	data := writeCapture(t, "gen_nvme.pcap", genPcap(t, nvmeScenario()))
	col, rep := analyzeBytes(t, data, analyzeConfig())
	byName := checkClean(t, col, []string{
		"NVMe CM request qid 0 hrqsize 32 hsqsize 31",
		"NVMe CM accept crqsize 32",
		"NVMe Connect cid 4097 qid 0 sqsize 31 key 0x1a2b3c01",
		"NVMe Connect data cid 4097 subnqn nqn.2024-01.org.iwkit:sub1 hostnqn nqn.2014-08.org.nvmexpress:uuid:iwkit-host",
		"NVMe Write cid 8193 nsid 1 lba 2048 len 8 key 0x48bc2e10",
	})
	if c := byName["Write"]; c.moved != 32768 || c.reads != 1 || !c.ok {
		t.Errorf("Write linked as %+v, want 32768 octets by 1 Read", c)
	}
	if c := byName["Read"]; c.moved != 32768 || c.writes != 2 {
		t.Errorf("Read linked as %+v, want 32768 octets by 2 Writes", c)
	}
	if c := byName["Identify"]; c.moved != 4096 || c.writes != 1 {
		t.Errorf("Identify linked as %+v", c)
	}
	if c := byName["Connect"]; !c.answered {
		t.Errorf("Connect: %+v", c)
	}
	if len(col.cmds) != 8 {
		t.Errorf("%d commands, want 8: %+v", len(col.cmds), col.cmds)
	}
	if rep.ULP == nil || rep.ULP.Messages[1] == 0 {
		t.Errorf("no NVMe statistics")
	}
	golden(t, "gen_nvme.pcap", data, "nvme")
}

func TestNVMeFindings(t *testing.T) {
	data := writeCapture(t, "gen_nvme_findings.pcap", genPcap(t, nvmeFindingsScenario()))
	col, _ := analyzeBytes(t, data, analyzeConfig())
	want := []string{"nvme.connect_mismatch", "ulp.moved_mismatch", "ulp.unknown_task", "ulp.stag_wrong_op",
		"ulp.stag_unused", "ulp.invalidate_foreign", "nvme.psdt_prp", "nvme.response_size", "nvme.sqid_mismatch", "ulp.stag_unknown", "ulp.read_sink_rights"}
	checkFindings(t, col, want, "rdmap.terminate")
	golden(t, "gen_nvme_findings.pcap", data, "nvme")
}
