package decode

import (
	"fmt"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// gopacket integration. MPA, DDP and RDMAP are DecodingLayers with
// SerializeTo, so gopacket users can decode and build iWARP frames with the
// tools they know:
//
//	mpa, ddp := &decode.MPA{}, &decode.DDP{}
//	rdmap := &decode.RDMAP{DDP: ddp}
//	parser := gopacket.NewDecodingLayerParser(decode.LayerTypeMPA, mpa, ddp, rdmap)
//
// The RDMAP control octet and the Invalidate STag travel inside the DDP
// header (RsvdULP, RFC 5041 §4.2–4.3, RFC 5040 §4.1), so the RDMAP layer
// reads them from the DDP layer it is tied to. gopacket.NewPacket, starting
// at LayerTypeMPA (or at a TCP port registered with RegisterTCPPort), wires
// that itself.

// Layer type numbers: gopacket keeps 0–999 for its own layers.
var (
	LayerTypeMPA   = gopacket.RegisterLayerType(4900, gopacket.LayerTypeMetadata{Name: "MPA", Decoder: gopacket.DecodeFunc(decodeMPALayer)})
	LayerTypeDDP   = gopacket.RegisterLayerType(4901, gopacket.LayerTypeMetadata{Name: "DDP", Decoder: gopacket.DecodeFunc(decodeDDPLayer)})
	LayerTypeRDMAP = gopacket.RegisterLayerType(4902, gopacket.LayerTypeMetadata{Name: "RDMAP", Decoder: gopacket.DecodeFunc(decodeRDMAPLayer)})
)

// RegisterTCPPort makes gopacket's TCP layer hand the payload of segments to
// or from port to the MPA layer (with DecodeOptions.DecodeStreamsAsDatagrams,
// and only where each segment starts with an MPA frame or FPDU). iWARP has no well-known port of its own:
// the ULP's port is used (445 SMB Direct, 4420 NVMe-oF, 3260 iSER, ...).
func RegisterTCPPort(port uint16) {
	layers.RegisterTCPPortLayerType(layers.TCPPort(port), LayerTypeMPA)
}

// MPA is one MPA unit at the start of a TCP payload: a Request/Reply frame
// (IsFrame) or a marker-free FPDU whose ULPDU is the DDP segment. Contents
// is the frame, or the FPDU's ULPDU_Length; Payload the ULPDU.
type MPA struct {
	layers.BaseLayer
	IsFrame bool
	Frame   MPAFrame
	FPDU    FPDU
}

func (m *MPA) LayerType() gopacket.LayerType  { return LayerTypeMPA }
func (m *MPA) CanDecode() gopacket.LayerClass { return LayerTypeMPA }

// NextLayerType is DDP for an FPDU and nothing after a frame.
func (m *MPA) NextLayerType() gopacket.LayerType {
	if m.IsFrame {
		return gopacket.LayerTypeZero
	}
	return LayerTypeDDP
}

// DecodeFromBytes decodes an MPA frame if data starts with an MPA key, else
// one FPDU. Octets after the first unit are not decoded.
func (m *MPA) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if _, ok := IsMPAKey(data); ok {
		m.IsFrame = true
		n, err := ParseMPAFrame(data, &m.Frame)
		if err != nil {
			return err
		}
		m.Contents, m.Payload = data[:n], nil
		return nil
	}
	m.IsFrame = false
	if _, err := ParseFPDU(data, &m.FPDU); err != nil {
		return feedback(err, df)
	}
	m.Contents, m.Payload = data[:ULPDULenLen], m.FPDU.ULPDU
	return nil
}

// SerializeTo writes the frame, or wraps the bytes already in b (the DDP
// segment) into an FPDU: ULPDU_Length in front (taken from the payload with
// FixLengths, else from FPDU.ULPDULength), PAD and CRC behind (computed with
// ComputeChecksums, else FPDU.CRC). No markers: gopacket serializes one
// packet at a time and markers depend on the stream position.
func (m *MPA) SerializeTo(b gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	if m.IsFrame {
		enc := m.Frame.Append(nil)
		out, err := b.PrependBytes(len(enc))
		if err != nil {
			return err
		}
		copy(out, enc)
		return nil
	}
	n := len(b.Bytes())
	if n > 0xFFFF {
		return malformed("mpa", "mpa.ulpdu_length", fmt.Sprintf("a ULPDU of %d octets does not fit the 16-bit field", n))
	}
	l := m.FPDU.ULPDULength
	if opts.FixLengths {
		l = uint16(n)
		m.FPDU.ULPDULength = l
	}
	hdr, err := b.PrependBytes(ULPDULenLen)
	if err != nil {
		return err
	}
	hdr[0], hdr[1] = byte(l>>8), byte(l)
	tail, err := b.AppendBytes(PadLen(n) + CRCLen)
	if err != nil {
		return err
	}
	for i := range tail {
		tail[i] = 0
	}
	crc := m.FPDU.CRC
	if opts.ComputeChecksums {
		all := b.Bytes()
		crc = CRC32c(all[:len(all)-CRCLen])
		m.FPDU.CRC = crc
	}
	PutCRC(tail[len(tail)-CRCLen:], crc)
	return nil
}

func decodeMPALayer(data []byte, p gopacket.PacketBuilder) error {
	m := &MPA{}
	if err := m.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(m)
	if m.IsFrame {
		return nil
	}
	return p.NextDecoder(LayerTypeDDP)
}

// DDP is the DDP header of a segment (RFC 5041 §4). Contents is the
// header (14 or 18 octets), Payload what follows it (the RDMAP header, if
// the opcode has one, then ULP payload).
type DDP struct {
	layers.BaseLayer
	Header DDPHeader
}

func (d *DDP) LayerType() gopacket.LayerType     { return LayerTypeDDP }
func (d *DDP) CanDecode() gopacket.LayerClass    { return LayerTypeDDP }
func (d *DDP) NextLayerType() gopacket.LayerType { return LayerTypeRDMAP }

func (d *DDP) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	n, err := ParseDDP(data, &d.Header)
	if err != nil {
		return feedback(err, df)
	}
	d.Contents, d.Payload = data[:n], data[n:]
	return nil
}

// SerializeTo prepends the DDP header, RsvdULP (the RDMAP control octet)
// included, as Header says.
func (d *DDP) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	h, err := b.PrependBytes(d.Header.Len())
	if err != nil {
		return err
	}
	d.Header.Append(h[:0])
	return nil
}

func decodeDDPLayer(data []byte, p gopacket.PacketBuilder) error {
	d := &DDP{}
	if err := d.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(d)
	r := &RDMAP{DDP: d}
	if err := r.DecodeFromBytes(d.Payload, p); err != nil {
		return err
	}
	p.AddLayer(r)
	if len(r.Payload) == 0 {
		return nil
	}
	return p.NextDecoder(gopacket.LayerTypePayload)
}

// errRDMAPAlone: the RDMAP control octet (RV, opcode) travels in the DDP
// header's RsvdULP (RFC 5040 §4.1, RFC 5041 §4.2-4.3), so RDMAP cannot be
// decoded from its own octets alone.
var errRDMAPAlone = &Error{Kind: Malformed, Layer: "rdmap", Field: "rdmap.opcode",
	Reason: "the control octet is in the DDP header: decode through the DDP layer (or set RDMAP.DDP)"}

func decodeRDMAPLayer([]byte, gopacket.PacketBuilder) error { return errRDMAPAlone }

// feedback tells gopacket that a decode error was a truncation (more octets
// could fix it) and returns err.
func feedback(err error, df gopacket.DecodeFeedback) error {
	if e, ok := err.(*Error); ok && e.Kind == Truncated {
		df.SetTruncated()
	}
	return err
}

// RDMAP is the RDMAP part of a segment (RFC 5040 §4): the control octet and
// Invalidate STag read from the DDP layer it is tied to, and the
// per-opcode header (Read Request, Terminate, RFC 7306 headers) decoded
// from the DDP payload. Contents is that header, Payload the ULP payload.
type RDMAP struct {
	layers.BaseLayer
	// DDP is the layer whose header carries this segment's RDMAP control.
	// Set it before using the layer in a DecodingLayerParser.
	DDP *DDP
	Seg Segment
}

func (r *RDMAP) LayerType() gopacket.LayerType     { return LayerTypeRDMAP }
func (r *RDMAP) CanDecode() gopacket.LayerClass    { return LayerTypeRDMAP }
func (r *RDMAP) NextLayerType() gopacket.LayerType { return gopacket.LayerTypePayload }

func (r *RDMAP) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if r.DDP == nil {
		return errRDMAPAlone
	}
	seg := r.DDP.Contents
	// The RDMAP input must be the octets right after the DDP header, so
	// the whole segment can be seen again as one slice.
	if len(seg) == 0 || len(data) > 0 && (cap(seg) == len(seg) || &seg[:cap(seg)][len(seg)] != &data[0]) {
		return malformed("rdmap", "rdmap.opcode", "the input does not follow the tied DDP layer's header, which holds the control octet")
	}
	whole := seg[: len(seg)+len(data) : len(seg)+len(data)]
	if err := ParseSegment(whole, &r.Seg); err != nil {
		return feedback(err, df)
	}
	hdr := r.Seg.HdrLen - len(seg)
	r.Contents, r.Payload = data[:hdr], data[hdr:]
	return nil
}

// SerializeTo prepends the per-opcode RDMAP header from Seg (nothing for
// Write, Read Response and the Sends). The control octet is the DDP
// layer's RsvdULP; set both from one Segment with SetSegment.
func (r *RDMAP) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	full := r.Seg
	full.Payload = nil
	enc := full.Append(nil)
	hdr := enc[full.DDP.Len():]
	out, err := b.PrependBytes(len(hdr))
	if err != nil {
		return err
	}
	copy(out, hdr)
	return nil
}

// SetSegment sets the RDMAP layer and its DDP layer from one Segment, for
// serializing.
func (r *RDMAP) SetSegment(s *Segment) {
	r.Seg = *s
	if r.DDP != nil {
		r.DDP.Header = s.DDP
		r.DDP.Header.RsvdULP = s.RDMAP.Octet()
		if !s.DDP.Tagged {
			r.DDP.Header.RsvdULP2 = s.InvalidateSTag
		}
	}
}
