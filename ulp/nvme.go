package ulp

import (
	"strconv"
	"strings"
	"time"

	"github.com/iwkit/iwkit/decode"
)

// NVMe over Fabrics, RDMA transport (NVM Express RDMA Transport
// Specification 1.0; NVMe Base and Fabrics; ulp-reference.md §1). All
// fields little-endian.

type nvmeState struct {
	pdReq, pdRep   bool // CM request / accept seen
	qid            uint16
	hrqsize        uint16
	hsqsize        uint16
	crqsize        uint16
	connectSQSize  uint16
	cntlid         uint16
	haveQID        bool
	connectChecked bool
	// kato is the admin queue's Keep Alive Timeout (Connect, ms; 0 none),
	// lastAdmin the time of its last command.
	kato      uint32
	lastAdmin time.Time
}

var (
	fNVMeType    = def("nvme.type", decode.KindEnum, false, "NVMe-oF message: cm_request, cm_accept, cm_reject, command, response, connect_data")
	fNVMeRecfmt  = def("nvme.recfmt", decode.KindUint, false, "CM private data record format (0)")
	fNVMeQID     = def("nvme.qid", decode.KindUint, false, "queue ID: 0 admin queue, ≥1 I/O queue (CM request, Connect)")
	fNVMeHRQSize = def("nvme.hrqsize", decode.KindUint, false, "CM request: host receive queue entries for response capsules")
	fNVMeHSQSize = def("nvme.hsqsize", decode.KindUint, false, "CM request: host send queue size (0-based, = Connect SQSIZE)")
	fNVMeCRQSize = def("nvme.crqsize", decode.KindUint, false, "CM accept: controller receive queue entries for command capsules (Linux: HSQSIZE + 1)")
	fNVMeRejSts  = def("nvme.reject_status", decode.KindEnum, false, "CM reject status (RDMA transport 1.0)")
	fNVMeOpcode  = def("nvme.opcode", decode.KindEnum, false, "command opcode, named by the queue: admin (QID 0), NVM I/O, or Fabrics (0x7F)")
	fNVMeFctype  = def("nvme.fctype", decode.KindEnum, false, "Fabrics command type (opcode 0x7F)")
	fNVMePSDT    = def("nvme.psdt", decode.KindUint, false, "PRP or SGL for data transfer: 1 SGL (contiguous metadata), 2 SGL; 0 PRP is not allowed on fabrics")
	fNVMeFuse    = def("nvme.fuse", decode.KindUint, false, "fused operation: 0 normal, 1 first, 2 second")
	fNVMeCID     = def("nvme.cid", decode.KindUint, false, "command identifier (Linux: generation counter in bits 15:12)")
	fNVMeNSID    = def("nvme.nsid", decode.KindUint, true, "namespace ID (0xffffffff: every namespace, NVMe Base 2.0 §3.2.1.2)")
	fNVMeSGLType = def("nvme.sgl.type", decode.KindEnum, false, "SGL descriptor: keyed data block (4/0, 4/F invalidate), data block offset (0/1 in-capsule), or other")
	fNVMeSGLAddr = def("nvme.sgl.addr", decode.KindUint, true, "keyed SGL address = the Tagged Offset the controller uses; offset into the capsule's data for in-capsule data")
	fNVMeSGLLen  = def("nvme.sgl.len", decode.KindUint, false, "SGL length, octets")
	fNVMeSGLKey  = def("nvme.sgl.key", decode.KindUint, true, "keyed SGL key = the STag of the RDMA Reads/Writes")
	fNVMeSGLInv  = def("nvme.sgl.invalidate", decode.KindBool, false, "sub type 0xF: the host asks for remote invalidation of the key with the response")
	fNVMeSLBA    = def("nvme.slba", decode.KindUint, false, "Read/Write: starting LBA")
	fNVMeNLB     = def("nvme.nlb", decode.KindUint, false, "Read/Write: number of logical blocks (1-based; the wire field is 0-based)")
	fNVMeCNS     = def("nvme.cns", decode.KindEnum, false, "Identify: controller or namespace structure (CNS), by name")
	fNVMeLID     = def("nvme.lid", decode.KindEnum, false, "Get Log Page: log page identifier")
	fNVMeNUMD    = def("nvme.numd", decode.KindUint, false, "Get Log Page: dwords to transfer (1-based)")
	fNVMeFID     = def("nvme.fid", decode.KindEnum, false, "Set/Get Features: feature identifier, by name")
	fNVMePropOff = def("nvme.prop.offset", decode.KindEnum, false, "Property Get/Set: property (CAP, VS, CC, CSTS, ...)")
	fNVMePropSz  = def("nvme.prop.size", decode.KindUint, false, "Property Get/Set: size in octets (4 or 8)")
	fNVMePropVal = def("nvme.prop.value", decode.KindUint, true, "Property Set: value; Property Get response: value")
	fNVMeSQSize  = def("nvme.sqsize", decode.KindUint, false, "Connect: submission queue size (0-based)")
	fNVMeCattr   = def("nvme.cattr", decode.KindUint, true, "Connect: connect attributes (bit 2: SQ flow control disabled)")
	fNVMeKATO    = def("nvme.kato", decode.KindUint, false, "Connect: keep-alive timeout, ms")
	fNVMeICD     = def("nvme.icd_len", decode.KindUint, false, "in-capsule data octets after the 64-octet SQE")
	fNVMeHostID  = def("nvme.connect.hostid", decode.KindBytes, false, "Connect data: host identifier (UUID)")
	fNVMeCCntlid = def("nvme.connect.cntlid", decode.KindUint, true, "Connect data: controller ID (0xFFFF: dynamic)")
	fNVMeSubNQN  = def("nvme.connect.subnqn", decode.KindString, false, "Connect data: NVM subsystem NQN")
	fNVMeHostNQN = def("nvme.connect.hostnqn", decode.KindString, false, "Connect data: host NQN")
	fNVMeDW0     = def("nvme.dw0", decode.KindUint, true, "CQE dword 0, command specific (Connect: CNTLID; Property Get: value)")
	fNVMeDW1     = def("nvme.dw1", decode.KindUint, true, "CQE dword 1, command specific")
	fNVMeCntlid  = def("nvme.cntlid", decode.KindUint, false, "Connect response: controller ID of the association")
	fNVMeSQHD    = def("nvme.sqhd", decode.KindUint, false, "CQE: submission queue head pointer")
	fNVMeSQID    = def("nvme.sqid", decode.KindUint, false, "CQE: submission queue ID")
	fNVMeStatus  = def("nvme.status", decode.KindEnum, false, "CQE status, named by status code type and code (value: the wire field >> 1)")
	fNVMeSCT     = def("nvme.sct", decode.KindUint, false, "CQE status code type: 0 generic, 1 command specific, 2 media, 3 path")
	fNVMeSC      = def("nvme.sc", decode.KindUint, true, "CQE status code")
	fNVMeDNR     = def("nvme.dnr", decode.KindBool, false, "CQE do not retry")
	// The discovery log page (LID 0x70), moved by RDMA Write into the
	// host's buffer and decoded with the Get Log Page's completion. The
	// per-entry fields list one value per entry, comma-separated, in
	// entry order (a field appears once per message).
	fNVMeDiscNumrec = def("nvme.discovery.numrec", decode.KindUint, false, "discovery log page: number of records (NUMREC)")
	fNVMeDiscTrtype = def("nvme.discovery.trtype", decode.KindString, false, "discovery log entries: transport types (rdma, fc, tcp, loop), one per entry")
	fNVMeDiscAdrfam = def("nvme.discovery.adrfam", decode.KindString, false, "discovery log entries: address families (ipv4, ipv6, ib, fc)")
	fNVMeDiscSubtyp = def("nvme.discovery.subtype", decode.KindString, false, "discovery log entries: referral, nvm subsystem, current discovery subsystem")
	fNVMeDiscTraddr = def("nvme.discovery.traddr", decode.KindString, false, "discovery log entries: transport addresses")
	fNVMeDiscSvcid  = def("nvme.discovery.trsvcid", decode.KindString, false, "discovery log entries: transport service ids (TCP ports)")
	fNVMeDiscSubnqn = def("nvme.discovery.subnqn", decode.KindString, false, "discovery log entries: subsystem NQNs")
	fNVMeDiscPrtype = def("nvme.discovery.rdma_prtype", decode.KindString, false, "discovery log entries: RDMA provider type from the TSAS (not specified, infiniband, roce, rocev2, iwarp; - for a non-RDMA entry)")
)

// The discovery log page (NVMe Base §5.16.1.23, ulp-reference.md §1.4):
// a 1024-octet header (GENCTR, NUMREC, RECFMT), then 1024-octet entries.
// nvmeDiscoveryMax bounds what is collected (the header and 15 entries).
const nvmeDiscoveryMax = 16 << 10

var (
	nvmeTrtypeNames = map[uint8]string{1: "rdma", 2: "fc", 3: "tcp", 0xFE: "loop"}
	nvmeAdrfamNames = map[uint8]string{1: "ipv4", 2: "ipv6", 3: "ib", 4: "fc"}
	nvmeSubtypNames = map[uint8]string{1: "referral", 2: "nvm subsystem", 3: "current discovery subsystem"}
	nvmePrtypeNames = map[uint8]string{1: "not specified", 2: "infiniband", 3: "roce", 4: "rocev2", 5: "iwarp"}
)

// nvmeLogData gathers the octets an RDMA Write places into a discovery
// Get Log Page's buffer, in order from its start (aux2: the SGL address).
func nvmeLogData(t *task, s *decode.Segment, missing int) {
	if off := s.DDP.TO - t.aux2; missing == 0 && off == uint64(len(t.data)) && len(t.data) < t.wantData {
		t.data = append(t.data, s.Payload[:min(len(s.Payload), t.wantData-len(t.data))]...)
	}
}

// nvmeDiscovery decodes the discovery log page in d into m: NUMREC, then
// each entry whole in d (at most NUMREC), one list value per entry.
func (c *Conn) nvmeDiscovery(d []byte, m *Message, frame int) {
	n := le64(d[8:])
	m.u(fNVMeDiscNumrec, n)
	m.sumU("discovery records", n)
	var l [7][]string
	for i := uint64(0); i < n && len(d) >= int(1024*(i+2)); i++ {
		e := d[1024*(i+1) : 1024*(i+2)]
		tr := nameOr(nvmeTrtypeNames, e[0])
		addr, svc := strings.TrimRight(cstr(e[512:768]), " "), strings.TrimRight(cstr(e[32:64]), " ")
		nqn, pr := cstr(e[256:512]), "-"
		m.sum(" [", tr)
		if e[0] == 1 { // RDMA: the TSAS names the provider (octet 1; iWARP is 5)
			pr = nameOr(nvmePrtypeNames, e[769])
			m.sum("/", pr)
		}
		m.sum(" ", addr, ":", svc, " ", nqn, "]")
		for k, v := range []string{tr, nameOr(nvmeAdrfamNames, e[1]), nameOr(nvmeSubtypNames, e[2]), addr, svc, nqn, pr} {
			l[k] = append(l[k], v)
		}
		c.disc.announce(Announced{Frame: frame, Entry: int(i), Trtype: tr, Prtype: pr, Traddr: addr, Trsvcid: svc, SubNQN: nqn})
	}
	if len(l[0]) == 0 {
		return
	}
	for k, id := range []FieldID{fNVMeDiscTrtype, fNVMeDiscAdrfam, fNVMeDiscSubtyp, fNVMeDiscTraddr, fNVMeDiscSvcid, fNVMeDiscSubnqn, fNVMeDiscPrtype} {
		m.s(id, strings.Join(l[k], ","))
	}
}

var nvmeTypeNames = []string{"cm_request", "cm_accept", "cm_reject", "command", "response", "connect_data"}

func (m *Message) nvmeType(t int) { m.e(fNVMeType, uint64(t), nvmeTypeNames[t]) }

// nvmePDShape: the 32 octets look like an NVMe-oF CM request or accept
// (ulp-reference.md §5.2 step 1).
func nvmePDShape(pd []byte, i2r, reject bool) bool {
	if reject {
		return false
	}
	from := 10
	if !i2r {
		from = 4
	}
	for _, x := range pd[from:] {
		if x != 0 {
			return false
		}
	}
	if i2r {
		return le16(pd[4:]) >= 1 // HRQSIZE
	}
	return true
}

var nvmeRejectNames = []string{"", "invalid private data length", "invalid RECFMT", "invalid QID", "invalid HSQSIZE", "invalid HRQSIZE", "no resources", "invalid IRD", "invalid ORD", "invalid CNTLID"}

// nvmePD decodes the CM private data (ulp-reference.md §1.1).
func (c *Conn) nvmePD(at At, i2r bool, f *decode.MPAFrame, pd []byte, m *Message) bool {
	st := &c.nvme
	switch {
	case f.Reject:
		if len(pd) < 4 {
			return false
		}
		m.nvmeType(2)
		m.u(fNVMeRecfmt, uint64(le16(pd)))
		sts := le16(pd[2:])
		name := "unknown"
		if int(sts) < len(nvmeRejectNames) && sts > 0 {
			name = nvmeRejectNames[sts]
		}
		m.e(fNVMeRejSts, uint64(sts), name)
		m.sum("NVMe CM reject: ", name)
		c.finding(at, i2r, CodeNVMeReject, "the controller rejected the NVMe-oF connection: %s (STS %d)", name, sts)
		return true
	case i2r:
		if len(pd) < 32 || le16(pd) != 0 {
			c.finding(at, i2r, CodeNVMeCMData, "NVMe-oF CM request private data: %d octets, RECFMT %d; a controller rejects anything but 32 octets with RECFMT 0 (RDMA transport 1.0 §3.3.4)", len(pd), func() int {
				if len(pd) >= 2 {
					return int(le16(pd))
				}
				return -1
			}())
			if len(pd) < 8 {
				return false
			}
		}
		m.nvmeType(0)
		st.pdReq, st.haveQID = true, true
		st.qid, st.hrqsize, st.hsqsize = le16(pd[2:]), le16(pd[4:]), le16(pd[6:])
		m.u(fNVMeRecfmt, uint64(le16(pd)))
		m.u(fNVMeQID, uint64(st.qid))
		m.u(fNVMeHRQSize, uint64(st.hrqsize))
		m.u(fNVMeHSQSize, uint64(st.hsqsize))
		m.sum("NVMe CM request")
		m.sumU("qid", uint64(st.qid))
		m.sumU("hrqsize", uint64(st.hrqsize))
		m.sumU("hsqsize", uint64(st.hsqsize))
		return true
	default:
		if len(pd) < 4 {
			return false
		}
		m.nvmeType(1)
		st.pdRep = true
		st.crqsize = le16(pd[2:])
		m.u(fNVMeRecfmt, uint64(le16(pd)))
		m.u(fNVMeCRQSize, uint64(st.crqsize))
		m.sum("NVMe CM accept")
		m.sumU("crqsize", uint64(st.crqsize))
		// CRQSIZE = HSQSIZE + 1 is Linux's 1-based count, not an error
		// (ulp-reference.md §1.1); smaller than HSQSIZE is legal with RNR
		// retry. Nothing to report.
		return true
	}
}

// nvmeSGLAllowed: the SGL identifiers the RDMA transport permits (keyed
// 4/0 and 4/F, data block offset 0/1, last segment offset 3/1;
// ulp-reference.md §1.2).
func nvmeSGLAllowed(id uint8) bool { return id == 0x40 || id == 0x4F || id == 0x01 || id == 0x31 }

// nvmeLooksLike is the content test of ulp-reference.md §5.2 steps 2–3.
func nvmeLooksLike(b []byte, i2r bool) bool {
	if !i2r || len(b) < 64 {
		return false
	}
	id := b[39]
	return b[1]&0xC0 == 0x40 && b[1]&0x3C == 0 && (id == 0x40 || id == 0x4F || id == 0x01) &&
		(b[0] != 0x7F || b[4] <= 0x08)
}

var nvmeAdminNames = map[uint8]string{
	0x00: "Delete I/O SQ", 0x01: "Create I/O SQ", 0x02: "Get Log Page", 0x04: "Delete I/O CQ", 0x05: "Create I/O CQ",
	0x06: "Identify", 0x08: "Abort", 0x09: "Set Features", 0x0A: "Get Features", 0x0C: "Asynchronous Event Request",
	0x0D: "Namespace Management", 0x10: "Firmware Commit", 0x11: "Firmware Image Download", 0x14: "Device Self-test",
	0x15: "Namespace Attachment", 0x18: "Keep Alive", 0x19: "Directive Send", 0x1A: "Directive Receive",
	0x1C: "Virtualization Management", 0x1D: "NVMe-MI Send", 0x1E: "NVMe-MI Receive", 0x20: "Capacity Management",
	0x24: "Lockdown", 0x7C: "Doorbell Buffer Config", 0x7F: "Fabrics", 0x80: "Format NVM", 0x81: "Security Send",
	0x82: "Security Receive", 0x84: "Sanitize", 0x86: "Get LBA Status",
}

var nvmeIONames = map[uint8]string{
	0x00: "Flush", 0x01: "Write", 0x02: "Read", 0x04: "Write Uncorrectable", 0x05: "Compare", 0x08: "Write Zeroes",
	0x09: "Dataset Management", 0x0C: "Verify", 0x0D: "Reservation Register", 0x0E: "Reservation Report",
	0x11: "Reservation Acquire", 0x15: "Reservation Release", 0x19: "Copy", 0x79: "Zone Management Send",
	0x7A: "Zone Management Receive", 0x7D: "Zone Append", 0x7F: "Fabrics",
}

var nvmeFctypeNames = map[uint8]string{0x00: "Property Set", 0x01: "Connect", 0x04: "Property Get", 0x05: "Authentication Send", 0x06: "Authentication Receive", 0x08: "Disconnect"}

var nvmeLIDNames = map[uint8]string{0x01: "Error Information", 0x02: "SMART / Health", 0x03: "Firmware Slot", 0x04: "Changed Namespace List",
	0x05: "Commands Supported and Effects", 0x06: "Device Self-test", 0x0C: "Asymmetric Namespace Access", 0x70: "Discovery",
	0x80: "Reservation Notification", 0x81: "Sanitize Status"}

var nvmePropNames = map[uint32]string{0x00: "CAP", 0x08: "VS", 0x0C: "INTMS", 0x10: "INTMC", 0x14: "CC", 0x1C: "CSTS", 0x20: "NSSR"}

func nameOr(m map[uint8]string, k uint8) string {
	if n, ok := m[k]; ok {
		return n
	}
	return "0x" + strconv.FormatUint(uint64(k), 16)
}

// nvmeQueueChecks are the checks of a queue's command flow: the SQ
// overrun and, on the admin queue, the Keep Alive Timeout.
func (c *Conn) nvmeQueueChecks(at At, opc uint8, cid uint16, name string) {
	st := &c.nvme
	// More commands outstanding than the queue holds: HSQSIZE/SQSIZE are
	// 0-based (NVMe-oF RDMA transport §3.3.4, Connect §3.3); the host
	// may not submit beyond it, and the controller's receive queue
	// (CRQSIZE) has no room for more capsules (ulp-reference §6.2). An
	// Asynchronous Event Request stays outstanding for the association's
	// life: it does not hold a queue entry.
	size := 0
	switch {
	case st.connectSQSize > 0:
		size = int(st.connectSQSize) + 1
	case st.pdReq:
		size = int(st.hsqsize) + 1
	}
	if n := len(c.tasks); size > 0 && n > size {
		for _, t := range c.tasks {
			if t.opc == 0x0C && st.haveQID && st.qid == 0 {
				n--
			}
		}
		if n > size {
			c.finding(at, true, CodeNVMeSQOverrun, "NVMe %s cid %d: %d commands outstanding on a queue of %d entries (SQSIZE %d, 0-based: NVMe-oF RDMA transport §3.3.4)", name, cid, n, size, size-1)
		}
	}
	// Keep Alive (NVMe Base §5.2.12, §7.12): with KATO set, the host
	// sends a command at least every KATO on the admin queue (a Keep
	// Alive when it has nothing else). With Traffic Based Keep Alive the
	// I/O queues' commands count too, which one connection cannot see:
	// a note.
	if st.haveQID && st.qid == 0 && st.kato > 0 {
		if !st.lastAdmin.IsZero() {
			if gap := at.Time.Sub(st.lastAdmin); gap > time.Duration(st.kato)*time.Millisecond {
				c.finding(at, true, CodeNVMeKeepAlive, "NVMe %s cid %d: no admin command for %v, over the Keep Alive Timeout of %d ms (NVMe Base §5.2.12; traffic on I/O queues counts with TBKAS)", name, cid, gap.Round(time.Millisecond), st.kato)
			}
		}
		st.lastAdmin = at.Time
	}
}

// nvmeCmdName names opcode opc (fctype for Fabrics) by the queue.
func (c *Conn) nvmeCmdName(opc, fctype uint8, nsid uint32) string {
	if opc == 0x7F {
		return nameOr(nvmeFctypeNames, fctype)
	}
	admin := c.nvme.haveQID && c.nvme.qid == 0
	if !c.nvme.haveQID {
		admin = !(opc <= 0x02 && nsid != 0)
	}
	if admin {
		return nameOr(nvmeAdminNames, opc)
	}
	return nameOr(nvmeIONames, opc)
}

// nvmeSend decodes a command capsule (host → controller) or a response
// capsule (controller → host).
func (c *Conn) nvmeSend(at At, i2r bool, a *sendAsm, b []byte, m *Message) bool {
	if !i2r {
		return c.nvmeResponse(at, a, b, m)
	}
	if len(b) < 64 || b[1]&0x3C != 0 || !nvmeSGLAllowed(b[39]) {
		return false // not an SQE (FLAGS reserved bits, SGL identifier)
	}
	st := &c.nvme
	opc, flags, cid, nsid := b[0], b[1], le16(b[2:]), le32(b[4:])
	fctype := uint8(0)
	if opc == 0x7F {
		fctype = b[4]
	}
	psdt := flags >> 6
	sglID := b[39]
	sglType, sglSub := sglID>>4, sglID&0xF
	name := c.nvmeCmdName(opc, fctype, nsid)
	m.nvmeType(3)
	if opc == 0x7F {
		m.e(fNVMeOpcode, uint64(opc), "Fabrics")
		m.e(fNVMeFctype, uint64(fctype), name)
	} else {
		m.e(fNVMeOpcode, uint64(opc), name)
	}
	m.u(fNVMePSDT, uint64(psdt))
	if fuse := flags & 3; fuse != 0 {
		m.u(fNVMeFuse, uint64(fuse))
	}
	m.u(fNVMeCID, uint64(cid))
	if opc != 0x7F {
		m.u(fNVMeNSID, uint64(nsid))
	}
	m.sum("NVMe ", name)
	m.sumU("cid", uint64(cid))
	switch {
	case opc == 0x7F || nsid == 0:
	case nsid == nvmeBroadcastNSID:
		m.sumX("nsid", uint64(nsid))
	default:
		m.sumU("nsid", uint64(nsid))
	}
	if psdt == 0 {
		c.finding(at, true, CodeNVMePRP, "NVMe command cid %d uses PSDT 00 (PRP): fabrics carry SGLs only (NVMe over Fabrics §2)", cid)
	}
	t, old := c.newTask(at, NVMe, uint64(cid), name)
	if old != nil {
		c.finding(at, true, CodeTaskConflict, "NVMe command cid %d (%s) while cid %d (%s, frame %d) is still outstanding on this queue", cid, name, cid, old.cmd.Name, old.cmd.RequestFrame)
	}
	t.opc, t.fctype = opc, fctype
	c.nvmeQueueChecks(at, opc, cid, name)
	dirBits := opc & 3
	if opc == 0x7F {
		dirBits = fctype & 3
	}
	icd := uint64(len(b) - 64)
	if len(b) < a.total {
		icd = uint64(a.total - 64)
	}
	// Command-specific fields (ulp-reference.md §1.3–§1.5).
	switch {
	case opc == 0x7F && fctype == 0x01: // Connect
		qid, sqsize := le16(b[42:]), le16(b[44:])
		m.u(fNVMeRecfmt, uint64(le16(b[40:])))
		m.u(fNVMeQID, uint64(qid))
		m.u(fNVMeSQSize, uint64(sqsize))
		m.u(fNVMeCattr, uint64(b[46]))
		m.u(fNVMeKATO, uint64(le32(b[48:])))
		m.sumU("qid", uint64(qid))
		m.sumU("sqsize", uint64(sqsize))
		if st.pdReq && (qid != st.qid || sqsize != st.hsqsize) {
			c.finding(at, true, CodeNVMeConnectParam, "Connect QID %d SQSIZE %d, but the CM private data said QID %d HSQSIZE %d (RDMA transport 1.0 §3.3.4)", qid, sqsize, st.qid, st.hsqsize)
		}
		if !st.haveQID {
			st.qid, st.haveQID = qid, true
		}
		st.connectSQSize = sqsize
		if qid == 0 {
			st.kato, st.lastAdmin = le32(b[48:]), at.Time
		}
	case opc == 0x7F && (fctype == 0x00 || fctype == 0x04): // Property Set / Get
		ofst := le32(b[44:])
		size := uint64(4)
		if b[40]&7 == 1 {
			size = 8
		}
		pn := nvmePropNames[ofst]
		if pn == "" {
			pn = "0x" + strconv.FormatUint(uint64(ofst), 16)
		}
		m.e(fNVMePropOff, uint64(ofst), pn)
		m.u(fNVMePropSz, size)
		m.sum(" ", pn)
		if fctype == 0x00 {
			v := le64(b[48:])
			if size == 4 {
				v &= 0xFFFFFFFF
			}
			m.u(fNVMePropVal, v)
			m.sumX("value", v)
		}
	case opc == 0x7F:
	case !st.haveQID || st.qid != 0: // NVM command set
		switch opc {
		case 0x01, 0x02, 0x04, 0x05, 0x08, 0x0C:
			slba, nlb := le64(b[40:]), uint64(le16(b[48:]))+1
			m.u(fNVMeSLBA, slba)
			m.u(fNVMeNLB, nlb)
			m.sumU("lba", slba)
			m.sumU("len", nlb)
			t.aux = nlb
		}
	default: // admin
		switch opc {
		case 0x06:
			m.e(fNVMeCNS, uint64(b[40]), nameOr(nvmeCNSNames, b[40]))
			m.sum(" ", nameOr(nvmeCNSNames, b[40]))
		case 0x02:
			lid := b[40]
			numd := uint64(le16(b[42:])) | uint64(le16(b[44:]))<<16
			m.e(fNVMeLID, uint64(lid), nameOr(nvmeLIDNames, lid))
			t.aux = uint64(lid) // the completion decodes a discovery log page
			m.u(fNVMeNUMD, numd+1)
			m.sum(" ", nameOr(nvmeLIDNames, lid))
		case 0x09, 0x0A:
			m.e(fNVMeFID, uint64(b[40]), nameOr(nvmeFIDNames, b[40]))
			m.sum(" ", nameOr(nvmeFIDNames, b[40]))
		}
	}
	// The SGL (ulp-reference.md §1.2).
	switch {
	case sglType == 4:
		addr, l, key := le64(b[24:]), uint64(b[32])|uint64(b[33])<<8|uint64(b[34])<<16, le32(b[35:])
		inv := sglSub == 0xF
		tn := "keyed"
		if inv {
			tn = "keyed invalidate"
		}
		m.e(fNVMeSGLType, uint64(sglID), tn)
		m.u(fNVMeSGLAddr, addr)
		m.u(fNVMeSGLLen, l)
		m.u(fNVMeSGLKey, uint64(key))
		m.b(fNVMeSGLInv, inv)
		if l > 0 {
			m.sumX("key", uint64(key))
			c.advertise(t, key, addr, l, dirBits&2 != 0, dirBits&1 != 0, inv)
			t.cmd.Expected = l
			if opc == 0x7F && fctype == 0x01 && dirBits&1 != 0 && l >= 1024 {
				t.wantData = 1024 // the admin Connect data, fetched by RDMA Read
			}
			if opc == 0x02 && st.haveQID && st.qid == 0 && t.aux == 0x70 && l >= 2048 {
				// The discovery log page, placed by RDMA Write.
				t.wantData, t.aux2 = int(min(l, nvmeDiscoveryMax)), addr
			}
		}
	case sglID == 0x01:
		off, l := le64(b[24:]), uint64(le32(b[32:]))
		m.e(fNVMeSGLType, uint64(sglID), "offset")
		m.u(fNVMeSGLAddr, off)
		m.u(fNVMeSGLLen, l)
		t.cmd.Inline = icd
		// The offset is the wire's 64-bit value: compare it in uint64 against
		// what the capsule holds, never through int (an offset near 2^64
		// wrapped the old int sum negative and passed the check).
		rest := uint64(len(b) - 64) // the capsule's data area as captured
		if wire := uint64(max(a.total, len(b)) - 64); off > wire || wire-off < l {
			// The offset SGL describes in-capsule data: it must lie in the
			// capsule's data area (ulp-reference.md §1.2, §6.2).
			c.finding(at, true, CodeNVMeSGLOffset, "NVMe command cid %d: in-capsule SGL offset %d length %d, but the capsule carries %d octets of data", cid, off, l, wire)
		} else if opc == 0x7F && fctype == 0x01 && off <= rest && rest-off >= 1024 { // what the capture kept of it
			c.nvmeConnectFields(b[64+off:64+off+1024], m, at.Last, le16(b[42:]))
		}
	default:
		m.e(fNVMeSGLType, uint64(sglID), "0x"+strconv.FormatUint(uint64(sglID), 16))
	}
	if icd > 0 {
		m.u(fNVMeICD, icd)
		m.sumU("icd", icd)
	}
	return true
}

// nvmeConnectFields decodes the 1024-octet Connect data (ulp-reference.md §1.3).
//
// The Connect (command frame, QID) is kept for Discovery's links.
func (c *Conn) nvmeConnectFields(d []byte, m *Message, frame int, qid uint16) {
	m.F = append(m.F, FV{fNVMeHostID, decode.Value{Kind: decode.KindBytes, B: d[:16]}})
	cntlid := le16(d[16:])
	m.u(fNVMeCCntlid, uint64(cntlid))
	sub, host := cstr(d[256:512]), cstr(d[512:768])
	m.s(fNVMeSubNQN, sub)
	c.qn.subnqn, c.qn.name = sub, "" // names the queue (depth.go)
	m.s(fNVMeHostNQN, host)
	c.disc.connect(Connected{Frame: frame, QID: qid, SubNQN: sub})
	m.sum(" subnqn ", sub, " hostnqn ", host)
}

// nvmeConnectData reports the admin Connect data once the RDMA Read
// brought all of it.
func (c *Conn) nvmeConnectData(t *task) *Message {
	m := &c.msg
	m.reset(NVMe)
	m.nvmeType(5)
	m.u(fNVMeCID, t.cmd.ID)
	m.sum("NVMe Connect data")
	m.sumU("cid", t.cmd.ID)
	c.nvmeConnectFields(t.data, m, t.cmd.RequestFrame, c.nvme.qid)
	t.data, t.wantData = nil, 0
	return m
}

// nvmeStatusName names a CQE status (SCT, SC), ulp-reference.md §1.6.
func nvmeStatusName(sct, sc uint16) string {
	switch sct {
	case 0:
		switch sc {
		case 0x00:
			return "Success"
		case 0x01:
			return "Invalid Opcode"
		case 0x02:
			return "Invalid Field"
		case 0x03:
			return "Command ID Conflict"
		case 0x04:
			return "Data Transfer Error"
		case 0x06:
			return "Internal Error"
		case 0x07:
			return "Abort Requested"
		case 0x08:
			return "Aborted: SQ Deletion"
		case 0x0B:
			return "Invalid Namespace or Format"
		case 0x0C:
			return "Command Sequence Error"
		case 0x0D:
			return "Invalid SGL Segment Descriptor"
		case 0x0E:
			return "Invalid Number of SGL Descriptors"
		case 0x0F:
			return "Data SGL Length Invalid"
		case 0x10:
			return "Metadata SGL Length Invalid"
		case 0x11:
			return "SGL Descriptor Type Invalid"
		case 0x80:
			return "LBA Out of Range"
		case 0x81:
			return "Capacity Exceeded"
		case 0x82:
			return "Namespace Not Ready"
		case 0x83:
			return "Reservation Conflict"
		}
	case 1:
		switch sc {
		case 0x80:
			return "Connect Incompatible Format"
		case 0x81:
			return "Connect Controller Busy"
		case 0x82:
			return "Connect Invalid Parameters"
		case 0x83:
			return "Connect Restart Discovery"
		case 0x84:
			return "Connect Invalid Host"
		case 0x90:
			return "Discovery Restart"
		case 0x91:
			return "Authentication Required"
		}
	case 2:
		switch sc {
		case 0x80:
			return "Write Fault"
		case 0x81:
			return "Unrecovered Read Error"
		case 0x82:
			return "Guard Check Error"
		case 0x83:
			return "Application Tag Check Error"
		case 0x84:
			return "Reference Tag Check Error"
		case 0x85:
			return "Compare Failure"
		case 0x86:
			return "Access Denied"
		}
	}
	return "SCT " + strconv.Itoa(int(sct)) + " SC 0x" + strconv.FormatUint(uint64(sc), 16)
}

// nvmeResponse decodes a 16-octet CQE and completes its command.
func (c *Conn) nvmeResponse(at At, a *sendAsm, b []byte, m *Message) bool {
	if len(b) < 16 {
		return false
	}
	st := &c.nvme
	if a.total != 16 && c.task(uint64(le16(b[12:]))) == nil {
		return false // a response capsule is 16 octets; a longer one must at least name a command
	}
	if a.total != 16 {
		c.finding(at, false, CodeNVMeRespSize, "NVMe response capsule of %d octets: response capsules are exactly 16 octets on RDMA (RDMA transport 1.0 §2)", a.total)
	}
	dw0, dw1, sqhd, sqid, cid, sf := le32(b), le32(b[4:]), le16(b[8:]), le16(b[10:]), le16(b[12:]), le16(b[14:])
	sc, sct, dnr := (sf>>1)&0xFF, (sf>>9)&7, sf>>15 != 0
	status := nvmeStatusName(sct, sc)
	m.nvmeType(4)
	m.u(fNVMeCID, uint64(cid))
	m.u(fNVMeDW0, uint64(dw0))
	m.u(fNVMeDW1, uint64(dw1))
	m.u(fNVMeSQHD, uint64(sqhd))
	c.window(WinNVMeSQHead, int64(sqhd)) // window.go
	m.u(fNVMeSQID, uint64(sqid))
	m.e(fNVMeStatus, uint64(sf>>1), status)
	m.u(fNVMeSCT, uint64(sct))
	m.u(fNVMeSC, uint64(sc))
	m.b(fNVMeDNR, dnr)
	m.sum("NVMe Completion")
	m.sumU("cid", uint64(cid))
	m.sum(" ", status)
	m.sumU("sqhd", uint64(sqhd))
	if st.haveQID && sqid != st.qid {
		c.finding(at, false, CodeNVMeSQID, "NVMe CQE for cid %d names SQID %d on the connection of queue %d", cid, sqid, st.qid)
	}
	t := c.task(uint64(cid))
	if t == nil {
		if c.fromStart && !c.lossy {
			c.finding(at, false, CodeUnknownTask, "NVMe completion for cid %d, which is not outstanding on this queue", cid)
		}
		return true
	}
	ok := sf>>1 == 0
	switch {
	case t.opc == 0x7F && t.fctype == 0x01 && ok:
		st.cntlid, c.qn.name = uint16(dw0), ""
		m.u(fNVMeCntlid, uint64(dw0&0xFFFF))
		m.sumU("cntlid", uint64(dw0&0xFFFF))
	case t.opc == 0x7F && t.fctype == 0x04 && ok:
		v := uint64(dw0) | uint64(dw1)<<32
		m.u(fNVMePropVal, v)
		m.sumX("value", v)
	case t.opc == 0x02 && t.aux == 0x70 && t.wantData > 0:
		if ok && len(t.data) >= 1024 {
			c.nvmeDiscovery(t.data, m, at.Last)
		}
		t.data, t.wantData = nil, 0
	}
	if ok && t.cmd.Expected > 0 && t.cmd.Moved > 0 && t.cmd.Moved != t.cmd.Expected {
		c.finding(at, false, CodeMovedMismatch, "NVMe %s cid %d: %d octets moved by RDMA, the SGL said %d; short transfers are not legal in NVMe (ulp-reference.md §6.2)", t.cmd.Name, cid, t.cmd.Moved, t.cmd.Expected)
	}
	c.complete(at, t, a, status, ok, m)
	return true
}
