package ulp_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/gen"
)

// The negotiated limits and flows (ulp-reference.md §6): the NVMe-oF SQ
// size and Keep Alive Timeout, the iSCSI command window, SMB2's
// MaxReadSize and SMB Direct's MaxFragmentedSize; and RPC-over-RDMA's
// backchannel (RFC 8167), decoded and not flagged.

// limitsScenario breaks each limit once, after traffic within it.
func limitsScenario() *gen.Scenario {
	// NVMe-oF admin queue of 4 entries (HSQSIZE 3), KATO 1 s: five
	// commands outstanding, then 1.5 s without an admin command.
	conn := append(connectSQE(1, 0x01, 0, 1024, 0, 0, 3), connectData(1)...)
	le.PutUint32(conn[48:], 1000)
	nvmeOps := []gen.Op{send("i2r", conn), send("r2i", cqe(1, 1, 0, 1, 0))}
	for cid := uint16(2); cid <= 6; cid++ {
		nvmeOps = append(nvmeOps, send("i2r", sqe(0x18, cid, 0, 0x40, 0, 0, 0))) // Keep Alive
	}
	for cid := uint16(2); cid <= 6; cid++ {
		nvmeOps = append(nvmeOps, send("r2i", cqe(cid, cid, 0, 0, 0)))
	}
	late := send("i2r", sqe(0x18, 7, 0, 0x40, 0, 0, 0))
	late.Delay = gen.Duration(1500 * time.Millisecond)
	nvmeOps = append(nvmeOps, late, send("r2i", cqe(7, 7, 0, 0, 0)))
	nvme := gen.Connection{Client: "10.0.0.1:40100", Server: "10.0.0.2:4420",
		MPA: gen.MPA{Rev: pint(2), RequestData: nvmeCMReq(0, 4, 3), ReplyData: nvmeCMAcc(4)}, Ops: nvmeOps}

	// iSCSI: the target opens the window 1..2, then 2..3; CmdSN 7 is
	// outside it.
	window := func(p []byte, exp, max uint32) []byte {
		be.PutUint32(p[28+28:], exp)
		be.PutUint32(p[28+32:], max)
		return p
	}
	tur := func(itt, cmdsn uint32) []byte {
		p := scsiCmd(0x10, 0, 0, 0, 0x80, itt, 0, make([]byte, 16), nil)
		be.PutUint32(p[28+24:], cmdsn)
		return p
	}
	login := append(iserHdr(0x10, 0, 0, 0, 0), bhs(0x43, 0x87, 0, []byte("RDMAExtensions=Yes\x00"))...)
	lresp := append(iserHdr(0x10, 0, 0, 0, 0), bhs(0x23, 0x87, 0, []byte("RDMAExtensions=Yes\x00"))...)
	iscsi := iserConn("10.0.0.1:60100",
		send("i2r", login),
		send("r2i", window(lresp, 1, 2)),
		send("i2r", tur(1, 1)),
		send("r2i", window(scsiResp(1, 0, nil), 2, 3)),
		send("i2r", tur(2, 7)),
		send("r2i", window(scsiResp(2, 0, nil), 3, 4)),
	)

	// SMB2: MaxReadSize 64 KiB, then a READ of 128 KiB; an SMB Direct
	// message announced at 2 MB, above the server's MaxFragmentedSize.
	negBody := make([]byte, 64)
	le.PutUint16(negBody, 65)
	le.PutUint32(negBody[28:], 1<<20) // MaxTransactSize
	le.PutUint32(negBody[32:], 65536) // MaxReadSize
	le.PutUint32(negBody[36:], 65536) // MaxWriteSize
	neg := append(smb2Hdr(0, false, 0, 0), make([]byte, 36)...)
	smb := smbConn("10.0.0.1:45100", []byte{0, 0, 0, 16, 0, 0, 0, 16}, []byte{0, 0, 0, 16, 0, 0, 0, 16},
		send("i2r", smbdNegReq()),
		send("r2i", smbdNegResp(255)),
		send("i2r", smbdData(255, 0, neg)),
		send("r2i", smbdData(1, 0, append(smb2Hdr(0, true, 0, 0), negBody...))),
		send("i2r", smbdData(0, 0, smb2Read(1, 65536, 0x7c01, 0x7f0000000000))),
		rdmaWrite(0x7c01, 0x7f0000000000, 65536),
		sendInv(smbdData(1, 0, smb2ReadResp(1, 65536)), 0x7c01),
		send("i2r", smbdData(0, 0, smb2Read(2, 131072, 0x7c02, 0x7f0000100000))),
		rdmaWrite(0x7c02, 0x7f0000100000, 131072),
		sendInv(smbdData(1, 0, smb2ReadResp(2, 131072)), 0x7c02),
		send("i2r", smbdData(0, 2000000, make([]byte, 64))),
	)

	// RPC-over-RDMA: a forward NULL, then the server's backchannel
	// CB_COMPOUND (CB_SEQUENCE) and the client's reply.
	cb := rpcCallHdr(0x9001, 0x40000000, 1, 1).opaque(nil).u32(1).u32(0).u32(1).
		u32(11).opaque(make([]byte, 16)).u32(1).u32(0).u32(0).u32(0).u32(0)
	rpc := rpcConn("10.0.0.1:50100",
		send("i2r", append(rdmaHdr(1, 128, 0, nil, nil, nil), rpcCallHdr(1, 100003, 4, 0)...)),
		send("r2i", append(rdmaHdr(1, 64, 0, nil, nil, nil), rpcReplyHdr(1)...)),
		send("r2i", append(rdmaHdr(0x9001, 1, 0, nil, nil, nil), cb...)),
		send("i2r", append(rdmaHdr(0x9001, 1, 0, nil, nil, nil), rpcReplyHdr(0x9001).u32(0).opaque(nil).u32(1).u32(11).u32(0)...)),
		send("i2r", append(rdmaHdr(2, 128, 0, nil, nil, nil), rpcCallHdr(2, 100003, 4, 0)...)),
		send("r2i", append(rdmaHdr(2, 64, 0, nil, nil, nil), rpcReplyHdr(2)...)),
	)
	return &gen.Scenario{Name: "ulp-limits", Seed: 9, Connections: []gen.Connection{nvme, iscsi, smb, rpc}}
}

func TestLimits(t *testing.T) {
	data := writeCapture(t, "gen_limits.pcap", genPcap(t, limitsScenario()))
	col, _ := analyzeBytes(t, data, analyzeConfig())
	want := []string{"nvme.sq_overrun", "nvme.keep_alive", "iscsi.cmdsn_window", "smb2.size_limit", "smbd.fragmented_too_large"}
	checkFindings(t, col, want)
	// each once: the traffic within the limits raised nothing
	for _, w := range want {
		if n := count(col.findings, w); n != 1 {
			t.Errorf("%s raised %d times", w, n)
		}
	}
	all := strings.Join(col.lines, "\n")
	for _, s := range []string{"NVMe Keep Alive cid 7", "SMB2 NEGOTIATE response mid 0", "RPC call xid 0x9001 NFSv4 callback CB_SEQUENCE ops CB_SEQUENCE",
		"RPC reply xid 0x9001 SUCCESS (NFSv4 callback CB_SEQUENCE"} {
		if !strings.Contains(all, s) {
			t.Errorf("no %q in\n%s", s, all)
		}
	}
	if !slices.ContainsFunc(col.fields, func(m map[string]string) bool { return strings.Contains(m["json"], `"max_read_size":65536`) }) {
		t.Error("no smb2.max_read_size")
	}
	golden(t, "gen_limits.pcap", data, "")
}

func count(l []string, s string) int {
	n := 0
	for _, x := range l {
		if x == s {
			n++
		}
	}
	return n
}
