package ulp

import "strconv"

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
