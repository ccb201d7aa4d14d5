package ulp_test

import (
	"testing"

	"github.com/iwkit/iwkit/gen"
)

// RPC-over-RDMA message builders (RFC 8166 §4; ulp-reference.md §4).

type xb []byte

func (b xb) u32(v uint32) xb { return be.AppendUint32(b, v) }
func (b xb) u64(v uint64) xb { return be.AppendUint64(b, v) }
func (b xb) opaque(d []byte) xb {
	b = b.u32(uint32(len(d)))
	b = append(b, d...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

type chunkSeg struct {
	pos, h, l uint32
	o         uint64
}

// rdmaHdr: read list (pos used), write list (one chunk of the given
// segments), reply chunk.
func rdmaHdr(xid, credit, proc uint32, reads, write, reply []chunkSeg) xb {
	b := xb(nil).u32(xid).u32(1).u32(credit).u32(proc)
	for _, s := range reads {
		b = b.u32(1).u32(s.pos).u32(s.h).u32(s.l).u64(s.o)
	}
	b = b.u32(0)
	if len(write) > 0 {
		b = b.u32(1).u32(uint32(len(write)))
		for _, s := range write {
			b = b.u32(s.h).u32(s.l).u64(s.o)
		}
	}
	b = b.u32(0)
	if len(reply) > 0 {
		b = b.u32(1).u32(uint32(len(reply)))
		for _, s := range reply {
			b = b.u32(s.h).u32(s.l).u64(s.o)
		}
	} else {
		b = b.u32(0)
	}
	return b
}

func rpcCallHdr(xid, prog, vers, proc uint32) xb {
	cred := xb(nil).u32(0).opaque([]byte("client")).u32(0).u32(0).u32(0)
	return xb(nil).u32(xid).u32(0).u32(2).u32(prog).u32(vers).u32(proc).u32(1).opaque(cred).u32(0).u32(0)
}

func rpcReplyHdr(xid uint32) xb {
	return xb(nil).u32(xid).u32(1).u32(0).u32(0).u32(0).u32(0)
}

var fh = []byte("filehandle-0123456789abcdef-xyz!")

func rpcPD(r bool) []byte {
	f := byte(0)
	if r {
		f = 1
	}
	return []byte{0xF6, 0xAB, 0x0E, 0x18, 1, f, 3, 3}
}

func rpcConn(client string, ops ...gen.Op) gen.Connection {
	return gen.Connection{Client: client, Server: "10.0.0.2:20049",
		MPA: gen.MPA{Rev: pint(2), RequestData: rpcPD(true), ReplyData: rpcPD(false)}, Ops: ops}
}

func rpcScenario() *gen.Scenario {
	xo := func(xid uint32) uint64 { return uint64(xid)<<32 | 0x200 }
	// NFSv3 WRITE of 64 KiB: the data goes in a read chunk at the position
	// right after the data's length word.
	wcall := rpcCallHdr(3, 100003, 3, 7).opaque(fh).u64(0).u32(65536).u32(2).u32(65536)
	wpos := uint32(len(wcall))
	// NFSv4.2 COMPOUND: SEQUENCE PUTFH READ
	c4 := rpcCallHdr(4, 100003, 4, 1).opaque(nil).u32(2).u32(3).
		u32(53).u64(1).u64(2).u32(1).u32(0).u32(0).u32(0).
		u32(22).opaque(fh).
		u32(25).u64(0).u64(0).u32(0).u64(0).u32(8192)
	conn := rpcConn("10.0.0.1:50001",
		send("i2r", append(rdmaHdr(1, 128, 0, nil, nil, nil), rpcCallHdr(1, 100003, 3, 0)...)),
		send("r2i", append(rdmaHdr(1, 64, 0, nil, nil, nil), rpcReplyHdr(1)...)),
		// NFSv3 READ of 128 KiB into a write chunk
		send("i2r", append(rdmaHdr(2, 128, 0, nil, []chunkSeg{{h: 0x1000a, l: 131072, o: xo(2)}}, nil), rpcCallHdr(2, 100003, 3, 6).opaque(fh).u64(0).u32(131072)...)),
		rdmaWrite(0x1000a, xo(2), 131072),
		sendInv(append(rdmaHdr(2, 64, 0, nil, []chunkSeg{{h: 0x1000a, l: 131072, o: xo(2)}}, nil), rpcReplyHdr(2).u32(0).u32(0).u32(131072).u32(1).u32(131072)...), 0x1000a),
		send("i2r", append(rdmaHdr(3, 128, 0, []chunkSeg{{pos: wpos, h: 0x2000b, l: 65536, o: xo(3)}}, nil, nil), wcall...)),
		rdmaRead(0x2000b, xo(3), 65536, 0x9003),
		sendInv(append(rdmaHdr(3, 64, 0, nil, nil, nil), rpcReplyHdr(3).u32(0).u32(0).u32(65536).u32(2)...), 0x2000b),
		send("i2r", append(rdmaHdr(4, 128, 0, nil, []chunkSeg{{h: 0x3000c, l: 8192, o: xo(4)}}, nil), c4...)),
		rdmaWrite(0x3000c, xo(4), 8192),
		sendInv(append(rdmaHdr(4, 64, 0, nil, []chunkSeg{{h: 0x3000c, l: 8192, o: xo(4)}}, nil), rpcReplyHdr(4).u32(0).opaque(nil).u32(3)...), 0x3000c),
		// READDIRPLUS with a three-segment reply chunk, answered RDMA_NOMSG
		send("i2r", append(rdmaHdr(5, 128, 0, nil, nil, []chunkSeg{{h: 0x4001, l: 4096, o: xo(5)}, {h: 0x4002, l: 4096, o: xo(5) + 4096}, {h: 0x4003, l: 4096, o: xo(5) + 8192}}), rpcCallHdr(5, 100003, 3, 17).opaque(fh).u64(0).u64(0).u32(4096).u32(32768)...)),
		rdmaWrite(0x4001, xo(5), 2000),
		send("r2i", rdmaHdr(5, 64, 1, nil, nil, []chunkSeg{{h: 0x4001, l: 2000, o: xo(5)}, {h: 0x4002, l: 0, o: xo(5) + 4096}, {h: 0x4003, l: 0, o: xo(5) + 8192}})),
	)
	return &gen.Scenario{Name: "rpcrdma", Seed: 3, Connections: []gen.Connection{conn}}
}

func rpcFindingsScenario() *gen.Scenario {
	conn := rpcConn("10.0.0.1:50002",
		// transport xid ≠ RPC xid
		send("i2r", append(rdmaHdr(10, 128, 0, nil, nil, nil), rpcCallHdr(11, 100003, 3, 0)...)),
		// a reply granting 0 credits, for an xid nobody called
		send("r2i", append(rdmaHdr(12, 0, 0, nil, nil, nil), rpcReplyHdr(12)...)),
		// a call larger than the 4 KiB inline size
		send("i2r", append(append(rdmaHdr(13, 128, 0, nil, nil, nil), rpcCallHdr(13, 100003, 3, 1)...), make([]byte, 5000)...)),
		send("r2i", append(rdmaHdr(13, 1, 0, nil, nil, nil), rpcReplyHdr(13).u32(0)...)),
		// a write whose read chunk is never read, and an RDMA Write into it
		send("i2r", append(rdmaHdr(14, 128, 0, []chunkSeg{{pos: 100, h: 0x5001, l: 4096}}, nil, nil), rpcCallHdr(14, 100003, 3, 7).opaque(fh).u64(0).u32(4096).u32(0).u32(4096)...)),
		// a second call with credit 1 granted: overrun
		send("i2r", append(rdmaHdr(15, 128, 0, nil, nil, nil), rpcCallHdr(15, 100003, 3, 0)...)),
		rdmaWrite(0x5001, 0, 512),
		send("r2i", append(rdmaHdr(14, 1, 0, nil, nil, nil), rpcReplyHdr(14).u32(0)...)),
		// a reply echoing 8192 octets written where 4096 were
		send("i2r", append(rdmaHdr(16, 128, 0, nil, []chunkSeg{{h: 0x6001, l: 8192}}, nil), rpcCallHdr(16, 100003, 3, 6).opaque(fh).u64(0).u32(8192)...)),
		rdmaWrite(0x6001, 0, 4096),
		send("r2i", append(rdmaHdr(16, 2, 0, nil, []chunkSeg{{h: 0x6001, l: 8192}}, nil), rpcReplyHdr(16).u32(0)...)),
		// a write whose read chunk is never read, answered with success
		send("i2r", append(rdmaHdr(17, 128, 0, []chunkSeg{{pos: 100, h: 0x7001, l: 4096}}, nil, nil), rpcCallHdr(17, 100003, 3, 7).opaque(fh).u64(0).u32(4096).u32(0).u32(4096)...)),
		send("r2i", append(rdmaHdr(17, 8, 0, nil, nil, nil), rpcReplyHdr(17).u32(0)...)),
	)
	return &gen.Scenario{Name: "rpcrdma-findings", Seed: 4, Connections: []gen.Connection{conn}}
}

func TestRPCRDMAGenerated(t *testing.T) {
	data := writeCapture(t, "gen_rpcrdma.pcap", genPcap(t, rpcScenario()))
	col, _ := analyzeBytes(t, data, analyzeConfig())
	got := checkClean(t, col, []string{"RPC-over-RDMA CM version 1 send 4096 recv 4096 R", "RPC call xid 0x2 NFSv3 READ offset 0 count 131072",
		"NFSv4 READ ops SEQUENCE PUTFH READ", "RPC-over-RDMA NOMSG xid 0x5"})
	if c := got["NFSv3 READ"]; c.moved != 131072 || c.writes != 1 || !c.ok {
		t.Errorf("READ: %+v", c)
	}
	if c := got["NFSv3 WRITE"]; c.moved != 65536 || c.reads != 1 || !c.ok {
		t.Errorf("WRITE: %+v", c)
	}
	if c := got["NFSv3 READDIRPLUS"]; c.moved != 2000 || !c.answered {
		t.Errorf("READDIRPLUS: %+v", c)
	}
	if len(col.cmds) != 5 {
		t.Errorf("%d commands: %+v", len(col.cmds), col.cmds)
	}
	golden(t, "gen_rpcrdma.pcap", data, "rpc")
}

func TestRPCRDMAFindings(t *testing.T) {
	data := writeCapture(t, "gen_rpcrdma_findings.pcap", genPcap(t, rpcFindingsScenario()))
	col, _ := analyzeBytes(t, data, analyzeConfig())
	want := []string{"rpcrdma.xid_mismatch", "rpcrdma.zero_credits", "ulp.unknown_task", "rpcrdma.inline_too_large",
		"ulp.stag_wrong_op", "ulp.stag_unused", "rpcrdma.credit_overrun", "ulp.moved_mismatch"}
	checkFindings(t, col, want)
	golden(t, "gen_rpcrdma_findings.pcap", data, "rpc")
}
