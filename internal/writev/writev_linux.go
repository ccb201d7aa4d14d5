package writev

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

// Writer writes buffers to one file with writev(2). Its iovec array is
// kept between calls: a write allocates nothing.
type Writer struct {
	rc  syscall.RawConn
	iov []syscall.Iovec
}

// maxIovecs is IOV_MAX on Linux.
const maxIovecs = 1024

func newWriter(f *os.File) *Writer {
	if f == nil {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	return &Writer{rc: rc}
}

// Write writes bufs whole, in order; empty buffers are skipped. A short
// write (a signal, a full disk) goes on from where it stopped. On an error
// it returns what is not written yet, so that the caller can report it
// through the writer it would have used (a broken standard output raises
// SIGPIPE there). It may change the elements of bufs.
func (w *Writer) Write(bufs [][]byte) (rest [][]byte, err error) {
	for len(bufs) > 0 {
		w.iov = w.iov[:0]
		for _, b := range bufs[:min(len(bufs), maxIovecs)] {
			if len(b) > 0 {
				iov := syscall.Iovec{Base: &b[0]}
				iov.SetLen(len(b))
				w.iov = append(w.iov, iov)
			}
		}
		if len(w.iov) == 0 {
			bufs = bufs[min(len(bufs), maxIovecs):]
			continue
		}
		var n uintptr
		var errno syscall.Errno
		err := w.rc.Write(func(fd uintptr) bool {
			n, _, errno = syscall.Syscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&w.iov[0])), uintptr(len(w.iov)))
			return errno != syscall.EAGAIN
		})
		if errno == syscall.EINTR {
			continue
		}
		if err == nil && errno != 0 {
			err = errno
		}
		if err != nil {
			return bufs, err
		}
		if n == 0 {
			return bufs, io.ErrShortWrite
		}
		for left := int(n); left > 0; {
			if left < len(bufs[0]) {
				bufs[0] = bufs[0][left:]
				break
			}
			left -= len(bufs[0])
			bufs = bufs[1:]
		}
		for len(bufs) > 0 && len(bufs[0]) == 0 {
			bufs = bufs[1:]
		}
	}
	return nil, nil
}
