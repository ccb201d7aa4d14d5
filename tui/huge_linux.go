package tui

import "syscall"

// adviseHuge asks for transparent huge pages for b (madvise(2)
// MADV_HUGEPAGE; where THP is "always" the kernel uses them anyway, where
// it is "never" this does nothing).
func adviseHuge(b []byte) { syscall.Madvise(b, syscall.MADV_HUGEPAGE) }
