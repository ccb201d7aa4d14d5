package reassembly

import (
	"testing"

	"github.com/iwkit/iwkit/pcap"
)

// PDUEvent.Ack/HasAck: the ACK of the segment holding the PDU's first octet.

// ackConv is a handshake (Request from 0, Reply from 1) followed by FPDUs of
// direction 0 of the given sizes; the data segments of direction 0 are cut
// at cuts (offsets from the start of its Full Operation Phase).
func ackConv(markers bool, sizes []int, cuts ...int) *conv {
	c := newConv(40000, 9999, 1000, 500000)
	c.handshake()
	c.s[0].frame(mpaReq(markers, true))
	c.send(0, 1448)
	c.s[1].frame(mpaRep(markers, true))
	c.send(1, 1448)
	c.s[0].fullOp(markers, true)
	c.s[1].fullOp(markers, true)
	for i, n := range sizes {
		c.s[0].fpdu(sendULPDU(uint32(i+1), payload(n, byte(i))))
	}
	c.sendCuts(0, cuts...)
	return c
}

// setAcks gives every data segment of direction d its own acknowledgment
// number (a distinct octet of the other direction), and clears the ACK flag
// of the segments listed in noAck (indexes into the data segments).
func (c *conv) setAcks(d Dir, noAck ...int) []uint32 {
	o := c.s[d.Other()]
	var acks []uint32
	for k, i := range c.dataPackets(d) {
		p := &c.pkts[i]
		p.ack = o.seqAt(min(k, len(o.data)))
		acks = append(acks, p.ack)
		for _, j := range noAck {
			if j == k {
				p.flags &^= pcap.TCPAck
			}
		}
	}
	return acks
}

// wantAck returns the ACK of the packet carrying the octet at seq in d.
func (c *conv) wantAck(d Dir, seq uint32) (uint32, bool, bool) {
	for i := range c.pkts {
		p := &c.pkts[i]
		if p.d == d && len(p.data) > 0 && seq-p.seq < uint32(len(p.data)) {
			return p.ack, p.flags&pcap.TCPAck != 0, true
		}
	}
	return 0, false, false
}

// checkAcks compares every PDU's Ack/HasAck with the packet holding its first
// octet.
func checkAcks(t *testing.T, c *conv, r *recorder) {
	t.Helper()
	for _, g := range r.pdus {
		ack, has, ok := c.wantAck(g.dir, g.seq)
		if !ok {
			t.Errorf("%v seq=%d: no packet holds the first octet", g.dir, g.seq)
			continue
		}
		if g.hasAck != has || g.ack != ack {
			t.Errorf("%v seq=%d frame=%v: ack=%d/%v, want %d/%v\n%s", g.dir, g.seq, g.frame, g.ack, g.hasAck, ack, has, r.dump())
		}
	}
}

func TestAckOnePDUPerSegment(t *testing.T) {
	for _, markers := range []bool{false, true} {
		sizes := []int{100, 700, 40, 1200}
		c := newConv(0, 0, 0, 0)
		{
			c0 := ackConv(markers, sizes)
			// Cut at the FPDU boundaries: each FPDU in a segment of its own.
			var cuts []int
			from := c0.s[0].fpdus[0].off
			for _, w := range c0.s[0].fpdus[1:] {
				cuts = append(cuts, w.off-from)
			}
			c = ackConv(markers, sizes, cuts...)
		}
		acks := c.setAcks(0, 2)
		c.setAcks(1)
		r := c.feed(t, Config{})
		r.checkFPDUs(t, 0, c.s[0], c.s[0].fpdus)
		checkAcks(t, c, r)
		// The MPA frames carry the ACK of their segments too.
		nFrames := 0
		for _, g := range r.pdus {
			if g.frame {
				nFrames++
				if !g.hasAck {
					t.Errorf("MPA frame %v without ACK", g.dir)
				}
			}
		}
		if nFrames != 2 {
			t.Errorf("%d MPA frames, want 2", nFrames)
		}
		// Data segment 0 of direction 0 is the Request, 1.. the FPDUs; 2
		// had no ACK flag.
		f := r.fpdus(0)
		if len(f) != len(sizes) || f[0].ack != acks[1] || f[1].hasAck || f[2].ack != acks[3] {
			t.Errorf("markers=%v: fpdus %+v, acks %v", markers, f, acks)
		}
	}
}

func TestAckPDUSpanningSegments(t *testing.T) {
	for _, markers := range []bool{false, true} {
		// One 3000-octet FPDU cut in two, the second segment acknowledging
		// more than the first; the Request is cut in two as well.
		c := newConv(40000, 9999, 1000, 500000)
		c.handshake()
		c.s[0].frame(mpaReq(markers, true))
		c.sendCuts(0, 10)
		c.s[1].frame(mpaRep(markers, true))
		c.send(1, 1448)
		c.s[0].fullOp(markers, true)
		c.s[1].fullOp(markers, true)
		c.s[0].fpdu(sendULPDU(1, payload(3000, 1)))
		c.s[0].fpdu(sendULPDU(2, payload(10, 2)))
		c.sendCuts(0, 1448)
		acks := c.setAcks(0)
		if acks[2] == acks[3] {
			t.Fatal("test needs distinct ACKs")
		}
		r := c.feed(t, Config{})
		r.checkFPDUs(t, 0, c.s[0], c.s[0].fpdus)
		checkAcks(t, c, r)
		f := r.fpdus(0)
		if len(f) != 2 || f[0].ack != acks[2] || !f[0].hasAck || f[0].ff == f[0].lf || f[1].ack != acks[3] {
			t.Errorf("markers=%v: fpdus %+v, acks %v", markers, f, acks)
		}
		for _, g := range r.pdus {
			if g.frame && g.dir == 0 && g.ack != acks[0] {
				t.Errorf("Request ack=%d, want %d (its first segment's)", g.ack, acks[0])
			}
		}
	}
}

func TestAckOutOfOrder(t *testing.T) {
	for _, markers := range []bool{false, true} {
		sizes := []int{100, 2000, 300, 50, 900}
		// Segments: FPDU 0 | first 600 octets of FPDU 1 | its rest |
		// FPDUs 2 and 3 | FPDU 4.
		var cuts []int
		{
			f := ackConv(markers, sizes).s[0].fpdus
			from := f[0].off
			cuts = []int{f[1].off - from, f[1].off + 600 - from, f[2].off - from, f[4].off - from}
		}
		c := ackConv(markers, sizes, cuts...)
		acks := c.setAcks(0)
		c.setAcks(1)
		dp := c.dataPackets(0)[1:] // after the Request
		if len(dp) != 5 {
			t.Fatalf("%d FPDU segments", len(dp))
		}
		// Deliver the FPDU segments in reverse order: all but the first
		// wait in the out-of-order buffer.
		seg := make([]tpkt, len(dp))
		for i, j := range dp {
			seg[i] = c.pkts[j]
		}
		for i, j := range dp {
			c.pkts[j] = seg[len(seg)-1-i]
		}
		r := c.feed(t, Config{})
		r.checkFPDUs(t, 0, c.s[0], c.s[0].fpdus)
		checkAcks(t, c, r)
		if r.stats.OOOSegments == 0 {
			t.Errorf("nothing was reordered")
		}
		seen := map[uint32]bool{}
		for _, g := range r.fpdus(0) {
			seen[g.ack] = true
		}
		if len(seen) != 4 {
			t.Errorf("markers=%v: ACKs %v from %v", markers, seen, acks)
		}
	}
}
