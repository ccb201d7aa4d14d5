package decode_test

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/iwkit/iwkit/decode"
)

const (
	mpaReqHex = "4d50412049442052657120467261 6d65" // "MPA ID Req Frame"
	mpaRepHex = "4d50412049442052657020467261 6d65" // "MPA ID Rep Frame"
)

// The MPA v2 Request seen from Linux siw: S, Rev 2, PD_Length 4, IRD 1, ORD 1.
const mpaSiwV2Req = mpaReqHex + " 10 02 0004 0001 0001"

func TestMPAKeys(t *testing.T) {
	if decode.MPAKeyReq != string(fpHex(t, mpaReqHex)) || decode.MPAKeyRep != string(fpHex(t, mpaRepHex)) {
		t.Fatal("key constants differ from RFC 5044 §7.1.1")
	}
	for _, tc := range []struct {
		in        string
		reply, ok bool
	}{
		{decode.MPAKeyReq, false, true},
		{decode.MPAKeyRep, true, true},
		{decode.MPAKeyRep + "xyz", true, true},
		{decode.MPAKeyReq[:15], false, false},
		{"MPA ID Rxp Frame", false, false},
		{"mpa id req frame", false, false},
		{"", false, false},
	} {
		reply, ok := decode.IsMPAKey([]byte(tc.in))
		if reply != tc.reply || ok != tc.ok {
			t.Errorf("IsMPAKey(%q) = %v, %v", tc.in, reply, ok)
		}
	}
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", -1},
		{decode.MPAKeyReq, 0},
		{"login...." + decode.MPAKeyRep + "\x00\x00", 9},
		{"MPA ID Re MPA ID Req Fram MPA ID Rep Frame", 26},
		{"MPA ID Req Fram", -1},
		{"xxxxMPA ID Req Fram", -1},
		{"MPA ID Rex FrameMPA ID Req Frame", 16},
	} {
		if got := decode.FindMPAKey([]byte(tc.in)); got != tc.want {
			t.Errorf("FindMPAKey(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestParseMPAFrameSiwV2(t *testing.T) {
	wire := fpHex(t, mpaSiwV2Req)
	var f decode.MPAFrame
	n, err := decode.ParseMPAFrame(wire, &f)
	if err != nil || n != 24 {
		t.Fatalf("ParseMPAFrame = %d, %v", n, err)
	}
	want := decode.MPAFrame{
		Flags: 0x10, Enhanced: true, Rev: 2, PDLength: 4, PrivateData: wire[20:],
		HasV2: true, V2: decode.MPAv2{IRD: 1, ORD: 1},
	}
	mpaCheck(t, &f, &want)
	if len(f.ULPPrivateData()) != 0 {
		t.Errorf("ULPPrivateData = % x, want empty", f.ULPPrivateData())
	}
	if got := f.Append(nil); !bytes.Equal(got, wire) {
		t.Errorf("Append = % x\nwant     % x", got, wire)
	}
}

// mpaCheck compares two frames field by field.
func mpaCheck(t *testing.T, got, want *decode.MPAFrame) {
	t.Helper()
	g, w := *got, *want
	if !bytes.Equal(g.PrivateData, w.PrivateData) {
		t.Errorf("PrivateData = % x, want % x", g.PrivateData, w.PrivateData)
	}
	g.PrivateData, w.PrivateData = nil, nil
	if !reflect.DeepEqual(g, w) {
		t.Errorf("frame = %+v\nwant    %+v", g, w)
	}
}

// Round trips (decode, then encode gives the same octets) for every frame
// shape of RFC 5044 §7.1.1, RFC 6581 §6/§9 and the Rev 1 IRD/ORD variant.
func TestMPAFrameRoundTrip(t *testing.T) {
	type tc struct {
		name string
		hex  string
		want decode.MPAFrame // PrivateData is filled from the octets
	}
	cases := []tc{
		{"v1 request, no PD", mpaReqHex + "00 01 0000", decode.MPAFrame{Rev: 1}},
		{"v1 request, M C, PD", mpaReqHex + "c0 01 0005 68656c6c6f",
			decode.MPAFrame{Flags: 0xC0, Markers: true, CRC: true, Rev: 1, PDLength: 5}},
		{"v1 reply, no PD", mpaRepHex + "40 01 0000", decode.MPAFrame{Reply: true, Flags: 0x40, CRC: true, Rev: 1}},
		{"v1 reply, PD", mpaRepHex + "80 01 0003 010203",
			decode.MPAFrame{Reply: true, Flags: 0x80, Markers: true, Rev: 1, PDLength: 3}},
		{"reject reply", mpaRepHex + "60 01 0006 6e6f2074686f",
			decode.MPAFrame{Reply: true, Flags: 0x60, CRC: true, Reject: true, Rev: 1, PDLength: 6}},
		{"reject reply v2 with required ORD", mpaRepHex + "30 02 0004 0002 0010",
			decode.MPAFrame{Reply: true, Flags: 0x30, Reject: true, Enhanced: true, Rev: 2, PDLength: 4,
				HasV2: true, V2: decode.MPAv2{IRD: 2, ORD: 16}}},
		{"Rev 0 (RDMA Consortium)", mpaReqHex + "c0 00 0000",
			decode.MPAFrame{Flags: 0xC0, Markers: true, CRC: true, Rev: 0, PreIETF: true}},
		{"Rev 0 reply with PD", mpaRepHex + "c0 00 0002 abcd",
			decode.MPAFrame{Reply: true, Flags: 0xC0, Markers: true, CRC: true, PDLength: 2, PreIETF: true}},
		{"Rev 1 IRD/ORD (SMB Direct)", mpaReqHex + "40 01 0008 00000010 00000008",
			decode.MPAFrame{Flags: 0x40, CRC: true, Rev: 1, PDLength: 8, Rev1IRDORD: true, Rev1IRD: 16, Rev1ORD: 8}},
		{"Rev 1 IRD/ORD reply with trailing PD", mpaRepHex + "40 01 000a 0000ffff 00000000 beef",
			decode.MPAFrame{Reply: true, Flags: 0x40, CRC: true, Rev: 1, PDLength: 10, Rev1IRDORD: true, Rev1IRD: 0xFFFF}},
		{"Rev 1 PD that is not IRD/ORD", mpaReqHex + "40 01 0008 01000000 00000008",
			decode.MPAFrame{Flags: 0x40, CRC: true, Rev: 1, PDLength: 8}},
		{"Rev 1 PD of 7 octets", mpaReqHex + "40 01 0007 00000010 000000",
			decode.MPAFrame{Flags: 0x40, CRC: true, Rev: 1, PDLength: 7}},
		{"S with Rev 1: no v2 block", mpaReqHex + "50 01 0004 8001 0001",
			decode.MPAFrame{Flags: 0x50, CRC: true, Enhanced: true, Rev: 1, PDLength: 4}},
		{"S with Rev 2 and short PD", mpaReqHex + "50 02 0002 8001",
			decode.MPAFrame{Flags: 0x50, CRC: true, Enhanced: true, Rev: 2, PDLength: 2}},
		{"S with Rev 2 and no PD", mpaReqHex + "10 02 0000",
			decode.MPAFrame{Flags: 0x10, Enhanced: true, Rev: 2}},
		{"Rev 2 without S", mpaReqHex + "40 02 0004 8001 0001",
			decode.MPAFrame{Flags: 0x40, CRC: true, Rev: 2, PDLength: 4}},
		{"siw GSO flag and Res bits", mpaRepHex + "5f 02 0004 c040 8020",
			decode.MPAFrame{Reply: true, Flags: 0x5F, CRC: true, Enhanced: true, Res: 0x0F, Rev: 2, PDLength: 4, HasV2: true,
				V2: decode.MPAv2{PeerToPeer: true, ZeroLenSendRTR: true, IRD: 0x40, ZeroLenWriteRTR: true, ORD: 0x20}}},
		{"Rev 3", mpaReqHex + "10 03 0004 0001 0002",
			decode.MPAFrame{Flags: 0x10, Enhanced: true, Rev: 3, PDLength: 4, HasV2: true, V2: decode.MPAv2{IRD: 1, ORD: 2}}},
	}
	// v2 with each A/B/C/D combination and IRD/ORD values, with and
	// without ULP private data after the block.
	for abcd := range 16 {
		for _, io := range [][2]uint16{{0, 0}, {1, 1}, {0x3FFF, 0x3FFF}, {0x3FFF, 0}, {0x1234, 0x2ABC}} {
			for _, ulp := range []string{"", "0102030405"} {
				v := decode.MPAv2{
					PeerToPeer: abcd&8 != 0, ZeroLenSendRTR: abcd&4 != 0, IRD: io[0],
					ZeroLenWriteRTR: abcd&2 != 0, ZeroLenReadRTR: abcd&1 != 0, ORD: io[1],
				}
				ird := io[0] | uint16(abcd&8)<<12 | uint16(abcd&4)<<12
				ord := io[1] | uint16(abcd&2)<<14 | uint16(abcd&1)<<14
				pdl := 4 + len(ulp)/2
				cases = append(cases, tc{
					name: fmt.Sprintf("v2 A%d B%d C%d D%d IRD %#x ORD %#x ulp %q", abcd>>3, abcd>>2&1, abcd>>1&1, abcd&1, io[0], io[1], ulp),
					hex:  fmt.Sprintf("%s 50 02 %04x %04x %04x %s", mpaReqHex, pdl, ird, ord, ulp),
					want: decode.MPAFrame{Flags: 0x50, CRC: true, Enhanced: true, Rev: 2, PDLength: uint16(pdl), HasV2: true, V2: v},
				})
			}
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wire := fpHex(t, c.hex)
			in := append(append([]byte{}, wire...), 0x00, 0x0e, 0xc1) // an FPDU follows
			var f decode.MPAFrame
			n, err := decode.ParseMPAFrame(in, &f)
			if err != nil || n != len(wire) {
				t.Fatalf("ParseMPAFrame = %d, %v; want %d", n, err, len(wire))
			}
			c.want.PrivateData = wire[20:]
			c.want.PreIETF = c.want.Rev == 0
			mpaCheck(t, &f, &c.want)
			if got := f.Append([]byte{0xEE}); got[0] != 0xEE || !bytes.Equal(got[1:], wire) {
				t.Errorf("Append = % x\nwant     % x", got[1:], wire)
			}
			if f.HasV2 {
				v, err := decode.ParseMPAv2(f.PrivateData)
				if err != nil || v != f.V2 {
					t.Errorf("ParseMPAv2 = %+v, %v", v, err)
				}
				if got := f.V2.Append(nil); !bytes.Equal(got, wire[20:24]) {
					t.Errorf("MPAv2.Append = % x, want % x", got, wire[20:24])
				}
				if !bytes.Equal(f.ULPPrivateData(), wire[24:]) {
					t.Errorf("ULPPrivateData = % x", f.ULPPrivateData())
				}
			}
			if f.Rev1IRDORD && !bytes.Equal(f.ULPPrivateData(), wire[28:]) {
				t.Errorf("ULPPrivateData = % x", f.ULPPrivateData())
			}
			if !f.HasV2 && !f.Rev1IRDORD && !bytes.Equal(f.ULPPrivateData(), wire[20:]) {
				t.Errorf("ULPPrivateData = % x", f.ULPPrivateData())
			}
		})
	}
}

// Building frames from values (the encoder side of the contract).
func TestMPAFrameBuild(t *testing.T) {
	ulp := []byte("nvme-of connect")
	f := decode.MPAFrame{
		Reply: true, CRC: true, Enhanced: true, Rev: 2, HasV2: true,
		V2:          decode.MPAv2{PeerToPeer: true, ZeroLenWriteRTR: true, IRD: 0x4001, ORD: 0x3FFF}, // IRD masked to 14 bits
		PrivateData: append(make([]byte, decode.MPAv2Len), ulp...),
		Flags:       0xFF, // ignored: recomputed
		Res:         decode.MPAFlagGSO,
	}
	wire := f.Append(nil)
	want := fpHex(t, mpaRepHex+"58 02 0013 8001 bfff")
	want = append(want, ulp...)
	if !bytes.Equal(wire, want) {
		t.Fatalf("Append = % x\nwant     % x", wire, want)
	}
	var g decode.MPAFrame
	if _, err := decode.ParseMPAFrame(wire, &g); err != nil || !bytes.Equal(g.ULPPrivateData(), ulp) || g.V2.IRD != 1 {
		t.Errorf("re-parse: %+v, %v", g, err)
	}
	// HasV2 with no PrivateData at all: the block alone.
	f = decode.MPAFrame{Enhanced: true, Rev: 2, HasV2: true, V2: decode.MPAv2{IRD: 7, ORD: 9}}
	if got, want := f.Append(nil), fpHex(t, mpaReqHex+"10 02 0004 0007 0009"); !bytes.Equal(got, want) {
		t.Errorf("block-only Append = % x, want % x", got, want)
	}
	// Rev 1 IRD/ORD variant from values.
	f = decode.MPAFrame{CRC: true, Rev: 1, Rev1IRDORD: true, Rev1IRD: 32, Rev1ORD: 16}
	if got, want := f.Append(nil), fpHex(t, mpaReqHex+"40 01 0008 00000020 00000010"); !bytes.Equal(got, want) {
		t.Errorf("Rev 1 IRD/ORD Append = % x, want % x", got, want)
	}
}

func TestParseMPAFramePDLength(t *testing.T) {
	for _, pdl := range []int{0, 1, 256, 511, 512} {
		wire := append(fpHex(t, mpaReqHex+"40 01"), byte(pdl>>8), byte(pdl))
		wire = append(wire, make([]byte, pdl)...)
		var f decode.MPAFrame
		n, err := decode.ParseMPAFrame(wire, &f)
		if err != nil || n != 20+pdl || len(f.PrivateData) != pdl {
			t.Errorf("PD_Length %d: %d, %v", pdl, n, err)
		}
		if !bytes.Equal(f.Append(nil), wire) {
			t.Errorf("PD_Length %d: round trip differs", pdl)
		}
	}
	for _, pdl := range []int{513, 1024, 0xFFFF} {
		wire := append(fpHex(t, mpaReqHex+"40 01"), byte(pdl>>8), byte(pdl))
		var f decode.MPAFrame
		// Malformed whether or not the Private Data is all there.
		for _, in := range [][]byte{wire, append(wire, make([]byte, pdl)...)} {
			n, err := decode.ParseMPAFrame(in, &f)
			if n != 0 {
				t.Errorf("PD_Length %d: consumed %d", pdl, n)
			}
			fpWantErr(t, err, decode.Malformed, "mpa.pd_length")
		}
	}
}

func TestParseMPAFrameTruncated(t *testing.T) {
	for _, h := range []string{
		mpaReqHex + "40 01 0005 0102030405",
		mpaRepHex + "50 02 0008 8001 4002 aabbccdd",
		erdmaReqHex, // erdma's extension (Rev 129) before the Private Data
	} {
		wire := fpHex(t, h)
		ext := decode.MPAExtLen(wire[17])
		for k := 0; k < len(wire); k++ {
			var want string
			switch {
			case k < 16:
				want = "mpa.key"
			case k == 16:
				want = "mpa.flags"
			case k == 17:
				want = "mpa.rev"
			case k < 20:
				want = "mpa.pd_length"
			case k < 20+ext/2:
				want = "mpa.erdma.cookie"
			case k < 20+ext:
				want = "mpa.erdma.bits"
			default:
				want = "mpa.private_data"
			}
			var f decode.MPAFrame
			n, err := decode.ParseMPAFrame(wire[:k], &f)
			if n != 0 {
				t.Errorf("k=%d: consumed %d", k, n)
			}
			fpWantErr(t, err, decode.Truncated, want)
			var e *decode.Error
			errors.As(err, &e)
			wantNeed := 20
			if k >= 20 {
				wantNeed = len(wire)
			}
			if e.Need != wantNeed || e.Have != k {
				t.Errorf("k=%d: Need %d Have %d, want %d %d", k, e.Need, e.Have, wantNeed, k)
			}
		}
	}
}

func TestParseMPAFrameBadKey(t *testing.T) {
	for _, in := range []string{
		"MPA ID Rxq Frame\x40\x01\x00\x00",
		"GET / HTTP/1.1\r\nHost: x\r\n",
		"X",
		"MPA ID Rex",
		"MPA ID Req Framf\x40\x01\x00\x00",
		"\x00\x0e\xc1\x40\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00",
	} {
		var f decode.MPAFrame
		_, err := decode.ParseMPAFrame([]byte(in), &f)
		fpWantErr(t, err, decode.Malformed, "mpa.key")
	}
	// A prefix of a key is only truncated.
	var f decode.MPAFrame
	_, err := decode.ParseMPAFrame([]byte("MPA ID Re"), &f)
	fpWantErr(t, err, decode.Truncated, "mpa.key")
}

func TestParseMPAv2Truncated(t *testing.T) {
	for k, field := range []string{"mpa.v2.ird", "mpa.v2.ird", "mpa.v2.ord", "mpa.v2.ord"} {
		_, err := decode.ParseMPAv2(make([]byte, k))
		fpWantErr(t, err, decode.Truncated, field)
	}
}

func TestParseMPAFrameAllocs(t *testing.T) {
	wire := fpHex(t, mpaRepHex+"50 02 0008 8001 4002 aabbccdd")
	var f decode.MPAFrame
	a := testing.AllocsPerRun(100, func() {
		if _, err := decode.ParseMPAFrame(wire, &f); err != nil || !f.HasV2 {
			panic("parse failed")
		}
	})
	if a != 0 {
		t.Errorf("ParseMPAFrame: %v allocs/op, want 0", a)
	}
	scan := append(bytes.Repeat([]byte("MPA ID Re"), 100), wire...)
	if a := testing.AllocsPerRun(100, func() {
		if decode.FindMPAKey(scan) != 900 {
			panic("not found")
		}
	}); a != 0 {
		t.Errorf("FindMPAKey: %v allocs/op, want 0", a)
	}
	buf := make([]byte, 0, 600)
	if a := testing.AllocsPerRun(100, func() { buf = f.Append(buf[:0]) }); a != 0 {
		t.Errorf("MPAFrame.Append: %v allocs/op, want 0", a)
	}
}
