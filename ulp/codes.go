package ulp

// The ULP finding codes, declared once here in the table form the findings
// catalogue takes ({code, severity, summary}); the lead moves them into the
// catalogue when it lands. Sections are those of
// shared/spec/ulp-reference.md §6.

// Code is one finding code of the table.
type Code struct {
	Code     string
	Severity string
	Summary  string
}

const (
	// Common (§6.1)
	CodeSTagUnknown        = "ulp.stag_unknown"
	CodeSTagWrongOp        = "ulp.stag_wrong_op"
	CodeSTagUnused         = "ulp.stag_unused"
	CodeInvalidateForeign  = "ulp.invalidate_foreign"
	CodeInvalidateNotAsked = "ulp.invalidate_not_offered"
	CodeMovedMismatch      = "ulp.moved_mismatch"
	CodeUnknownTask        = "ulp.unknown_task"
	CodeTaskConflict       = "ulp.task_conflict"
	CodeReadSinkRights     = "ulp.read_sink_rights"
	// NVMe-oF (§6.2)
	CodeNVMeCMData       = "nvme.cm_private_data"
	CodeNVMeConnectParam = "nvme.connect_mismatch"
	CodeNVMePRP          = "nvme.psdt_prp"
	CodeNVMeRespSize     = "nvme.response_size"
	CodeNVMeSQID         = "nvme.sqid_mismatch"
	CodeNVMeReject       = "nvme.cm_reject"
	// RPC-over-RDMA (§6.5)
	CodeRPCVers       = "rpcrdma.version"
	CodeRPCXID        = "rpcrdma.xid_mismatch"
	CodeRPCCredits    = "rpcrdma.credit_overrun"
	CodeRPCZeroCredit = "rpcrdma.zero_credits"
	CodeRPCInline     = "rpcrdma.inline_too_large"
	CodeRPCObsolete   = "rpcrdma.obsolete_proc"
	CodeRPCError      = "rpcrdma.error"
	CodeRPCDenied     = "rpc.denied"
	// iSER / iSCSI (§6.3)
	CodeISEROpcode = "iser.bad_header"
	CodeISERWSV    = "iser.stag_flags"
	// SMB Direct / SMB2 (§6.4)
	CodeSMBDLegacyLE  = "smbd.broken_le_legacy"
	CodeSMBDLegacyV2  = "smbd.legacy_mismatch"
	CodeSMBDCredits   = "smbd.credit_overrun"
	CodeSMBDTooLarge  = "smbd.too_large"
	CodeSMBDFragment  = "smbd.fragment"
	CodeSMBDNegotiate = "smbd.negotiate"
	CodeSMB2Magic     = "smb2.bad_magic"
	CodeSMB2Channel   = "smb2.channel_info"
)

// Codes is the table of every ULP finding code.
var Codes = []Code{
	{CodeSTagUnknown, "error", "RDMA Write or Read Request on an STag no outstanding command advertised"},
	{CodeSTagWrongOp, "error", "RDMA Write into a buffer advertised for reading, or RDMA Read from one advertised for writing"},
	{CodeSTagUnused, "warning", "STag of a successful command never used by an RDMA operation"},
	{CodeInvalidateForeign, "error", "Send with Invalidate names an STag that is not the completed command's"},
	{CodeInvalidateNotAsked, "error", "Send with Invalidate where the advertiser did not offer remote invalidation"},
	{CodeMovedMismatch, "warning", "octets moved by RDMA differ from the command's length"},
	{CodeUnknownTask, "error", "response for a command id / tag / xid that is not outstanding"},
	{CodeTaskConflict, "error", "two outstanding commands with the same id / tag / xid"},
	{CodeReadSinkRights, "error", "the responder rejects the Read Response into its own Read sink: an iWARP Read sink needs remote write access"},
	{CodeNVMeCMData, "error", "NVMe-oF CM private data malformed (length, RECFMT)"},
	{CodeNVMeConnectParam, "error", "Fabrics Connect QID/SQSIZE differ from the CM private data"},
	{CodeNVMePRP, "error", "PSDT 00 (PRP) on a fabric"},
	{CodeNVMeRespSize, "error", "NVMe response capsule not 16 octets"},
	{CodeNVMeSQID, "error", "CQE SQID differs from the connection's QID"},
	{CodeNVMeReject, "note", "NVMe-oF CM reject"},
	{CodeRPCVers, "error", "rdma_vers is not 1"},
	{CodeRPCXID, "error", "transport xid differs from the RPC xid"},
	{CodeRPCCredits, "error", "more outstanding calls than the credits granted"},
	{CodeRPCZeroCredit, "error", "reply grants zero credits"},
	{CodeRPCInline, "error", "Send larger than the receiver's inline receive size"},
	{CodeRPCObsolete, "warning", "RDMA_MSGP or RDMA_DONE (obsolete)"},
	{CodeRPCError, "note", "RDMA_ERROR"},
	{CodeRPCDenied, "warning", "RPC call denied (MSG_DENIED)"},
	{CodeISEROpcode, "error", "iSER header with an invalid opcode or reserved bits"},
	{CodeISERWSV, "error", "iSCSI W/R bits and iSER WSV/RSV disagree"},
	{CodeSMBDLegacyLE, "note", "legacy IRD/ORD private data in little-endian (Linux cifs.ko)"},
	{CodeSMBDLegacyV2, "warning", "legacy IRD/ORD block disagrees with the MPA v2 block"},
	{CodeSMBDCredits, "error", "SMB Direct data message sent with no send credits"},
	{CodeSMBDTooLarge, "error", "SMB Direct message larger than the peer's MaxReceiveSize"},
	{CodeSMBDFragment, "error", "SMB Direct fragment sequence broken (RemainingDataLength)"},
	{CodeSMBDNegotiate, "error", "SMB Direct negotiate message malformed"},
	{CodeSMB2Magic, "error", "reassembled SMB Direct message does not start with an SMB2 header"},
	{CodeSMB2Channel, "error", "READ/WRITE RDMA channel info not whole 16-octet descriptors inside the message"},
}

var codeIndex = func() map[string]int {
	m := map[string]int{}
	for i, c := range Codes {
		m[c.Code] = i
	}
	return m
}()

func codeSeverity(code string) string {
	if i, ok := codeIndex[code]; ok {
		return Codes[i].Severity
	}
	return "error"
}
