package pcap

import (
	"bytes"
	"testing"
)

// checkReadBack reads every frame of data (at most 10000), writes those of
// the first frame's link type with a Writer, in both formats, and reads
// them back: the same frames in the same order, octet for octet, with the
// same lengths on the wire. Timestamps come back too where the classic
// format can hold them (32-bit seconds since 1970).
func checkReadBack(t *testing.T, data []byte) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data))
	if err != nil {
		return
	}
	var in []Frame
	var fr Frame
	for i := 0; i < 10000 && r.Next(&fr) == nil; i++ {
		if len(in) > 0 && fr.LinkType != in[0].LinkType {
			continue
		}
		if len(fr.Data) != fr.CapLen {
			t.Fatalf("frame %d: CapLen %d, %d octets", fr.Number, fr.CapLen, len(fr.Data))
		}
		if fr.CapLen > MaxSnaplen || fr.OrigLen < fr.CapLen {
			continue // the Writer writes such a frame as given; readers refuse it
		}
		f := fr
		f.Data = append([]byte(nil), fr.Data...)
		in = append(in, f)
	}
	if len(in) == 0 {
		return
	}
	for _, format := range []Format{FormatPcap, FormatPcapNG} {
		var buf bytes.Buffer
		w, err := NewWriter(&buf, format, in[0].LinkType, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range in {
			if err := w.WriteFrame(f.Timestamp, f.Data, f.OrigLen); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		back, err := NewReader(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("%s: reading back: %v", format, err)
		}
		for i, want := range in {
			var got Frame
			if err := back.Next(&got); err != nil {
				t.Fatalf("%s: frame %d of %d: %v", format, i+1, len(in), err)
			}
			if got.LinkType != want.LinkType || got.OrigLen != want.OrigLen || !bytes.Equal(got.Data, want.Data) {
				t.Fatalf("%s: frame %d: %v %d %d octets, want %v %d %d", format, i+1, got.LinkType, got.OrigLen, got.CapLen, want.LinkType, want.OrigLen, want.CapLen)
			}
			if s := want.Timestamp.Unix(); format == FormatPcap && s >= 0 && s < 1<<32 && !got.Timestamp.Equal(want.Timestamp) {
				t.Fatalf("%s: frame %d at %v, want %v", format, i+1, got.Timestamp, want.Timestamp)
			}
		}
		var extra Frame
		if back.Next(&extra) == nil {
			t.Fatalf("%s: a frame more than written", format)
		}
	}
}
