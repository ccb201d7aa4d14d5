package pcap

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// siwDir holds captures of Linux siw, an independent iWARP implementation,
// made with the repository's VM peer (peers/siw) and tcpdump -i lo.
const siwDir = "../testdata/siw"

func readAll(t *testing.T, r *Reader) []Frame {
	t.Helper()
	var out []Frame
	for {
		var f Frame
		err := r.Next(&f)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("after %d frames: %v", len(out), err)
		}
		f.Data = append([]byte(nil), f.Data...)
		out = append(out, f)
	}
}

func TestPublicCaptures(t *testing.T) {
	for _, c := range []struct {
		file   string
		frames int
		mpaReq int // frame with the MPA Request
	}{
		{"v1_rping.pcap", 13, 4},
		{"rping.pcap", 50, 4},
		{"crc_rping.pcap", 50, 4},
	} {
		t.Run(c.file, func(t *testing.T) {
			r, err := Open(filepath.Join(siwDir, c.file))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if r.Format() != FormatPcap {
				t.Errorf("format %s", r.Format())
			}
			frames := readAll(t, r)
			if len(frames) != c.frames {
				t.Fatalf("%d frames, want %d", len(frames), c.frames)
			}
			var p Packet
			f := frames[c.mpaReq-1]
			if f.Number != c.mpaReq {
				t.Errorf("frame number %d", f.Number)
			}
			if err := DecodeTCP(f.LinkType, f.Data, &p); err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(p.Payload, []byte("MPA ID Req Frame")) {
				t.Errorf("frame %d payload %q, want the MPA Request", c.mpaReq, p.Payload)
			}
			if p.DstPort != 7170 || p.Src != netip.MustParseAddr("10.0.2.15") {
				t.Errorf("got %v:%d -> %v:%d", p.Src, p.SrcPort, p.Dst, p.DstPort)
			}
			// The SYN carries the MSS option.
			if err := DecodeTCP(frames[0].LinkType, frames[0].Data, &p); err != nil && !errors.Is(err, ErrNotTCP) {
				t.Fatal(err)
			}
		})
	}
}

// build serializes a frame with gopacket's own layers, the independent oracle
// for DecodeTCP.
func build(t *testing.T, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	for _, l := range ls {
		if n, ok := l.(interface {
			SetNetworkLayerForChecksum(gopacket.NetworkLayer) error
		}); ok {
			for _, nl := range ls {
				if nw, ok := nl.(gopacket.NetworkLayer); ok {
					_ = n.SetNetworkLayerForChecksum(nw)
				}
			}
		}
	}
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecodeTCPVariants(t *testing.T) {
	payload := gopacket.Payload("MPA ID Rep Frame\x40\x01\x00\x00")
	mac := net.HardwareAddr{0, 1, 2, 3, 4, 5}
	tcp := func() *layers.TCP {
		return &layers.TCP{SrcPort: 4420, DstPort: 50000, Seq: 0xFFFFFFF0, Ack: 7, ACK: true, PSH: true, Window: 512,
			Options: []layers.TCPOption{{OptionType: layers.TCPOptionKindTimestamps, OptionLength: 10, OptionData: []byte{0, 0, 0, 1, 0, 0, 0, 2}}}}
	}
	ip4 := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP, SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2},
		Options: []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 0}}}
	ip6 := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolTCP, SrcIP: net.ParseIP("fd00::1"), DstIP: net.ParseIP("fd00::2")}
	cases := []struct {
		name string
		lt   layers.LinkType
		data []byte
		src  string
		vlan int
	}{
		{"ethernet-ipv4-options", layers.LinkTypeEthernet, build(t, &layers.Ethernet{SrcMAC: mac, DstMAC: mac, EthernetType: layers.EthernetTypeIPv4}, ip4, tcp(), payload), "10.0.0.1", 0},
		{"vlan-ipv6", layers.LinkTypeEthernet, build(t, &layers.Ethernet{SrcMAC: mac, DstMAC: mac, EthernetType: layers.EthernetTypeDot1Q},
			&layers.Dot1Q{VLANIdentifier: 42, Type: layers.EthernetTypeIPv6}, ip6, tcp(), payload), "fd00::1", 1},
		{"qinq-ipv4", layers.LinkTypeEthernet, build(t, &layers.Ethernet{SrcMAC: mac, DstMAC: mac, EthernetType: layers.EthernetTypeDot1Q},
			&layers.Dot1Q{VLANIdentifier: 7, Type: layers.EthernetTypeDot1Q}, &layers.Dot1Q{VLANIdentifier: 42, Type: layers.EthernetTypeIPv4}, ip4, tcp(), payload), "10.0.0.1", 2},
		{"raw-ipv6", layers.LinkTypeRaw, build(t, ip6, tcp(), payload), "fd00::1", 0},
		{"sll-ipv4", layers.LinkTypeLinuxSLL, append([]byte{0, 0, 0, 1, 0, 6, 0, 1, 2, 3, 4, 5, 0, 0, 0x08, 0x00}, build(t, ip4, tcp(), payload)...), "10.0.0.1", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p Packet
			if err := DecodeTCP(c.lt, c.data, &p); err != nil {
				t.Fatal(err)
			}
			if p.Src != netip.MustParseAddr(c.src) || p.SrcPort != 4420 || p.DstPort != 50000 || p.Seq != 0xFFFFFFF0 || p.Ack != 7 {
				t.Errorf("got %+v", p)
			}
			if !bytes.Equal(p.Payload, payload) || p.PayloadLen != len(payload) || p.Truncated() {
				t.Errorf("payload %q len %d", p.Payload, p.PayloadLen)
			}
			if p.NVLAN != c.vlan || (c.vlan > 0 && p.VLANs[c.vlan-1] != 42) {
				t.Errorf("vlans %v (%d)", p.VLANs, p.NVLAN)
			}
			if !p.HasTS || p.TSVal != 1 || p.TSEcr != 2 {
				t.Errorf("timestamps %v %d %d", p.HasTS, p.TSVal, p.TSEcr)
			}
			// Every cut of the frame is an error or a truncated payload, never a panic.
			for n := 0; n < len(c.data); n++ {
				var q Packet
				err := DecodeTCP(c.lt, c.data[:n], &q)
				if err == nil && !q.Truncated() && len(payload) > 0 {
					t.Fatalf("cut at %d: no error and payload not truncated", n)
				}
			}
			if allocs := testing.AllocsPerRun(100, func() { _ = DecodeTCP(c.lt, c.data, &p) }); allocs != 0 {
				t.Errorf("%v allocs", allocs)
			}
		})
	}
	var p Packet
	udp := build(t, &layers.Ethernet{SrcMAC: mac, DstMAC: mac, EthernetType: layers.EthernetTypeIPv4},
		&layers.IPv4{Version: 4, TTL: 1, Protocol: layers.IPProtocolUDP, SrcIP: net.IP{1, 1, 1, 1}, DstIP: net.IP{2, 2, 2, 2}}, &layers.UDP{SrcPort: 1, DstPort: 2})
	if err := DecodeTCP(layers.LinkTypeEthernet, udp, &p); !errors.Is(err, ErrNotTCP) {
		t.Errorf("udp: %v", err)
	}
	if err := DecodeTCP(layers.LinkType(147), udp, &p); err == nil {
		t.Error("unknown link type accepted")
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	frames := [][]byte{[]byte("first frame"), bytes.Repeat([]byte{0xAB}, 1500), {}}
	ts := time.Unix(1700000000, 123456789)
	for _, format := range []Format{FormatPcap, FormatPcapNG} {
		for _, gz := range []bool{false, true} {
			var file bytes.Buffer
			var out io.Writer = &file
			var zw *gzip.Writer
			if gz {
				zw = gzip.NewWriter(&file)
				out = zw
			}
			w, err := NewWriter(out, format, layers.LinkTypeEthernet, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i, f := range frames {
				if err := w.WriteFrame(ts.Add(time.Duration(i)), f, len(f)+i); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if zw != nil {
				zw.Close()
			}
			r, err := NewReader(bytes.NewReader(file.Bytes()))
			if err != nil {
				t.Fatalf("%s gz=%v: %v", format, gz, err)
			}
			if r.Format() != format {
				t.Errorf("format %s, want %s", r.Format(), format)
			}
			got := readAll(t, r)
			if len(got) != len(frames) {
				t.Fatalf("%s gz=%v: %d frames", format, gz, len(got))
			}
			for i, f := range got {
				if !bytes.Equal(f.Data, frames[i]) || !f.Timestamp.Equal(ts.Add(time.Duration(i))) || f.OrigLen != len(frames[i])+i || f.Number != i+1 {
					t.Errorf("%s gz=%v frame %d: %+v", format, gz, i, f)
				}
			}
			if !gz {
				// A file cut inside the last record: the earlier frames come out, then an error.
				r, err := NewReader(bytes.NewReader(file.Bytes()[:file.Len()-3]))
				if err != nil {
					t.Fatal(err)
				}
				var f Frame
				n := 0
				for err = r.Next(&f); err == nil; err = r.Next(&f) {
					n++
				}
				if err == io.EOF || n < 2 {
					t.Errorf("%s cut file: %d frames then %v", format, n, err)
				}
			}
		}
	}
}

func TestBadFiles(t *testing.T) {
	for name, data := range map[string][]byte{
		"empty":   {},
		"short":   {0xd4, 0xc3},
		"garbage": []byte("this is not a capture file at all"),
		"gzip-garbage": func() []byte {
			var b bytes.Buffer
			z := gzip.NewWriter(&b)
			z.Write([]byte("nope nope nope"))
			z.Close()
			return b.Bytes()
		}(),
	} {
		if _, err := NewReader(bytes.NewReader(data)); !errors.Is(err, ErrUnknownFormat) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.pcap")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if FormatForName("a.pcapng.gz") != FormatPcapNG || FormatForName("a.pcap") != FormatPcap {
		t.Error("FormatForName")
	}
}

// fuzzSeedCaptures are small siw captures: an MPA v1 handshake cut short,
// and a Terminate.
var fuzzSeedCaptures = []string{"v1_rping.pcap", "term_read_badstag.pcap"}

func FuzzDecodeTCP(f *testing.F) {
	for _, c := range fuzzSeedCaptures {
		r, err := Open(filepath.Join(siwDir, c))
		if err != nil {
			f.Fatal(err)
		}
		var fr Frame
		for r.Next(&fr) == nil {
			f.Add(uint16(fr.LinkType), append([]byte(nil), fr.Data...))
		}
		r.Close()
	}
	f.Fuzz(func(t *testing.T, lt uint16, data []byte) {
		var p Packet
		if err := DecodeTCP(layers.LinkType(lt), data, &p); err == nil {
			if len(p.Payload) > len(data) || len(p.Payload) > p.PayloadLen {
				t.Fatalf("payload %d of %d (announced %d)", len(p.Payload), len(data), p.PayloadLen)
			}
		}
	})
}

func FuzzReader(f *testing.F) {
	for _, c := range fuzzSeedCaptures {
		b, err := os.ReadFile(filepath.Join(siwDir, c))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	// pcapng with packet comments (opt_comment options in EPBs).
	ng, _ := commentCapture(f)
	f.Add(ng)
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		var fr Frame
		for i := 0; i < 10000 && r.Next(&fr) == nil; i++ {
		}
		checkReadBack(t, data)
	})
}
