package reassembly

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// TestMemoryBound fills the flow table with iWARP connections, each holding
// a partial FPDU and out-of-order data, and checks the heap stays within the
// documented bound. Set IWKIT_MEMTEST=1 to run (it takes a few seconds).
func TestMemoryBound(t *testing.T) {
	if os.Getenv("IWKIT_MEMTEST") == "" {
		t.Skip("set IWKIT_MEMTEST=1")
	}
	var base runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&base)
	a := New(Config{}, &Funcs{})
	frame := 0
	var peak uint64
	for i := range 40000 {
		c := handshakeConv(false, false, true, 0, 1)
		c.addr[0] = netipAddrPort("10.1.0.1", uint16(1000+i%60000))
		c.addr[1] = netipAddrPort("10.2.0.1", uint16(1+i/60000))
		c.s[0].fpdu(writeULPDU(1, 0, payload(60000, 1)))
		c.s[0].fpdu(writeULPDU(1, 0, payload(60000, 2)))
		c.send(0, 1448)
		// Keep: the handshake, the first 20 segments (a partial FPDU), and
		// 20 segments after a hole (out of order).
		var keep []tpkt
		n := 0
		for _, p := range c.pkts {
			if len(p.data) > 0 && p.d == 0 && p.seq > c.s[0].seqAt(20) {
				n++
				if n > 20 && n < 50 || n >= 70 {
					continue
				}
				p.ack, p.flags = 0, 0
			}
			keep = append(keep, p)
		}
		for j := range keep {
			p := c.packet(&keep[j])
			frame++
			a.Feed(frame, time.Unix(1700000000, 0), &p)
		}
		if i%5000 == 0 {
			var m runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			t.Logf("%d conns: heap %d MiB, stats %+v", i, (m.HeapInuse-base.HeapInuse)>>20, a.Stats())
		}
	}
	if peak-base.HeapInuse > 100<<20 {
		t.Errorf("heap grew to %d MiB", (peak-base.HeapInuse)>>20)
	}
}
