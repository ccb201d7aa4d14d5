package gen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/iwkit/iwkit/finding"
)

// Truth is everything the generator put on the wire that an analyzer should
// recover, in the form the truth JSON file has.
type Truth struct {
	Scenario    string            `json:"scenario,omitempty"`
	Seed        uint64            `json:"seed"`
	LinkType    string            `json:"link_type"`
	Connections []ConnTruth       `json:"connections"`
	FPDUs       []FPDUTruth       `json:"fpdus"`
	Impairments []ImpairmentTruth `json:"impairments"`
	Findings    []Finding         `json:"findings"`
	// Frames and Octets count what the capture holds (captured octets).
	Frames int   `json:"frames"`
	Octets int64 `json:"octets"`
}

// ConnTruth is one connection as negotiated.
type ConnTruth struct {
	Index  int    `json:"index"`
	Client string `json:"client"`
	Server string `json:"server"`
	VLAN   uint16 `json:"vlan,omitempty"`
	MSS    int    `json:"mss"`
	// EMSS is the TCP payload per segment (MSS less TCP options).
	EMSS      int    `json:"emss"`
	ClientISN uint32 `json:"client_isn"`
	ServerISN uint32 `json:"server_isn"`
	// MPA outcome.
	MPARev     int    `json:"mpa_rev"`
	Enhanced   bool   `json:"enhanced,omitempty"`
	CRC        bool   `json:"crc"`
	MarkersI2R bool   `json:"markers_i2r"`
	MarkersR2I bool   `json:"markers_r2i"`
	Rejected   bool   `json:"rejected,omitempty"`
	RTR        string `json:"rtr,omitempty"`
	IRD        uint16 `json:"ird,omitempty"`
	ORD        uint16 `json:"ord,omitempty"`
	ReplyIRD   uint16 `json:"reply_ird,omitempty"`
	ReplyORD   uint16 `json:"reply_ord,omitempty"`
	// MULPDU per direction (the DDP segment limit used), and the stream
	// position (TCP sequence number) of the first FPDU of each direction,
	// which is where its marker grid starts (RFC 5044 §4.3).
	MULPDUI2R  int    `json:"mulpdu_i2r"`
	MULPDUR2I  int    `json:"mulpdu_r2i"`
	FPDUSeqI2R uint32 `json:"fpdu_seq_i2r"`
	FPDUSeqR2I uint32 `json:"fpdu_seq_r2i"`
	// DV and RV are the versions the stream uses.
	DV uint8 `json:"dv"`
	RV uint8 `json:"rv"`
}

// FPDUTruth is one FPDU as put on the wire.
type FPDUTruth struct {
	Conn int    `json:"conn"`
	Dir  string `json:"dir"`
	// Index is the FPDU's ordinal in its direction, from 1.
	Index int `json:"index"`
	// FirstFrame and LastFrame are the lowest and highest frame numbers
	// (1-based, as in the file) of frames holding any of its octets,
	// retransmissions included; 0 when no octet was captured.
	FirstFrame int `json:"first_frame"`
	LastFrame  int `json:"last_frame"`
	// Seq is the TCP sequence number of its first octet (a leading marker
	// if it has one), End the one after its last (CRC) octet.
	Seq uint32 `json:"seq"`
	End uint32 `json:"end"`
	// Missing: no octet captured; Partial: some octets not captured
	// (dropped segment, snaplen, mid-stream start).
	Missing bool `json:"missing,omitempty"`
	Partial bool `json:"partial,omitempty"`

	ULPDULength int    `json:"ulpdu_length"`
	Opcode      uint8  `json:"opcode"`
	OpName      string `json:"op"`
	Tagged      bool   `json:"tagged"`
	Last        bool   `json:"last"`
	DV          uint8  `json:"dv"`
	RV          uint8  `json:"rv"`
	STag        uint32 `json:"stag"`
	TO          uint64 `json:"to"`
	QN          uint32 `json:"qn"`
	MSN         uint32 `json:"msn"`
	MO          uint32 `json:"mo"`
	InvSTag     uint32 `json:"inv_stag,omitempty"`
	// PayloadLen is the ULP payload after the DDP and RDMAP headers.
	PayloadLen int              `json:"payload_len"`
	Read       *ReadTruth       `json:"read,omitempty"`
	Term       *TermTruth       `json:"term,omitempty"`
	AtomicReq  *AtomicReqTruth  `json:"atomic_req,omitempty"`
	AtomicResp *AtomicRespTruth `json:"atomic_resp,omitempty"`
	Imm        *uint64          `json:"imm,omitempty"`
	// Markers inside the FPDU (leading one included), with their stream
	// positions.
	Markers []MarkerTruth `json:"markers,omitempty"`
	// CRC is the CRC field as sent (the value; on the wire least
	// significant octet first); CRCGood says it matches the octets.
	CRC     uint32 `json:"crc"`
	CRCGood bool   `json:"crc_good"`
	// RTR marks the RFC 6581 ready-to-receive message.
	RTR bool `json:"rtr,omitempty"`
	// Impairments lists the ids of the impairments that touched it.
	Impairments []int `json:"impairments,omitempty"`
}

// ReadTruth is a Read Request header (RFC 5040 §4.4).
type ReadTruth struct {
	SinkSTag uint32 `json:"sink_stag"`
	SinkTO   uint64 `json:"sink_to"`
	Size     uint32 `json:"size"`
	SrcSTag  uint32 `json:"src_stag"`
	SrcTO    uint64 `json:"src_to"`
}

// TermTruth is a Terminate header (RFC 5040 §4.8).
type TermTruth struct {
	Layer  uint8  `json:"layer"`
	EType  uint8  `json:"etype"`
	Code   uint8  `json:"code"`
	Cause  string `json:"cause"`
	M      bool   `json:"m"`
	D      bool   `json:"d"`
	R      bool   `json:"r"`
	SegLen uint16 `json:"seg_len,omitempty"`
	// DDP is the copied DDP header (as the FPDU fields above name them),
	// RDMA the copied Read Request header.
	DDP  *TermDDPTruth `json:"ddp,omitempty"`
	RDMA *ReadTruth    `json:"rdma,omitempty"`
	// BlamedFPDU is the Index (in the other direction) of the FPDU whose
	// header was copied.
	BlamedFPDU int `json:"blamed_fpdu,omitempty"`
}

// TermDDPTruth is the DDP header a Terminate copies back.
type TermDDPTruth struct {
	Tagged bool   `json:"tagged"`
	Last   bool   `json:"last"`
	Opcode uint8  `json:"opcode"`
	STag   uint32 `json:"stag"`
	TO     uint64 `json:"to"`
	QN     uint32 `json:"qn"`
	MSN    uint32 `json:"msn"`
	MO     uint32 `json:"mo"`
}

// AtomicReqTruth is an Atomic Request header (RFC 7306 §5.2.1).
type AtomicReqTruth struct {
	AOpCode     uint8  `json:"aopcode"`
	RequestID   uint32 `json:"request_id"`
	RemoteSTag  uint32 `json:"remote_stag"`
	RemoteTO    uint64 `json:"remote_to"`
	AddSwapData uint64 `json:"add_swap_data"`
	AddSwapMask uint64 `json:"add_swap_mask"`
	CompareData uint64 `json:"compare_data"`
	CompareMask uint64 `json:"compare_mask"`
}

// AtomicRespTruth is an Atomic Response header (RFC 7306 §5.2.2).
type AtomicRespTruth struct {
	OrigRequestID uint32 `json:"orig_request_id"`
	OrigValue     uint64 `json:"orig_value"`
}

// MarkerTruth is one marker: its stream position and FPDUPTR.
type MarkerTruth struct {
	Seq     uint32 `json:"seq"`
	FPDUPTR uint16 `json:"fpduptr"`
}

// ImpairmentTruth is one impairment as applied.
type ImpairmentTruth struct {
	// ID numbers impairments from 1 in the order they were applied.
	ID   int    `json:"id"`
	Kind string `json:"kind"`
	Conn int    `json:"conn"`
	Dir  string `json:"dir"`
	// Random marks one applied from Rates.
	Random bool `json:"random,omitempty"`
	// Segment is the data segment ordinal (TCP kinds); Seq and Len its
	// sequence range. For FPDU kinds Seq and Len are those of the (first)
	// FPDU affected.
	Segment int    `json:"segment,omitempty"`
	Seq     uint32 `json:"seq"`
	Len     int    `json:"len"`
	// Frames are the captured frames that hold the affected segment: the
	// original transmission and every copy, in order (none when dropped).
	Frames []int `json:"frames,omitempty"`
	// FPDU is the ordinal of the affected FPDU (FPDU kinds; the first one
	// of the message for message-wide kinds).
	FPDU int `json:"fpdu,omitempty"`
	// Field, Old and New say what changed: "ddp.msn" 4 → 9, "mpa.crc",
	// "ddp.qn", "ddp.dv", "rdmap.rv", "ddp.mo", "ddp.stag",
	// "rdmap.read_response_len", "frame.caplen".
	Field string `json:"field,omitempty"`
	Old   uint64 `json:"old,omitempty"`
	New   uint64 `json:"new,omitempty"`
	// Detail is a sentence for people.
	Detail string `json:"detail,omitempty"`
}

// Finding is something an analyzer should report for what the generator
// put on the wire, by the code and severity the analyzer raises (the
// catalogue in package finding; JSON has their names). The truth lists the
// errors and warnings the traffic causes, plus track.no_handshake for a
// capture that starts mid-stream; it leaves out the notes an analyzer adds
// besides (connection closed, extensions in use, resync) and what TCP
// recovers without a trace (duplicates, retransmissions, reordering: the
// impairments list has those).
type Finding struct {
	Code     finding.Code     `json:"code"`
	Severity finding.Severity `json:"severity"`
	Conn     int              `json:"conn"`
	Dir      string           `json:"dir"`
	// Frame is where the analyzer can raise it: the frame completing the
	// offending FPDU, or the first frame after a gap (0: not in the
	// capture).
	Frame int `json:"frame"`
	// FPDU is the offending FPDU's ordinal in its direction (0: none).
	FPDU int    `json:"fpdu,omitempty"`
	Seq  uint32 `json:"seq"`
	// Impairment is the id of the impairment that causes it (0: none; a
	// Terminate or a reject is scenario content, not an impairment).
	Impairment int    `json:"impairment,omitempty"`
	Message    string `json:"message"`
}

// TruthSink receives the ground truth as the generator produces it: Begin
// once, the connections, then FPDUs, impairments and findings in any
// interleaving, then End once. A sink may keep the slices inside the values
// but not the pointers it is given: the values may be reused.
type TruthSink interface {
	Begin(scenario string, seed uint64) error
	Connection(*ConnTruth) error
	FPDU(*FPDUTruth) error
	Impairment(*ImpairmentTruth) error
	Finding(*Finding) error
	End(frames int, octets int64) error
}

// Collector is a TruthSink that keeps everything in a Truth. For small runs
// and tests.
type Collector struct{ T Truth }

// Begin implements TruthSink.
func (c *Collector) Begin(scenario string, seed uint64) error {
	c.T = Truth{Scenario: scenario, Seed: seed, LinkType: "ethernet", Connections: []ConnTruth{},
		FPDUs: []FPDUTruth{}, Impairments: []ImpairmentTruth{}, Findings: []Finding{}}
	return nil
}

// Connection implements TruthSink.
func (c *Collector) Connection(t *ConnTruth) error {
	c.T.Connections = append(c.T.Connections, *t)
	return nil
}

// FPDU implements TruthSink.
func (c *Collector) FPDU(t *FPDUTruth) error { c.T.FPDUs = append(c.T.FPDUs, *t); return nil }

// Impairment implements TruthSink.
func (c *Collector) Impairment(t *ImpairmentTruth) error {
	c.T.Impairments = append(c.T.Impairments, *t)
	return nil
}

// Finding implements TruthSink.
func (c *Collector) Finding(f *Finding) error { c.T.Findings = append(c.T.Findings, *f); return nil }

// End implements TruthSink.
func (c *Collector) End(frames int, octets int64) error {
	c.T.Frames, c.T.Octets = frames, octets
	return nil
}

// JSONTruthWriter streams the truth as the JSON of a Truth value without
// keeping it: FPDUs go straight to the output; impairments and findings,
// which must come after the FPDU array, wait in temporary files. Memory
// stays constant however big the run.
type JSONTruthWriter struct {
	w        *bufio.Writer
	tmpImp   *os.File
	tmpFind  *os.File
	bufImp   *bufio.Writer
	bufFind  *bufio.Writer
	nConn    int
	nFPDU    int
	nImp     int
	nFind    int
	inFPDUs  bool
	encBuf   []byte
	closeErr error
}

// NewJSONTruthWriter makes a writer of the truth JSON to w.
func NewJSONTruthWriter(w io.Writer) (*JSONTruthWriter, error) {
	imp, err := os.CreateTemp("", "iwgen-imp-*.json")
	if err != nil {
		return nil, err
	}
	os.Remove(imp.Name()) // unlinked: vanishes when closed
	find, err := os.CreateTemp("", "iwgen-find-*.json")
	if err != nil {
		imp.Close()
		return nil, err
	}
	os.Remove(find.Name())
	j := &JSONTruthWriter{w: bufio.NewWriterSize(w, 1<<16), tmpImp: imp, tmpFind: find,
		bufImp: bufio.NewWriter(imp), bufFind: bufio.NewWriter(find)}
	return j, nil
}

// Begin implements TruthSink: it writes the head of the JSON.
func (j *JSONTruthWriter) Begin(scenario string, seed uint64) error {
	name, _ := json.Marshal(scenario)
	_, err := fmt.Fprintf(j.w, "{\n\"scenario\": %s,\n\"seed\": %d,\n\"link_type\": \"ethernet\",\n\"connections\": [", name, seed)
	return err
}

func (j *JSONTruthWriter) item(w *bufio.Writer, n int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if n > 0 {
		w.WriteByte(',')
	}
	w.WriteString("\n  ")
	_, err = w.Write(b)
	return err
}

// Connection implements TruthSink.
func (j *JSONTruthWriter) Connection(t *ConnTruth) error {
	if j.inFPDUs {
		return fmt.Errorf("truth: connection after FPDUs")
	}
	err := j.item(j.w, j.nConn, t)
	j.nConn++
	return err
}

func (j *JSONTruthWriter) startFPDUs() {
	if !j.inFPDUs {
		j.inFPDUs = true
		j.w.WriteString("\n],\n\"fpdus\": [")
	}
}

// FPDU implements TruthSink.
func (j *JSONTruthWriter) FPDU(t *FPDUTruth) error {
	j.startFPDUs()
	b, ok := appendFPDUJSON(j.encBuf[:0], t)
	if !ok {
		err := j.item(j.w, j.nFPDU, t)
		j.nFPDU++
		return err
	}
	j.encBuf = b
	if j.nFPDU > 0 {
		j.w.WriteByte(',')
	}
	j.w.WriteString("\n  ")
	j.nFPDU++
	_, err := j.w.Write(b)
	return err
}

// appendFPDUJSON appends t as json.Marshal writes it, without reflection,
// for the common FPDUs (no RDMAP header of their own); ok is false for the
// others, which take json.Marshal.
func appendFPDUJSON(b []byte, t *FPDUTruth) ([]byte, bool) {
	if t.Read != nil || t.Term != nil || t.AtomicReq != nil || t.AtomicResp != nil || t.Imm != nil || !plainJSON(t.Dir) || !plainJSON(t.OpName) {
		return b, false
	}
	num := func(b []byte, key string, v uint64) []byte {
		b = append(b, ',', '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		return strconv.AppendUint(b, v, 10)
	}
	flag := func(b []byte, key string, v bool) []byte {
		b = append(b, ',', '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		return strconv.AppendBool(b, v)
	}
	str := func(b []byte, key, v string) []byte {
		b = append(b, ',', '"')
		b = append(b, key...)
		b = append(b, `":"`...)
		b = append(b, v...)
		return append(b, '"')
	}
	b = append(b, `{"conn":`...)
	b = strconv.AppendInt(b, int64(t.Conn), 10)
	b = str(b, "dir", t.Dir)
	b = num(b, "index", uint64(t.Index))
	b = num(b, "first_frame", uint64(t.FirstFrame))
	b = num(b, "last_frame", uint64(t.LastFrame))
	b = num(b, "seq", uint64(t.Seq))
	b = num(b, "end", uint64(t.End))
	if t.Missing {
		b = flag(b, "missing", true)
	}
	if t.Partial {
		b = flag(b, "partial", true)
	}
	b = num(b, "ulpdu_length", uint64(t.ULPDULength))
	b = num(b, "opcode", uint64(t.Opcode))
	b = str(b, "op", t.OpName)
	b = flag(b, "tagged", t.Tagged)
	b = flag(b, "last", t.Last)
	b = num(b, "dv", uint64(t.DV))
	b = num(b, "rv", uint64(t.RV))
	b = num(b, "stag", uint64(t.STag))
	b = num(b, "to", t.TO)
	b = num(b, "qn", uint64(t.QN))
	b = num(b, "msn", uint64(t.MSN))
	b = num(b, "mo", uint64(t.MO))
	if t.InvSTag != 0 {
		b = num(b, "inv_stag", uint64(t.InvSTag))
	}
	b = num(b, "payload_len", uint64(t.PayloadLen))
	if len(t.Markers) > 0 {
		b = append(b, `,"markers":[`...)
		for i, m := range t.Markers {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"seq":`...)
			b = strconv.AppendUint(b, uint64(m.Seq), 10)
			b = num(b, "fpduptr", uint64(m.FPDUPTR))
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = num(b, "crc", uint64(t.CRC))
	b = flag(b, "crc_good", t.CRCGood)
	if t.RTR {
		b = flag(b, "rtr", true)
	}
	if len(t.Impairments) > 0 {
		b = append(b, `,"impairments":[`...)
		for i, id := range t.Impairments {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(id), 10)
		}
		b = append(b, ']')
	}
	return append(b, '}'), true
}

// plainJSON reports a string json.Marshal writes as is (no escapes).
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// Impairment implements TruthSink.
func (j *JSONTruthWriter) Impairment(t *ImpairmentTruth) error {
	err := j.item(j.bufImp, j.nImp, t)
	j.nImp++
	return err
}

// Finding implements TruthSink.
func (j *JSONTruthWriter) Finding(f *Finding) error {
	err := j.item(j.bufFind, j.nFind, f)
	j.nFind++
	return err
}

// End implements TruthSink: it completes the JSON and flushes it.
func (j *JSONTruthWriter) End(frames int, octets int64) error {
	j.startFPDUs()
	j.w.WriteString("\n],\n\"impairments\": [")
	if err := j.appendTmp(j.bufImp, j.tmpImp); err != nil {
		return err
	}
	j.w.WriteString("\n],\n\"findings\": [")
	if err := j.appendTmp(j.bufFind, j.tmpFind); err != nil {
		return err
	}
	fmt.Fprintf(j.w, "\n],\n\"frames\": %d,\n\"octets\": %d\n}\n", frames, octets)
	return j.w.Flush()
}

func (j *JSONTruthWriter) appendTmp(b *bufio.Writer, f *os.File) error {
	if err := b.Flush(); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err := io.Copy(j.w, f)
	return err
}

// Close releases the temporary files. Call it after End (or on error).
func (j *JSONTruthWriter) Close() error {
	e1 := j.tmpImp.Close()
	e2 := j.tmpFind.Close()
	if e1 != nil {
		return e1
	}
	return e2
}

// DecodeTruth decodes a truth JSON file.
func DecodeTruth(r io.Reader) (*Truth, error) {
	var t Truth
	if err := json.NewDecoder(r).Decode(&t); err != nil {
		return nil, err
	}
	return &t, nil
}
