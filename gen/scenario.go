package gen

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/iwkit/iwkit/decode"
)

// Scenario describes the traffic to generate. The zero value of every field
// is a sensible default, so a scenario file names only what it cares about.
type Scenario struct {
	// Name and Description are for people; Name is copied into the truth.
	Name        string `json:"name,omitempty" yaml:"name,omitempty"`
	Description string `json:"description,omitempty" yaml:"description,omitempty"`
	// Seed drives every value the scenario leaves open (ISNs, STags,
	// payload octets) and the random impairments of Rates.
	Seed uint64 `json:"seed,omitempty" yaml:"seed,omitempty"`
	// Start is the timestamp of the first frame (default
	// 2024-01-01T00:00:00Z).
	Start time.Time `json:"start,omitzero" yaml:"start,omitempty"`
	// LinkRate in bits per second spaces the frame timestamps by their
	// serialization time (default 10 Gbit/s); Latency is the one-way delay
	// added when the other side answers (default 10µs).
	LinkRate Size     `json:"link_rate,omitempty" yaml:"link_rate,omitempty"`
	Latency  Duration `json:"latency,omitempty" yaml:"latency,omitempty"`
	// Snaplen cuts every frame to this many octets, as tcpdump -s does
	// (0: no cut).
	Snaplen int `json:"snaplen,omitempty" yaml:"snaplen,omitempty"`
	// Repeat runs each connection's Ops this many times (0 and 1: once).
	Repeat int `json:"repeat,omitempty" yaml:"repeat,omitempty"`
	// MaxBytes, when set, repeats the Ops until the capture holds at least
	// this many frame octets, then closes the connections. It is how big
	// benchmark captures are made.
	MaxBytes Size `json:"max_bytes,omitempty" yaml:"max_bytes,omitempty"`
	// Connections are run interleaved, one operation of each in turn.
	Connections []Connection `json:"connections" yaml:"connections"`
	// Impairments are applied exactly where they point.
	Impairments []Impairment `json:"impairments,omitempty" yaml:"impairments,omitempty"`
	// Rates applies impairments at random (from Seed) on every connection.
	Rates Rates `json:"rates,omitzero" yaml:"rates,omitempty"`
}

// Connection is one TCP connection carrying one iWARP stream. The client
// opens TCP and is the MPA Initiator; "i2r" is the client-to-server
// direction, "r2i" the other.
type Connection struct {
	// Client and Server are "ip:port" ("[v6]:port" for IPv6). Defaults:
	// 10.0.0.1:(40000+index) and 10.0.0.2:4791.
	Client string `json:"client,omitempty" yaml:"client,omitempty"`
	Server string `json:"server,omitempty" yaml:"server,omitempty"`
	// ClientMAC and ServerMAC default to locally administered addresses
	// derived from the IP addresses.
	ClientMAC string `json:"client_mac,omitempty" yaml:"client_mac,omitempty"`
	ServerMAC string `json:"server_mac,omitempty" yaml:"server_mac,omitempty"`
	// VLAN, when non-zero, adds an 802.1Q tag with this VLAN ID.
	VLAN uint16 `json:"vlan,omitempty" yaml:"vlan,omitempty"`
	// MSS is the TCP MSS both sides announce (default 1460 for IPv4, 1440
	// for IPv6). The effective MSS (EMSS) is MSS minus 12 when TCP
	// timestamps are on; MULPDU follows from EMSS (RFC 5044 §4.5).
	MSS int `json:"mss,omitempty" yaml:"mss,omitempty"`
	// ClientISN and ServerISN are the initial sequence numbers (default:
	// random from the seed). Values near 2^32 make the sequence space wrap.
	ClientISN *uint32 `json:"client_isn,omitempty" yaml:"client_isn,omitempty"`
	ServerISN *uint32 `json:"server_isn,omitempty" yaml:"server_isn,omitempty"`
	// Timestamps turns the TCP timestamp option (RFC 7323) on; TSClock
	// is its clock rate in Hz (default 1000).
	Timestamps bool `json:"timestamps,omitempty" yaml:"timestamps,omitempty"`
	TSClock    int  `json:"ts_clock,omitempty" yaml:"ts_clock,omitempty"`
	// MPA is the MPA startup negotiation.
	MPA MPA `json:"mpa" yaml:"mpa"`
	// After, when set, holds this connection back until connection After
	// (an index into Connections, an earlier one) has closed: a reconnect.
	After *int `json:"after,omitempty" yaml:"after,omitempty"`
	// Packing says how FPDUs go into TCP segments: "one" (default: every
	// FPDU starts a segment and a segment holds one FPDU, as RNICs and siw
	// send), "pack" (as many whole FPDUs per segment as fit), or "stream"
	// (the octet stream is cut at EMSS regardless of FPDU boundaries). An
	// FPDU larger than EMSS is split over segments in every mode.
	Packing string `json:"packing,omitempty" yaml:"packing,omitempty"`
	// Split cuts every unit (MPA frame, FPDU) into several TCP segments at
	// these octet offsets within it, ascending, as Marvell qed firmware
	// sends FPDUs (RFC 5044 §4.1 leaves segmentation to TCP; a receiver
	// must reassemble, even a 1-octet split of ULPDU_Length). It replaces
	// Packing (each unit starts a segment); offsets past a unit's end do
	// nothing to it.
	Split []int `json:"split,omitempty" yaml:"split,omitempty"`
	// MaxULPDU overrides MULPDU, the largest DDP segment: below it packs
	// more FPDUs per segment, above EMSS it makes FPDUs larger than a
	// segment (as siw's GSO mode does). 0: MULPDU.
	MaxULPDU int `json:"max_ulpdu,omitempty" yaml:"max_ulpdu,omitempty"`
	// AckEvery makes the receiver send a pure ACK after every n data
	// segments (default 2, delayed-ACK style); -1: only at the end of a
	// burst. Data segments always carry the current ACK.
	AckEvery int `json:"ack_every,omitempty" yaml:"ack_every,omitempty"`
	// Close is how the connection ends: "fin" (default, client first),
	// "rst" (client resets), or "none".
	Close string `json:"close,omitempty" yaml:"close,omitempty"`
	// DDPVersion and RDMAPVersion are the DV and RV the sender writes
	// (default 1, or 0 with MPA Rev 0: RFC 5044 App. C).
	DDPVersion   *uint8 `json:"ddp_version,omitempty" yaml:"ddp_version,omitempty"`
	RDMAPVersion *uint8 `json:"rdmap_version,omitempty" yaml:"rdmap_version,omitempty"`
	// Ops are run in order.
	Ops []Op `json:"ops,omitempty" yaml:"ops,omitempty"`
}

// MPA describes the MPA Request and Reply (RFC 5044 §7.1, RFC 6581).
type MPA struct {
	// Rev is the revision both frames carry: 1 (default, RFC 5044), 2 (RFC
	// 6581 enhanced setup) or 0 (RDMA Consortium MPA).
	Rev *int `json:"rev,omitempty" yaml:"rev,omitempty"`
	// Enhanced sends the RFC 6581 IRD/ORD block (default: Rev >= 2).
	Enhanced *bool `json:"enhanced,omitempty" yaml:"enhanced,omitempty"`
	// MarkersI2R and MarkersR2I put markers into the FPDUs of that
	// direction: the Reply carries M for i2r, the Request for r2i
	// (RFC 5044 §7.1.1, M is per receive direction).
	MarkersI2R bool `json:"markers_i2r,omitempty" yaml:"markers_i2r,omitempty"`
	MarkersR2I bool `json:"markers_r2i,omitempty" yaml:"markers_r2i,omitempty"`
	// CRC sets C in both frames. Without it the CRC field is sent as 0,
	// as Linux siw does.
	CRC bool `json:"crc,omitempty" yaml:"crc,omitempty"`
	// CRCByteSwapped writes every CRC32c in the wrong byte order (a sender
	// bug: the receiver finds every CRC bad; the analyzer keeps the framing
	// and names the defect once per direction, mpa.crc_byte_order).
	CRCByteSwapped bool `json:"crc_byte_swapped,omitempty" yaml:"crc_byte_swapped,omitempty"`
	// RequestData and ReplyData are the ULP private data (after the RFC
	// 6581 block, if any).
	RequestData Data `json:"request_data,omitempty" yaml:"request_data,omitempty"`
	ReplyData   Data `json:"reply_data,omitempty" yaml:"reply_data,omitempty"`
	// IRD and ORD go into the Request (the Initiator's), ReplyIRD and
	// ReplyORD into the Reply (RFC 6581 §9.1); each defaults to 16.
	// 0x3FFF means "no negotiation". The Responder's IRD bounds the Read
	// Requests the Initiator may have outstanding, and the other way round
	// (a scenario that exceeds it gets an rdmap.ird_exceeded finding).
	IRD      *uint16 `json:"ird,omitempty" yaml:"ird,omitempty"`
	ORD      *uint16 `json:"ord,omitempty" yaml:"ord,omitempty"`
	ReplyIRD *uint16 `json:"reply_ird,omitempty" yaml:"reply_ird,omitempty"`
	ReplyORD *uint16 `json:"reply_ord,omitempty" yaml:"reply_ord,omitempty"`
	// Rev1IRDORD writes IRD/ORD as the Rev 1 u32 pair that Windows SMB
	// Direct and Chelsio T4 use instead of the RFC 6581 block (not an RFC
	// format).
	Rev1IRDORD bool `json:"rev1_ird_ord,omitempty" yaml:"rev1_ird_ord,omitempty"`
	// ERDMA makes both frames Alibaba erdma's (Linux erdma_cm.c): Rev 129
	// (MPA_REVISION_EXT_1) with the 8-octet extension after PD_Length,
	// which PD_Length does not count. It overrides Rev and excludes the
	// RFC 6581 block, the Rev 1 IRD/ORD pair and RTRs.
	ERDMA *ERDMA `json:"erdma,omitempty" yaml:"erdma,omitempty"`
	// RTR selects the peer-to-peer model (A=1, RFC 6581 §9.2) and the
	// ready-to-receive message the Initiator sends first: "write"
	// (zero-length RDMA Write), "read" (zero-length RDMA Read, answered by
	// a zero-length Read Response) or "send" (zero-length Send). Empty:
	// client-server model, no RTR. Needs the enhanced block.
	RTR string `json:"rtr,omitempty" yaml:"rtr,omitempty"`
	// ResetRequest makes the Responder reset the connection right after
	// the Request instead of replying, as an RFC 5044-only peer does to a
	// Rev 2 Request it cannot parse (RFC 6581 §10): the Ops are not run.
	// A later connection (After) from the same client host to the same
	// server with Rev 1 is the Initiator's MPA v1 retry (Linux cxgb4
	// c4iw_reconnect).
	ResetRequest bool `json:"reset_request,omitempty" yaml:"reset_request,omitempty"`
	// Reject makes the Responder reject (R=1 in the Reply): no FPDU
	// follows and the Ops are not run.
	Reject bool `json:"reject,omitempty" yaml:"reject,omitempty"`
}

// ERDMA is the content of erdma's extension (struct erdma_mpa_ext) in
// the Request and in the Reply: the QP's iWARP cookie and its
// congestion-control algorithm (bits 3:0 of the bits word, 0-15).
type ERDMA struct {
	Cookie      uint32 `json:"cookie,omitempty" yaml:"cookie,omitempty"`
	CC          uint8  `json:"cc,omitempty" yaml:"cc,omitempty"`
	ReplyCookie uint32 `json:"reply_cookie,omitempty" yaml:"reply_cookie,omitempty"`
	ReplyCC     uint8  `json:"reply_cc,omitempty" yaml:"reply_cc,omitempty"`
}

// Operation names for Op.Op.
const (
	OpNameSend        = "send"
	OpNameSendSE      = "send_se"
	OpNameSendInv     = "send_inv"
	OpNameSendSEInv   = "send_se_inv"
	OpNameWrite       = "write"
	OpNameRead        = "read"
	OpNameImm         = "imm"
	OpNameImmSE       = "imm_se"
	OpNameFetchAdd    = "fetch_add"
	OpNameCmpSwap     = "cmp_swap"
	OpNameTerminate   = "terminate"
	OpNamePause       = "pause"
	OpNameWriteImm    = "write_imm" // RDMA Write followed by Immediate Data
	opNameRTR         = "rtr"
	opNameReadResp    = "read_response"
	opNameAtomicResp  = "atomic_response"
	defaultServerPort = 4791
)

// Op is one RDMA operation. A read or an atomic sends its request in Dir
// and its response the other way.
type Op struct {
	// Op is the operation: send, send_se, send_inv, send_se_inv, write,
	// write_imm, read, imm, imm_se, fetch_add, cmp_swap, terminate, pause.
	Op string `json:"op" yaml:"op"`
	// Dir is "i2r" (client to server, default) or "r2i".
	Dir string `json:"dir,omitempty" yaml:"dir,omitempty"`
	// Size is the payload size of a send, write or read (octets).
	Size Size `json:"size,omitempty" yaml:"size,omitempty"`
	// Payload gives the payload octets instead of a pattern; Size is then
	// its length.
	Payload Data `json:"payload,omitempty" yaml:"payload,omitempty"`
	// STag and TO: the Data Sink of a write, the Data Source of a read
	// (default: generated per connection and direction).
	STag *uint32 `json:"stag,omitempty" yaml:"stag,omitempty"`
	TO   *uint64 `json:"to,omitempty" yaml:"to,omitempty"`
	// SinkSTag and SinkTO: the Data Sink of a read (the requester's
	// buffer).
	SinkSTag *uint32 `json:"sink_stag,omitempty" yaml:"sink_stag,omitempty"`
	SinkTO   *uint64 `json:"sink_to,omitempty" yaml:"sink_to,omitempty"`
	// InvSTag is the STag a send_inv / send_se_inv invalidates.
	InvSTag uint32 `json:"inv_stag,omitempty" yaml:"inv_stag,omitempty"`
	// Imm is the Immediate Data of imm, imm_se and write_imm.
	Imm uint64 `json:"imm,omitempty" yaml:"imm,omitempty"`
	// Atomic fields (RFC 7306 §5.2.1): AddSwap is the Add or Swap Data,
	// Mask the Add or Swap Mask, Compare and CompareMask are for cmp_swap;
	// Orig is the original value the Atomic Response returns. STag/TO name
	// the target.
	AddSwap     uint64  `json:"add_swap,omitempty" yaml:"add_swap,omitempty"`
	Mask        uint64  `json:"mask,omitempty" yaml:"mask,omitempty"`
	Compare     uint64  `json:"compare,omitempty" yaml:"compare,omitempty"`
	CompareMask *uint64 `json:"compare_mask,omitempty" yaml:"compare_mask,omitempty"`
	Orig        uint64  `json:"orig,omitempty" yaml:"orig,omitempty"`
	// Terminate fields: Layer, EType and Code name the cause (RFC 5040
	// §4.8). Headers says what the Terminate copies back: "auto" (default:
	// what RFC 5040 §7.1 prescribes for the cause, if an earlier message
	// from the peer can be blamed), "none", "ddp" (M, D and the DDP
	// header) or "ddp_rdma" (also the Read Request header, R). Blame is
	// the index in Ops of the operation whose last segment received from
	// the peer is blamed (default: the latest one).
	Layer   uint8  `json:"layer,omitempty" yaml:"layer,omitempty"`
	EType   uint8  `json:"etype,omitempty" yaml:"etype,omitempty"`
	Code    uint8  `json:"code,omitempty" yaml:"code,omitempty"`
	Headers string `json:"headers,omitempty" yaml:"headers,omitempty"`
	Blame   *int   `json:"blame,omitempty" yaml:"blame,omitempty"`
	// Unanswered leaves a read or an atomic without its response (the
	// responder refuses it, e.g. to Terminate instead).
	Unanswered bool `json:"unanswered,omitempty" yaml:"unanswered,omitempty"`
	// Delay is idle time before the operation (e.g. "50us").
	Delay Duration `json:"delay,omitempty" yaml:"delay,omitempty"`
	// Gap stamps the operation's first frame exactly Gap after the
	// connection's previous frame that carried payload (no serialization
	// or turnaround latency in between; ACKs in between stay inside it), so
	// a scenario plants a known time between two operations: the target
	// queueing before a storage command's first RDMA operation, its
	// backend before the response. ResponseGap does the same for the
	// response of a read or an atomic, after the request's last frame: a
	// known RDMA transfer time. A gap shorter than the ACKs generated in
	// it is stretched to them.
	Gap         Duration `json:"gap,omitempty" yaml:"gap,omitempty"`
	ResponseGap Duration `json:"response_gap,omitempty" yaml:"response_gap,omitempty"`
	// Repeat runs the operation this many times (0 and 1: once); writes
	// and reads advance their TO by Size each time.
	Repeat int `json:"repeat,omitempty" yaml:"repeat,omitempty"`
}

// Impairment kinds. TCP-level kinds point at a data segment (Segment),
// FPDU-level kinds at an FPDU (FPDU) or at an operation (Op).
const (
	// TCP level.
	ImpDrop           = "drop"            // the capture misses the segment (Resend: lost and retransmitted)
	ImpReorder        = "reorder"         // the segment is sent after the next After segments
	ImpDuplicate      = "duplicate"       // the segment is sent twice in a row
	ImpRetransmit     = "retransmit"      // the segment is sent again, same octets, After segments later
	ImpRetransmitDiff = "retransmit_diff" // ... with different octets
	ImpSnaplen        = "snaplen"         // the frame is cut to Value octets
	ImpMidstream      = "midstream"       // the capture misses the connection's first Value frames
	// FPDU level.
	ImpCorruptCRC          = "corrupt_crc"            // CRC field off by one bit
	ImpWrongMSN            = "wrong_msn"              // the message's MSN is Value (default expected+5); the count goes on from it
	ImpWrongQN             = "wrong_qn"               // the message goes to queue Value (default 7)
	ImpBadDDPVersion       = "bad_ddp_version"        // DV Value (default 2)
	ImpBadRDMAPVersion     = "bad_rdmap_version"      // RV Value (default 2)
	ImpMOOutOfOrder        = "mo_out_of_order"        // the first two segments of a message swapped (or MO Value on a single one)
	ImpUnknownSTag         = "unknown_stag"           // a write or read response to an STag never advertised
	ImpReadResponseTooLong = "read_response_too_long" // a read response Value octets longer than asked (default 64)
)

// Impairment is one exact fault.
type Impairment struct {
	Kind string `json:"kind" yaml:"kind"`
	// Conn is the connection index (from 0).
	Conn int `json:"conn,omitempty" yaml:"conn,omitempty"`
	// Dir is "i2r" (default) or "r2i".
	Dir string `json:"dir,omitempty" yaml:"dir,omitempty"`
	// Segment is the n-th data segment of the direction, from 1, counting
	// original transmissions (the MPA frame's segment included).
	Segment int `json:"segment,omitempty" yaml:"segment,omitempty"`
	// FPDU is the n-th FPDU of the direction, from 1.
	FPDU int `json:"fpdu,omitempty" yaml:"fpdu,omitempty"`
	// Op is an index into the connection's Ops (from 0): the impairment
	// hits the first FPDU of that operation's first run (of its response
	// for read_response_too_long, and for unknown_stag on a read). Its
	// direction comes from the operation.
	Op *int `json:"op,omitempty" yaml:"op,omitempty"`
	// Value is the kind's parameter (see the kind constants).
	Value *uint64 `json:"value,omitempty" yaml:"value,omitempty"`
	// After is how many later segments of the direction go first for
	// reorder (default 1) and retransmit (default 3).
	After int `json:"after,omitempty" yaml:"after,omitempty"`
	// Resend makes a drop a network loss: the segment is retransmitted
	// After segments later (default 3), so the capture has no gap.
	Resend bool `json:"resend,omitempty" yaml:"resend,omitempty"`
}

// Rates applies impairments at random, each an independent probability per
// data segment (TCP kinds) or per FPDU (CRC and header kinds). Each one
// applied is recorded in the truth like an explicit impairment.
type Rates struct {
	Drop           float64 `json:"drop,omitempty" yaml:"drop,omitempty"`
	Reorder        float64 `json:"reorder,omitempty" yaml:"reorder,omitempty"`
	Duplicate      float64 `json:"duplicate,omitempty" yaml:"duplicate,omitempty"`
	Retransmit     float64 `json:"retransmit,omitempty" yaml:"retransmit,omitempty"`
	RetransmitDiff float64 `json:"retransmit_diff,omitempty" yaml:"retransmit_diff,omitempty"`
	CorruptCRC     float64 `json:"corrupt_crc,omitempty" yaml:"corrupt_crc,omitempty"`
	// CorruptHeader picks one of wrong_msn, wrong_qn, bad_ddp_version and
	// bad_rdmap_version for an FPDU that starts a message.
	CorruptHeader float64 `json:"corrupt_header,omitempty" yaml:"corrupt_header,omitempty"`
}

func (r Rates) any() bool {
	return r.Drop > 0 || r.Reorder > 0 || r.Duplicate > 0 || r.Retransmit > 0 ||
		r.RetransmitDiff > 0 || r.CorruptCRC > 0 || r.CorruptHeader > 0
}

// Data is a run of octets in a scenario file: plain text, or hexadecimal
// after "0x" ("0x00ff10").
type Data []byte

// MarshalText writes printable ASCII as text and anything else as 0x-hex.
func (d Data) MarshalText() ([]byte, error) {
	printable := !bytes.HasPrefix(d, []byte("0x"))
	for _, c := range d {
		if c > unicode.MaxASCII || !unicode.IsPrint(rune(c)) {
			printable = false
			break
		}
	}
	if printable {
		return []byte(d), nil
	}
	return []byte("0x" + hex.EncodeToString(d)), nil
}

// UnmarshalText reads text, or hex after "0x".
func (d *Data) UnmarshalText(b []byte) error {
	if s, ok := strings.CutPrefix(string(b), "0x"); ok {
		v, err := hex.DecodeString(s)
		if err != nil {
			return fmt.Errorf("bad hex data %q: %v", b, err)
		}
		*d = v
		return nil
	}
	*d = append(Data(nil), b...)
	return nil
}

// Size is an octet count (or a bit rate) written as a number or with a
// suffix: "64KiB", "1.5GB", "10G" (k/M/G/T are powers of 1000, Ki/Mi/Gi/Ti
// powers of 1024; a trailing B or b is ignored).
type Size int64

// ParseSize reads a Size.
func ParseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "b")
	t = strings.TrimSuffix(t, "it") // "Gbit"
	t = strings.TrimSuffix(strings.TrimSuffix(t, "b"), "/s")
	mult := 1.0
	for _, u := range []struct {
		suf string
		m   float64
	}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}} {
		if v, ok := strings.CutSuffix(t, u.suf); ok {
			t, mult = v, u.m
			break
		}
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || f < 0 || f*mult > 1<<62 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return Size(f * mult), nil
}

// UnmarshalJSON accepts a number or a string with a suffix.
func (s *Size) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		return s.UnmarshalText([]byte(str))
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("bad size %s", b)
	}
	if n < 0 {
		return fmt.Errorf("negative size %d", n)
	}
	*s = Size(n)
	return nil
}

// UnmarshalText accepts a number with an optional suffix (YAML scalars).
func (s *Size) UnmarshalText(b []byte) error {
	v, err := ParseSize(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Duration is a time.Duration written as "10us", "1.5ms" (or a number of
// nanoseconds).
type Duration time.Duration

// MarshalText writes the time.Duration form.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads the time.Duration form or plain nanoseconds.
func (d *Duration) UnmarshalText(b []byte) error {
	if n, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		*d = Duration(n)
		return nil
	}
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("bad duration %q", b)
	}
	*d = Duration(v)
	return nil
}

// UnmarshalJSON accepts a string or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var str string
		if err := json.Unmarshal(b, &str); err != nil {
			return err
		}
		return d.UnmarshalText([]byte(str))
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("bad duration %s", b)
	}
	*d = Duration(n)
	return nil
}

// Load reads a scenario file: YAML when the name ends in .yaml or .yml,
// else JSON (YAML is tried when the content does not start with '{').
// Unknown fields are errors, so a misspelt key does not pass silently.
func Load(name string) (*Scenario, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	ext := strings.ToLower(filepath.Ext(name))
	yamlFile := ext == ".yaml" || ext == ".yml"
	sc, err := Parse(b, yamlFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return sc, nil
}

// Parse decodes a scenario from JSON, or from YAML when isYAML is set or the
// text does not start with '{'. It validates the result.
func Parse(b []byte, isYAML bool) (*Scenario, error) {
	var sc Scenario
	trimmed := bytes.TrimSpace(b)
	if !isYAML && len(trimmed) > 0 && trimmed[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&sc); err != nil {
			return nil, err
		}
	} else {
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&sc); err != nil && err != io.EOF {
			return nil, err
		}
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	return &sc, nil
}

// MarshalYAML-free helpers: WriteJSON and WriteYAML write the scenario in
// the file format Load reads.

// WriteJSON writes sc as indented JSON.
func (sc *Scenario) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(sc)
}

// WriteYAML writes sc as YAML.
func (sc *Scenario) WriteYAML(w io.Writer) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(sc); err != nil {
		return err
	}
	return enc.Close()
}

var (
	validOps = map[string]bool{
		OpNameSend: true, OpNameSendSE: true, OpNameSendInv: true, OpNameSendSEInv: true,
		OpNameWrite: true, OpNameWriteImm: true, OpNameRead: true, OpNameImm: true, OpNameImmSE: true,
		OpNameFetchAdd: true, OpNameCmpSwap: true, OpNameTerminate: true, OpNamePause: true,
	}
	tcpKinds = map[string]bool{
		ImpDrop: true, ImpReorder: true, ImpDuplicate: true, ImpRetransmit: true,
		ImpRetransmitDiff: true, ImpSnaplen: true,
	}
	fpduKinds = map[string]bool{
		ImpCorruptCRC: true, ImpWrongMSN: true, ImpWrongQN: true, ImpBadDDPVersion: true,
		ImpBadRDMAPVersion: true, ImpMOOutOfOrder: true, ImpUnknownSTag: true, ImpReadResponseTooLong: true,
	}
)

// Limits that keep a scenario's memory bounded.
const (
	maxOpSize     = 1 << 30 // one operation's payload
	maxConns      = 1 << 16
	maxPayloadLen = 1 << 20 // an explicit Payload
)

// Validate checks the scenario for values the generator cannot honour. It
// does not reject protocol violations: those are what impairments are for.
func (sc *Scenario) Validate() error {
	if len(sc.Connections) == 0 {
		return fmt.Errorf("scenario has no connections")
	}
	if len(sc.Connections) > maxConns {
		return fmt.Errorf("%d connections, at most %d", len(sc.Connections), maxConns)
	}
	if sc.Snaplen < 0 || sc.Repeat < 0 || sc.Repeat > 1<<30 || sc.LinkRate < 0 || sc.Latency < 0 || sc.MaxBytes < 0 {
		return fmt.Errorf("negative snaplen, link_rate, latency or max_bytes, or repeat outside 0..2^30")
	}
	if sc.LinkRate != 0 && sc.LinkRate < 1000 {
		return fmt.Errorf("link_rate %d below 1000 bit/s", sc.LinkRate)
	}
	if time.Duration(sc.Latency) > time.Minute {
		return fmt.Errorf("latency %v above a minute", time.Duration(sc.Latency))
	}
	for _, p := range []float64{sc.Rates.Drop, sc.Rates.Reorder, sc.Rates.Duplicate, sc.Rates.Retransmit, sc.Rates.RetransmitDiff, sc.Rates.CorruptCRC, sc.Rates.CorruptHeader} {
		if p < 0 || p > 1 || p != p {
			return fmt.Errorf("impairment rate %v outside [0,1]", p)
		}
	}
	for i := range sc.Connections {
		if err := sc.Connections[i].validate(); err != nil {
			return fmt.Errorf("connection %d: %w", i, err)
		}
		if a := sc.Connections[i].After; a != nil && (*a < 0 || *a >= i) {
			return fmt.Errorf("connection %d: after %d is not an earlier connection", i, *a)
		}
	}
	for i, im := range sc.Impairments {
		if err := im.validate(sc); err != nil {
			return fmt.Errorf("impairment %d (%s): %w", i, im.Kind, err)
		}
	}
	return nil
}

func (c *Connection) validate() error {
	var ca, sa netip.Addr
	var err error
	if c.Client != "" {
		if ca, _, err = parseEndpoint(c.Client, 40000); err != nil {
			return fmt.Errorf("client: %w", err)
		}
	}
	if c.Server != "" {
		if sa, _, err = parseEndpoint(c.Server, defaultServerPort); err != nil {
			return fmt.Errorf("server: %w", err)
		}
	}
	if ca.IsValid() && sa.IsValid() && ca.Is4() != sa.Is4() {
		return fmt.Errorf("client %s and server %s are not the same IP version", ca, sa)
	}
	if ca.IsValid() != sa.IsValid() && (ca.Is6() || sa.Is6()) {
		return fmt.Errorf("give both addresses for IPv6 (the defaults are IPv4)")
	}
	for _, m := range []string{c.ClientMAC, c.ServerMAC} {
		if _, err := parseMAC(m); m != "" && err != nil {
			return err
		}
	}
	if c.VLAN > 4095 {
		return fmt.Errorf("vlan %d above 4095", c.VLAN)
	}
	if c.MSS != 0 && (c.MSS < 64 || c.MSS > 65000) {
		return fmt.Errorf("mss %d outside 64..65000", c.MSS)
	}
	if c.TSClock < 0 || c.MaxULPDU < 0 || c.MaxULPDU > 65535 || c.AckEvery < -1 {
		return fmt.Errorf("bad ts_clock, max_ulpdu (0..65535) or ack_every (>= -1)")
	}
	if c.MaxULPDU != 0 && c.MaxULPDU < 128 {
		return fmt.Errorf("max_ulpdu %d below 128 (RFC 5044 §4.5 floor)", c.MaxULPDU)
	}
	switch c.Packing {
	case "", "one", "pack", "stream":
	default:
		return fmt.Errorf("packing %q: want one, pack or stream", c.Packing)
	}
	for i, p := range c.Split {
		if p <= 0 || p > 1<<20 || (i > 0 && p <= c.Split[i-1]) || i >= 64 {
			return fmt.Errorf("split %v: at most 64 ascending offsets in 1..2^20", c.Split)
		}
	}
	switch c.Close {
	case "", "fin", "rst", "none":
	default:
		return fmt.Errorf("close %q: want fin, rst or none", c.Close)
	}
	m := &c.MPA
	if m.Rev != nil && (*m.Rev < 0 || *m.Rev > 255) {
		return fmt.Errorf("mpa rev %d", *m.Rev)
	}
	if len(m.RequestData) > 1024 || len(m.ReplyData) > 1024 {
		return fmt.Errorf("mpa private data above 1024 octets")
	}
	switch m.RTR {
	case "", "write", "read", "send":
	default:
		return fmt.Errorf("mpa rtr %q: want write, read or send", m.RTR)
	}
	if e := m.ERDMA; e != nil {
		if e.CC > 15 || e.ReplyCC > 15 {
			return fmt.Errorf("mpa erdma cc above 15 (a 4-bit field)")
		}
		if m.RTR != "" || m.Rev1IRDORD || (m.Enhanced != nil && *m.Enhanced) {
			return fmt.Errorf("mpa erdma excludes rtr, rev1_ird_ord and enhanced")
		}
	}
	if m.RTR != "" && !c.enhanced() {
		return fmt.Errorf("mpa rtr needs the RFC 6581 block (rev 2, enhanced)")
	}
	for i, op := range c.Ops {
		if !validOps[op.Op] {
			return fmt.Errorf("op %d: unknown op %q", i, op.Op)
		}
		if op.Dir != "" && op.Dir != "i2r" && op.Dir != "r2i" {
			return fmt.Errorf("op %d: dir %q: want i2r or r2i", i, op.Dir)
		}
		if op.Size < 0 || op.Size > maxOpSize || len(op.Payload) > maxPayloadLen {
			return fmt.Errorf("op %d: size above %d or payload above %d", i, maxOpSize, maxPayloadLen)
		}
		if op.Repeat < 0 || op.Repeat > 1<<30 {
			return fmt.Errorf("op %d: repeat %d", i, op.Repeat)
		}
		if op.Delay < 0 || time.Duration(op.Delay) > time.Hour {
			return fmt.Errorf("op %d: delay %v outside 0..1h", i, time.Duration(op.Delay))
		}
		if op.Gap < 0 || time.Duration(op.Gap) > time.Hour || op.ResponseGap < 0 || time.Duration(op.ResponseGap) > time.Hour {
			return fmt.Errorf("op %d: gap %v or response_gap %v outside 0..1h", i, time.Duration(op.Gap), time.Duration(op.ResponseGap))
		}
		switch op.Headers {
		case "", "auto", "none", "ddp", "ddp_rdma":
		default:
			return fmt.Errorf("op %d: headers %q: want auto, none, ddp or ddp_rdma", i, op.Headers)
		}
		if op.Blame != nil && (*op.Blame < 0 || *op.Blame >= i) {
			return fmt.Errorf("op %d: blame %d is not an earlier op", i, *op.Blame)
		}
	}
	return nil
}

// defaultIRDORD is the IRD and ORD a scenario leaves open.
const defaultIRDORD = 16

// irdOrd returns the Request's IRD and ORD and the Reply's, defaults
// applied.
func (m *MPA) irdOrd() (ird, ord, rird, rord uint16) {
	v := func(p *uint16) uint16 {
		if p == nil {
			return defaultIRDORD
		}
		return *p
	}
	return v(m.IRD), v(m.ORD), v(m.ReplyIRD), v(m.ReplyORD)
}

func (c *Connection) rev() int {
	if c.MPA.ERDMA != nil {
		return decode.MPARevERDMA
	}
	if c.MPA.Rev == nil {
		return 1
	}
	return *c.MPA.Rev
}

func (c *Connection) enhanced() bool {
	if c.MPA.Enhanced != nil {
		return *c.MPA.Enhanced
	}
	return c.rev() >= 2 && c.MPA.ERDMA == nil
}

func (im *Impairment) validate(sc *Scenario) error {
	if !tcpKinds[im.Kind] && !fpduKinds[im.Kind] && im.Kind != ImpMidstream {
		return fmt.Errorf("unknown kind")
	}
	if im.Conn < 0 || im.Conn >= len(sc.Connections) {
		return fmt.Errorf("conn %d: no such connection", im.Conn)
	}
	if im.Dir != "" && im.Dir != "i2r" && im.Dir != "r2i" {
		return fmt.Errorf("dir %q: want i2r or r2i", im.Dir)
	}
	if im.After < 0 || im.After > 1<<20 {
		return fmt.Errorf("after %d", im.After)
	}
	switch {
	case im.Kind == ImpMidstream:
		if im.Value == nil || *im.Value == 0 {
			return fmt.Errorf("midstream needs value: the number of frames the capture misses")
		}
	case tcpKinds[im.Kind]:
		if im.Segment <= 0 {
			return fmt.Errorf("needs segment (from 1)")
		}
		if im.Kind == ImpSnaplen && (im.Value == nil || *im.Value > 65535) {
			return fmt.Errorf("snaplen needs value (octets kept, at most 65535)")
		}
	default:
		if (im.FPDU <= 0) == (im.Op == nil) {
			return fmt.Errorf("needs exactly one of fpdu (from 1) or op")
		}
		if im.Op != nil {
			ops := sc.Connections[im.Conn].Ops
			if *im.Op < 0 || *im.Op >= len(ops) {
				return fmt.Errorf("op %d: no such op", *im.Op)
			}
			if ops[*im.Op].Op == OpNamePause {
				return fmt.Errorf("op %d is a pause", *im.Op)
			}
		}
	}
	return nil
}
