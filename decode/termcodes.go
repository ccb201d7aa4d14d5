package decode

import "fmt"

// Terminate Layer values (RFC 5040 §4.8 Figure 9).
const (
	TermLayerRDMAP = 0x0
	TermLayerDDP   = 0x1
	TermLayerLLP   = 0x2 // "LLP (e.g., MPA)"; "MPA" in draft-00
)

// TermCause names one Layer / EType / Error Code triple of a Terminate
// (RFC 5040 §4.8 Figure 9, RFC 5041 §7.2, RFC 5044 §8, RFC 6581 §8; the
// IANA registries of RFC 6580 §3.1–§3.3).
type TermCause struct {
	Layer, EType, Code uint8
	// LayerName, ETypeName and CodeName are the RFC names; parts that no
	// RFC defines read "Unknown (0x..)".
	LayerName, ETypeName, CodeName string
	// Known is true when the triple is defined by RFC 5040, RFC 5041,
	// RFC 5044 or RFC 6581.
	Known bool
	// AnyCode is true for the error types that have no error codes, so
	// every code value is the same cause: RDMAP Local Catastrophic
	// (RFC 5040 §4.8, registry "0x0/0x0/ALL") and DDP EType 3, reserved
	// for the LLP (RFC 5041 §7.2, "0x1/0x3/ALL").
	AnyCode bool
	// Note carries what a reader should know beyond the name: alternative
	// names, likely misencodings, ambiguities.
	Note string
}

type termEType struct {
	layer, etype     uint8
	name, short      string
	anyCode          bool
	anyName, anyNote string
}

type termCode struct {
	layer, etype, code uint8
	name, short, note  string
}

var termLayerNames = [3]string{"RDMAP", "DDP", "LLP"}

var termETypes = [...]termEType{
	{TermLayerRDMAP, 0x0, "Local Catastrophic", "LocalCat", true, "None (any code)",
		"this error type has no error code; any value is acceptable (RFC 5040 §4.8; registry 0x0/0x0/ALL)"},
	{TermLayerRDMAP, 0x1, "Remote Protection", "RemoteProt", false, "", ""},
	{TermLayerRDMAP, 0x2, "Remote Operation", "RemoteOp", false, "", ""},
	{TermLayerDDP, 0x0, "Local Catastrophic", "LocalCat", false, "", ""},
	{TermLayerDDP, 0x1, "Tagged Buffer", "Tagged", false, "", ""},
	{TermLayerDDP, 0x2, "Untagged Buffer", "Untagged", false, "", ""},
	{TermLayerDDP, 0x3, "Reserved for the LLP", "LLPRsvd", true, "Reserved for use by the LLP",
		"reserved for the lower layer protocol; any code (RFC 5041 §7.2; registry 0x1/0x3/ALL)"},
	{TermLayerLLP, 0x0, "MPA", "MPA", false, "", ""},
}

const (
	noteMisc = `draft-ietf-rddp-rdmap-00 calls 0xFF "Miscellaneous"`
	noteInv  = "0x09 is listed under both Remote Protection and Remote Operation (RFC 5040 §4.8 Figure 9)"
	note6581 = "enhanced connection setup error (RFC 6581 §8)"
)

var termCodes = [...]termCode{
	{0, 1, 0x00, "Invalid STag", "Invalid STag", ""},
	{0, 1, 0x01, "Base or bounds violation", "Base/bounds", ""},
	{0, 1, 0x02, "Access rights violation", "Access rights", ""},
	{0, 1, 0x03, "STag not associated with RDMAP Stream", "STag not assoc", ""},
	{0, 1, 0x04, "TO wrap", "TO wrap", ""},
	{0, 1, 0x09, "STag cannot be Invalidated", "STag not invalidatable", noteInv},
	{0, 1, 0xFF, "Unspecified Error (Miscellaneous)", "Unspecified", noteMisc},
	{0, 2, 0x05, "Invalid RDMAP version", "Invalid RDMAP version", ""},
	{0, 2, 0x06, "Unexpected OpCode", "Unexpected opcode", ""},
	{0, 2, 0x07, "Catastrophic error, localized to RDMAP Stream", "Catastrophic (stream)", ""},
	{0, 2, 0x08, "Catastrophic error, global", "Catastrophic (global)", ""},
	{0, 2, 0x09, "STag cannot be Invalidated", "STag not invalidatable", noteInv},
	{0, 2, 0xFF, "Unspecified Error (Miscellaneous)", "Unspecified", noteMisc},
	{1, 0, 0x00, "Local catastrophic error", "Local catastrophic", ""},
	{1, 1, 0x00, "Invalid STag", "Invalid STag", ""},
	{1, 1, 0x01, "Base or bounds violation", "Base/bounds", ""},
	{1, 1, 0x02, "STag not associated with DDP Stream", "STag not assoc", ""},
	{1, 1, 0x03, "TO wrap", "TO wrap", ""},
	{1, 1, 0x04, "Invalid DDP version", "Invalid DDP version", ""},
	{1, 2, 0x01, "Invalid QN", "Invalid QN", ""},
	{1, 2, 0x02, "Invalid MSN - no buffer available", "Invalid MSN no buffer", ""},
	{1, 2, 0x03, "Invalid MSN - MSN range is not valid", "Invalid MSN range", ""},
	{1, 2, 0x04, "Invalid MO", "Invalid MO", ""},
	{1, 2, 0x05, "DDP Message too long for available buffer", "Message too long", ""},
	{1, 2, 0x06, "Invalid DDP version", "Invalid DDP version", ""},
	{2, 0, 0x01, "TCP connection closed, terminated or lost", "TCP lost", ""},
	{2, 0, 0x02, "MPA CRC error", "CRC error", ""},
	{2, 0, 0x03, "MPA Marker and ULPDU Length field mismatch", "Marker mismatch", ""},
	{2, 0, 0x04, "Invalid MPA Request Frame or MPA Response Frame", "Bad MPA frame", ""},
	{2, 0, 0x05, "Local catastrophic error", "Local catastrophic", note6581},
	{2, 0, 0x06, "Insufficient IRD resources", "Insufficient IRD", note6581},
	{2, 0, 0x07, "No matching RTR option", "No matching RTR", note6581},
}

// Notes for triples no RFC defines but that have a likely explanation
// (draft-differences.md §5, iwarp-reference.md §5.5): the 2003 verbs draft
// writes its LLP errors as 16-bit 0x0202 / 0x0203, which a device copying
// it would put on the wire as RDMAP / Remote Operation / 0x02, 0x03.
const (
	noteV00CRC  = "probably a V00-style LLP CRC error code (verbs draft 0x0202 = RFC 5044 0x2/0x0/0x02)"
	noteV00FPDU = "probably a V00-style LLP bad-FPDU code (verbs draft 0x0203 = RFC 5044 0x2/0x0/0x03)"
	noteDDPLC   = "RFC 5041 §7.2 defines DDP Local Catastrophic with code 0x00 only"
)

// Names for values no RFC defines, built once so lookups do not allocate.
var (
	termUnknownNibble [16]string
	termUnknownCode   [256]string
)

func init() {
	for i := range termUnknownNibble {
		termUnknownNibble[i] = fmt.Sprintf("Unknown (0x%X)", i)
	}
	for i := range termUnknownCode {
		termUnknownCode[i] = fmt.Sprintf("Unknown (0x%02X)", i)
	}
}

func findTermEType(layer, etype uint8) *termEType {
	for i := range termETypes {
		if termETypes[i].layer == layer && termETypes[i].etype == etype {
			return &termETypes[i]
		}
	}
	return nil
}

func findTermCode(layer, etype, code uint8) *termCode {
	for i := range termCodes {
		c := &termCodes[i]
		if c.layer == layer && c.etype == etype && c.code == code {
			return c
		}
	}
	return nil
}

// LookupTermCause names a Layer / EType / Error Code triple. Layer and
// EType are 4-bit values (higher bits are ignored). Triples that no RFC
// defines come back with Known false and "Unknown (0x..)" names for the
// parts that are not defined. It does not allocate.
func LookupTermCause(layer, etype, code uint8) TermCause {
	layer &= 0x0F
	etype &= 0x0F
	c := TermCause{
		Layer: layer, EType: etype, Code: code,
		LayerName: termUnknownNibble[layer],
		ETypeName: termUnknownNibble[etype],
		CodeName:  termUnknownCode[code],
	}
	if int(layer) >= len(termLayerNames) {
		return c
	}
	c.LayerName = termLayerNames[layer]
	et := findTermEType(layer, etype)
	if et == nil {
		return c
	}
	c.ETypeName = et.name
	if et.anyCode {
		c.CodeName, c.Known, c.AnyCode, c.Note = et.anyName, true, true, et.anyNote
		return c
	}
	if tc := findTermCode(layer, etype, code); tc != nil {
		c.CodeName, c.Known, c.Note = tc.name, true, tc.note
		return c
	}
	switch {
	case layer == TermLayerRDMAP && etype == 2 && code == 0x02:
		c.Note = noteV00CRC
	case layer == TermLayerRDMAP && etype == 2 && code == 0x03:
		c.Note = noteV00FPDU
	case layer == TermLayerDDP && etype == 0:
		c.Note = noteDDPLC
	}
	return c
}

// TermCauses lists every defined cause: one entry per code, and one entry
// with Code 0 and AnyCode set for each error type without codes.
func TermCauses() []TermCause {
	out := make([]TermCause, 0, len(termCodes)+2)
	for _, et := range termETypes {
		if et.anyCode {
			out = append(out, LookupTermCause(et.layer, et.etype, 0))
			continue
		}
		for _, tc := range termCodes {
			if tc.layer == et.layer && tc.etype == et.etype {
				out = append(out, LookupTermCause(tc.layer, tc.etype, tc.code))
			}
		}
	}
	return out
}

// String is "Layer/EType/Code" with the RFC names, e.g.
// "DDP/Untagged Buffer/Invalid MSN - MSN range is not valid"; for error
// types without codes the code value is shown instead,
// "RDMAP/Local Catastrophic (code 0x05)".
func (c TermCause) String() string {
	if c.AnyCode {
		return fmt.Sprintf("%s/%s (code 0x%02X)", c.LayerName, c.ETypeName, c.Code)
	}
	return c.LayerName + "/" + c.ETypeName + "/" + c.CodeName
}

// Short is a compact form for one-line output, e.g.
// "DDP/Untagged/Invalid MSN range".
func (c TermCause) Short() string {
	layer, etype, code := c.LayerName, fmt.Sprintf("0x%X", c.EType), fmt.Sprintf("0x%02X", c.Code)
	if int(c.Layer) < len(termLayerNames) {
		if et := findTermEType(c.Layer, c.EType); et != nil {
			etype = et.short
			if et.anyCode {
				return layer + "/" + etype
			}
		}
	} else {
		layer = fmt.Sprintf("0x%X", c.Layer)
	}
	if tc := findTermCode(c.Layer, c.EType, c.Code); tc != nil {
		code = tc.short
	}
	return layer + "/" + etype + "/" + code
}
