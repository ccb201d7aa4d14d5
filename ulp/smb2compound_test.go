package ulp_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/internal/oracle"
	"github.com/iwkit/iwkit/pcap"
)

// SMB2 compounds ([MS-SMB2] §3.2.4.1.4) and named objects (TREE_CONNECT
// §2.2.9, CREATE §2.2.13/§2.2.14, FileId in READ/WRITE/CLOSE/FLUSH).

func utf16le(s string) []byte {
	var b []byte
	for _, r := range utf16.Encode([]rune(s)) {
		b = le.AppendUint16(b, r)
	}
	return b
}

// smb2Tree sets a header's TreeId; related marks a compound member that
// acts on the previous member's file (SMB2_FLAGS_RELATED_OPERATIONS).
func smb2Tree(h []byte, tree uint32, related bool) []byte {
	le.PutUint32(h[36:], tree)
	if related {
		le.PutUint32(h[16:], le.Uint32(h[16:])|4)
	}
	return h
}

// smb2Chain links messages into a compound: each but the last padded to 8
// octets, its NextCommand the padded length.
func smb2Chain(msgs ...[]byte) []byte {
	var out []byte
	for i, m := range msgs {
		m = append([]byte(nil), m...)
		if i < len(msgs)-1 {
			for len(m)%8 != 0 {
				m = append(m, 0)
			}
			le.PutUint32(m[20:], uint32(len(m)))
		}
		out = append(out, m...)
	}
	return out
}

func smb2TreeConnect(mid uint64, path string) []byte {
	p := utf16le(path)
	body := make([]byte, 8)
	le.PutUint16(body, 9)
	le.PutUint16(body[4:], 64+8)
	le.PutUint16(body[6:], uint16(len(p)))
	return append(append(smb2Tree(smb2Hdr(3, false, 0, mid), 0, false), body...), p...)
}

func smb2TreeConnectResp(mid uint64, tree uint32) []byte {
	body := make([]byte, 16)
	le.PutUint16(body, 16)
	return append(smb2Tree(smb2Hdr(3, true, 0, mid), tree, false), body...)
}

func smb2Create(mid uint64, tree uint32, name string) []byte {
	n := utf16le(name)
	body := make([]byte, 56)
	le.PutUint16(body, 57)
	le.PutUint16(body[44:], 64+56)
	le.PutUint16(body[46:], uint16(len(n)))
	return append(append(smb2Tree(smb2Hdr(5, false, 0, mid), tree, false), body...), n...)
}

func smb2CreateResp(mid uint64, tree uint32, status uint32, fid [2]uint64) []byte {
	body := make([]byte, 88)
	le.PutUint16(body, 89)
	le.PutUint64(body[64:], fid[0])
	le.PutUint64(body[72:], fid[1])
	if status != 0 {
		body = make([]byte, 8)
		le.PutUint16(body, 9)
	}
	return append(smb2Tree(smb2Hdr(5, true, status, mid), tree, false), body...)
}

// smb2FileOp is a request whose FileId sits at body offset at: CLOSE
// (6, at 8), FLUSH (7, at 8); related uses the compound's previous file.
func smb2FileOp(cmd uint16, mid uint64, tree uint32, fid [2]uint64, related bool) []byte {
	body := make([]byte, 24)
	le.PutUint16(body, 24)
	le.PutUint64(body[8:], fid[0])
	le.PutUint64(body[16:], fid[1])
	return append(smb2Tree(smb2Hdr(cmd, false, 0, mid), tree, related), body...)
}

func smb2FileOpResp(cmd uint16, mid uint64, tree uint32) []byte {
	body := make([]byte, 60)
	le.PutUint16(body, 60)
	return append(smb2Tree(smb2Hdr(cmd, true, 0, mid), tree, false), body...)
}

// smb2RWFile is smb2RW on a tree and a file.
func smb2RWFile(cmd uint16, mid uint64, tree uint32, fid [2]uint64, related bool, length, token uint32, addr uint64) []byte {
	b := smb2RW(cmd, mid, length, token, addr)
	smb2Tree(b, tree, related)
	le.PutUint64(b[64+16:], fid[0])
	le.PutUint64(b[64+24:], fid[1])
	return b
}

var related = [2]uint64{^uint64(0), ^uint64(0)}

// smb2CompoundScenario: TREE_CONNECT \\srv\share (tree 5); CREATE
// dir\file.txt (FileId 0x11/0x22); a READ of it; a compound CREATE
// other.txt + related READ + related CLOSE, answered by a compound; a
// WRITE of the first file; a compound FLUSH + CLOSE of it, answered in two
// Sends; a CREATE that fails.
func smb2CompoundScenario() *gen.Scenario {
	f1, f2 := [2]uint64{0x11, 0x22}, [2]uint64{0x33, 0x44}
	c := smbConn("10.0.0.1:45003", []byte{0, 0, 0, 16, 0, 0, 0, 16}, []byte{0, 0, 0, 16, 0, 0, 0, 16},
		send("i2r", smbdNegReq()),
		send("r2i", smbdNegResp(255)),
		send("i2r", smbdData(255, 0, smb2TreeConnect(1, `\\srv\share`))),
		send("r2i", smbdData(1, 0, smb2TreeConnectResp(1, 5))),
		send("i2r", smbdData(0, 0, smb2Create(2, 5, `dir\file.txt`))),
		send("r2i", smbdData(1, 0, smb2CreateResp(2, 5, 0, f1))),
		send("i2r", smbdData(0, 0, smb2RWFile(8, 3, 5, f1, false, 4096, 0x8a01, 0x7f0000000000))),
		rdmaWrite(0x8a01, 0x7f0000000000, 4096),
		sendInv(smbdData(1, 0, smb2Tree(smb2ReadResp(3, 4096), 5, false)), 0x8a01),
		send("i2r", smbdData(0, 0, smb2Chain(
			smb2Create(4, 5, "other.txt"),
			smb2RWFile(8, 5, 5, related, true, 8192, 0x8a02, 0x7f0000100000),
			smb2FileOp(6, 6, 5, related, true)))),
		rdmaWrite(0x8a02, 0x7f0000100000, 8192),
		send("r2i", smbdData(3, 0, smb2Chain(
			smb2CreateResp(4, 5, 0, f2),
			smb2Tree(smb2ReadResp(5, 8192), 5, false),
			smb2FileOpResp(6, 6, 5)))),
		send("i2r", smbdData(0, 0, smb2RWFile(9, 7, 5, f1, false, 16384, 0x8a03, 0x7f0000200000))),
		rdmaRead(0x8a03, 0x7f0000200000, 16384, 0x9400),
		sendInv(smbdData(1, 0, smb2Tree(smb2WriteResp(7, 16384), 5, false)), 0x8a03),
		send("i2r", smbdData(0, 0, smb2Chain(smb2FileOp(7, 8, 5, f1, false), smb2FileOp(6, 9, 5, f1, false)))),
		send("r2i", smbdData(1, 0, smb2FileOpResp(7, 8, 5))),
		send("r2i", smbdData(1, 0, smb2FileOpResp(6, 9, 5))),
		send("i2r", smbdData(0, 0, smb2Create(10, 5, `missing.txt`))),
		send("r2i", smbdData(1, 0, smb2CreateResp(10, 5, 0xC0000034, [2]uint64{}))),
	)
	return &gen.Scenario{Name: "smb2-compound", Seed: 9, Connections: []gen.Connection{c}}
}

type consumerFunc func(*analyze.Record)

func (f consumerFunc) Record(r *analyze.Record) { f(r) }

// filterFrames runs a display filter over a capture and returns the
// frames of the PDUs it matched.
func filterFrames(t *testing.T, data []byte, expr string) []int {
	t.Helper()
	f, err := analyze.CompileFilter(expr)
	if err != nil {
		t.Fatal(err)
	}
	src, err := pcap.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	_, err = analyze.Run(src, analyze.Config{}, consumerFunc(func(r *analyze.Record) {
		if r.Kind == analyze.KindPDU && f.Match(r) {
			got = append(got, r.Frame)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestSMB2CompoundMembers: every member of a compound has its fields in
// -Y, JSON and -V (issue 27 wrong 4): smb2.command == "CLOSE" matches the
// compound whose third member is a CLOSE.
func TestSMB2CompoundMembers(t *testing.T) {
	data := writeCapture(t, "gen_smb2_compound.pcap", genPcap(t, smb2CompoundScenario()))
	col, _ := analyzeBytes(t, data, analyzeConfig())
	checkFindings(t, col, nil)
	closes := filterFrames(t, data, `smb2.command == "CLOSE"`)
	reads := filterFrames(t, data, `smb2.command == "READ" && smb2.msg_id == 5`)
	if len(closes) != 4 {
		t.Errorf(`smb2.command == "CLOSE" matched frames %v, want 4 (compound request and response, CLOSE request and response)`, closes)
	}
	if len(reads) != 2 {
		t.Errorf("the compound's READ mid 5 matched frames %v, want its request and response", reads)
	}
	if n := len(filterFrames(t, data, `smb2.command != "CLOSE" && smb2.compound`)); n != 0 {
		t.Errorf(`smb2.command != "CLOSE" matched %d compounds with a CLOSE`, n)
	}
	j := strings.Join(func() (s []string) {
		for _, f := range col.fields {
			s = append(s, f["json"])
		}
		return
	}(), "\n")
	for _, w := range []string{`"members":[{"smb2":{"member":2,"command":"READ"`, `{"smb2":{"member":3,"command":"CLOSE"`} {
		if !strings.Contains(j, w) {
			t.Errorf("no %s in the JSON", w)
		}
	}
	// the members' commands complete with their own latency and octets
	got := map[uint64]cmdRec{}
	for _, c := range col.cmds {
		got[c.id] = c
	}
	if c := got[5]; c.name != "SMB2 READ" || c.moved != 8192 || !c.ok {
		t.Errorf("compound READ: %+v", c)
	}
	if c := got[10]; c.ok {
		t.Errorf("failed CREATE: %+v", c)
	}
	golden(t, "gen_smb2_compound.pcap", data, "smb2")

	// tshark, which dissects every member, agrees on the PDUs with a CLOSE
	bin := oracle.Tshark(t)
	path := filepath.Join("..", "testdata", "ulp", "gen_smb2_compound.pcap")
	out, err := exec.Command(bin, "-r", path, "-n", "-o", "tcp.try_heuristic_first:TRUE", "-Y", "smb2.cmd == 6", "-T", "fields", "-e", "frame.number").Output()
	if err != nil {
		t.Fatal(err)
	}
	ts := strings.Fields(string(out))
	if len(ts) != len(closes) {
		t.Errorf("tshark smb2.cmd == 6: frames %v; iwkit: %v", ts, closes)
	}
}
