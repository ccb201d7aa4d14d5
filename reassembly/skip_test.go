package reassembly

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/iwkit/iwkit/decode"
)

// passes is the scan's first test of the candidate at b[o:] spelled out:
// its control octets pass headTab, and an untagged segment names the queue
// number of its opcode.
func passes(b []byte, o int, ver int, strict bool) bool {
	u := b[o+2 : o+12]
	var v [10]byte
	copy(v[:], u)
	return plausibleHead(v[:], 0xFFFF, strict, ver)
}

// TestSkip checks skip against passes at every offset of random octets,
// of octets made of plausible headers, and of octets where only untagged
// headers with their queue number differ, for each version pair, strict
// or not, at steps 1 and 4. skip may pass what passes refutes (the scan
// checks again) but must never pass over an offset that passes.
func TestSkip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	mk := func(kind int) []byte {
		b := make([]byte, 4096)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		switch kind {
		case 1: // plausible headers here and there, tagged and untagged
			for range 200 {
				o := rng.IntN(len(b) - 12)
				op := decode.Opcode(rng.IntN(12))
				ctrl := byte(1)
				if op.Tagged() {
					ctrl |= decode.DDPFlagT
				}
				b[o+2], b[o+3] = ctrl, 0x40|byte(op)
				if !op.Tagged() {
					binary.BigEndian.PutUint32(b[o+8:], op.QN()+uint32(rng.IntN(2))*uint32(rng.IntN(1<<rng.IntN(32))))
				}
			}
		case 2: // queue numbers at every word: untagged candidates everywhere
			for o := 0; o+4 <= len(b); o += 4 {
				binary.BigEndian.PutUint32(b[o:], uint32(rng.IntN(4)))
			}
		}
		return b
	}
	be := binary.BigEndian
	for kind := range 3 {
		b := mk(kind)
		hi := len(b) - 11
		for _, ver := range []int{-1, 0, 1, 4, 5, 15} {
			for _, strict := range []bool{false, true} {
				keys := keyTab(ver, strict)
				// keyHit is necessary: every offset that passes hits.
				hit := make([]bool, hi)
				n := 0
				for o := range hi {
					hit[o] = keyHit(keys, be.Uint32(b[o:]), be.Uint32(b[o+8:])) != 0
					if passes(b, o, ver, strict) {
						n++
						if !hit[o] {
							t.Fatalf("kind %d ver %d strict %v: offset %d passes, keyHit refutes it", kind, ver, strict, o)
						}
					}
				}
				if !strict && ((kind == 1 && (ver == -1 || ver == 5)) || (kind == 2 && (ver == -1 || ver == 0))) && n == 0 {
					t.Fatalf("kind %d ver %d: no offset passes: the test tests nothing", kind, ver)
				}
				// skip returns the first hit from any start.
				for _, step := range []int{1, 4} {
					for o := 0; o < hi; o++ {
						want := o
						for want < hi && !hit[want] {
							want += step
						}
						if got := skip(b, o, hi, step, keys); got != want {
							t.Fatalf("kind %d ver %d strict %v step %d: skip from %d = %d, want %d", kind, ver, strict, step, o, got, want)
						}
					}
				}
			}
		}
	}
}

// BenchmarkSkip: the scan's first test alone over random octets (one
// offset in 64 passes and is handed back), at the FPDU alignment (step 4)
// and at every offset (step 1), for an unknown version pair, not strict
// (after a handshake).
func BenchmarkSkip(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 7))
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	keys := keyTab(-1, false)
	for _, step := range []int{4, 1} {
		b.Run(map[int]string{1: "step1", 4: "step4"}[step], func(b *testing.B) {
			hi := len(buf) - 11
			b.SetBytes(int64(hi))
			hits := 0
			cpu0 := cpuTime()
			for b.Loop() {
				for o := 0; o < hi; o += step {
					if o = skip(buf, o, hi, step, keys); o < hi {
						hits++
					}
				}
			}
			reportCPU(b, cpuTime()-cpu0, hi)
			b.ReportMetric(float64(hits)/float64(b.N), "hits/op")
		})
	}
}
