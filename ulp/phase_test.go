package ulp_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/ulp"
)

// phaseCollector keeps every command record.
type phaseCollector struct{ cmds []ulp.Command }

func (p *phaseCollector) Record(r *analyze.Record) {
	if r.Kind == analyze.KindCommand {
		p.cmds = append(p.cmds, *r.Cmd)
	}
}

func gap(d time.Duration) gen.Duration { return gen.Duration(d) }

// phaseScenario plants known phases (gen Op.Gap, Op.ResponseGap): an NVMe
// Write the target fetches by RDMA Read, an NVMe Read it answers by two
// RDMA Writes, an iSER WRITE(10) whose data the initiator pushes in two
// unsolicited Data-Out Sends, and an NVMe Flush that moves no data.
func phaseScenarios() ([]*gen.Scenario, map[string][3]time.Duration) {
	us := time.Microsecond
	want := map[string][3]time.Duration{
		"Write":     {1290 * us, 2420 * us, 2610 * us}, // the example
		"Read":      {70 * us, 450 * us, 33 * us},
		"WRITE(10)": {40 * us, 125 * us, 980 * us},
	}
	rd := rdmaRead(0x48bc2e10, 0x7f0000300000, 1024, 0x9002)
	rd.Gap, rd.ResponseGap = gap(want["Write"][0]), gap(want["Write"][1])
	wResp := sendInv(cqe(0x2001, 2, 1, 0, 0), 0x48bc2e10)
	wResp.Gap = gap(want["Write"][2])
	w1 := rdmaWrite(0x48bc2e20, 0x7f0000400000, 1024)
	w1.Gap = gap(want["Read"][0])
	w2 := rdmaWrite(0x48bc2e20, 0x7f0000400400, 1024)
	w2.Gap = gap(want["Read"][1])
	rResp := sendInv(cqe(0x2002, 3, 1, 0, 0), 0x48bc2e20)
	rResp.Gap = gap(want["Read"][2])
	nv := nvmeConn("10.0.0.1:40010", 1,
		send("i2r", append(connectSQE(1, 0x01, 0, 1024, 0, 1, 31), connectData(1)...)),
		send("r2i", cqe(1, 1, 1, 1, 0)),
		send("i2r", rw(0x01, 0x2001, 2048, 2, 0x4F, 0x7f0000300000, 1024, 0x48bc2e10)),
		rd, wResp,
		send("i2r", rw(0x02, 0x2002, 4096, 4, 0x4F, 0x7f0000400000, 2048, 0x48bc2e20)),
		w1, w2, rResp,
		send("i2r", sqe(0x00, 0x2003, 1, 0x40, 0, 0, 0)),
		send("r2i", cqe(0x2003, 4, 1, 0, 0)),
	)
	keys := []byte("InitiatorName=iqn.2024-01.org.iwkit:init\x00TargetName=iqn.2024-01.org.iwkit:tgt\x00")
	login := append(iserHdr(0x10, 0, 0, 0, 0), bhs(0x43, 0x87, 0, keys)...)
	lresp := append(iserHdr(0x10, 0, 0, 0, 0), bhs(0x23, 0x87, 0, []byte("InitialR2T=No\x00"))...)
	dataOut := func(itt uint32, final bool) []byte {
		f1 := uint8(0)
		if final {
			f1 = 0x80
		}
		return append(iserHdr(0x10, 0, 0, 0, 0), bhs(0x05, f1, itt, make([]byte, 512))...)
	}
	d1 := send("i2r", dataOut(5, false))
	d1.Gap = gap(want["WRITE(10)"][0])
	d2 := send("i2r", dataOut(5, true))
	d2.Gap = gap(want["WRITE(10)"][1])
	sResp := send("r2i", scsiResp(5, 0, nil))
	sResp.Gap = gap(want["WRITE(10)"][2])
	is := iserConn("10.0.0.1:60010",
		send("i2r", login), send("r2i", lresp),
		send("i2r", scsiCmd(0x10, 0, 0, 0, 0xA1, 5, 1024, rw10(0x2A, 64, 2), nil)),
		d1, d2, sResp,
	)
	// One scenario per connection: interleaved connections share the
	// generator's clock, so one's gap would stretch the other's.
	return []*gen.Scenario{{Name: "phases-nvme", Seed: 27, Connections: []gen.Connection{nv}},
		{Name: "phases-iser", Seed: 28, Connections: []gen.Connection{is}}}, want
}

// TestPhasesPlanted: on a generated capture with planted queueing,
// transfer and backend times, every phase equals the planted one, and the
// three sum to the latency.
func TestPhasesPlanted(t *testing.T) {
	scs, want := phaseScenarios()
	pc := &phaseCollector{}
	for _, sc := range scs {
		src, err := pcap.NewReader(bytes.NewReader(genPcap(t, sc)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := analyze.Run(src, analyze.Config{}, pc); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for _, c := range pc.cmds {
		checkPhaseSum(t, &c)
		w, ok := want[c.Name]
		if !ok {
			if c.Phased && c.Name == "Flush" {
				t.Errorf("Flush moved no data but has phases %v %v %v", c.Queue, c.Transfer, c.Backend)
			}
			continue
		}
		seen[c.Name] = true
		if !c.Phased {
			t.Errorf("%s: no phases", c.Name)
			continue
		}
		if got := [3]time.Duration{c.Queue, c.Transfer, c.Backend}; got != w {
			t.Errorf("%s: phases queue/transfer/backend %v, planted %v", c.Name, got, w)
		}
	}
	for n := range want {
		if !seen[n] {
			t.Errorf("no %s command", n)
		}
	}
}

// checkPhaseSum fails unless a phased command's phases sum exactly to its
// latency, none negative.
func checkPhaseSum(t *testing.T, c *ulp.Command) {
	t.Helper()
	if !c.Phased {
		return
	}
	if c.Queue < 0 || c.Transfer < 0 || c.Backend < 0 || c.Queue+c.Transfer+c.Backend != c.Latency {
		t.Errorf("%s id %d (frame %d): phases %v + %v + %v != latency %v", c.Name, c.ID, c.ResponseFrame, c.Queue, c.Transfer, c.Backend, c.Latency)
	}
}

// realCollector keeps the commands and, per connection, the times of the
// data operations an independent reader sees on the wire: the last
// segment time of every tagged segment (RDMA Write, Read Response) and
// Read Request, and of every Send (iSER Data-Out rides in Sends).
type realCollector struct {
	cmds  []ulp.Command
	conns []int
	data  map[int]map[time.Time]bool
}

func (p *realCollector) Record(r *analyze.Record) {
	switch r.Kind {
	case analyze.KindCommand:
		p.cmds = append(p.cmds, *r.Cmd)
		p.conns = append(p.conns, r.ConnID())
	case analyze.KindPDU:
		if r.PDU == nil || r.PDU.PDU.IsMPAFrame || r.PDU.PDU.SegErr != nil {
			return
		}
		s := &r.PDU.PDU.Seg
		if s.DDP.Tagged || s.RDMAP.Opcode == decode.OpReadRequest || s.RDMAP.Opcode == decode.OpSend || s.RDMAP.Opcode == decode.OpSendInv ||
			s.RDMAP.Opcode == decode.OpSendSE || s.RDMAP.Opcode == decode.OpSendSEInv {
			if p.data == nil {
				p.data = map[int]map[time.Time]bool{}
			}
			m := p.data[r.ConnID()]
			if m == nil {
				m = map[time.Time]bool{}
				p.data[r.ConnID()] = m
			}
			m[r.PDU.LastTime] = true
		}
	}
}

// TestPhasesReal: on every committed capture (testdata/ulp, testdata/siw),
// a command's phases sum exactly to its latency, and both split points
// are times of data segments on the command's connection; the real
// storage captures have phased commands.
func TestPhasesReal(t *testing.T) {
	files, _ := filepath.Glob("../testdata/ulp/*.pcap")
	siw, _ := filepath.Glob("../testdata/siw/*.pcap")
	files = append(files, siw...)
	total := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src, err := pcap.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		pc := &realCollector{}
		if _, err := analyze.Run(src, analyze.Config{}, pc); err != nil {
			t.Fatal(err)
		}
		phased := 0
		for i := range pc.cmds {
			c := &pc.cmds[i]
			checkPhaseSum(t, c)
			if !c.Phased {
				continue
			}
			phased++
			at := pc.data[pc.conns[i]]
			for _, x := range []time.Time{c.Start.Add(c.Queue), c.End.Add(-c.Backend)} {
				if !at[x] && !x.Equal(c.Start) && !x.Equal(c.End) {
					t.Errorf("%s: %s id %d: phase boundary %v is no data segment's time", filepath.Base(f), c.Name, c.ID, x)
				}
			}
		}
		total += phased
		base := filepath.Base(f)
		t.Logf("%s: %d commands, %d with phases", base, len(pc.cmds), phased)
		if !strings.HasPrefix(base, "gen_") && filepath.Base(filepath.Dir(f)) == "ulp" && phased == 0 {
			t.Errorf("%s: a real storage capture with no phased command", base)
		}
	}
	if total == 0 {
		t.Error("no phased command in the committed captures")
	}
}
