package decode_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/iwkit/iwkit/decode"
)

// fpULPDU returns a ULPDU of n octets with a recognisable pattern.
func fpULPDU(n int) []byte {
	u := make([]byte, n)
	for i := range u {
		u[i] = byte(i*13 + 1)
	}
	return u
}

// fpWantErr checks that err is a *decode.Error of the given kind and field.
func fpWantErr(t *testing.T, err error, kind decode.ErrorKind, field string) {
	t.Helper()
	var e *decode.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want *decode.Error %v %s", err, kind, field)
	}
	if e.Kind != kind || e.Field != field || e.Layer != "mpa" {
		t.Fatalf("err = %v (kind %v field %q layer %q), want %v %q", err, e.Kind, e.Field, e.Layer, kind, field)
	}
	sentinel := decode.ErrTruncated
	if kind == decode.Malformed {
		sentinel = decode.ErrMalformed
	}
	if !errors.Is(err, sentinel) {
		t.Fatalf("errors.Is(%v, %v) = false", err, sentinel)
	}
}

func TestPadLenFPDULen(t *testing.T) {
	for _, tc := range []struct{ n, pad, fpdu int }{
		{0, 2, 8}, {1, 1, 8}, {2, 0, 8}, {3, 3, 12},
		{14, 0, 20}, {15, 3, 24}, {16, 2, 24}, {17, 1, 24}, {18, 0, 24},
		{42, 0, 48}, {58, 0, 64}, {1442, 0, 1448}, {1454, 0, 1460}, {65535, 3, 65544},
	} {
		if got := decode.PadLen(tc.n); got != tc.pad {
			t.Errorf("PadLen(%d) = %d, want %d", tc.n, got, tc.pad)
		}
		if got := decode.FPDULen(tc.n); got != tc.fpdu {
			t.Errorf("FPDULen(%d) = %d, want %d", tc.n, got, tc.fpdu)
		}
		if (decode.FPDULen(tc.n))%4 != 0 {
			t.Errorf("FPDULen(%d) not a multiple of 4", tc.n)
		}
	}
}

// RFC 5044 §4.5.
func TestMULPDU(t *testing.T) {
	for _, tc := range []struct {
		emss    int
		markers bool
		want    int
	}{
		{1460, false, 1454},                 // 1460 - (6 + 0)
		{1460, true, 1442},                  // 1460 - (6 + 4*3 + 0)
		{1448, false, 1442},                 // Ethernet with TCP timestamps
		{1448, true, 1430},                  // 1448 - (6 + 12 + 0)
		{1450, false, 1442},                 // 1450 - (6 + 2)
		{1450, true, 1430},                  // 1450 - (6 + 12 + 2)
		{536, false, 530},                   // 536 - 6
		{536, true, 522},                    // 536 - (6 + 8)
		{512, true, 502},                    // exactly one period: 512 - (6 + 4)
		{513, true, 498},                    // 513 - (6 + 8 + 1)
		{8960, false, 8954},                 // jumbo
		{8960, true, 8882},                  // 8960 - (6 + 4*18)
		{134, false, 128},                   // 134 - (6 + 2) = 126 -> floor
		{136, false, 130},                   // 136 - 6
		{140, true, 130},                    // 140 - (6 + 4)
		{137, true, 128},                    // 137 - (6 + 4 + 1) = 126 -> floor
		{100, false, 128}, {100, true, 128}, // tiny EMSS: never below 128
		{0, false, 128}, {-5, true, 128}, // nonsense EMSS
		{127, true, 128}, {128, false, 128}, // 128 - 6 = 122 -> floor
	} {
		if got := decode.MULPDU(tc.emss, tc.markers); got != tc.want {
			t.Errorf("MULPDU(%d, markers=%v) = %d, want %d", tc.emss, tc.markers, got, tc.want)
		}
	}
}

func TestParseFPDURoundTrip(t *testing.T) {
	for _, n := range []int{14, 15, 16, 17, 18, 19, 20, 21, 42, 58, 100, 511, 1442, 1454, 9000, 65535} {
		for _, crc := range []bool{true, false} {
			u := fpULPDU(n)
			wire := decode.AppendFPDU([]byte{0xEE}, u, crc)[1:]
			if len(wire) != decode.FPDULen(n) {
				t.Fatalf("n=%d: AppendFPDU wrote %d octets, want %d", n, len(wire), decode.FPDULen(n))
			}
			// Trailing octets (the next FPDU) must not be consumed.
			in := append(append([]byte{}, wire...), 0, 20, 1, 2)
			var f decode.FPDU
			got, err := decode.ParseFPDU(in, &f)
			if err != nil || got != len(wire) {
				t.Fatalf("n=%d: ParseFPDU = %d, %v", n, got, err)
			}
			if int(f.ULPDULength) != n || !bytes.Equal(f.ULPDU, u) || len(f.Pad) != decode.PadLen(n) {
				t.Fatalf("n=%d: decoded length %d, ulpdu ok %v, pad %d", n, f.ULPDULength, bytes.Equal(f.ULPDU, u), len(f.Pad))
			}
			if crc != f.CRCOK() {
				t.Errorf("n=%d crc=%v: CRCOK = %v", n, crc, f.CRCOK())
			}
			if !crc && f.CRC != 0 {
				t.Errorf("n=%d: CRC field %#x with CRCs off, want 0", n, f.CRC)
			}
			if out := f.Append(nil); !bytes.Equal(out, wire) {
				t.Errorf("n=%d: FPDU.Append differs from input", n)
			}
			if cap(f.ULPDU) != len(f.ULPDU) {
				t.Errorf("n=%d: ULPDU capacity %d runs into PAD", n, cap(f.ULPDU))
			}
		}
	}
}

// PAD is ignored by the receiver except for the CRC (RFC 5044 §4.1).
func TestParseFPDUNonZeroPad(t *testing.T) {
	f := decode.FPDU{ULPDULength: 15, ULPDU: fpULPDU(15), Pad: []byte{1, 2, 3}}
	f.CRC = f.ComputedCRC()
	wire := f.Append(nil)
	var g decode.FPDU
	if n, err := decode.ParseFPDU(wire, &g); err != nil || n != 24 {
		t.Fatalf("ParseFPDU = %d, %v", n, err)
	}
	if !bytes.Equal(g.Pad, []byte{1, 2, 3}) || !g.CRCOK() {
		t.Errorf("pad % x CRCOK %v", g.Pad, g.CRCOK())
	}
	if decode.CRC32c(wire[:20]) != g.CRC {
		t.Error("CRC must cover ULPDU_Length through PAD")
	}
	g.Pad[1] = 0
	if g.CRCOK() {
		t.Error("a changed PAD octet must break the CRC")
	}
}

func TestParseFPDUTruncated(t *testing.T) {
	for _, n := range []int{14, 15, 16, 17} {
		wire := decode.AppendFPDU(nil, fpULPDU(n), true)
		pad := decode.PadLen(n)
		for k := 0; k < len(wire); k++ {
			var want string
			switch {
			case k < 2:
				want = "mpa.ulpdu_length"
			case k < 2+n:
				want = "mpa.ulpdu"
			case k < 2+n+pad:
				want = "mpa.pad"
			default:
				want = "mpa.crc"
			}
			var f decode.FPDU
			got, err := decode.ParseFPDU(wire[:k], &f)
			if got != 0 {
				t.Errorf("n=%d k=%d: consumed %d on error", n, k, got)
			}
			fpWantErr(t, err, decode.Truncated, want)
			var e *decode.Error
			errors.As(err, &e)
			if e.Have != k || (k >= 2 && e.Need != len(wire)) {
				t.Errorf("n=%d k=%d: Need %d Have %d", n, k, e.Need, e.Have)
			}
		}
	}
}

func TestParseFPDUMalformedLength(t *testing.T) {
	for l := 0; l < 14; l++ {
		wire := make([]byte, 32)
		wire[1] = byte(l)
		var f decode.FPDU
		_, err := decode.ParseFPDU(wire, &f)
		fpWantErr(t, err, decode.Malformed, "mpa.ulpdu_length")
		// Malformed as soon as the length is known, whatever follows.
		_, err = decode.ParseFPDU(wire[:2], &f)
		fpWantErr(t, err, decode.Malformed, "mpa.ulpdu_length")
	}
}

func TestParseFPDUAllocs(t *testing.T) {
	wire := decode.AppendFPDU(nil, fpULPDU(1442), true)
	var f decode.FPDU
	a := testing.AllocsPerRun(100, func() {
		if _, err := decode.ParseFPDU(wire, &f); err != nil || !f.CRCOK() {
			panic("parse failed")
		}
	})
	if a != 0 {
		t.Errorf("ParseFPDU + CRCOK: %v allocs/op, want 0", a)
	}
	buf := make([]byte, 0, 2048)
	a = testing.AllocsPerRun(100, func() { buf = decode.AppendFPDU(buf[:0], f.ULPDU, true) })
	if a != 0 {
		t.Errorf("AppendFPDU into a big enough buffer: %v allocs/op, want 0", a)
	}
}
