package decode

import (
	"encoding/binary"
	"testing"
)

// Copied headers used in the Terminate fixtures.
const (
	// untagged DDP header of an RDMA Read Request (QN 1, MSN 1, MO 0)
	termCopyRR = "41 41 00000000 00000001 00000001 00000000"
	// its Read Request header (SoftUiWARP rping frame 10)
	termCopyRRHdr = "40cc4300 0000563616bbc670 00000040 ffffe080 00007fffffffe080"
	// untagged DDP header of a Send (QN 0, MSN 5)
	termCopySend = "41 43 00000000 00000000 00000005 00000000"
	// untagged DDP header of a Send with Invalidate
	termCopySendInv = "41 44 0000abcd 00000000 00000003 00000000"
	// tagged DDP header of an RDMA Read Response
	termCopyTagged = "c1 42 40cc4300 0000563616bbc670"
)

// termWord builds a control word in the RFC 5040 layout.
func termWord(layer, etype, code uint8, m, d, r bool) [4]byte {
	var o2 uint8
	if m {
		o2 |= TermM
	}
	if d {
		o2 |= TermD
	}
	if r {
		o2 |= TermR
	}
	return [4]byte{layer<<4 | etype, code, o2, 0}
}

// termWordSiw builds a control word as Linux siw on x86 writes it.
func termWordSiw(layer, etype, code uint8, m, d, r bool) [4]byte {
	var o2 uint8
	if m {
		o2 |= 1
	}
	if d {
		o2 |= 2
	}
	if r {
		o2 |= 4
	}
	return [4]byte{etype<<4 | layer, code, o2, 0}
}

// termBody joins a control word, an optional segment length and copies.
func termBody(t testing.TB, w [4]byte, segLen int, copies ...string) []byte {
	b := append([]byte(nil), w[:]...)
	if segLen >= 0 {
		b = binary.BigEndian.AppendUint16(b, uint16(segLen))
	}
	for _, c := range copies {
		b = append(b, ddpHex(t, c)...)
	}
	return b
}

type termWant struct {
	layer, etype, code uint8
	m, d, r            bool
	siw                bool
	segLen             int    // -1: absent
	ddpCopy            string // "" none, else hex of the copy
	rdmaCopy           bool
}

func checkTerm(t *testing.T, b []byte, want termWant) *Terminate {
	t.Helper()
	var tm Terminate
	n, err := ParseTerminate(b, &tm)
	if err != nil {
		t.Fatalf("%x: %v", b, err)
	}
	if n != len(b) {
		t.Fatalf("%x: consumed %d of %d", b, n, len(b))
	}
	if tm.Layer != want.layer || tm.EType != want.etype || tm.Code != want.code ||
		tm.M != want.m || tm.D != want.d || tm.R != want.r || tm.SiwEncoding != want.siw {
		t.Fatalf("%x: got %d/%d/%#x M%v D%v R%v siw=%v, want %+v", b, tm.Layer, tm.EType, tm.Code,
			tm.M, tm.D, tm.R, tm.SiwEncoding, want)
	}
	if tm.Reserved != 0 {
		t.Fatalf("%x: Reserved %#x", b, tm.Reserved)
	}
	if [4]byte(b[:4]) != tm.Raw {
		t.Fatalf("Raw %x", tm.Raw)
	}
	if tm.HasSegLen != (want.segLen >= 0) || (want.segLen >= 0 && int(tm.DDPSegmentLength) != want.segLen) {
		t.Fatalf("%x: seg len %v %d, want %d", b, tm.HasSegLen, tm.DDPSegmentLength, want.segLen)
	}
	if tm.HasDDP != (want.ddpCopy != "") {
		t.Fatalf("%x: HasDDP %v", b, tm.HasDDP)
	}
	if tm.HasDDP {
		cp := ddpHex(t, want.ddpCopy)
		if string(tm.TermDDPRaw) != string(cp) || string(tm.TermDDP.Append(nil)) != string(cp) || tm.TermDDP.Len() != len(cp) {
			t.Fatalf("%x: DDP copy %x (%+v), want %x", b, tm.TermDDPRaw, tm.TermDDP, cp)
		}
	}
	if tm.HasRDMA != want.rdmaCopy {
		t.Fatalf("%x: HasRDMA %v", b, tm.HasRDMA)
	}
	if tm.HasRDMA {
		if string(tm.TermRDMARaw) != string(ddpHex(t, termCopyRRHdr)) || tm.TermRDMA.Size != 64 {
			t.Fatalf("%x: RDMA copy %x", b, tm.TermRDMARaw)
		}
	}
	if tm.Len() != n {
		t.Fatalf("Len %d, n %d", tm.Len(), n)
	}
	// Append writes the RFC encoding of the same meaning.
	enc := tm.Append(nil)
	if !tm.SiwEncoding && string(enc) != string(b) {
		t.Fatalf("Append %x, want %x", enc, b)
	}
	var back Terminate
	if _, err := ParseTerminate(enc, &back); err != nil {
		t.Fatal(err)
	}
	if back.SiwEncoding || back.Control() != tm.Control() || back.HasDDP != tm.HasDDP || back.HasRDMA != tm.HasRDMA ||
		back.TermDDP != tm.TermDDP || back.TermRDMA != tm.TermRDMA || back.DDPSegmentLength != tm.DDPSegmentLength {
		t.Fatalf("re-decode of %x: %+v, want %+v", enc, back, tm)
	}
	return &tm
}

// The Terminates siw really sends (drivers/infiniband/sw/siw/siw_qp.c,
// siw_send_terminate), in siw's encoding, and the same meaning in the RFC
// encoding.
func TestTerminateSiw(t *testing.T) {
	tests := []struct {
		name   string
		wire   string // control word as siw sends it
		rfc    string // control word in RFC 5040 layout
		segLen int
		copies []string
		want   termWant
	}{
		{"invalid STag on Read Request, RDMAP/1/0, M/D/R", "10 00 07 00", "01 00 e0 00", 0,
			[]string{termCopyRR, termCopyRRHdr},
			termWant{0, 1, 0, true, true, true, true, 0, termCopyRR, true}},
		{"DDP tagged base/bounds 0x1/0x1/0x01, M/D", "11 01 03 00", "11 01 c0 00", 1024,
			[]string{termCopyTagged},
			termWant{1, 1, 1, true, true, false, true, 1024, termCopyTagged, false}},
		{"DDP untagged no buffer 0x1/0x2/0x02, M/D", "21 02 03 00", "12 02 c0 00", 16,
			[]string{termCopySend},
			termWant{1, 2, 2, true, true, false, true, 16, termCopySend, false}},
		{"MPA CRC 0x2/0x0/0x02, no headers", "02 02 00 00", "20 02 00 00", -1, nil,
			termWant{2, 0, 2, false, false, false, true, -1, "", false}},
		{"Send with Invalidate, cannot invalidate, M/D/R without RDMA header", "10 09 07 00", "01 09 e0 00", 0,
			[]string{termCopySendInv},
			termWant{0, 1, 9, true, true, true, true, 0, termCopySendInv, false}},
		{"Remote Operation catastrophic stream, tagged copy", "20 07 03 00", "02 07 c0 00", 512,
			[]string{termCopyTagged},
			termWant{0, 2, 7, true, true, false, true, 512, termCopyTagged, false}},
		{"DDP untagged invalid version, no headers", "21 06 00 00", "12 06 00 00", -1, nil,
			termWant{1, 2, 6, false, false, false, true, -1, "", false}},
		{"MPA TCP lost, no headers", "02 01 00 00", "20 01 00 00", -1, nil,
			termWant{2, 0, 1, false, false, false, true, -1, "", false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := [4]byte(ddpHex(t, tt.wire))
			tm := checkTerm(t, termBody(t, w, tt.segLen, tt.copies...), tt.want)
			if c := tm.Cause(); !c.Known {
				t.Fatalf("cause %v not known", c)
			}
			rfcWant := tt.want
			rfcWant.siw = false
			checkTerm(t, termBody(t, [4]byte(ddpHex(t, tt.rfc)), tt.segLen, tt.copies...), rfcWant)
		})
	}
}

// Control words siw sends that read as a different defined cause in the
// RFC layout: no flags, both readings defined. The decoder keeps the RFC
// reading; ParseTermControlSiw gives siw's.
func TestTerminateSiwAmbiguous(t *testing.T) {
	for _, tt := range []struct {
		wire        [4]byte
		rfc, siw    [3]uint8
		description string
	}{
		{[4]byte{0x20, 0x06, 0, 0}, [3]uint8{2, 0, 6}, [3]uint8{0, 2, 6}, "Unexpected OpCode vs Insufficient IRD"},
		{[4]byte{0x20, 0x05, 0, 0}, [3]uint8{2, 0, 5}, [3]uint8{0, 2, 5}, "Invalid RDMAP version vs MPA local catastrophic"},
		{[4]byte{0x02, 0x07, 0, 0}, [3]uint8{0, 2, 7}, [3]uint8{2, 0, 7}, "No matching RTR vs catastrophic stream"},
	} {
		var tm Terminate
		if _, err := ParseTerminate(tt.wire[:], &tm); err != nil {
			t.Fatal(err)
		}
		if tm.SiwEncoding || [3]uint8{tm.Layer, tm.EType, tm.Code} != tt.rfc {
			t.Errorf("%s: %+v", tt.description, tm)
		}
		s := ParseTermControlSiw(tm.Raw)
		if [3]uint8{s.Layer, s.EType, s.Code} != tt.siw || !s.Cause().Known {
			t.Errorf("%s: siw reading %+v", tt.description, s)
		}
	}
}

// RFC-conformant Terminates are never taken for siw's.
func TestTerminateRFCNotSiw(t *testing.T) {
	checkTerm(t, termBody(t, [4]byte{0x01, 0x00, 0xE0, 0x00}, 0, termCopyRR, termCopyRRHdr),
		termWant{0, 1, 0, true, true, true, false, 0, termCopyRR, true})
	checkTerm(t, termBody(t, [4]byte{0x12, 0x02, 0xC0, 0x00}, 16, termCopySend),
		termWant{1, 2, 2, true, true, false, false, 16, termCopySend, false})
	checkTerm(t, termBody(t, [4]byte{}, -1), termWant{0, 0, 0, false, false, false, false, -1, "", false})
	checkTerm(t, termBody(t, [4]byte{0x00, 0xFF, 0, 0}, -1), termWant{0, 0, 0xFF, false, false, false, false, -1, "", false})
	checkTerm(t, termBody(t, [4]byte{0x20, 0x02, 0, 0}, -1), termWant{2, 0, 2, false, false, false, false, -1, "", false})
	// Symmetric nibbles, no flags: identical readings, RFC.
	checkTerm(t, termBody(t, [4]byte{0x11, 0x04, 0, 0}, -1), termWant{1, 1, 4, false, false, false, false, -1, "", false})
}

// Every cause of the table, encoded as RFC 5040 Figure 10 says, decodes to
// itself; encoded as siw would send it, decodes to itself too unless both
// readings of a flagless word are defined (TestTerminateSiwAmbiguous).
func TestTerminateEveryCause(t *testing.T) {
	for _, c := range TermCauses() {
		var d, r bool
		var copies []string
		ddpCopy := ""
		switch {
		case c.Layer == TermLayerRDMAP && c.EType == 1:
			d, r, copies, ddpCopy = true, true, []string{termCopyRR, termCopyRRHdr}, termCopyRR
		case c.Layer == TermLayerRDMAP && c.EType == 2:
			d, copies, ddpCopy = true, []string{termCopySend}, termCopySend
		case c.Layer == TermLayerDDP && c.EType == 1:
			d, copies, ddpCopy = true, []string{termCopyTagged}, termCopyTagged
		case c.Layer == TermLayerDDP:
			d, copies, ddpCopy = true, []string{termCopySend}, termCopySend
		}
		segLen := -1
		if d {
			segLen = 100
		}
		want := termWant{c.Layer, c.EType, c.Code, d, d, r, false, segLen, ddpCopy, r}
		tm := checkTerm(t, termBody(t, termWord(c.Layer, c.EType, c.Code, d, d, r), segLen, copies...), want)
		if tm.Cause() != c {
			t.Fatalf("%v: cause %v", c, tm.Cause())
		}

		// siw's encoding of the same Terminate.
		siwBytes := termBody(t, termWordSiw(c.Layer, c.EType, c.Code, d, d, r), segLen, copies...)
		var st Terminate
		if _, err := ParseTerminate(siwBytes, &st); err != nil {
			t.Fatal(err)
		}
		swapped := LookupTermCause(c.EType, c.Layer, c.Code)
		ambiguous := !d && swapped.Known && c.Layer != c.EType
		same := c.Layer == c.EType && !d
		switch {
		case ambiguous:
			if st.SiwEncoding || st.Layer != c.EType || st.EType != c.Layer {
				t.Errorf("%v (siw, ambiguous): %+v", c, st)
			}
		case same:
			if st.SiwEncoding || st.Cause() != c {
				t.Errorf("%v (siw, same reading): %+v", c, st)
			}
		default:
			want.siw = true
			checkTerm(t, siwBytes, want)
		}
	}
}

// The copied DDP header is sized by its own T bit, whatever the EType says.
func TestTerminateCopySizedByTBit(t *testing.T) {
	// DDP / Untagged Buffer error (EType 2) with a tagged copy.
	checkTerm(t, termBody(t, termWord(1, 2, 1, true, true, false), 8, termCopyTagged),
		termWant{1, 2, 1, true, true, false, false, 8, termCopyTagged, false})
	// DDP / Tagged Buffer error (EType 1) with an untagged copy.
	checkTerm(t, termBody(t, termWord(1, 1, 0, true, true, false), 8, termCopySend),
		termWant{1, 1, 0, true, true, false, false, 8, termCopySend, false})
	// Remote Protection with a tagged copy followed by a Read Request header.
	checkTerm(t, termBody(t, termWord(0, 1, 2, true, true, true), 0, termCopyTagged, termCopyRRHdr),
		termWant{0, 1, 2, true, true, true, false, 0, termCopyTagged, true})
	// siw encoding with an untagged copy under EType 1.
	checkTerm(t, termBody(t, termWordSiw(1, 1, 1, true, true, false), 0, termCopySend),
		termWant{1, 1, 1, true, true, false, true, 0, termCopySend, false})
}

func TestTerminateHdrCtCombinations(t *testing.T) {
	// M without D: the Segment Length is not there (present iff D).
	checkTerm(t, termBody(t, termWord(0, 2, 6, true, false, false), -1),
		termWant{0, 2, 6, true, false, false, false, -1, "", false})
	// D without M: present (not valid).
	checkTerm(t, termBody(t, termWord(1, 2, 4, false, true, false), 0, termCopySend),
		termWant{1, 2, 4, false, true, false, false, 0, termCopySend, false})
	// R without D: the Read Request header follows the control word.
	checkTerm(t, termBody(t, termWord(0, 1, 0, false, false, true), -1, termCopyRRHdr),
		termWant{0, 1, 0, false, false, true, false, -1, "", true})
	// Octets after the header are not consumed.
	b := append(termBody(t, termWord(2, 0, 2, false, false, false), -1), 0, 0, 0, 0)
	var tm Terminate
	if n, err := ParseTerminate(b, &tm); err != nil || n != 4 || tm.SiwEncoding {
		t.Fatalf("n=%d err=%v %+v", n, err, tm)
	}
	// Reserved bits are kept.
	if _, err := ParseTerminate([]byte{0x01, 0x00, 0x1F, 0xFF}, &tm); err != nil || tm.Reserved != 0x1FFF || tm.SiwEncoding {
		t.Fatalf("%v %+v", err, tm)
	}
	if got := tm.Append(nil); string(got) != "\x01\x00\x1f\xff" {
		t.Fatalf("Append %x", got)
	}
}

func TestTerminateTruncation(t *testing.T) {
	// RFC D+R with an untagged copy.
	b := termBody(t, termWord(0, 1, 0, true, true, true), 0, termCopyRR, termCopyRRHdr)
	var tm Terminate
	for i := 0; i < len(b); i++ {
		_, err := ParseTerminate(b[:i], &tm)
		switch {
		case i < 4:
			ddpWantTrunc(t, err, "rdmap", "rdmap.term.raw", 4, i)
		case i < 6:
			ddpWantTrunc(t, err, "rdmap", "rdmap.term.ddp_seg_len", 6, i)
		case i == 6:
			ddpWantTrunc(t, err, "rdmap", "rdmap.term.ddp_header", 20, i)
		case i < 24:
			ddpWantTrunc(t, err, "rdmap", "rdmap.term.ddp_header", 24, i)
		default:
			ddpWantTrunc(t, err, "rdmap", "rdmap.term.rdma_header", 52, i)
		}
	}
	// Tagged copy.
	b = termBody(t, termWord(1, 1, 1, true, true, false), 0, termCopyTagged)
	for i := 7; i < len(b); i++ {
		_, err := ParseTerminate(b[:i], &tm)
		ddpWantTrunc(t, err, "rdmap", "rdmap.term.ddp_header", 20, i)
	}
	// A cut siw Terminate cannot be read as siw's; it falls back to the
	// RFC reading of the control word and leaves the octets over.
	b = termBody(t, termWordSiw(0, 1, 0, true, true, true), 0, termCopyRR, termCopyRRHdr)
	n, err := ParseTerminate(b[:30], &tm)
	if err != nil || n != 4 || tm.SiwEncoding || tm.Layer != 1 || tm.EType != 0 || tm.Reserved != 0x0700 {
		t.Fatalf("cut siw: n=%d err=%v %+v", n, err, tm)
	}
}

func TestTermControlReadings(t *testing.T) {
	raw := [4]byte{0x10, 0x00, 0x07, 0x00}
	if c := ParseTermControl(raw); c != (TermControl{Layer: 1, Reserved: 0x0700}) {
		t.Fatalf("RFC reading %+v", c)
	}
	if c := ParseTermControlSiw(raw); c != (TermControl{EType: 1, M: true, D: true, R: true}) {
		t.Fatalf("siw reading %+v", c)
	}
	if c := ParseTermControlSiw([4]byte{0x21, 0x02, 0xFB, 0x01}); c.Reserved != 0x1F|0x01<<5 || !c.M || !c.D || c.R {
		t.Fatalf("siw reserved %+v", c)
	}
	for _, w := range [][4]byte{{0x01, 0x00, 0xE0, 0x00}, {0x12, 0x06, 0xDF, 0xFF}, {0xFF, 0xFF, 0xFF, 0xFF}} {
		if got := ParseTermControl(w).Append(nil); string(got) != string(w[:]) {
			t.Fatalf("%x re-encodes as %x", w, got)
		}
	}
}

func TestParseTerminateNoAlloc(t *testing.T) {
	siw := termBody(t, termWordSiw(0, 1, 0, true, true, true), 0, termCopyRR, termCopyRRHdr)
	rfc := termBody(t, termWord(0, 1, 0, true, true, true), 0, termCopyRR, termCopyRRHdr)
	var tm Terminate
	for _, b := range [][]byte{siw, rfc} {
		if a := testing.AllocsPerRun(100, func() { _, _ = ParseTerminate(b, &tm) }); a != 0 {
			t.Fatalf("ParseTerminate allocates %v", a)
		}
	}
}
