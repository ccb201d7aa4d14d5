package ulp

import (
	"strconv"
	"strings"

	"github.com/iwkit/iwkit/decode"
)

// SMB Direct ([MS-SMBD] §2.2) carrying SMB2 ([MS-SMB2] §2.2);
// ulp-reference.md §3. Little-endian, except the legacy IRD/ORD block.

type smbState struct {
	negReq, negResp bool
	maxRecv         [2]uint32 // MaxReceiveSize of the client [0] / server [1]
	maxFrag         [2]uint32
	// MaxReadSize and MaxWriteSize of the SMB2 NEGOTIATE response (0:
	// not seen)
	maxRead, maxWrite uint32
	credits           [2]int // send credits the client [0] / server [1] holds
	creditsKnown      [2]bool
	win               smb2Window // window.go
	frag              [2]smbFrag
	related           string // the file a compound's CREATE named, for its related members
}

type smbFrag struct {
	active    bool
	remaining uint32
	buf       []byte
	total     uint64 // RemainingDataLength + DataLength of the first fragment: both 32-bit, summed in 64
	first     int
}

var (
	fSMBDLegIRD   = def("smbd.legacy.ird", decode.KindUint, false, "MPA private data legacy IRD ([MS-SMBD] App. A)")
	fSMBDLegORD   = def("smbd.legacy.ord", decode.KindUint, false, "MPA private data legacy ORD")
	fSMBDLegOrder = def("smbd.legacy.byte_order", decode.KindEnum, false, "byte order of the legacy block: big-endian, or little-endian (broken, older Linux cifs.ko/ksmbd)")
	fSMBDType     = def("smbd.type", decode.KindEnum, false, "negotiate_request, negotiate_response, data")
	fSMBDMinVer   = def("smbd.min_version", decode.KindUint, true, "MinVersion (0x0100)")
	fSMBDMaxVer   = def("smbd.max_version", decode.KindUint, true, "MaxVersion (0x0100)")
	fSMBDNegVer   = def("smbd.negotiated_version", decode.KindUint, true, "NegotiatedVersion")
	fSMBDCredReq  = def("smbd.credits_requested", decode.KindUint, false, "CreditsRequested")
	fSMBDCredGr   = def("smbd.credits_granted", decode.KindUint, false, "CreditsGranted")
	fSMBDStatus   = def("smbd.status", decode.KindUint, true, "Negotiate Response Status (NTSTATUS)")
	fSMBDMaxRW    = def("smbd.max_read_write_size", decode.KindUint, false, "MaxReadWriteSize")
	fSMBDPrefSend = def("smbd.preferred_send_size", decode.KindUint, false, "PreferredSendSize")
	fSMBDMaxRecv  = def("smbd.max_receive_size", decode.KindUint, false, "MaxReceiveSize")
	fSMBDMaxFrag  = def("smbd.max_fragmented_size", decode.KindUint, false, "MaxFragmentedSize")
	fSMBDFlags    = def("smbd.flags", decode.KindUint, true, "Flags: 0x0001 SMB_DIRECT_RESPONSE_REQUESTED")
	fSMBDRemain   = def("smbd.remaining", decode.KindUint, false, "RemainingDataLength: octets of the message in later fragments")
	fSMBDDataOff  = def("smbd.data_offset", decode.KindUint, false, "DataOffset")
	fSMBDDataLen  = def("smbd.data_length", decode.KindUint, false, "DataLength")
	fSMBDReasm    = def("smbd.reassembled", decode.KindUint, false, "octets of the upper-layer message this fragment completed")
	fSMB2Command  = def("smb2.command", decode.KindEnum, false, "SMB2 command")
	fSMB2Resp     = def("smb2.response", decode.KindBool, false, "SERVER_TO_REDIR: a response")
	fSMB2Status   = def("smb2.status", decode.KindEnum, false, "NTSTATUS of a response")
	fSMB2MsgID    = def("smb2.msg_id", decode.KindUint, false, "MessageId")
	fSMB2Session  = def("smb2.session_id", decode.KindUint, true, "SessionId")
	fSMB2Tree     = def("smb2.tree_id", decode.KindUint, true, "TreeId (synchronous messages)")
	fSMB2Async    = def("smb2.async_id", decode.KindUint, true, "AsyncId (ASYNC_COMMAND)")
	fSMB2Credits  = def("smb2.credits", decode.KindUint, false, "CreditRequest / CreditResponse")
	fSMB2Flags    = def("smb2.flags", decode.KindUint, true, "Flags")
	fSMB2Compound = def("smb2.compound", decode.KindUint, false, "SMB2 messages in this reassembled message (NextCommand chain)")
	fSMB2Member   = def("smb2.member", decode.KindUint, false, "position of the SMB2 message in its compound, from 1 ([MS-SMB2] §3.2.4.1.4): each member has its own smb2.* fields")
	fSMB2Length   = def("smb2.length", decode.KindUint, false, "READ Length / WRITE Length (inline)")
	fSMB2Offset   = def("smb2.offset", decode.KindUint, false, "READ/WRITE file offset")
	fSMB2Channel  = def("smb2.channel", decode.KindEnum, false, "READ/WRITE Channel: NONE, RDMA_V1, RDMA_V1_INVALIDATE, RDMA_TRANSFORM")
	fSMB2RemBytes = def("smb2.remaining_bytes", decode.KindUint, false, "WRITE RemainingBytes: octets to RDMA-Read")
	fSMB2Desc     = def("smb2.descriptors", decode.KindString, false, "RDMA buffer descriptors: token:length@offset")
	fSMB2Token    = def("smb2.token", decode.KindUint, true, "first buffer descriptor's Token = the STag")
	fSMB2DataLen  = def("smb2.data_length", decode.KindUint, false, "READ response DataLength (inline)")
	fSMB2DataRem  = def("smb2.data_remaining", decode.KindUint, false, "READ response DataRemaining: octets RDMA-Written")
	fSMB2Count    = def("smb2.count", decode.KindUint, false, "WRITE response Count: octets written")
	fSMB2MaxRead  = def("smb2.max_read_size", decode.KindUint, false, "NEGOTIATE response: MaxReadSize")
	fSMB2Share    = def("smb2.share", decode.KindString, false, "the share (TREE_CONNECT path) of the message's TreeId, where the capture holds its TREE_CONNECT (objects.go)")
	fSMB2Filename = def("smb2.filename", decode.KindString, false, "the file: a CREATE's name, or the name the CREATE that opened the FileId gave ([MS-SMB2] §2.2.13)")
	fSMB2MaxWrite = def("smb2.max_write_size", decode.KindUint, false, "NEGOTIATE response: MaxWriteSize")
)

var smb2Cmds = []string{"NEGOTIATE", "SESSION_SETUP", "LOGOFF", "TREE_CONNECT", "TREE_DISCONNECT", "CREATE", "CLOSE", "FLUSH", "READ",
	"WRITE", "LOCK", "IOCTL", "CANCEL", "ECHO", "QUERY_DIRECTORY", "CHANGE_NOTIFY", "QUERY_INFO", "SET_INFO", "OPLOCK_BREAK", "SERVER_TO_CLIENT_NOTIFICATION"}

var ntStatus = map[uint32]string{0: "STATUS_SUCCESS", 0x103: "STATUS_PENDING", 0xC0000016: "STATUS_MORE_PROCESSING_REQUIRED",
	0x80000006: "STATUS_NO_MORE_FILES", 0xC0000034: "STATUS_OBJECT_NAME_NOT_FOUND", 0xC0000022: "STATUS_ACCESS_DENIED",
	0xC000000D: "STATUS_INVALID_PARAMETER", 0xC0000011: "STATUS_END_OF_FILE", 0xC0000035: "STATUS_OBJECT_NAME_COLLISION",
	0xC00000BB: "STATUS_NOT_SUPPORTED", 0xC0000120: "STATUS_CANCELLED", 0x80000005: "STATUS_BUFFER_OVERFLOW",
	0xC0000023: "STATUS_BUFFER_TOO_SMALL", 0xC000000F: "STATUS_NO_SUCH_FILE", 0xC0000225: "STATUS_NOT_FOUND",
	0xC0000010: "STATUS_INVALID_DEVICE_REQUEST", 0xC000006D: "STATUS_LOGON_FAILURE", 0xC00000CC: "STATUS_BAD_NETWORK_NAME",
	0xC0000203: "STATUS_USER_SESSION_DELETED", 0xC000009A: "STATUS_INSUFFICIENT_RESOURCES", 0x0000010B: "STATUS_NOTIFY_CLEANUP",
	0x0000010C: "STATUS_NOTIFY_ENUM_DIR", 0xC000019C: "STATUS_FS_DRIVER_REQUIRED"}

func ntName(s uint32) string {
	if n, ok := ntStatus[s]; ok {
		return n
	}
	return "0x" + strconv.FormatUint(uint64(s), 16)
}

var smb2Channels = []string{"NONE", "RDMA_V1", "RDMA_V1_INVALIDATE", "RDMA_TRANSFORM"}

// smbPD decodes the legacy IRD/ORD block ([MS-SMBD] App. A §6.1;
// ulp-reference.md §3.1).
func (c *Conn) smbPD(at At, i2r bool, f *decode.MPAFrame, pd []byte, m *Message) bool {
	if f.Rev1IRDORD && len(f.PrivateData) >= 8 {
		pd = f.PrivateData[:8]
	}
	if len(pd) != 8 {
		return false
	}
	ird, ord := be32(pd), be32(pd[4:])
	order := "big-endian"
	sane := func(x uint32) bool { return x >= 1 && x <= 0x3FFF }
	if !(sane(ird) && sane(ord)) && sane(le32(pd)) && sane(le32(pd[4:])) {
		ird, ord, order = le32(pd), le32(pd[4:]), "little-endian (broken)"
		c.finding(at, i2r, CodeSMBDLegacyLE, "legacy IRD/ORD private data in little-endian (IRD %d ORD %d): older Linux cifs.ko/ksmbd write it in host order; it is big-endian ([MS-SMBD] App. A; ulp-reference.md §3.1)", ird, ord)
	} else if f.HasV2 && (uint32(f.V2.IRD) != ird || uint32(f.V2.ORD) != ord) {
		c.finding(at, i2r, CodeSMBDLegacyV2, "legacy IRD/ORD block (IRD %d ORD %d) disagrees with the MPA v2 block (IRD %d ORD %d)", ird, ord, f.V2.IRD, f.V2.ORD)
	}
	m.u(fSMBDLegIRD, uint64(ird))
	m.u(fSMBDLegORD, uint64(ord))
	m.e(fSMBDLegOrder, map[bool]uint64{true: 0, false: 1}[order == "big-endian"], order)
	m.sum("SMB Direct legacy IRD ", strconv.Itoa(int(ird)), " ORD ", strconv.Itoa(int(ord)))
	if order != "big-endian" {
		m.sum(" (little-endian)")
	}
	return true
}

func smbLooksLike(b []byte, i2r bool) bool {
	if i2r && len(b) == 20 && le16(b) == 0x0100 && le16(b[2:]) == 0x0100 && le16(b[4:]) == 0 && le16(b[6:]) > 0 {
		return true
	}
	if !i2r && len(b) == 32 && le16(b) == 0x0100 && le16(b[2:]) == 0x0100 && le16(b[4:]) == 0x0100 && le16(b[6:]) == 0 {
		return true
	}
	return len(b) >= 24+64 && le32(b[12:]) == 24 && le32(b[20:]) == 0 && le16(b[6:]) == 0 && le16(b[4:]) <= 1 &&
		int(le32(b[16:])) == len(b)-24 && b[25] == 'S' && b[26] == 'M' && b[27] == 'B' && b[24] >= 0xFC && b[24] <= 0xFE
}

func (c *Conn) smbSend(at At, i2r bool, a *sendAsm, b []byte, m *Message) bool {
	st := &c.smb
	d := dirIdx(i2r)
	switch {
	case i2r && !st.negReq && len(b) == 20 && le16(b) <= 0x0100 && le16(b[2:]) >= 0x0100:
		st.negReq = true
		m.e(fSMBDType, 0, "negotiate_request")
		m.u(fSMBDMinVer, uint64(le16(b)))
		m.u(fSMBDMaxVer, uint64(le16(b[2:])))
		m.u(fSMBDCredReq, uint64(le16(b[6:])))
		m.u(fSMBDPrefSend, uint64(le32(b[8:])))
		m.u(fSMBDMaxRecv, uint64(le32(b[12:])))
		m.u(fSMBDMaxFrag, uint64(le32(b[16:])))
		st.maxRecv[0], st.maxFrag[0] = le32(b[12:]), le32(b[16:])
		m.sum("SMB Direct Negotiate Request")
		m.sumU("credits", uint64(le16(b[6:])))
		m.sumU("max_receive", uint64(le32(b[12:])))
		if le16(b[6:]) == 0 || le32(b[12:]) < 128 || le32(b[16:]) < 131072 {
			c.finding(at, true, CodeSMBDNegotiate, "SMB Direct Negotiate Request: CreditsRequested %d, MaxReceiveSize %d, MaxFragmentedSize %d ([MS-SMBD] §3.1.5.2)", le16(b[6:]), le32(b[12:]), le32(b[16:]))
		}
		return true
	case !i2r && !st.negResp && len(b) == 32 && le16(b) == 0x0100:
		st.negResp = true
		status := le32(b[12:])
		m.e(fSMBDType, 1, "negotiate_response")
		m.u(fSMBDMinVer, uint64(le16(b)))
		m.u(fSMBDMaxVer, uint64(le16(b[2:])))
		m.u(fSMBDNegVer, uint64(le16(b[4:])))
		m.u(fSMBDCredReq, uint64(le16(b[8:])))
		m.u(fSMBDCredGr, uint64(le16(b[10:])))
		m.u(fSMBDStatus, uint64(status))
		m.u(fSMBDMaxRW, uint64(le32(b[16:])))
		m.u(fSMBDPrefSend, uint64(le32(b[20:])))
		m.u(fSMBDMaxRecv, uint64(le32(b[24:])))
		m.u(fSMBDMaxFrag, uint64(le32(b[28:])))
		st.maxRecv[1], st.maxFrag[1] = le32(b[24:]), le32(b[28:])
		st.credits[0], st.creditsKnown[0] = int(le16(b[10:])), true
		st.creditsKnown[1] = true
		m.sum("SMB Direct Negotiate Response ", ntName(status))
		m.sumU("granted", uint64(le16(b[10:])))
		m.sumU("max_rw", uint64(le32(b[16:])))
		if le16(b[10:]) == 0 || le32(b[24:]) < 128 {
			c.finding(at, false, CodeSMBDNegotiate, "SMB Direct Negotiate Response: CreditsGranted %d, MaxReceiveSize %d ([MS-SMBD] §3.1.5.3)", le16(b[10:]), le32(b[24:]))
		}
		return true
	case len(b) < 20:
		return false
	}
	credReq, credGr, flags := le16(b), le16(b[2:]), le16(b[4:])
	remaining, dataOff, dataLen := le32(b[8:]), le32(b[12:]), le32(b[16:])
	if le16(b[6:]) != 0 || flags > 1 || dataLen > 0 && (dataOff < 20 || dataOff%8 != 0) || dataLen == 0 && len(b) > 24 {
		if c.decoded == 0 {
			return false
		}
	}
	m.e(fSMBDType, 2, "data")
	m.u(fSMBDCredReq, uint64(credReq))
	m.u(fSMBDCredGr, uint64(credGr))
	m.u(fSMBDFlags, uint64(flags))
	m.u(fSMBDRemain, uint64(remaining))
	m.u(fSMBDDataOff, uint64(dataOff))
	m.u(fSMBDDataLen, uint64(dataLen))
	m.sum("SMBD")
	m.sumU("credits", uint64(credReq))
	m.sum("/")
	m.Summary = strconv.AppendUint(m.Summary, uint64(credGr), 10)
	// Credits ([MS-SMBD] §3.1.5.1): every data message costs the sender one.
	if st.creditsKnown[d] {
		if st.credits[d] <= 0 {
			c.finding(at, i2r, CodeSMBDCredits, "SMB Direct data message sent with no send credits left ([MS-SMBD] §3.1.5.1)")
		} else {
			st.credits[d]--
		}
	}
	st.credits[1-d] += int(credGr)
	c.smbdCredits() // the credits over time (window.go)

	if mr := st.maxRecv[1-d]; mr > 0 && uint64(a.total) > uint64(mr) { // not uint32(a.total): a Send past 4 GiB would wrap under the limit
		c.finding(at, i2r, CodeSMBDTooLarge, "SMB Direct message of %d octets, larger than the peer's MaxReceiveSize %d ([MS-SMBD] §3.1.5.1)", a.total, mr)
	}
	if dataLen == 0 {
		m.sum(" (credits only)")
		return true
	}
	if dataOff != 24 || uint64(dataOff)+uint64(dataLen) > uint64(a.total) {
		c.finding(at, i2r, CodeSMBDFragment, "SMB Direct DataOffset %d DataLength %d in a %d-octet message ([MS-SMBD] §2.2.3)", dataOff, dataLen, a.total)
		return true
	}
	payload := b[min(len(b), int(dataOff)):min(len(b), int(dataOff)+int(dataLen))]
	f := &st.frag[d]
	if f.active {
		if remaining != f.remaining-min(f.remaining, dataLen) {
			c.finding(at, i2r, CodeSMBDFragment, "SMB Direct fragment: RemainingDataLength %d, but the previous fragment left %d and this one carries %d ([MS-SMBD] §3.1.5.1)", remaining, f.remaining, dataLen)
		}
	} else {
		// The first fragment's two 32-bit lengths sum in 64 bits: in
		// uint32 a RemainingDataLength near 2^32 wrapped the size of the
		// whole message to a few octets, under MaxFragmentedSize.
		f.active, f.buf, f.total, f.first = true, f.buf[:0], uint64(remaining)+uint64(dataLen), at.Frame
		if mf := st.maxFrag[1-d]; mf > 0 && f.total > uint64(mf) {
			c.finding(at, i2r, CodeSMBDFragTooLarge, "SMB Direct message of %d octets (reassembled), larger than the peer's MaxFragmentedSize %d ([MS-SMBD] §3.1.5.1)", f.total, mf)
		}
	}
	if len(f.buf)+len(payload) <= c.lim.Message {
		f.buf = append(f.buf, payload...)
	}
	f.remaining = remaining
	if remaining > 0 {
		m.sumU("fragment, remaining", uint64(remaining))
		return true
	}
	f.active = false
	m.u(fSMBDReasm, uint64(f.total))
	c.smb2(at, i2r, a, f.buf, m)
	return true
}

// smb2 decodes a reassembled SMB2 message chain ([MS-SMB2] §2.2.1).
func (c *Conn) smb2(at At, i2r bool, a *sendAsm, b []byte, m *Message) {
	if len(b) < 4 || b[1] != 'S' || b[2] != 'M' || b[3] != 'B' {
		c.finding(at, i2r, CodeSMB2Magic, "reassembled SMB Direct message of %d octets does not start with an SMB2 header", len(b))
		return
	}
	if b[0] != 0xFE {
		m.sum(" SMB2 transform")
		return
	}
	n := 0
	c.smb.related = ""
	for off := 0; off+64 <= len(b) && n < 32; n++ {
		h := b[off:]
		next := int(le32(h[20:]))
		end := len(h)
		if next >= 64 && next < len(h) {
			end = next
		}
		if n > 0 {
			// A later member of a compound ([MS-SMB2] §3.2.4.1.4): its
			// own occurrence of every field, as the first has.
			m.member(true)
			m.u(fSMB2Member, uint64(n+1))
		}
		if t := c.smb2One(at, i2r, a, h[:end], m, n == 0); t != nil && n > 0 {
			t.cmd.target(m.Members[len(m.Members)-1].F) // the first's is read from m.F (Conn.message)
		}
		m.member(false)
		if next < 64 || next%8 != 0 {
			n++
			break
		}
		off += next
	}
	if n > 1 {
		m.u(fSMB2Compound, uint64(n))
		m.u(fSMB2Member, 1)
	}
}

// smb2One decodes one SMB2 message of a chain; it returns the task a
// request opened (nil for a response, or a request not tracked).
func (c *Conn) smb2One(at At, i2r bool, a *sendAsm, h []byte, m *Message, first bool) *task {
	status, cmd, credits, flags := le32(h[8:]), le16(h[12:]), le16(h[14:]), le32(h[16:])
	msgID := le64(h[24:])
	resp := flags&1 != 0
	c.smb2Window(at, h, resp, cmd, msgID, m, first) // window.go
	name := "0x" + strconv.FormatUint(uint64(cmd), 16)
	if int(cmd) < len(smb2Cmds) {
		name = smb2Cmds[cmd]
	}
	m.e(fSMB2Command, uint64(cmd), name)
	m.b(fSMB2Resp, resp)
	if resp {
		m.e(fSMB2Status, uint64(status), ntName(status))
	}
	m.u(fSMB2MsgID, msgID)
	m.u(fSMB2Session, le64(h[40:]))
	if flags&2 != 0 {
		m.u(fSMB2Async, le64(h[32:]))
	} else {
		m.u(fSMB2Tree, uint64(le32(h[36:])))
	}
	m.u(fSMB2Credits, uint64(credits))
	m.u(fSMB2Flags, uint64(flags))
	if first {
		m.sum(" | SMB2 ", name)
	} else {
		m.sum("; SMB2 ", name)
	}
	if resp {
		m.sum(" response")
	} else {
		m.sum(" request")
	}
	m.sumU("mid", msgID)
	if resp {
		m.sum(" ", ntName(status))
	}
	body := h[64:]
	if resp && cmd == 0 && status == 0 && len(body) >= 40 { // NEGOTIATE response [MS-SMB2] §2.2.4
		st := &c.smb
		st.maxRead, st.maxWrite = le32(body[32:]), le32(body[36:])
		m.u(fSMB2MaxRead, uint64(st.maxRead))
		m.u(fSMB2MaxWrite, uint64(st.maxWrite))
	}
	if !resp {
		t, old := c.newTask(at, SMBD, msgID, "SMB2 "+name)
		if old != nil && cmd != 12 { // CANCEL reuses the MessageId of what it cancels
			c.finding(at, true, CodeTaskConflict, "SMB2 request MessageId %d while one with that id (frame %d) is outstanding", msgID, old.cmd.RequestFrame)
		}
		if cmd == 12 && old != nil {
			c.dropTask(t)
			c.tasks[msgID] = old
			return nil
		}
		c.smb2Names(at, h, cmd, false, status, t, m)
		var chOff, chLen int
		var channel, remBytes uint32
		switch {
		case cmd == 8 && len(body) >= 48: // READ request [MS-SMB2] §2.2.19
			length, offset := le32(body[4:]), le64(body[8:])
			channel, chOff, chLen = le32(body[36:]), int(le16(body[44:])), int(le16(body[46:]))
			m.u(fSMB2Length, uint64(length))
			m.u(fSMB2Offset, offset)
			m.sumU("len", uint64(length))
			m.sumU("off", offset)
			if mr := c.smb.maxRead; mr > 0 && length > mr {
				c.finding(at, true, CodeSMB2SizeLimit, "SMB2 READ mid %d: Length %d above the MaxReadSize %d the server negotiated ([MS-SMB2] §3.2.4.15, §3.3.5.12)", msgID, length, mr)
			}
		case cmd == 9 && len(body) >= 48: // WRITE request §2.2.21
			length, offset := le32(body[4:]), le64(body[8:])
			channel, remBytes, chOff, chLen = le32(body[32:]), le32(body[36:]), int(le16(body[40:])), int(le16(body[42:]))
			m.u(fSMB2Length, uint64(length))
			m.u(fSMB2Offset, offset)
			m.u(fSMB2RemBytes, uint64(remBytes))
			m.sumU("len", uint64(max(length, remBytes)))
			m.sumU("off", offset)
			if mw := c.smb.maxWrite; mw > 0 && max(length, remBytes) > mw {
				c.finding(at, true, CodeSMB2SizeLimit, "SMB2 WRITE mid %d: %d octets above the MaxWriteSize %d the server negotiated ([MS-SMB2] §3.2.4.17, §3.3.5.13)", msgID, max(length, remBytes), mw)
			}
			t.cmd.Inline = uint64(length)
		default:
			return t
		}
		m.e(fSMB2Channel, uint64(channel), nameIdx(smb2Channels, channel))
		if channel != 1 && channel != 2 {
			return t
		}
		if chLen%16 != 0 || chOff+chLen > len(h) || chOff < 64 {
			c.finding(at, true, CodeSMB2Channel, "SMB2 %s with channel %s: ChannelInfoOffset %d Length %d do not hold whole descriptors inside the message ([MS-SMB2] §2.2.19)", name, smb2Channels[channel], chOff, chLen)
			return t
		}
		var sb strings.Builder
		var total uint64
		for i := chOff; i+16 <= chOff+chLen && i < chOff+16*MaxSTags; i += 16 {
			off, token, l := le64(h[i:]), le32(h[i+8:]), le32(h[i+12:])
			c.advertise(t, token, off, uint64(l), cmd == 8, cmd == 9, channel == 2)
			total += uint64(l)
			if sb.Len() > 0 {
				sb.WriteByte(' ')
			} else {
				m.u(fSMB2Token, uint64(token))
			}
			sb.WriteString("0x" + strconv.FormatUint(uint64(token), 16) + ":" + strconv.FormatUint(uint64(l), 10) + "@0x" + strconv.FormatUint(off, 16))
			if i == chOff {
				m.sumX("token", uint64(token))
			}
		}
		m.s(fSMB2Desc, sb.String())
		if cmd == 9 {
			t.cmd.Expected = uint64(remBytes)
		} else {
			t.cmd.Expected = 0 // a READ may get less than asked at end of file
		}
		return t
	}
	// a response
	if status == 0x103 && flags&2 != 0 {
		return nil // interim response: the final one follows
	}
	t := c.task(msgID)
	if t == nil {
		if c.fromStart && !c.lossy && msgID != 0xFFFFFFFFFFFFFFFF {
			c.finding(at, false, CodeUnknownTask, "SMB2 %s response for MessageId %d, which no outstanding request has", name, msgID)
		}
		return nil
	}
	c.smb2Names(at, h, cmd, true, status, t, m)
	ok := status == 0 || status == 0xC0000016 || status == 0x80000006 && cmd == 14
	switch {
	case cmd == 8 && len(body) >= 12 && ok: // READ response §2.2.20
		dl, dr := le32(body[4:]), le32(body[8:])
		m.u(fSMB2DataLen, uint64(dl))
		m.u(fSMB2DataRem, uint64(dr))
		if t.nstags > 0 && uint64(dr) != t.cmd.Moved {
			c.finding(at, false, CodeMovedMismatch, "SMB2 READ response DataRemaining %d, but %d octets were RDMA-Written ([MS-SMB2] §3.3.5.12)", dr, t.cmd.Moved)
		}
	case cmd == 9 && len(body) >= 8 && ok: // WRITE response §2.2.22
		cnt := le32(body[4:])
		m.u(fSMB2Count, uint64(cnt))
		if t.nstags > 0 && uint64(cnt) != t.cmd.Moved {
			c.finding(at, false, CodeMovedMismatch, "SMB2 WRITE response Count %d, but %d octets were RDMA-Read ([MS-SMB2] §3.3.5.13)", cnt, t.cmd.Moved)
		}
	}
	if !ok {
		t.failed = true
	}
	c.complete(at, t, a, ntName(status), ok, m)
	return nil
}
