package endpoint

import (
	"fmt"
	"testing"
)

var opSizes = []int{0, 1, 3, 63, 64, 1000, 4095, 4096, 65460, 65536, 1<<20 + 7, 5 << 20}

func testOps(t *testing.T, cfg Config) {
	max := opSizes[len(opSizes)-1]
	cl, sv := connect(t, pairOpts{client: cfg, server: cfg})
	// Server memory: receive buffer, Write target, Read source.
	rmr, rbuf := sv.reg(t, max, AccessAll)
	wmr, wbuf := sv.reg(t, max, AccessAll)
	smr, sbuf := sv.reg(t, max, AccessAll)
	// Client memory.
	cmr, cbuf := cl.reg(t, max, AccessAll)
	kmr, kbuf := cl.reg(t, max, AccessAll)
	for i, n := range opSizes {
		seed := uint64(i + 1)
		t.Run(fmt.Sprintf("send/%d", n), func(t *testing.T) {
			for _, op := range []Opcode{OpSend, OpSendSE} {
				fillRand(cbuf[:n], seed)
				if _, err := sv.qp.PostRecv(RecvWR{WRID: 7, SGL: []SGE{rmr.SGE(0, max)}}); err != nil {
					t.Fatal(err)
				}
				if _, err := cl.qp.PostSend(SendWR{WRID: 1, Opcode: op, Signaled: true, SGL: []SGE{cmr.SGE(0, n)}}); err != nil {
					t.Fatal(err)
				}
				cl.waitOK(t, op)
				wc := sv.waitOK(t, OpRecv)
				if wc.ByteLen != uint32(n) || wc.WRID != 7 || wc.Solicited != (op == OpSendSE) {
					t.Fatalf("recv completion %+v", wc)
				}
				mustEqual(t, "send", rbuf[:n], cbuf[:n])
			}
		})
		t.Run(fmt.Sprintf("write/%d", n), func(t *testing.T) {
			fillRand(cbuf[:n], seed+100)
			if _, err := cl.qp.PostSend(SendWR{WRID: 2, Opcode: OpWrite, Signaled: true, SGL: []SGE{cmr.SGE(0, n)},
				RemoteAddr: wmr.Addr(), RKey: wmr.STag()}); err != nil {
				t.Fatal(err)
			}
			cl.waitOK(t, OpWrite)
			// A Send after the Write: its delivery implies the Write is placed.
			sv.qp.PostRecv(RecvWR{WRID: 8, SGL: []SGE{rmr.SGE(0, 16)}})
			cl.qp.PostSend(SendWR{WRID: 3, Opcode: OpSend, SGL: nil})
			sv.waitOK(t, OpRecv)
			mustEqual(t, "write", wbuf[:n], cbuf[:n])
			wmr.Sync()
		})
		t.Run(fmt.Sprintf("read/%d", n), func(t *testing.T) {
			fillRand(sbuf[:n], seed+200)
			smr.Sync()
			clear(kbuf[:n])
			if _, err := cl.qp.PostSend(SendWR{WRID: 4, Opcode: OpRead, Signaled: true, SGL: []SGE{kmr.SGE(0, n)},
				RemoteAddr: smr.Addr(), RKey: smr.STag()}); err != nil {
				t.Fatal(err)
			}
			cl.waitOK(t, OpRead)
			mustEqual(t, "read", kbuf[:n], sbuf[:n])
		})
	}
	c := cl.qp.Counters()
	if c.TxSends == 0 || c.TxWrites == 0 || c.TxReadReqs == 0 || c.RxReadResps == 0 {
		t.Errorf("counters %+v", c)
	}
}

func TestOpsLoopback(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"v2", Config{}},
		{"v2-crc", Config{CRC: true}},
		{"v1", Config{Rev: 1}},
		{"v2-p2p-crc", Config{CRC: true, PeerToPeer: true}},
		{"v2-markers-crc", Config{CRC: true, Markers: true}},
		{"v1-markers", Config{Rev: 1, Markers: true}},
		{"small-mulpdu", Config{CRC: true, MULPDU: 200}},
	} {
		t.Run(tc.name, func(t *testing.T) { testOps(t, tc.cfg) })
	}
}
