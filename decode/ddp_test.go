package decode

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// ddpHex decodes a hex fixture; spaces and newlines are ignored.
func ddpHex(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.Join(strings.Fields(s), "")
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex fixture %q: %v", s, err)
	}
	return b
}

// ddpWantTrunc checks that err is a Truncated *Error of the layer and field.
func ddpWantTrunc(t *testing.T, err error, layer, field string, need, have int) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want *Error", err)
	}
	if !errors.Is(err, ErrTruncated) || e.Kind != Truncated {
		t.Fatalf("err = %v, want truncated", err)
	}
	if e.Layer != layer || e.Field != field || e.Need != need || e.Have != have {
		t.Fatalf("err = %+v, want layer %q field %q need %d have %d", *e, layer, field, need, have)
	}
}

func TestParseDDPFixtures(t *testing.T) {
	tests := []struct {
		name string
		hex  string
		want DDPHeader
	}{
		{"tagged last (RDMA Write)", "c1 40 11223344 0102030405060708",
			DDPHeader{Tagged: true, Last: true, DV: 1, RsvdULP: 0x40, STag: 0x11223344, TO: 0x0102030405060708}},
		{"tagged not last (Read Response)", "81 42 40cc4300 0000563616bbc670",
			DDPHeader{Tagged: true, DV: 1, RsvdULP: 0x42, STag: 0x40cc4300, TO: 0x563616bbc670}},
		{"untagged last (Send, SoftUiWARP rping f8)", "41 43 00000000 00000000 00000001 00000000",
			DDPHeader{Last: true, DV: 1, RsvdULP: 0x43, MSN: 1}},
		{"untagged not last, Invalidate STag", "01 44 aabbccdd 00000000 00000007 00001000",
			DDPHeader{DV: 1, RsvdULP: 0x44, RsvdULP2: 0xaabbccdd, MSN: 7, MO: 0x1000}},
		{"untagged DV 0 (SoftUiWARP send f8)", "40 43 00000000 00000000 00000001 00000000",
			DDPHeader{Last: true, DV: 0, RsvdULP: 0x43, MSN: 1}},
		{"reserved bits set, DV 3", "ff 47 00000000 00000002 00000001 00000000",
			DDPHeader{Tagged: true, Last: true, Rsvd: 0xF, DV: 3, RsvdULP: 0x47, STag: 0, TO: 0x0000000200000001}},
		{"untagged QN 2", "7d 47 00000000 00000002 00000001 00000000",
			DDPHeader{Last: true, Rsvd: 0xF, DV: 1, RsvdULP: 0x47, QN: 2, MSN: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := ddpHex(t, tt.hex)
			b = append(b, 0xEE, 0xEE) // trailing octets are not the header's
			var h DDPHeader
			n, err := ParseDDP(b, &h)
			if err != nil {
				t.Fatal(err)
			}
			if n != tt.want.Len() || n != h.Len() {
				t.Fatalf("n = %d, Len = %d, want %d", n, h.Len(), tt.want.Len())
			}
			if h != tt.want {
				t.Fatalf("got %+v\nwant %+v", h, tt.want)
			}
			if h.Control() != b[0] {
				t.Fatalf("Control() = %#x, want %#x", h.Control(), b[0])
			}
			if got := h.Append(nil); string(got) != string(b[:n]) {
				t.Fatalf("Append = %x, want %x", got, b[:n])
			}
			if h.PreIETF() != (h.DV == 0) {
				t.Fatal("PreIETF mismatch")
			}
		})
	}
}

func TestParseDDPPreIETF(t *testing.T) {
	var h DDPHeader
	if _, err := ParseDDP(ddpHex(t, "40 43 00000000 00000000 00000001 00000000"), &h); err != nil {
		t.Fatal(err)
	}
	if !h.PreIETF() {
		t.Fatal("DV 0 not PreIETF")
	}
	if _, err := ParseDDP(ddpHex(t, "41 43 00000000 00000000 00000001 00000000"), &h); err != nil {
		t.Fatal(err)
	}
	if h.PreIETF() {
		t.Fatal("DV 1 PreIETF")
	}
}

func TestParseDDPTruncation(t *testing.T) {
	tagged := ddpHex(t, "c1 40 11223344 0102030405060708")
	untagged := ddpHex(t, "41 43 00000000 00000000 00000001 00000000")
	taggedFields := []string{"ddp.tagged", "ddp.rsvdulp",
		"ddp.stag", "ddp.stag", "ddp.stag", "ddp.stag",
		"ddp.to", "ddp.to", "ddp.to", "ddp.to", "ddp.to", "ddp.to", "ddp.to", "ddp.to"}
	untaggedFields := []string{"ddp.tagged", "ddp.rsvdulp",
		"ddp.rsvdulp", "ddp.rsvdulp", "ddp.rsvdulp", "ddp.rsvdulp",
		"ddp.qn", "ddp.qn", "ddp.qn", "ddp.qn",
		"ddp.msn", "ddp.msn", "ddp.msn", "ddp.msn",
		"ddp.mo", "ddp.mo", "ddp.mo", "ddp.mo"}
	var h DDPHeader
	for i := 0; i < len(tagged); i++ {
		n, err := ParseDDP(tagged[:i], &h)
		if n != 0 {
			t.Fatalf("tagged[:%d]: n = %d", i, n)
		}
		ddpWantTrunc(t, err, "ddp", taggedFields[i], 14, i)
	}
	for i := 1; i < len(untagged); i++ {
		_, err := ParseDDP(untagged[:i], &h)
		ddpWantTrunc(t, err, "ddp", untaggedFields[i], 18, i)
	}
}

func TestDDPControlBits(t *testing.T) {
	for c := 0; c < 256; c++ {
		b := make([]byte, 18)
		b[0] = byte(c)
		var h DDPHeader
		if _, err := ParseDDP(b, &h); err != nil {
			t.Fatal(err)
		}
		if h.Control() != byte(c) {
			t.Fatalf("control %#x re-encodes as %#x", c, h.Control())
		}
		if h.Tagged != (c&0x80 != 0) || h.Last != (c&0x40 != 0) || h.Rsvd != byte(c&0x3C)>>2 || h.DV != byte(c&3) {
			t.Fatalf("control %#x decoded as %+v", c, h)
		}
	}
}

func TestParseDDPNoAlloc(t *testing.T) {
	b := ddpHex(t, "41 43 00000000 00000000 00000001 00000000")
	var h DDPHeader
	if a := testing.AllocsPerRun(100, func() { _, _ = ParseDDP(b, &h) }); a != 0 {
		t.Fatalf("ParseDDP allocates %v", a)
	}
}
