package tui

// chunkBits sizes the chunks of a chunked slice: 65536 elements.
const chunkBits = 16

// chunked is an append-only slice kept in fixed chunks: appending never
// copies what is there (a million rows grown by append would be copied
// over and over, each time into fresh, faulting pages), and memory grows
// by one chunk at a time instead of doubling.
type chunked[T any] struct {
	chunks [][]T
	n      int
}

func (c *chunked[T]) Len() int { return c.n }

// At returns a pointer to element i (valid as long as c lives).
func (c *chunked[T]) At(i int) *T { return &c.chunks[i>>chunkBits][i&(1<<chunkBits-1)] }

func (c *chunked[T]) Append(v T) {
	if c.n>>chunkBits == len(c.chunks) {
		c.chunks = append(c.chunks, make([]T, 1<<chunkBits))
	}
	*c.At(c.n) = v
	c.n++
}

// Cap is the number of elements the chunks hold room for.
func (c *chunked[T]) Cap() int { return len(c.chunks) << chunkBits }
