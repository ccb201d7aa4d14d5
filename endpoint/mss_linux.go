package endpoint

import (
	"net"
	"syscall"
)

// tcpMSS is the connection's TCP maximum segment size (TCP_MAXSEG), or
// 1460 when it cannot be read.
func tcpMSS(c net.Conn) int {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return 1460
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return 1460
	}
	mss := 0
	rc.Control(func(fd uintptr) {
		mss, _ = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_MAXSEG)
	})
	if mss <= 0 {
		return 1460
	}
	return mss
}
