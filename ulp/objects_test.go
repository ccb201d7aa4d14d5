package ulp_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/internal/oracle"
)

// nfsObjectsScenario: names learnt from LOOKUP / OPEN replies, shown on
// the READs of the handles they returned.
//   - NFSv3 LOOKUP "data.bin" in an unknown directory → handle fhA; a
//     READ of fhA (xid 0x32) is of data.bin.
//   - NFSv4 PUTROOTFH LOOKUP "export" GETFH → fhB; PUTFH fhB OPEN "f1"
//     GETFH → fhC; PUTFH fhC READ (xid 0x35) is of /export/f1.
func nfsObjectsScenario() *gen.Scenario {
	fhA, fhB, fhC := []byte("handle-A-data.bin-0123456789abcd"), []byte("handle-B-export-0123456789abcdef"), []byte("handle-C-f1-0123456789abcdefghij")
	xo := func(xid uint32) uint64 { return uint64(xid)<<32 | 0x400 }
	seq := func(b xb) xb { return b.u32(53).u64(1).u64(2).u32(1).u32(0).u32(0).u32(0) }
	v4 := func(xid uint32, ops int) xb {
		return seq(rpcCallHdr(xid, 100003, 4, 1).opaque(nil).u32(2).u32(uint32(ops)))
	}
	v4res := func(xid uint32, n int) xb { return seq4res(rpcReplyHdr(xid).u32(0).opaque(nil).u32(uint32(n))) }
	conn := rpcConn("10.0.0.1:50004",
		send("i2r", append(rdmaHdr(0x31, 128, 0, nil, nil, nil), rpcCallHdr(0x31, 100003, 3, 3).opaque(fh).opaque([]byte("data.bin"))...)),
		send("r2i", append(rdmaHdr(0x31, 64, 0, nil, nil, nil), rpcReplyHdr(0x31).u32(0).opaque(fhA).u32(0).u32(0)...)),
		send("i2r", append(rdmaHdr(0x32, 128, 0, nil, []chunkSeg{{h: 0x3201, l: 4096, o: xo(0x32)}}, nil), rpcCallHdr(0x32, 100003, 3, 6).opaque(fhA).u64(0).u32(4096)...)),
		rdmaWrite(0x3201, xo(0x32), 4096),
		sendInv(append(rdmaHdr(0x32, 64, 0, nil, []chunkSeg{{h: 0x3201, l: 4096, o: xo(0x32)}}, nil), rpcReplyHdr(0x32).u32(0).u32(0).u32(4096).u32(1).u32(4096)...), 0x3201),
		send("i2r", append(rdmaHdr(0x33, 128, 0, nil, nil, nil), v4(0x33, 4).u32(24).u32(15).opaque([]byte("export")).u32(10)...)),
		send("r2i", append(rdmaHdr(0x33, 64, 0, nil, nil, nil), v4res(0x33, 4).u32(24).u32(0).u32(15).u32(0).u32(10).u32(0).opaque(fhB)...)),
		send("i2r", append(rdmaHdr(0x34, 128, 0, nil, nil, nil), v4(0x34, 4).u32(22).opaque(fhB).
			u32(18).u32(0).u32(1).u32(0).u64(7).opaque([]byte("owner")).u32(0).u32(0).opaque([]byte("f1")).u32(10)...)),
		send("r2i", append(rdmaHdr(0x34, 64, 0, nil, nil, nil), v4res(0x34, 4).u32(22).u32(0).
			u32(18).u32(0).u32(1).u64(0).u64(0).u32(1).u64(0).u64(0).u32(0).u32(0).
			u32(10).u32(0).opaque(fhC)...)),
		send("i2r", append(rdmaHdr(0x35, 128, 0, nil, []chunkSeg{{h: 0x3501, l: 8192, o: xo(0x35)}}, nil), v4(0x35, 3).u32(22).opaque(fhC).u32(25).u64(0).u64(0).u32(0).u64(0).u32(8192)...)),
		rdmaWrite(0x3501, xo(0x35), 8192),
		sendInv(append(rdmaHdr(0x35, 64, 0, nil, []chunkSeg{{h: 0x3501, l: 8192, o: xo(0x35)}}, nil), v4res(0x35, 3).u32(22).u32(0).u32(25).u32(0).u32(1).u32(8192)...), 0x3501),
	)
	return &gen.Scenario{Name: "rpcrdma-objects", Seed: 6, Connections: []gen.Connection{conn}}
}

// TestNFSObjectNames: a READ shows the file its handle was looked up or
// opened by (issue 27 not answered 4).
func TestNFSObjectNames(t *testing.T) {
	data := writeCapture(t, "gen_rpcrdma_objects.pcap", genPcap(t, nfsObjectsScenario()))
	col, _ := analyzeBytes(t, data, analyzeConfig())
	checkFindings(t, col, nil)
	got := map[string]string{}
	for _, f := range col.fields {
		j := f["json"]
		if i := strings.Index(j, `"xid":`); i >= 0 && strings.Contains(j, `"name":`) {
			x := j[i+6 : i+6+strings.IndexAny(j[i+6:], ",}")]
			n := j[strings.Index(j, `"name":`)+8:]
			got[x] = n[:strings.IndexByte(n, '"')]
		}
	}
	for xid, name := range map[string]string{"49": "data.bin", "50": "data.bin", "51": "/export", "52": "/export/f1", "53": "/export/f1"} {
		if got[xid] != name {
			t.Errorf("xid %s: nfs.name %q, want %q (all: %v)", xid, got[xid], name, got)
		}
	}
	for _, c := range col.cmds {
		if c.name == "NFSv4 READ" && c.object != "/export/f1" || c.name == "NFSv3 READ" && c.object != "data.bin" {
			t.Errorf("%s: Object %q", c.name, c.object)
		}
	}
	if n := len(filterFrames(t, data, `nfs.name == "/export/f1" && ulp.command == "NFSv4 READ"`)); n != 1 {
		t.Errorf("-Y on nfs.name matched %d READ replies, want 1", n)
	}
	golden(t, "gen_rpcrdma_objects.pcap", data, "rpc")
}

// TestSMB2ObjectNames: READ, WRITE, CLOSE and FLUSH show the file their
// FileId was opened by, a related compound member its CREATE's file, every
// message its share; tshark's smb2.filename agrees.
func TestSMB2ObjectNames(t *testing.T) {
	data := writeCapture(t, "gen_smb2_compound.pcap", genPcap(t, smb2CompoundScenario()))
	col, _ := analyzeBytes(t, data, analyzeConfig())
	for _, c := range col.cmds {
		want := map[uint64]string{1: `\\srv\share`, 3: `\\srv\share\dir\file.txt`, 5: `\\srv\share\other.txt`, 9: `\\srv\share\dir\file.txt`}[c.id]
		if want != "" && c.object != want {
			t.Errorf("%s mid %d: Object %q, want %q", c.name, c.id, c.object, want)
		}
	}
	for expr, want := range map[string]int{
		`smb2.filename == "dir\\file.txt" && smb2.command == "READ"`:  2, // request and response of mid 3
		`smb2.filename == "other.txt" && smb2.command == "READ"`:      2, // the compound's related READ
		`smb2.filename == "dir\\file.txt" && smb2.command == "WRITE"`: 2,
		`smb2.filename == "dir\\file.txt" && smb2.command == "CLOSE"`: 2,  // the FLUSH+CLOSE compound, its CLOSE response
		`smb2.share == "\\\\srv\\share"`:                              15, // every SMB2 message after the TREE_CONNECT request
	} {
		if got := filterFrames(t, data, expr); len(got) != want {
			t.Errorf("%s: frames %v, want %d", expr, got, want)
		}
	}
	// tshark names the share (smb2.tree) on every message but the
	// TREE_CONNECT response, and has smb2.filename on CREATE requests only
	// (a FileId's name is an unnamed line under smb2.fid).
	bin := oracle.Tshark(t)
	path := filepath.Join("..", "testdata", "ulp", "gen_smb2_compound.pcap")
	for ts, ours := range map[string]string{
		`smb2.filename`:                 `smb2.filename && smb2.command == "CREATE" && smb2.response == 0`,
		`smb2.tree == "\\\\srv\\share"`: `smb2.share == "\\\\srv\\share" && !(smb2.command == "TREE_CONNECT" && smb2.response == 1)`,
	} {
		out, err := exec.Command(bin, "-r", path, "-n", "-o", "tcp.try_heuristic_first:TRUE", "-Y", ts, "-T", "fields", "-e", "frame.number").Output()
		if err != nil {
			t.Fatal(err)
		}
		got := filterFrames(t, data, ours)
		if tf := strings.Fields(string(out)); len(tf) != len(got) || len(got) == 0 {
			t.Errorf("tshark %s: frames %v; iwkit %s: %v", ts, tf, ours, got)
		}
	}
}

// TestObjectsBounded: a connection that opens more files than the tables
// keep (4096) names the newer ones no more, with a note, and keeps
// decoding.
func TestObjectsBounded(t *testing.T) {
	ops := []gen.Op{send("i2r", smbdNegReq()), send("r2i", smbdNegResp(255))}
	const n = 4100
	for i := uint64(1); i <= n; i++ {
		name := "f" + strings.Repeat("x", int(i%7)) + string(rune('a'+i%26))
		ops = append(ops,
			send("i2r", smbdData(1, 0, smb2Create(i, 0, name))),
			send("r2i", smbdData(1, 0, smb2CreateResp(i, 0, 0, [2]uint64{i, i}))))
	}
	ops = append(ops, send("i2r", smbdData(1, 0, smb2FileOp(7, n+1, 0, [2]uint64{1, 1}, false))),
		send("i2r", smbdData(1, 0, smb2FileOp(7, n+2, 0, [2]uint64{n, n}, false))))
	pd := []byte{0, 0, 0, 16, 0, 0, 0, 16}
	sc := &gen.Scenario{Name: "objects-bounded", Seed: 10, Connections: []gen.Connection{smbConn("10.0.0.1:45004", pd, pd, ops...)}}
	data := genPcap(t, sc)
	col, _ := analyzeBytes(t, data, analyzeConfig())
	checkFindings(t, col, []string{"ulp.objects_full"}, "smbd.credit_overrun")
	got := filterFrames(t, data, `smb2.command == "FLUSH" && smb2.filename`)
	if len(got) != 1 {
		t.Errorf("FLUSHes with a name: %v, want the one of the first file only", got)
	}
}
