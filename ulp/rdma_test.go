package ulp_test

import (
	"bytes"
	"testing"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/ulp"
)

// cmdKeeper keeps the commands (with their RDMA operations) and the
// ulp.rdma_dropped of each response.
type cmdKeeper struct {
	cmds    []ulp.Command
	dropped map[uint64]uint64 // by nvme.cid of the response
}

func (k *cmdKeeper) Record(r *analyze.Record) {
	switch {
	case r.Kind == analyze.KindCommand:
		k.cmds = append(k.cmds, *r.Cmd)
	case r.Kind == analyze.KindPDU && r.ULP != nil:
		id, _, _ := ulp.FieldByName("ulp.rdma_dropped")
		if v, ok := r.ULP.Get(id); ok {
			if k.dropped == nil {
				k.dropped = map[uint64]uint64{}
			}
			k.dropped[r.ULP.Cmd.ID] = v.U
		}
	}
}

func runKeeper(t *testing.T, sc *gen.Scenario) *cmdKeeper {
	t.Helper()
	src, err := pcap.NewReader(bytes.NewReader(genPcap(t, sc)))
	if err != nil {
		t.Fatal(err)
	}
	k := &cmdKeeper{}
	if _, err := analyze.Run(src, analyze.Config{}, k); err != nil {
		t.Fatal(err)
	}
	return k
}

// TestRDMAOperations: on the generated NVMe capture, each command lists
// the operations that moved its data with their STag, TO, length and
// frames: the Connect's RDMA Read (Request and Response frames), the
// Identify's RDMA Write, the Write's RDMA Read of 32768 octets, the Read's
// two RDMA Writes (16384 octets each, at their TOs), the in-capsule
// Write's Send.
func TestRDMAOperations(t *testing.T) {
	k := runKeeper(t, nvmeScenario())
	byID := map[uint64]*ulp.Command{}
	for i := range k.cmds {
		byID[k.cmds[i].ID] = &k.cmds[i]
	}
	type want struct {
		kind   ulp.XferKind
		stag   uint32
		to     uint64
		length uint64
	}
	for id, ws := range map[uint64][]want{
		0x1001: {{ulp.XferRead, 0x1a2b3c01, 0x7f0000200000, 1024}},
		0x1003: {{ulp.XferWrite, 0x48bc2e02, 0x7f0000100000, 4096}},
		0x2001: {{ulp.XferRead, 0x48bc2e10, 0x7f0000300000, 32768}},
		0x2002: {{ulp.XferWrite, 0x48bc2e11, 0x7f0000400000, 16384}, {ulp.XferWrite, 0x48bc2e11, 0x7f0000404000, 16384}},
		0x3004: {{ulp.XferSend, 0, 0, 4096}},
		0x1002: nil, // Property Get: no data
	} {
		c := byID[id]
		if c == nil {
			t.Fatalf("no command 0x%x", id)
		}
		if len(c.RDMA) != len(ws) {
			t.Fatalf("%s 0x%x: %d operations %+v, want %d", c.Name, id, len(c.RDMA), c.RDMA, len(ws))
		}
		prev := int(c.RequestFrame)
		for i, w := range ws {
			x := c.RDMA[i]
			if x.Kind != w.kind || x.STag != w.stag || x.TO != w.to || x.Length != w.length {
				t.Errorf("%s 0x%x op %d: %+v, want %+v", c.Name, id, i, x, w)
			}
			// frames in order: after the request (a Send: the request's
			// own segments), before the response
			if x.Kind != ulp.XferSend && x.Frame <= prev || x.LastFrame < x.Frame || x.Frame > c.ResponseFrame {
				t.Errorf("%s 0x%x op %d: frames %d-%d, request %d, response %d", c.Name, id, i, x.Frame, x.LastFrame, c.RequestFrame, c.ResponseFrame)
			}
			if x.Kind == ulp.XferRead && (x.ResponseFrame <= x.Frame || x.ResponseLastFrame < x.ResponseFrame || x.ResponseLastFrame > c.ResponseFrame) {
				t.Errorf("%s 0x%x: Read Request %d, Responses %d-%d, response %d", c.Name, id, x.Frame, x.ResponseFrame, x.ResponseLastFrame, c.ResponseFrame)
			}
			if x.Kind == ulp.XferSend && x.LastFrame != c.RequestFrame {
				t.Errorf("%s 0x%x: Send %d-%d, the command's Send ends at %d", c.Name, id, x.Frame, x.LastFrame, c.RequestFrame)
			}
			prev = max(x.LastFrame, x.ResponseLastFrame)
		}
		if c.RDMADropped != 0 {
			t.Errorf("%s 0x%x: %d dropped", c.Name, id, c.RDMADropped)
		}
	}
}

// TestRDMAOperationsBounded: a command lists at most ulp.MaxXfers
// operations and a connection holds at most 4 × Limits.Tasks (4096) for
// its outstanding commands; the others are counted (RDMADropped,
// ulp.rdma_dropped), never kept. 66 NVMe Reads are outstanding at once;
// the first gets 70 RDMA Writes (64 kept, 6 counted), the next 64 get 64
// each until the connection holds 4096, the last two none kept.
func TestRDMAOperationsBounded(t *testing.T) {
	const reads = 66
	ops := []gen.Op{send("i2r", append(connectSQE(1, 0x01, 0, 1024, 0, 1, 127), connectData(1)...)), send("r2i", cqe(1, 1, 1, 1, 0))}
	for i := 0; i < reads; i++ {
		ops = append(ops, send("i2r", rw(0x02, uint16(0x100+i), 0, 1, 0x4F, 0x7f0000000000+uint64(i)<<20, 70*64, 0x5000+uint32(i))))
	}
	for i := 0; i < reads; i++ {
		n := 64
		if i == 0 {
			n = 70
		}
		for j := 0; j < n; j++ {
			ops = append(ops, rdmaWrite(0x5000+uint32(i), 0x7f0000000000+uint64(i)<<20+uint64(j)*64, 64))
		}
	}
	for i := 0; i < reads; i++ {
		ops = append(ops, sendInv(cqe(uint16(0x100+i), uint16(i+2), 1, 0, 0), 0x5000+uint32(i)))
	}
	k := runKeeper(t, &gen.Scenario{Name: "bounded", Seed: 1, Connections: []gen.Connection{nvmeConn("10.0.0.1:40002", 1, ops...)}})
	held := 0
	seen := 0
	for _, c := range k.cmds {
		if c.ID < 0x100 {
			continue
		}
		seen++
		i := int(c.ID - 0x100)
		moved := 64
		if i == 0 {
			moved = 70
		}
		want := min(ulp.MaxXfers, 4096-held, moved)
		if len(c.RDMA) != want || c.RDMADropped != moved-want || c.Writes != moved {
			t.Errorf("Read %d: %d operations listed, %d dropped, %d Writes; want %d, %d, %d", i, len(c.RDMA), c.RDMADropped, c.Writes, want, moved-want, moved)
		}
		if got := k.dropped[c.ID]; got != uint64(moved-want) {
			t.Errorf("Read %d: ulp.rdma_dropped %d, want %d", i, got, moved-want)
		}
		for j, x := range c.RDMA {
			if x.Kind != ulp.XferWrite || x.Length != 64 || x.TO != 0x7f0000000000+uint64(i)<<20+uint64(j)*64 {
				t.Fatalf("Read %d op %d: %+v", i, j, x)
			}
		}
		held += len(c.RDMA)
	}
	if seen != reads || held != 4096 {
		t.Errorf("%d Reads, %d operations listed", seen, held)
	}
}
