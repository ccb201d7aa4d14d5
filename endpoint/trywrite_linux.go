package endpoint

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// tryWritev writes what of v the socket takes now, without waiting for
// room: one writev attempt (repeated only while it makes progress), as the
// verbs need of a post verb, which queues work and never waits for the
// network (V00 §8.1). It returns the octets written; ok is false when c has
// no file descriptor to try on (nothing was written then).
func tryWritev(c net.Conn, v [][]byte) (n int, ok bool, err error) {
	sc, isSC := c.(syscall.Conn)
	if !isSC {
		return 0, false, nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, false, nil
	}
	werr := rc.Write(func(fd uintptr) bool {
		for len(v) > 0 {
			k := min(len(v), 1024) // IOV_MAX
			want := 0
			for _, p := range v[:k] {
				want += len(p)
			}
			m, e := unix.Writev(int(fd), v[:k])
			if e == unix.EINTR {
				continue
			}
			if e != nil {
				if e != unix.EAGAIN {
					err = e
				}
				return true
			}
			n += m
			if m < want {
				return true // the socket is full
			}
			v = v[k:]
		}
		return true
	})
	if err == nil {
		err = werr
	}
	return n, true, err
}
