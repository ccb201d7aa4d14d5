package ulp

import (
	"strconv"
	"strings"

	"github.com/iwkit/iwkit/decode"
)

// RPC-over-RDMA version 1 (RFC 8166), its CM private data (RFC 8797), ONC
// RPC (RFC 5531), NFSv3 (RFC 1813) and NFSv4.x COMPOUND (RFC 8881, 7862);
// ulp-reference.md §4. All XDR: big-endian, 4-octet aligned.

type rpcState struct {
	pd       [2]bool   // RFC 8797 data seen from the requester / responder
	recvSize [2]uint32 // inline receive size of the requester [0] / responder [1]
	clientR  bool      // the requester accepts Send with Invalidate
	credits  uint32    // last credits granted by the responder (0: none yet)
	segs     []rpcSeg  // scratch: the chunk segments of the message at hand
	inline   uint64    // scratch: WRITE data octets carried in the call itself
	cur      string    // scratch: the name of an NFSv4 call's current filehandle (objects.go)
	getfh    string    // scratch: the name at the call's GETFH
	kept     int       // octets of reply chunks held for RDMA_NOMSG replies (rpcreply.go)
}

type rpcSeg struct {
	list     uint8 // 0 read, 1 write, 2 reply
	chunk    int   // index of the write chunk
	position uint32
	handle   uint32
	length   uint32
	offset   uint64
}

var (
	fRPCRDMACMVer     = def("rpcrdma.cm.version", decode.KindUint, false, "RFC 8797 private data: version (1)")
	fRPCRDMACMInv     = def("rpcrdma.cm.invalidate", decode.KindBool, false, "RFC 8797 R flag: the sender accepts Send With Invalidate")
	fRPCRDMACMSend    = def("rpcrdma.cm.send_size", decode.KindUint, false, "RFC 8797: the sender's largest inline Send, octets")
	fRPCRDMACMRecv    = def("rpcrdma.cm.recv_size", decode.KindUint, false, "RFC 8797: the sender's inline receive buffer, octets")
	fRPCRDMAXID       = def("rpcrdma.xid", decode.KindUint, true, "rdma_xid: the RPC XID of the message carried")
	fRPCRDMAVers      = def("rpcrdma.vers", decode.KindUint, false, "rdma_vers (1)")
	fRPCRDMACredit    = def("rpcrdma.credits", decode.KindUint, false, "rdma_credit: requested (call) or granted (reply)")
	fRPCRDMAProc      = def("rpcrdma.proc", decode.KindEnum, false, "rdma_proc: RDMA_MSG, RDMA_NOMSG, RDMA_MSGP, RDMA_DONE, RDMA_ERROR")
	fRPCRDMAReads     = def("rpcrdma.read_segments", decode.KindUint, false, "read list: segments")
	fRPCRDMAWrites    = def("rpcrdma.write_chunks", decode.KindUint, false, "write list: chunks")
	fRPCRDMAReply     = def("rpcrdma.reply_segments", decode.KindUint, false, "reply chunk: segments (absent: no field)")
	fRPCRDMAHandle    = def("rpcrdma.handle", decode.KindUint, true, "handle (STag) of the first chunk segment")
	fRPCRDMAChunks    = def("rpcrdma.chunks", decode.KindString, false, "every chunk segment: list, position, handle:length@offset")
	fRPCRDMAReplyLen  = def("rpcrdma.reply_chunk_octets", decode.KindUint, false, "RDMA_NOMSG: octets of the RPC reply reassembled from the RDMA Writes into the reply chunk (RFC 8166 §3.6)")
	fRPCRDMAReplyPart = def("rpcrdma.reply_chunk_partial", decode.KindBool, false, "RDMA_NOMSG: the reply chunk's octets are not all in the capture or over the kept size; the fields are decoded from a prefix")
	fRPCRDMAErr       = def("rpcrdma.err", decode.KindEnum, false, "RDMA_ERROR: ERR_VERS or ERR_CHUNK")
	fRPCXID           = def("rpc.xid", decode.KindUint, true, "RPC transaction id")
	fRPCMsgType       = def("rpc.msg_type", decode.KindEnum, false, "CALL or REPLY")
	fRPCProgram       = def("rpc.program", decode.KindEnum, false, "program (100003 NFS, 100227 NFS_ACL, ...)")
	fRPCVersion       = def("rpc.version", decode.KindUint, false, "program version")
	fRPCProcedure     = def("rpc.procedure", decode.KindEnum, false, "procedure, named for NFS and NFS_ACL")
	fRPCAuth          = def("rpc.auth_flavor", decode.KindEnum, false, "credential flavor")
	fRPCReplyStat     = def("rpc.reply_stat", decode.KindEnum, false, "MSG_ACCEPTED or MSG_DENIED")
	fRPCAccept        = def("rpc.accept_stat", decode.KindEnum, false, "accepted reply status")
	fNFSProcedure     = def("nfs.procedure", decode.KindEnum, false, "NFSv3 procedure")
	fNFSOps           = def("nfs.ops", decode.KindString, false, "NFSv4 COMPOUND operations, in order (… when the walk stopped)")
	fNFSMinor         = def("nfs.minorversion", decode.KindUint, false, "NFSv4 COMPOUND minor version")
	fNFSStatus        = def("nfs.status", decode.KindEnum, false, "NFS status of the reply (nfsstat3 / nfsstat4)")
	fNFSOffset        = def("nfs.offset", decode.KindUint, false, "READ/WRITE file offset")
	fNFSCount         = def("nfs.count", decode.KindUint, false, "READ/WRITE count, octets")
	fNFSEOF           = def("nfs.eof", decode.KindBool, false, "READ reply: eof, the read reached the end of the file")
	fNFSResults       = def("nfs.results", decode.KindString, false, "NFSv4 COMPOUND reply: each operation and its nfsstat4, in order (… when the walk stopped)")
	fNFSName          = def("nfs.name", decode.KindString, false, "the object the call acts on: LOOKUP/CREATE/OPEN's directory/name, or the name its file handle was looked up by (objects.go)")
	fNFSStable        = def("nfs.stable", decode.KindEnum, false, "WRITE stable_how: UNSTABLE (0), DATA_SYNC (1), FILE_SYNC (2)")
)

var rpcProcNames = []string{"RDMA_MSG", "RDMA_NOMSG", "RDMA_MSGP", "RDMA_DONE", "RDMA_ERROR"}

// rpcPD decodes RFC 8797 private data (ulp-reference.md §4.1).
func (c *Conn) rpcPD(at At, i2r bool, pd []byte, m *Message) bool {
	if len(pd) < 8 || be32(pd) != 0xF6AB0E18 {
		return false
	}
	st := &c.rpc
	vers, flags := pd[4], pd[5]
	m.u(fRPCRDMACMVer, uint64(vers))
	m.sum("RPC-over-RDMA CM version ", strconv.Itoa(int(vers)))
	if vers != 1 {
		return true // unknown format: sizes ignored
	}
	send, recv := (uint32(pd[6])+1)*1024, (uint32(pd[7])+1)*1024
	m.b(fRPCRDMACMInv, flags&1 != 0)
	m.u(fRPCRDMACMSend, uint64(send))
	m.u(fRPCRDMACMRecv, uint64(recv))
	m.sumU("send", uint64(send))
	m.sumU("recv", uint64(recv))
	if flags&1 != 0 {
		m.sum(" R")
	}
	d := dirIdx(i2r)
	st.pd[d], st.recvSize[d] = true, recv
	if i2r {
		st.clientR = flags&1 != 0
	}
	return true
}

// rpcChunks parses the three chunk lists at b[16:] into st.segs (bounded)
// and returns the offset after them.
func (st *rpcState) rpcChunks(b []byte) (int, bool) {
	st.segs = st.segs[:0]
	off := 16
	word := func() (uint32, bool) {
		if off+4 > len(b) {
			return 0, false
		}
		v := be32(b[off:])
		off += 4
		return v, true
	}
	const maxSegs = 256
	// read list
	for {
		d, ok := word()
		if !ok || d > 1 {
			return 0, false
		}
		if d == 0 {
			break
		}
		if off+20 > len(b) || len(st.segs) >= maxSegs {
			return 0, false
		}
		st.segs = append(st.segs, rpcSeg{list: 0, position: be32(b[off:]), handle: be32(b[off+4:]), length: be32(b[off+8:]), offset: be64(b[off+12:])})
		off += 20
	}
	// write list, then the reply chunk (one optional write chunk)
	for list, chunk := uint8(1), 0; list <= 2; {
		d, ok := word()
		if !ok || d > 1 {
			return 0, false
		}
		if d == 0 {
			list++
			continue
		}
		n, ok := word()
		if !ok || n > maxSegs || off+16*int(n) > len(b) || len(st.segs)+int(n) > maxSegs {
			return 0, false
		}
		for i := 0; i < int(n); i++ {
			st.segs = append(st.segs, rpcSeg{list: list, chunk: chunk, handle: be32(b[off:]), length: be32(b[off+4:]), offset: be64(b[off+8:])})
			off += 16
		}
		chunk++
		if list == 2 {
			break
		}
	}
	return off, true
}

// rpcLooksLike is the content test of ulp-reference.md §5.2: never on the
// version word alone — the chunk grammar must hold, and for RDMA_MSG the
// RPC xid must equal the transport xid.
func rpcLooksLike(b []byte) bool {
	if len(b) < 28 || be32(b[4:]) != 1 {
		return false
	}
	var st rpcState
	switch be32(b[12:]) {
	case 0:
		off, ok := st.rpcChunks(b)
		if !ok || off+12 > len(b) || be32(b[off:]) != be32(b) {
			return false
		}
		mt := be32(b[off+4:])
		return mt == 1 || mt == 0 && be32(b[off+8:]) == 2
	case 1:
		off, ok := st.rpcChunks(b)
		return ok && off == len(b) && len(st.segs) > 0
	}
	return false
}

var rpcProgNames = map[uint32]string{100000: "portmap", 100003: "NFS", 100005: "MOUNT", 100021: "NLM", 100024: "NSM", 100227: "NFS_ACL"}

var nfs3Procs = []string{"NULL", "GETATTR", "SETATTR", "LOOKUP", "ACCESS", "READLINK", "READ", "WRITE", "CREATE", "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR", "RENAME", "LINK", "READDIR", "READDIRPLUS", "FSSTAT", "FSINFO", "PATHCONF", "COMMIT"}

var nfsACLProcs = []string{"NULL", "GETACL", "SETACL"}

var nfs4Ops = map[uint32]string{3: "ACCESS", 4: "CLOSE", 5: "COMMIT", 6: "CREATE", 7: "DELEGPURGE", 8: "DELEGRETURN", 9: "GETATTR", 10: "GETFH",
	11: "LINK", 12: "LOCK", 13: "LOCKT", 14: "LOCKU", 15: "LOOKUP", 16: "LOOKUPP", 17: "NVERIFY", 18: "OPEN", 19: "OPENATTR",
	20: "OPEN_CONFIRM", 21: "OPEN_DOWNGRADE", 22: "PUTFH", 23: "PUTPUBFH", 24: "PUTROOTFH", 25: "READ", 26: "READDIR",
	27: "READLINK", 28: "REMOVE", 29: "RENAME", 30: "RENEW", 31: "RESTOREFH", 32: "SAVEFH", 33: "SECINFO", 34: "SETATTR",
	35: "SETCLIENTID", 36: "SETCLIENTID_CONFIRM", 37: "VERIFY", 38: "WRITE", 39: "RELEASE_LOCKOWNER", 40: "BACKCHANNEL_CTL",
	41: "BIND_CONN_TO_SESSION", 42: "EXCHANGE_ID", 43: "CREATE_SESSION", 44: "DESTROY_SESSION", 45: "FREE_STATEID",
	46: "GET_DIR_DELEGATION", 47: "GETDEVICEINFO", 48: "GETDEVICELIST", 49: "LAYOUTCOMMIT", 50: "LAYOUTGET", 51: "LAYOUTRETURN",
	52: "SECINFO_NO_NAME", 53: "SEQUENCE", 54: "SET_SSV", 55: "TEST_STATEID", 56: "WANT_DELEGATION", 57: "DESTROY_CLIENTID",
	58: "RECLAIM_COMPLETE", 59: "ALLOCATE", 60: "COPY", 61: "COPY_NOTIFY", 62: "DEALLOCATE", 63: "IO_ADVISE", 64: "LAYOUTERROR",
	65: "LAYOUTSTATS", 66: "OFFLOAD_CANCEL", 67: "OFFLOAD_STATUS", 68: "READ_PLUS", 69: "SEEK", 70: "WRITE_SAME", 71: "CLONE",
	72: "GETXATTR", 73: "SETXATTR", 74: "LISTXATTRS", 75: "REMOVEXATTR", 10044: "ILLEGAL"}

var rpcAcceptNames = []string{"SUCCESS", "PROG_UNAVAIL", "PROG_MISMATCH", "PROC_UNAVAIL", "GARBAGE_ARGS", "SYSTEM_ERR"}
var rpcAuthNames = map[uint32]string{0: "AUTH_NONE", 1: "AUTH_SYS", 2: "AUTH_SHORT", 3: "AUTH_DH", 6: "RPCSEC_GSS", 7: "AUTH_TLS"}

func nameIdx(names []string, i uint32) string {
	if int(i) < len(names) {
		return names[i]
	}
	return strconv.FormatUint(uint64(i), 10)
}

// xdr walks XDR octets.
type xdr struct {
	b   []byte
	off int
	ok  bool
}

func (x *xdr) u32() uint32 {
	if !x.ok || x.off+4 > len(x.b) {
		x.ok = false
		return 0
	}
	v := be32(x.b[x.off:])
	x.off += 4
	return v
}
func (x *xdr) u64() uint64 { return uint64(x.u32())<<32 | uint64(x.u32()) }
func (x *xdr) skip(n int) {
	if !x.ok || n < 0 || x.off+n > len(x.b) {
		x.ok = false
		return
	}
	x.off += n
}

// opaque skips a variable-length opaque (length word + padded octets).
func (x *xdr) opaque() int {
	n := int(x.u32())
	x.skip((n + 3) &^ 3)
	return n
}
func (x *xdr) bitmap() {
	n := x.u32()
	if n > 64 {
		x.ok = false
		return
	}
	x.skip(4 * int(n))
}
func (x *xdr) fattr() { x.bitmap(); x.opaque() }

// rpcSend decodes a Send: the transport header and the RPC message.
func (c *Conn) rpcSend(at At, i2r bool, a *sendAsm, b []byte, m *Message) bool {
	if len(b) < 16 {
		return false
	}
	st := &c.rpc
	xid, vers, credit, proc := be32(b), be32(b[4:]), be32(b[8:]), be32(b[12:])
	if vers != 1 {
		if c.decoded > 0 {
			c.finding(at, i2r, CodeRPCVers, "RPC-over-RDMA rdma_vers %d: only version 1 exists; a peer answers RDMA_ERROR/ERR_VERS (RFC 8166 §4.2)", vers)
		}
		return false
	}
	m.u(fRPCRDMAXID, uint64(xid))
	m.u(fRPCRDMAVers, uint64(vers))
	m.u(fRPCRDMACredit, uint64(credit))
	m.e(fRPCRDMAProc, uint64(proc), nameIdx(rpcProcNames, proc))
	// Inline size (RFC 8797 §4; 1024 without private data).
	recv := uint32(1024)
	if r := st.recvSize[dirIdx(!i2r)]; r > 0 {
		recv = r
	}
	if uint32(a.total) > recv {
		c.finding(at, i2r, CodeRPCInline, "RPC-over-RDMA Send of %d octets, larger than the receiver's inline receive size %d (RFC 8166 §3.3.2, RFC 8797)", a.total, recv)
	}
	switch proc {
	case 4:
		if len(b) < 20 {
			return false
		}
		e := be32(b[16:])
		m.e(fRPCRDMAErr, uint64(e), map[uint32]string{1: "ERR_VERS", 2: "ERR_CHUNK"}[e])
		m.sum("RPC-over-RDMA RDMA_ERROR xid 0x", strconv.FormatUint(uint64(xid), 16))
		c.finding(at, i2r, CodeRPCError, "RDMA_ERROR %d for xid 0x%x", e, xid)
		return true
	case 2, 3:
		c.finding(at, i2r, CodeRPCObsolete, "%s is obsolete (RFC 8166 §4.5)", rpcProcNames[proc])
		if proc == 3 {
			m.sum("RPC-over-RDMA RDMA_DONE")
			return true
		}
		if len(b) < 24 {
			return false
		}
		b = append(b[:16:16], b[24:]...) // MSGP: skip rdma_align, rdma_thresh
	case 0, 1:
	default:
		return false
	}
	off, ok := st.rpcChunks(b)
	if !ok {
		return false
	}
	c.rpcChunkFields(m)
	if proc == 1 { // RDMA_NOMSG: the RPC message is in a chunk
		m.sum("RPC-over-RDMA NOMSG xid 0x", strconv.FormatUint(uint64(xid), 16))
		if !i2r {
			return c.rpcNoMsg(at, a, xid, m, credit)
		}
		m.sum(" (long call in a Position-zero read chunk)")
		return true
	}
	rpc := b[off:]
	if len(rpc) < 12 {
		return false
	}
	rxid, mt := be32(rpc), be32(rpc[4:])
	m.u(fRPCXID, uint64(rxid))
	if rxid != xid {
		c.finding(at, i2r, CodeRPCXID, "RDMA_MSG transport xid 0x%x carries RPC xid 0x%x: they are equal (RFC 8166 §4.2.1)", xid, rxid)
	}
	switch mt {
	case 0:
		return c.rpcCall(at, i2r, a, rpc, m, credit)
	case 1:
		return c.rpcReply(at, i2r, a, rxid, rpc, m, credit)
	}
	return false
}

// rpcNoMsg decodes an RDMA_NOMSG reply: the RPC reply is the octets the
// responder RDMA-Wrote into the call's reply chunk (rpcreply.go).
func (c *Conn) rpcNoMsg(at At, a *sendAsm, xid uint32, m *Message, credit uint32) bool {
	var msg []byte
	var total uint64
	whole := false
	if t := c.task(rpcTaskKey(xid, false)); t != nil {
		msg, total, whole = c.replyMessage(t)
		if t.reply != nil && t.reply.cut {
			c.finding(at, false, CodeRPCReplyCut, "RDMA_NOMSG reply xid 0x%x: %d octets in the reply chunk, %d kept (at most %d per reply, %d per connection): decoded from the prefix", xid, total, len(msg), c.lim.Message, 4*c.lim.Message)
		}
	}
	if len(msg) < 12 || be32(msg) != xid || be32(msg[4:]) != 1 {
		return c.rpcReply(at, false, a, xid, nil, m, credit) // nothing (or no reply) in the chunk: linked, no status
	}
	nf, ns := len(m.F), len(m.Summary)
	m.u(fRPCRDMAReplyLen, uint64(len(msg)))
	if !whole {
		m.b(fRPCRDMAReplyPart, true)
	}
	m.u(fRPCXID, uint64(xid))
	m.sum(" | ")
	if c.rpcReply(at, false, a, xid, msg, m, credit) {
		return true
	}
	m.F, m.Summary = m.F[:nf], m.Summary[:ns] // a prefix too short for the status
	return c.rpcReply(at, false, a, xid, nil, m, credit)
}

// rpcChunkFields adds the chunk lists of st.segs to m.
func (c *Conn) rpcChunkFields(m *Message) {
	segs := c.rpc.segs
	var nr, nw, nrep, wchunks int
	for _, s := range segs {
		switch s.list {
		case 0:
			nr++
		case 1:
			nw++
			wchunks = max(wchunks, s.chunk+1)
		case 2:
			nrep++
		}
	}
	if nr > 0 {
		m.u(fRPCRDMAReads, uint64(nr))
	}
	if wchunks > 0 {
		m.u(fRPCRDMAWrites, uint64(wchunks))
	}
	if nrep > 0 {
		m.u(fRPCRDMAReply, uint64(nrep))
	}
	if len(segs) == 0 {
		return
	}
	m.u(fRPCRDMAHandle, uint64(segs[0].handle))
	var sb strings.Builder
	for i, s := range segs {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString([]string{"read", "write", "reply"}[s.list])
		if s.list == 0 {
			sb.WriteString(" pos ")
			sb.WriteString(strconv.FormatUint(uint64(s.position), 10))
		}
		sb.WriteString(" 0x")
		sb.WriteString(strconv.FormatUint(uint64(s.handle), 16))
		sb.WriteByte(':')
		sb.WriteString(strconv.FormatUint(uint64(s.length), 10))
		sb.WriteString("@0x")
		sb.WriteString(strconv.FormatUint(s.offset, 16))
	}
	m.s(fRPCRDMAChunks, sb.String())
}

// rpcCall decodes an RPC CALL (RFC 5531 §9) carried in RDMA_MSG.
func (c *Conn) rpcCall(at At, i2r bool, a *sendAsm, rpc []byte, m *Message, credit uint32) bool {
	st := &c.rpc
	x := xdr{b: rpc, off: 8, ok: true}
	rpcvers := x.u32()
	prog, vers, proc := x.u32(), x.u32(), x.u32()
	flavor := x.u32()
	x.opaque() // cred body
	x.u32()
	x.opaque() // verf
	if !x.ok || rpcvers != 2 {
		return false
	}
	xid := be32(rpc)
	st.inline = 0
	pn := rpcProgNames[prog]
	if pn == "" {
		pn = strconv.FormatUint(uint64(prog), 10)
	}
	procName := strconv.FormatUint(uint64(proc), 10)
	name := pn + " v" + strconv.Itoa(int(vers)) + " proc " + procName
	m.e(fRPCMsgType, 0, "CALL")
	m.e(fRPCProgram, uint64(prog), pn)
	m.u(fRPCVersion, uint64(vers))
	m.e(fRPCAuth, uint64(flavor), rpcAuthNames[flavor])
	detail, obj := "", ""
	switch {
	case prog == 100003 && vers == 3 && int(proc) < len(nfs3Procs):
		obj = c.nfs3Object(x, proc)
		procName = nfs3Procs[proc]
		name = "NFSv3 " + procName
		m.e(fNFSProcedure, uint64(proc), procName)
		if proc == 6 || proc == 7 { // READ, WRITE: fh, offset, count
			x.opaque()
			o, n := x.u64(), x.u32()
			if x.ok {
				m.u(fNFSOffset, o)
				m.u(fNFSCount, uint64(n))
				detail = " offset " + strconv.FormatUint(o, 10) + " count " + strconv.FormatUint(uint64(n), 10)
			}
			if proc == 7 {
				if s := x.u32(); x.ok {
					m.e(fNFSStable, uint64(s), nameIdx(nfsStableNames, s))
				}
				c.writeData(&x, rpc)
			}
		}
	case prog == 100003 && vers == 4 && proc == 1:
		procName = "COMPOUND"
		st.cur, st.getfh = "", ""
		ops, main := c.walk(nfs4Compound, &x, rpc, m)
		obj = st.cur
		name = "NFSv4 " + main
		detail = " ops " + ops
	case prog == 100003 && proc == 0:
		procName = "NULL"
		name = "NFSv" + strconv.Itoa(int(vers)) + " NULL"
	case !i2r && vers == 1 && proc <= 1:
		// A call from the server: RPC-over-RDMA's backchannel (RFC 8167),
		// which NFSv4.1 uses for its callback program (the number the
		// client chose in CREATE_SESSION, RFC 8881 §18.36): CB_NULL or
		// CB_COMPOUND.
		procName = "CB_NULL"
		name = "NFSv4 callback CB_NULL"
		if proc == 1 {
			procName = "CB_COMPOUND"
			ops, main := c.walk(cbCompound, &x, rpc, m)
			name = "NFSv4 callback " + main
			detail = " ops " + ops
		}
	case prog == 100227 && int(proc) < len(nfsACLProcs):
		procName = nfsACLProcs[proc]
		name = "NFS_ACL " + procName
	}
	m.e(fRPCProcedure, uint64(proc), procName)
	if obj != "" {
		m.s(fNFSName, obj)
		detail = " " + obj + detail
	}
	m.sum("RPC call xid 0x", strconv.FormatUint(uint64(xid), 16), " ", name, detail)
	// The task and its chunks (ulp-reference.md §4.7).
	t, old := c.newTask(at, RPCRDMA, rpcTaskKey(xid, !i2r), name)
	t.cmd.ID = uint64(xid)
	if old != nil {
		c.finding(at, i2r, CodeTaskConflict, "RPC call xid 0x%x while a call with that xid (frame %d) is outstanding", xid, old.cmd.RequestFrame)
	}
	var readTotal uint64
	for _, s := range st.segs {
		u := c.advertise(t, s.handle, s.offset, uint64(s.length), s.list != 0, s.list == 0, st.clientR)
		if s.list != 0 {
			u.zeroOK = true // write/reply chunks are used only as far as the reply needs
		} else {
			readTotal += uint64(s.length)
		}
	}
	t.cmd.Object, t.proc, t.getfh = obj, proc, st.getfh
	t.cmd.Expected = readTotal
	t.cmd.Inline = st.inline
	c.replyAdvertise(t)
	// Credits: calls outstanding beyond the last grant (RFC 8166 §3.3.1;
	// before any reply the requester holds one credit).
	granted := max(st.credits, 1)
	if n := uint32(c.outstanding()); i2r && n > granted && st.credits > 0 {
		c.finding(at, true, CodeRPCCredits, "%d RPC calls outstanding, but the responder granted %d credits (RFC 8166 §3.3.1)", n, granted)
	}
	return true
}

func (c *Conn) outstanding() int { return len(c.tasks) }

// rpcTaskKey is the task table's key of a call: the backchannel's calls
// (RFC 8167: the server calls, the client replies) have their own xid
// space, kept apart above the 32 bits of an xid.
func rpcTaskKey(xid uint32, backchannel bool) uint64 {
	if backchannel {
		return 1<<32 | uint64(xid)
	}
	return uint64(xid)
}

// cbOps are the NFSv4.1 callback operations (RFC 8881 §20, RFC 7862 §16).
var cbOps = map[uint32]string{3: "CB_GETATTR", 4: "CB_RECALL", 5: "CB_LAYOUTRECALL", 6: "CB_NOTIFY", 7: "CB_PUSH_DELEG",
	8: "CB_RECALL_ANY", 9: "CB_RECALLABLE_OBJ_AVAIL", 10: "CB_RECALL_SLOT", 11: "CB_SEQUENCE", 12: "CB_WANTS_CANCELLED",
	13: "CB_NOTIFY_LOCK", 14: "CB_NOTIFY_DEVICEID", 15: "CB_OFFLOAD", 10044: "CB_ILLEGAL"}

// compound is what differs between walking an NFSv4 COMPOUND (RFC 8881
// §16.2, ulp-reference.md §4.6) and a callback CB_COMPOUND (§20.2): the
// header, the operation names, which operations' arguments are known, and
// which operations do not name the call.
type compound struct {
	proc  string // names a call none of whose operations does
	ident bool   // a callback_ident follows the minor version (CB_COMPOUND)
	ops   map[uint32]string
	// tier ranks how much an operation says what the call is for: the
	// call is named by its operation of the lowest tier (1, the default,
	// for the operations that do the work; a bare CB_SEQUENCE is named
	// CB_SEQUENCE).
	tier map[string]int
	// args skips an operation's arguments; false when they are unknown:
	// the walk stops there.
	args func(c *Conn, x *xdr, op uint32, rpc []byte) bool
}

var (
	// An NFSv4 COMPOUND is named by its main operation, by the rule
	// Wireshark's packet-nfs.c uses (nfsv4_operation_tiers, the field
	// nfs.main_opcode and its NFSv4 response-time table): every operation
	// has a tier, 1 for those that do the work (READ, WRITE, OPEN, CLOSE,
	// LOOKUP, ...), 2 for ACCESS and NVERIFY, 3 for GETATTR, PUTROOTFH and
	// PUTPUBFH, 4 for PUTFH, GETFH, SAVEFH and RESTOREFH, and SEQUENCE
	// last (RFC 8881 §18.46: it only carries the session slot; on the
	// test captures tshark 4.0 never names it beside another operation,
	// which older tables' tier 1 would). The main
	// operation is the first of the lowest tier present, so SEQUENCE PUTFH
	// GETATTR CLOSE is a CLOSE and SEQUENCE PUTFH GETATTR a GETATTR.
	// Wireshark lists every operation of that tier (SEQUENCE PUTROOTFH
	// GETFH GETATTR shows "PUTROOTFH, GETATTR"); one name is needed to count
	// the call in -z rpc, so a PUTROOTFH or PUTPUBFH, which only selects the
	// file the rest acts on (RFC 8881 §18.20, §18.21), yields to a later
	// operation of its tier: that call is a GETATTR.
	nfs4Compound = &compound{proc: "COMPOUND", ops: nfs4Ops, args: (*Conn).nfs4Args,
		tier: map[string]int{"ACCESS": 2, "NVERIFY": 2, "GETATTR": 3, "PUTROOTFH": 3, "PUTPUBFH": 3,
			"PUTFH": 4, "GETFH": 4, "SAVEFH": 4, "RESTOREFH": 4, "SEQUENCE": 5}}
	// Of a CB_COMPOUND only CB_SEQUENCE's arguments are skipped (it comes
	// first); the walk stops at any other operation.
	cbCompound = &compound{proc: "CB_COMPOUND", ident: true, ops: cbOps, args: cbArgs,
		tier: map[string]int{"CB_SEQUENCE": 5}}
)

// walk walks the arguments of a COMPOUND call of kind k: the tag, the
// minor version (and the callback ident), then the operations. It sets
// m's nfs.minor and nfs.ops, and returns the operation list ("…" after the
// last it could walk past) and the operation naming the call.
func (c *Conn) walk(k *compound, x *xdr, rpc []byte, m *Message) (ops, main string) {
	ops, minor, main := c.walkOps(k, x, rpc)
	m.u(fNFSMinor, uint64(minor))
	m.s(fNFSOps, ops)
	return ops, main
}

func (c *Conn) walkOps(k *compound, x *xdr, rpc []byte) (string, uint32, string) {
	x.opaque() // tag
	minor := x.u32()
	if k.ident {
		x.u32() // callback_ident
	}
	n := x.u32()
	if !x.ok || n > 256 {
		return "…", minor, k.proc
	}
	var sb strings.Builder
	main, best := "", 0
	for i := 0; i < int(n) && x.ok; i++ {
		op := x.u32()
		if !x.ok {
			break
		}
		name, ok := k.ops[op]
		if !ok {
			name = strconv.FormatUint(uint64(op), 10)
		}
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(name)
		if t := max(k.tier[name], 1); best == 0 || t < best || t == best && yields[main] {
			main, best = name, t
		}
		if !k.args(c, x, op, rpc) {
			if i+1 < int(n) {
				sb.WriteString(" …")
			}
			break
		}
	}
	if best == 0 {
		main = k.proc
	}
	return sb.String(), minor, main
}

// yields are the operations that give the call's name to a later
// operation of their tier (see nfs4Compound).
var yields = map[string]bool{"PUTROOTFH": true, "PUTPUBFH": true}

// cbArgs skips CB_SEQUENCE4args (RFC 8881 §20.9): sessionid (16),
// sequenceid, slotid, highest_slotid, cachethis, referring_call_lists<>.
func cbArgs(_ *Conn, x *xdr, op uint32, _ []byte) bool {
	if op != 11 {
		return false
	}
	x.skip(16 + 4*4)
	lists := x.u32()
	for j := uint32(0); j < lists && j < 64 && x.ok; j++ {
		x.skip(16)
		x.skip(int(min(x.u32(), 1024)) * 8)
	}
	return true
}

// writeData skips a WRITE's data<> (RFC 1813 §3.3.7, RFC 8881 §18.32):
// in a read chunk when one is at its position, else carried inline in
// the Send, counted in st.inline as SMB2 counts a WRITE's inline data.
func (c *Conn) writeData(x *xdr, rpc []byte) {
	pos := x.off + 4
	n := int(x.u32())
	if !x.ok || c.readChunkAt(pos) {
		return
	}
	c.rpc.inline += uint64(min(n, max(len(rpc)-pos, 0)))
	x.skip((n + 3) &^ 3)
}

// readChunkAt says whether a read chunk's data belongs at RPC offset pos:
// then the opaque's octets are not inline (ulp-reference.md §4.3).
func (c *Conn) readChunkAt(pos int) bool {
	for _, s := range c.rpc.segs {
		if s.list == 0 && int(s.position) == pos {
			return true
		}
	}
	return false
}

// nfs4Args skips one op's arguments; false when the op is unknown.
func (c *Conn) nfs4Args(x *xdr, op uint32, rpc []byte) bool {
	switch op {
	case 10: // GETFH: the reply returns the current filehandle, named so far
		c.rpc.getfh = c.rpc.cur
	case 24, 23: // PUTROOTFH PUTPUBFH
		c.rpc.cur = "/"
	case 32, 31, 16: // SAVEFH RESTOREFH LOOKUPP
	case 3, 52, 58: // ACCESS, SECINFO_NO_NAME, RECLAIM_COMPLETE
		x.skip(4)
	case 57, 30:
		x.skip(8)
	case 5:
		x.skip(12)
	case 44, 8, 45:
		x.skip(16)
	case 4:
		x.skip(20)
	case 25:
		x.skip(28)
	case 53:
		x.skip(32)
	case 22: // PUTFH
		c.rpc.cur = c.fhName(x.opaqueBytes(128))
	case 15: // LOOKUP
		c.rpc.cur = joinPath(c.rpc.cur, string(x.opaqueBytes(maxName)))
	case 28, 33: // REMOVE, SECINFO
		x.opaque()
	case 29: // RENAME
		x.opaque()
		x.opaque()
	case 9: // GETATTR
		x.bitmap()
	case 26: // READDIR
		x.skip(24)
		x.bitmap()
	case 34: // SETATTR
		x.skip(16)
		x.fattr()
	case 17, 37: // NVERIFY, VERIFY
		x.fattr()
	case 38: // WRITE: stateid, offset, stable, data
		x.skip(28)
		c.writeData(x, rpc)
	case 18: // OPEN
		x.skip(12)
		x.skip(8)
		x.opaque() // owner
		if how := x.u32(); how == 1 {
			switch mode := x.u32(); mode {
			case 0, 1:
				x.fattr()
			case 2:
				x.skip(8)
			case 3:
				x.skip(8)
				x.fattr()
			}
		}
		switch claim := x.u32(); claim {
		case 0: // CLAIM_NULL: a name in the current directory
			c.rpc.cur = joinPath(c.rpc.cur, string(x.opaqueBytes(maxName)))
		case 3:
			x.opaque()
		case 1:
			x.skip(4)
		case 2:
			x.skip(16)
			x.opaque()
		case 5:
			x.skip(16)
		}
	case 42: // EXCHANGE_ID
		x.skip(8)
		x.opaque()
		x.skip(4)
		switch x.u32() {
		case 0:
		case 1:
			x.bitmap()
			x.bitmap()
		default:
			return false
		}
		n := x.u32()
		if n > 1 {
			return false
		}
		for i := 0; i < int(n); i++ {
			x.opaque()
			x.opaque()
			x.skip(12)
		}
	case 43: // CREATE_SESSION
		x.skip(16)
		for i := 0; i < 2; i++ {
			x.skip(24)
			if n := x.u32(); n <= 1 {
				x.skip(4 * int(n))
			} else {
				return false
			}
		}
		x.skip(4) // cb_program
		n := x.u32()
		for i := 0; i < int(n) && x.ok && i < 8; i++ {
			switch x.u32() {
			case 0:
			case 1: // authsys_parms
				x.skip(4)
				x.opaque()
				x.skip(8)
				g := x.u32()
				x.skip(4 * int(min(g, 64)))
			default:
				return false
			}
		}
	default:
		return false
	}
	return x.ok
}

// rpcReply decodes a reply (rpc nil: RDMA_NOMSG, the reply went into the
// reply chunk) and completes its call.
func (c *Conn) rpcReply(at At, i2r bool, a *sendAsm, xid uint32, rpc []byte, m *Message, credit uint32) bool {
	st := &c.rpc
	status, ok := "reply chunk", true
	if rpc != nil {
		x := xdr{b: rpc, off: 8, ok: true}
		rs := x.u32()
		m.e(fRPCMsgType, 1, "REPLY")
		m.e(fRPCReplyStat, uint64(rs), map[uint32]string{0: "MSG_ACCEPTED", 1: "MSG_DENIED"}[rs])
		if !x.ok {
			return false
		}
		m.sum("RPC reply xid 0x", strconv.FormatUint(uint64(xid), 16))
		if rs == 1 {
			status, ok = "MSG_DENIED", false
			c.finding(at, i2r, CodeRPCDenied, "RPC call xid 0x%x denied", xid)
		} else {
			x.u32()
			x.opaque() // verf
			as := x.u32()
			if !x.ok {
				return false
			}
			status = nameIdx(rpcAcceptNames, as)
			ok = as == 0
			m.e(fRPCAccept, uint64(as), status)
			if t := c.task(rpcTaskKey(xid, i2r)); t != nil && ok && strings.HasPrefix(t.cmd.Name, "NFS") && !strings.HasSuffix(t.cmd.Name, "NULL") {
				if ns := x.u32(); x.ok {
					nn := "NFS_OK"
					if ns != 0 {
						nn = nfsErrName(ns)
						if strings.HasPrefix(t.cmd.Name, "NFSv4") {
							nn = nfs4StatName(ns) // nfsstat4 (RFC 8881 §15.1)
						}
						status, ok = nn, false
					}
					m.e(fNFSStatus, uint64(ns), nn)
					if ns == 0 && strings.HasPrefix(t.cmd.Name, "NFSv3 ") {
						c.nfs3Learn(at, x, t, t.proc)
					}
					c.nfsResults(at, &x, t, ns, m)
				}
			}
		}
		m.sum(" ", status)
	}
	// credits granted (RFC 8166 §3.3.1); a requester's reply to a
	// backchannel call (RFC 8167) grants nothing to the forward channel
	if !i2r {
		if credit == 0 {
			c.finding(at, false, CodeRPCZeroCredit, "RPC-over-RDMA reply xid 0x%x grants 0 credits: a responder grants at least one (RFC 8166 §3.3.1)", xid)
		}
		st.credits = credit
		c.window(WinRPCCredits, int64(credit)) // window.go
	}
	t := c.task(rpcTaskKey(xid, i2r))
	if t == nil {
		if c.fromStart && !c.lossy {
			c.finding(at, i2r, CodeUnknownTask, "RPC reply for xid 0x%x, which no outstanding call has", xid)
		}
		return true
	}
	// The echoed write list and reply chunk: their lengths are the octets
	// written (ulp-reference.md §4.3).
	var echoed uint64
	for _, s := range st.segs {
		if s.list != 0 {
			echoed += uint64(s.length)
		}
	}
	written := t.cmd.Moved - c.readMoved(t)
	if ok && written != echoed && (written > 0 || echoed > 0) {
		c.finding(at, false, CodeMovedMismatch, "RPC reply xid 0x%x echoes %d chunk octets, but %d were RDMA-Written (RFC 8166 §3.4.6)", xid, echoed, written)
	}
	if t.cmd.Expected > 0 && ok && c.readMoved(t) != t.cmd.Expected {
		c.finding(at, false, CodeMovedMismatch, "RPC call xid 0x%x: read chunks of %d octets, %d RDMA-Read", xid, t.cmd.Expected, c.readMoved(t))
	}
	if t.cmd.Object != "" && rpc != nil {
		m.s(fNFSName, t.cmd.Object)
	}
	c.complete(at, t, a, status, ok, m)
	return true
}

// readMoved is the octets a task moved by RDMA Read.
func (c *Conn) readMoved(t *task) uint64 { return t.readOctets }

// nfsErrNames are the nfsstat3 / nfsstat4 values both versions share
// (RFC 1813 §2.6, RFC 8881 §15.1).
var nfsErrNames = map[uint32]string{1: "NFSERR_PERM", 2: "NFSERR_NOENT", 5: "NFSERR_IO", 6: "NFSERR_NXIO", 13: "NFSERR_ACCESS",
	17: "NFSERR_EXIST", 18: "NFSERR_XDEV", 20: "NFSERR_NOTDIR", 21: "NFSERR_ISDIR", 22: "NFSERR_INVAL", 27: "NFSERR_FBIG",
	28: "NFSERR_NOSPC", 30: "NFSERR_ROFS", 31: "NFSERR_MLINK", 63: "NFSERR_NAMETOOLONG", 66: "NFSERR_NOTEMPTY",
	69: "NFSERR_DQUOT", 70: "NFSERR_STALE", 10001: "NFSERR_BADHANDLE", 10004: "NFSERR_NOTSUPP", 10008: "NFSERR_DELAY"}

func nfsErrName(s uint32) string {
	if n, ok := nfsErrNames[s]; ok {
		return n
	}
	return "NFSERR " + strconv.FormatUint(uint64(s), 10)
}
