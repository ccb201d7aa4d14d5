// Package writev writes runs of buffers to a file in as few system calls
// as it can: writev(2), IOV_MAX buffers at a time, where the system has it.
// iwdump's sharded output (package analyze hands the shards' buffers over
// where they lie) and capture files written from the live ring (package
// pcap, a system call per ring block) both write through it.
package writev

import "os"

// New is a Writer for f, or nil where writev cannot be used (not Linux, or
// f has no descriptor to write to): then write the buffers one by one.
func New(f *os.File) *Writer { return newWriter(f) }
