package ulp_test

import (
	"strings"
	"testing"

	"github.com/iwkit/iwkit/gen"
)

// NFS replies name what tools name (issue 27): each COMPOUND operation's
// nfsstat4 in nfs.results (a failed REMOVE: which operation failed and
// how; past OPEN's results), and a READ's eof, for NFSv3 and NFSv4.
func TestNFSResults(t *testing.T) {
	xo := func(xid uint32) uint64 { return uint64(xid)<<32 | 0x200 }
	seq := func(b xb) xb { return b.u32(53).u64(1).u64(2).u32(1).u32(0).u32(0).u32(0) }
	seqOK := func(b xb) xb { return b.u32(53).u32(0).u64(1).u64(2).u32(1).u32(0).u32(0).u32(0).u32(0) }
	read4 := seq(rpcCallHdr(40, 100003, 4, 1).opaque(nil).u32(2).u32(3)).
		u32(22).opaque(fh).
		u32(25).u64(0).u64(0).u32(0).u64(0).u32(8192)
	removeCall := func(xid uint32) xb {
		return seq(rpcCallHdr(xid, 100003, 4, 1).opaque(nil).u32(2).u32(3)).
			u32(22).opaque(fh).
			u32(28).opaque([]byte("gone"))
	}
	remove4 := removeCall(41)
	// OPEN4resok up to the delegation: stateid, cinfo, rflags, attrset
	open4 := func(b xb) xb { return b.u32(18).u32(0).u64(1).u64(2).u32(1).u64(3).u64(4).u32(0).u32(1).u32(0) }
	w40 := []chunkSeg{{h: 0x3000c, l: 8192, o: xo(40)}}
	w42 := []chunkSeg{{h: 0x3000d, l: 4096, o: xo(42)}}
	conn := rpcConn("10.0.0.1:50003",
		send("i2r", append(rdmaHdr(40, 128, 0, nil, w40, nil), read4...)),
		rdmaWrite(0x3000c, xo(40), 8192),
		sendInv(append(rdmaHdr(40, 64, 0, nil, w40, nil),
			seqOK(rpcReplyHdr(40).u32(0).opaque(nil).u32(3)).u32(22).u32(0).u32(25).u32(0).u32(1).u32(8192)...), 0x3000c),
		send("i2r", append(rdmaHdr(41, 128, 0, nil, nil, nil), remove4...)),
		send("r2i", append(rdmaHdr(41, 64, 0, nil, nil, nil),
			seqOK(rpcReplyHdr(41).u32(2).opaque(nil).u32(3)).u32(22).u32(0).u32(28).u32(2)...)),
		// OPEN results (no delegation; a write delegation), then GETFH:
		// the walk goes past OPEN4resok
		send("i2r", append(rdmaHdr(43, 128, 0, nil, nil, nil), removeCall(43)...)),
		send("r2i", append(rdmaHdr(43, 64, 0, nil, nil, nil),
			open4(seqOK(rpcReplyHdr(43).u32(0).opaque(nil).u32(4)).u32(22).u32(0)).u32(0).u32(10).u32(0).opaque(fh)...)),
		send("i2r", append(rdmaHdr(44, 128, 0, nil, nil, nil), removeCall(44)...)),
		send("r2i", append(rdmaHdr(44, 64, 0, nil, nil, nil),
			open4(seqOK(rpcReplyHdr(44).u32(0).opaque(nil).u32(4)).u32(22).u32(0)).u32(2).u64(7).u64(8).u32(0).u32(1).u64(4096).u32(0).u32(0).u32(0).opaque([]byte("OWNER@")).
				u32(10).u32(0).opaque(fh)...)),
		// NFSv3 READ of 4096 octets: short of the end, eof false
		send("i2r", append(rdmaHdr(42, 128, 0, nil, w42, nil), rpcCallHdr(42, 100003, 3, 6).opaque(fh).u64(0).u32(4096)...)),
		rdmaWrite(0x3000d, xo(42), 4096),
		sendInv(append(rdmaHdr(42, 64, 0, nil, w42, nil), rpcReplyHdr(42).u32(0).u32(0).u32(4096).u32(0).u32(4096)...), 0x3000d),
	)
	data := genPcap(t, &gen.Scenario{Name: "nfs-results", Seed: 5, Connections: []gen.Connection{conn}})
	col, _ := analyzeBytes(t, data, analyzeConfig())
	want := map[string][]string{
		"RPC reply xid 0x28 ": {`"results":"SEQUENCE NFS4_OK PUTFH NFS4_OK READ NFS4_OK"`, `"eof":true`},
		"RPC reply xid 0x29 ": {`"results":"SEQUENCE NFS4_OK PUTFH NFS4_OK REMOVE NFS4ERR_NOENT"`},
		"RPC reply xid 0x2a ": {`"eof":false`},
		"RPC reply xid 0x2b ": {`"results":"SEQUENCE NFS4_OK PUTFH NFS4_OK OPEN NFS4_OK GETFH NFS4_OK"`},
		"RPC reply xid 0x2c ": {`"results":"SEQUENCE NFS4_OK PUTFH NFS4_OK OPEN NFS4_OK GETFH NFS4_OK"`},
	}
	for i, l := range col.lines {
		for prefix, subs := range want {
			if !strings.HasPrefix(l, prefix) {
				continue
			}
			for _, s := range subs {
				if !strings.Contains(col.fields[i]["json"], s) {
					t.Errorf("%s: no %s in %s", l, s, col.fields[i]["json"])
				}
			}
			delete(want, prefix)
		}
	}
	for p := range want {
		t.Errorf("no line %q in %q", p, col.lines)
	}
}
