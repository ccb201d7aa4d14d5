package ulp_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/render"
	"github.com/iwkit/iwkit/ulp"
)

// sendSeeds are the payloads of single-segment Sends that decoded as proto
// in the captures of testdata/ulp (generated and real).
type sendSeeds struct {
	proto ulp.Proto
	out   [][]byte
}

func (s *sendSeeds) Record(r *analyze.Record) {
	if r.Kind != analyze.KindPDU || r.ULP == nil || r.ULP.Proto != s.proto || r.PDU.PDU.IsMPAFrame {
		return
	}
	seg := &r.PDU.PDU.Seg
	if !seg.DDP.Tagged && seg.DDP.QN == 0 && seg.DDP.MO == 0 && seg.DDP.Last && len(s.out) < 200 {
		s.out = append(s.out, append([]byte(nil), seg.Payload...))
	}
}

func addSeeds(f *testing.F, proto ulp.Proto) {
	files, _ := filepath.Glob("../testdata/ulp/*.pcap")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		src, err := pcap.NewReader(bytes.NewReader(data))
		if err != nil {
			f.Fatal(err)
		}
		s := &sendSeeds{proto: proto}
		if _, err := analyze.Run(src, analyze.Config{}, s); err != nil {
			f.Fatal(err)
		}
		for _, p := range s.out {
			f.Add(p, true)
			f.Add(p, false)
		}
	}
}

// fuzzConn feeds data to a Conn forced to proto as Sends in both
// directions (whole and in two segments), then as RDMA operations, and
// checks every message it returns renders to valid JSON with a summary.
func fuzzConn(t *testing.T, proto ulp.Proto, data []byte, i2r bool) {
	c := ulp.NewConn(0, proto, ulp.Limits{Tasks: 16, Message: 4096})
	at := ulp.At{Frame: 1, Last: 1, Time: time.Unix(1, 0)}
	check := func(m *ulp.Message) {
		if m == nil {
			return
		}
		if len(m.Summary) == 0 {
			t.Fatalf("message without a summary: %+v", m.F)
		}
		j := render.AppendULPJSON([]byte("{\"x\":1"), m, false)
		j = append(j, '}')
		if !json.Valid(j) {
			t.Fatalf("invalid JSON: %s", j)
		}
	}
	msn := uint32(0)
	send := func(d bool, op decode.Opcode, inv uint32, parts ...[]byte) {
		msn++
		mo := uint32(0)
		for i, p := range parts {
			seg := decode.Segment{DDP: decode.DDPHeader{QN: 0, MSN: msn, MO: mo, Last: i == len(parts)-1}, RDMAP: decode.RDMAPControl{Opcode: op}, InvalidateSTag: inv, Payload: p}
			check(c.Segment(at, d, &seg, 0))
			mo += uint32(len(p))
		}
	}
	var stag uint32
	if len(data) >= 40 {
		stag = uint32(data[35]) | uint32(data[36])<<8 | uint32(data[37])<<16 | uint32(data[38])<<24
	}
	send(i2r, decode.OpSend, 0, data)
	send(!i2r, decode.OpSendInv, stag, data)
	h := len(data) / 2
	send(i2r, decode.OpSend, 0, data[:h], data[h:])
	w := decode.Segment{DDP: decode.DDPHeader{Tagged: true, STag: stag, Last: true}, RDMAP: decode.RDMAPControl{Opcode: decode.OpWrite}, Payload: data}
	check(c.Segment(at, !i2r, &w, 0))
	rr := decode.Segment{DDP: decode.DDPHeader{QN: 1, MSN: 1, Last: true}, RDMAP: decode.RDMAPControl{Opcode: decode.OpReadRequest},
		ReadRequest: decode.ReadRequest{SinkSTag: 7, SrcSTag: stag, Size: uint32(len(data))}}
	check(c.Segment(at, !i2r, &rr, 0))
	resp := decode.Segment{DDP: decode.DDPHeader{Tagged: true, STag: 7, Last: true}, RDMAP: decode.RDMAPControl{Opcode: decode.OpReadResponse}, Payload: data}
	check(c.Segment(at, i2r, &resp, 0))
	send(!i2r, decode.OpSend, 0, data)
	c.Findings()
	c.Done()
	c.Finish()
}

// fuzzProto seeds f from the captures and fuzzes proto's decoder.
func fuzzProto(f *testing.F, proto ulp.Proto) {
	addSeeds(f, proto)
	f.Fuzz(func(t *testing.T, data []byte, i2r bool) { fuzzConn(t, proto, data, i2r) })
}

func FuzzNVMe(f *testing.F)    { fuzzProto(f, ulp.NVMe) }
func FuzzRPCRDMA(f *testing.F) { fuzzProto(f, ulp.RPCRDMA) }
func FuzzISER(f *testing.F)    { fuzzProto(f, ulp.ISER) }
func FuzzSMBD(f *testing.F)    { fuzzProto(f, ulp.SMBD) }

// FuzzPrivateData: any MPA private data, any port.
func FuzzPrivateData(f *testing.F) {
	f.Add([]byte{0xF6, 0xAB, 0x0E, 0x18, 1, 1, 3, 3}, uint16(20049), true)
	f.Add(make([]byte, 32), uint16(4420), true)
	f.Add([]byte{0x80, 0, 0, 0}, uint16(3260), false)
	f.Add([]byte{0x20, 0, 0, 0, 1, 0, 0, 0}, uint16(5445), true)
	f.Fuzz(func(t *testing.T, pd []byte, port uint16, reject bool) {
		for _, rev1 := range []bool{false, true} {
			fr := decode.MPAFrame{Rev: 2, Enhanced: true, HasV2: true, Reject: reject, PrivateData: append(make([]byte, 4), pd...)}
			if rev1 {
				fr = decode.MPAFrame{Rev: 1, Reject: reject, PrivateData: pd, Rev1IRDORD: len(pd) >= 8}
			}
			c := ulp.NewConn(port, ulp.None, ulp.Limits{})
			at := ulp.At{Frame: 1, Last: 1}
			for _, i2r := range []bool{true, false} {
				if m := c.Handshake(at, i2r, &fr); m != nil && len(m.Summary) == 0 {
					t.Fatalf("private data message without a summary")
				}
			}
		}
	})
}
