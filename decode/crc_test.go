package decode_test

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/decode"
)

// fpHex decodes a hex string that may contain spaces and newlines.
func fpHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// RFC 5044 §4.4 Figure 5: the first FPDU of a stream with markers, a 42-octet
// Send (QN 0, MSN 1, L set) with 24 zero octets of data, preceded by the
// all-zero first marker. CRC value 0x83992352, wire 52 23 99 83.
const rfc5044Fig5 = `
	00000000
	002a 4143 00000000 00000000 00000001 00000000
	000000000000000000000000000000000000000000000000
	52239983`

// The ULPDU of Figure 5 and Figure 6 (MSN 1 or 2).
func rfc5044ULPDU(msn byte) []byte {
	u := make([]byte, 42)
	copy(u, []byte{0x41, 0x43, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, msn}) // ctrl, rsvd, QN 0, MSN
	return u
}

// RFC 5044 §4.4 Figure 6: the second FPDU, starting at stream offset 0x1EC
// after a 492-octet first FPDU; the marker at 0x200 has FPDUPTR 0x14.
const rfc5044Fig6 = `
	002a 4143 00000000 00000000 00000002 00000000
	00000014
	000000000000000000000000000000000000000000000000
	84925898`

func TestCRC32cVectors(t *testing.T) {
	// iSCSI digest vector (RFC 3720 B.4): 32 zero octets.
	zeros := make([]byte, 32)
	if got := decode.CRC32c(zeros); got != 0x8A9136AA {
		t.Errorf("CRC32c(32 zeros) = %#08x, want 0x8a9136aa", got)
	}
	var w [4]byte
	decode.PutCRC(w[:], 0x8A9136AA)
	if !bytes.Equal(w[:], []byte{0xaa, 0x36, 0x91, 0x8a}) {
		t.Errorf("PutCRC wire order = % x, want aa 36 91 8a", w)
	}
	if got := decode.WireCRC(w[:]); got != 0x8A9136AA {
		t.Errorf("WireCRC = %#08x", got)
	}

	// RFC 5044 Figure 5, CRC over marker + ULPDU_Length + ULPDU.
	fig5 := fpHex(t, rfc5044Fig5)
	if got := decode.CRC32c(fig5[:len(fig5)-4]); got != 0x83992352 {
		t.Errorf("Figure 5 CRC = %#08x, want 0x83992352", got)
	}
	if got := decode.WireCRC(fig5[len(fig5)-4:]); got != 0x83992352 {
		t.Errorf("Figure 5 wire CRC = %#08x", got)
	}
	// Figure 6, CRC over ULPDU_Length + ULPDU with the marker inside.
	fig6 := fpHex(t, rfc5044Fig6)
	if got := decode.CRC32c(fig6[:len(fig6)-4]); got != 0x98589284 {
		t.Errorf("Figure 6 CRC = %#08x, want 0x98589284", got)
	}
}

// Further vectors of iwarp-reference.md §2.4, on marker-free FPDUs.
func TestCRC32cFPDUVectors(t *testing.T) {
	for _, tc := range []struct {
		name string
		fpdu string
		crc  uint32
	}{
		{"zero-length RDMA Write RTR", "000e c140 00000000 0000000000000000 a30572ab", 0xAB7205A3},
		{"minimal Terminate", "0016 4147 00000000 00000002 00000001 00000000 00000000 f9a26f1d", 0x1D6FA2F9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wire := fpHex(t, tc.fpdu)
			var f decode.FPDU
			n, err := decode.ParseFPDU(wire, &f)
			if err != nil || n != len(wire) {
				t.Fatalf("ParseFPDU = %d, %v; want %d, nil", n, err, len(wire))
			}
			if f.CRC != tc.crc || f.ComputedCRC() != tc.crc || !f.CRCOK() {
				t.Errorf("CRC field %#08x computed %#08x, want %#08x", f.CRC, f.ComputedCRC(), tc.crc)
			}
			if got := decode.AppendFPDU(nil, f.ULPDU, true); !bytes.Equal(got, wire) {
				t.Errorf("AppendFPDU = % x\nwant          % x", got, wire)
			}
		})
	}
}

// The RFC figures rebuilt by the marker encoder, and parsed back.
func TestCRC32cRFCFiguresWithMarkers(t *testing.T) {
	fig5 := fpHex(t, rfc5044Fig5)
	got, next := decode.AppendFPDUWithMarkers(nil, 0, 0, rfc5044ULPDU(1), true)
	if !bytes.Equal(got, fig5) || next != uint32(len(fig5)) {
		t.Errorf("Figure 5 = % x (next %d)\nwant       % x", got, next, fig5)
	}

	// The stream of Figure 6: a first FPDU of 492 octets (leading marker +
	// FPDULen(482) = 4 + 488), then the Figure 6 FPDU at 0x1EC.
	stream, pos := decode.AppendFPDUWithMarkers(nil, 0, 0, make([]byte, 482), true)
	if pos != 0x1EC {
		t.Fatalf("first FPDU ends at %#x, want 0x1ec", pos)
	}
	stream, pos = decode.AppendFPDUWithMarkers(stream, pos, 0, rfc5044ULPDU(2), true)
	fig6 := fpHex(t, rfc5044Fig6)
	if !bytes.Equal(stream[0x1EC:], fig6) || pos != 0x220 {
		t.Errorf("Figure 6 = % x (next %#x)\nwant       % x", stream[0x1EC:], pos, fig6)
	}

	// Parse both back from the stream.
	scratch := make([]byte, 0, 1024)
	var f decode.FPDU
	n, crc, marks, err := decode.ParseFPDUWithMarkers(stream, 0, 0, scratch, &f, nil)
	if err != nil || n != 0x1EC || crc != f.CRC || len(marks) != 1 || marks[0] != (decode.MarkerAt{}) {
		t.Fatalf("first FPDU: n=%d crc=%#x/%#x marks=%v err=%v", n, crc, f.CRC, marks, err)
	}
	n, crc, marks, err = decode.ParseFPDUWithMarkers(stream[0x1EC:], 0x1EC, 0, scratch, &f, marks[:0])
	if err != nil || n != len(fig6) || crc != 0x98589284 || f.CRC != 0x98589284 {
		t.Fatalf("Figure 6: n=%d crc=%#x/%#x err=%v", n, crc, f.CRC, err)
	}
	if want := []decode.MarkerAt{{Pos: 0x200, Marker: decode.Marker{FPDUPTR: 0x14}}}; len(marks) != 1 || marks[0] != want[0] {
		t.Errorf("Figure 6 markers = %v, want %v", marks, want)
	}
	if !bytes.Equal(f.ULPDU, rfc5044ULPDU(2)) || f.ULPDULength != 42 {
		t.Errorf("Figure 6 ULPDU = % x", f.ULPDU)
	}
}

func TestCRC32cUpdateParts(t *testing.T) {
	data := make([]byte, 3000)
	for i := range data {
		data[i] = byte(i*7 + i>>8)
	}
	want := decode.CRC32c(data)
	for _, cuts := range [][]int{{0}, {1}, {2, 3}, {7, 8, 9}, {100}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {1500, 1501, 2999}} {
		var crc uint32
		var parts [][]byte
		prev := 0
		for _, c := range append(cuts, len(data)) {
			crc = decode.CRC32cUpdate(crc, data[prev:c])
			parts = append(parts, data[prev:c])
			prev = c
		}
		if crc != want {
			t.Errorf("cuts %v: CRC32cUpdate chain = %#08x, want %#08x", cuts, crc, want)
		}
		if got := decode.CRC32cParts(parts...); got != want {
			t.Errorf("cuts %v: CRC32cParts = %#08x, want %#08x", cuts, got, want)
		}
	}
	if decode.CRC32cParts() != 0 || decode.CRC32c(nil) != 0 {
		t.Error("CRC of nothing must be 0")
	}
}

func TestCRC32cAllocs(t *testing.T) {
	wire := decode.AppendFPDU(nil, make([]byte, 1442), true)
	var f decode.FPDU
	if _, err := decode.ParseFPDU(wire, &f); err != nil {
		t.Fatal(err)
	}
	hdr, payload, pad := wire[:2], wire[2:1444], wire[1444:1444]
	var sink uint32
	for name, fn := range map[string]func(){
		"CRC32c":      func() { sink += decode.CRC32c(wire) },
		"CRC32cParts": func() { sink += decode.CRC32cParts(hdr, payload[:18], payload[18:], pad) },
		"CRCOK": func() {
			if !f.CRCOK() {
				panic("bad CRC")
			}
		},
	} {
		if a := testing.AllocsPerRun(100, fn); a != 0 {
			t.Errorf("%s: %v allocs/op, want 0", name, a)
		}
	}
	_ = sink
}
