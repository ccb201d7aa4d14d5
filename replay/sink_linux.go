package replay

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"syscall"
	"time"
)

// Interface is a Sink that writes frames onto a network interface through
// an AF_PACKET raw socket (protocol 0: it sends and receives nothing).
type Interface struct {
	fd   int
	name string
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
	fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
			return nil, fmt.Errorf("replay: sending on %s needs the CAP_NET_RAW capability (%w)", name, err)
		}
		return nil, fmt.Errorf("replay: packet socket: %w", err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrLinklayer{Ifindex: ifi.Index}); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("replay: bind to %s: %w", name, err)
	}
	// A larger send buffer rides out short stalls of the device queue.
	syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4<<20)
	return &Interface{fd: fd, name: name}, nil
}

// Name is the interface's name.
func (s *Interface) Name() string { return s.name }

// Send writes one frame. ENOBUFS (the device queue is full) and EAGAIN
// are retried, after yielding and then after short sleeps, and counted.
func (s *Interface) Send(frame []byte) (Retries, error) {
	var r Retries
	for i := 0; ; i++ {
		_, err := syscall.Write(s.fd, frame)
		switch {
		case err == nil:
			return r, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.ENOBUFS):
			r.NoBufs++
		case errors.Is(err, syscall.EAGAIN):
			r.Again++
		default:
			return r, err
		}
		if i < 16 {
			runtime.Gosched()
		} else {
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// Close closes the socket.
func (s *Interface) Close() error { return syscall.Close(s.fd) }
