package analyze

import (
	"io"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/pcap"
)

// What a frame costs the shards does not grow with their number: over a
// capture of four connections, the shards together take one step per
// frame plus one per shard at each tick of the clock (once a second of
// capture time), the four connections go to four different shards, and a
// pinned reader's frames are not copied (they lie in the chunk's arena).
func TestDispatchStepsPerFrame(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bulk.pcap")
	writeGen(t, path, "bulk-write", gen.Params{Seed: 3, Count: 40, Size: 64 << 10, Conns: 4})
	for _, n := range []int{2, 4, 8, 64} {
		src, err := pcap.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		d := newDispatcher(n)
		frames, steps, ticks := 0, 0, 0
		var first, last time.Time
		perShard := make([]int, n)
		chunks, pinned := 0, 0
		for done := false; !done; {
			c := d.newChunk()
			c.reset()
			pin := src.Pin(c.arena[:cap(c.arena)])
			if pin {
				pinned++
			}
			for full := false; !full; {
				fr, err := c.next(src)
				if err == pcap.ErrBufferFull {
					break
				}
				if err == io.EOF {
					done = true
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if frames == 0 {
					first = fr.Timestamp
				}
				last = fr.Timestamp
				full = d.add(c, pin)
				frames++
			}
			chunks++
			ticks += len(c.ticks)
			for s, st := range c.steps {
				steps += len(st)
				for _, i := range st {
					if int(c.owner[i]) == s && c.errs[i] == nil {
						perShard[s]++
					}
				}
			}
			for i := range c.frames {
				if pin && !within(c.arena[:cap(c.arena)], c.frames[i].Data) {
					t.Fatalf("%d shards: frame %d copied out of the pinned arena", n, c.frames[i].Number)
				}
			}
		}
		src.Close()
		if want := frames + (n-1)*ticks; steps != want {
			t.Errorf("%d shards: %d steps for %d frames and %d ticks, want %d", n, steps, frames, ticks, want)
		}
		if max := int(last.Sub(first)/time.Second) + 1; ticks > max {
			t.Errorf("%d shards: %d ticks over %v of capture", n, ticks, last.Sub(first))
		}
		if pinned != chunks {
			t.Errorf("%d shards: %d of %d chunks pinned", n, pinned, chunks)
		}
		busy := 0
		for _, k := range perShard {
			if k > 0 {
				busy++
			}
		}
		if busy != min(n, 4) {
			t.Errorf("%d shards: 4 connections over %d shards (%v)", n, busy, perShard)
		}
	}
}

// within reports whether b lies in arena.
func within(arena, b []byte) bool {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(arena)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= base && p+uintptr(len(b)) <= base+uintptr(len(arena))
}
