package decode_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/decode"
)

// fuzzMaxLen bounds fuzz inputs. Longer inputs reach no new code, and the
// fuzzer spends up to a minute minimising each new interesting input at a
// cost that grows with the square of its length.
const fuzzMaxLen = 2048

func fuzzHex(s string) []byte {
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		panic(err)
	}
	return b
}

// fuzzErrOK checks the error contract: a typed MPA-layer *decode.Error,
// truncated or malformed, with nothing consumed.
func fuzzErrOK(t *testing.T, n int, err error, inLen int) {
	t.Helper()
	var e *decode.Error
	if !errors.As(err, &e) || e.Layer != "mpa" || !strings.HasPrefix(e.Field, "mpa.") {
		t.Fatalf("untyped error %v", err)
	}
	if n != 0 {
		t.Fatalf("consumed %d on error %v", n, err)
	}
	switch e.Kind {
	case decode.Truncated:
		if e.Have != inLen || e.Need <= e.Have || !errors.Is(err, decode.ErrTruncated) {
			t.Fatalf("bad truncated error %+v for %d octets", e, inLen)
		}
	case decode.Malformed:
		if !errors.Is(err, decode.ErrMalformed) {
			t.Fatalf("bad malformed error %+v", e)
		}
	default:
		t.Fatalf("bad kind in %+v", e)
	}
}

func FuzzMPAFrame(f *testing.F) {
	for _, s := range []string{
		mpaSiwV2Req,                                 // siw MPA v2 Request: S, Rev 2, IRD 1, ORD 1
		mpaReqHex + "00 01 0000",                    // v1 Request, PD 0 (SoftUiWARP / rping capture)
		mpaRepHex + "00 01 0000",                    // v1 Reply, PD 0
		mpaRepHex + "60 01 0003 616263",             // reject
		mpaReqHex + "c0 00 0000",                    // Rev 0
		mpaReqHex + "40 01 0008 00000010 00000008",  // Rev 1 IRD/ORD
		mpaRepHex + "58 02 0008 8001 8001 01020304", // siw GSO, RTR Write
		mpaReqHex + "40 01 0201",                    // PD_Length 513
		mpaReqHex + "40 01",                         // truncated
		erdmaReqHex,                                 // Alibaba erdma, Rev 129 with its extension
		mpaRepHex + "10 81 0004 00000001",           // erdma, S set, extension cut
		"0012 4143 00000000 00000000 00000001 00000000 0000 00000000",
	} {
		f.Add(fuzzHex(s))
	}
	f.Add(append(fuzzHex(mpaRepHex+"40 01 0028"), make([]byte, 40)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > fuzzMaxLen {
			return
		}
		var fr decode.MPAFrame
		n, err := decode.ParseMPAFrame(data, &fr)
		if idx := decode.FindMPAKey(data); idx >= 0 {
			if _, ok := decode.IsMPAKey(data[idx:]); !ok {
				t.Fatalf("FindMPAKey = %d but no key there", idx)
			}
			for i := 0; i < idx; i++ {
				if _, ok := decode.IsMPAKey(data[i:]); ok {
					t.Fatalf("FindMPAKey = %d, but a key starts at %d", idx, i)
				}
			}
		} else if len(data) >= 16 && bytes.Contains(data, []byte(decode.MPAKeyReq)) {
			t.Fatal("FindMPAKey missed a key")
		}
		if err != nil {
			fuzzErrOK(t, n, err, len(data))
			return
		}
		if n > len(data) || n != 20+decode.MPAExtLen(fr.Rev)+int(fr.PDLength) || fr.PDLength > decode.MPAMaxPDLength {
			t.Fatalf("n=%d len=%d PDLength=%d", n, len(data), fr.PDLength)
		}
		reply, ok := decode.IsMPAKey(data)
		if !ok || reply != fr.Reply {
			t.Fatalf("IsMPAKey = %v, %v; frame Reply %v", reply, ok, fr.Reply)
		}
		out := fr.Append(nil)
		if !bytes.Equal(out, data[:n]) {
			t.Fatalf("Append(decoded) = % x\nwant              % x", out, data[:n])
		}
		var again decode.MPAFrame
		if n2, err := decode.ParseMPAFrame(out, &again); err != nil || n2 != n || !reflect.DeepEqual(again, fr) &&
			!(bytes.Equal(again.PrivateData, fr.PrivateData) && len(fr.PrivateData) == 0) {
			t.Fatalf("re-decode = %d, %v, %+v; want %+v", n2, err, again, fr)
		}
	})
}

func FuzzFPDU(f *testing.F) {
	for _, s := range []string{
		"000e c140 00000000 0000000000000000 a30572ab",                             // zero-length RDMA Write RTR
		"0016 4147 00000000 00000002 00000001 00000000 00000000 f9a26f1d",          // Terminate
		"002a 4143 00000000 00000000 00000002 00000000" + strings.Repeat("00", 24), // Figure 6 ULPDU, bad CRC
		"000f 4143 00000000 00000000 00000001 00 010203 00000000",
		"000d",
		"ffff 00",
	} {
		f.Add(fuzzHex(s))
	}
	f.Add(decode.AppendFPDU(nil, make([]byte, 58), true))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > fuzzMaxLen {
			return
		}
		var fp decode.FPDU
		n, err := decode.ParseFPDU(data, &fp)
		if err != nil {
			fuzzErrOK(t, n, err, len(data))
			return
		}
		if n > len(data) || n != decode.FPDULen(int(fp.ULPDULength)) || len(fp.ULPDU) != int(fp.ULPDULength) || n%4 != 0 {
			t.Fatalf("n=%d len=%d ULPDULength=%d", n, len(data), fp.ULPDULength)
		}
		if got := fp.Append(nil); !bytes.Equal(got, data[:n]) {
			t.Fatalf("FPDU.Append = % x, want % x", got, data[:n])
		}
		if fp.CRCOK() != (decode.CRC32c(data[:n-4]) == decode.WireCRC(data[n-4:])) {
			t.Fatal("CRCOK disagrees with a CRC over the wire octets")
		}
		// Append(decoded) re-decodes to the same value (PAD zeroed, CRC fixed).
		out := decode.AppendFPDU(nil, fp.ULPDU, true)
		var again decode.FPDU
		if n2, err := decode.ParseFPDU(out, &again); err != nil || n2 != n || again.ULPDULength != fp.ULPDULength ||
			!bytes.Equal(again.ULPDU, fp.ULPDU) || !again.CRCOK() {
			t.Fatalf("re-decode = %d, %v", n2, err)
		}
	})
}

func FuzzFPDUWithMarkers(f *testing.F) {
	// Seeds are kept small: the fuzzer minimises every new interesting
	// input, which takes long on inputs of a kilobyte.
	f.Add(fuzzHex(rfc5044Fig5), uint32(0), uint32(0))              // leading marker
	f.Add(fuzzHex(rfc5044Fig6), uint32(0x1EC), uint32(0))          // marker in the DDP header
	rtr := fuzzHex("000e c140 00000000 0000000000000000 a30572ab") // no marker
	f.Add(rtr, uint32(1000), uint32(1000-8))
	f.Add(rtr, uint32(0xFFFFFFF0), uint32(0xFFFFFE00))
	w, _ := decode.AppendFPDUWithMarkers(nil, 0xFFFFFFF0, 0xFFFFFE10, make([]byte, 40), true) // across 2^32
	f.Add(w, uint32(0xFFFFFFF0), uint32(0xFFFFFE10))
	w, _ = decode.AppendFPDUWithMarkers(nil, 496, 0, make([]byte, 14), true) // marker between PAD and CRC
	f.Add(w, uint32(496), uint32(0))
	f.Add([]byte{0, 0, 0}, uint32(3), uint32(0)) // misaligned, inside a marker
	f.Fuzz(func(t *testing.T, data []byte, pos, s0 uint32) {
		if len(data) > fuzzMaxLen {
			return
		}
		var fp decode.FPDU
		n, crc, marks, err := decode.ParseFPDUWithMarkers(data, pos, s0, nil, &fp, nil)
		if err != nil {
			fuzzErrOK(t, n, err, len(data))
			if len(marks) != 0 {
				t.Fatalf("marks %v on error", marks)
			}
			return
		}
		if n > len(data) || len(fp.ULPDU) != int(fp.ULPDULength) || len(fp.Pad) != decode.PadLen(len(fp.ULPDU)) {
			t.Fatalf("n=%d len=%d ULPDULength=%d", n, len(data), fp.ULPDULength)
		}
		want := decode.MarkerPositions(nil, s0, pos, pos+uint32(n))
		if (pos-s0)%4 == 0 {
			if len(marks) != len(want) {
				t.Fatalf("marks %v, positions %v", marks, want)
			}
			if crc != decode.CRC32c(data[:n-4]) {
				t.Fatal("CRC does not cover every octet before the CRC field")
			}
		}
		for i, m := range marks {
			if m.Pos != want[i] || (i > 0 && m.Pos-pos < marks[i-1].Pos-pos) {
				t.Fatalf("mark %d at %#x, want %#x", i, m.Pos, want[i])
			}
		}
		// Stripping gives the marker-free FPDU.
		plain, sm := decode.StripMarkers(nil, nil, data[:n], pos, s0)
		var pf decode.FPDU
		if pn, err := decode.ParseFPDU(plain, &pf); err != nil || pn != len(plain) || pf.ULPDULength != fp.ULPDULength ||
			!bytes.Equal(pf.ULPDU, fp.ULPDU) || !bytes.Equal(pf.Pad, fp.Pad) || pf.CRC != fp.CRC {
			t.Fatalf("strip + ParseFPDU = %d, %v", pn, err)
		}
		if len(sm) != len(marks) {
			t.Fatalf("StripMarkers found %d markers, parser %d", len(sm), len(marks))
		}
		// Append(decoded) re-decodes to the same value.
		out, next := decode.AppendFPDUWithMarkers(nil, pos, s0, fp.ULPDU, true)
		if len(out) != n || next != pos+uint32(n) {
			t.Fatalf("re-encoded %d octets (next %#x), want %d", len(out), next, n)
		}
		var again decode.FPDU
		n2, crc2, marks2, err := decode.ParseFPDUWithMarkers(out, pos, s0, nil, &again, nil)
		if err != nil || n2 != n || crc2 != again.CRC || again.ULPDULength != fp.ULPDULength || !bytes.Equal(again.ULPDU, fp.ULPDU) {
			t.Fatalf("re-decode = %d, %v, crc %#x/%#x", n2, err, crc2, again.CRC)
		}
		if len(marks2) != len(marks) {
			t.Fatalf("re-decoded %d markers, want %d", len(marks2), len(marks))
		}
		for i := range marks2 {
			if marks2[i].Pos != marks[i].Pos || marks2[i].Marker.FPDUPTR != decode.ExpectedFPDUPTR(marks[i].Pos, pos, s0) {
				t.Fatalf("re-encoded marker %v", marks2[i])
			}
		}
		// A canonical input (conforming markers, zero PAD, good CRC) is
		// reproduced octet for octet.
		canonical := crc == fp.CRC && bytes.Count(fp.Pad, []byte{0}) == len(fp.Pad)
		for _, m := range marks {
			canonical = canonical && m.Marker == decode.Marker{FPDUPTR: decode.ExpectedFPDUPTR(m.Pos, pos, s0)}
		}
		if canonical && !bytes.Equal(out, data[:n]) {
			t.Fatalf("canonical FPDU re-encoded as % x\nwant % x", out, data[:n])
		}
	})
}
