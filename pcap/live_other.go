//go:build !linux

package pcap

import (
	"errors"

	"github.com/gopacket/gopacket/layers"
)

// ErrLiveUnsupported: live capture is implemented for Linux only.
var ErrLiveUnsupported = errors.New("live capture is supported on Linux only")

// AnyInterface is the pseudo-interface that captures on all interfaces
// (Linux only).
const AnyInterface = "any"

// Live is a capture on one interface (Linux only).
type Live struct{}

// InterfaceLinkType is not available outside Linux.
func InterfaceLinkType(iface string) (layers.LinkType, error) { return 0, ErrLiveUnsupported }

// Interfaces is not available outside Linux.
func Interfaces() ([]Interface, error) { return nil, ErrLiveUnsupported }

// OpenLive is not available outside Linux.
func OpenLive(iface string, o LiveOptions) (*Live, error) { return nil, ErrLiveUnsupported }

func (l *Live) LinkType() layers.LinkType { return 0 }
func (l *Live) Snaplen() int              { return 0 }
func (l *Live) Method() string            { return "" }
func (l *Live) Interface() string         { return "" }
func (l *Live) Stop()                     {}
func (l *Live) Next(f *Frame) error       { return ErrLiveUnsupported }
func (l *Live) Stats() (LiveStats, error) { return LiveStats{}, ErrLiveUnsupported }
func (l *Live) Close() error              { return nil }
func (l *Live) Block() *Block             { return nil }
func (l *Live) RingBlocks() int           { return 0 }

// Block is a block of the capture ring (Linux only).
type Block struct{}

func (b *Block) Hold()       {}
func (b *Block) Release()    {}
func (b *Block) Gen() uint64 { return 0 }
