package decode

import "testing"

func TestOpcodeTable(t *testing.T) {
	tests := []struct {
		op        Opcode
		name      string
		short     string
		tagged    bool
		qn        uint32
		hdrLen    int
		known     bool
		extension bool
	}{
		{OpWrite, "RDMA Write", "Write", true, 0, 0, true, false},
		{OpReadRequest, "RDMA Read Request", "ReadReq", false, 1, 28, true, false},
		{OpReadResponse, "RDMA Read Response", "ReadResp", true, 0, 0, true, false},
		{OpSend, "Send", "Send", false, 0, 0, true, false},
		{OpSendInv, "Send with Invalidate", "SendInv", false, 0, 0, true, false},
		{OpSendSE, "Send with Solicited Event", "SendSE", false, 0, 0, true, false},
		{OpSendSEInv, "Send with Solicited Event and Invalidate", "SendSEInv", false, 0, 0, true, false},
		{OpTerminate, "Terminate", "Terminate", false, 2, 4, true, false},
		{OpImmData, "Immediate Data", "Imm", false, 0, 8, true, true},
		{OpImmDataSE, "Immediate Data with Solicited Event", "ImmSE", false, 0, 8, true, true},
		{OpAtomicRequest, "Atomic Request", "AtomicReq", false, 1, 52, true, true},
		{OpAtomicResponse, "Atomic Response", "AtomicResp", false, 3, 12, true, true},
		{0xC, "Unassigned (0xC)", "Op0xC", false, 0, 0, false, false},
		{0xD, "Unassigned (0xD)", "Op0xD", false, 0, 0, false, false},
		{0xE, "Unassigned (0xE)", "Op0xE", false, 0, 0, false, false},
		{OpExperimental, "Experimental", "Experimental", false, 0, 0, false, false},
	}
	for _, tt := range tests {
		o := tt.op
		if o.String() != tt.name || o.Short() != tt.short || o.Tagged() != tt.tagged ||
			o.HeaderLen() != tt.hdrLen || o.Known() != tt.known || o.Extension() != tt.extension {
			t.Errorf("%#x: got %q %q tagged=%v hdr=%d known=%v ext=%v", uint8(o), o.String(), o.Short(),
				o.Tagged(), o.HeaderLen(), o.Known(), o.Extension())
		}
		if !o.Tagged() && o.Known() && o.QN() != tt.qn {
			t.Errorf("%v: QN %d, want %d", o, o.QN(), tt.qn)
		}
	}
}

func TestRDMAPControl(t *testing.T) {
	c := ParseRDMAPControl(0x43)
	if c != (RDMAPControl{RV: 1, Opcode: OpSend}) || c.PreIETF() {
		t.Fatalf("0x43 = %+v", c)
	}
	c = ParseRDMAPControl(0x07)
	if c != (RDMAPControl{RV: 0, Opcode: OpTerminate}) || !c.PreIETF() {
		t.Fatalf("0x07 = %+v", c)
	}
	c = ParseRDMAPControl(0xFA)
	if c != (RDMAPControl{RV: 3, Rsv: 3, Opcode: OpAtomicRequest}) {
		t.Fatalf("0xFA = %+v", c)
	}
	for i := 0; i < 256; i++ {
		if got := ParseRDMAPControl(uint8(i)).Octet(); got != uint8(i) {
			t.Fatalf("%#x re-encodes as %#x", i, got)
		}
	}
}
