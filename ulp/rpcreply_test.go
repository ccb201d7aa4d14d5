package ulp_test

import (
	"strings"
	"testing"

	"github.com/iwkit/iwkit/gen"
)

// writeData is an RDMA Write of the given octets (the responder placing a
// reply into the requester's reply chunk).
func writeData(stag uint32, to uint64, b []byte) gen.Op {
	return gen.Op{Op: "write", Dir: "r2i", Payload: b, STag: p32(stag), TO: p64(to)}
}

// seq4res is SEQUENCE4res NFS4_OK (RFC 8881 §18.46.2).
func seq4res(b xb) xb {
	return b.u32(53).u32(0).u64(1).u64(2).u32(1).u32(0).u32(63).u32(63).u32(0)
}

// rpcNoMsgScenario: replies sent through a reply chunk (RDMA_NOMSG, RFC
// 8166 §3.6), each RDMA-Written into the chunk before the Send:
//   - xid 0x21 NFSv3 READDIRPLUS, 5000 octets across two of three
//     segments, NFS3_OK;
//   - xid 0x22 NFSv4.2 SEQUENCE PUTFH OPEN GETFH failing NFS4ERR_NOENT;
//   - xid 0x23 NFS_ACL GETACL, NFS3ERR_ACCES (13);
//   - xid 0x24 NFSv4.2 EXCHANGE_ID, NFS4_OK;
//   - xid 0x25 NFSv3 READDIRPLUS of 70000 octets, beyond the 65536 kept:
//     decoded from the prefix, with a finding.
func rpcNoMsgScenario() *gen.Scenario {
	xo := func(xid uint32) uint64 { return uint64(xid)<<32 | 0x1000 }
	reply := func(n int, head xb) []byte { // head padded to n octets
		return append(head, make([]byte, n-len(head))...)
	}
	rdp := func(xid uint32) xb {
		return rpcCallHdr(xid, 100003, 3, 17).opaque(fh).u64(0).u64(0).u32(4096).u32(32768)
	}
	v4 := func(xid uint32, ops int) xb {
		return rpcCallHdr(xid, 100003, 4, 1).opaque(nil).u32(2).u32(uint32(ops)).u32(53).u64(1).u64(2).u32(1).u32(0).u32(0).u32(0)
	}
	// READDIRPLUS: three 4096-octet segments, 5000 octets written
	r21 := reply(5000, rpcReplyHdr(0x21).u32(0))
	seg3 := []chunkSeg{{h: 0x2101, l: 4096, o: xo(0x21)}, {h: 0x2102, l: 4096, o: xo(0x21) + 4096}, {h: 0x2103, l: 4096, o: xo(0x21) + 8192}}
	// OPEN (claim null, "missing"): SEQUENCE PUTFH OPEN GETFH
	open := v4(0x22, 4).u32(22).opaque(fh).
		u32(18).u32(0).u32(1).u32(0).u64(7).opaque([]byte("owner")).u32(0).u32(0).opaque([]byte("missing")).
		u32(10)
	r22 := seq4res(rpcReplyHdr(0x22).u32(2).opaque(nil).u32(3)).u32(22).u32(0).u32(18).u32(2)
	r23 := reply(1200, rpcReplyHdr(0x23).u32(13))
	exid := v4(0x24, 1) // EXCHANGE_ID's arguments are not needed here: the walk stops
	exid = exid[:len(exid)-36].u32(42)
	r24 := reply(1500, rpcReplyHdr(0x24).u32(0).opaque(nil).u32(1).u32(42).u32(0))
	r25 := reply(70000, rpcReplyHdr(0x25).u32(0))
	big := []chunkSeg{{h: 0x2501, l: 40000, o: xo(0x25)}, {h: 0x2502, l: 40000, o: xo(0x25) + 40000}}
	conn := rpcConn("10.0.0.1:50003",
		send("i2r", append(rdmaHdr(0x21, 128, 0, nil, nil, seg3), rdp(0x21)...)),
		writeData(0x2101, xo(0x21), r21[:4096]),
		writeData(0x2102, xo(0x21)+4096, r21[4096:]),
		send("r2i", rdmaHdr(0x21, 64, 1, nil, nil, []chunkSeg{{h: 0x2101, l: 4096, o: xo(0x21)}, {h: 0x2102, l: 904, o: xo(0x21) + 4096}, {h: 0x2103, l: 0, o: xo(0x21) + 8192}})),
		send("i2r", append(rdmaHdr(0x22, 128, 0, nil, nil, []chunkSeg{{h: 0x2201, l: 4096, o: xo(0x22)}}), open...)),
		writeData(0x2201, xo(0x22), r22),
		send("r2i", rdmaHdr(0x22, 64, 1, nil, nil, []chunkSeg{{h: 0x2201, l: uint32(len(r22)), o: xo(0x22)}})),
		send("i2r", append(rdmaHdr(0x23, 128, 0, nil, nil, []chunkSeg{{h: 0x2301, l: 4096, o: xo(0x23)}}), rpcCallHdr(0x23, 100227, 3, 1).opaque(fh).u32(15)...)),
		writeData(0x2301, xo(0x23), r23),
		send("r2i", rdmaHdr(0x23, 64, 1, nil, nil, []chunkSeg{{h: 0x2301, l: uint32(len(r23)), o: xo(0x23)}})),
		send("i2r", append(rdmaHdr(0x24, 128, 0, nil, nil, []chunkSeg{{h: 0x2401, l: 4096, o: xo(0x24)}}), exid...)),
		writeData(0x2401, xo(0x24), r24),
		send("r2i", rdmaHdr(0x24, 64, 1, nil, nil, []chunkSeg{{h: 0x2401, l: uint32(len(r24)), o: xo(0x24)}})),
		send("i2r", append(rdmaHdr(0x25, 128, 0, nil, nil, big), rdp(0x25)...)),
		writeData(0x2501, xo(0x25), r25[:40000]),
		writeData(0x2502, xo(0x25)+40000, r25[40000:]),
		send("r2i", rdmaHdr(0x25, 64, 1, nil, nil, []chunkSeg{{h: 0x2501, l: 40000, o: xo(0x25)}, {h: 0x2502, l: 30000, o: xo(0x25) + 40000}})),
	)
	return &gen.Scenario{Name: "rpcrdma-nomsg", Seed: 5, Connections: []gen.Connection{conn}}
}

// TestRPCRDMANoMsgReply: the RPC and NFS status of replies sent through
// the reply chunk come from the RDMA Writes into it (issue 27 wrong 3).
func TestRPCRDMANoMsgReply(t *testing.T) {
	data := writeCapture(t, "gen_rpcrdma_nomsg.pcap", genPcap(t, rpcNoMsgScenario()))
	col, _ := analyzeBytes(t, data, analyzeConfig())
	checkFindings(t, col, []string{"rpcrdma.reply_chunk_cut"})
	want := map[string]struct {
		ok     bool
		status string
	}{
		"NFSv3 READDIRPLUS": {true, "SUCCESS"},
		"NFSv4 OPEN":        {false, "NFS4ERR_NOENT"},
		"NFS_ACL GETACL":    {false, "NFSERR_ACCESS"},
		"NFSv4 EXCHANGE_ID": {true, "SUCCESS"},
	}
	if len(col.cmds) != 5 {
		t.Fatalf("%d commands: %+v", len(col.cmds), col.cmds)
	}
	for _, c := range col.cmds {
		w, ok := want[c.name]
		if !ok {
			t.Errorf("command %q", c.name)
			continue
		}
		if c.ok != w.ok || !c.answered {
			t.Errorf("%s xid 0x%x: ok %v answered %v, want ok %v", c.name, c.id, c.ok, c.answered, w.ok)
		}
	}
	all := strings.Join(col.lines, "\n")
	for _, s := range []string{"NOMSG xid 0x22 | RPC reply xid 0x22 NFS4ERR_NOENT", "NOMSG xid 0x23 | RPC reply xid 0x23 NFSERR_ACCESS",
		"NOMSG xid 0x21 | RPC reply xid 0x21 SUCCESS", "NOMSG xid 0x25 | RPC reply xid 0x25 SUCCESS"} {
		if !strings.Contains(all, s) {
			t.Errorf("no %q in\n%s", s, all)
		}
	}
	var js []string
	for _, f := range col.fields {
		js = append(js, f["json"])
	}
	j := strings.Join(js, "\n")
	for _, s := range []string{`"results":"SEQUENCE NFS4_OK PUTFH NFS4_OK OPEN NFS4ERR_NOENT"`, `"reply_chunk_octets":5000`,
		`"reply_chunk_octets":65536,"reply_chunk_partial":true`, `"results":"EXCHANGE_ID NFS4_OK`} {
		if !strings.Contains(j, s) {
			t.Errorf("no %s in the JSON", s)
		}
	}
	golden(t, "gen_rpcrdma_nomsg.pcap", data, "rpc")
}
