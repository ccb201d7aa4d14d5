package frame

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// naiveSum is RFC 1071's reference loop, 16 bits at a time: the oracle for
// ChecksumAdd's 64-bit version.
func naiveSum(b []byte) uint16 {
	var sum uint32
	for ; len(b) >= 2; b = b[2:] {
		sum += uint32(b[0])<<8 | uint32(b[1])
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

func TestChecksum(t *testing.T) {
	b := make([]byte, 300)
	for i := range b {
		b[i] = byte(i*151 + 7)
	}
	b[5], b[6] = 0xff, 0xff
	for n := 0; n <= len(b); n++ {
		if got, want := Checksum(b[:n]), naiveSum(b[:n]); got != want {
			t.Fatalf("%d octets: %#04x, want %#04x", n, got, want)
		}
		// Split at an even offset, as the pseudo-header sum is.
		if n >= 12 {
			if got := ChecksumFold(ChecksumAdd(ChecksumAdd(0, b[:12]), b[12:n])); got != naiveSum(b[:n]) {
				t.Fatalf("%d octets split at 12: %#04x", n, got)
			}
		}
	}
	// All ones and all zeros (RFC 1071 §3: one's complement).
	if got := Checksum(bytes.Repeat([]byte{0xff}, 64)); got != 0 {
		t.Errorf("all ones: %#04x", got)
	}
	if got := Checksum(make([]byte, 64)); got != 0xffff {
		t.Errorf("all zeros: %#04x", got)
	}
}

// checkFrame decodes frame with gopacket and checks every field the
// template and s put there, and both checksums (verified with the naive
// sum over the header and the pseudo-header plus segment: 0 when right).
func checkFrame(t *testing.T, fr []byte, src, dst Endpoint, vlan uint16, s *Segment, payload []byte) {
	t.Helper()
	pkt := gopacket.NewPacket(fr, layers.LayerTypeEthernet, gopacket.DecodeOptions{NoCopy: true})
	if el := pkt.ErrorLayer(); el != nil {
		t.Fatalf("gopacket: %v", el.Error())
	}
	eth := pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	if [6]byte(eth.SrcMAC) != src.MAC || [6]byte(eth.DstMAC) != dst.MAC {
		t.Fatalf("MACs %v %v", eth.SrcMAC, eth.DstMAC)
	}
	if q, ok := pkt.Layer(layers.LayerTypeDot1Q).(*layers.Dot1Q); (vlan != 0) != ok || ok && q.VLANIdentifier != vlan {
		t.Fatalf("VLAN %d: %v", vlan, q)
	}
	var pseudo []byte
	ipOff := EthernetLen
	if vlan != 0 {
		ipOff += VLANTagLen
	}
	tcpLen := len(fr) - ipOff
	if src.Addr.Addr().Is4() {
		ip, ok := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		if !ok {
			t.Fatal("no IPv4 layer")
		}
		if ip.Id != s.IPID || ip.TTL != 64 || ip.Flags != layers.IPv4DontFragment || ip.Protocol != layers.IPProtocolTCP ||
			int(ip.Length) != len(fr)-ipOff || !ip.SrcIP.Equal(src.Addr.Addr().AsSlice()) || !ip.DstIP.Equal(dst.Addr.Addr().AsSlice()) {
			t.Fatalf("IPv4 %+v", ip)
		}
		if naiveSum(fr[ipOff:ipOff+IPv4MinLen]) != 0 {
			t.Fatalf("IPv4 checksum %#04x wrong", ip.Checksum)
		}
		v := IPv4(fr[ipOff:])
		if v.Src() != src.Addr.Addr() || v.Dst() != dst.Addr.Addr() || v.ID() != s.IPID || v.CalculateChecksum() != v.Checksum() || !v.DontFrag() {
			t.Fatal("IPv4 view disagrees")
		}
		ipOff += IPv4MinLen
		tcpLen -= IPv4MinLen
		s4, d4 := src.Addr.Addr().As4(), dst.Addr.Addr().As4()
		pseudo = append(append(pseudo, s4[:]...), d4[:]...)
		pseudo = append(pseudo, 0, ProtocolTCP, byte(tcpLen>>8), byte(tcpLen))
	} else {
		ip, ok := pkt.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
		if !ok {
			t.Fatal("no IPv6 layer")
		}
		if ip.HopLimit != 64 || ip.NextHeader != layers.IPProtocolTCP || int(ip.Length) != len(fr)-ipOff-IPv6Len ||
			!ip.SrcIP.Equal(src.Addr.Addr().AsSlice()) || !ip.DstIP.Equal(dst.Addr.Addr().AsSlice()) {
			t.Fatalf("IPv6 %+v", ip)
		}
		v := IPv6(fr[ipOff:])
		if v.Src() != src.Addr.Addr() || v.Dst() != dst.Addr.Addr() || int(v.PayloadLength()) != len(fr)-ipOff-IPv6Len {
			t.Fatal("IPv6 view disagrees")
		}
		ipOff += IPv6Len
		tcpLen -= IPv6Len
		s16, d16 := src.Addr.Addr().As16(), dst.Addr.Addr().As16()
		pseudo = append(append(pseudo, s16[:]...), d16[:]...)
		pseudo = binary.BigEndian.AppendUint32(pseudo, uint32(tcpLen))
		pseudo = append(pseudo, 0, 0, 0, ProtocolTCP)
	}
	if naiveSum(append(pseudo, fr[ipOff:]...)) != 0 {
		t.Fatal("TCP checksum wrong")
	}
	tcp, ok := pkt.Layer(layers.LayerTypeTCP).(*layers.TCP)
	if !ok {
		t.Fatal("no TCP layer")
	}
	if uint16(tcp.SrcPort) != src.Addr.Port() || uint16(tcp.DstPort) != dst.Addr.Port() || tcp.Seq != s.Seq || tcp.Ack != s.Ack ||
		tcp.Window != s.Window || tcp.SYN != (s.Flags&TCPFlagSYN != 0) || tcp.ACK != (s.Flags&TCPFlagACK != 0) ||
		tcp.FIN != (s.Flags&TCPFlagFIN != 0) || tcp.RST != (s.Flags&TCPFlagRST != 0) || tcp.PSH != (s.Flags&TCPFlagPSH != 0) {
		t.Fatalf("TCP %+v", tcp)
	}
	var mss uint16
	var tsVal, tsEcr uint32
	var hasTS bool
	for _, o := range tcp.Options {
		switch o.OptionType {
		case layers.TCPOptionKindMSS:
			mss = binary.BigEndian.Uint16(o.OptionData)
		case layers.TCPOptionKindTimestamps:
			hasTS, tsVal, tsEcr = true, binary.BigEndian.Uint32(o.OptionData), binary.BigEndian.Uint32(o.OptionData[4:])
		}
	}
	wantMSS := uint16(0)
	if s.Flags&TCPFlagSYN != 0 {
		wantMSS = s.MSS
	}
	if mss != wantMSS || hasTS != s.Timestamps || hasTS && (tsVal != s.TSVal || tsEcr != s.TSEcr) {
		t.Fatalf("options %v", tcp.Options)
	}
	if !bytes.Equal(tcp.Payload, payload) {
		t.Fatalf("payload %d octets, want %d", len(tcp.Payload), len(payload))
	}
	v := TCP(fr[ipOff:])
	if v.Seq() != s.Seq || v.Ack() != s.Ack || v.Flags() != s.Flags || v.Window() != s.Window || v.SrcPort() != src.Addr.Port() ||
		v.DstPort() != dst.Addr.Port() || v.Checksum() != tcp.Checksum || !bytes.Equal(v.Payload(), payload) || len(v.Options()) != v.DataOffset()-TCPMinLen {
		t.Fatal("TCP view disagrees")
	}
}

var (
	ep4a = Endpoint{MAC: [6]byte{2, 0, 0, 0, 0, 1}, Addr: netip.MustParseAddrPort("10.0.0.1:40000")}
	ep4b = Endpoint{MAC: [6]byte{2, 0, 0, 0, 0, 2}, Addr: netip.MustParseAddrPort("10.0.0.2:4420")}
	ep6a = Endpoint{MAC: [6]byte{2, 0, 0, 0, 0, 3}, Addr: netip.MustParseAddrPort("[fd00::1]:40000")}
	ep6b = Endpoint{MAC: [6]byte{2, 0, 0, 0, 0, 4}, Addr: netip.MustParseAddrPort("[fd00::2]:4420")}
)

func TestTemplate(t *testing.T) {
	payload := make([]byte, 1449)
	for i := range payload {
		payload[i] = byte(i)
	}
	for _, pair := range [][2]Endpoint{{ep4a, ep4b}, {ep4b, ep4a}, {ep6a, ep6b}} {
		for _, vlan := range []uint16{0, 100, 4095} {
			tm := NewTemplate(pair[0], pair[1], vlan)
			want := EthernetLen + IPv4MinLen
			if pair[0].Addr.Addr().Is6() {
				want = EthernetLen + IPv6Len
			}
			if vlan != 0 {
				want += VLANTagLen
			}
			if tm.HeaderLen() != want {
				t.Fatalf("HeaderLen %d, want %d", tm.HeaderLen(), want)
			}
			for _, s := range []Segment{
				{Seq: 1, Flags: TCPFlagSYN, Window: 65535, MSS: 1460, IPID: 7},
				{Seq: 0xffffffff, Ack: 2, Flags: TCPFlagSYN | TCPFlagACK, Window: 65535, MSS: 1440, Timestamps: true, TSVal: 5, TSEcr: 6},
				{Seq: 3, Ack: 4, Flags: TCPFlagACK | TCPFlagPSH, Window: 1000, MSS: 1460, IPID: 0xffff},
				{Seq: 3, Ack: 4, Flags: TCPFlagACK, Timestamps: true, TSVal: 0xfffffffe, TSEcr: 1},
				{Seq: 9, Ack: 4, Flags: TCPFlagFIN | TCPFlagACK | TCPFlagRST},
			} {
				for _, n := range []int{0, 1, 2, 3, 1448, 1449} {
					fr := tm.Append([]byte{0xee}, &s, payload[:n])
					if fr[0] != 0xee {
						t.Fatal("Append overwrote b")
					}
					checkFrame(t, fr[1:], pair[0], pair[1], vlan, &s, payload[:n])
				}
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		tm := NewTemplate(ep4a, ep4b, 0)
		_ = tm
	}); n > 2 {
		t.Errorf("NewTemplate: %v allocations", n)
	}
	tm := NewTemplate(ep6a, ep6b, 7)
	buf := make([]byte, 0, 4096)
	s := Segment{Seq: 1, Ack: 2, Flags: TCPFlagACK, Timestamps: true}
	if n := testing.AllocsPerRun(100, func() { buf = tm.Append(buf[:0], &s, payload) }); n != 0 {
		t.Errorf("Append: %v allocations", n)
	}
}

// FuzzTemplate: any segment values and payload give a frame gopacket
// decodes to the same values, with both checksums right.
func FuzzTemplate(f *testing.F) {
	f.Add(false, uint16(0), uint32(1), uint32(2), uint8(TCPFlagSYN), uint16(65535), uint16(1460), false, uint32(0), uint32(0), uint16(1), []byte{})
	f.Add(true, uint16(100), uint32(0xffffffff), uint32(0), uint8(TCPFlagACK|TCPFlagPSH), uint16(1), uint16(0), true, uint32(7), uint32(8), uint16(0), []byte("iwarp"))
	f.Fuzz(func(t *testing.T, v6 bool, vlan uint16, seq, ack uint32, flags uint8, window, mss uint16, ts bool, tsVal, tsEcr uint32, ipID uint16, payload []byte) {
		if len(payload) > 9000 {
			payload = payload[:9000]
		}
		vlan &= 0x0fff
		flags &= TCPFlagFIN | TCPFlagSYN | TCPFlagRST | TCPFlagPSH | TCPFlagACK
		src, dst := ep4a, ep4b
		if v6 {
			src, dst = ep6a, ep6b
		}
		s := Segment{Seq: seq, Ack: ack, Flags: flags, Window: window, MSS: mss, Timestamps: ts, TSVal: tsVal, TSEcr: tsEcr, IPID: ipID}
		checkFrame(t, NewTemplate(src, dst, vlan).Append(nil, &s, payload), src, dst, vlan, &s, payload)
	})
}

// BenchmarkAppend: one 1448-octet segment (the generator's hot path).
func BenchmarkAppend(b *testing.B) {
	tm := NewTemplate(ep4a, ep4b, 0)
	payload := make([]byte, 1448)
	buf := make([]byte, 0, 2048)
	s := Segment{Seq: 1, Ack: 2, Flags: TCPFlagACK, Window: 65535}
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		buf = tm.Append(buf[:0], &s, payload)
	}
}
