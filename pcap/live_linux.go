//go:build linux

package pcap

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/iwkit/iwkit/pcap/bpf"
	xbpf "golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Live is a capture on one interface. Next is to be called from one
// goroutine; Stop and Stats may be called from any; Close after Next has
// returned.
type Live struct {
	iface    string
	lt       layers.LinkType
	snaplen  int
	loopback bool
	method   string

	rg  *ring // TPACKET_V3 (live_ring_linux.go)
	eh  *pcapgo.EthernetHandle
	any *anySocket // "any": all interfaces, cooked frames (live_any_linux.go)

	// since: frames the kernel stamped before the filter was attached
	// were let in unfiltered between bind and attach; they are dropped.
	since   time.Time
	stopAt  atomic.Int64 // UnixNano of Stop; 0 while running
	n       atomic.Int64 // frames returned by Next; Stats reads it from any goroutine
	vbuf    []byte       // a frame with its VLAN tag put back (socket method)
	block   *Block       // the ring block of the frame last returned
	ifindex int

	statsMu sync.Mutex
	base    LiveStats // kernel counters when the filter went on (ring)
	ehStats LiveStats // accumulated socket counters (the kernel resets them on read)
	closeEH sync.Once
	ehFile  *os.File // the socket under the EthernetHandle, when reachable

	blockTimeout time.Duration
}

// Timeouts of the ring: the kernel hands over a partly filled block after
// blockTimeout; a poll gives up after pollTimeout so that Stop is noticed.
const (
	defaultBlockTimeout = 20 * time.Millisecond
	pollTimeout         = 50 * time.Millisecond
	// drainWindow bounds how long Next keeps returning frames captured
	// before Stop.
	drainWindow = 500 * time.Millisecond
)

// Linux ARPHRD_* device types (/sys/class/net/IFACE/type).
const (
	arphrdEther    = 1
	arphrdLoopback = 772
	arphrdNone     = 65534
	arphrdIPGRE    = 778
	arphrdTunnel   = 768
	arphrdTunnel6  = 769
	arphrdSIT      = 776
)

// InterfaceLinkType is the link type frames of iface carry on a packet
// socket: Ethernet (also for loopback, which gets an all-zero Ethernet
// header), or raw IP for devices without a link header (tun, WireGuard).
//
// "any" (AnyInterface), unless an interface has that name, is every
// interface at once: frames carry a Linux cooked header (LINUX_SLL).
func InterfaceLinkType(iface string) (layers.LinkType, error) {
	if iface == AnyInterface && !interfaceExists(iface) {
		return layers.LinkTypeLinuxSLL, nil
	}
	b, err := os.ReadFile("/sys/class/net/" + iface + "/type")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, fmt.Errorf("%w: %s", ErrNoSuchInterface, iface)
		}
		return 0, err
	}
	t, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: device type %q", iface, b)
	}
	switch t {
	case arphrdEther, arphrdLoopback:
		return layers.LinkTypeEthernet, nil
	case arphrdNone:
		return layers.LinkTypeRaw, nil
	}
	return 0, fmt.Errorf("%s: capture on device type %d (ARPHRD) is not supported", iface, t)
}

func interfaceExists(iface string) bool {
	_, err := os.Stat("/sys/class/net/" + iface)
	return err == nil
}

// Interfaces lists the network interfaces, and "any" (all of them) last,
// as tcpdump -D does.
func Interfaces() ([]Interface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	out := make([]Interface, 0, len(ifs))
	for _, i := range ifs {
		it := Interface{Index: i.Index, Name: i.Name, Flags: i.Flags}
		it.LinkType, _ = InterfaceLinkType(i.Name)
		if addrs, err := i.Addrs(); err == nil {
			for _, a := range addrs {
				it.Addrs = append(it.Addrs, a.String())
			}
		}
		out = append(out, it)
	}
	if !interfaceExists(AnyInterface) {
		out = append(out, Interface{Name: AnyInterface, Flags: net.FlagUp | net.FlagRunning, LinkType: layers.LinkTypeLinuxSLL})
	}
	return out, nil
}

// OpenLive starts capturing on iface. On "any" (AnyInterface) it captures
// on every interface with a plain AF_PACKET socket (no ring): o.Filter is
// then a program for LINUX_SLL frames compiled without the kernel form,
// run in user space, and Promisc is ignored.
func OpenLive(iface string, o LiveOptions) (*Live, error) {
	if iface == AnyInterface && !interfaceExists(iface) {
		return openAnyLive(o)
	}
	ifc, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNoSuchInterface, iface)
	}
	if ifc.Flags&net.FlagUp == 0 {
		return nil, fmt.Errorf("%s: the interface is down", iface)
	}
	lt, err := InterfaceLinkType(iface)
	if err != nil {
		return nil, err
	}
	snap := o.Snaplen
	if snap <= 0 || snap > MaxSnaplen {
		snap = MaxSnaplen
	}
	prog := o.Filter
	if len(prog) == 0 {
		prog = bpf.AcceptAll(snap)
	}
	if err := bpf.Check(prog); err != nil {
		return nil, fmt.Errorf("capture filter: %w", err)
	}
	l := &Live{iface: iface, lt: lt, snaplen: snap, loopback: ifc.Flags&net.FlagLoopback != 0, blockTimeout: o.BlockTimeout, ifindex: ifc.Index}
	if l.blockTimeout <= 0 {
		l.blockTimeout = defaultBlockTimeout
	}
	if l.loopback {
		prog = bpf.DropOutgoing(prog, snap)
	}
	prog = bpf.ClampSnaplen(prog, snap)

	var ringErr error
	if o.Method != MethodSocket {
		ringErr = l.openRing(o, prog)
		if ringErr == nil {
			return l, nil
		}
		if errors.Is(ringErr, os.ErrPermission) {
			return nil, &PermissionError{Iface: iface, Err: ringErr}
		}
		if o.Method == MethodRing {
			return nil, fmt.Errorf("%s: TPACKET_V3 ring: %w", iface, ringErr)
		}
	}
	if err := l.openSocket(o, prog); err != nil {
		if errors.Is(err, os.ErrPermission) || strings.Contains(err.Error(), "operation not permitted") {
			return nil, &PermissionError{Iface: iface, Err: err}
		}
		return nil, fmt.Errorf("%s: %w", iface, err)
	}
	if ringErr != nil {
		l.method = fmt.Sprintf("AF_PACKET socket (no ring: %v)", ringErr)
	}
	return l, nil
}

func openAnyLive(o LiveOptions) (*Live, error) {
	if o.Method == MethodRing {
		return nil, fmt.Errorf("%s: the TPACKET_V3 ring is not used on %q: it captures with a plain socket", AnyInterface, AnyInterface)
	}
	snap := o.Snaplen
	if snap <= 0 || snap > MaxSnaplen {
		snap = MaxSnaplen
	}
	if len(o.Filter) > 0 {
		if err := bpf.Check(o.Filter); err != nil {
			return nil, fmt.Errorf("capture filter: %w", err)
		}
	}
	l := &Live{iface: AnyInterface, lt: layers.LinkTypeLinuxSLL, snaplen: snap, blockTimeout: defaultBlockTimeout}
	if err := l.openAny(o, o.Filter); err != nil {
		if errors.Is(err, os.ErrPermission) {
			return nil, &PermissionError{Iface: AnyInterface, Err: err}
		}
		return nil, fmt.Errorf("%s: %w", AnyInterface, err)
	}
	return l, nil
}

func (l *Live) openRing(o LiveOptions, prog []xbpf.RawInstruction) error {
	blockSize, blocks := ringGeometry(o.BufferSize)
	rg, err := openRingSocket(l.ifindex, blockSize, blocks, l.blockTimeout, prog)
	if err != nil {
		return err
	}
	l.since = time.Now()
	if o.Promisc && !l.loopback {
		if err := rg.setPromisc(l.ifindex); err != nil {
			rg.close()
			return fmt.Errorf("promiscuous mode: %w", err)
		}
	}
	l.rg = rg
	l.method = fmt.Sprintf("TPACKET_V3 ring, %d blocks of %d KiB", blocks, blockSize>>10)
	s, err := l.kernelStats()
	if err == nil {
		l.base = s
	}
	return nil
}

func (l *Live) openSocket(o LiveOptions, prog []xbpf.RawInstruction) error {
	eh, err := pcapgo.NewEthernetHandle(l.iface)
	if err != nil {
		return err
	}
	if err := eh.SetCaptureLength(l.snaplen); err != nil {
		eh.Close()
		return err
	}
	// Frames queued before the filter is attached would come out
	// unfiltered, and timestamps cannot tell them apart here (when no
	// socket asked for timestamps as they arrived, the kernel stamps a
	// frame as it is read). As libpcap does: attach a filter that takes
	// nothing, read off what is queued, then attach the real filter.
	l.ehFile = ethernetHandleFile(eh)
	if l.ehFile != nil {
		if err := eh.SetBPF([]xbpf.RawInstruction{{Op: 0x6, K: 0}}); err != nil { // ret #0
			eh.Close()
			return fmt.Errorf("attaching the capture filter: %w", err)
		}
		// Read off the queue with non-blocking reads until it is empty.
		// A read deadline cannot do this: once it has passed, Go's
		// poller fails a read before it looks at the queue, so a drain
		// slower than the deadline (under load, or -race) left frames
		// that came out unfiltered.
		if rc, err := l.ehFile.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) { drainSocket(int(fd)) })
		}
	}
	if err := eh.SetBPF(prog); err != nil {
		eh.Close()
		return fmt.Errorf("attaching the capture filter: %w", err)
	}
	if o.Promisc && !l.loopback {
		if err := eh.SetPromiscuous(true); err != nil {
			eh.Close()
			return fmt.Errorf("promiscuous mode: %w", err)
		}
	}
	l.eh = eh
	l.method = "AF_PACKET socket"
	if l.ehFile != nil {
		// The socket's receive buffer is the only buffer this method
		// has: give it the size asked for (SO_RCVBUFFORCE passes the
		// rmem_max limit with CAP_NET_ADMIN).
		size := o.BufferSize
		if size <= 0 {
			size = DefaultBufferSize
		}
		if rc, err := l.ehFile.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) {
				if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, size) != nil {
					unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, size)
				}
			})
		}
	}
	if s, err := eh.Stats(); err == nil {
		_ = s // clears the counters: frames before the filter do not count
	}
	return nil
}

// ethernetHandleFile reaches the socket inside a pcapgo.EthernetHandle,
// which does not export it, to size its buffer and give reads a deadline.
// If a gopacket release renames the field, this returns nil and the socket
// keeps the system's default buffer; Stop then closes it instead.
func ethernetHandleFile(eh *pcapgo.EthernetHandle) *os.File {
	v := reflect.ValueOf(eh).Elem().FieldByName("file")
	if !v.IsValid() || v.Kind() != reflect.Pointer || v.Type() != reflect.TypeOf((*os.File)(nil)) {
		return nil
	}
	return (*os.File)(v.UnsafePointer())
}

// LinkType is the link type of the frames.
func (l *Live) LinkType() layers.LinkType { return l.lt }

// Snaplen is the most octets kept of a frame.
func (l *Live) Snaplen() int { return l.snaplen }

// Method says how frames come from the kernel.
func (l *Live) Method() string { return l.method }

// Interface is the name of the interface.
func (l *Live) Interface() string { return l.iface }

// Stop ends the capture: Next returns what the kernel captured up to now
// and then io.EOF. Safe from any goroutine (a signal handler's).
func (l *Live) Stop() {
	if !l.stopAt.CompareAndSwap(0, time.Now().UnixNano()) {
		return
	}
	if l.any != nil {
		l.any.stop()
	}
	if l.eh != nil {
		// The socket read blocks with no timeout of its own. A deadline
		// lets what is queued drain and then ends the read; without
		// access to the socket, closing it does.
		if l.ehFile != nil {
			l.ehFile.SetReadDeadline(time.Now().Add(drainWindow / 5))
		} else {
			time.AfterFunc(drainWindow/5, func() { l.closeEH.Do(func() { l.eh.Close() }) })
		}
	}
}

func (l *Live) stopped(now time.Time) bool {
	s := l.stopAt.Load()
	return s != 0 && now.UnixNano()-s > int64(drainWindow)
}

// Next returns the next frame. f.Data aliases the kernel ring or the
// socket buffer and is valid until the next call. After Stop, Next returns
// the frames captured before it and then io.EOF.
func (l *Live) Next(f *Frame) error {
	if l.any != nil {
		return l.nextAny(f)
	}
	for {
		var (
			data []byte
			ci   gopacket.CaptureInfo
			err  error
		)
		l.block = nil
		if l.rg != nil {
			var fi frameInfo
			data, fi, err = l.rg.next(pollTimeout)
			ci.Timestamp, ci.Length, l.block = fi.ts, fi.origLen, fi.block
		} else {
			data, ci, err = l.eh.ZeroCopyReadPacketData()
		}
		if err != nil {
			if s := l.stopAt.Load(); s != 0 {
				// The socket's read deadline passed, or a poll of the
				// ring timed out after the kernel had time to hand
				// over the block it was filling at Stop.
				if l.eh != nil || time.Now().UnixNano()-s > int64(l.blockTimeout+pollTimeout) {
					return io.EOF
				}
				continue
			}
			if errors.Is(err, errRingTimeout) {
				continue
			}
			return fmt.Errorf("%s: %w", l.iface, err)
		}
		if ci.Timestamp.Before(l.since) {
			continue // let in before the filter was attached
		}
		if s := l.stopAt.Load(); s != 0 && l.rg != nil && (ci.Timestamp.UnixNano() > s || l.stopped(time.Now())) {
			// (The socket method ends at its read deadline instead:
			// its timestamps may be taken as frames are read.)
			return io.EOF
		}
		if l.eh != nil && len(ci.AncillaryData) > 0 {
			// The kernel took the VLAN tag out; put it back, as the
			// ring path does (only the VLAN ID is reported here: the tag goes
			// back as 802.1Q without priority bits).
			if vid, ok := ci.AncillaryData[0].(int); ok && l.lt == layers.LinkTypeEthernet && len(data) >= 12 {
				l.vbuf = append(append(append(l.vbuf[:0], data[:12]...), 0x81, 0x00, byte(vid>>8), byte(vid)), data[12:]...)
				data = l.vbuf
				ci.Length += 4
			}
		}
		f.Number = int(l.n.Add(1))
		f.Timestamp = ci.Timestamp
		f.Data = data
		f.CapLen = len(data)
		f.OrigLen = ci.Length
		if f.OrigLen < f.CapLen {
			f.OrigLen = f.CapLen
		}
		f.LinkType = l.lt
		return nil
	}
}

// Block is the ring block that holds the frame last returned by Next, nil
// when the frame is not in the ring (the socket methods, or a frame whose
// VLAN tag was put back in a copy). Holding it keeps that frame's Data
// valid after the next call, until Release: a capture file can be written
// and a decoder fed from the ring itself. Holders must give blocks back
// well within a ring's worth of traffic, or the kernel drops frames.
func (l *Live) Block() *Block { return l.block }

// RingBlocks is how many blocks the ring has (0: no ring).
func (l *Live) RingBlocks() int {
	if l.rg == nil {
		return 0
	}
	return len(l.rg.blocks)
}

// kernelStats reads the kernel's counters (cumulative).
func (l *Live) kernelStats() (LiveStats, error) {
	if l.any != nil {
		return l.any.kernelStats()
	}
	if l.rg != nil {
		v3, err := l.rg.readStats()
		if err != nil {
			return LiveStats{}, err
		}
		return LiveStats{Received: uint64(v3.Packets), Dropped: uint64(v3.Drops), Freezes: uint64(v3.Freeze_q_cnt)}, nil
	}
	s, err := l.eh.Stats()
	if err != nil {
		return LiveStats{}, err
	}
	l.ehStats.Received += uint64(s.Packets)
	l.ehStats.Dropped += uint64(s.Drops)
	return l.ehStats, nil
}

// Stats returns the counters so far. The kernel counts a frame dropped for
// lack of buffer space in Received too, as tcpdump reports it.
func (l *Live) Stats() (LiveStats, error) {
	l.statsMu.Lock()
	defer l.statsMu.Unlock()
	s, err := l.kernelStats()
	if err != nil {
		return LiveStats{Captured: uint64(l.n.Load())}, err
	}
	s.Received -= min(s.Received, l.base.Received)
	s.Dropped -= min(s.Dropped, l.base.Dropped)
	s.Freezes -= min(s.Freezes, l.base.Freezes)
	s.Captured = uint64(l.n.Load())
	return s, nil
}

// Close releases the socket (and the ring). Not to be called while Next
// runs.
func (l *Live) Close() error {
	if l.any != nil {
		return l.any.close()
	}
	if l.rg != nil {
		l.rg.close()
		l.rg = nil
	}
	if l.eh != nil {
		var err error
		l.closeEH.Do(func() { err = l.eh.Close() })
		return err
	}
	return nil
}
