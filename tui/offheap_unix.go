//go:build linux || darwin || freebsd || netbsd || openbsd

package tui

import (
	"sync"
	"syscall"
	"unsafe"
)

// mapped remembers the anonymous mappings by the address mapAnon handed
// out, so that unmapAnon gives back only what mapAnon took (a chunk made
// by make when mmap failed stays the garbage collector's).
var mapped sync.Map // uintptr -> []byte (the whole mapping)

// hugePage is the size of a transparent huge page (x86-64, arm64 with 4 KiB
// pages).
const hugePage = 2 << 20

// mapAnon maps size zeroed octets of private anonymous memory (nil if the
// system says no).
//
// A mapping of a huge page or more starts on a huge page boundary, and
// the whole huge pages in it are advised to the kernel as such (adviseHuge):
// the index fills its chunks front to back, and on a virtual machine each
// 4 KiB page touched for the first time cost ~16 µs (a third of what the
// index of 2 M small frames cost its writer), where a 2 MiB page costs
// about as much as 4 KiB ones. The tail of a chunk past its last whole
// huge page stays in small pages: resident memory runs ahead of the rows
// by less than a huge page per chunk being filled. The octets before the
// boundary are mapped but never touched (address space, not memory).
func mapAnon(size int) []byte {
	extra := 0
	if size >= hugePage {
		extra = hugePage
	}
	b, err := syscall.Mmap(-1, 0, size+extra, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return nil
	}
	off := 0
	if extra > 0 {
		p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		off = int((hugePage - p%hugePage) % hugePage)
		if whole := size / hugePage * hugePage; whole > 0 {
			adviseHuge(b[off : off+whole])
		}
	}
	a := b[off : off+size : off+size]
	mapped.Store(uintptr(unsafe.Pointer(unsafe.SliceData(a))), b)
	return a
}

func unmapAnon(p unsafe.Pointer, size int) {
	if b, ok := mapped.LoadAndDelete(uintptr(p)); ok {
		syscall.Munmap(b.([]byte))
	}
}
