//go:build linux || darwin || freebsd || netbsd || openbsd

package tui

import (
	"sync"
	"syscall"
	"unsafe"
)

// mapped remembers the anonymous mappings by address, so that unmapAnon
// gives back only what mapAnon took (a chunk made by make when mmap
// failed stays the garbage collector's).
var mapped sync.Map // uintptr -> []byte

// mapAnon maps size zeroed octets of private anonymous memory (nil if the
// system says no).
func mapAnon(size int) []byte {
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil
	}
	mapped.Store(uintptr(unsafe.Pointer(unsafe.SliceData(b))), b)
	return b
}

func unmapAnon(p unsafe.Pointer, size int) {
	if b, ok := mapped.LoadAndDelete(uintptr(p)); ok {
		syscall.Munmap(b.([]byte))
	}
}
