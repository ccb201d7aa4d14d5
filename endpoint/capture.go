package endpoint

import (
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/internal/frame"
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
	out, in    *frame.Template // frames from the local side, to it
	lseq, rseq uint32
	lfin, rfin bool
}

// The MAC addresses of the synthesized frames: the local side's, the
// remote side's.
var (
	localMAC  = [6]byte{0x02, 0, 0, 0, 0, 1}
	remoteMAC = [6]byte{0x02, 0, 0, 0, 0, 2}
)

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
	local, remote := frame.Endpoint{MAC: localMAC, Addr: f.local}, frame.Endpoint{MAC: remoteMAC, Addr: f.remote}
	f.out, f.in = frame.NewTemplate(local, remote, 0), frame.NewTemplate(remote, local, 0)
	if active {
		f.frame(true, frame.TCPFlagSYN, nil)
		f.frame(false, frame.TCPFlagSYN|frame.TCPFlagACK, nil)
		f.frame(true, frame.TCPFlagACK, nil)
	} else {
		f.frame(false, frame.TCPFlagSYN, nil)
		f.frame(true, frame.TCPFlagSYN|frame.TCPFlagACK, nil)
		f.frame(false, frame.TCPFlagACK, nil)
	}
	return f
}

const capSeg = 32 << 10

func (f *flowTap) sent(b []byte) {
	for len(b) > 0 {
		n := min(len(b), capSeg)
		f.frame(true, frame.TCPFlagACK|frame.TCPFlagPSH, b[:n])
		b = b[n:]
	}
}

func (f *flowTap) recv(b []byte) {
	for len(b) > 0 {
		n := min(len(b), capSeg)
		f.frame(false, frame.TCPFlagACK|frame.TCPFlagPSH, b[:n])
		b = b[n:]
	}
}

// fin records a FIN from this side (out) or from the peer.
func (f *flowTap) fin(out bool) {
	f.c.mu.Lock()
	done := out && f.lfin || !out && f.rfin
	f.c.mu.Unlock()
	if !done {
		f.frame(out, frame.TCPFlagFIN|frame.TCPFlagACK, nil)
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
	t := f.out
	seq, ack := &f.lseq, f.rseq
	if !out {
		t = f.in
		seq, ack = &f.rseq, f.lseq
	}
	if flags&frame.TCPFlagSYN != 0 && flags&frame.TCPFlagACK == 0 {
		ack = 0
	}
	b := t.Append(c.frame[:0], &frame.Segment{Seq: *seq, Ack: ack, Flags: flags, Window: 0xffff}, payload)
	c.frame = b
	c.err = c.w.WriteFrame(time.Now(), b, 0)
	*seq += uint32(len(payload))
	if flags&(frame.TCPFlagSYN|frame.TCPFlagFIN) != 0 {
		*seq++
	}
	if flags&frame.TCPFlagFIN != 0 {
		if out {
			f.lfin = true
		} else {
			f.rfin = true
		}
	}
}

// Tap records one connection that the caller drives itself (octets it
// writes and reads raw, as a wire fuzzer does) into the capture: Sent and
// Recv record octets, Fin a FIN from either side, Reset an RST from the
// local side. active says the local side opened the connection.
type Tap struct{ f *flowTap }

// Tap starts recording conn: a three-way handshake first.
func (c *Capture) Tap(conn net.Conn, active bool) *Tap { return &Tap{c.newFlow(conn, active)} }

// Sent records octets the local side wrote.
func (t *Tap) Sent(b []byte) { t.f.sent(b) }

// Recv records octets the local side read.
func (t *Tap) Recv(b []byte) { t.f.recv(b) }

// Fin records a FIN from the local side (out) or from the peer.
func (t *Tap) Fin(out bool) { t.f.fin(out) }

// Reset records an RST from the local side (out) or from the peer.
func (t *Tap) Reset(out bool) { t.f.frame(out, frame.TCPFlagRST|frame.TCPFlagACK, nil) }

// CreateCapture starts a pcap file at path; done flushes and closes it.
func CreateCapture(path string) (c *Capture, done func() error, err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, err
	}
	if c, err = NewCapture(f); err != nil {
		f.Close()
		return nil, nil, err
	}
	return c, func() error {
		err := c.Flush()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}, nil
}
