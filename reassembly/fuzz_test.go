package reassembly

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/iwkit/iwkit/pcap"
)

// FuzzAssembler feeds arbitrary segment sequences (any sequence numbers,
// flags, payloads, on a few 4-tuples) to an Assembler with small budgets.
// Nothing may panic, the buffers in use never exceed the memory budget, every
// buffer is back after Flush, and the events are self-consistent.
//
// Input format, repeated: op(1) flags(1) seq(4) ack(4) len(2) cut(1)
// payload(len). op bit 0: direction; bits 1-2: which of four flows.
// cut: octets the capture "cut" (PayloadLen - len).

func encodeConv(c *conv, flow int) []byte {
	var b []byte
	for _, p := range c.pkts {
		b = append(b, byte(p.d)|byte(flow)<<1, p.flags)
		b = binary.BigEndian.AppendUint32(b, p.seq)
		b = binary.BigEndian.AppendUint32(b, p.ack)
		b = binary.BigEndian.AppendUint16(b, uint16(len(p.data)))
		cut := 0
		if p.plen > len(p.data) {
			cut = min(p.plen-len(p.data), 255)
		}
		b = append(b, byte(cut))
		b = append(b, p.data...)
	}
	return b
}

var fuzzAddrs = [4][2]string{
	{"10.0.0.1", "10.0.0.2"},
	{"10.0.0.3", "10.0.0.4"},
	{"fd00::1", "fd00::2"},
	{"10.0.0.1", "10.0.0.2"}, // same hosts as flow 0, other ports
}

func FuzzAssembler(f *testing.F) {
	// Seeds: the synthetic conversations of the tests.
	c := handshakeConv(false, false, true, 8, 1)
	c.send(0, 700)
	c.send(1, 1448)
	c.fin()
	f.Add(encodeConv(c, 0))
	c = handshakeConv(true, true, false, 8, 2)
	c.send(0, 300)
	c.send(1, 1000)
	c.dropData(0, 2)
	c.fin()
	f.Add(encodeConv(c, 1))
	mc, _ := midStream(true, true, 3, 3, 600)
	mc.pkts = mc.pkts[:min(len(mc.pkts), 40)]
	f.Add(encodeConv(mc, 2))
	mc, _ = midStream(false, false, 2, 4, 1448)
	mc.pkts = mc.pkts[:min(len(mc.pkts), 30)]
	f.Add(encodeConv(mc, 3))
	m := markerConv(true)
	m.send(0, 97)
	f.Add(encodeConv(m, 0))
	// The hostile inputs of hostile_test.go, short (issue 20 item 6).
	for i, hc := range hostileCases {
		h := hc.conv(12 << 10)
		f.Add(encodeConv(h, i%4))
	}
	// Many flows (MaxFlows is 3 here): four connections, each an MPA
	// exchange and a partial FPDU, opened in turn and again, so that each
	// evicts the least recently used.
	var many []byte
	for round := range 2 {
		for fl := range 4 {
			c := mpaConv(false, true)
			big := make([]byte, 600)
			binary.BigEndian.PutUint16(big, 65000)
			big[2], big[3] = 0x81, 0x40
			c.s[0].data = append(c.s[0].data, big...)
			c.send(0, 1448)
			if round == 1 {
				c.pkts = c.pkts[len(c.pkts)-1:] // the partial FPDU only
			}
			many = append(many, encodeConv(c, fl)...)
		}
	}
	f.Add(many)

	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := Config{
			MaxFlows: 3, MemoryBudget: 1 << 20, FlowBufferLimit: 64 << 10, DetectLimit: 16 << 10,
			ResyncWindow: 1, RetransCheck: 4096, IdleTimeout: 50 * time.Millisecond, Ports: []uint16{4420},
		}
		h := &checkHandler{t: t}
		a := New(cfg, h)
		h.a = a
		ts := time.Unix(1700000000, 0)
		frame := 0
		var p pcap.Packet
		var fed uint64
		for len(data) >= 13 {
			op, flags := data[0], data[1]
			seq := binary.BigEndian.Uint32(data[2:])
			ack := binary.BigEndian.Uint32(data[6:])
			n := int(binary.BigEndian.Uint16(data[10:]))
			cut := int(data[12])
			data = data[13:]
			n = min(n, len(data))
			fl := fuzzAddrs[(op>>1)&3]
			src, dst := netipAddrPort(fl[0], 40000+uint16(op>>1&3)), netipAddrPort(fl[1], 4420-uint16(op>>3&1)*100)
			if op&1 != 0 {
				src, dst = dst, src
			}
			p = pcap.Packet{Src: src.Addr(), Dst: dst.Addr(), SrcPort: src.Port(), DstPort: dst.Port(),
				Seq: seq, Ack: ack, Flags: flags, Payload: data[:n], PayloadLen: n + cut}
			data = data[n:]
			fed += uint64(n)
			frame++
			ts = ts.Add(time.Duration(op>>4) * 10 * time.Millisecond)
			a.Feed(frame, ts, &p)
			if st := a.Stats(); st.MemoryInUse > cfg.MemoryBudget {
				t.Fatalf("memory %d over budget %d", st.MemoryInUse, cfg.MemoryBudget)
			}
		}
		a.Flush()
		// The resync's work is bounded by the input: a few candidates per
		// octet under each framing hypothesis, each parsed once. A quadratic
		// rescan of buffered octets breaks this on inputs of a few KiB.
		if limit := 512*(fed+uint64(frame)) + 1<<16; a.work > limit {
			t.Fatalf("resync work %d for %d frames and %d payload octets (more than %d)", a.work, frame, fed, limit)
		}
		if st := a.Stats(); st.MemoryInUse != 0 || st.FlowsActive != 0 {
			t.Fatalf("after Flush: %d octets of buffers held, %d flows", st.MemoryInUse, st.FlowsActive)
		}
		if h.open != 0 {
			t.Fatalf("%d connections opened and not closed", h.open)
		}
	})
}

// checkHandler checks the events it receives.
type checkHandler struct {
	t    *testing.T
	a    *Assembler
	open int
	ids  map[uint64]bool
}

func (h *checkHandler) Opened(c *Conn) {
	if h.ids == nil {
		h.ids = map[uint64]bool{}
	}
	if h.ids[c.ID] {
		h.t.Fatalf("connection %d opened twice", c.ID)
	}
	h.ids[c.ID] = true
	h.open++
}
func (h *checkHandler) Negotiated(c *Conn, d Dir) { h.live(c) }
func (h *checkHandler) PDU(c *Conn, e *PDUEvent) {
	h.live(c)
	if e.Missing < 0 || e.Len < len(e.Wire) || (e.Missing == 0 && e.Len != len(e.Wire)) {
		h.t.Fatalf("PDU event %+v", e)
	}
	if !e.PDU.IsMPAFrame && e.Missing == 0 && int(e.PDU.FPDU.ULPDULength) != len(e.PDU.FPDU.ULPDU) {
		h.t.Fatalf("ULPDU_Length %d with %d octets", e.PDU.FPDU.ULPDULength, len(e.PDU.FPDU.ULPDU))
	}
}
func (h *checkHandler) Gap(c *Conn, e *GapEvent) {
	h.live(c)
	if e.Len == 0 || e.FPDUsLost < 0 {
		h.t.Fatalf("gap event %+v", e)
	}
}
func (h *checkHandler) Resync(c *Conn, e *ResyncEvent) { h.live(c) }
func (h *checkHandler) Retransmission(c *Conn, e *RetransEvent) {
	h.live(c)
	if e.Len <= 0 {
		h.t.Fatalf("retransmission event %+v", e)
	}
}
func (h *checkHandler) Finding(c *Conn, e *FindingEvent) { h.live(c) }
func (h *checkHandler) Closed(c *Conn, e *CloseEvent) {
	h.live(c)
	delete(h.ids, c.ID)
	h.open--
}

func (h *checkHandler) live(c *Conn) {
	if !h.ids[c.ID] {
		h.t.Fatalf("event for connection %d that is not open", c.ID)
	}
}

// TestRandomImpairments runs many random conversations with loss,
// reordering, duplication, cut frames and random segment sizes through the
// checks of the fuzz target, plus: every FPDU not touched by an impairment is
// found.
func TestRandomImpairments(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 42))
		c := handshakeConv(rng.IntN(2) == 0, rng.IntN(2) == 0, rng.IntN(2) == 0, 0, seed)
		fillFPDUs(c.s[0], rng, 20+rng.IntN(60), 0, 1+rng.IntN(5000))
		fillFPDUs(c.s[1], rng, 5, 0, 200)
		mss := 50 + rng.IntN(3000)
		c.send(0, mss)
		c.send(1, mss)
		var lost [][2]int
		if rng.IntN(2) == 0 {
			lost = c.dropData(0, rng.IntN(20), rng.IntN(40))
		}
		for i := 8; i+1 < len(c.pkts); i++ {
			if rng.IntN(20) == 0 {
				c.pkts[i], c.pkts[i+1] = c.pkts[i+1], c.pkts[i]
			}
			if rng.IntN(30) == 0 {
				c.pkts = append(c.pkts[:i+1], append([]tpkt{c.pkts[i]}, c.pkts[i+1:]...)...)
			}
		}
		c.fin()
		h := &checkHandler{t: t}
		r := &recorder{t: t}
		a := New(Config{}, &teeHandler{h, r})
		for i := range c.pkts {
			p := c.packet(&c.pkts[i])
			a.Feed(i+1, c.ts, &p)
		}
		a.Flush()
		if st := a.Stats(); st.MemoryInUse != 0 || h.open != 0 {
			t.Fatalf("seed %d: %d octets held, %d open", seed, st.MemoryInUse, h.open)
		}
		r.checkFPDUs(t, 0, c.s[0], wantAround(c.s[0], 0, lost))
		r.checkFPDUs(t, 1, c.s[1], c.s[1].fpdus)
		r.checkCoverage(t, 0, c.s[0], c.s[0].fpdus[0].off)
		if t.Failed() {
			t.Fatalf("seed %d mss %d lost %v", seed, mss, lost)
		}
	}
}

// teeHandler sends every event to two handlers.
type teeHandler struct{ a, b Handler }

func (t *teeHandler) Opened(c *Conn)                 { t.a.Opened(c); t.b.Opened(c) }
func (t *teeHandler) Negotiated(c *Conn, d Dir)      { t.a.Negotiated(c, d); t.b.Negotiated(c, d) }
func (t *teeHandler) PDU(c *Conn, e *PDUEvent)       { t.a.PDU(c, e); t.b.PDU(c, e) }
func (t *teeHandler) Gap(c *Conn, e *GapEvent)       { t.a.Gap(c, e); t.b.Gap(c, e) }
func (t *teeHandler) Resync(c *Conn, e *ResyncEvent) { t.a.Resync(c, e); t.b.Resync(c, e) }
func (t *teeHandler) Retransmission(c *Conn, e *RetransEvent) {
	t.a.Retransmission(c, e)
	t.b.Retransmission(c, e)
}
func (t *teeHandler) Finding(c *Conn, e *FindingEvent) { t.a.Finding(c, e); t.b.Finding(c, e) }
func (t *teeHandler) Closed(c *Conn, e *CloseEvent)    { t.a.Closed(c, e); t.b.Closed(c, e) }
