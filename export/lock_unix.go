//go:build unix

package export

import (
	"errors"
	"os"
	"syscall"
)

// lockTemp opens a writer's temporary file again and takes an exclusive
// flock(2) on it, held until the part is committed or aborted: the
// kernel drops it when the writer dies, however it dies, which is how
// another export tells an orphan from a file being written (Linux's NFS
// client carries flock to the server as a whole-file lock).
func lockTemp(p string) (*os.File, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// tempLocked reports whether a live writer holds p's lock. A file
// system without locks answers yes: nothing is removed on a guess.
func tempLocked(p string) bool {
	f, err := lockTemp(p)
	if err == nil {
		f.Close()
		return false
	}
	return !errors.Is(err, os.ErrNotExist)
}
