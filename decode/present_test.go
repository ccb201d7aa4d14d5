package decode

import "testing"

// checkPresent holds Present to its definition, the condition functions.
func checkPresent(t *testing.T, p *PDU) {
	t.Helper()
	if got, want := Present(p), presentSlow(p); got != want {
		t.Fatalf("Present = %#x, condition functions say %#x (PDU %+v)", got, want, p)
	}
}

// FuzzPresent decodes octets as a DDP segment (or, with mpa, an MPA
// Request/Reply frame) and checks Present against the conditions.
func FuzzPresent(f *testing.F) {
	for _, s := range segmentFixtures {
		f.Add(ddpHex(f, s.hex), false)
	}
	f.Add([]byte(MPAKeyReq+"\x40\x02\x00\x08\x80\x10\x00\x10\x00\x00\x00\x00"), true)
	f.Add([]byte(MPAKeyRep+"\x40\x01\x00\x08\x00\x00\x00\x10\x00\x00\x00\x10"), true)
	f.Fuzz(func(t *testing.T, b []byte, mpa bool) {
		var p PDU
		if mpa {
			if _, err := ParseMPAFrame(b, &p.MPA); err != nil {
				return
			}
			p.IsMPAFrame = true
		} else {
			p.FPDU.ULPDU = b
			p.SegErr = ParseSegment(b, &p.Seg)
		}
		checkPresent(t, &p)
	})
}

// The hand-built PDUs of TestPresentMask, whose Terminates carry every
// combination of copied headers.
func TestPresentConds(t *testing.T) {
	for _, term := range []Terminate{
		{}, {HasSegLen: true}, {HasDDP: true}, {HasDDP: true, TermDDP: DDPHeader{Tagged: true}},
		{HasSegLen: true, HasDDP: true, HasRDMA: true}, {HasRDMA: true},
	} {
		p := pduOf(t, &Segment{DDP: DDPHeader{Last: true, DV: 1, QN: 2, MSN: 1}, RDMAP: RDMAPControl{RV: 1, Opcode: OpTerminate}})
		p.Seg.Terminate = term
		checkPresent(t, p)
	}
	for op := Opcode(0); op < 16; op++ {
		for _, tagged := range []bool{false, true} {
			p := pduOf(t, &Segment{DDP: DDPHeader{Tagged: tagged, Last: true, DV: 1}, RDMAP: RDMAPControl{RV: 1, Opcode: op}})
			checkPresent(t, p)
			p.SegErr = ErrTruncated
			checkPresent(t, p)
		}
	}
	checkPresent(t, &PDU{IsMPAFrame: true, MPA: MPAFrame{HasV2: true, Rev1IRDORD: true}})
	checkPresent(t, &PDU{IsMPAFrame: true})
	checkPresent(t, &PDU{FPDU: FPDU{ULPDU: []byte{0x41}}, SegErr: ErrTruncated})
	checkPresent(t, &PDU{})
}
