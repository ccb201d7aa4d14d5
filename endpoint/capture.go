package endpoint

import (
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/pcap"
)

// Capture writes the traffic of one or more endpoint connections as a pcap
// file: the octets each connection sends and receives, wrapped in
// synthesized Ethernet/IPv4/TCP headers whose sequence and acknowledgement
// numbers are consistent, with a SYN handshake at the start and a FIN at
// the end, so that iwdump and tshark decode it like a real capture.
// Set Config.Capture to use it; one Capture may serve many connections.
type Capture struct {
	mu    sync.Mutex
	w     *pcap.Writer
	port  uint16
	err   error
	frame []byte
}

// NewCapture starts a pcap file on w.
func NewCapture(w io.Writer) (*Capture, error) {
	pw, err := pcap.NewWriter(w, pcap.FormatPcap, layers.LinkTypeEthernet, 0)
	if err != nil {
		return nil, err
	}
	return &Capture{w: pw, port: 40000}, nil
}

// Flush writes buffered frames out; call it before closing the file.
func (c *Capture) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	return c.w.Flush()
}

// flowTap records one TCP connection.
type flowTap struct {
	c          *Capture
	local      netip.AddrPort
	remote     netip.AddrPort
	lseq, rseq uint32
	lfin, rfin bool
}

func addrPort(a net.Addr, fallback netip.Addr, port uint16) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(t.IP); ok && ip.Unmap().Is4() {
			return netip.AddrPortFrom(ip.Unmap(), uint16(t.Port))
		}
		return netip.AddrPortFrom(fallback, uint16(t.Port))
	}
	return netip.AddrPortFrom(fallback, port)
}

// newFlow starts recording a connection: a three-way handshake from the
// active side.
func (c *Capture) newFlow(conn net.Conn, active bool) *flowTap {
	c.mu.Lock()
	c.port++
	p := c.port
	c.mu.Unlock()
	f := &flowTap{c: c,
		local:  addrPort(conn.LocalAddr(), netip.AddrFrom4([4]byte{10, 0, 0, 1}), p),
		remote: addrPort(conn.RemoteAddr(), netip.AddrFrom4([4]byte{10, 0, 0, 2}), p+1),
		lseq:   0x10000000, rseq: 0x20000000}
	if f.local == f.remote {
		f.remote = netip.AddrPortFrom(f.remote.Addr(), f.remote.Port()+1)
	}
	if active {
		f.frame(true, pcap.TCPSyn, nil)
		f.frame(false, pcap.TCPSyn|pcap.TCPAck, nil)
		f.frame(true, pcap.TCPAck, nil)
	} else {
		f.frame(false, pcap.TCPSyn, nil)
		f.frame(true, pcap.TCPSyn|pcap.TCPAck, nil)
		f.frame(false, pcap.TCPAck, nil)
	}
	return f
}

const capSeg = 32 << 10

func (f *flowTap) sent(b []byte) {
	for len(b) > 0 {
		n := min(len(b), capSeg)
		f.frame(true, pcap.TCPAck|pcap.TCPPsh, b[:n])
		b = b[n:]
	}
}

func (f *flowTap) recv(b []byte) {
	for len(b) > 0 {
		n := min(len(b), capSeg)
		f.frame(false, pcap.TCPAck|pcap.TCPPsh, b[:n])
		b = b[n:]
	}
}

// fin records a FIN from this side (out) or from the peer.
func (f *flowTap) fin(out bool) {
	f.c.mu.Lock()
	done := out && f.lfin || !out && f.rfin
	f.c.mu.Unlock()
	if !done {
		f.frame(out, pcap.TCPFin|pcap.TCPAck, nil)
	}
}

// frame writes one segment, out = from the local side.
func (f *flowTap) frame(out bool, flags uint8, payload []byte) {
	c := f.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	src, dst := f.local, f.remote
	seq, ack := &f.lseq, f.rseq
	if !out {
		src, dst = f.remote, f.local
		seq, ack = &f.rseq, f.lseq
	}
	if flags&pcap.TCPSyn != 0 && flags&pcap.TCPAck == 0 {
		ack = 0
	}
	tot := 20 + 20 + len(payload)
	b := c.frame[:0]
	b = append(b, 0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00)
	if !out {
		copy(b[0:6], []byte{0x02, 0, 0, 0, 0, 1})
		copy(b[6:12], []byte{0x02, 0, 0, 0, 0, 2})
	}
	ip := len(b)
	s4, d4 := src.Addr().As4(), dst.Addr().As4()
	b = append(b, 0x45, 0, byte(tot>>8), byte(tot), 0, 0, 0x40, 0, 64, 6, 0, 0)
	b = append(b, s4[:]...)
	b = append(b, d4[:]...)
	binary.BigEndian.PutUint16(b[ip+10:], ipChecksum(b[ip:ip+20], 0))
	tcp := len(b)
	b = binary.BigEndian.AppendUint16(b, src.Port())
	b = binary.BigEndian.AppendUint16(b, dst.Port())
	b = binary.BigEndian.AppendUint32(b, *seq)
	b = binary.BigEndian.AppendUint32(b, ack)
	b = append(b, 5<<4, flags, 0xff, 0xff, 0, 0, 0, 0)
	b = append(b, payload...)
	// TCP checksum over the pseudo-header and the segment (RFC 9293 §3.1).
	var ph [12]byte
	copy(ph[0:4], s4[:])
	copy(ph[4:8], d4[:])
	ph[9] = 6
	binary.BigEndian.PutUint16(ph[10:], uint16(len(b)-tcp))
	sum := ipSum(ph[:], 0)
	binary.BigEndian.PutUint16(b[tcp+16:], ipChecksum(b[tcp:], sum))
	c.frame = b
	c.err = c.w.WriteFrame(time.Now(), b, 0)
	*seq += uint32(len(payload))
	if flags&(pcap.TCPSyn|pcap.TCPFin) != 0 {
		*seq++
	}
	if flags&pcap.TCPFin != 0 {
		if out {
			f.lfin = true
		} else {
			f.rfin = true
		}
	}
}

func ipSum(b []byte, sum uint32) uint32 {
	for len(b) >= 2 {
		sum += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	return sum
}

func ipChecksum(b []byte, sum uint32) uint16 {
	sum = ipSum(b, sum)
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}
