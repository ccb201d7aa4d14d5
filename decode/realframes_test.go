package decode_test

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/pcap"
)

// realUnits returns every MPA frame and FPDU found whole at the start of a
// TCP payload in the real captures: the ones of Linux siw committed in
// testdata/. They seed the fuzz targets and drive the
// round-trip test.
func realUnits(tb testing.TB) [][]byte {
	tb.Helper()
	var files []string
	for _, pat := range []string{"../testdata/*/*.pcap"} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	var units [][]byte
	for _, name := range files {
		r, err := pcap.Open(name)
		if err != nil {
			tb.Fatal(err)
		}
		var fr pcap.Frame
		var p pcap.Packet
		for {
			err := r.Next(&fr)
			if err == io.EOF {
				break
			}
			if err != nil {
				tb.Fatal(err)
			}
			if pcap.DecodeTCP(fr.LinkType, fr.Data, &p) != nil || len(p.Payload) == 0 {
				continue
			}
			b := p.Payload
			for len(b) > 0 {
				var f decode.MPAFrame
				var fp decode.FPDU
				n, err := decode.ParseMPAFrame(b, &f)
				if err != nil {
					if n, err = decode.ParseFPDU(b, &fp); err != nil {
						break
					}
				}
				units = append(units, append([]byte(nil), b[:n]...))
				b = b[n:]
			}
		}
		r.Close()
	}
	if len(units) < 20 {
		tb.Fatalf("only %d real PDUs found", len(units))
	}
	return units
}

// Every real PDU decodes and re-encodes to the same octets; the siw
// Terminates re-encode in the RFC layout and keep their meaning.
func TestRealFramesRoundTrip(t *testing.T) {
	counts := map[string]int{}
	for _, u := range realUnits(t) {
		var f decode.MPAFrame
		if _, ok := decode.IsMPAKey(u); ok {
			if _, err := decode.ParseMPAFrame(u, &f); err != nil {
				t.Fatal(err)
			}
			if got := f.Append(nil); !bytes.Equal(got, u) {
				t.Errorf("MPA frame\n got % x\nwant % x", got, u)
			}
			counts["mpa"]++
			continue
		}
		var p decode.PDU
		if _, err := decode.DecodeFPDU(u, decode.CRCUseUnknown, &p); err != nil {
			t.Fatal(err)
		}
		if p.SegErr != nil {
			t.Errorf("real FPDU % x: %v", u, p.SegErr)
			continue
		}
		counts[p.Seg.RDMAP.Opcode.Short()]++
		got := p.Seg.Append(nil)
		if p.Seg.RDMAP.Opcode == decode.OpTerminate && p.Seg.Terminate.SiwEncoding {
			var again decode.Segment
			if err := decode.ParseSegment(got, &again); err != nil {
				t.Fatal(err)
			}
			if again.Terminate.Cause() != p.Seg.Terminate.Cause() || again.Terminate.SiwEncoding {
				t.Errorf("siw Terminate re-encoded as %v", again.Terminate.Cause())
			}
			counts["siw-terminate"]++
			continue
		}
		if !bytes.Equal(got, p.FPDU.ULPDU) {
			t.Errorf("%s\n got % x\nwant % x", p.Seg.RDMAP.Opcode, got, p.FPDU.ULPDU)
		}
	}
	t.Logf("real PDUs by kind: %v", counts)
}

// FuzzPDU feeds arbitrary octets through everything a PDU passes: FPDU and
// segment decode, the summary line, every field of the table, and the
// gopacket layers.
func FuzzPDU(f *testing.F) {
	for _, u := range realUnits(f) {
		f.Add(u)
	}
	fields := decode.Fields()
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 4096 {
			return
		}
		var p decode.PDU
		crc := decode.CRCUseOn
		n, err := decode.DecodeFPDU(b, crc, &p)
		if err != nil {
			var de *decode.Error
			if !errors.As(err, &de) {
				t.Fatalf("untyped error %v", err)
			}
		} else {
			checkFPDURoundTrip(t, b, n, &p)
		}
		p.AppendSummary(nil)
		for i := range fields {
			if v, ok := fields[i].Get(&p); ok {
				fields[i].AppendValue(nil, v)
			}
		}
		mpa, ddp := &decode.MPA{}, &decode.DDP{}
		parser := gopacket.NewDecodingLayerParser(decode.LayerTypeMPA, mpa, ddp, &decode.RDMAP{DDP: ddp})
		parser.IgnoreUnsupported = true
		var lts []gopacket.LayerType
		_ = parser.DecodeLayers(b, &lts)
		if _, key := decode.IsMPAKey(b); err == nil && !key {
			// The gopacket layers see the FPDU DecodeFPDU saw.
			if len(lts) == 0 || mpa.FPDU.ULPDULength != p.FPDU.ULPDULength || mpa.FPDU.CRC != p.FPDU.CRC {
				t.Fatalf("MPA layer %+v (layers %v), DecodeFPDU %+v", mpa.FPDU, lts, p.FPDU)
			}
		}
	})
}

// checkFPDURoundTrip: an FPDU DecodeFPDU took from b is n = FPDULen
// octets, its CRC verdict is the CRC32c's, and encoding its ULPDU again
// (zero PAD, the CRC computed) gives b's octets back wherever its PAD was
// zero and its CRC good.
func checkFPDURoundTrip(t *testing.T, b []byte, n int, p *decode.PDU) {
	t.Helper()
	if n > len(b) || n != decode.FPDULen(len(p.FPDU.ULPDU)) || int(p.FPDU.ULPDULength) != len(p.FPDU.ULPDU) {
		t.Fatalf("n %d of %d, ULPDU_Length %d, ULPDU %d", n, len(b), p.FPDU.ULPDULength, len(p.FPDU.ULPDU))
	}
	if good := p.ComputedCRC == p.FPDU.CRC; good != (p.CRCStatus == decode.CRCGood) || !good && p.CRCStatus != decode.CRCBad {
		t.Fatalf("CRC %#x computed %#x: status %v", p.FPDU.CRC, p.ComputedCRC, p.CRCStatus)
	}
	if p.CRCStatus == decode.CRCGood && bytes.Count(p.FPDU.Pad, []byte{0}) == len(p.FPDU.Pad) {
		if enc := decode.AppendFPDU(nil, p.FPDU.ULPDU, true); !bytes.Equal(enc, b[:n]) {
			t.Fatalf("re-encoded % x, want % x", enc, b[:n])
		}
	}
}
