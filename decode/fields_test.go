package decode

import (
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// pduOf builds a PDU from a segment, wrapped in an FPDU with a good CRC.
func pduOf(t testing.TB, s *Segment) *PDU {
	t.Helper()
	wire := AppendFPDU(nil, s.Append(nil), true)
	crc := CRCUseOn
	var p PDU
	if _, err := DecodeFPDU(wire, crc, &p); err != nil {
		t.Fatal(err)
	}
	if p.SegErr != nil {
		t.Fatal(p.SegErr)
	}
	return &p
}

func TestFieldTableShape(t *testing.T) {
	seen := map[string]bool{}
	closed := map[string]bool{} // prefixes whose run has ended
	var prev []string
	for _, f := range Fields() {
		if f.Name == "" || f.Desc == "" || f.Kind == 0 || f.val == nil {
			t.Errorf("incomplete field %+v", f)
		}
		if seen[f.Name] {
			t.Errorf("duplicate field %s", f.Name)
		}
		seen[f.Name] = true
		if g, ok := FieldByName(f.Name); !ok || g.Name != f.Name {
			t.Errorf("FieldByName(%s)", f.Name)
		}
		// Every dotted prefix must form one contiguous run, so nested
		// JSON opens each object once.
		parts := strings.Split(f.Name, ".")
		path := parts[:len(parts)-1]
		for i := range prev {
			p := strings.Join(prev[:i+1], ".")
			if i >= len(path) || strings.Join(path[:i+1], ".") != p {
				closed[p] = true
			}
		}
		for i := range path {
			if p := strings.Join(path[:i+1], "."); closed[p] {
				t.Errorf("%s reopens %s", f.Name, p)
			}
		}
		if closed[f.Name] || seen[f.Name+".x"] {
			t.Errorf("%s is both a leaf and an object", f.Name)
		}
		prev = path
	}
	for _, name := range []string{"mpa.ulpdu_length", "mpa.crc_status", "ddp.tagged", "ddp.last", "ddp.stag", "ddp.to", "ddp.qn", "ddp.msn", "ddp.mo",
		"rdmap.opcode", "rdmap.inval_stag", "rdmap.sink_stag", "rdmap.sink_to", "rdmap.read_size", "rdmap.src_stag", "rdmap.src_to",
		"rdmap.term.layer", "rdmap.term.etype", "rdmap.term.code"} {
		if !seen[name] {
			t.Errorf("field %s missing", name)
		}
	}
	if _, ok := FieldByName("no.such"); ok {
		t.Error("unknown field found")
	}
}

// TestFieldTableDoc checks that every row of the field table documents its
// field: a unique lower-case name (dotted by protocol), a kind, a description, and where
// it sits on the wire (derived fields at no offset; a field at an offset
// with its size, or the mask of its bits). With -v it prints the table
// (go test ./decode -run TestFieldTableDoc -v).
func TestFieldTableDoc(t *testing.T) {
	name := regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$`) // "data" too, as in tshark
	seen := map[string]bool{}
	for _, f := range Fields() {
		where := f.Base.String()
		if f.Offset >= 0 {
			where += " +" + itoa(f.Offset)
		}
		t.Logf("%-28s %-6s %-18s %s", f.Name, f.Kind, where, f.Desc)
		switch {
		case !name.MatchString(f.Name):
			t.Errorf("%q: not a lower-case field name", f.Name)
		case seen[f.Name]:
			t.Errorf("%s: named twice", f.Name)
		case f.Kind.String() == "":
			t.Errorf("%s: no kind", f.Name)
		case strings.TrimSpace(f.Desc) == "":
			t.Errorf("%s: no description", f.Name)
		case f.Base == 0 && f.Offset >= 0:
			t.Errorf("%s: derived, yet at offset %d", f.Name, f.Offset)
		case f.Offset >= 0 && f.Size == 0 && f.Mask == 0:
			t.Errorf("%s: at offset %d with neither a size nor a mask", f.Name, f.Offset)
		case f.Mask != 0 && f.Kind != KindUint && f.Kind != KindBool && f.Kind != KindEnum:
			t.Errorf("%s: a mask on a %s field", f.Name, f.Kind)
		}
		seen[f.Name] = true
	}
	if len(seen) < 50 {
		t.Errorf("only %d fields", len(seen))
	}
}

func itoa(i int) string { return string(appendDec(nil, uint64(i))) }

func val(t *testing.T, p *PDU, name string) (string, bool) {
	t.Helper()
	f, ok := FieldByName(name)
	if !ok {
		t.Fatalf("no field %s", name)
	}
	v, ok := f.Get(p)
	if !ok {
		return "", false
	}
	return string(f.AppendValue(nil, v)), true
}

func TestFieldValues(t *testing.T) {
	read := pduOf(t, &Segment{DDP: DDPHeader{Last: true, DV: 1, QN: 1, MSN: 7}, RDMAP: RDMAPControl{RV: 1, Opcode: OpReadRequest},
		ReadRequest: ReadRequest{SinkSTag: 0x1234, SinkTO: 0x1000, Size: 65536, SrcSTag: 0x99, SrcTO: 0x2000}})
	for name, want := range map[string]string{
		"rdmap.opcode": "RDMA Read Request", "ddp.qn": "1", "ddp.msn": "7", "rdmap.sink_stag": "0x1234",
		"rdmap.read_size": "65536", "rdmap.src_to": "0x2000", "mpa.crc_status": "good", "ddp.last": "1", "ddp.payload_length": "0",
	} {
		if got, ok := val(t, read, name); !ok || got != want {
			t.Errorf("%s = %q (%v), want %q", name, got, ok, want)
		}
	}
	for _, absent := range []string{"ddp.stag", "rdmap.term.layer", "rdmap.inval_stag", "mpa.rev"} {
		if got, ok := val(t, read, absent); ok {
			t.Errorf("%s present (%q) in a Read Request", absent, got)
		}
	}
	write := pduOf(t, &Segment{DDP: DDPHeader{Tagged: true, Last: true, DV: 1, STag: 0x2a, TO: 0x1000}, RDMAP: RDMAPControl{RV: 1, Opcode: OpWrite}, Payload: make([]byte, 100)})
	if got, _ := val(t, write, "ddp.stag"); got != "0x2a" {
		t.Errorf("ddp.stag = %s", got)
	}
	if _, ok := val(t, write, "ddp.qn"); ok {
		t.Error("ddp.qn present in a tagged segment")
	}
	// The siw Terminate of siw-term's read-badstag: RDMAP / Remote Protection / Invalid STag.
	term := pduOf(t, &Segment{DDP: DDPHeader{Last: true, DV: 1, QN: 2, MSN: 1}, RDMAP: RDMAPControl{RV: 1, Opcode: OpTerminate},
		Terminate: Terminate{Layer: 0, EType: 1, Code: 0, M: true, D: true, HasSegLen: true, DDPSegmentLength: 0, HasDDP: true,
			TermDDP: DDPHeader{Last: true, DV: 1, RsvdULP: 0x41, QN: 1, MSN: 1}}})
	for name, want := range map[string]string{
		"rdmap.term.layer": "RDMAP", "rdmap.term.code": "Invalid STag", "rdmap.term.ddp.qn": "1", "rdmap.term.ddp.opcode": "RDMA Read Request",
		"rdmap.term.siw_encoding": "0", "rdmap.term.d": "1", "rdmap.term.raw": "0x100c000",
	} {
		if got, ok := val(t, term, name); !ok || got != want {
			t.Errorf("%s = %q (%v), want %q", name, got, ok, want)
		}
	}
	// Fields do not allocate: they feed the display filter on every PDU.
	// The one exception is rdmap.term.cause, a composed string.
	fs := Fields()
	if n := testing.AllocsPerRun(100, func() {
		for i := range fs {
			if fs[i].Name != "rdmap.term.cause" {
				fs[i].Get(term)
			}
			fs[i].Get(read)
		}
	}); n != 0 {
		t.Errorf("field Get allocates %v times", n)
	}
}

func TestSummaries(t *testing.T) {
	cases := []struct {
		seg  Segment
		want string
	}{
		{Segment{DDP: DDPHeader{Last: true, DV: 1, QN: 0, MSN: 3}, RDMAP: RDMAPControl{RV: 1, Opcode: OpSend}, Payload: make([]byte, 1024)}, "Send qn 0 msn 3 mo 0 len 1024 L, crc good"},
		{Segment{DDP: DDPHeader{Tagged: true, DV: 1, STag: 0x2a, TO: 0x1000}, RDMAP: RDMAPControl{RV: 1, Opcode: OpWrite}, Payload: make([]byte, 4096)}, "Write stag 0x2a to 0x1000 len 4096, crc good"},
		{Segment{DDP: DDPHeader{Last: true, DV: 1, QN: 1, MSN: 1}, RDMAP: RDMAPControl{RV: 1, Opcode: OpReadRequest}, ReadRequest: ReadRequest{SinkSTag: 1, SinkTO: 2, Size: 65536, SrcSTag: 3, SrcTO: 4}},
			"ReadReq msn 1 sink 0x1 to 0x2 src 0x3 to 0x4 size 65536 L, crc good"},
		{Segment{DDP: DDPHeader{Last: true, DV: 1, QN: 0, MSN: 2}, RDMAP: RDMAPControl{RV: 1, Opcode: OpSendInv}, InvalidateSTag: 0x77}, "SendInv inval 0x77 qn 0 msn 2 mo 0 len 0 L, crc good"},
		{Segment{DDP: DDPHeader{Last: true, DV: 1, QN: 2, MSN: 1}, RDMAP: RDMAPControl{RV: 1, Opcode: OpTerminate}, Terminate: Terminate{Layer: 1, EType: 2, Code: 3}},
			"Terminate DDP/Untagged/"},
		{Segment{DDP: DDPHeader{Last: true, DV: 0, QN: 0, MSN: 1}, RDMAP: RDMAPControl{RV: 0, Opcode: OpSend}}, "Send qn 0 msn 1 mo 0 len 0 L pre-IETF, crc good"},
	}
	for _, c := range cases {
		got := string(pduOf(t, &c.seg).AppendSummary(nil))
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
	var p PDU
	p.IsMPAFrame = true
	if _, err := ParseMPAFrame(mustHex(t, "4d50412049442052657120467261 6d65 10 02 0004 0001 0001"), &p.MPA); err != nil {
		t.Fatal(err)
	}
	if got := string(p.AppendSummary(nil)); got != "MPA Request rev 2 M0 C0 R0 S pd 4 ird 1 ord 1" {
		t.Errorf("got %q", got)
	}
	bad := AppendFPDU(nil, (&Segment{DDP: DDPHeader{Last: true, DV: 1}, RDMAP: RDMAPControl{RV: 1, Opcode: OpSend}}).Append(nil), true)
	bad[len(bad)-1] ^= 0xFF
	crc := CRCUseOn
	if _, err := DecodeFPDU(bad, crc, &p); err != nil {
		t.Fatal(err)
	}
	if got := string(p.AppendSummary(nil)); p.CRCStatus != CRCBad || !strings.Contains(got, "crc bad (wire 0x") {
		t.Errorf("bad CRC: %q", got)
	}
	if n := testing.AllocsPerRun(100, func() { p.AppendSummary(make([]byte, 0, 256)) }); n > 1 {
		t.Errorf("summary allocates %v", n)
	}
}

// GetIn with the Present mask must agree with Get on every field, for every
// kind of PDU.
func TestPresentMask(t *testing.T) {
	pdus := []*PDU{
		pduOf(t, &Segment{DDP: DDPHeader{Last: true, DV: 1, QN: 1, MSN: 7}, RDMAP: RDMAPControl{RV: 1, Opcode: OpReadRequest}}),
		pduOf(t, &Segment{DDP: DDPHeader{Tagged: true, DV: 1}, RDMAP: RDMAPControl{RV: 1, Opcode: OpWrite}}),
		pduOf(t, &Segment{DDP: DDPHeader{Last: true, DV: 1}, RDMAP: RDMAPControl{RV: 1, Opcode: OpSendSEInv}, InvalidateSTag: 5}),
		pduOf(t, &Segment{DDP: DDPHeader{Last: true, DV: 1}, RDMAP: RDMAPControl{RV: 1, Opcode: OpImmData}}),
		pduOf(t, &Segment{DDP: DDPHeader{Last: true, DV: 1, QN: 1}, RDMAP: RDMAPControl{RV: 1, Opcode: OpAtomicRequest}}),
		pduOf(t, &Segment{DDP: DDPHeader{Last: true, DV: 1, QN: 3}, RDMAP: RDMAPControl{RV: 1, Opcode: OpAtomicResponse}}),
		pduOf(t, &Segment{DDP: DDPHeader{Last: true, DV: 1, QN: 2, MSN: 1}, RDMAP: RDMAPControl{RV: 1, Opcode: OpTerminate},
			Terminate: Terminate{D: true, R: true, HasSegLen: true, HasDDP: true, TermDDP: DDPHeader{DV: 1, QN: 1}, HasRDMA: true}}),
		pduOf(t, &Segment{DDP: DDPHeader{Last: true, DV: 1, QN: 2, MSN: 1}, RDMAP: RDMAPControl{RV: 1, Opcode: OpTerminate},
			Terminate: Terminate{D: true, HasSegLen: true, HasDDP: true, TermDDP: DDPHeader{Tagged: true, DV: 1}}}),
		{IsMPAFrame: true, MPA: MPAFrame{HasV2: true}},
		{IsMPAFrame: true, MPA: MPAFrame{Rev1IRDORD: true}},
		{FPDU: FPDU{ULPDU: []byte{0x41, 0x41}}, SegErr: ErrTruncated}, // DDP header cut
	}
	for i, p := range pdus {
		m := Present(p)
		for _, f := range Fields() {
			v1, ok1 := f.Get(p)
			v2, ok2 := f.GetIn(p, m)
			if ok1 != ok2 || ok1 && string(f.AppendValue(nil, v1)) != string(f.AppendValue(nil, v2)) {
				t.Errorf("PDU %d field %s: Get %v %v, GetIn %v %v", i, f.Name, v1, ok1, v2, ok2)
			}
		}
	}
}
