package filter

import (
	"errors"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/decode"
)

func pdu(t testing.TB, s decode.Segment) *decode.PDU {
	t.Helper()
	crc := decode.CRCUseOn
	var p decode.PDU
	if _, err := decode.DecodeFPDU(decode.AppendFPDU(nil, s.Append(nil), true), crc, &p); err != nil || p.SegErr != nil {
		t.Fatal(err, p.SegErr)
	}
	return &p
}

func TestMatch(t *testing.T) {
	read := pdu(t, decode.Segment{DDP: decode.DDPHeader{Last: true, DV: 1, QN: 1, MSN: 3}, RDMAP: decode.RDMAPControl{RV: 1, Opcode: decode.OpReadRequest},
		ReadRequest: decode.ReadRequest{SinkSTag: 0x1234, Size: 65536, SrcSTag: 0x99}})
	write := pdu(t, decode.Segment{DDP: decode.DDPHeader{Tagged: true, Last: true, DV: 1, STag: 0x1234, TO: 0x1000}, RDMAP: decode.RDMAPControl{RV: 1, Opcode: decode.OpWrite},
		Payload: []byte("hello world")})
	term := pdu(t, decode.Segment{DDP: decode.DDPHeader{Last: true, DV: 1, QN: 2, MSN: 1}, RDMAP: decode.RDMAPControl{RV: 1, Opcode: decode.OpTerminate},
		Terminate: decode.Terminate{Layer: 1, EType: 2, Code: 3}})
	cases := []struct {
		expr              string
		read, write, term bool
	}{
		{`rdmap.opcode == "RDMA Read Request" && rdmap.sink_stag == 0x1234`, true, false, false},
		{`rdmap.opcode == "RDMA Read Request" && ddp.stag == 0x1234`, false, false, false}, // a Read Request has no ddp.stag
		{`ddp.stag == 0x1234 || rdmap.sink_stag == 4660`, true, true, false},
		{`ddp.stag`, false, true, false},
		{`!ddp.stag`, true, false, true},
		{`not ddp.tagged`, false, false, false}, // present in all three: "not present" is false
		{`ddp.tagged == false`, true, false, true},
		{`ddp.tagged == 1`, false, true, false},
		{`rdmap.opcode == 1`, true, false, false},
		{`rdmap.opcode contains "Read"`, true, false, false},
		{`rdmap.read_size >= 65536 and ddp.msn < 4`, true, false, false},
		{`rdmap.read_size > 65536`, false, false, false},
		{`ddp.msn != 3`, false, false, true},
		{`data contains "world"`, false, true, false},
		{`data == 0x68656c6c6f20776f726c64`, false, true, false},
		{`rdmap.term.layer == "DDP" && rdmap.term.code == 3`, false, false, true},
		{`(ddp.qn == 1 || ddp.qn == 2) && !(ddp.msn == 3)`, false, false, true},
		{`mpa.crc_status == "good"`, true, true, true},
		{`rdmap.term.cause contains "Untagged"`, false, false, true},
	}
	for _, c := range cases {
		f, err := Compile(c.expr, PDUResolver)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		if got := [3]bool{f.Match(read), f.Match(write), f.Match(term)}; got != [3]bool{c.read, c.write, c.term} {
			t.Errorf("%s: read/write/term = %v, want %v", c.expr, got, [3]bool{c.read, c.write, c.term})
		}
	}
	f, _ := Compile(`rdmap.opcode == "RDMA Read Request" && rdmap.sink_stag == 0x1234 || ddp.stag`, PDUResolver)
	if n := testing.AllocsPerRun(100, func() { f.Match(read); f.Match(write) }); n != 0 {
		t.Errorf("Match allocates %v", n)
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		expr, msg string
		col       int
	}{
		{``, "empty filter", 1},
		{`ddp.stagg == 1`, `unknown field "ddp.stagg"`, 1},
		{`ddp.stag == `, "expected a value", 13},
		{`ddp.stag == 0x12 ddp.qn`, "missing && or ||", 18},
		{`(ddp.stag == 1`, "missing ) to close the ( at column 1", 15},
		{`rdmap.opcode == Send`, "quote strings", 17},
		{`ddp.msn == "three"`, "is a number", 12},
		{`ddp.stag == 0xzz`, "bad number", 13},
		{`ddp.msn contains "x"`, "is a number", 18},
		{`data < 0x01`, "only ==, != and contains", 6},
		{`ddp.qn == 1 & ddp.msn == 2`, "unexpected character", 13},
		{`rdmap.term.cause == "x`, "unterminated string", 21},
		{`ddp.last == maybe`, "quote strings", 13},
		{`&& ddp.qn`, "expected a field name", 1},
	}
	for _, c := range cases {
		_, err := Compile(c.expr, PDUResolver)
		var fe *Error
		if !errors.As(err, &fe) {
			t.Errorf("%q: error %v", c.expr, err)
			continue
		}
		if !strings.Contains(fe.Msg, c.msg) || fe.Column+1 != c.col {
			t.Errorf("%q: column %d %q, want column %d containing %q", c.expr, fe.Column+1, fe.Msg, c.col, c.msg)
		}
		if !strings.Contains(err.Error(), "^") {
			t.Errorf("%q: error text has no caret: %s", c.expr, err)
		}
	}
}

func FuzzCompile(f *testing.F) {
	for _, s := range []string{`rdmap.opcode == "RDMA Read Request" && ddp.stag == 0x1234`, `!(ddp.qn == 1 || ddp.msn >= 3)`, `data contains "x"`, `mpa.rev`} {
		f.Add(s)
	}
	// The fuzzer's PDUs: an empty one (every field absent) and three
	// decoded segments.
	pdus := []*decode.PDU{{},
		pdu(f, decode.Segment{DDP: decode.DDPHeader{Last: true, DV: 1, QN: 1, MSN: 3}, RDMAP: decode.RDMAPControl{RV: 1, Opcode: decode.OpReadRequest},
			ReadRequest: decode.ReadRequest{SinkSTag: 0x1234, Size: 65536, SrcSTag: 0x99}}),
		pdu(f, decode.Segment{DDP: decode.DDPHeader{Tagged: true, Last: true, DV: 1, STag: 0x1234, TO: 0x1000}, RDMAP: decode.RDMAPControl{RV: 1, Opcode: decode.OpWrite},
			Payload: []byte("hello world")}),
		pdu(f, decode.Segment{DDP: decode.DDPHeader{Last: true, DV: 1, QN: 2, MSN: 1}, RDMAP: decode.RDMAPControl{RV: 1, Opcode: decode.OpTerminate},
			Terminate: decode.Terminate{Layer: 1, EType: 2, Code: 3}})}
	// Beyond not panicking, a filter that compiles obeys boolean logic:
	// its negation, its conjunction and disjunction with itself compile
	// and match accordingly, and it keeps its source.
	f.Fuzz(func(t *testing.T, s string) {
		flt, err := Compile(s, PDUResolver)
		if err != nil {
			var fe *Error
			if !errors.As(err, &fe) {
				t.Fatalf("%q: untyped error %T %v", s, err, err)
			}
			return
		}
		if flt.String() != s {
			t.Fatalf("String %q, want %q", flt.String(), s)
		}
		not, err1 := Compile("!("+s+")", PDUResolver)
		and, err2 := Compile("("+s+") && ("+s+")", PDUResolver)
		or, err3 := Compile("("+s+") || !("+s+")", PDUResolver)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("%q compiles, its combinations do not: %v; %v; %v", s, err1, err2, err3)
		}
		for i, p := range pdus {
			m := flt.Match(p)
			if not.Match(p) == m || and.Match(p) != m || !or.Match(p) {
				t.Fatalf("%q on PDU %d: match %v, negation %v, conjunction %v, disjunction with negation %v", s, i, m, not.Match(p), and.Match(p), or.Match(p))
			}
		}
	})
}
