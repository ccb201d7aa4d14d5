package ulp_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/ulp"
)

// shareQueueScenario: two shares, \\srv\a (TreeId 5) and \\srv\b
// (TreeId 6), with FLUSHes on each answered out of order, an ECHO naming
// no share (TreeId 1, never connected), a FLUSH on b left outstanding,
// and a compound on a whose related member names no TreeId of its own.
func shareQueueScenario() *gen.Scenario {
	fid := [2]uint64{0x11, 0x22}
	echo := func(mid uint64, resp bool) []byte { return append(smb2Hdr(13, resp, 0, mid), 4, 0, 0, 0) }
	pd := []byte{0, 0, 0, 16, 0, 0, 0, 16}
	c := smbConn("10.0.0.1:45020", pd, pd,
		send("i2r", smbdNegReq()),
		send("r2i", smbdNegResp(255)),
		send("i2r", smbdData(255, 0, smb2TreeConnect(1, `\\srv\a`))), // a 1, conn 1
		send("r2i", smbdData(1, 0, smb2TreeConnectResp(1, 5))),       // a 0, conn 0
		send("i2r", smbdData(0, 0, smb2TreeConnect(2, `\\srv\b`))),   // b 1, conn 1
		send("r2i", smbdData(1, 0, smb2TreeConnectResp(2, 6))),       // b 0, conn 0
		send("i2r", smbdData(0, 0, smb2FileOp(7, 3, 5, fid, false))), // a 1, conn 1
		send("i2r", smbdData(0, 0, smb2FileOp(7, 4, 6, fid, false))), // b 1, conn 2
		send("i2r", smbdData(0, 0, smb2FileOp(7, 5, 5, fid, false))), // a 2, conn 3
		send("r2i", smbdData(1, 0, smb2FileOpResp(7, 3, 5))),         // a 1, conn 2
		send("i2r", smbdData(0, 0, echo(6, false))),                  // conn 3
		send("r2i", smbdData(1, 0, smb2FileOpResp(7, 5, 5))),         // a 0, conn 2
		send("r2i", smbdData(1, 0, echo(6, true))),                   // conn 1
		send("r2i", smbdData(1, 0, smb2FileOpResp(7, 4, 6))),         // b 0, conn 0
		send("i2r", smbdData(0, 0, smb2FileOp(7, 7, 6, fid, false))), // b 1, conn 1: left outstanding
		// a compound on a: FLUSH, and a related CLOSE whose TreeId is
		// 0xFFFFFFFF: the previous member's tree ([MS-SMB2] §3.2.4.1.4)
		send("i2r", smbdData(0, 0, smb2Chain(smb2FileOp(7, 8, 5, fid, false), smb2FileOp(6, 9, 0xFFFFFFFF, related, true)))), // a 2, conn 3
		send("r2i", smbdData(2, 0, smb2Chain(smb2FileOpResp(7, 8, 5), smb2FileOpResp(6, 9, 5)))),                             // a 0, conn 1
	)
	return &gen.Scenario{Name: "smb2-share-queues", Seed: 12, Connections: []gen.Connection{c}}
}

// TestSMB2ShareQueues: an SMB2 connection's commands are queued by the
// share they name (TREE_CONNECT path, then TreeId → share): each share's
// queue has its commands and its depth at every change, the
// connection's queue the commands naming no share and the depth of all;
// a command's QueueName is its share; the one left outstanding is listed
// under its share (issue 27, queues).
func TestSMB2ShareQueues(t *testing.T) {
	src, err := pcap.NewReader(bytes.NewReader(genPcap(t, shareQueueScenario())))
	if err != nil {
		t.Fatal(err)
	}
	var cmds []ulp.Command
	rep, err := analyze.Run(src, analyze.Config{Unanswered: true}, consumerFunc(func(r *analyze.Record) {
		if r.Kind == analyze.KindCommand {
			cmds = append(cmds, *r.Cmd)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		depth []int
		rows  map[string]uint64
	}
	wants := map[string]want{
		"":        {[]int{1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 1, 0, 1, 2, 3, 2, 1}, map[string]uint64{"SMB2 ECHO": 1}},
		`\\srv\a`: {[]int{1, 0, 1, 2, 1, 0, 1, 2, 1, 0}, map[string]uint64{"SMB2 TREE_CONNECT": 1, "SMB2 FLUSH": 3, "SMB2 CLOSE": 1}},
		`\\srv\b`: {[]int{1, 0, 1, 0, 1}, map[string]uint64{"SMB2 TREE_CONNECT": 1, "SMB2 FLUSH": 2}},
	}
	if len(rep.ULP.Queues) != len(wants) {
		t.Fatalf("%d queues, want %d", len(rep.ULP.Queues), len(wants))
	}
	for _, q := range rep.ULP.Queues {
		w, ok := wants[q.Key.Name]
		if !ok {
			t.Errorf("queue %q", q.Key.Name)
			continue
		}
		var got []int
		for _, p := range q.Depth.Series {
			got = append(got, p.Depth)
		}
		if !slices.Equal(got, w.depth) {
			t.Errorf("queue %q: depth %v, want %v", q.Key.Name, got, w.depth)
		}
		rows := map[string]uint64{}
		for k, r := range q.Rows {
			rows[k.Name] = r.Count
		}
		if len(rows) != len(w.rows) {
			t.Errorf("queue %q: rows %v, want %v", q.Key.Name, rows, w.rows)
		}
		for k, n := range w.rows {
			if rows[k] != n {
				t.Errorf("queue %q: %s count %d, want %d", q.Key.Name, k, rows[k], n)
			}
		}
		if q.ID.Share != q.Key.Name || q.Key.Conn != "10.0.0.1:45020 > 10.0.0.2:5445" || q.ConnID != rep.ULP.Queues[0].ConnID {
			t.Errorf("queue %+v: identity %+v, conn %d", q.Key, q.ID, q.ConnID)
		}
		hasWin := false
		for i := range q.Windows {
			hasWin = hasWin || len(q.Windows[i].Series) > 0
		}
		if hasWin != (q.Key.Name == "") {
			t.Errorf("queue %q: windows %v (the connection's queue only has them)", q.Key.Name, hasWin)
		}
	}
	byID := map[uint64]string{1: `\\srv\a`, 2: `\\srv\b`, 3: `\\srv\a`, 4: `\\srv\b`, 5: `\\srv\a`, 6: "", 7: `\\srv\b`, 8: `\\srv\a`, 9: `\\srv\a`}
	if len(cmds) != len(byID) {
		t.Errorf("%d commands, want %d", len(cmds), len(byID))
	}
	for _, c := range cmds {
		if c.QueueName != byID[c.ID] {
			t.Errorf("%s %d: QueueName %q, want %q", c.Name, c.ID, c.QueueName, byID[c.ID])
		}
	}
	if len(rep.ULP.Stuck) != 1 || rep.ULP.Stuck[0].ID != 7 || rep.ULP.Stuck[0].Queue.Name != `\\srv\b` {
		t.Errorf("outstanding %+v, want FLUSH 7 on \\\\srv\\b", rep.ULP.Stuck)
	}
}
