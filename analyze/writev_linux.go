package analyze

import (
	"os"
	"syscall"
	"unsafe"
)

// vecWriter writes runs of buffers to a file in one writev(2) each
// (Config.Direct): the merger hands the shards' output over where it
// lies, instead of copying it into the bufio.Writer first.
type vecWriter struct {
	rc  syscall.RawConn
	iov []syscall.Iovec
}

// maxIovecs is IOV_MAX on Linux.
const maxIovecs = 1024

func newVecWriter(f *os.File) *vecWriter {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	return &vecWriter{rc: rc}
}

// write writes bufs whole, in order. On an error it returns what is not
// written yet: the caller writes that through its bufio.Writer, whose
// os.File reports the error as it would have (a broken standard output
// raises SIGPIPE there).
func (v *vecWriter) write(bufs [][]byte) ([][]byte, error) {
	for len(bufs) > 0 {
		v.iov = v.iov[:0]
		for _, b := range bufs[:min(len(bufs), maxIovecs)] {
			if len(b) > 0 {
				iov := syscall.Iovec{Base: &b[0]}
				iov.SetLen(len(b))
				v.iov = append(v.iov, iov)
			}
		}
		if len(v.iov) == 0 {
			bufs = bufs[min(len(bufs), maxIovecs):]
			continue
		}
		var n uintptr
		var errno syscall.Errno
		err := v.rc.Write(func(fd uintptr) bool {
			n, _, errno = syscall.Syscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&v.iov[0])), uintptr(len(v.iov)))
			return errno != syscall.EAGAIN
		})
		if err == nil && errno != 0 {
			err = errno
		}
		if err != nil {
			return bufs, err
		}
		if n == 0 {
			return bufs, syscall.EIO
		}
		// A short write (a signal, a full disk) leaves the rest for the
		// next call.
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
