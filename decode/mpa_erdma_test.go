package decode_test

import (
	"bytes"
	"testing"

	"github.com/iwkit/iwkit/decode"
)

// erdmaReq is an erdma MPA Request as erdma_send_mpareqrep writes it (Linux
// drivers/infiniband/hw/erdma/erdma_cm.c): struct mpa_rr (key, __be16 bits
// = Rev 129 and no flags, __be16 pd_len = 5), struct erdma_mpa_ext (__be32
// cookie, __be32 bits with CC 2 in bits 3:0), then the 5 octets of Private
// Data that pd_len counts.
var erdmaReqHex = mpaReqHex + "00 81 0005 c0ffee01 00000002 0102030405"

func TestParseMPAFrameERDMA(t *testing.T) {
	wire := fpHex(t, erdmaReqHex)
	var f decode.MPAFrame
	n, err := decode.ParseMPAFrame(wire, &f)
	if err != nil || n != len(wire) || n != 20+8+5 {
		t.Fatalf("n=%d err=%v, want %d", n, err, len(wire))
	}
	if !f.ERDMA || f.Rev != decode.MPARevERDMA || f.ERDMAExt.Cookie != 0xc0ffee01 || f.ERDMAExt.Bits != 2 || f.ERDMAExt.CC() != 2 {
		t.Errorf("frame %+v", f)
	}
	if f.PDLength != 5 || !bytes.Equal(f.PrivateData, []byte{1, 2, 3, 4, 5}) || !bytes.Equal(f.ULPPrivateData(), f.PrivateData) {
		t.Errorf("Private Data %x (PD_Length %d)", f.PrivateData, f.PDLength)
	}
	if f.HasV2 || f.Rev1IRDORD {
		t.Errorf("erdma frame read as an IRD/ORD variant: %+v", f)
	}
	if got := decode.MPAFrameLen(wire); got != len(wire) {
		t.Errorf("MPAFrameLen %d, want %d", got, len(wire))
	}
	// Append writes what ParseMPAFrame read.
	if b := f.Append(nil); !bytes.Equal(b, wire) {
		t.Errorf("Append\n got %x\nwant %x", b, wire)
	}
	// S set on an erdma frame does not make its Private Data an RFC 6581
	// block.
	s := bytes.Clone(wire)
	s[16] |= decode.MPAFlagS
	if _, err := decode.ParseMPAFrame(s, &f); err != nil || f.HasV2 {
		t.Errorf("S on Rev 129: HasV2 %v err %v", f.HasV2, err)
	}
}

// The extension's fields are in the field table, and the Private Data's
// span starts after the extension.
func TestERDMAFields(t *testing.T) {
	wire := fpHex(t, erdmaReqHex)
	var p decode.PDU
	p.IsMPAFrame = true
	if _, err := decode.ParseMPAFrame(wire, &p.MPA); err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"mpa.erdma.cookie": 0xc0ffee01, "mpa.erdma.bits": 2, "mpa.erdma.cc": 2, "mpa.rev": 129, "mpa.pd_length": 5}
	for name, v := range want {
		f, ok := decode.FieldByName(name)
		if !ok {
			t.Fatalf("no field %s", name)
		}
		got, ok := f.Get(&p)
		if !ok || got.U != v {
			t.Errorf("%s = %d (%v), want %d", name, got.U, ok, v)
		}
	}
	pd, _ := decode.FieldByName("mpa.private_data")
	off, n, ok := pd.Span(&p)
	if !ok || off != 28 || n != 5 {
		t.Errorf("mpa.private_data span %d+%d (%v), want 28+5", off, n, ok)
	}
	ck, _ := decode.FieldByName("mpa.erdma.cookie")
	if off, n, _ := ck.Span(&p); off != 20 || n != 4 {
		t.Errorf("mpa.erdma.cookie span %d+%d, want 20+4", off, n)
	}
	// A plain frame carries none of them.
	var q decode.PDU
	q.IsMPAFrame = true
	if _, err := decode.ParseMPAFrame(fpHex(t, mpaReqHex+"40 01 0000"), &q.MPA); err != nil {
		t.Fatal(err)
	}
	cc, _ := decode.FieldByName("mpa.erdma.cc")
	if _, ok := cc.Get(&q); ok {
		t.Error("mpa.erdma.cc present on a Rev 1 frame")
	}
}
