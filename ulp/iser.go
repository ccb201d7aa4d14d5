package ulp

import (
	"strconv"
	"strings"

	"github.com/iwkit/iwkit/decode"
)

// iSER (RFC 7145) carrying iSCSI (RFC 7143), SCSI CDBs (SBC/SPC);
// ulp-reference.md §2. Big-endian.

type iserState struct {
	noSendInv   bool // the initiator's CM flags: Send with Invalidate not supported
	unsolicited bool // InitialR2T=No negotiated: unsolicited Data-Out Sends may follow a command
	// The command window the target last announced (every target PDU
	// carries ExpCmdSN and MaxCmdSN, RFC 7143 §11.*); window once seen.
	expCmdSN, maxCmdSN uint32
	window             bool
}

// snLess is serial-number arithmetic on 32 bits (RFC 1982, as RFC 7143
// §4.2.2.1 requires for CmdSN).
func snLess(a, b uint32) bool { return a != b && int32(a-b) < 0 }

// cmdWindow checks a non-immediate command's CmdSN against the window
// (RFC 7143 §4.2.2.1: the target silently ignores a non-immediate command
// outside ExpCmdSN..MaxCmdSN; MaxCmdSN = ExpCmdSN - 1 closes the window).
func (c *Conn) cmdWindow(at At, name string, itt, cmdsn uint32) {
	st := &c.iser
	if !st.window {
		return
	}
	if snLess(cmdsn, st.expCmdSN) || snLess(st.maxCmdSN, cmdsn) {
		c.finding(at, true, CodeISCSICmdSN, "iSCSI %s itt 0x%x CmdSN %d outside the window ExpCmdSN %d .. MaxCmdSN %d the target announced: it is ignored (RFC 7143 §4.2.2.1)",
			name, itt, cmdsn, st.expCmdSN, st.maxCmdSN)
	}
}

var (
	fISERCMFlags  = def("iser.cm.flags", decode.KindUint, true, "iSER CM private data flags: 0x80 ZBVA not supported, 0x40 Send with Invalidate not supported")
	fISEROpcode   = def("iser.opcode", decode.KindEnum, false, "iSER header opcode: 1 iSCSI control-type PDU, 2 Hello, 3 HelloReply")
	fISERWSV      = def("iser.wsv", decode.KindBool, false, "Write STag valid")
	fISERRSV      = def("iser.rsv", decode.KindBool, false, "Read STag valid")
	fISERWSTag    = def("iser.write_stag", decode.KindUint, true, "Write STag: the target RDMA-Reads solicited write data from it")
	fISERWVA      = def("iser.write_va", decode.KindUint, true, "Write Base Offset")
	fISERRSTag    = def("iser.read_stag", decode.KindUint, true, "Read STag: the target RDMA-Writes read data into it")
	fISERRVA      = def("iser.read_va", decode.KindUint, true, "Read Base Offset")
	fISERMaxVer   = def("iser.hello.max_ver", decode.KindUint, false, "Hello/HelloReply MaxVer")
	fISERMinVer   = def("iser.hello.min_ver", decode.KindUint, false, "Hello MinVer / HelloReply CurVer")
	fISERIRDORD   = def("iser.hello.ird_ord", decode.KindUint, false, "Hello iSER-IRD / HelloReply iSER-ORD")
	fISERReject   = def("iser.hello.reject", decode.KindBool, false, "HelloReply REJ")
	fISCSIOpcode  = def("iscsi.opcode", decode.KindEnum, false, "iSCSI PDU opcode")
	fISCSIImm     = def("iscsi.immediate", decode.KindBool, false, "I: immediate delivery")
	fISCSIFinal   = def("iscsi.final", decode.KindBool, false, "F (T for Login): final PDU")
	fISCSIDSL     = def("iscsi.dsl", decode.KindUint, false, "DataSegmentLength")
	fISCSILUN     = def("iscsi.lun", decode.KindUint, true, "LUN")
	fISCSIITT     = def("iscsi.itt", decode.KindUint, true, "Initiator Task Tag")
	fISCSIRead    = def("iscsi.read", decode.KindBool, false, "SCSI Command R: data to the initiator")
	fISCSIWrite   = def("iscsi.write", decode.KindBool, false, "SCSI Command W: data to the target")
	fISCSIEDTL    = def("iscsi.edtl", decode.KindUint, false, "Expected Data Transfer Length")
	fISCSICmdSN   = def("iscsi.cmdsn", decode.KindUint, false, "CmdSN")
	fISCSIStatSN  = def("iscsi.statsn", decode.KindUint, false, "StatSN")
	fISCSIMaxCmd  = def("iscsi.maxcmdsn", decode.KindUint, false, "MaxCmdSN")
	fISCSIResp    = def("iscsi.response", decode.KindUint, false, "SCSI Response: 0 completed at target, 1 target failure; Logout Response")
	fISCSIResid   = def("iscsi.residual", decode.KindUint, false, "residual count")
	fISCSIUnder   = def("iscsi.underflow", decode.KindBool, false, "U: residual underflow")
	fISCSICSG     = def("iscsi.login.csg", decode.KindUint, false, "Login current stage: 0 security, 1 operational, 3 full feature")
	fISCSINSG     = def("iscsi.login.nsg", decode.KindUint, false, "Login next stage")
	fISCSITSIH    = def("iscsi.login.tsih", decode.KindUint, false, "Login TSIH")
	fISCSIStClass = def("iscsi.login.status_class", decode.KindUint, false, "Login Response status class: 0 success, 1 redirect, 2 initiator error, 3 target error")
	fISCSIStDet   = def("iscsi.login.status_detail", decode.KindUint, false, "Login Response status detail")
	fISCSIKeys    = def("iscsi.keys", decode.KindString, false, "Login/Text key=value pairs, space separated")
	fSCSIOpcode   = def("scsi.opcode", decode.KindEnum, false, "CDB operation code")
	fSCSISvcAct   = def("scsi.service_action", decode.KindEnum, false, "service action of MAINTENANCE IN/OUT and SERVICE ACTION IN(16), by name; it names the command")
	fSCSILBA      = def("scsi.lba", decode.KindUint, false, "READ/WRITE logical block address")
	fSCSIBlocks   = def("scsi.blocks", decode.KindUint, false, "READ/WRITE transfer length, blocks")
	fSCSIStatus   = def("scsi.status", decode.KindEnum, false, "SCSI status")
	fSCSISense    = def("scsi.sense_key", decode.KindEnum, false, "sense key")
	fSCSIASC      = def("scsi.asc", decode.KindEnum, false, "additional sense code and qualifier by name (number: ASC << 8 | ASCQ)")
)

func (c *Conn) iserPD(at At, i2r bool, pd []byte, m *Message) bool {
	if len(pd) != 4 {
		return false
	}
	m.u(fISERCMFlags, uint64(pd[0]))
	m.sum("iSER CM flags 0x", strconv.FormatUint(uint64(pd[0]), 16))
	if pd[0]&0x80 != 0 {
		m.sum(" no-ZBVA")
	}
	if pd[0]&0x40 != 0 {
		m.sum(" no-SendInv")
		if i2r {
			c.iser.noSendInv = true
		}
	}
	return true
}

var iscsiInitOps = map[uint8]string{0x00: "NOP-Out", 0x01: "SCSI Command", 0x02: "Task Management Request", 0x03: "Login Request",
	0x04: "Text Request", 0x05: "SCSI Data-Out", 0x06: "Logout Request", 0x10: "SNACK Request"}
var iscsiTgtOps = map[uint8]string{0x20: "NOP-In", 0x21: "SCSI Response", 0x22: "Task Management Response", 0x23: "Login Response",
	0x24: "Text Response", 0x25: "SCSI Data-In", 0x26: "Logout Response", 0x31: "Ready To Transfer", 0x32: "Asynchronous Message", 0x3F: "Reject"}

func iserLooksLike(b []byte, i2r bool) bool {
	if len(b) == 28 && (i2r && b[0] == 0x20 || !i2r && b[0]&0xFE == 0x30) {
		return true
	}
	if len(b) < 76 || b[1] != 0 || b[2] != 0 || b[3] != 0 {
		return false
	}
	op := b[28] & 0x3F
	dsl := int(b[33])<<16 | int(b[34])<<8 | int(b[35])
	if dsl > len(b)-76 {
		return false
	}
	if i2r {
		_, ok := iscsiInitOps[op]
		return (b[0] == 0x10 || b[0] == 0x14 || b[0] == 0x18 || b[0] == 0x1C) && ok
	}
	_, ok := iscsiTgtOps[op]
	return b[0] == 0x10 && ok
}

var scsiNames = map[uint8]string{0x00: "TEST UNIT READY", 0x03: "REQUEST SENSE", 0x08: "READ(6)", 0x0A: "WRITE(6)", 0x12: "INQUIRY",
	0x1A: "MODE SENSE(6)", 0x25: "READ CAPACITY(10)", 0x28: "READ(10)", 0x2A: "WRITE(10)", 0x35: "SYNCHRONIZE CACHE(10)",
	0x42: "UNMAP", 0x5A: "MODE SENSE(10)", 0x88: "READ(16)", 0x8A: "WRITE(16)", 0x91: "SYNCHRONIZE CACHE(16)", 0x93: "WRITE SAME(16)",
	0x9E: "SERVICE ACTION IN(16)", 0xA0: "REPORT LUNS", 0xA3: "MAINTENANCE IN", 0xA4: "MAINTENANCE OUT", 0xA8: "READ(12)", 0xAA: "WRITE(12)"}

var scsiStatusNames = map[uint8]string{0x00: "GOOD", 0x02: "CHECK CONDITION", 0x08: "BUSY", 0x18: "RESERVATION CONFLICT",
	0x28: "TASK SET FULL", 0x30: "ACA ACTIVE", 0x40: "TASK ABORTED"}

var senseKeys = []string{"NO SENSE", "RECOVERED ERROR", "NOT READY", "MEDIUM ERROR", "HARDWARE ERROR", "ILLEGAL REQUEST",
	"UNIT ATTENTION", "DATA PROTECT", "BLANK CHECK", "VENDOR SPECIFIC", "COPY ABORTED", "ABORTED COMMAND", "0xc", "VOLUME OVERFLOW", "MISCOMPARE", "0xf"}

// cdb decodes the CDB's opcode, LBA and transfer length (ulp-reference.md §2.4).
func cdb(b []byte, m *Message) (name string, lba, blocks uint64, rw bool) {
	op := b[0]
	name = scsiNames[op]
	if name == "" {
		name = "0x" + strconv.FormatUint(uint64(op), 16)
	}
	// A service action names the command (SPC-5 §4.2.5.2): MAINTENANCE
	// IN 0x0C is a REPORT SUPPORTED OPERATION CODES, as tools print it.
	if sa, ok := scsiServiceActions[op]; ok {
		san, known := sa[b[1]&0x1F]
		if !known {
			san = name + " 0x" + strconv.FormatUint(uint64(b[1]&0x1F), 16)
		}
		m.e(fSCSISvcAct, uint64(b[1]&0x1F), san)
		if known {
			name = san
		}
	}
	switch op {
	case 0x08, 0x0A:
		lba, blocks, rw = uint64(b[1]&0x1F)<<16|uint64(be16(b[2:])), uint64(b[4]), true
		if blocks == 0 {
			blocks = 256
		}
	case 0x28, 0x2A:
		lba, blocks, rw = uint64(be32(b[2:])), uint64(be16(b[7:])), true
	case 0xA8, 0xAA:
		lba, blocks, rw = uint64(be32(b[2:])), uint64(be32(b[6:])), true
	case 0x88, 0x8A:
		lba, blocks, rw = be64(b[2:]), uint64(be32(b[10:])), true
	}
	m.e(fSCSIOpcode, uint64(op), name)
	if rw {
		m.u(fSCSILBA, lba)
		m.u(fSCSIBlocks, blocks)
	}
	return
}

// iscsiKeys turns a NUL-separated key=value data segment into one string.
func iscsiKeys(d []byte) string {
	parts := strings.Split(strings.TrimRight(string(d), "\x00"), "\x00")
	return strings.Join(parts, " ")
}

func (c *Conn) iserSend(at At, i2r bool, a *sendAsm, b []byte, m *Message) bool {
	if len(b) < 28 {
		return false
	}
	flags := b[0]
	op := flags >> 4
	switch {
	case (op == 2 || op == 3) && len(b) >= 28:
		m.e(fISEROpcode, uint64(op), map[uint8]string{2: "Hello", 3: "HelloReply"}[op])
		m.u(fISERMaxVer, uint64(b[1]>>4))
		m.u(fISERMinVer, uint64(b[1]&0xF))
		m.u(fISERIRDORD, uint64(be16(b[2:])))
		if op == 3 {
			m.b(fISERReject, flags&1 != 0)
			m.sum("iSER HelloReply")
		} else {
			m.sum("iSER Hello")
		}
		m.sumU("ird/ord", uint64(be16(b[2:])))
		return true
	case op != 1 || len(b) < 76:
		if c.decoded > 0 {
			c.finding(at, i2r, CodeISEROpcode, "Send without a valid iSER header: flags 0x%02x, %d octets (RFC 7145 §9.2)", flags, a.total)
		}
		return false
	}
	if flags&3 != 0 || b[1] != 0 || b[2] != 0 || b[3] != 0 {
		c.finding(at, i2r, CodeISEROpcode, "iSER header with reserved bits set: %02x %02x %02x %02x (RFC 7145 §9.2)", b[0], b[1], b[2], b[3])
	}
	wsv, rsv := flags&8 != 0, flags&4 != 0
	wstag, wva, rstag, rva := be32(b[4:]), be64(b[8:]), be32(b[16:]), be64(b[20:])
	m.e(fISEROpcode, 1, "iSCSI control-type PDU")
	m.b(fISERWSV, wsv)
	m.b(fISERRSV, rsv)
	if wsv {
		m.u(fISERWSTag, uint64(wstag))
		m.u(fISERWVA, wva)
	}
	if rsv {
		m.u(fISERRSTag, uint64(rstag))
		m.u(fISERRVA, rva)
	}
	bhs := b[28:76]
	iop, imm, f1 := bhs[0]&0x3F, bhs[0]&0x40 != 0, bhs[1]
	tahs := int(bhs[4]) * 4
	dsl := int(bhs[5])<<16 | int(bhs[6])<<8 | int(bhs[7])
	itt := be32(bhs[16:])
	var data []byte
	if s := 76 + tahs; s <= len(b) {
		data = b[s:min(len(b), s+dsl)]
	}
	name := iscsiInitOps[iop]
	if !i2r {
		name = iscsiTgtOps[iop]
	}
	if name == "" {
		return false
	}
	m.e(fISCSIOpcode, uint64(iop), name)
	switch {
	case !i2r: // ExpCmdSN, MaxCmdSN
		c.iser.expCmdSN, c.iser.maxCmdSN, c.iser.window = be32(bhs[28:]), be32(bhs[32:]), true
		c.window(WinISCSICmdSN, int64(int32(c.iser.maxCmdSN-c.iser.expCmdSN)+1)) // window.go
		c.window(WinISCSIExpCmdSN, int64(c.iser.expCmdSN))
		c.window(WinISCSIMaxCmdSN, int64(c.iser.maxCmdSN))
	case !imm && iop != 0x05 && iop != 0x03: // CmdSN at 24 on all but Data-Out and Login
		c.cmdWindow(at, name, itt, be32(bhs[24:]))
		c.window(WinISCSICmdSNSent, int64(be32(bhs[24:])))
	}
	m.b(fISCSIImm, imm)
	m.b(fISCSIFinal, f1&0x80 != 0)
	m.u(fISCSIDSL, uint64(dsl))
	m.u(fISCSIITT, uint64(itt))
	m.sum("iSCSI ", name)
	m.sumX("itt", uint64(itt))
	switch iop {
	case 0x01: // SCSI Command (RFC 7143 §11.3)
		r, w := f1&0x40 != 0, f1&0x20 != 0
		edtl := be32(bhs[20:])
		m.u(fISCSILUN, be64(bhs[8:]))
		m.b(fISCSIRead, r)
		m.b(fISCSIWrite, w)
		m.u(fISCSIEDTL, uint64(edtl))
		m.u(fISCSICmdSN, uint64(be32(bhs[24:])))
		cname, lba, blocks, rw := cdb(bhs[32:48], m)
		m.sum(" ", cname)
		if rw {
			m.sumU("lba", lba)
			m.sumU("blocks", blocks)
		}
		m.sumU("edtl", uint64(edtl))
		if rsv {
			m.sumX("rstag", uint64(rstag))
		}
		if wsv {
			m.sumX("wstag", uint64(wstag))
		}
		if dsl > 0 {
			m.sumU("imm", uint64(dsl))
		}
		if w && !wsv && uint64(edtl) > uint64(dsl) && !c.iser.unsolicited || r && !rsv && edtl > 0 || wsv && !w || rsv && !r {
			c.finding(at, true, CodeISERWSV, "iSCSI command itt 0x%x: R=%v W=%v EDTL %d immediate %d, but iSER RSV=%v WSV=%v (RFC 7145 §9.2.1)", itt, r, w, edtl, dsl, rsv, wsv)
		}
		t, old := c.newTask(at, ISER, uint64(itt), cname)
		if old != nil {
			c.finding(at, true, CodeTaskConflict, "iSCSI command itt 0x%x while a task with that ITT (frame %d) is outstanding", itt, old.cmd.RequestFrame)
		}
		inv := !c.iser.noSendInv
		if rsv {
			c.advertise(t, rstag, rva, uint64(edtl), true, false, inv)
		}
		if wsv && uint64(edtl) > uint64(dsl) {
			c.advertise(t, wstag, wva, uint64(edtl)-uint64(dsl), false, true, inv)
		}
		t.cmd.Inline = uint64(dsl)
		t.aux = uint64(edtl)
		t.opc = 1
		if w {
			t.cmd.Expected = uint64(edtl) - min(uint64(edtl), uint64(dsl))
		} else if r {
			t.cmd.Expected = uint64(edtl)
		}
	case 0x21: // SCSI Response (§11.4)
		resp, status := bhs[2], bhs[3]
		sn := scsiStatusNames[status]
		if sn == "" {
			sn = "0x" + strconv.FormatUint(uint64(status), 16)
		}
		resid := be32(bhs[44:])
		m.u(fISCSIResp, uint64(resp))
		m.e(fSCSIStatus, uint64(status), sn)
		m.u(fISCSIStatSN, uint64(be32(bhs[24:])))
		m.u(fISCSIMaxCmd, uint64(be32(bhs[32:])))
		m.b(fISCSIUnder, f1&0x02 != 0)
		m.u(fISCSIResid, uint64(resid))
		m.sum(" ", sn)
		if len(data) >= 2+14 { // SenseLength, then fixed (0x70/0x71) or descriptor (0x72/0x73) sense
			s := data[2:]
			var key, asc uint8
			var ascq uint8
			switch s[0] & 0x7F {
			case 0x70, 0x71:
				key, asc, ascq = s[2]&0xF, s[12], s[13]
			case 0x72, 0x73:
				key, asc, ascq = s[1]&0xF, s[2], s[3]
			}
			m.e(fSCSISense, uint64(key), senseKeys[key])
			m.e(fSCSIASC, uint64(asc)<<8|uint64(ascq), scsiASCName(uint16(asc)<<8|uint16(ascq)))
			m.sum(" ", senseKeys[key], ": ", scsiASCName(uint16(asc)<<8|uint16(ascq)))
		}
		t := c.task(uint64(itt))
		if t == nil {
			if c.fromStart && !c.lossy {
				c.finding(at, false, CodeUnknownTask, "SCSI Response for ITT 0x%x, which no outstanding command has", itt)
			}
			return true
		}
		ok := resp == 0 && status == 0
		if ok && t.opc == 1 {
			edtl := t.aux
			switch {
			case t.cmd.Write && t.cmd.Moved+t.cmd.Inline != edtl && f1&0x06 == 0:
				c.finding(at, false, CodeMovedMismatch, "iSCSI %s itt 0x%x: %d octets RDMA-Read + %d immediate, EDTL %d (RFC 7145 §7.3.6)", t.cmd.Name, itt, t.cmd.Moved, t.cmd.Inline, edtl)
			case t.cmd.Read && t.cmd.Moved > edtl:
				c.finding(at, false, CodeMovedMismatch, "iSCSI %s itt 0x%x: %d octets RDMA-Written, more than EDTL %d", t.cmd.Name, itt, t.cmd.Moved, edtl)
			}
			// LIO writes the whole allocation even with underflow: do not
			// compare against EDTL − residual (ulp-reference.md §2.5).
		}
		if !ok {
			t.failed = true
		}
		c.complete(at, t, a, sn, ok, m)
		return true
	case 0x03, 0x23: // Login (§11.12, §11.13)
		m.u(fISCSICSG, uint64(f1>>2&3))
		m.u(fISCSINSG, uint64(f1&3))
		m.u(fISCSITSIH, uint64(be16(bhs[14:])))
		if iop == 0x23 && be16(bhs[14:]) != 0 {
			c.qn.tsih, c.qn.name = be16(bhs[14:]), "" // names the queue (depth.go)
		}
		m.sumU("csg", uint64(f1>>2&3))
		m.sumU("nsg", uint64(f1&3))
		if iop == 0x23 {
			m.u(fISCSIStClass, uint64(bhs[36]))
			m.u(fISCSIStDet, uint64(bhs[37]))
		}
		c.iscsiText(at, i2r, a, iop, itt, "Login", data, m, iop == 0x23 && bhs[36] == 0, "class "+strconv.Itoa(int(bhs[36])))
	case 0x04, 0x24: // Text
		c.iscsiText(at, i2r, a, iop, itt, "Text", data, m, true, "")
	case 0x05: // unsolicited Data-Out (RFC 7145 §7.3.4): data carried in Sends
		if t := c.task(uint64(itt)); t != nil {
			t.dataOp(a.start, at.Time) // host-driven data: a phase as the target's RDMA is
			t.cmd.Inline += uint64(dsl)
			c.xferSend(t, a.first, at, uint64(dsl))
			if t.cmd.Expected >= uint64(dsl) {
				t.cmd.Expected -= uint64(dsl)
			}
		}
	case 0x06: // Logout Request
		t, _ := c.newTask(at, ISER, uint64(itt), "Logout")
		_ = t
	case 0x26:
		m.u(fISCSIResp, uint64(bhs[2]))
		if t := c.task(uint64(itt)); t != nil {
			c.complete(at, t, a, "response "+strconv.Itoa(int(bhs[2])), bhs[2] == 0, m)
		}
	case 0x00: // NOP-Out expecting an answer
		if itt != 0xFFFFFFFF {
			c.newTask(at, ISER, uint64(itt), "NOP")
		}
	case 0x20:
		if t := c.task(uint64(itt)); t != nil && itt != 0xFFFFFFFF {
			c.complete(at, t, a, "GOOD", true, m)
		}
	case 0x02:
		c.newTask(at, ISER, uint64(itt), "Task Management")
	case 0x22:
		if t := c.task(uint64(itt)); t != nil {
			c.complete(at, t, a, "response "+strconv.Itoa(int(bhs[2])), bhs[2] == 0, m)
		}
	}
	return true
}

// iscsiText handles Login and Text PDUs: the keys, and the task by ITT
// (a request opens it, the final response closes it).
func (c *Conn) iscsiText(at At, i2r bool, a *sendAsm, iop uint8, itt uint32, name string, data []byte, m *Message, ok bool, bad string) {
	if len(data) > 0 {
		k := iscsiKeys(data)
		m.s(fISCSIKeys, k)
		if !i2r && strings.Contains(" "+k+" ", " InitialR2T=No ") {
			c.iser.unsolicited = true
		}
		c.loginNames(i2r, iop, k)
		m.sumU("keys", uint64(strings.Count(k, "=")))
	}
	if i2r {
		if c.task(uint64(itt)) == nil {
			c.newTask(at, ISER, uint64(itt), name)
		}
		return
	}
	t := c.task(uint64(itt))
	if t == nil {
		return
	}
	status := "success"
	if !ok {
		status = bad
	}
	// a Login/Text exchange may take several PDUs: it ends with F/T set
	// and C clear, or on an error
	if !ok || a == nil || iop == 0x24 || iop == 0x23 {
		c.complete(at, t, a, status, ok, m)
	}
}
