package ulp

import "github.com/iwkit/iwkit/finding"

// The ULP finding codes are declared in the one catalogue (package finding,
// stage ulp); these are their short names in this package.
const (
	CodeSTagUnknown        = finding.ULPSTagUnknown
	CodeSTagWrongOp        = finding.ULPSTagWrongOp
	CodeSTagUnused         = finding.ULPSTagUnused
	CodeInvalidateForeign  = finding.ULPInvalidateForeign
	CodeInvalidateNotAsked = finding.ULPInvalidateNotAsked
	CodeMovedMismatch      = finding.ULPMovedMismatch
	CodeUnknownTask        = finding.ULPUnknownTask
	CodeTaskConflict       = finding.ULPTaskConflict
	CodeReadSinkRights     = finding.ULPReadSinkRights
	CodeObjectsFull        = finding.ULPObjectsFull
	CodeNVMeCMData         = finding.NVMeCMData
	CodeNVMeConnectParam   = finding.NVMeConnectParam
	CodeNVMePRP            = finding.NVMePRP
	CodeNVMeRespSize       = finding.NVMeRespSize
	CodeNVMeSQID           = finding.NVMeSQID
	CodeNVMeReject         = finding.NVMeReject
	CodeNVMeSQOverrun      = finding.NVMeSQOverrun
	CodeNVMeKeepAlive      = finding.NVMeKeepAlive
	CodeNVMeSGLOffset      = finding.NVMeSGLOffset
	CodeISCSICmdSN         = finding.ISCSICmdSN
	CodeSMBDFragTooLarge   = finding.SMBDFragmentedTooLarge
	CodeSMB2SizeLimit      = finding.SMB2SizeLimit
	CodeRPCVers            = finding.RPCRDMAVers
	CodeRPCXID             = finding.RPCRDMAXID
	CodeRPCCredits         = finding.RPCRDMACredits
	CodeRPCZeroCredit      = finding.RPCRDMAZeroCredit
	CodeRPCInline          = finding.RPCRDMAInline
	CodeRPCObsolete        = finding.RPCRDMAObsolete
	CodeRPCError           = finding.RPCRDMAError
	CodeRPCDenied          = finding.RPCDenied
	CodeRPCReplyCut        = finding.RPCRDMAReplyCut
	CodeISEROpcode         = finding.ISEROpcode
	CodeISERWSV            = finding.ISERWSV
	CodeSMBDLegacyLE       = finding.SMBDLegacyLE
	CodeSMBDLegacyV2       = finding.SMBDLegacyV2
	CodeSMBDCredits        = finding.SMBDCredits
	CodeSMBDTooLarge       = finding.SMBDTooLarge
	CodeSMBDFragment       = finding.SMBDFragment
	CodeSMBDNegotiate      = finding.SMBDNegotiate
	CodeSMB2Magic          = finding.SMB2Magic
	CodeSMB2Channel        = finding.SMB2Channel
	CodeSMB2CreditWindow   = finding.SMB2CreditWindow
)
