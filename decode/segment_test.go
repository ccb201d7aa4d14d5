package decode

import (
	"errors"
	"reflect"
	"testing"
)

// Segment fixtures: one per opcode 0x0–0xB, unassigned and experimental
// ones, and real frames (SoftUiWARP rping/send captures).
var segmentFixtures = []struct {
	name    string
	hex     string
	op      Opcode
	hdrLen  int
	payload int
	check   func(t *testing.T, s *Segment)
}{
	{"RDMA Write", "c1 40 11223344 0000000000001000 deadbeef", OpWrite, 14, 4, func(t *testing.T, s *Segment) {
		if !s.DDP.Tagged || s.DDP.STag != 0x11223344 || s.DDP.TO != 0x1000 {
			t.Fatalf("%+v", s.DDP)
		}
	}},
	{"RTR zero-length RDMA Write (RFC 6581)", "c1 40 00000000 0000000000000000", OpWrite, 14, 0, nil},
	{"RDMA Read Request (rping f10)", "41 41 00000000 00000001 00000001 00000000 " + readReqFixture, OpReadRequest, 46, 0,
		func(t *testing.T, s *Segment) {
			if s.ReadRequest.SinkSTag != 0x40cc4300 || s.ReadRequest.Size != 64 || s.DDP.QN != 1 || s.DDP.MSN != 1 {
				t.Fatalf("%+v", s.ReadRequest)
			}
		}},
	{"RDMA Read Response", "c1 42 40cc4300 0000563616bbc670 0102030405060708", OpReadResponse, 14, 8, nil},
	{"Send (rping f8)", "41 43 00000000 00000000 00000001 00000000 00007fffffffe080ffffe08000000040", OpSend, 18, 16, nil},
	{"Send DV 0 (SoftUiWARP send f8)", "40 43 00000000 00000000 00000001 00000000 00007fffffffe040ffffe04000000040", OpSend, 18, 16,
		func(t *testing.T, s *Segment) {
			if !s.PreIETF() || s.DDP.DV != 0 || s.RDMAP.RV != 1 {
				t.Fatal("DV 0 not PreIETF")
			}
		}},
	{"Send with Invalidate", "41 44 0000abcd 00000000 00000002 00000000 aa", OpSendInv, 18, 1, func(t *testing.T, s *Segment) {
		if s.InvalidateSTag != 0xabcd {
			t.Fatalf("InvalidateSTag %#x", s.InvalidateSTag)
		}
	}},
	{"Send with SE", "41 45 00000000 00000000 00000003 00000000", OpSendSE, 18, 0, nil},
	{"Send with SE and Invalidate, not last", "01 46 12345678 00000000 00000004 00000010 bbbb", OpSendSEInv, 18, 2,
		func(t *testing.T, s *Segment) {
			if s.InvalidateSTag != 0x12345678 || s.DDP.Last || s.DDP.MO != 0x10 {
				t.Fatalf("%+v", s)
			}
		}},
	{"Terminate (siw, invalid STag on Read Request)", "41 47 00000000 00000002 00000001 00000000 10 00 07 00 0000 " +
		termCopyRR + " " + termCopyRRHdr, OpTerminate, 18 + 52, 0, func(t *testing.T, s *Segment) {
		tm := &s.Terminate
		if !tm.SiwEncoding || tm.Layer != 0 || tm.EType != 1 || tm.Code != 0 || !tm.HasRDMA || tm.TermRDMA.Size != 64 {
			t.Fatalf("%+v", tm)
		}
	}},
	{"Terminate (RFC, MPA CRC, no headers)", "41 47 00000000 00000002 00000001 00000000 20 02 00 00", OpTerminate, 22, 0,
		func(t *testing.T, s *Segment) {
			if c := s.Terminate.Cause(); c.String() != "LLP/MPA/MPA CRC error" || s.Terminate.SiwEncoding {
				t.Fatalf("%v", c)
			}
		}},
	{"Immediate Data", "41 48 00000000 00000000 00000005 00000000 0102030405060708", OpImmData, 26, 0,
		func(t *testing.T, s *Segment) {
			if s.ImmData != [8]byte{1, 2, 3, 4, 5, 6, 7, 8} {
				t.Fatalf("%x", s.ImmData)
			}
		}},
	{"Immediate Data with SE", "41 49 00000000 00000000 00000006 00000000 1112131415161718", OpImmDataSE, 26, 0, nil},
	{"Atomic Request", "41 4a 00000000 00000001 00000002 00000000 " + atomicReqFixture, OpAtomicRequest, 70, 0,
		func(t *testing.T, s *Segment) {
			if s.AtomicRequest.AOpCode != AOpCmpSwap || s.AtomicRequest.RequestID != 7 {
				t.Fatalf("%+v", s.AtomicRequest)
			}
		}},
	{"Atomic Response", "41 4b 00000000 00000003 00000001 00000000 " + atomicRespFixture, OpAtomicResponse, 30, 0,
		func(t *testing.T, s *Segment) {
			if s.AtomicResponse.OrigValue != 0x42 {
				t.Fatalf("%+v", s.AtomicResponse)
			}
		}},
	{"unassigned opcode 0xC", "41 4c 00000000 00000000 00000001 00000000 0102", 0xC, 18, 2, func(t *testing.T, s *Segment) {
		if s.RDMAP.Opcode.Known() {
			t.Fatal("0xC known")
		}
	}},
	{"experimental opcode 0xF, RV 0", "c1 0f 00000001 0000000000000002 ff", OpExperimental, 14, 1, func(t *testing.T, s *Segment) {
		if !s.PreIETF() || s.RDMAP.Opcode.Known() {
			t.Fatal()
		}
	}},
	{"Read Request in a tagged header (decoded anyway)", "c1 41 00000001 0000000000000002 " + readReqFixture, OpReadRequest, 42, 0, nil},
}

func TestParseSegmentFixtures(t *testing.T) {
	for _, tt := range segmentFixtures {
		t.Run(tt.name, func(t *testing.T) {
			b := ddpHex(t, tt.hex)
			var s Segment
			if err := ParseSegment(b, &s); err != nil {
				t.Fatal(err)
			}
			if s.RDMAP.Opcode != tt.op || s.HdrLen != tt.hdrLen || len(s.Payload) != tt.payload {
				t.Fatalf("op %v hdr %d payload %d", s.RDMAP.Opcode, s.HdrLen, len(s.Payload))
			}
			if string(s.Payload) != string(b[s.HdrLen:]) {
				t.Fatal("payload does not alias the tail")
			}
			if tt.check != nil {
				tt.check(t, &s)
			}
			enc := s.Append(nil)
			if !s.Terminate.SiwEncoding && string(enc) != string(b) {
				t.Fatalf("Append\n %x\nwant %x", enc, b)
			}
			var back Segment
			if err := ParseSegment(enc, &back); err != nil {
				t.Fatal(err)
			}
			if !segmentsEquivalent(&s, &back) {
				t.Fatalf("re-decode differs:\n%+v\n%+v", back, s)
			}
			if a := testing.AllocsPerRun(100, func() { _ = ParseSegment(b, &s) }); a != 0 {
				t.Fatalf("ParseSegment allocates %v", a)
			}
		})
	}
}

// segmentsEquivalent compares two decoded segments by meaning: the
// Terminate's Raw word and SiwEncoding may differ (Append writes the RFC
// encoding), and slices are compared by content.
func segmentsEquivalent(a, b *Segment) bool {
	x, y := *a, *b
	if string(x.Payload) != string(y.Payload) ||
		string(x.Terminate.TermDDPRaw) != string(y.Terminate.TermDDPRaw) ||
		string(x.Terminate.TermRDMARaw) != string(y.Terminate.TermRDMARaw) {
		return false
	}
	x.Payload, y.Payload = nil, nil
	x.Terminate.TermDDPRaw, y.Terminate.TermDDPRaw = nil, nil
	x.Terminate.TermRDMARaw, y.Terminate.TermRDMARaw = nil, nil
	if x.Terminate.SiwEncoding != y.Terminate.SiwEncoding {
		x.Terminate.Raw, y.Terminate.Raw = [4]byte{}, [4]byte{}
		x.Terminate.SiwEncoding, y.Terminate.SiwEncoding = false, false
	}
	return reflect.DeepEqual(x, y)
}

func TestParseSegmentTruncation(t *testing.T) {
	// Read Request: every length below 46.
	b := ddpHex(t, "41 41 00000000 00000001 00000001 00000000 "+readReqFixture)
	var s Segment
	for i := 0; i < len(b); i++ {
		err := ParseSegment(b[:i], &s)
		var e *Error
		if !errors.As(err, &e) || e.Kind != Truncated {
			t.Fatalf("len %d: %v", i, err)
		}
		switch {
		case i == 0:
			// No control octet yet: the smaller (tagged) header is needed.
			if e.Layer != "ddp" || e.Field != "ddp.tagged" || e.Need != 14 || e.Have != 0 {
				t.Fatalf("len %d: %+v", i, e)
			}
		case i < 18:
			if e.Layer != "ddp" || e.Need != 18 || e.Have != i {
				t.Fatalf("len %d: %+v", i, e)
			}
		default:
			if e.Layer != "rdmap" || e.Need != 46 || e.Have != i {
				t.Fatalf("len %d: %+v", i, e)
			}
			if i >= 30 && i < 34 && e.Field != "rdmap.read_size" {
				t.Fatalf("len %d: field %q", i, e.Field)
			}
		}
	}
	// Every other header-carrying opcode.
	for _, tt := range []struct {
		hex   string
		field string
		need  int
	}{
		{"41 47 00000000 00000002 00000001 00000000 01 00 e0 00 0000 " + termCopyRR + " " + termCopyRRHdr, "", 70},
		{"41 48 00000000 00000000 00000005 00000000 0102030405060708", "rdmap.imm_data", 26},
		{"41 4a 00000000 00000001 00000002 00000000 " + atomicReqFixture, "", 70},
		{"41 4b 00000000 00000003 00000001 00000000 " + atomicRespFixture, "", 30},
	} {
		b := ddpHex(t, tt.hex)
		for i := 18; i < len(b); i++ {
			err := ParseSegment(b[:i], &s)
			var e *Error
			if !errors.As(err, &e) || e.Kind != Truncated || e.Layer != "rdmap" || e.Have != i {
				t.Fatalf("%s[:%d]: %v", tt.hex[:5], i, err)
			}
			if tt.field != "" && e.Field != tt.field {
				t.Fatalf("field %q", e.Field)
			}
			if i < 22 && b[1] == 0x47 && e.Field != "rdmap.term.raw" {
				t.Fatalf("terminate [:%d]: %q", i, e.Field)
			}
		}
	}
	// The Terminate's copied headers being short names them.
	b = ddpHex(t, "41 47 00000000 00000002 00000001 00000000 01 00 e0 00 0000 41 41 0000")
	err := ParseSegment(b, &s)
	var e *Error
	if !errors.As(err, &e) || e.Field != "rdmap.term.ddp_header" || e.Need != 18+24 || e.Have != len(b) {
		t.Fatalf("%+v", err)
	}
}

func TestParseSegmentResets(t *testing.T) {
	var s Segment
	term := ddpHex(t, "41 47 00000000 00000002 00000001 00000000 10 00 07 00 0000 "+termCopyRR+" "+termCopyRRHdr)
	send := ddpHex(t, "41 43 00000000 00000000 00000001 00000000 aa")
	if err := ParseSegment(term, &s); err != nil {
		t.Fatal(err)
	}
	if err := ParseSegment(send, &s); err != nil {
		t.Fatal(err)
	}
	if s.Terminate.HasDDP || s.Terminate.SiwEncoding || s.ReadRequest != (ReadRequest{}) {
		t.Fatalf("stale fields: %+v", s)
	}
}

func TestSegmentAppendInvalidateSTag(t *testing.T) {
	s := Segment{
		DDP:            DDPHeader{Last: true, DV: 1, MSN: 1},
		RDMAP:          RDMAPControl{RV: 1, Opcode: OpSendInv},
		InvalidateSTag: 0xCAFE,
		Payload:        []byte{1},
	}
	want := ddpHex(t, "41 44 0000cafe 00000000 00000001 00000000 01")
	if got := s.Append(nil); string(got) != string(want) {
		t.Fatalf("Append %x", got)
	}
}
