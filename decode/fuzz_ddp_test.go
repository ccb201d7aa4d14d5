package decode

import (
	"reflect"
	"testing"
)

// Seeds: real frames (SoftUiWARP captures), the Terminates siw sends, and
// one segment per opcode.
func ddpFuzzSeeds(f *testing.F) {
	for _, s := range segmentFixtures {
		f.Add(ddpHex(f, s.hex))
	}
	for _, s := range []string{
		// siw Terminate: invalid STag on a Read Request, M/D/R
		"41 47 00000000 00000002 00000001 00000000 10 00 07 00 0000 " + termCopyRR + " " + termCopyRRHdr,
		// siw DDP tagged base/bounds, siw DDP untagged no buffer, siw MPA CRC
		"41 47 00000000 00000002 00000001 00000000 11 01 03 00 0400 " + termCopyTagged,
		"41 47 00000000 00000002 00000001 00000000 21 02 03 00 0010 " + termCopySend,
		"41 47 00000000 00000002 00000001 00000000 02 02 00 00",
		// RFC encodings
		"41 47 00000000 00000002 00000001 00000000 01 00 e0 00 0000 " + termCopyRR + " " + termCopyRRHdr,
		"41 47 00000000 00000002 00000001 00000000 12 02 c0 00 0010 " + termCopySend,
		"41 47 00000000 00000002 00000001 00000000 00 00 00 00",
		// RTR zero-length write
		"c1 40 00000000 0000000000000000",
		// SoftUiWARP Read Request (rping f10)
		"41 41 00000000 00000001 00000001 00000000 40cc4300 0000563616bbc670 00000040 ffffe080 00007fffffffe080",
	} {
		f.Add(ddpHex(f, s))
	}
}

func FuzzDDP(f *testing.F) {
	ddpFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var h DDPHeader
		n, err := ParseDDP(b, &h)
		if err != nil {
			if n != 0 {
				t.Fatalf("n = %d on error", n)
			}
			return
		}
		if n != h.Len() || n > len(b) {
			t.Fatalf("n = %d, Len %d, len %d", n, h.Len(), len(b))
		}
		enc := h.Append(nil)
		if string(enc) != string(b[:n]) {
			t.Fatalf("Append %x, want %x", enc, b[:n])
		}
		var back DDPHeader
		if _, err := ParseDDP(enc, &back); err != nil || back != h {
			t.Fatalf("re-decode %+v %v", back, err)
		}
	})
}

func FuzzRDMAP(f *testing.F) {
	ddpFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		var s Segment
		if err := ParseSegment(b, &s); err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("untyped error %T", err)
			}
			return
		}
		if s.HdrLen+len(s.Payload) != len(b) {
			t.Fatalf("HdrLen %d + payload %d != %d", s.HdrLen, len(s.Payload), len(b))
		}
		enc := s.Append(nil)
		if !s.Terminate.SiwEncoding && string(enc) != string(b) {
			t.Fatalf("Append %x, want %x", enc, b)
		}
		var back Segment
		if err := ParseSegment(enc, &back); err != nil {
			t.Fatalf("re-decode of %x: %v", enc, err)
		}
		if !segmentsEquivalent(&s, &back) {
			t.Fatalf("re-decode differs:\n%+v\n%+v", back, s)
		}
		if back.Terminate.SiwEncoding {
			t.Fatal("RFC encoding read as siw's")
		}
	})
}

func FuzzTerminate(f *testing.F) {
	ddpFuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		// Seeds are whole segments; fuzz the Terminate header both as it
		// stands and after an 18-octet DDP header.
		for _, in := range [][]byte{b, tail18(b)} {
			var tm Terminate
			n, err := ParseTerminate(in, &tm)
			if err != nil {
				if _, ok := err.(*Error); !ok || n != 0 {
					t.Fatalf("err %v n %d", err, n)
				}
				continue
			}
			if n > len(in) || n != tm.Len() {
				t.Fatalf("n %d Len %d len %d", n, tm.Len(), len(in))
			}
			enc := tm.Append(nil)
			if !tm.SiwEncoding && string(enc) != string(in[:n]) {
				t.Fatalf("Append %x, want %x", enc, in[:n])
			}
			enc = append(enc, in[n:]...)
			var back Terminate
			m, err := ParseTerminate(enc, &back)
			if err != nil || m != len(enc)-(len(in)-n) {
				t.Fatalf("re-decode of %x: m %d err %v", enc, m, err)
			}
			if back.SiwEncoding {
				t.Fatalf("RFC encoding %x read as siw's", enc)
			}
			if tm.SiwEncoding {
				if back.Control() != tm.Control() {
					t.Fatalf("siw %+v re-decodes as %+v", tm.Control(), back.Control())
				}
				back.Raw, back.SiwEncoding = tm.Raw, true
			}
			back.TermDDPRaw, back.TermRDMARaw = tm.TermDDPRaw, tm.TermRDMARaw
			if !reflect.DeepEqual(back, tm) {
				t.Fatalf("re-decode differs:\n%+v\n%+v", back, tm)
			}
		}
	})
}

func tail18(b []byte) []byte {
	if len(b) < DDPUntaggedHdrLen {
		return nil
	}
	return b[DDPUntaggedHdrLen:]
}
