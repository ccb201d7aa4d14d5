// Command mkerdma writes erdma_driver.pcap octet by octet from the structures
// Linux's erdma driver puts on the wire (drivers/infiniband/hw/erdma/
// erdma_cm.h, erdma_cm.c), without iwkit's generator or encoders: the
// capture is an independent witness for the analyzer's erdma support.
//
//	go run ./testdata/stacks/mkerdma > testdata/stacks/erdma_driver.pcap
//
// The connection: erdma_newconn_connected sends struct mpa_rr (the key,
// __be16 bits = Rev 129 with no flag, __be16 pd_len) then struct
// erdma_mpa_ext (__be32 cookie, __be32 bits: CC in bits 3:0) then pd_len
// octets of Private Data, in one kernel_sendmsg; erdma_accept answers with
// the same layout under the Reply key. No markers and no CRC (the driver
// rejects both; the CRC field goes out as 0). Then 5 Sends (RFC 5040 §4,
// RFC 5041 §4.3: untagged header, QN 0, MSN from 1), the Initiator first
// (RFC 5044 §7.1.2 rule 4), and a FIN from each side.
package main

import (
	"encoding/binary"
	"os"
)

var (
	cliMAC = []byte{0x02, 0x16, 0x3e, 0x00, 0x00, 0x01}
	srvMAC = []byte{0x02, 0x16, 0x3e, 0x00, 0x00, 0x02}
	cliIP  = []byte{192, 168, 10, 1}
	srvIP  = []byte{192, 168, 10, 2}
)

const (
	cliPort, srvPort = 51234, 20049
	cliISN, srvISN   = 0x1a2b3c4d, 0x5e6f7081
	tSec             = 1764300000 // capture time base (2025-11-28)
)

type side struct {
	mac, ip []byte
	port    uint16
	seq     uint32
}

var out []byte
var usec uint32

func frame(src, dst *side, flags uint8, payload []byte) {
	// TCP header, 20 octets, no options.
	tcp := make([]byte, 20)
	binary.BigEndian.PutUint16(tcp[0:], src.port)
	binary.BigEndian.PutUint16(tcp[2:], dst.port)
	binary.BigEndian.PutUint32(tcp[4:], src.seq)
	if flags&0x10 != 0 {
		binary.BigEndian.PutUint32(tcp[8:], dst.seq)
	}
	tcp[12] = 5 << 4
	tcp[13] = flags
	binary.BigEndian.PutUint16(tcp[14:], 64240)
	seg := append(tcp, payload...)
	// TCP checksum over the IPv4 pseudo-header.
	ph := append(append(append([]byte{}, src.ip...), dst.ip...), 0, 6, byte(len(seg)>>8), byte(len(seg)))
	binary.BigEndian.PutUint16(seg[16:], csum(append(ph, seg...)))
	ip := make([]byte, 20)
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(20+len(seg)))
	ip[6] = 0x40 // DF
	ip[8] = 64
	ip[9] = 6
	copy(ip[12:], src.ip)
	copy(ip[16:], dst.ip)
	binary.BigEndian.PutUint16(ip[10:], csum(ip))
	eth := append(append(append([]byte{}, dst.mac...), src.mac...), 0x08, 0x00)
	pkt := append(append(eth, ip...), seg...)
	// pcap record header: ts_sec, ts_usec, incl_len, orig_len.
	usec += 37
	out = binary.LittleEndian.AppendUint32(out, tSec)
	out = binary.LittleEndian.AppendUint32(out, usec)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(pkt)))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(pkt)))
	out = append(out, pkt...)
	src.seq += uint32(len(payload))
	if flags&0x03 != 0 { // SYN or FIN
		src.seq++
	}
}

func csum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}

// mpaRR is struct mpa_rr followed by struct erdma_mpa_ext and the Private
// Data, as erdma_send_mpareqrep gathers them.
func mpaRR(key string, cookie, cc uint32, pdata []byte) []byte {
	b := []byte(key)      // u8 key[16]
	var bits uint16 = 129 // MPA_REVISION_EXT_1 in MPA_RR_MASK_REVISION, no flag
	b = binary.BigEndian.AppendUint16(b, bits)
	b = binary.BigEndian.AppendUint16(b, uint16(len(pdata))) // pd_len
	b = binary.BigEndian.AppendUint32(b, cookie)             // erdma_mpa_ext.cookie
	b = binary.BigEndian.AppendUint32(b, cc&0xf)             // erdma_mpa_ext.bits, MPA_EXT_FLAG_CC
	return append(b, pdata...)
}

// send is one FPDU carrying a whole Send message: ULPDU_Length, the DDP
// untagged header (T=0, L=1, DV=1; RV=1, opcode Send; Inv STag 0; QN 0;
// MSN; MO 0), the payload, PAD to a multiple of 4, and a zero CRC field.
func send(msn uint32, payload []byte) []byte {
	ulpdu := []byte{0x41, 0x43}
	ulpdu = binary.BigEndian.AppendUint32(ulpdu, 0)   // Invalidate STag
	ulpdu = binary.BigEndian.AppendUint32(ulpdu, 0)   // QN 0: Send queue
	ulpdu = binary.BigEndian.AppendUint32(ulpdu, msn) // MSN
	ulpdu = binary.BigEndian.AppendUint32(ulpdu, 0)   // MO
	ulpdu = append(ulpdu, payload...)
	b := binary.BigEndian.AppendUint16(nil, uint16(len(ulpdu)))
	b = append(b, ulpdu...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return append(b, 0, 0, 0, 0)
}

func main() {
	// Global header: magic, v2.4, zone, sigfigs, snaplen, Ethernet.
	out = binary.LittleEndian.AppendUint32(out, 0xa1b2c3d4)
	out = binary.LittleEndian.AppendUint16(out, 2)
	out = binary.LittleEndian.AppendUint16(out, 4)
	out = binary.LittleEndian.AppendUint32(out, 0)
	out = binary.LittleEndian.AppendUint32(out, 0)
	out = binary.LittleEndian.AppendUint32(out, 65535)
	out = binary.LittleEndian.AppendUint32(out, 1)

	c := &side{cliMAC, cliIP, cliPort, cliISN}
	s := &side{srvMAC, srvIP, srvPort, srvISN}
	const syn, fin, ack, psh = 0x02, 0x01, 0x10, 0x08
	frame(c, s, syn, nil)
	frame(s, c, syn|ack, nil)
	frame(c, s, ack, nil)
	// rdma_cm private data is the ULP's; 7 octets here.
	frame(c, s, psh|ack, mpaRR("MPA ID Req Frame", 0x00c0ffee, 1, []byte("nvme-of")))
	frame(s, c, psh|ack, mpaRR("MPA ID Rep Frame", 0x00beef42, 2, []byte{0x00, 0x01}))
	frame(c, s, psh|ack, send(1, []byte("erdma send 1 from the initiator")))
	frame(s, c, psh|ack, send(1, []byte("erdma send 1 from the responder, 47 octets...")))
	frame(c, s, psh|ack, send(2, []byte("erdma send 2")))
	frame(s, c, psh|ack, send(2, []byte("erdma send 2 from the responder")))
	frame(c, s, psh|ack, send(3, []byte("erdma send 3 (last)")))
	frame(s, c, ack, nil)
	frame(c, s, fin|ack, nil)
	frame(s, c, fin|ack, nil)
	frame(c, s, ack, nil)
	os.Stdout.Write(out)
}
