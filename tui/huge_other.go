//go:build darwin || freebsd || netbsd || openbsd

package tui

// adviseHuge does nothing where there is no madvise(MADV_HUGEPAGE).
func adviseHuge([]byte) {}
