package pcap

import (
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// vlanUDPFrame is an Ethernet frame from 02:00:00:00:00:01 to
// 02:00:00:00:00:02 carrying UDP 40000→dport over IPv4 10.9.0.1→10.9.0.2,
// with 802.1Q/802.1ad tags given as {TPID, TCI}, outermost first: what the
// live VLAN tests write raw on a veth pair.
func vlanUDPFrame(t *testing.T, dport uint16, payload []byte, tags ...[2]uint16) []byte {
	t.Helper()
	eth := &layers.Ethernet{
		SrcMAC:       net.HardwareAddr{2, 0, 0, 0, 0, 1},
		DstMAC:       net.HardwareAddr{2, 0, 0, 0, 0, 2},
		EthernetType: layers.EthernetTypeIPv4,
	}
	ls := []gopacket.SerializableLayer{eth}
	next := &eth.EthernetType
	for _, tag := range tags {
		*next = layers.EthernetType(tag[0])
		q := &layers.Dot1Q{Priority: uint8(tag[1] >> 13), DropEligible: tag[1]&0x1000 != 0, VLANIdentifier: tag[1] & 0x0fff, Type: layers.EthernetTypeIPv4}
		ls = append(ls, q)
		next = &q.Type
	}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.IP{10, 9, 0, 1}, DstIP: net.IP{10, 9, 0, 2}}
	udp := &layers.UDP{SrcPort: 40000, DstPort: layers.UDPPort(dport)}
	udp.SetNetworkLayerForChecksum(ip)
	ls = append(ls, ip, udp, gopacket.Payload(payload))
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
