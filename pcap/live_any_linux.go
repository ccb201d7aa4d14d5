//go:build linux

package pcap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
	"unsafe"

	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/pcap/bpf"
	xbpf "golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Capture on every interface at once ("any", as tcpdump -i any): one
// AF_PACKET socket of type SOCK_DGRAM bound to no interface (ifindex 0).
// The kernel hands over packets without their link-layer header, since
// interfaces differ in it; each frame gets the 16-octet Linux cooked header
// (LINKTYPE_LINUX_SLL, 113) built from the sockaddr_ll that recvmsg
// returns, octet for octet as libpcap writes it:
//
//	0  packet type (PACKET_HOST, PACKET_OUTGOING, ...)  2 octets
//	2  ARPHRD_ type of the interface                    2
//	4  link-layer address length                        2
//	6  link-layer address, zero padded                  8
//	14 protocol (EtherType)                             2
//
// Timestamps are the kernel's (SO_TIMESTAMPNS). The kernel runs only a small
// program: it drops the outgoing copy of packets on loopback interfaces
// (each is seen leaving and arriving; libpcap drops that copy in user
// space) and keeps snaplen octets; the original length comes from
// PACKET_AUXDATA. The capture filter, compiled for LINUX_SLL, runs in user
// space on the cooked frames (libpcap also filters "any" in user space when
// the filter looks at the link-layer header).
//
// VLAN tags the kernel took out of a packet are put back after the cooked
// header, as libpcap does: protocol 0x8100 (or the TPID the kernel
// reports), then the tag, then the inner protocol.
//
// Stats: Received counts what the kernel program kept, that is every packet
// of every interface but the outgoing loopback copies, before the capture
// filter; Dropped, those lost for lack of socket buffer. Since the filter
// runs in user space, a busy host fills the buffer with traffic the filter
// then discards: -B matters more than on one interface. The reader takes
// one recvmsg per frame (no ring): about 400k frames/s on the test VM
// (BenchmarkLiveAnyDrain) against 14M for the TPACKET_V3 ring.

// AnyInterface is the pseudo-interface that captures on all interfaces.
const AnyInterface = "any"

// cookedLen is the length of the Linux cooked (SLL v1) header.
const cookedLen = 16

// vlanTagLen is the length of an 802.1Q tag.
const vlanTagLen = 4

type anySocket struct {
	fd     int
	vm     *xbpf.VM // the capture filter (nil: every frame)
	buf    []byte   // vlanTagLen spare octets, the cooked header, the packet
	oob    []byte
	sa     unix.RawSockaddrLinklayer
	iov    unix.Iovec
	msg    unix.Msghdr
	stats  LiveStats
	mu     sync.Mutex // Stop (any goroutine) against Close
	closed bool
}

// rejectAll is a kernel program that takes no packet: attached before
// bind, so that nothing comes in unfiltered, and at Stop, so that what is
// queued then is exactly what was captured before it. (Timestamps cannot
// tell: SO_TIMESTAMPNS turns arrival stamping on from a workqueue, a moment
// after the setsockopt, and packets queued before then are stamped as they
// are read.)
var rejectAll = mustAssemble(xbpf.RetConstant{Val: 0})

// stop ends the intake of the "any" socket: Next drains the queue, then
// says io.EOF.
func (a *anySocket) stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.closed { // a closed descriptor's number may be another file's now
		attachFilter(a.fd, rejectAll)
	}
}

// anyKernelProgram drops outgoing packets of loopback interfaces and keeps
// keep octets of the others (counted from the network header: SOCK_DGRAM).
func anyKernelProgram(keep int) []xbpf.RawInstruction {
	return mustAssemble(
		xbpf.LoadExtension{Num: xbpf.ExtType}, // SKF_AD_PKTTYPE
		xbpf.JumpIf{Cond: xbpf.JumpEqual, Val: unix.PACKET_OUTGOING, SkipFalse: 3},
		xbpf.LoadExtension{Num: xbpf.ExtLinkLayerType}, // SKF_AD_HATYPE
		xbpf.JumpIf{Cond: xbpf.JumpEqual, Val: arphrdLoopback, SkipFalse: 1},
		xbpf.RetConstant{Val: 0},
		xbpf.RetConstant{Val: uint32(keep)},
	)
}

// mustAssemble assembles a program written here, which cannot fail.
func mustAssemble(insns ...xbpf.Instruction) []xbpf.RawInstruction {
	prog, err := xbpf.Assemble(insns)
	if err != nil {
		panic(err)
	}
	return prog
}

// drainSocket reads off, without blocking, every frame queued on a packet
// socket; a capture calls it between a reject-all filter and the real one,
// as libpcap does, so that nothing queued before the filter comes out.
func drainSocket(fd int) {
	buf := make([]byte, 64)
	for {
		if _, _, err := unix.Recvfrom(fd, buf, unix.MSG_DONTWAIT); err != nil {
			return
		}
	}
}

func attachFilter(fd int, prog []xbpf.RawInstruction) error {
	p := unix.SockFprog{Len: uint16(len(prog)), Filter: (*unix.SockFilter)(unsafe.Pointer(&prog[0]))}
	return unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &p)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// openAny sets up the "any" capture. filter, when not nil, is a program
// for LINUX_SLL frames, run in user space.
func (l *Live) openAny(o LiveOptions, filter []xbpf.RawInstruction) error {
	a := &anySocket{fd: -1}
	if len(filter) > 0 {
		if bpf.UsesAncillary(filter) {
			return errors.New("capture filter: on \"any\" the filter runs in user space and cannot read Linux packet metadata (compile it without the kernel form)")
		}
		vm, err := bpf.NewVM(filter)
		if err != nil {
			return fmt.Errorf("capture filter: %w", err)
		}
		a.vm = vm
	}
	// Protocol 0: the socket takes no packets until bind names one, by
	// which time the reject-all filter is on.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("socket", err)
	}
	a.fd = fd
	fail := func(what string, err error) error {
		unix.Close(fd)
		return fmt.Errorf("%s: %w", what, os.NewSyscallError("setsockopt", err))
	}
	if err := attachFilter(fd, rejectAll); err != nil {
		return fail("attaching the capture filter", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: 0}); err != nil {
		unix.Close(fd)
		return os.NewSyscallError("bind", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		return fail("SO_TIMESTAMPNS", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err != nil {
		return fail("PACKET_AUXDATA", err)
	}
	size := o.BufferSize
	if size <= 0 {
		size = DefaultBufferSize
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, size) != nil {
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, size)
	}
	// Read off whatever got queued before the reject-all filter (nothing,
	// with protocol 0 until bind; as libpcap does, to be sure).
	drainSocket(fd)
	keep := max(l.snaplen-cookedLen, 1)
	if err := attachFilter(fd, anyKernelProgram(keep)); err != nil {
		return fail("attaching the capture filter", err)
	}
	// Reads time out so that Next notices Stop.
	tv := unix.NsecToTimeval(pollTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fail("SO_RCVTIMEO", err)
	}
	unix.GetsockoptTpacketStats(fd, unix.SOL_PACKET, unix.PACKET_STATISTICS) // reset the counters
	a.buf = make([]byte, vlanTagLen+cookedLen+keep)
	a.oob = make([]byte, unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{})))+unix.CmsgSpace(int(unsafe.Sizeof(unix.TpacketAuxdata{}))))
	l.any = a
	l.method = "AF_PACKET socket (cooked, all interfaces; capture filter in user space)"
	return nil
}

// recv reads one packet into a.buf[vlanTagLen+cookedLen:]; it returns the
// captured length, the original length, the kernel timestamp and the
// auxiliary data.
func (a *anySocket) recv() (n int, ts time.Time, aux unix.TpacketAuxdata, haveAux bool, err error) {
	body := a.buf[vlanTagLen+cookedLen:]
	a.iov.Base = &body[0]
	a.iov.SetLen(len(body))
	a.msg = unix.Msghdr{
		Name:    (*byte)(unsafe.Pointer(&a.sa)),
		Namelen: uint32(unsafe.Sizeof(a.sa)),
		Iov:     &a.iov,
		Iovlen:  1,
		Control: &a.oob[0],
	}
	a.msg.SetControllen(len(a.oob))
	for {
		r, _, e := unix.Syscall(unix.SYS_RECVMSG, uintptr(a.fd), uintptr(unsafe.Pointer(&a.msg)), 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, ts, aux, false, e
		}
		n = int(r)
		break
	}
	oob := a.oob[:a.msg.Controllen]
	for len(oob) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		if h.Len < unix.SizeofCmsghdr || int(h.Len) > len(oob) {
			break
		}
		data := oob[unix.CmsgLen(0):h.Len]
		switch {
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && len(data) >= int(unsafe.Sizeof(unix.Timespec{})):
			t := (*unix.Timespec)(unsafe.Pointer(&data[0]))
			ts = time.Unix(t.Sec, t.Nsec)
		case h.Level == unix.SOL_PACKET && h.Type == unix.PACKET_AUXDATA && len(data) >= int(unsafe.Sizeof(aux)):
			aux = *(*unix.TpacketAuxdata)(unsafe.Pointer(&data[0]))
			haveAux = true
		}
		oob = oob[min(unix.CmsgSpace(int(h.Len)-unix.CmsgLen(0)), len(oob)):]
	}
	return n, ts, aux, haveAux, nil
}

// nextAny is Next for the "any" socket.
func (l *Live) nextAny(f *Frame) error {
	a := l.any
	for {
		if s := l.stopAt.Load(); s != 0 && l.stopped(time.Now()) {
			return io.EOF
		}
		n, ts, aux, haveAux, err := a.recv()
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EWOULDBLOCK) {
				if l.stopAt.Load() != 0 {
					return io.EOF // the queue is empty
				}
				continue
			}
			return fmt.Errorf("%s: %w", l.iface, os.NewSyscallError("recvmsg", err))
		}
		if a.sa.Pkttype == unix.PACKET_OUTGOING && a.sa.Hatype == arphrdLoopback {
			continue // the kernel program drops these; in case it did not
		}
		orig := n
		if haveAux && int(aux.Len) > orig {
			orig = int(aux.Len)
		}
		start := vlanTagLen
		// sll_protocol is in network order in memory.
		protoBE := *(*[2]byte)(unsafe.Pointer(&a.sa.Protocol))
		if haveAux && aux.Status&unix.TP_STATUS_VLAN_VALID != 0 {
			// Put the tag back between the cooked header and the
			// packet: the header's protocol becomes the TPID.
			tpid := uint16(layers.EthernetTypeDot1Q)
			if aux.Status&unix.TP_STATUS_VLAN_TPID_VALID != 0 && aux.Vlan_tpid != 0 {
				tpid = aux.Vlan_tpid
			}
			start = 0
			h := a.buf[vlanTagLen+cookedLen-2:]
			h[0], h[1] = protoBE[0], protoBE[1]
			binary.BigEndian.PutUint16(a.buf[cookedLen-2:], tpid)
			binary.BigEndian.PutUint16(a.buf[cookedLen:], aux.Vlan_tci)
			orig += vlanTagLen
			n += vlanTagLen
		} else {
			a.buf[start+14], a.buf[start+15] = protoBE[0], protoBE[1]
		}
		h := a.buf[start:]
		binary.BigEndian.PutUint16(h[0:], uint16(a.sa.Pkttype))
		binary.BigEndian.PutUint16(h[2:], a.sa.Hatype)
		halen := min(int(a.sa.Halen), 8)
		binary.BigEndian.PutUint16(h[4:], uint16(a.sa.Halen))
		copy(h[6:14], a.sa.Addr[:halen])
		clear(h[6+halen : 14])
		n += cookedLen
		orig += cookedLen
		data := a.buf[start : start+n]
		if len(data) > l.snaplen {
			data = data[:l.snaplen]
		}
		if a.vm != nil {
			keep, err := a.vm.Run(data)
			if err != nil {
				return fmt.Errorf("%s: capture filter: %w", l.iface, err)
			}
			if keep == 0 {
				continue
			}
			if keep < len(data) {
				data = data[:keep]
			}
		}
		f.Number = int(l.n.Add(1))
		f.Timestamp = ts
		f.Data = data
		f.CapLen = len(data)
		f.OrigLen = max(orig, len(data))
		f.LinkType = layers.LinkTypeLinuxSLL
		return nil
	}
}

func (a *anySocket) kernelStats() (LiveStats, error) {
	s, err := unix.GetsockoptTpacketStats(a.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS)
	if err != nil {
		return LiveStats{}, os.NewSyscallError("getsockopt", err)
	}
	// The kernel resets the counters as they are read.
	a.stats.Received += uint64(s.Packets)
	a.stats.Dropped += uint64(s.Drops)
	return a.stats, nil
}

func (a *anySocket) close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	a.closed = true
	return unix.Close(a.fd)
}
