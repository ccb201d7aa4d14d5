package analyze

import (
	"net/netip"
	"time"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/filter"
	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/reassembly"
	"github.com/iwkit/iwkit/track"
	"github.com/iwkit/iwkit/ulp"
)

// Kind says what a Record reports.
type Kind uint8

const (
	// KindPDU: an MPA frame or an FPDU, decoded (Record.PDU).
	KindPDU Kind = iota + 1
	// KindFinding: something a receiver check, the framer or the TCP
	// reassembly found (Record.Finding). Gaps and resynchronisations are
	// findings too (codes tcp.gap, mpa.skipped, mpa.resync); Record.Gap
	// and Record.Resync carry their details.
	KindFinding
	// KindNote: a frame that holds no decodable TCP segment (Record.Note).
	KindNote
	// KindOpened: a connection was taken for iWARP (an MPA key, or an
	// FPDU chain mid-stream). Record.Conn holds what is known of it.
	KindOpened
	// KindNegotiated: the MPA parameters of direction Record.Dir are known
	// (Record.Conn.Params[Dir]): from the handshake, or inferred.
	KindNegotiated
	// KindOperation: an RDMA operation completed or ended (Record.Op): a
	// message reassembled, a Read or Atomic matched with its latency.
	KindOperation
	// KindClosed: the connection ended (Record.Close: FIN, RST, idle,
	// end of capture, eviction).
	KindClosed
	// KindTerminate: a Terminate decoded in context (Record.Term): its
	// cause as read, and the frame of the segment it blames.
	KindTerminate
	// KindCommand: a storage-protocol command completed (Record.Cmd):
	// linked to the RDMA operations that moved its data, with its latency.
	KindCommand
	// KindSegment: a TCP segment that opens or closes the connection,
	// carries no data, or carries data that is not new: a retransmission,
	// or out of order (Record.Seg; only with Config.Segments). Conn is its
	// connection, iWARP or not (yet).
	KindSegment
)

func (k Kind) String() string {
	switch k {
	case KindPDU:
		return "pdu"
	case KindFinding:
		return "finding"
	case KindNote:
		return "note"
	case KindOpened:
		return "opened"
	case KindNegotiated:
		return "negotiated"
	case KindOperation:
		return "operation"
	case KindClosed:
		return "closed"
	case KindTerminate:
		return "terminate"
	case KindCommand:
		return "command"
	case KindSegment:
		return "segment"
	}
	return "unknown"
}

// Record is one item of the pipeline's ordered output. It and everything
// it points to are valid only during the Consumer's call: the reassembly
// buffers behind a PDU are reused afterwards. A consumer that keeps a
// record copies what it needs.
//
// Where a record's octets are: Frame is the frame it is reported at (for a
// PDU the frame holding its last octet); FirstFrame..LastFrame and the TCP
// sequence range Seq..End (of direction Dir of Conn's 4-tuple) locate
// them, so a consumer can re-read one PDU from the source later without
// running the capture again. Frame numbers are those of the Source (for
// several files merged: in merged order).
type Record struct {
	Kind  Kind
	Frame int
	Time  time.Time     // capture time of the record
	Rel   time.Duration // since the first frame of the capture

	// Conn is the connection (nil when unknown: a note, or a finding of a
	// connection already forgotten). With Config.Workers > 1, Conn.ID is
	// the number a shard gave it; Out.AppendConn writes the global one.
	Conn     *reassembly.Conn
	Dir      reassembly.Dir
	Src, Dst netip.AddrPort

	FirstFrame, LastFrame int
	HasSeq                bool
	Seq, End              uint32 // TCP sequence range [Seq, End) of the PDU or gap

	PDU     *reassembly.PDUEvent   // KindPDU
	Finding Finding                // KindFinding
	Op      *track.Operation       // KindOperation
	Term    *track.TerminateReport // KindTerminate
	Close   *reassembly.CloseEvent
	Gap     *reassembly.GapEvent    // a tcp.gap or mpa.skipped finding
	Resync  *reassembly.ResyncEvent // an mpa.resync finding
	Note    string                  // KindNote
	// ULP is the storage-protocol message a PDU completes (KindPDU; nil
	// when none), Cmd the command of a KindCommand record.
	ULP *ulp.Message
	Cmd *ulp.Command
	// Seg is the segment of a KindSegment record (a value: a sharded run's
	// copy of the record needs no more).
	Seg reassembly.SegmentEvent
	// Prepared is what a Splitter's Preparer made of the record on its
	// shard, in place of the record's PDU, ULP message, operation and the
	// other details (see Splitter), not nil even when empty; nil
	// otherwise.
	Prepared []byte

	h     *handler         // raised it: STags asks its tracker
	stags []track.STagInfo // STags of a copy (Run with workers)
	addr  [2][16]byte      // the ip.src, ip.dst filter values (addrValue)
}

// STags returns, for an operation record, the tracker's STag ledger
// entries of the STags the operation names (track.Tracker.OpSTags), as
// they stand after it: keep the latest entry of each connection, owner
// and STag for the ledger of the capture. Valid during the call only.
func (r *Record) STags() []track.STagInfo {
	if r.Kind != KindOperation || r.Op == nil {
		return nil
	}
	if h := r.h; h != nil {
		h.stags = h.t.OpSTags(r.Op, h.stags[:0])
		return h.stags
	}
	return r.stags
}

// ConnID is the number of the record's connection, -1 when it has none.
func (r *Record) ConnID() int {
	if r.Conn == nil {
		return -1
	}
	return int(r.Conn.ID)
}

// Finding is what a KindFinding record reports.
type Finding struct {
	Severity finding.Severity // the code's, or the tracker's for this instance
	Code     finding.Code     // from the one catalogue; its name is stable (ddp.msn_gap)
	Message  string
	// Track is the tracker's finding (receiver checks, with every frame it
	// names), nil for findings of the framer and the TCP reassembly.
	Track *track.Finding
}

// RecordField is a field of a record rather than of a PDU's octets: where
// and when it is, and what a finding says. -G fields lists those with a
// Desc (iwdump -e prints them), display filters (-Y) test them all.
type RecordField struct {
	Name string
	Kind decode.FieldKind
	Desc string // "" for the finding.* fields, which -e does not print
	Get  filter.Getter[*Record]
	// Either names the two fields this one stands for (ip.addr: ip.src
	// or ip.dst; filter.Either); Get is nil then. -e prints both values.
	Either [2]string
}

// noEither: a field of its own (RecordField.Either).
var noEither [2]string

func timeValue(d time.Duration) decode.Value {
	return decode.Value{Kind: decode.KindTime, U: uint64(d)}
}

// addrValue is address a as a KindAddr value, its octets in r's scratch
// i (no allocation).
func (r *Record) addrValue(i int, a netip.Addr) decode.Value {
	r.addr[i] = a.As16()
	return decode.Value{Kind: decode.KindAddr, B: r.addr[i][:]}
}

func uintValue(x uint64) decode.Value { return decode.Value{Kind: decode.KindUint, U: x} }

// textValue is a value written as text: times, addresses.
func textValue(b []byte) decode.Value { return decode.Value{Kind: decode.KindString, S: string(b)} }

func frameOf(r *Record) (decode.Value, bool) { return uintValue(uint64(r.Frame)), true }

func findingOnly(get func(r *Record) decode.Value) filter.Getter[*Record] {
	return func(r *Record) (decode.Value, bool) {
		if r.Kind != KindFinding {
			return decode.Value{}, false
		}
		return get(r), true
	}
}

func withConn(get func(r *Record) decode.Value) filter.Getter[*Record] {
	return func(r *Record) (decode.Value, bool) {
		if r.Conn == nil {
			return decode.Value{}, false
		}
		return get(r), true
	}
}

// RecordFields are the record's fields: NDJSON's top-level keys, tshark's
// frame.* names for habit's sake, and the finding's. Times are text, as
// -e prints them (they compare as text).
var RecordFields = []RecordField{
	// frame: the frame a PDU or finding is reported at (iwdump -Y 'frame
	// == N' finds what a query over an export points at).
	{"frame", decode.KindUint, "number of the frame holding the PDU's last octet", frameOf, noEither},
	{"time", decode.KindTime, "seconds since the first frame (6 decimals, as NDJSON)", func(r *Record) (decode.Value, bool) {
		// What -e prints: rounded to the microsecond.
		return timeValue((r.Rel + 500*time.Nanosecond).Truncate(time.Microsecond)), true
	}, noEither},
	{"conn", decode.KindUint, "connection number", withConn(func(r *Record) decode.Value { return uintValue(r.Conn.ID) }), noEither},
	{"dir", decode.KindString, "i2r (from the MPA initiator) or r2i", withConn(func(r *Record) decode.Value {
		return decode.Value{Kind: decode.KindString, S: DirName(r.Conn, r.Dir)}
	}), noEither},
	{"src", decode.KindString, "sender ip:port", withConn(func(r *Record) decode.Value { return textValue(r.Src.AppendTo(nil)) }), noEither},
	{"dst", decode.KindString, "receiver ip:port", withConn(func(r *Record) decode.Value { return textValue(r.Dst.AppendTo(nil)) }), noEither},
	// Wireshark's names for the TCP/IP endpoints (IPv4 and IPv6 alike).
	{"ip.src", decode.KindAddr, "sender IP address (IPv4 or IPv6)", withConn(func(r *Record) decode.Value { return r.addrValue(0, r.Src.Addr()) }), noEither},
	{"ip.dst", decode.KindAddr, "receiver IP address (IPv4 or IPv6)", withConn(func(r *Record) decode.Value { return r.addrValue(1, r.Dst.Addr()) }), noEither},
	{"ip.addr", decode.KindAddr, "ip.src or ip.dst (-e: both)", nil, [2]string{"ip.src", "ip.dst"}},
	{"tcp.srcport", decode.KindUint, "sender TCP port", withConn(func(r *Record) decode.Value { return uintValue(uint64(r.Src.Port())) }), noEither},
	{"tcp.dstport", decode.KindUint, "receiver TCP port", withConn(func(r *Record) decode.Value { return uintValue(uint64(r.Dst.Port())) }), noEither},
	{"tcp.port", decode.KindUint, "tcp.srcport or tcp.dstport (-e: both)", nil, [2]string{"tcp.srcport", "tcp.dstport"}},
	{"missing", decode.KindUint, "octets of the PDU not captured", func(r *Record) (decode.Value, bool) {
		if r.Kind != KindPDU {
			return decode.Value{}, false
		}
		return uintValue(uint64(r.PDU.Missing)), true
	}, noEither},
	{"frame.number", decode.KindUint, "as tshark: frame", frameOf, noEither},
	{"frame.time_relative", decode.KindTime, "as tshark: seconds since the first frame, 9 decimals", func(r *Record) (decode.Value, bool) {
		return timeValue(r.Rel), true
	}, noEither},
	{"frame.time_epoch", decode.KindTime, "as tshark: seconds since the epoch, 9 decimals", func(r *Record) (decode.Value, bool) {
		return timeValue(time.Duration(r.Time.UnixNano())), true
	}, noEither},
	{"finding", decode.KindBool, "", func(r *Record) (decode.Value, bool) {
		return decode.Value{Kind: decode.KindBool, U: 1}, r.Kind == KindFinding
	}, noEither},
	{"finding.severity", decode.KindString, "", findingOnly(func(r *Record) decode.Value {
		return decode.Value{Kind: decode.KindString, S: r.Finding.Severity.String()}
	}), noEither},
	{"finding.code", decode.KindString, "", findingOnly(func(r *Record) decode.Value {
		return decode.Value{Kind: decode.KindString, S: r.Finding.Code.String()}
	}), noEither},
	{"finding.message", decode.KindString, "", findingOnly(func(r *Record) decode.Value {
		return decode.Value{Kind: decode.KindString, S: r.Finding.Message}
	}), noEither},
}

// ResolveField serves display filters (package filter) over records: the
// record's fields (RecordFields), the decode field table for PDUs and the
// ULP field table for the storage-protocol messages.
func ResolveField(name string) (filter.Getter[*Record], decode.FieldKind, bool) {
	for i := range RecordFields {
		if rf := &RecordFields[i]; rf.Name == name && rf.Get != nil {
			return rf.Get, rf.Kind, true
		}
	}
	f, ok := decode.FieldByName(name)
	if !ok {
		return ulpField(name)
	}
	return func(r *Record) (decode.Value, bool) {
		if r.Kind != KindPDU {
			return decode.Value{}, false
		}
		return f.Get(&r.PDU.PDU)
	}, f.Kind, true
}

// CompileFilter compiles a display filter (iwdump -Y) over records.
func CompileFilter(expr string) (*filter.Filter[*Record], error) {
	return filter.CompileMulti(expr, ResolveField, ulpNth, filter.Either(EitherField))
}

// EitherField reports the two fields a record field stands for (ip.addr:
// ip.src or ip.dst; tcp.port).
func EitherField(name string) (a, b string, ok bool) {
	for i := range RecordFields {
		if rf := &RecordFields[i]; rf.Name == name && rf.Either[0] != "" {
			return rf.Either[0], rf.Either[1], true
		}
	}
	return "", "", false
}
