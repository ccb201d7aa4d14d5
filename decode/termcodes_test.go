package decode

import (
	"strings"
	"testing"
)

// termRefTable is iwarp-reference.md §4.6 (checked against RFC 5040 §4.8
// Figure 9, RFC 5041 §7.2, RFC 5044 §8, RFC 6581 §8, RFC 6580 §3):
// layer, etype, code, and the names the table gives. any = every code.
var termRefTable = []struct {
	layer, etype, code uint8
	any                bool
	layerName, etype_  string
	codeNames          []string
}{
	{0, 0, 0, true, "RDMAP", "Local Catastrophic", nil},
	{0, 1, 0x00, false, "RDMAP", "Remote Protection", []string{"Invalid STag"}},
	{0, 1, 0x01, false, "RDMAP", "Remote Protection", []string{"Base or bounds violation"}},
	{0, 1, 0x02, false, "RDMAP", "Remote Protection", []string{"Access rights violation"}},
	{0, 1, 0x03, false, "RDMAP", "Remote Protection", []string{"STag not associated with RDMAP Stream"}},
	{0, 1, 0x04, false, "RDMAP", "Remote Protection", []string{"TO wrap"}},
	{0, 1, 0x09, false, "RDMAP", "Remote Protection", []string{"STag cannot be Invalidated"}},
	{0, 1, 0xFF, false, "RDMAP", "Remote Protection", []string{"Unspecified Error", "Miscellaneous"}},
	{0, 2, 0x05, false, "RDMAP", "Remote Operation", []string{"Invalid RDMAP version"}},
	{0, 2, 0x06, false, "RDMAP", "Remote Operation", []string{"Unexpected OpCode"}},
	{0, 2, 0x07, false, "RDMAP", "Remote Operation", []string{"Catastrophic error, localized to RDMAP Stream"}},
	{0, 2, 0x08, false, "RDMAP", "Remote Operation", []string{"Catastrophic error, global"}},
	{0, 2, 0x09, false, "RDMAP", "Remote Operation", []string{"STag cannot be Invalidated"}},
	{0, 2, 0xFF, false, "RDMAP", "Remote Operation", []string{"Unspecified Error", "Miscellaneous"}},
	{1, 0, 0x00, false, "DDP", "Local Catastrophic", []string{"Local catastrophic"}},
	{1, 1, 0x00, false, "DDP", "Tagged Buffer", []string{"Invalid STag"}},
	{1, 1, 0x01, false, "DDP", "Tagged Buffer", []string{"Base or bounds violation"}},
	{1, 1, 0x02, false, "DDP", "Tagged Buffer", []string{"STag not associated with DDP Stream"}},
	{1, 1, 0x03, false, "DDP", "Tagged Buffer", []string{"TO wrap"}},
	{1, 1, 0x04, false, "DDP", "Tagged Buffer", []string{"Invalid DDP version"}},
	{1, 2, 0x01, false, "DDP", "Untagged Buffer", []string{"Invalid QN"}},
	{1, 2, 0x02, false, "DDP", "Untagged Buffer", []string{"Invalid MSN - no buffer available"}},
	{1, 2, 0x03, false, "DDP", "Untagged Buffer", []string{"Invalid MSN - MSN range is not valid"}},
	{1, 2, 0x04, false, "DDP", "Untagged Buffer", []string{"Invalid MO"}},
	{1, 2, 0x05, false, "DDP", "Untagged Buffer", []string{"DDP Message too long for available buffer"}},
	{1, 2, 0x06, false, "DDP", "Untagged Buffer", []string{"Invalid DDP version"}},
	{1, 3, 0, true, "DDP", "Reserved for the LLP", []string{"Reserved for use by the LLP"}},
	{2, 0, 0x01, false, "LLP", "MPA", []string{"TCP connection closed, terminated or lost"}},
	{2, 0, 0x02, false, "LLP", "MPA", []string{"MPA CRC error"}},
	{2, 0, 0x03, false, "LLP", "MPA", []string{"MPA Marker and ULPDU Length field mismatch"}},
	{2, 0, 0x04, false, "LLP", "MPA", []string{"Invalid MPA Request Frame or MPA Response Frame"}},
	{2, 0, 0x05, false, "LLP", "MPA", []string{"Local catastrophic"}},
	{2, 0, 0x06, false, "LLP", "MPA", []string{"Insufficient IRD resources"}},
	{2, 0, 0x07, false, "LLP", "MPA", []string{"No matching RTR option"}},
}

func TestTermCausesMatchReference(t *testing.T) {
	all := TermCauses()
	if len(all) != len(termRefTable) {
		t.Fatalf("TermCauses has %d entries, reference %d", len(all), len(termRefTable))
	}
	for i, ref := range termRefTable {
		c := all[i]
		if c.Layer != ref.layer || c.EType != ref.etype || c.Code != ref.code || !c.Known || c.AnyCode != ref.any {
			t.Errorf("entry %d: %+v, want %d/%d/%#x any=%v", i, c, ref.layer, ref.etype, ref.code, ref.any)
		}
		if c.LayerName != ref.layerName || c.ETypeName != ref.etype_ {
			t.Errorf("%d/%d/%#x: names %q/%q", ref.layer, ref.etype, ref.code, c.LayerName, c.ETypeName)
		}
		for _, n := range ref.codeNames {
			if !strings.Contains(c.CodeName, n) {
				t.Errorf("%d/%d/%#x: code name %q lacks %q", ref.layer, ref.etype, ref.code, c.CodeName, n)
			}
		}
		if c != LookupTermCause(ref.layer, ref.etype, ref.code) {
			t.Errorf("TermCauses entry %d differs from LookupTermCause", i)
		}
	}
}

func TestLookupTermCauseAnyCode(t *testing.T) {
	for code := 0; code < 256; code++ {
		c := LookupTermCause(0, 0, uint8(code))
		if !c.Known || !c.AnyCode || c.LayerName != "RDMAP" || c.ETypeName != "Local Catastrophic" {
			t.Fatalf("0/0/%#x: %+v", code, c)
		}
		if c := LookupTermCause(1, 3, uint8(code)); !c.Known || !c.AnyCode {
			t.Fatalf("1/3/%#x: %+v", code, c)
		}
	}
	if got := LookupTermCause(0, 0, 5).String(); got != "RDMAP/Local Catastrophic (code 0x05)" {
		t.Fatalf("String %q", got)
	}
}

func TestLookupTermCauseUnknown(t *testing.T) {
	tests := []struct {
		layer, etype, code uint8
		layerName, etName  string
		codeName           string
		note               string
	}{
		{3, 0, 0, "Unknown (0x3)", "Unknown (0x0)", "Unknown (0x00)", ""},
		{0xF, 0xF, 0xFF, "Unknown (0xF)", "Unknown (0xF)", "Unknown (0xFF)", ""},
		{0, 3, 0, "RDMAP", "Unknown (0x3)", "Unknown (0x00)", ""},
		{0, 1, 0x05, "RDMAP", "Remote Protection", "Unknown (0x05)", ""},
		{0, 2, 0x02, "RDMAP", "Remote Operation", "Unknown (0x02)", "V00-style LLP CRC"},
		{0, 2, 0x03, "RDMAP", "Remote Operation", "Unknown (0x03)", "V00-style LLP bad-FPDU"},
		{1, 0, 0x01, "DDP", "Local Catastrophic", "Unknown (0x01)", "code 0x00 only"},
		{1, 2, 0x00, "DDP", "Untagged Buffer", "Unknown (0x00)", ""},
		{1, 4, 0x00, "DDP", "Unknown (0x4)", "Unknown (0x00)", ""},
		{2, 0, 0x00, "LLP", "MPA", "Unknown (0x00)", ""},
		{2, 0, 0x08, "LLP", "MPA", "Unknown (0x08)", ""},
		{2, 1, 0x02, "LLP", "Unknown (0x1)", "Unknown (0x02)", ""},
	}
	for _, tt := range tests {
		c := LookupTermCause(tt.layer, tt.etype, tt.code)
		if c.Known || c.LayerName != tt.layerName || c.ETypeName != tt.etName || c.CodeName != tt.codeName {
			t.Errorf("%d/%d/%#x: %+v", tt.layer, tt.etype, tt.code, c)
		}
		if (tt.note == "") != (c.Note == "") || !strings.Contains(c.Note, tt.note) {
			t.Errorf("%d/%d/%#x: note %q, want %q", tt.layer, tt.etype, tt.code, c.Note, tt.note)
		}
	}
}

func TestTermCauseStrings(t *testing.T) {
	tests := []struct {
		layer, etype, code uint8
		long, short        string
	}{
		{1, 2, 3, "DDP/Untagged Buffer/Invalid MSN - MSN range is not valid", "DDP/Untagged/Invalid MSN range"},
		{0, 1, 0, "RDMAP/Remote Protection/Invalid STag", "RDMAP/RemoteProt/Invalid STag"},
		{2, 0, 2, "LLP/MPA/MPA CRC error", "LLP/MPA/CRC error"},
		{0, 0, 0xFF, "RDMAP/Local Catastrophic (code 0xFF)", "RDMAP/LocalCat"},
		{0, 2, 2, "RDMAP/Remote Operation/Unknown (0x02)", "RDMAP/RemoteOp/0x02"},
		{5, 6, 7, "Unknown (0x5)/Unknown (0x6)/Unknown (0x07)", "0x5/0x6/0x07"},
	}
	for _, tt := range tests {
		c := LookupTermCause(tt.layer, tt.etype, tt.code)
		if c.String() != tt.long || c.Short() != tt.short {
			t.Errorf("%d/%d/%#x: %q %q", tt.layer, tt.etype, tt.code, c.String(), c.Short())
		}
	}
	// Every defined cause has distinct long names within its error type,
	// and a short form.
	seen := map[string]bool{}
	for _, c := range TermCauses() {
		if seen[c.String()] {
			t.Errorf("duplicate name %q", c.String())
		}
		seen[c.String()] = true
		if c.Short() == "" {
			t.Errorf("%v: empty Short", c)
		}
	}
}

func TestLookupTermCauseNoAlloc(t *testing.T) {
	var c TermCause
	if a := testing.AllocsPerRun(100, func() { c = LookupTermCause(0, 2, 0x02) }); a != 0 {
		t.Fatalf("LookupTermCause allocates %v", a)
	}
	_ = c
}
