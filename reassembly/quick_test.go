package reassembly

import (
	"math/rand/v2"
	"testing"
)

// TestQuickScanSame: scan's quick tests (quick, succBad, quickMarked)
// decide each candidate as chain would, so with them off every event is
// the same: on streams of valid FPDUs between runs of random octets (some
// not a multiple of 4 long), with and without markers and CRCs, segments
// of random sizes, some lost; on random octets after the handshake; and on
// mid-stream starts.
func TestQuickScanSame(t *testing.T) {
	defer func() { quickScan = true }()
	run := func(c *conv) string {
		quickScan = true
		a := c.feed(t, Config{})
		quickScan = false
		b := c.feed(t, Config{})
		if a.dump() != b.dump() {
			t.Fatalf("events differ with the quick tests on:\n%s\n\nand off:\n%s", a.dump(), b.dump())
		}
		return a.dump()
	}
	resyncs, fpdus := 0, 0
	count := func(r *recorder) {
		resyncs += len(r.resync)
		fpdus += len(r.fpdus(0))
	}
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 11))
		markers, crc := rng.IntN(2) == 0, rng.IntN(3) != 0
		c := mpaConv(markers, crc)
		s := c.s[0]
		for range 5 {
			fillFPDUs(s, rng, 3+rng.IntN(10), 0, 1+rng.IntN(3000))
			junk := make([]byte, rng.IntN(12000)&^3+rng.IntN(2)*rng.IntN(4))
			for i := range junk {
				junk[i] = byte(rng.Uint32())
			}
			s.data = append(s.data, junk...)
		}
		fillFPDUs(s, rng, 5, 0, 1000)
		c.send(0, 100+rng.IntN(3000))
		if rng.IntN(2) == 0 {
			c.dropData(0, rng.IntN(20), rng.IntN(40))
		}
		c.fin()
		run(c)
		count(c.feed(t, Config{}))
	}
	for _, markers := range []bool{false, true} {
		for _, crc := range []bool{false, true} {
			c := hostileConv(markers, crc, 1<<20, hostileRandom)
			run(c)
			c = hostileConv(markers, crc, 1<<18, hostileMarkers)
			run(c)
			for first := range 3 {
				mc, _ := midStream(markers, crc, first, uint64(first+7), 700+first*500)
				run(mc)
				count(mc.feed(t, Config{}))
			}
		}
	}
	// The streams make the scan work: resyncs that find FPDUs.
	if resyncs == 0 || fpdus == 0 {
		t.Fatalf("%d resyncs, %d FPDUs: the test tests nothing", resyncs, fpdus)
	}
	t.Logf("%d resyncs, %d FPDUs", resyncs, fpdus)
}
