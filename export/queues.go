package export

import (
	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/ulp"
)

// The storage queue of a connection in its connections row (issue 27,
// queues): what the protocol calls it and its depth, as ulp keeps them
// (ulp.Stats.Queues, the -z nvme|iscsi|smb2|rpc queue rows). A query
// joining commands (conn, queue) with connections (conn) groups the
// commands by queue as -z does (docs/iwsql.md "Queues").

// queueCols are the connections table's queue columns.
func queueCols() []Column {
	return []Column{
		{Name: "ulp_proto", Type: String, Optional: true, Desc: "storage protocol on the connection: nvme, iser, smbd or rpcrdma (ulp.proto); NULL for none"},
		{Name: "queue", Type: String, Optional: true, Desc: "what the protocol calls the connection's queue, as commands.queue: NVMe \"qid Q cntlid C SUBNQN\", iSCSI \"TARGETNAME tsih 0xT\"; NULL where it names none (SMB2, NFS: the connection is the queue, its server the responder)"},
		{Name: "nvme_qid", Type: Uint16, Optional: true, Desc: "NVMe-oF queue ID (CM private data or Connect; 0: the admin queue)"},
		{Name: "nvme_cntlid", Type: Uint16, Optional: true, Desc: "NVMe-oF controller ID the Connect response returned"},
		{Name: "nvme_subnqn", Type: String, Optional: true, Desc: "NVMe-oF subsystem NQN of the Connect data"},
		{Name: "iscsi_target", Type: String, Optional: true, Desc: "iSCSI TargetName of the Login"},
		{Name: "iscsi_tsih", Type: Uint16, Optional: true, Desc: "iSCSI TSIH the Login response returned"},
		{Name: "smb2_shares", Type: Strings, Desc: "SMB2 shares with queues of their own on the connection (TREE_CONNECT paths, in the order first named): the commands.queue values of their commands"},
		{Name: "ulp_commands", Type: Uint64, Optional: true, Desc: "storage commands on the connection, answered or outstanding at its end (its rows in commands)"},
		{Name: "ulp_unanswered", Type: Uint64, Optional: true, Desc: "of those, outstanding at its end"},
		{Name: "depth_max", Type: Int64, Optional: true, Desc: "queue depth: the most commands outstanding at once on the connection (-z queue's (depth) max)"},
		{Name: "depth_ns", Type: Int64, Optional: true, Desc: "queue depth integrated over time: commands outstanding × ns from the first command to the end; depth_ns / depth_span_ns is -z's mean depth"},
		{Name: "depth_span_ns", Type: Int64, Optional: true, Desc: "ns from the connection's first command to the end (of the capture, or the connection's last change)"},
		{Name: "smb2_share_depth_max", Type: Int64s, Desc: "depth_max of each share's queue, in smb2_shares' order"},
		{Name: "smb2_share_depth_ns", Type: Int64s, Desc: "depth_ns of each share's queue (its commands outstanding × ns, from its first command to the end)"},
		{Name: "smb2_share_depth_span_ns", Type: Int64s, Desc: "depth_span_ns of each share's queue"},
	}
}

// queueIndex finds a connection's queues in a report.
type queueIndex struct {
	conn   map[int]*ulp.Queue   // the connection's own queue
	shares map[int][]*ulp.Queue // its SMB2 shares' queues
}

func newQueueIndex(rep *analyze.Report) queueIndex {
	x := queueIndex{conn: map[int]*ulp.Queue{}, shares: map[int][]*ulp.Queue{}}
	if rep.ULP == nil {
		return x
	}
	for _, q := range rep.ULP.Queues {
		if q.ID.Share != "" {
			x.shares[q.ConnID] = append(x.shares[q.ConnID], q)
		} else if x.conn[q.ConnID] == nil {
			x.conn[q.ConnID] = q
		}
	}
	return x
}

// queueCells writes connection conn's queue columns.
func (x queueIndex) queueCells(w *row, conn int) {
	q := x.conn[conn]
	if q == nil {
		for range 7 {
			w.null()
		}
		w.strs(nil)
		for range 5 {
			w.null()
		}
		w.i64s(nil)
		w.i64s(nil)
		w.i64s(nil)
		return
	}
	id := &q.ID
	w.str(q.Key.Proto.String())
	w.strOrNull(q.Key.Name)
	if id.HasQID {
		w.u16(id.QID)
	} else {
		w.null()
	}
	nz := func(v uint16) {
		if v != 0 {
			w.u16(v)
		} else {
			w.null()
		}
	}
	nz(id.CNTLID)
	w.strOrNull(id.SubNQN)
	w.strOrNull(id.Target)
	nz(id.TSIH)
	names := make([]string, len(x.shares[conn]))
	for i, s := range x.shares[conn] {
		names[i] = s.ID.Share
	}
	w.strs(names)
	var n, un uint64
	count := func(rows map[ulp.CmdKey]*ulp.CmdStats) {
		for _, r := range rows {
			n += r.Count
			un += r.Unanswered
		}
	}
	count(q.Rows)
	for _, s := range x.shares[conn] {
		count(s.Rows)
	}
	w.u64(n)
	w.u64(un)
	w.i64(int64(q.Depth.Max))
	w.i64(int64(q.Depth.Integral()))
	w.i64(int64(q.Depth.Span()))
	sq := x.shares[conn]
	for _, f := range []func(d *ulp.Depth) int{
		func(d *ulp.Depth) int { return d.Max },
		func(d *ulp.Depth) int { return int(d.Integral()) },
		func(d *ulp.Depth) int { return int(d.Span()) },
	} {
		v := make([]int, len(sq))
		for i, s := range sq {
			v[i] = f(&s.Depth)
		}
		w.i64s(v)
	}
}
