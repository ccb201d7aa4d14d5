package pcap

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/bpf"
)

// Live capture reads frames from a network interface as they pass, in pure
// Go with no libpcap: on Linux through an AF_PACKET socket with a
// TPACKET_V3 ring shared with the kernel (live_ring_linux.go), or, when the
// ring cannot be set up, through a plain AF_PACKET socket (gopacket's
// pcapgo.EthernetHandle). The capture filter runs in the kernel.

// CaptureMethod chooses how frames come from the kernel.
type CaptureMethod int

const (
	// MethodAuto uses the ring and falls back to the socket.
	MethodAuto CaptureMethod = iota
	// MethodRing requires the TPACKET_V3 ring.
	MethodRing
	// MethodSocket reads the socket with recvmsg, one frame per call.
	MethodSocket
)

// DefaultBufferSize is the kernel buffer (ring) size when LiveOptions do not
// give one: 32 MiB holds a quarter of a second of a saturated 1 Gbit/s link
// while the reader is busy elsewhere.
const DefaultBufferSize = 32 << 20

// LiveOptions configure OpenLive.
type LiveOptions struct {
	// Snaplen is the most octets kept of each frame (0: MaxSnaplen).
	Snaplen int
	// Promisc puts the interface into promiscuous mode for as long as the
	// capture runs, so that frames for other hosts are seen too.
	Promisc bool
	// BufferSize is the kernel buffer in octets (0: DefaultBufferSize).
	BufferSize int
	// Filter is the kernel filter, compiled with bpf.Options{Kernel:
	// true} for InterfaceLinkType (nil: every frame). On a loopback
	// interface OpenLive prefixes it with bpf.DropOutgoing.
	Filter []bpf.RawInstruction
	Method CaptureMethod
	// BlockTimeout is how long the kernel holds a partly filled ring block
	// before handing it over, the delay before a frame is seen when
	// traffic is light (0: 20ms).
	BlockTimeout time.Duration
}

// LiveStats count what a live capture saw. The kernel counts only frames
// that passed the filter.
type LiveStats struct {
	Captured uint64 // frames returned by Next
	Received uint64 // frames the kernel accepted for the socket (tcpdump: "received by filter")
	Dropped  uint64 // of those, frames lost because the buffer was full ("dropped by kernel")
	Freezes  uint64 // TPACKET_V3 ring queue freezes
}

// PermissionError says the process may not open a packet socket.
type PermissionError struct {
	Iface string
	Err   error
}

func (e *PermissionError) Error() string {
	return fmt.Sprintf("capturing on %s needs the CAP_NET_RAW capability (%v)", e.Iface, e.Err)
}

func (e *PermissionError) Unwrap() error { return e.Err }

// ErrNoSuchInterface is returned (wrapped) for an unknown interface name.
var ErrNoSuchInterface = errors.New("no such network interface")

// Interface describes a network interface for listing (iwdump -D).
type Interface struct {
	Index    int
	Name     string
	Flags    net.Flags
	LinkType layers.LinkType // 0 when live capture does not support its link type
	Addrs    []string
}

// Description lists the interface's state the way tcpdump -D does.
func (i Interface) Description() string {
	var f []string
	if i.Flags&net.FlagUp != 0 {
		f = append(f, "Up")
	}
	if i.Flags&net.FlagRunning != 0 {
		f = append(f, "Running")
	}
	if i.Flags&net.FlagLoopback != 0 {
		f = append(f, "Loopback")
	}
	if len(f) == 0 {
		f = append(f, "none")
	}
	return "[" + strings.Join(f, ", ") + "]"
}

// ringGeometry splits a buffer into TPACKET_V3 blocks: at least 8 blocks so
// that the kernel fills some while the reader drains others, each between
// 128 KiB (a 64 KiB loopback frame fits) and 1 MiB.
func ringGeometry(buffer int) (blockSize, blocks int) {
	if buffer <= 0 {
		buffer = DefaultBufferSize
	}
	blockSize = 1 << 20
	for blockSize > 128<<10 && buffer/blockSize < 8 {
		blockSize /= 2
	}
	blocks = buffer / blockSize
	if blocks < 2 {
		blocks = 2
	}
	return blockSize, blocks
}
