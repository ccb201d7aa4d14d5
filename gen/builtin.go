package gen

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/iwkit/iwkit/decode"
)

// Params sizes a built-in scenario. Zero fields take the scenario's
// defaults.
type Params struct {
	Seed     uint64
	Count    int   // operations (rping: pings) per connection
	Conns    int   // connections
	Size     int64 // message size in octets
	MaxBytes int64 // repeat the operations until the capture has this many octets
}

// builtin is one named scenario.
type builtin struct {
	desc  string
	build func(p Params) *Scenario
}

var builtins = map[string]builtin{
	"rping":           {"rdma-core rping over siw: per ping the client Sends its source buffer, the server RDMA Reads it, Sends go-ahead, the client Sends its sink buffer, the server RDMA Writes the data back and Sends done (MPA v2, CRC off, like siw)", rping},
	"bulk-write":      {"perftest-style bandwidth run: RDMA Writes of Size (default 64KiB) back to back, CRC on", bulkWrite},
	"read-heavy":      {"RDMA Reads of Size (default 16KiB) with a Send every 8 reads, CRC on, markers toward the responder", readHeavy},
	"mixed":           {"every operation in both directions (Sends, Send with SE/Invalidate, Write, Write+Immediate, Read, Immediate Data, FetchAdd, CmpSwap), MPA v2 peer-to-peer with a Write RTR", mixed},
	"every-terminate": {"one connection per Terminate cause of decode.TermCauses(): the client sends the message to blame (with the fault, where the wire can show it), the server Terminates with the headers RFC 5040 §7.1 prescribes", everyTerminate},
	"erdma":           {"Alibaba erdma (Linux erdma_cm.c): MPA Rev 129 frames with the 8-octet cookie/congestion-control extension PD_Length does not count, no markers, CRC off; Sends both ways, RDMA Writes and Reads", erdma},
	"cxgb4-fallback":  {"Chelsio cxgb4's MPA v2 to v1 fallback (c4iw_reconnect): per connection pair, an MPA v2 Request the Responder resets (an RFC 5044-only peer), then the Initiator's MPA v1 reconnect from the next port, with Sends and RDMA Writes", cxgb4Fallback},
	"hostile":         {"every impairment: header faults (wrong MSN/QN/DV/RV, MO out of order, unknown STag, long Read Response, bad CRC) on connection 0, TCP faults (drop, reorder, duplicate, retransmit, snaplen) on 1, a mid-stream start on 2", hostile},
}

// Builtins lists the built-in scenario names with a description each.
func Builtins() [][2]string {
	var out [][2]string
	for name, b := range builtins {
		out = append(out, [2]string{name, b.desc})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// Builtin returns the named built-in scenario sized by p.
func Builtin(name string, p Params) (*Scenario, error) {
	b, ok := builtins[name]
	if !ok {
		return nil, fmt.Errorf("no built-in scenario %q", name)
	}
	sc := b.build(p)
	sc.Name = name
	sc.Description = b.desc
	sc.Seed = p.Seed
	sc.MaxBytes = Size(p.MaxBytes)
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("built-in %s: %w", name, err)
	}
	return sc, nil
}

func or(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func ptr[T any](v T) *T { return &v }

// rpingMsg is the text rping puts in its start buffer for ping n
// (rping.c: "rdma-ping-%d: " then ASCII from 'A'+n%58 upwards, 0 at the end).
func rpingMsg(n, size int) []byte {
	b := []byte(fmt.Sprintf("rdma-ping-%d: ", n))
	if len(b) > size {
		b = b[:size]
	}
	c := byte(65 + n%58)
	for len(b) < size {
		b = append(b, c)
		c++
		if c > 122 {
			c = 65
		}
	}
	if size > 0 {
		b[size-1] = 0
	}
	return b
}

// rpingInfo is rping's struct rping_rdma_info {be64 buf; be32 rkey; be32
// size}, the buffer advertisement it Sends.
func rpingInfo(addr uint64, rkey uint32, size int) Data {
	b := binary.BigEndian.AppendUint64(nil, addr)
	b = binary.BigEndian.AppendUint32(b, rkey)
	return binary.BigEndian.AppendUint32(b, uint32(size))
}

func rping(p Params) *Scenario {
	sc := &Scenario{}
	size := int(p.Size)
	if size <= 0 {
		size = 64 // rping -S default
	}
	count := or(p.Count, 10)
	for ci := range or(p.Conns, 1) {
		// siw STags: index << 8 | key; buffers in the heap.
		startRkey, rdmaRkey := uint32(0x1a00+ci*0x10)<<8|0x37, uint32(0x1a01+ci*0x10)<<8|0x52
		srvRkey := uint32(0x2c00+ci*0x10)<<8 | 0x9d
		startBuf, rdmaBuf := uint64(0x55d0c3a41000+ci*0x10000), uint64(0x55d0c3a42000+ci*0x10000)
		srvBuf := uint64(0x5612f7e83000 + ci*0x10000)
		c := Connection{
			Client:     fmt.Sprintf("10.0.2.15:%d", 44000+ci),
			Server:     "10.0.2.16:7174",
			Timestamps: true,
			MPA:        MPA{Rev: ptr(2), IRD: ptr[uint16](1), ORD: ptr[uint16](1), ReplyIRD: ptr[uint16](1), ReplyORD: ptr[uint16](1)},
		}
		for n := range count {
			msg := rpingMsg(n, size)
			c.Ops = append(c.Ops,
				Op{Op: OpNameSend, Payload: rpingInfo(startBuf, startRkey, size)},
				Op{Op: OpNameRead, Dir: "r2i", Size: Size(size), Payload: msg,
					SinkSTag: ptr(srvRkey), SinkTO: ptr(srvBuf), STag: ptr(startRkey), TO: ptr(startBuf)},
				Op{Op: OpNameSend, Dir: "r2i", Payload: make(Data, 16)},
				Op{Op: OpNameSend, Payload: rpingInfo(rdmaBuf, rdmaRkey, size)},
				Op{Op: OpNameWrite, Dir: "r2i", Payload: msg, STag: ptr(rdmaRkey), TO: ptr(rdmaBuf)},
				Op{Op: OpNameSend, Dir: "r2i", Payload: make(Data, 16)},
			)
		}
		sc.Connections = append(sc.Connections, c)
	}
	return sc
}

func bulkWrite(p Params) *Scenario {
	sc := &Scenario{}
	size := Size(p.Size)
	if size <= 0 {
		size = 64 << 10
	}
	for range or(p.Conns, 1) {
		sc.Connections = append(sc.Connections, Connection{
			MPA: MPA{Rev: ptr(2), CRC: true, IRD: ptr[uint16](16), ORD: ptr[uint16](16), ReplyIRD: ptr[uint16](16), ReplyORD: ptr[uint16](16)},
			Ops: []Op{{Op: OpNameWrite, Size: size, Repeat: or(p.Count, 100)}},
		})
	}
	return sc
}

func readHeavy(p Params) *Scenario {
	sc := &Scenario{}
	size := Size(p.Size)
	if size <= 0 {
		size = 16 << 10
	}
	count := or(p.Count, 64)
	for range or(p.Conns, 1) {
		c := Connection{MPA: MPA{Rev: ptr(1), CRC: true, MarkersI2R: true}, Timestamps: true}
		for i := range count {
			c.Ops = append(c.Ops, Op{Op: OpNameRead, Size: size})
			if i%8 == 7 {
				c.Ops = append(c.Ops, Op{Op: OpNameSend, Size: 32})
			}
		}
		sc.Connections = append(sc.Connections, c)
	}
	return sc
}

func mixed(p Params) *Scenario {
	sc := &Scenario{}
	size := Size(p.Size)
	if size <= 0 {
		size = 3000
	}
	rounds := or(p.Count, 2)
	for range or(p.Conns, 1) {
		c := Connection{MPA: MPA{Rev: ptr(2), CRC: true, RTR: "write", IRD: ptr[uint16](8), ORD: ptr[uint16](8), ReplyIRD: ptr[uint16](8), ReplyORD: ptr[uint16](8),
			RequestData: Data("iwkit-mixed"), ReplyData: Data("ok")}}
		for r := range rounds {
			for _, dir := range []string{"i2r", "r2i"} {
				c.Ops = append(c.Ops,
					Op{Op: OpNameSend, Dir: dir, Size: size},
					Op{Op: OpNameSendSE, Dir: dir, Size: 100},
					Op{Op: OpNameSendInv, Dir: dir, Size: 64, InvSTag: 0x00abcd00 + uint32(r)},
					Op{Op: OpNameSendSEInv, Dir: dir, Size: 0, InvSTag: 0x00abce00 + uint32(r)},
					Op{Op: OpNameWrite, Dir: dir, Size: size * 2},
					Op{Op: OpNameWriteImm, Dir: dir, Size: 512, Imm: 0x1122334455667788},
					Op{Op: OpNameRead, Dir: dir, Size: size},
					Op{Op: OpNameImm, Dir: dir, Imm: uint64(r)},
					Op{Op: OpNameImmSE, Dir: dir, Imm: ^uint64(r)},
					Op{Op: OpNameFetchAdd, Dir: dir, AddSwap: 1, Orig: 41 + uint64(r)},
					Op{Op: OpNameCmpSwap, Dir: dir, AddSwap: 7, Mask: ^uint64(0), Compare: 5, Orig: 5},
				)
			}
		}
		sc.Connections = append(sc.Connections, c)
	}
	return sc
}

func everyTerminate(p Params) *Scenario {
	sc := &Scenario{}
	v := func(x uint64) *uint64 { return &x }
	for i, tc := range decode.TermCauses() {
		// The message the Terminate blames; where the wire can show the
		// cause, the message has the fault (RFC 5040 §7.1: a Terminate
		// reports an error in a message it received).
		blamed := Op{Op: OpNameSend, Size: 256}
		var imp *Impairment
		switch {
		case tc.Layer == decode.TermLayerRDMAP && tc.EType == 1:
			// Remote protection errors come from Read Requests: the
			// responder refuses to answer and Terminates.
			blamed = Op{Op: OpNameRead, Size: 4096, Unanswered: true}
			switch tc.Code {
			case 0x00:
				blamed.STag = ptr[uint32](0) // Invalid STag: STag 0
			case 0x04:
				blamed.TO = ptr(^uint64(0) - 1023) // TO wrap
			}
		case tc.Layer == decode.TermLayerRDMAP && tc.EType == 2 && tc.Code == 0x05:
			imp = &Impairment{Kind: ImpBadRDMAPVersion, Value: v(2)}
		case tc.Layer == decode.TermLayerDDP && tc.EType == 1:
			blamed = Op{Op: OpNameWrite, Size: 2048}
			switch tc.Code {
			case 0x00:
				blamed.STag = ptr[uint32](0)
			case 0x03:
				blamed.TO = ptr(^uint64(0) - 999)
			case 0x04:
				imp = &Impairment{Kind: ImpBadDDPVersion, Value: v(2)}
			}
		case tc.Layer == decode.TermLayerDDP && tc.EType == 2:
			switch tc.Code {
			case 0x01:
				imp = &Impairment{Kind: ImpWrongQN, Value: v(7)}
			case 0x03:
				imp = &Impairment{Kind: ImpWrongMSN, Value: v(9)}
			case 0x04:
				blamed.Size = 3000
				imp = &Impairment{Kind: ImpMOOutOfOrder}
			case 0x06:
				imp = &Impairment{Kind: ImpBadDDPVersion, Value: v(2)}
			}
		}
		if imp != nil {
			imp.Conn, imp.Op = i, ptr(0)
			sc.Impairments = append(sc.Impairments, *imp)
		}
		ops := []Op{blamed, {Op: OpNameTerminate, Dir: "r2i", Layer: tc.Layer, EType: tc.EType, Code: tc.Code, Blame: ptr(0)}}
		sc.Connections = append(sc.Connections, Connection{
			Client: fmt.Sprintf("192.168.7.1:%d", 33000+i),
			Server: "192.168.7.2:4791",
			MPA:    MPA{Rev: ptr(1), CRC: true},
			Ops:    ops,
		})
	}
	return sc
}

func hostile(p Params) *Scenario {
	sc := &Scenario{}
	hdr := Connection{Client: "10.9.0.1:50000", Server: "10.9.0.2:4791", MPA: MPA{Rev: ptr(1), CRC: true},
		Ops: []Op{
			{Op: OpNameSend, Size: 100},               // 0 clean
			{Op: OpNameSend, Size: 100},               // 1 wrong MSN
			{Op: OpNameSend, Size: 100},               // 2 clean, counts on
			{Op: OpNameSend, Size: 100},               // 3 wrong QN
			{Op: OpNameSend, Size: 3000},              // 4 MO out of order
			{Op: OpNameSend, Size: 100},               // 5 bad DDP version
			{Op: OpNameSend, Size: 100},               // 6 bad RDMAP version
			{Op: OpNameWrite, Size: 4096},             // 7 unknown STag
			{Op: OpNameRead, Size: 4096},              // 8 Read Response too long
			{Op: OpNameRead, Size: 1000},              // 9 Read Response to an unknown STag
			{Op: OpNameSend, Size: 200},               // 10 bad CRC
			{Op: OpNameWrite, Size: 2000, Dir: "r2i"}, // 11 clean
			{Op: OpNameSend, Size: 100, Dir: "r2i"},   // 12 wrong MSN below expected
			{Op: OpNameSend, Size: 50, Dir: "r2i"},    // 13 clean
			{Op: OpNameFetchAdd, AddSwap: 1, Orig: 1}, // 14 clean atomic
			{Op: OpNameWrite, Size: 1000, Dir: "r2i"}, // 15 bad DDP version (tagged)
			{Op: OpNameSend, Size: 100, Dir: "r2i"},   // 16 clean
			{Op: OpNameSend, Size: 6000, Dir: "r2i"},  // 17 MO out of order
			{Op: OpNameSend, Size: 64},                // 18 clean
			{Op: OpNameSend, Size: 64, Dir: "r2i"},    // 19 clean
			{Op: OpNameSend, Size: 64},                // 20 clean
		}}
	tcp := Connection{Client: "10.9.1.1:50001", Server: "10.9.1.2:4791", MPA: MPA{Rev: ptr(2), CRC: true},
		Timestamps: true, Ops: []Op{{Op: OpNameWrite, Size: 16 << 10, Repeat: 6}, {Op: OpNameRead, Size: 8 << 10}, {Op: OpNameSend, Size: 100}}}
	mid := Connection{Client: "[fd00::1]:50002", Server: "[fd00::2]:4791", MPA: MPA{Rev: ptr(1), CRC: true, MarkersI2R: true, MarkersR2I: true},
		Ops: []Op{{Op: OpNameSend, Size: 2000, Repeat: 4}, {Op: OpNameWrite, Size: 5000}, {Op: OpNameSend, Size: 300}}}
	sc.Connections = []Connection{hdr, tcp, mid}
	v := func(x uint64) *uint64 { return &x }
	op := func(c, i int, kind string, val *uint64) Impairment {
		return Impairment{Kind: kind, Conn: c, Op: ptr(i), Value: val}
	}
	sc.Impairments = []Impairment{
		op(0, 1, ImpWrongMSN, nil),
		op(0, 3, ImpWrongQN, nil),
		op(0, 4, ImpMOOutOfOrder, nil),
		op(0, 5, ImpBadDDPVersion, nil),
		op(0, 6, ImpBadRDMAPVersion, v(0)),
		op(0, 7, ImpUnknownSTag, nil),
		op(0, 8, ImpReadResponseTooLong, nil),
		op(0, 9, ImpUnknownSTag, nil),
		op(0, 10, ImpCorruptCRC, nil),
		op(0, 13, ImpWrongMSN, v(1)),
		op(0, 15, ImpBadDDPVersion, v(3)),
		op(0, 17, ImpMOOutOfOrder, nil),
		{Kind: ImpDrop, Conn: 1, Segment: 4},
		{Kind: ImpReorder, Conn: 1, Segment: 8},
		{Kind: ImpDuplicate, Conn: 1, Segment: 12},
		{Kind: ImpRetransmit, Conn: 1, Segment: 16},
		{Kind: ImpRetransmitDiff, Conn: 1, Segment: 20},
		{Kind: ImpDrop, Conn: 1, Segment: 24, Resend: true},
		{Kind: ImpSnaplen, Conn: 1, Segment: 28, Value: v(200)},
		{Kind: ImpDrop, Conn: 1, Dir: "r2i", Segment: 3},
		{Kind: ImpMidstream, Conn: 2, Value: v(7)},
	}
	return sc
}

// erdma is an erdma connection as erdma_connect and erdma_accept set it
// up: both frames Rev 129 with the extension (the QP's cookie and its
// congestion-control algorithm; the Reply's CC differs here, which makes
// both QPs fall back to the compromise algorithm), no markers, no CRC
// (the driver rejects both), then ordinary RDMAP traffic.
func erdma(p Params) *Scenario {
	sc := &Scenario{}
	size := Size(p.Size)
	if size <= 0 {
		size = 4096
	}
	count := or(p.Count, 5)
	for ci := range or(p.Conns, 1) {
		c := Connection{
			Timestamps: true,
			MPA: MPA{ERDMA: &ERDMA{Cookie: 0x1000 + uint32(ci), CC: 1, ReplyCookie: 0x2000 + uint32(ci), ReplyCC: 2},
				RequestData: Data("erdma-req"), ReplyData: Data("erdma-rep")},
		}
		for range count {
			c.Ops = append(c.Ops, Op{Op: OpNameSend, Size: 64}, Op{Op: OpNameSend, Dir: "r2i", Size: 64})
		}
		c.Ops = append(c.Ops, Op{Op: OpNameWrite, Size: size}, Op{Op: OpNameRead, Size: size})
		sc.Connections = append(sc.Connections, c)
	}
	return sc
}

// cxgb4Fallback is Linux cxgb4's answer to a peer that aborts an MPA v2
// attempt: it reconnects to the same peer with MPA v1
// (c4iw_reconnect, retry_with_mpa_v1).
func cxgb4Fallback(p Params) *Scenario {
	sc := &Scenario{}
	count := or(p.Count, 4)
	for ci := range or(p.Conns, 1) {
		client := fmt.Sprintf("10.0.4.%d", 1+ci)
		v2 := len(sc.Connections)
		sc.Connections = append(sc.Connections,
			Connection{Client: fmt.Sprintf("%s:%d", client, 40000), Server: "10.0.4.200:4791",
				MPA: MPA{Rev: ptr(2), CRC: true, ResetRequest: true}},
			Connection{Client: fmt.Sprintf("%s:%d", client, 40001), Server: "10.0.4.200:4791", After: ptr(v2),
				MPA: MPA{Rev: ptr(1), CRC: true}})
		c := &sc.Connections[len(sc.Connections)-1]
		for range count {
			c.Ops = append(c.Ops, Op{Op: OpNameSend, Size: 128}, Op{Op: OpNameWrite, Size: 4096})
		}
	}
	return sc
}
