package ulp

import (
	"strconv"
	"strings"
)

// Names of the codes the storage protocols carry, for the fields whose
// value tools print by name (issue 27): each is a KindEnum field, so -V,
// JSON (-j, the name; --json-numeric, the number), -T fields, the filter
// (by name or number) and iwtui show the same word.

// nvmeCNSNames are the Identify CNS values (NVMe Base 2.0 Figure 274).
var nvmeCNSNames = map[uint8]string{0x00: "Identify Namespace", 0x01: "Identify Controller",
	0x02: "Active Namespace ID list", 0x03: "Namespace Identification Descriptor list", 0x04: "NVM Set List",
	0x05: "I/O Command Set specific Identify Namespace", 0x06: "I/O Command Set specific Identify Controller",
	0x07: "I/O Command Set specific Active Namespace ID list", 0x08: "I/O Command Set independent Identify Namespace",
	0x09: "Format Index", 0x10: "Allocated Namespace ID list", 0x11: "Identify allocated Namespace",
	0x12: "Namespace attached Controller list", 0x13: "Controller list", 0x14: "Primary Controller Capabilities",
	0x15: "Secondary Controller list", 0x16: "Namespace Granularity list", 0x17: "UUID list", 0x18: "Domain list",
	0x19: "Endurance Group list", 0x1A: "I/O Command Set specific Allocated Namespace ID list",
	0x1B: "I/O Command Set specific Identify allocated Namespace", 0x1C: "I/O Command Set data structure"}

// nvmeFIDNames are the Feature Identifiers of Set/Get Features (NVMe
// Base 2.0 Figure 317).
var nvmeFIDNames = map[uint8]string{0x01: "Arbitration", 0x02: "Power Management", 0x03: "LBA Range Type",
	0x04: "Temperature Threshold", 0x05: "Error Recovery", 0x06: "Volatile Write Cache", 0x07: "Number of Queues",
	0x08: "Interrupt Coalescing", 0x09: "Interrupt Vector Configuration", 0x0A: "Write Atomicity Normal",
	0x0B: "Asynchronous Event Configuration", 0x0C: "Autonomous Power State Transition", 0x0D: "Host Memory Buffer",
	0x0E: "Timestamp", 0x0F: "Keep Alive Timer", 0x10: "Host Controlled Thermal Management",
	0x11: "Non-Operational Power State Config", 0x12: "Read Recovery Level Config",
	0x13: "Predictable Latency Mode Config", 0x14: "Predictable Latency Mode Window", 0x16: "Host Behavior Support",
	0x17: "Sanitize Config", 0x18: "Endurance Group Event Configuration", 0x19: "I/O Command Set Profile",
	0x1A: "Spinup Control", 0x7D: "Enhanced Controller Metadata", 0x7E: "Controller Metadata",
	0x7F: "Namespace Metadata", 0x80: "Software Progress Marker", 0x81: "Host Identifier",
	0x82: "Reservation Notification Mask", 0x83: "Reservation Persistence",
	0x84: "Namespace Write Protection Config"}

// nvmeBroadcastNSID is the NSID meaning every namespace (NVMe Base 2.0
// §3.2.1.2): shown as the hex tools print, not as 4294967295.
const nvmeBroadcastNSID = 0xFFFFFFFF

// scsiASCNames names the common additional sense code and qualifier
// pairs (SPC-5 Table 49, the ones Linux targets and initiators meet),
// keyed ASC << 8 | ASCQ as scsi.asc carries them.
var scsiASCNames = map[uint16]string{
	0x0000: "No Additional Sense Information", 0x0400: "Logical Unit Not Ready, Cause Not Reportable",
	0x0401: "Logical Unit Is In Process Of Becoming Ready", 0x0402: "Logical Unit Not Ready, Initializing Command Required",
	0x0403: "Logical Unit Not Ready, Manual Intervention Required", 0x0404: "Logical Unit Not Ready, Format In Progress",
	0x040A: "Logical Unit Not Accessible, Asymmetric Access State Transition",
	0x040B: "Logical Unit Not Accessible, Target Port In Standby State",
	0x040C: "Logical Unit Not Accessible, Target Port In Unavailable State",
	0x0800: "Logical Unit Communication Failure", 0x0C00: "Write Error", 0x1100: "Unrecovered Read Error",
	0x1000: "ID CRC Or ECC Error", 0x1001: "Logical Block Guard Check Failed",
	0x1002: "Logical Block Application Tag Check Failed", 0x1003: "Logical Block Reference Tag Check Failed",
	0x1D00: "Miscompare During Verify Operation", 0x1A00: "Parameter List Length Error",
	0x2000: "Invalid Command Operation Code", 0x2100: "Logical Block Address Out Of Range",
	0x2400: "Invalid Field In CDB", 0x2500: "Logical Unit Not Supported", 0x2600: "Invalid Field In Parameter List",
	0x2700: "Write Protected", 0x2707: "Space Allocation Failed Write Protect",
	0x2800: "Not Ready To Ready Change, Medium May Have Changed", 0x2900: "Power On, Reset, Or Bus Device Reset Occurred",
	0x2901: "Power On Occurred", 0x2902: "SCSI Bus Reset Occurred", 0x2903: "Bus Device Reset Function Occurred",
	0x2904: "Device Internal Reset", 0x2A01: "Mode Parameters Changed", 0x2A02: "Log Parameters Changed",
	0x2A03: "Reservations Preempted", 0x2A04: "Reservations Released", 0x2A05: "Registrations Preempted",
	0x2A06: "Asymmetric Access State Changed", 0x2A09: "Capacity Data Has Changed",
	0x2C00: "Command Sequence Error", 0x3A00: "Medium Not Present", 0x3F03: "Inquiry Data Has Changed",
	0x3F0E: "Reported LUNs Data Has Changed", 0x4700: "SCSI Parity Error", 0x4703: "Information Unit iuCRC Error Detected",
	0x4B00: "Data Phase Error", 0x4B04: "Nak Received", 0x4E00: "Overlapped Commands Attempted",
	0x5506: "Medium Auxiliary Memory Full", 0x5D00: "Failure Prediction Threshold Exceeded"}

// scsiASCName names an ASC/ASCQ pair; unlisted pairs by their numbers.
func scsiASCName(v uint16) string {
	if n, ok := scsiASCNames[v]; ok {
		return n
	}
	return "ASC 0x" + strconv.FormatUint(uint64(v>>8), 16) + " ASCQ 0x" + strconv.FormatUint(uint64(v&0xFF), 16)
}

// nfsStableNames are stable_how (RFC 1813 §3.3.7, RFC 8881 §18.32: the
// same three values).
var nfsStableNames = []string{"UNSTABLE", "DATA_SYNC", "FILE_SYNC"}

// nfs4ErrNames are the nfsstat4 codes of NFSv4.x only (RFC 8881 §15.1,
// RFC 7862 §11.1); the codes NFSv3 shares are in nfsErrNames.
var nfs4ErrNames = map[uint32]string{10009: "NFS4ERR_SAME", 10010: "NFS4ERR_DENIED", 10011: "NFS4ERR_EXPIRED",
	10012: "NFS4ERR_LOCKED", 10013: "NFS4ERR_GRACE", 10014: "NFS4ERR_FHEXPIRED", 10015: "NFS4ERR_SHARE_DENIED",
	10016: "NFS4ERR_WRONGSEC", 10017: "NFS4ERR_CLID_INUSE", 10018: "NFS4ERR_RESOURCE", 10019: "NFS4ERR_MOVED",
	10020: "NFS4ERR_NOFILEHANDLE", 10021: "NFS4ERR_MINOR_VERS_MISMATCH", 10022: "NFS4ERR_STALE_CLIENTID",
	10023: "NFS4ERR_STALE_STATEID", 10024: "NFS4ERR_OLD_STATEID", 10025: "NFS4ERR_BAD_STATEID",
	10026: "NFS4ERR_BAD_SEQID", 10027: "NFS4ERR_NOT_SAME", 10028: "NFS4ERR_LOCK_RANGE", 10029: "NFS4ERR_SYMLINK",
	10030: "NFS4ERR_RESTOREFH", 10031: "NFS4ERR_LEASE_MOVED", 10032: "NFS4ERR_ATTRNOTSUPP", 10033: "NFS4ERR_NO_GRACE",
	10034: "NFS4ERR_RECLAIM_BAD", 10035: "NFS4ERR_RECLAIM_CONFLICT", 10036: "NFS4ERR_BADXDR",
	10037: "NFS4ERR_LOCKS_HELD", 10038: "NFS4ERR_OPENMODE", 10039: "NFS4ERR_BADOWNER", 10040: "NFS4ERR_BADCHAR",
	10041: "NFS4ERR_BADNAME", 10042: "NFS4ERR_BAD_RANGE", 10043: "NFS4ERR_LOCK_NOTSUPP", 10044: "NFS4ERR_OP_ILLEGAL",
	10045: "NFS4ERR_DEADLOCK", 10046: "NFS4ERR_FILE_OPEN", 10047: "NFS4ERR_ADMIN_REVOKED", 10048: "NFS4ERR_CB_PATH_DOWN",
	10052: "NFS4ERR_BADSESSION", 10053: "NFS4ERR_BADSLOT", 10063: "NFS4ERR_SEQ_MISORDERED",
	10064: "NFS4ERR_SEQUENCE_POS", 10065: "NFS4ERR_REQ_TOO_BIG", 10066: "NFS4ERR_REP_TOO_BIG",
	10068: "NFS4ERR_RETRY_UNCACHED_REP", 10070: "NFS4ERR_TOO_MANY_OPS", 10071: "NFS4ERR_OP_NOT_IN_SESSION",
	10074: "NFS4ERR_CLIENTID_BUSY", 10077: "NFS4ERR_BAD_HIGH_SLOT", 10078: "NFS4ERR_DEADSESSION",
	10081: "NFS4ERR_NOT_ONLY_OP", 10082: "NFS4ERR_WRONG_CRED", 10083: "NFS4ERR_WRONG_TYPE",
	10087: "NFS4ERR_DELEG_REVOKED", 10088: "NFS4ERR_PARTNER_NOTSUPP", 10089: "NFS4ERR_PARTNER_NO_AUTH",
	10090: "NFS4ERR_UNION_NOTSUPP", 10091: "NFS4ERR_OFFLOAD_DENIED", 10092: "NFS4ERR_WRONG_LFS",
	10093: "NFS4ERR_BADLABEL", 10094: "NFS4ERR_OFFLOAD_NO_REQS"}

// nfsResults decodes what follows the status of an NFS reply to the call
// named name: an NFSv3 READ's eof (READ3resok, RFC 1813 §3.3.6), an
// NFSv4 COMPOUND's results (COMPOUND4res, RFC 8881 §16.2.2): each
// operation's nfsstat4 in nfs.results, and a READ's eof.
func (c *Conn) nfsResults(at At, x *xdr, t *task, status uint32, m *Message) {
	name := t.cmd.Name
	switch {
	case name == "NFSv3 READ" && status == 0:
		if x.u32() == 1 { // post_op_attr: attributes_follow, fattr3
			x.skip(84)
		}
		x.u32() // count
		if eof := x.u32(); x.ok {
			m.b(fNFSEOF, eof != 0)
		}
	case strings.HasPrefix(name, "NFSv4 ") && !strings.HasPrefix(name, "NFSv4 callback"):
		x.opaque() // tag
		n := x.u32()
		if !x.ok || n > 256 {
			return
		}
		var sb strings.Builder
		for i := 0; i < int(n); i++ {
			op, st := x.u32(), x.u32()
			if !x.ok {
				if i > 0 {
					sb.WriteByte(' ')
				}
				sb.WriteString("…")
				break
			}
			if i > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(nfs4OpName(op))
			sb.WriteByte(' ')
			sb.WriteString(nfs4StatName(st))
			if st != 0 {
				break // a COMPOUND stops at the first failure (RFC 8881 §16.2.3.1)
			}
			if op == 25 { // READ4resok: eof, data (perhaps in a write chunk): the walk ends
				if eof := x.u32(); x.ok {
					m.b(fNFSEOF, eof != 0)
				}
			}
			if y := *x; op == 10 && t.getfh != "" { // GETFH: the handle of the object the call named
				if fh := y.opaqueBytes(128); y.ok {
					c.putFH(at, fh, t.getfh)
				}
			}
			if !nfs4ResOK(x, op) {
				if i+1 < int(n) {
					sb.WriteString(" …")
				}
				break
			}
		}
		m.s(fNFSResults, sb.String())
	}
}

func nfs4OpName(op uint32) string {
	if n, ok := nfs4Ops[op]; ok {
		return n
	}
	return strconv.FormatUint(uint64(op), 10)
}

// nfs4StatName names an nfsstat4 as RFC 8881 §15.1 spells it.
func nfs4StatName(s uint32) string {
	if s == 0 {
		return "NFS4_OK"
	}
	if n, ok := nfs4ErrNames[s]; ok {
		return n
	}
	if n, ok := nfsErrNames[s]; ok {
		return "NFS4ERR_" + strings.TrimPrefix(n, "NFSERR_")
	}
	return "NFS4ERR " + strconv.FormatUint(uint64(s), 10)
}

// nfs4ResOK skips the result of a successful operation (RFC 8881 §18);
// false when its size is not known here (READ: the data may be in a
// write chunk; OPEN, READDIR...: not walked).
func nfs4ResOK(x *xdr, op uint32) bool {
	switch op {
	case 22, 23, 24, 31, 32, 15, 16, 58, 44, 57, 45, 8: // PUTFH PUTPUBFH PUTROOTFH RESTOREFH SAVEFH LOOKUP LOOKUPP RECLAIM_COMPLETE DESTROY_SESSION DESTROY_CLIENTID FREE_STATEID DELEGRETURN
	case 53: // SEQUENCE4resok: sessionid, sequenceid, slotid, highest_slotid, target_highest_slotid, status_flags
		x.skip(16 + 5*4)
	case 9: // GETATTR: fattr4
		x.fattr()
	case 10: // GETFH: nfs_fh4
		x.opaque()
	case 3, 5: // ACCESS: supported, access; COMMIT: verifier
		x.skip(8)
	case 4: // CLOSE: open_stateid
		x.skip(16)
	case 38: // WRITE: count, committed, verifier
		x.skip(16)
	case 28: // REMOVE: change_info4
		x.skip(20)
	case 29: // RENAME: two change_info4
		x.skip(40)
	case 34: // SETATTR: attrsset
		x.bitmap()
	case 18: // OPEN4resok: stateid, cinfo, rflags, attrset, delegation
		x.skip(16 + 20 + 4)
		x.bitmap()
		switch t := x.u32(); t { // open_delegation_type4 (RFC 8881 §18.16.2)
		case 0: // OPEN_DELEGATE_NONE
		case 1, 2: // READ, WRITE: stateid, recall, (WRITE: space_limit), permissions nfsace4
			x.skip(20)
			if t == 2 {
				x.skip(12) // limitby, and filesize or modified_blocks
			}
			x.skip(12) // type, flag, access_mask
			x.opaque() // who
		case 3: // OPEN_DELEGATE_NONE_EXT: why, and a bool for contention/resource
			if why := x.u32(); why == 1 || why == 2 {
				x.skip(4)
			}
		default:
			return false
		}
	default:
		return false
	}
	return x.ok
}

// scsiServiceActions name the service actions of the CDBs that carry one
// (SPC-5 MAINTENANCE IN 0xA3 and OUT 0xA4, SBC-4 SERVICE ACTION IN(16)
// 0x9E), by opcode.
var scsiServiceActions = map[uint8]map[uint8]string{
	0xA3: {0x05: "REPORT IDENTIFYING INFORMATION", 0x0A: "REPORT TARGET PORT GROUPS", 0x0B: "REPORT ALIASES",
		0x0C: "REPORT SUPPORTED OPERATION CODES", 0x0D: "REPORT SUPPORTED TASK MANAGEMENT FUNCTIONS",
		0x0E: "REPORT PRIORITY", 0x0F: "REPORT TIMESTAMP", 0x10: "MANAGEMENT PROTOCOL IN"},
	0xA4: {0x06: "SET IDENTIFYING INFORMATION", 0x0A: "SET TARGET PORT GROUPS", 0x0B: "CHANGE ALIASES",
		0x0E: "SET PRIORITY", 0x0F: "SET TIMESTAMP", 0x10: "MANAGEMENT PROTOCOL OUT"},
	0x9E: {0x10: "READ CAPACITY(16)", 0x12: "GET LBA STATUS", 0x13: "REPORT REFERRALS", 0x16: "GET STREAM STATUS"},
}
