// Package wirefuzz is a wire fuzzer against a live iWARP peer (an rping or
// perftest server, an iwconform --serve target, an RNIC under test): it
// dials the peer, plays inputs built from mutations of the MPA exchange
// (RFC 5044 §7.1, RFC 6581 §5), of DDP and RDMAP headers (RFC 5041 §4,
// RFC 5040 §4), of FPDU framing (ULPDU_Length, PAD, CRC, markers, segment
// boundaries) and of operation sequences (an RTR then a reset, a Read
// Request then an immediate close, a Terminate first), and after every
// input checks that the peer still lives: a new connection must get an MPA
// Reply (an acceptance or a Reject). Every input is logged, with a pcap of
// what was sent and received. When the peer stops answering, the last
// inputs are minimised (inputs, steps and mutations dropped while the
// peer still dies, within bounded attempts and restarts) and written as a
// re-runnable case (JSON, for --replay) and its pcap.
//
// An input is a baseline (a valid MPA v2 Request, well-formed FPDUs from
// templates) plus named mutations: minimising is dropping mutations, and
// a case file reads as what differs from a valid exchange.
package wirefuzz

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/iwkit/iwkit/decode"
)

// Mut is one mutation: field F of a frame set to V instead of the
// baseline's value (the field names are in requestFields and fpduFields).
type Mut struct {
	F string `json:"f"`
	V int64  `json:"v"`
}

func (m Mut) String() string { return fmt.Sprintf("%s=%d", m.F, m.V) }

// Step ops.
const (
	OpAwait = "await" // read the MPA Reply (after the first, nothing)
	OpFPDU  = "fpdu"  // send an FPDU built from template PDU with Muts
	OpRaw   = "raw"   // send Data (hex) as it is
	OpSleep = "sleep" // pause MS milliseconds
	OpReset = "reset" // end the connection with an RST (SO_LINGER 0)
	OpFin   = "fin"   // end the connection with a FIN (what every input ends with otherwise)
)

// Step is one action on the input's connection.
type Step struct {
	Op   string `json:"op"`
	PDU  string `json:"pdu,omitempty"`
	Muts []Mut  `json:"muts,omitempty"`
	Data string `json:"data,omitempty"`
	MS   int    `json:"ms,omitempty"`
}

func (s Step) String() string {
	switch s.Op {
	case OpFPDU:
		return joinMuts(s.PDU, s.Muts)
	case OpRaw:
		return fmt.Sprintf("raw(%d octets)", len(s.Data)/2)
	case OpSleep:
		return fmt.Sprintf("sleep(%dms)", s.MS)
	}
	return s.Op
}

func joinMuts(name string, ms []Mut) string {
	if len(ms) == 0 {
		return name
	}
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = m.String()
	}
	return name + "{" + strings.Join(s, ",") + "}"
}

// Input is one connection to the peer: an MPA Request (the baseline with
// Request's mutations), then Steps, then a FIN unless a step ended it.
type Input struct {
	Request []Mut  `json:"request"`
	Steps   []Step `json:"steps"`
}

func (in Input) String() string {
	s := []string{joinMuts("request", in.Request)}
	for _, st := range in.Steps {
		s = append(s, st.String())
	}
	return strings.Join(s, " ")
}

// clone deep-copies in (minimising edits copies).
func (in Input) clone() Input {
	c := Input{Request: append([]Mut(nil), in.Request...), Steps: make([]Step, len(in.Steps))}
	for i, s := range in.Steps {
		s.Muts = append([]Mut(nil), s.Muts...)
		c.Steps[i] = s
	}
	return c
}

// Case is a failing sequence: the inputs that, played in order against a
// fresh peer, stop it answering. It is what --replay reads.
type Case struct {
	Target string  `json:"target"`
	CRC    bool    `json:"crc"` // the baseline Request asks for CRCs
	Seed   int64   `json:"seed"`
	Cause  string  `json:"cause"` // how the peer died (a kernel oops line, or the probe's error)
	Inputs []Input `json:"inputs"`
	// Minimised says how the case was reduced: from how many inputs,
	// steps and mutations, in how many attempts and restarts, and
	// whether the reduced case was seen to kill the peer again.
	Minimised Minimised `json:"minimised"`
}

// Minimised records the reduction of a case.
type Minimised struct {
	From      string `json:"from"` // "N inputs, S steps, M mutations"
	To        string `json:"to"`
	Attempts  int    `json:"attempts"`
	Restarts  int    `json:"restarts"`
	Confirmed bool   `json:"confirmed"` // the case as written killed a fresh peer
}

// size counts inputs, steps and mutations.
func size(ins []Input) string {
	st, mu := 0, 0
	for _, in := range ins {
		mu += len(in.Request)
		for _, s := range in.Steps {
			st++
			mu += len(s.Muts)
		}
	}
	return fmt.Sprintf("%d inputs, %d steps, %d mutations", len(ins), st, mu)
}

// ReadCase reads a case file.
func ReadCase(path string) (Case, error) {
	var c Case
	b, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	for i, in := range c.Inputs {
		if err := in.check(); err != nil {
			return c, fmt.Errorf("%s: input %d: %w", path, i+1, err)
		}
	}
	return c, nil
}

// WriteCase writes c as indented JSON.
func WriteCase(path string, c Case) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// check says what in a (hand-edited) input cannot be played.
func (in Input) check() error {
	for _, m := range in.Request {
		if _, ok := requestFields[m.F]; !ok {
			return fmt.Errorf("unknown MPA Request field %q", m.F)
		}
	}
	for _, s := range in.Steps {
		switch s.Op {
		case OpAwait, OpSleep, OpReset, OpFin:
		case OpRaw:
			if _, err := hex.DecodeString(s.Data); err != nil {
				return fmt.Errorf("raw step: %w", err)
			}
		case OpFPDU:
			if _, ok := templates[s.PDU]; !ok {
				return fmt.Errorf("unknown FPDU template %q", s.PDU)
			}
			for _, m := range s.Muts {
				if _, ok := fpduFields[m.F]; !ok {
					return fmt.Errorf("unknown FPDU field %q", m.F)
				}
			}
		default:
			return fmt.Errorf("unknown step op %q", s.Op)
		}
	}
	return nil
}

// requestFields are the MPA Request's mutable fields (RFC 5044 §7.1,
// RFC 6581 §5) with the values worth trying.
var requestFields = map[string][]int64{
	"key":       {0, 3, 8, 15},          // flip one octet of the key "MPA ID Req Frame"
	"key.reply": {1},                    // the Reply's key in a Request
	"rev":       {0, 1, 3, 255},         // Rev (baseline 2)
	"m":         {1},                    // Markers
	"c":         {0, 1},                 // CRC
	"r":         {1},                    // Reject in a Request
	"s":         {0},                    // S: drops the RFC 6581 meaning of the block
	"res":       {1, 15},                // the 4 reserved flag bits
	"pdlen":     {-4, -1, 1, 100, 1000}, // PD_Length minus the real length
	"pd.extra":  {1, 16, 100, 512},      // private data after the RFC 6581 block
	"v2.drop":   {1},                    // no RFC 6581 block (PD_Length 0)
	"v2.a":      {1},                    // peer-to-peer (an RTR follows)
	"v2.b":      {1},                    // Send RTR offered
	"v2.c":      {1},                    // Write RTR offered
	"v2.d":      {1},                    // Read RTR offered
	"v2.ird":    {0, 2, 127, 0x3FFF},
	"v2.ord":    {0, 2, 127, 0x3FFF},
	"split":     {1, 10, 20, 23}, // write the Request in two segments at this octet
}

// fpduFields are an FPDU's mutable fields (RFC 5044 §4, RFC 5041 §4,
// RFC 5040 §4).
var fpduFields = map[string][]int64{
	"ddp.t":     {0, 1},
	"ddp.l":     {0},
	"ddp.rsvd":  {1, 15},
	"ddp.dv":    {0, 2, 3},
	"rdmap.rv":  {0, 2, 3},
	"rdmap.rsv": {1, 3},
	"rdmap.op":  {0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 15},
	"ddp.qn":    {1, 2, 3, 4, 0xFFFFFFFF},
	"ddp.msn":   {0, 2, 1 << 31, 0xFFFFFFFF},
	"ddp.mo":    {1, 4096, 0xFFFFFFFF},
	"ddp.stag":  {0, 1, 0x100, 0xFFFFFFFF},
	"ddp.to":    {1, 0xFFFF, 1 << 40, -1},
	"ddp.inv":   {0, 1, 0xFFFFFFFF}, // the untagged header's Reserved for ULP: the Invalidate STag of the Send types
	"len":       {0, 1, 3, 100, 4096},
	"read.size": {0, 1, 1 << 20, 0xFFFFFFFF},
	"term.ctrl": {0, 0x10000000, 0x20000000, 0x00C00000, 0xFFFFFFFF},
	"ulpdu_len": {-18, -1, 1, 1000, 0xFFFF}, // ULPDU_Length minus the real one
	"pad":       {1},                        // non-zero PAD
	"crc":       {1, 0x80000000},            // XORed into the CRC field
	"marker":    {0, 1, 0xFFFF},             // a marker (FPDUPTR = V) in front of the FPDU
	"split":     {1, 2, 6, 18},              // write the FPDU in two segments at this octet
	"trunc":     {1, 2, 10, 20},             // send only this many octets of the FPDU
}

// templates are the FPDUs steps start from: their opcode, queue and
// whether their header is tagged (RFC 5040 §4.1, §5).
var templates = map[string]struct {
	op     decode.Opcode
	tagged bool
	qn     uint32
	size   int // payload octets
}{
	"send":      {decode.OpSend, false, decode.QNSend, 16},
	"send-inv":  {decode.OpSendInv, false, decode.QNSend, 16},
	"send-se":   {decode.OpSendSE, false, decode.QNSend, 16},
	"write":     {decode.OpWrite, true, 0, 16},
	"read-req":  {decode.OpReadRequest, false, decode.QNReadReq, 0},
	"read-resp": {decode.OpReadResponse, true, 0, 16},
	"terminate": {decode.OpTerminate, false, decode.QNTerminate, 0},
	"rtr-write": {decode.OpWrite, true, 0, 0},             // RFC 6581 §5: the zero-length Write RTR
	"rtr-read":  {decode.OpReadRequest, false, 1, 0},      // the zero-length Read RTR
	"rtr-send":  {decode.OpSend, false, decode.QNSend, 0}, // the zero-length Send RTR
}

// request builds the MPA Request: the baseline (Rev 2, S, C = crc, the
// RFC 6581 block with IRD = ORD = 1, no peer-to-peer) with muts. split
// is where to cut it into two writes (0: none).
func request(crc bool, muts []Mut) (b []byte, split int) {
	f := decode.MPAFrame{Rev: 2, Enhanced: true, CRC: crc, HasV2: true, V2: decode.MPAv2{IRD: 1, ORD: 1}}
	pdDelta, extra, reply := 0, 0, false
	key := -1
	for _, m := range muts {
		v := m.V
		switch m.F {
		case "key":
			key = int(v) & 15
		case "key.reply":
			reply = true
		case "rev":
			f.Rev = uint8(v)
		case "m":
			f.Markers = v != 0
		case "c":
			f.CRC = v != 0
		case "r":
			f.Reject = v != 0
		case "s":
			f.Enhanced = v != 0
		case "res":
			f.Res = uint8(v) & 0x0F
		case "pdlen":
			pdDelta = int(v)
		case "pd.extra":
			extra = int(min(max(v, 0), 1024))
		case "v2.drop":
			f.HasV2 = false
		case "v2.a":
			f.V2.PeerToPeer = v != 0
		case "v2.b":
			f.V2.ZeroLenSendRTR = v != 0
		case "v2.c":
			f.V2.ZeroLenWriteRTR = v != 0
		case "v2.d":
			f.V2.ZeroLenReadRTR = v != 0
		case "v2.ird":
			f.V2.IRD = uint16(v) & 0x3FFF
		case "v2.ord":
			f.V2.ORD = uint16(v) & 0x3FFF
		case "split":
			split = int(v)
		}
	}
	f.Reply = reply
	if f.HasV2 {
		f.PrivateData = make([]byte, decode.MPAv2Len) // Append writes V2 here
	}
	for i := 0; i < extra; i++ {
		f.PrivateData = append(f.PrivateData, byte(i))
	}
	b = f.Append(nil)
	if key >= 0 {
		b[key] ^= 0x20
	}
	if pdDelta != 0 {
		pl := binary.BigEndian.Uint16(b[18:20])
		binary.BigEndian.PutUint16(b[18:20], uint16(int(pl)+pdDelta))
	}
	return b, split
}
