package endpoint

import (
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tryWritev writes what of v the socket takes now, without waiting for
// room: writev attempts, repeated only while they make progress, as the
// verbs need of a post verb, which queues work and never waits for the
// network (V00 §8.1). It returns the octets written; ok is false when c has
// no file descriptor to try on (nothing was written then).
//
// The system call is made directly, like the runtime's own writev: the
// kernel's reads of registered memory are not reported to the race
// detector (unix.Writev would), exactly as for the send engine's writes;
// MR.Sync is the consumer's ordering contract for that memory.
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
		var iov [128]unix.Iovec
		for len(v) > 0 {
			// i elements of v go into this writev, k of them non-empty.
			i, k, want := 0, 0, 0
			for ; i < len(v) && k < len(iov); i++ {
				if p := v[i]; len(p) > 0 {
					iov[k].Base = &p[0]
					iov[k].SetLen(len(p))
					want += len(p)
					k++
				}
			}
			if k == 0 {
				return true
			}
			m, _, e := unix.Syscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(k))
			if e == unix.EINTR {
				continue
			}
			if e != 0 {
				if e != unix.EAGAIN {
					err = e
				}
				return true
			}
			n += int(m)
			if int(m) < want {
				return true // the socket is full
			}
			v = v[i:]
		}
		return true
	})
	if err == nil {
		err = werr
	}
	return n, true, err
}
