package bpf

import (
	"sync"
	"testing"

	"github.com/gopacket/gopacket/layers"
)

// One Filter, compiled once, serves goroutines that meet link types at the
// same time (iwtui's index and its filter passes share it): each gets the
// verdicts a Filter of its own gives. Run with -race (test.sh does).
func TestFilterConcurrent(t *testing.T) {
	type frame struct {
		lt   layers.LinkType
		data []byte
	}
	var frames []frame
	for _, p := range testPackets() {
		if p.hasVLAN || len(p.data) < 14 {
			continue
		}
		frames = append(frames, frame{layers.LinkTypeEthernet, p.data})
		if typ := uint16(p.data[12])<<8 | uint16(p.data[13]); typ == 0x0800 || typ == 0x86dd {
			frames = append(frames, frame{layers.LinkTypeRaw, p.data[14:]})
		}
		sll := append([]byte{0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, p.data[12], p.data[13]}, p.data[14:]...)
		frames = append(frames, frame{layers.LinkTypeLinuxSLL, sll})
	}
	const expr = "tcp port 4420 or udp"
	want := make([]bool, len(frames))
	kept := 0
	for i, f := range frames {
		own, err := NewFilter(expr)
		if err != nil {
			t.Fatal(err)
		}
		if want[i], err = own.Match(f.lt, f.data); err != nil {
			t.Fatal(err)
		}
		if want[i] {
			kept++
		}
	}
	if kept == 0 || kept == len(frames) {
		t.Fatalf("the filter keeps %d of %d frames: no test", kept, len(frames))
	}
	shared, err := NewFilter(expr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range frames {
				i := (k*3 + g) % len(frames) // each goroutine its own order of link types
				ok, err := shared.Match(frames[i].lt, frames[i].data)
				if err != nil || ok != want[i] {
					t.Errorf("goroutine %d, frame %d (%v): %v %v, want %v", g, i, frames[i].lt, ok, err, want[i])
					return
				}
			}
		}()
	}
	wg.Wait()
}
