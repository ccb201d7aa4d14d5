package decode_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/iwkit/iwkit/decode"
)

// mkRef is a byte-at-a-time model of an FPDU on a marker-enabled stream
// (RFC 5044 §4.2-4.4), written independently of the package's chunked code.
type mkRef struct {
	wire  []byte
	tags  []string // per wire octet: the field a parser waits for there
	marks []decode.MarkerAt
	crc   uint32
}

func mkIsMarker(p, s0 uint32) bool { return (p-s0)%512 == 0 }

// mkEncode models an FPDU starting at stream position pos; (pos-s0)%4 == 0.
func mkEncode(pos, s0 uint32, ulpdu []byte, crcOn bool) mkRef {
	var r mkRef
	p := pos
	hdr := pos
	marker := func(ptr uint32, tag string) {
		r.marks = append(r.marks, decode.MarkerAt{Pos: p, Marker: decode.Marker{FPDUPTR: uint16(ptr)}})
		r.wire = append(r.wire, 0, 0, byte(ptr>>8), byte(ptr))
		r.tags = append(r.tags, tag, tag, tag, tag)
		p += 4
	}
	if mkIsMarker(p, s0) {
		marker(0, "mpa.ulpdu_length") // between FPDUs: belongs to this one
		hdr = p
	}
	type octet struct {
		v   byte
		tag string
	}
	var logical []octet
	logical = append(logical, octet{byte(len(ulpdu) >> 8), "mpa.ulpdu_length"}, octet{byte(len(ulpdu)), "mpa.ulpdu_length"})
	for _, v := range ulpdu {
		logical = append(logical, octet{v, "mpa.ulpdu"})
	}
	for range (4 - (len(ulpdu)+2)%4) % 4 {
		logical = append(logical, octet{0, "mpa.pad"})
	}
	for _, o := range logical {
		if mkIsMarker(p, s0) {
			marker(p-hdr, o.tag)
		}
		r.wire = append(r.wire, o.v)
		r.tags = append(r.tags, o.tag)
		p++
	}
	if mkIsMarker(p, s0) {
		marker(p-hdr, "mpa.marker") // between PAD and CRC: covered
	}
	r.crc = decode.CRC32c(r.wire)
	c := uint32(0)
	if crcOn {
		c = r.crc
	}
	r.wire = binary.LittleEndian.AppendUint32(r.wire, c)
	r.tags = append(r.tags, "mpa.crc", "mpa.crc", "mpa.crc", "mpa.crc")
	return r
}

func TestMarkerParseAppend(t *testing.T) {
	m, err := decode.ParseMarker([]byte{0x12, 0x34, 0x01, 0xFC, 0xFF})
	if err != nil || m != (decode.Marker{Reserved: 0x1234, FPDUPTR: 0x01FC}) {
		t.Fatalf("ParseMarker = %+v, %v", m, err)
	}
	if got := m.Append([]byte{9}); !bytes.Equal(got, []byte{9, 0x12, 0x34, 0x01, 0xFC}) {
		t.Errorf("Append = % x", got)
	}
	for k := range 4 {
		_, err := decode.ParseMarker(make([]byte, k))
		fpWantErr(t, err, decode.Truncated, "mpa.marker")
	}
	// Locating the FPDU header from a marker (RFC 5044 §4.3); the low two
	// bits of FPDUPTR are treated as 0.
	if got := (decode.Marker{FPDUPTR: 0x14}).HeaderPos(0x200); got != 0x1EC {
		t.Errorf("HeaderPos = %#x, want 0x1ec", got)
	}
	if got := (decode.Marker{FPDUPTR: 0x17}).HeaderPos(0x200); got != 0x1EC {
		t.Errorf("HeaderPos with low bits set = %#x, want 0x1ec", got)
	}
	if got := (decode.Marker{}).HeaderPos(0xFFFFFFFE); got != 2 {
		t.Errorf("HeaderPos(FPDUPTR 0) across wrap = %#x, want 2", got)
	}
	if got := (decode.Marker{FPDUPTR: 8}).HeaderPos(4); got != 0xFFFFFFFC {
		t.Errorf("HeaderPos across wrap = %#x", got)
	}
}

func TestMarkerPositions(t *testing.T) {
	// RFC 5044 §4.3: MPA started at sequence number 11.
	if got := decode.MarkerPositions(nil, 11, 11, 1036); !slices.Equal(got, []uint32{11, 523, 1035}) {
		t.Errorf("MarkerPositions(s0=11) = %v", got)
	}
	if got := decode.MarkerPositions(nil, 11, 12, 1035); !slices.Equal(got, []uint32{523}) {
		t.Errorf("MarkerPositions [12,1035) = %v", got)
	}
	if got := decode.MarkerPositions(nil, 11, 100, 100); len(got) != 0 {
		t.Errorf("empty range gave %v", got)
	}
	// Across the 2^32 wrap.
	s0 := uint32(0xFFFFFF00)
	if got := decode.MarkerPositions(nil, s0, 0xFFFFFE00, 0x300); !slices.Equal(got, []uint32{0xFFFFFF00, 0x100}) {
		t.Errorf("MarkerPositions across wrap = %#x", got)
	}
	for _, tc := range []struct {
		pos, s0, next uint32
		is            bool
	}{
		{11, 11, 11, true}, {12, 11, 523, false}, {522, 11, 523, false}, {523, 11, 523, true},
		{0xFFFFFF01, 0xFFFFFF00, 0x100, false}, {0x100, 0xFFFFFF00, 0x100, true},
		{0xFFFFFFFF, 0, 0, false}, {0, 0xFFFFFE00, 0, true},
	} {
		if got := decode.IsMarkerPos(tc.pos, tc.s0); got != tc.is {
			t.Errorf("IsMarkerPos(%#x, %#x) = %v", tc.pos, tc.s0, got)
		}
		if got := decode.NextMarkerPos(tc.pos, tc.s0); got != tc.next {
			t.Errorf("NextMarkerPos(%#x, %#x) = %#x, want %#x", tc.pos, tc.s0, got, tc.next)
		}
	}
}

// RFC 5044 Figure 4: ULPDU_Length 0x0010, 10 ULPDU octets, a marker with
// FPDUPTR 0x000C, 6 more octets, 2 PAD octets, CRC.
func TestMarkerRFCFigure4(t *testing.T) {
	u := fpULPDU(16)
	const s0 = 0x1234567
	pos := uint32(s0 + 512 - 12)
	wire, next := decode.AppendFPDUWithMarkers(nil, pos, s0, u, true)
	want := append([]byte{0x00, 0x10}, u[:10]...)
	want = append(want, 0, 0, 0, 0x0C)
	want = append(want, u[10:]...)
	want = append(want, 0, 0)
	want = binary.LittleEndian.AppendUint32(want, decode.CRC32c(want))
	if !bytes.Equal(wire, want) || next != pos+28 {
		t.Errorf("Figure 4 FPDU = % x (next %#x)\nwant            % x", wire, next, want)
	}
}

// The insertion/stripping round trip of the brief: FPDUs at every 4-aligned
// offset from s0 (0..508), sizes spanning 0-3 markers, near the 2^32 wrap.
func TestMarkerRoundTrip(t *testing.T) {
	sizes := []int{14, 15, 16, 17, 40, 100, 250, 480, 489, 490, 491, 492, 493, 500, 502, 505, 506, 507,
		508, 509, 600, 1000, 1012, 1014, 1016, 1018, 1020, 1442, 1500, 1530}
	var byCount [5]int // FPDUs by markers spanned (4: a leading one plus 3)
	var lead, padCRC, wrapped int
	scratch := make([]byte, 0, decode.FPDULen(65535))
	marks := make([]decode.MarkerAt, 0, 16)
	for _, s0 := range []uint32{0, 11, 0xFFFFFD11, 0xFFFFFFFC} {
		for off := uint32(0); off <= 508; off += 4 {
			pos := s0 + off
			for _, n := range sizes {
				u := fpULPDU(n)
				for _, crcOn := range []bool{true, false} {
					ref := mkEncode(pos, s0, u, crcOn)
					wire, next := decode.AppendFPDUWithMarkers([]byte{0xEE}, pos, s0, u, crcOn)
					if wire[0] != 0xEE || !bytes.Equal(wire[1:], ref.wire) {
						t.Fatalf("s0=%#x off=%d n=%d: AppendFPDUWithMarkers differs from the model\n got % x\nwant % x", s0, off, n, wire[1:], ref.wire)
					}
					wire = wire[1:]
					if next != pos+uint32(len(wire)) {
						t.Fatalf("s0=%#x off=%d n=%d: next %#x, want %#x", s0, off, n, next, pos+uint32(len(wire)))
					}
					if len(ref.marks) >= len(byCount) {
						t.Fatalf("unexpected %d markers", len(ref.marks))
					}
					byCount[len(ref.marks)]++
					for _, m := range ref.marks {
						switch {
						case m.Pos == pos:
							lead++
						case int(m.Pos-pos) == len(wire)-8:
							padCRC++
						}
						if int(m.Pos-pos) > len(wire)-8 {
							t.Fatalf("marker inside the CRC at %d of %d", m.Pos-pos, len(wire))
						}
						if got := decode.ExpectedFPDUPTR(m.Pos, pos, s0); got != m.Marker.FPDUPTR {
							t.Fatalf("ExpectedFPDUPTR = %#x, want %#x", got, m.Marker.FPDUPTR)
						}
						hdr := pos
						if decode.IsMarkerPos(pos, s0) {
							hdr += 4
						}
						if got := m.Marker.HeaderPos(m.Pos); got != hdr {
							t.Fatalf("HeaderPos = %#x, want %#x", got, hdr)
						}
					}
					if pos > next {
						wrapped++
					}

					// Parse it back, followed by octets of a next FPDU.
					in := append(slices.Clip(wire), 0, 0, 0, 0, 0, 20)
					var f decode.FPDU
					got, crc, outMarks, err := decode.ParseFPDUWithMarkers(in, pos, s0, scratch, &f, marks[:0])
					if err != nil || got != len(wire) {
						t.Fatalf("s0=%#x off=%d n=%d: ParseFPDUWithMarkers = %d, %v; want %d", s0, off, n, got, err, len(wire))
					}
					if crc != ref.crc || (crcOn && f.CRC != crc) || (!crcOn && f.CRC != 0) {
						t.Fatalf("s0=%#x off=%d n=%d: crc %#x field %#x, want %#x", s0, off, n, crc, f.CRC, ref.crc)
					}
					if int(f.ULPDULength) != n || !bytes.Equal(f.ULPDU, u) || len(f.Pad) != decode.PadLen(n) {
						t.Fatalf("s0=%#x off=%d n=%d: ULPDU mismatch", s0, off, n)
					}
					if !slices.Equal(outMarks, ref.marks) {
						t.Fatalf("s0=%#x off=%d n=%d: marks %v, want %v", s0, off, n, outMarks, ref.marks)
					}

					// Strip: the marker-free FPDU, with the wire CRC.
					stripped, sm := decode.StripMarkers(nil, nil, wire, pos, s0)
					plain := decode.AppendFPDU(nil, u, false)
					if len(stripped) != len(plain) || !bytes.Equal(stripped[:len(plain)-4], plain[:len(plain)-4]) ||
						!bytes.Equal(stripped[len(plain)-4:], wire[len(wire)-4:]) {
						t.Fatalf("s0=%#x off=%d n=%d: StripMarkers = % x", s0, off, n, stripped)
					}
					if !slices.Equal(sm, ref.marks) {
						t.Fatalf("s0=%#x off=%d n=%d: StripMarkers marks %v, want %v", s0, off, n, sm, ref.marks)
					}
				}
			}
		}
	}
	for c, k := range byCount[:4] {
		if k == 0 {
			t.Errorf("no FPDU spanned %d markers", c)
		}
	}
	if lead == 0 || padCRC == 0 || wrapped == 0 {
		t.Errorf("cases: leading marker %d, marker between PAD and CRC %d, wrapped %d; want all > 0", lead, padCRC, wrapped)
	}
	t.Logf("markers per FPDU: %v; leading %d; between PAD and CRC %d; across 2^32 %d", byCount, lead, padCRC, wrapped)
}

// A stream of FPDUs: parsed one after the other, and stripped in arbitrary
// chunks (markers cut by a chunk boundary are dropped but not reported).
func TestMarkerStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s0 := range []uint32{0, 0xFFFFF000, 0xFFFFFFFC, 77} {
		var wire, plain []byte
		var all []decode.MarkerAt
		var sizes []int
		pos := s0
		for range 60 {
			n := 14 + rng.IntN(1500)
			if rng.IntN(5) == 0 {
				n = 14 + rng.IntN(8)
			}
			sizes = append(sizes, n)
			ref := mkEncode(pos, s0, fpULPDU(n), true)
			all = append(all, ref.marks...)
			var next uint32
			wire, next = decode.AppendFPDUWithMarkers(wire, pos, s0, fpULPDU(n), true)
			plain = append(plain, decode.AppendFPDU(nil, fpULPDU(n), false)...)
			binary.LittleEndian.PutUint32(plain[len(plain)-4:], ref.crc)
			pos = next
		}
		if got := decode.MarkerPositions(nil, s0, s0, pos); len(got) != len(all) {
			t.Fatalf("s0=%#x: %d marker positions, model has %d markers", s0, len(got), len(all))
		}
		// Sequential parse.
		p, off := s0, 0
		var f decode.FPDU
		var marks []decode.MarkerAt
		for i, n := range sizes {
			var err error
			var got int
			var crc uint32
			got, crc, marks, err = decode.ParseFPDUWithMarkers(wire[off:], p, s0, nil, &f, marks)
			if err != nil || int(f.ULPDULength) != n || crc != f.CRC || !bytes.Equal(f.ULPDU, fpULPDU(n)) {
				t.Fatalf("s0=%#x FPDU %d: n=%d err=%v len=%d crc %#x/%#x", s0, i, got, err, f.ULPDULength, crc, f.CRC)
			}
			off += got
			p += uint32(got)
		}
		if off != len(wire) || !slices.Equal(marks, all) {
			t.Fatalf("s0=%#x: parsed %d of %d octets, %d of %d markers", s0, off, len(wire), len(marks), len(all))
		}
		// Chunked strip.
		for range 20 {
			var out []byte
			var sm []decode.MarkerAt
			for o := 0; o < len(wire); {
				c := min(len(wire)-o, 1+rng.IntN(700))
				out, sm = decode.StripMarkers(out, sm, wire[o:o+c], s0+uint32(o), s0)
				o += c
			}
			if !bytes.Equal(out, plain) {
				t.Fatalf("s0=%#x: chunked StripMarkers differs from the marker-free stream", s0)
			}
			j := 0
			for _, m := range sm {
				for j < len(all) && all[j] != m {
					j++
				}
				if j == len(all) {
					t.Fatalf("s0=%#x: StripMarkers reported %v, not in the stream", s0, m)
				}
			}
		}
	}
}

func TestParseFPDUWithMarkersTruncated(t *testing.T) {
	cases := 0
	for _, tc := range []struct {
		off uint32
		n   int
	}{
		{0, 42},    // leading marker
		{492, 42},  // RFC Figure 6: marker inside the DDP header
		{508, 14},  // marker between ULPDU_Length and ULPDU
		{496, 14},  // marker between PAD and CRC: 16 + marker
		{494, 15},  // marker inside the PAD
		{300, 900}, // two inner markers
		{100, 20},  // no marker
	} {
		for _, s0 := range []uint32{5, 0xFFFFFFF0} {
			pos := s0 + tc.off
			u := fpULPDU(tc.n)
			ref := mkEncode(pos, s0, u, true)
			for k := 0; k < len(ref.wire); k++ {
				var f decode.FPDU
				n, _, marks, err := decode.ParseFPDUWithMarkers(ref.wire[:k], pos, s0, nil, &f, nil)
				if n != 0 || len(marks) != 0 {
					t.Errorf("off=%d n=%d k=%d: consumed %d, marks %v on error", tc.off, tc.n, k, n, marks)
				}
				fpWantErr(t, err, decode.Truncated, ref.tags[k])
				var e *decode.Error
				errors.As(err, &e)
				if e.Have != k || (ref.tags[k] != "mpa.ulpdu_length" && e.Need != len(ref.wire)) {
					t.Errorf("off=%d n=%d k=%d: Need %d Have %d, want Need %d", tc.off, tc.n, k, e.Need, e.Have, len(ref.wire))
				}
				cases++
			}
			// The length is checked as soon as it is there.
			short := slices.Clone(ref.wire)
			hdr := 0
			if decode.IsMarkerPos(pos, s0) {
				hdr = 4
			}
			if decode.IsMarkerPos(pos+uint32(hdr), s0) {
				t.Fatal("bad case")
			}
			binary.BigEndian.PutUint16(short[hdr:], 13)
			var f decode.FPDU
			_, _, _, err := decode.ParseFPDUWithMarkers(short[:hdr+2], pos, s0, nil, &f, nil)
			fpWantErr(t, err, decode.Malformed, "mpa.ulpdu_length")
		}
	}
	var sawMarkerField bool
	ref := mkEncode(5+496, 5, fpULPDU(14), true)
	for _, tag := range ref.tags {
		sawMarkerField = sawMarkerField || tag == "mpa.marker"
	}
	if !sawMarkerField {
		t.Error("no case with a marker between PAD and CRC")
	}
	t.Logf("%d truncation points checked", cases)
}

// Positions that are not 4-aligned relative to s0 cannot occur on a
// conforming stream, but encoder, parser and stripper must still agree and
// never fail on them.
func TestMarkerMisaligned(t *testing.T) {
	for _, s0 := range []uint32{0, 0xFFFFFFFE} {
		for off := uint32(0); off < 512; off++ {
			for _, n := range []int{14, 15, 17, 505, 510, 1100} {
				pos := s0 + off
				u := fpULPDU(n)
				wire, next := decode.AppendFPDUWithMarkers(nil, pos, s0, u, true)
				if next != pos+uint32(len(wire)) {
					t.Fatalf("off=%d n=%d: next mismatch", off, n)
				}
				var f decode.FPDU
				got, crc, _, err := decode.ParseFPDUWithMarkers(wire, pos, s0, nil, &f, nil)
				if err != nil || got != len(wire) || crc != f.CRC || !bytes.Equal(f.ULPDU, u) {
					t.Fatalf("off=%d n=%d: parse = %d, %v, crc %#x/%#x", off, n, got, err, crc, f.CRC)
				}
				stripped, _ := decode.StripMarkers(nil, nil, wire, pos, s0)
				var g decode.FPDU
				if m, err := decode.ParseFPDU(stripped, &g); err != nil || m != len(stripped) ||
					!bytes.Equal(g.ULPDU, u) || g.CRC != f.CRC {
					t.Fatalf("off=%d n=%d: stripped parse = %d, %v", off, n, m, err)
				}
				for k := range len(wire) {
					if _, _, _, err := decode.ParseFPDUWithMarkers(wire[:k], pos, s0, nil, &f, nil); !errors.Is(err, decode.ErrTruncated) {
						t.Fatalf("off=%d n=%d k=%d: err %v, want truncated", off, n, k, err)
					}
				}
			}
		}
	}
}

func TestMarkerAllocs(t *testing.T) {
	const s0 = 0xFFFFFF00
	scratch := make([]byte, 0, decode.FPDULen(65535))
	marks := make([]decode.MarkerAt, 0, 8)
	buf := make([]byte, 0, 4096)
	for _, tc := range []struct {
		name string
		off  uint32
	}{{"no marker", 8}, {"leading marker", 0}, {"inner markers", 200}} {
		pos := s0 + tc.off
		wire, _ := decode.AppendFPDUWithMarkers(nil, pos, s0, fpULPDU(1000), true)
		var f decode.FPDU
		a := testing.AllocsPerRun(100, func() {
			_, crc, _, err := decode.ParseFPDUWithMarkers(wire, pos, s0, scratch, &f, marks[:0])
			if err != nil || crc != f.CRC {
				panic("parse failed")
			}
		})
		if a != 0 {
			t.Errorf("ParseFPDUWithMarkers (%s): %v allocs/op, want 0", tc.name, a)
		}
		u := fpULPDU(1000)
		if a := testing.AllocsPerRun(100, func() { buf, _ = decode.AppendFPDUWithMarkers(buf[:0], pos, s0, u, true) }); a != 0 {
			t.Errorf("AppendFPDUWithMarkers (%s): %v allocs/op, want 0", tc.name, a)
		}
		if a := testing.AllocsPerRun(100, func() { buf, marks = decode.StripMarkers(buf[:0], marks[:0], wire, pos, s0) }); a != 0 {
			t.Errorf("StripMarkers (%s): %v allocs/op, want 0", tc.name, a)
		}
	}
}

// TestMarkerArithmetic checks the exported arithmetic a receiver uses
// before it holds a whole FPDU against the byte-at-a-time model: the FPDU's
// wire length, the wire span of its first k non-marker octets, and those
// octets with the markers taken out; on every alignment of pos in a marker
// period (misaligned ones included) and across the 2^32 wrap.
func TestMarkerArithmetic(t *testing.T) {
	sizes := []int{14, 15, 40, 489, 490, 491, 505, 506, 507, 508, 1000, 1016, 1442}
	for _, s0 := range []uint32{0, 11, 0xFFFFFD11, 0xFFFFFFFC} {
		for off := uint32(0); off < 512; off++ {
			pos := s0 + off
			if got := decode.MarkerOffset(pos, s0); got != off {
				t.Fatalf("MarkerOffset(%#x, %#x) = %d, want %d", pos, s0, got, off)
			}
			if off%4 != 0 {
				// The model needs aligned FPDUs; the spans are checked on a
				// plain marked stream below.
				continue
			}
			for _, n := range sizes {
				ref := mkEncode(pos, s0, fpULPDU(n), true)
				if got := decode.FPDUWireLen(pos, s0, n); got != len(ref.wire) {
					t.Fatalf("s0=%#x off=%d n=%d: FPDUWireLen %d, want %d", s0, off, n, got, len(ref.wire))
				}
			}
		}
	}

	// A marked stream: every octet at a marker position (and the three
	// after it) is 0xMM, the others count up, so the non-marker octets
	// from any pos are known without the package's code.
	const s0 = 0xFFFFFE00
	start := uint32(s0 - 1024)
	var wire []byte
	var plain []byte // plain[i]: the non-marker octets from start+i on
	var value byte
	for p := start; p != start+3000; p++ {
		if (p-s0)%512 < 4 {
			wire = append(wire, 0xAA)
		} else {
			value++
			if value == 0xAA {
				value++
			}
			wire = append(wire, value)
		}
	}
	for i := range wire {
		plain = plain[:0]
		for _, b := range wire[i:] {
			if b != 0xAA {
				plain = append(plain, b)
			}
		}
		pos := start + uint32(i)
		for _, k := range []int{0, 1, 2, 20, 507, 508, 509, 1016, 1017, 1100, 1524, 2500} {
			if k > len(plain) {
				continue
			}
			w := decode.WireSpan(pos, s0, k)
			// w octets hold exactly k non-marker octets and end with one.
			cnt := 0
			for _, b := range wire[i : i+w] {
				if b != 0xAA {
					cnt++
				}
			}
			if cnt != k || (k > 0 && wire[i+w-1] == 0xAA) {
				t.Fatalf("pos=%#x k=%d: WireSpan %d holds %d non-marker octets", pos, k, w, cnt)
			}
			got := decode.AppendUnmarked([]byte{0xEE}, wire[i:], pos, s0, k)
			if got[0] != 0xEE || !bytes.Equal(got[1:], plain[:k]) {
				t.Fatalf("pos=%#x k=%d: AppendUnmarked % x, want % x", pos, k, got[1:], plain[:k])
			}
			// Cut short, it gives what there is.
			if cut := w / 2; k > 0 {
				got := decode.AppendUnmarked(nil, wire[i:i+cut], pos, s0, k)
				want, _ := decode.StripMarkers(nil, nil, wire[i:i+cut], pos, s0)
				if !bytes.Equal(got, want) {
					t.Fatalf("pos=%#x k=%d cut=%d: AppendUnmarked % x, want % x", pos, k, cut, got, want)
				}
			}
		}
	}
}
