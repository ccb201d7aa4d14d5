package decode

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// A gopacket user builds an iWARP frame with SerializeLayers and decodes it
// with NewPacket and with a DecodingLayerParser.
func TestGopacketRoundTrip(t *testing.T) {
	RegisterTCPPort(4420)
	segs := []Segment{
		{DDP: DDPHeader{Last: true, DV: 1, QN: 1, MSN: 1}, RDMAP: RDMAPControl{RV: 1, Opcode: OpReadRequest},
			ReadRequest: ReadRequest{SinkSTag: 0x1234, SinkTO: 0x1000, Size: 4096, SrcSTag: 0x5678, SrcTO: 0x2000}},
		{DDP: DDPHeader{Tagged: true, Last: true, DV: 1, STag: 0x1234, TO: 0x1000}, RDMAP: RDMAPControl{RV: 1, Opcode: OpReadResponse}, Payload: []byte("hello, iwarp")},
		{DDP: DDPHeader{Last: true, DV: 1, QN: 0, MSN: 5}, RDMAP: RDMAPControl{RV: 1, Opcode: OpSendSEInv}, InvalidateSTag: 0xabcd, Payload: []byte{1, 2, 3}},
		{DDP: DDPHeader{Last: true, DV: 1, QN: 2, MSN: 1}, RDMAP: RDMAPControl{RV: 1, Opcode: OpTerminate},
			Terminate: Terminate{Layer: 1, EType: 2, Code: 3, M: true, D: true, HasSegLen: true, DDPSegmentLength: 20, HasDDP: true, TermDDP: DDPHeader{Last: true, DV: 1, RsvdULP: 0x43, MSN: 9}}},
	}
	for _, seg := range segs {
		ddp := &DDP{}
		rdmap := &RDMAP{DDP: ddp}
		rdmap.SetSegment(&seg)
		mpa := &MPA{}
		buf := gopacket.NewSerializeBuffer()
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2}}
		tcp := &layers.TCP{SrcPort: 50000, DstPort: 4420, ACK: true, Window: 1000}
		tcp.SetNetworkLayerForChecksum(ip)
		err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
			&layers.Ethernet{SrcMAC: net.HardwareAddr{0, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{0, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4},
			ip, tcp, mpa, ddp, rdmap, gopacket.Payload(seg.Payload))
		if err != nil {
			t.Fatal(err)
		}
		// The FPDU gopacket built is the one our own encoder builds.
		want := AppendFPDU(nil, seg.Append(nil), true)
		if !bytes.HasSuffix(buf.Bytes(), want) {
			t.Fatalf("%s: gopacket built % x\nwant suffix % x", seg.RDMAP.Opcode, buf.Bytes(), want)
		}

		pkt := gopacket.NewPacket(buf.Bytes(), layers.LayerTypeEthernet, gopacket.DecodeOptions{DecodeStreamsAsDatagrams: true})
		if el := pkt.ErrorLayer(); el != nil {
			t.Fatalf("%s: %v", seg.RDMAP.Opcode, el.Error())
		}
		l := pkt.Layer(LayerTypeRDMAP)
		if l == nil {
			t.Fatalf("%s: no RDMAP layer in %v", seg.RDMAP.Opcode, pkt)
		}
		got := l.(*RDMAP).Seg
		if got.RDMAP.Opcode != seg.RDMAP.Opcode || !bytes.Equal(got.Payload, seg.Payload) || got.ReadRequest != seg.ReadRequest ||
			got.InvalidateSTag != seg.InvalidateSTag || got.Terminate.Code != seg.Terminate.Code {
			t.Errorf("NewPacket decoded %+v, want %+v", got, seg)
		}
		if m := pkt.Layer(LayerTypeMPA).(*MPA); !m.FPDU.CRCOK() {
			t.Error("CRC not good")
		}

		// DecodingLayerParser, starting at the TCP payload.
		m2, d2 := &MPA{}, &DDP{}
		r2 := &RDMAP{DDP: d2}
		parser := gopacket.NewDecodingLayerParser(LayerTypeMPA, m2, d2, r2)
		parser.IgnoreUnsupported = true
		var decoded []gopacket.LayerType
		if err := parser.DecodeLayers(want, &decoded); err != nil {
			t.Fatal(err)
		}
		if len(decoded) != 3 || r2.Seg.RDMAP.Opcode != seg.RDMAP.Opcode || d2.Header.MSN != seg.DDP.MSN {
			t.Errorf("parser decoded %v: %+v", decoded, r2.Seg)
		}
	}
}

func TestGopacketMPAFrame(t *testing.T) {
	frame := mustHex(t, "4d50412049442052657120467261 6d65 10 02 0004 0001 0001")
	m := &MPA{}
	if err := m.DecodeFromBytes(frame, gopacket.NilDecodeFeedback); err != nil {
		t.Fatal(err)
	}
	if !m.IsFrame || m.Frame.Rev != 2 || !m.Frame.HasV2 || m.Frame.V2.IRD != 1 || m.NextLayerType() != gopacket.LayerTypeZero {
		t.Errorf("%+v", m.Frame)
	}
	buf := gopacket.NewSerializeBuffer()
	if err := m.SerializeTo(buf, gopacket.SerializeOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), frame) {
		t.Errorf("serialized % x", buf.Bytes())
	}
	// Damage reaches the user as an error, never a panic.
	for n := 0; n < len(frame); n++ {
		if err := (&MPA{}).DecodeFromBytes(frame[:n], gopacket.NilDecodeFeedback); err == nil && n >= 16 {
			t.Errorf("cut at %d decoded", n)
		}
	}
	if err := (&RDMAP{}).DecodeFromBytes([]byte{1, 2}, gopacket.NilDecodeFeedback); err == nil {
		t.Error("RDMAP without DDP decoded")
	}
}

// recFeedback records gopacket's truncation feedback.
type recFeedback struct{ truncated bool }

func (f *recFeedback) SetTruncated() { f.truncated = true }

// Every error the layers return is a *Error naming the layer and field
// (the package's promise), and only truncations are fed back to gopacket
// as truncated: every prefix of an FPDU, of a DDP header, of an RDMAP
// header; a malformed FPDU; the RDMAP layer used on its own;
// and a ULPDU too long to serialize.
func TestGopacketLayerErrors(t *testing.T) {
	check := func(name string, err error, kind ErrorKind, layer, field string, fb *recFeedback) {
		t.Helper()
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%s: %T %v, want *decode.Error", name, err, err)
		}
		if e.Kind != kind || e.Layer != layer || e.Field != field {
			t.Fatalf("%s: %v (%v %s %s), want %v %s %s", name, err, e.Kind, e.Layer, e.Field, kind, layer, field)
		}
		if fb != nil && fb.truncated != (kind == Truncated) {
			t.Fatalf("%s: gopacket told truncated=%v for a %v error", name, fb.truncated, kind)
		}
	}
	seg := Segment{DDP: DDPHeader{Last: true, DV: 1, QN: 1, MSN: 1}, RDMAP: RDMAPControl{RV: 1, Opcode: OpReadRequest},
		ReadRequest: ReadRequest{SinkSTag: 1, SinkTO: 2, Size: 3, SrcSTag: 4, SrcTO: 5}}
	segment := seg.Append(nil)
	fpdu := AppendFPDU(nil, segment, true)
	for n := 0; n < len(fpdu); n++ {
		var fb recFeedback
		err := (&MPA{}).DecodeFromBytes(fpdu[:n], &fb)
		field := "mpa.ulpdu_length"
		switch {
		case n >= ULPDULenLen+len(segment)+PadLen(len(segment)):
			field = "mpa.crc"
		case n >= ULPDULenLen+len(segment):
			field = "mpa.pad"
		case n >= ULPDULenLen:
			field = "mpa.ulpdu"
		}
		check(fmt.Sprintf("MPA of %d octets", n), err, Truncated, "mpa", field, &fb)
	}
	var fb recFeedback
	check("ULPDU_Length 4", (&MPA{}).DecodeFromBytes([]byte{0, 4, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0}, &fb), Malformed, "mpa", "mpa.ulpdu_length", &fb)

	for n := 0; n < DDPUntaggedHdrLen; n++ {
		var fb recFeedback
		err := (&DDP{}).DecodeFromBytes(segment[:n], &fb)
		var e *Error
		if !errors.As(err, &e) || e.Kind != Truncated || e.Layer != "ddp" || !fb.truncated {
			t.Fatalf("DDP of %d octets: %v (truncated feedback %v)", n, err, fb.truncated)
		}
	}
	// RDMAP: the Read Request header cut short.
	for n := DDPUntaggedHdrLen; n < len(segment); n++ {
		ddp := &DDP{}
		var fb recFeedback
		if err := ddp.DecodeFromBytes(segment[:n], &fb); err != nil {
			t.Fatal(err)
		}
		err := (&RDMAP{DDP: ddp}).DecodeFromBytes(ddp.Payload, &fb)
		var e *Error
		if !errors.As(err, &e) || e.Kind != Truncated || e.Layer != "rdmap" || !fb.truncated {
			t.Fatalf("RDMAP of %d segment octets: %v", n, err)
		}
	}
	fb = recFeedback{}
	check("RDMAP without DDP", (&RDMAP{}).DecodeFromBytes(segment[DDPUntaggedHdrLen:], &fb), Malformed, "rdmap", "rdmap.opcode", &fb)
	ddp := &DDP{}
	if err := ddp.DecodeFromBytes(segment, &fb); err != nil {
		t.Fatal(err)
	}
	check("RDMAP on other octets", (&RDMAP{DDP: ddp}).DecodeFromBytes(append([]byte(nil), ddp.Payload...), &fb), Malformed, "rdmap", "rdmap.opcode", &fb)
	check("RDMAP layer decoder", decodeRDMAPLayer(nil, nil), Malformed, "rdmap", "rdmap.opcode", nil)

	buf := gopacket.NewSerializeBuffer()
	err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true}, &MPA{}, gopacket.Payload(make([]byte, 70000)))
	check("ULPDU of 70000 octets", err, Malformed, "mpa", "mpa.ulpdu_length", nil)
}

// DecodeFPDU judges the CRC field by what is known of CRC use (RFC 5044
// §7.1.1, §8).
func TestDecodeFPDUCRCUse(t *testing.T) {
	seg := Segment{DDP: DDPHeader{Last: true, DV: 1, QN: 0, MSN: 1}, RDMAP: RDMAPControl{RV: 1, Opcode: OpSend}, Payload: []byte("x")}
	good := AppendFPDU(nil, seg.Append(nil), true)
	bad := append([]byte(nil), good...)
	bad[len(bad)-1] ^= 1
	for _, c := range []struct {
		use       CRCUse
		wire      []byte
		want      CRCStatus
		wantWords string
	}{
		{CRCUseUnknown, good, CRCUnknown, "unknown"},
		{CRCUseUnknown, bad, CRCUnknown, "unknown"},
		{CRCUseOff, bad, CRCNotUsed, "unchecked"},
		{CRCUseOn, good, CRCGood, "good"},
		{CRCUseOn, bad, CRCBad, "bad"},
	} {
		var p PDU
		n, err := DecodeFPDU(c.wire, c.use, &p)
		if err != nil || n != len(c.wire) {
			t.Fatalf("use %d: %d octets, %v", c.use, n, err)
		}
		if p.CRCStatus != c.want || p.CRCStatus.String() != c.wantWords {
			t.Errorf("use %d on %x: %v, want %v", c.use, c.wire[len(c.wire)-4:], p.CRCStatus, c.want)
		}
	}
}
