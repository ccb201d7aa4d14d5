package replay

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Interface is a Sink that writes frames onto a network interface through
// an AF_PACKET raw socket (protocol 0: it sends and receives nothing).
// Batches go out with one sendmmsg(2) each.
type Interface struct {
	fd   int
	name string
	msgs []mmsghdr
	iovs []unix.Iovec
}

// mmsghdr is struct mmsghdr: a msghdr and the octets sent.
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
	_   [4]byte
}

// OpenInterface opens a sender on the Ethernet interface name.
func OpenInterface(name string) (*Interface, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, fmt.Errorf("replay: %s: %w", name, err)
	}
	if ifi.Flags&net.FlagUp == 0 {
		return nil, fmt.Errorf("replay: %s is down", name)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("replay: sending on %s needs the CAP_NET_RAW capability (%w)", name, err)
		}
		return nil, fmt.Errorf("replay: packet socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("replay: bind to %s: %w", name, err)
	}
	// A larger send buffer rides out short stalls of the device queue.
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20)
	return &Interface{fd: fd, name: name}, nil
}

// Name is the interface's name.
func (s *Interface) Name() string { return s.name }

// retry says whether err is worth another try, counting it, and waits a
// little: a yield for the first tries, then 50 µs.
func retry(err error, try int, r *Retries) bool {
	switch {
	case errors.Is(err, unix.EINTR):
		return true
	case errors.Is(err, unix.ENOBUFS):
		r.NoBufs++
	case errors.Is(err, unix.EAGAIN):
		r.Again++
	default:
		return false
	}
	if try < 16 {
		runtime.Gosched()
	} else {
		time.Sleep(50 * time.Microsecond)
	}
	return true
}

// Send writes one frame. ENOBUFS (the device queue is full) and EAGAIN
// are retried and counted.
func (s *Interface) Send(frame []byte) (Retries, error) {
	var r Retries
	for i := 0; ; i++ {
		_, err := unix.Write(s.fd, frame)
		if err == nil || !retry(err, i, &r) {
			return r, err
		}
	}
}

// SendBatch writes frames with as few sendmmsg calls as the kernel allows.
// It returns how many went; a frame the kernel refuses stops the batch
// with its error (the caller counts it and goes on after it).
func (s *Interface) SendBatch(frames [][]byte) (int, Retries, error) {
	var r Retries
	if cap(s.msgs) < len(frames) {
		s.msgs = make([]mmsghdr, len(frames))
		s.iovs = make([]unix.Iovec, len(frames))
	}
	msgs, iovs := s.msgs[:len(frames)], s.iovs[:len(frames)]
	for i, f := range frames {
		iovs[i] = unix.Iovec{Base: unsafe.SliceData(f)}
		iovs[i].SetLen(len(f))
		msgs[i] = mmsghdr{}
		msgs[i].hdr.Iov = &iovs[i]
		msgs[i].hdr.SetIovlen(1)
	}
	sent := 0
	for try := 0; sent < len(frames); {
		n, _, errno := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(s.fd), uintptr(unsafe.Pointer(&msgs[sent])), uintptr(len(frames)-sent), 0, 0, 0)
		runtime.KeepAlive(frames)
		if errno != 0 {
			if retry(errno, try, &r) {
				try++
				continue
			}
			return sent, r, errno
		}
		sent += int(n)
		try = 0
	}
	return sent, r, nil
}

// Close closes the socket.
func (s *Interface) Close() error { return unix.Close(s.fd) }
