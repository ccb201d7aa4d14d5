package tui

import (
	"runtime"
	"unsafe"
)

// chunkBits sizes the chunks of a chunked slice: 65536 elements.
const chunkBits = 16

// chunked is an append-only slice kept in fixed chunks: appending never
// copies what is there (a million rows grown by append would be copied
// over and over, each time into fresh, faulting pages), and memory grows
// by one chunk at a time instead of doubling.
//
// T must hold no pointers: the chunks are mapped outside the Go heap
// (offheap.go), so the index's millions of rows neither count toward the
// garbage collector's heap goal (which lets the heap grow to twice what
// is live: a million rows would take room for two) nor are scanned. The
// chunks go back to the system when the chunked value (the index that
// holds it) is no longer reachable.
type chunked[T any] struct {
	*chunkSet[T]
}

type chunkSet[T any] struct {
	chunks [][]T
	n      int
}

func (c *chunked[T]) Len() int {
	if c.chunkSet == nil {
		return 0
	}
	return c.n
}

// At returns a pointer to element i (valid as long as c lives).
func (c *chunked[T]) At(i int) *T { return &c.chunks[i>>chunkBits][i&(1<<chunkBits-1)] }

func (c *chunked[T]) Append(v T) {
	if c.chunkSet == nil {
		c.chunkSet = &chunkSet[T]{}
		runtime.SetFinalizer(c.chunkSet, (*chunkSet[T]).free)
	}
	if c.n>>chunkBits == len(c.chunks) {
		c.chunks = append(c.chunks, allocChunk[T](1<<chunkBits))
	}
	c.chunks[c.n>>chunkBits][c.n&(1<<chunkBits-1)] = v
	c.n++
}

// Cap is the number of elements the chunks hold room for.
func (c *chunked[T]) Cap() int {
	if c.chunkSet == nil {
		return 0
	}
	return len(c.chunks) << chunkBits
}

func (s *chunkSet[T]) free() {
	for _, ch := range s.chunks {
		freeChunk(ch)
	}
	s.chunks, s.n = nil, 0
}

// allocChunk returns n zeroed elements of T, outside the Go heap where
// the system allows (freeChunk gives them back), else from it.
func allocChunk[T any](n int) []T {
	var z T
	size := n * int(unsafe.Sizeof(z))
	if b := mapAnon(size); b != nil {
		return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
	}
	return make([]T, n)
}

func freeChunk[T any](ch []T) {
	var z T
	unmapAnon(unsafe.Pointer(unsafe.SliceData(ch)), cap(ch)*int(unsafe.Sizeof(z)))
}
