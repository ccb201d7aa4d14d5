//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package tui

import "unsafe"

func mapAnon(size int) []byte { return nil }

func unmapAnon(p unsafe.Pointer, size int) {}
