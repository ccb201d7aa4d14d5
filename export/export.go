package export

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/communityid"
	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/reassembly"
	"github.com/iwkit/iwkit/track"
	"github.com/iwkit/iwkit/ulp"
)

// Options say where an export goes.
type Options struct {
	// Dir is the export directory: DIR/<table>/capture=<Capture>/part-<id>.parquet.
	Dir string
	// Capture names the capture set (the Hive partition value); see
	// CaptureName.
	Capture string
	// Files are the capture files, recorded in the captures table.
	Files []string
	// Now, when set, stamps captures.exported_at (tests); else time.Now.
	Now func() time.Time
	// Tags are KEY=VALUE pairs recorded in captures.tags (iwdump --tag).
	Tags []string
	// Replace lets the export replace a capture set of the same name
	// whose content hash differs (else New refuses: ErrNameTaken).
	Replace bool
	// SkipExisting: when the set's live commit has the same content
	// hash, New returns ErrExists and nothing is written.
	SkipExisting bool
}

// CaptureName is the capture-set name of a file: its base name without
// .gz, .pcap or .pcapng, with every octet other than letters, digits, '.',
// '-' and '_' replaced by '_' (the name is a directory, a Hive partition
// value and an SQL string: nothing in it needs escaping).
func CaptureName(file string) string {
	base := filepath.Base(file)
	for _, ext := range []string{".gz", ".pcapng", ".pcap", ".cap"} {
		base = strings.TrimSuffix(base, ext)
	}
	b := []byte(base)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] == '.' || b[0] == '_' { // hidden files to Spark and Hive
		b = append([]byte("c"), b...)
	}
	return string(b)
}

// validCapture: a name CaptureName could have made.
func validCapture(s string) bool { return s != "" && CaptureName(s) == s }

// connInfo is what the export keeps of a connection until its row is
// written at the end.
type connInfo struct {
	addr                  [2]netip.AddrPort
	initiator             int8
	syn                   bool
	firstFrame, lastFrame int
	firstTime, lastTime   time.Time
	markers, crc          [2]bool // by reassembly direction
	src                   [2]string
	closed                string
	closeFrame            int
}

// Exporter is an analyze.Consumer (of analyze.Run, any number of
// workers) that writes the records of one capture set as Parquet part
// files. Make it with New,
// run the pipeline, then call Finish with the report (or Abort).
type Exporter struct {
	o      Options
	id     string
	parts  map[*Table]*part
	rows   map[*Table]*row
	conns  map[uint64]*connInfo
	counts map[*Table]int64

	addrs map[netip.AddrPort]string // ip:port texts, made once
	// last are the two addresses looked up last, with their texts: a
	// PDU's source and destination are most often the previous one's.
	last     [2]netip.AddrPort
	lastText [2]string
	// prep prepares the pdus rows the shards did not (fast.go); prepBuf
	// holds what it made of the PDU at hand.
	prep    *pduPreparer
	prepBuf []byte

	// recent are the last findings of each connection (frame, code), for
	// the commands row's findings; codes the list of one row.
	recent map[uint64][]recentFinding
	codes  []string
	xfers  xferScratch       // the commands row's rdma_ops and rdma_frames (rdma.go)
	cids   map[uint64]string // community_id by connection
	hist   hist              // latency_hist buckets not yet written

	frames              int64
	firstTime, lastTime time.Time
	frameSet            bool

	hash    string // ContentHash of the files
	readErr error  // what stopped the reading (ReadError)
	// mu is held while committing; interrupted is set under it by
	// Interrupt, after which the set commits nothing.
	mu          sync.Mutex
	interrupted bool
	done        bool // committed or failed: nothing left to stop
}

// New creates the part files of a capture set under their temporary
// names.
func New(o Options) (*Exporter, error) {
	if !validCapture(o.Capture) {
		return nil, fmt.Errorf("export: capture name %q: use CaptureName", o.Capture)
	}
	hash, err := ContentHash(o.Files)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	return newExporter(o, hash)
}

// newExporter is New with the content hash given ("" when it is not known
// yet: Export hashes the capture as the analysis reads it and sets it
// before Finish, when no commit of the name exists to compare it with).
func newExporter(o Options, hash string) (*Exporter, error) {
	if err := checkName(&o, hash); err != nil {
		return nil, err
	}
	e := &Exporter{o: o, id: newPartID(), parts: map[*Table]*part{}, rows: map[*Table]*row{},
		conns: map[uint64]*connInfo{}, counts: map[*Table]int64{}, addrs: map[netip.AddrPort]string{}, prep: newPDUPreparer(),
		hash: hash}
	if !register(e) {
		return nil, ErrInterrupted
	}
	for _, t := range Tables {
		p, err := newPart(t, o.Dir, o.Capture, e.id)
		if err != nil {
			e.Abort()
			return nil, fmt.Errorf("export: %w", err)
		}
		e.parts[t] = p
		e.rows[t] = &row{t: t, p: p}
	}
	return e, nil
}

// newPartID is unique across processes and machines writing one
// directory: the UTC time and 64 random bits. Ids sort by time. A
// writer's id names its temporary files; the id made at its commit names
// the committed parts.
func newPartID() string {
	var r [8]byte
	rand.Read(r[:])
	return time.Now().UTC().Format("20060102T150405.000000000Z") + "-" + hex.EncodeToString(r[:])
}

// Frame counts the frames and their time span (analyze.FrameConsumer).
func (e *Exporter) Frame(fr *pcap.Frame) {
	if !e.frameSet {
		e.firstTime, e.frameSet = fr.Timestamp, true
	}
	e.lastTime = fr.Timestamp
	e.frames++
}

func (e *Exporter) emit(t *Table, r *row) {
	e.parts[t].write(r)
	e.counts[t]++
}

// Record turns a record into a row (analyze.Consumer).
func (e *Exporter) Record(r *analyze.Record) {
	switch r.Kind {
	case analyze.KindPDU:
		e.touch(r)
		e.pdu(r)
	case analyze.KindFinding:
		e.finding(r)
	case analyze.KindCommand:
		e.command(r)
	case analyze.KindOperation:
		e.operation(r)
	case analyze.KindTerminate:
		e.terminate(r)
	case analyze.KindOpened, analyze.KindNegotiated:
		e.touch(r)
	case analyze.KindClosed:
		if ci := e.touch(r); ci != nil {
			ci.closed = r.Close.Reason.String()
			ci.closeFrame = r.Close.Frame
		}
		if r.Conn != nil {
			delete(e.recent, r.Conn.ID)
		}
	}
}

// touch keeps what the connection row needs from a record about c.
func (e *Exporter) touch(r *analyze.Record) *connInfo {
	c := r.Conn
	if c == nil {
		return nil
	}
	ci := e.conns[c.ID]
	if ci == nil {
		ci = &connInfo{addr: c.Addr, syn: c.SYN, firstFrame: c.FirstFrame, firstTime: c.FirstTime}
		e.conns[c.ID] = ci
	}
	ci.initiator = c.Initiator
	if c.LastFrame > ci.lastFrame {
		ci.lastFrame, ci.lastTime = c.LastFrame, c.LastTime
	}
	if r.Kind == analyze.KindPDU && r.Frame > ci.lastFrame {
		ci.lastFrame, ci.lastTime = r.Frame, r.Time
	}
	if r.Prepared != nil { // a taken record's Conn holds no Params (analyze.Splitter): Negotiated brought them
		return ci
	}
	for d := range c.Params {
		p := &c.Params[d]
		ci.markers[d], ci.crc[d] = p.Markers, p.CRC
		switch {
		case p.MarkersSource == reassembly.SourceHandshake || p.CRCSource == reassembly.SourceHandshake:
			ci.src[d] = "handshake"
		case p.MarkersSource == reassembly.SourceInferred || p.CRCSource == reassembly.SourceInferred:
			ci.src[d] = "inferred"
		default:
			ci.src[d] = "unknown"
		}
	}
	return ci
}

// addr is a's ip:port text, as the NDJSON writes it.
func (e *Exporter) addr(a netip.AddrPort) string {
	for i := range e.last {
		if e.last[i] == a && e.lastText[i] != "" {
			return e.lastText[i]
		}
	}
	if s, ok := e.addrs[a]; ok {
		e.remember2(a, s)
		return s
	}
	if len(e.addrs) >= 1<<16 {
		clear(e.addrs)
	}
	s := addrString(a)
	e.addrs[a] = s
	e.remember2(a, s)
	return s
}

// remember2 keeps a as the latest of the two last addresses.
func (e *Exporter) remember2(a netip.AddrPort, s string) {
	e.last[1], e.lastText[1] = e.last[0], e.lastText[0]
	e.last[0], e.lastText[0] = a, s
}

// head writes the columns of where() and connCols().
func (e *Exporter) head(w *row, r *analyze.Record, frame int, optionalConn bool) {
	w.i64(int64(frame))
	w.time(r.Time)
	w.i64(int64(r.Rel))
	if r.Conn == nil {
		if !optionalConn {
			panic("export: record without a connection")
		}
		w.null()
		w.null()
		w.null()
		w.null()
		return
	}
	w.i64(int64(r.Conn.ID))
	w.str(analyze.DirName(r.Conn, r.Dir))
	w.str(e.addr(r.Src))
	w.str(e.addr(r.Dst))
}

// addrString is ip:port as the NDJSON writes it.
func addrString(a netip.AddrPort) string { return string(a.AppendTo(nil)) }

// Preparer makes the pdus and operations rows of a shard (analyze.Splitter:
// fast.go).
func (e *Exporter) Preparer() analyze.Preparer { return newPDUPreparer() }

func (e *Exporter) pdu(r *analyze.Record) {
	w := e.rows[Pdus]
	w.reset()
	e.head(w, r, r.Frame, false)
	w.i64(int64(r.FirstFrame))
	b, ok := r.Prepared, r.Prepared != nil
	if !ok { // one worker, or a PDU the shard did not take
		if b, ok = e.prep.Prepare(r, e.prepBuf[:0]); ok {
			e.prepBuf = b
		}
	}
	if ok {
		writePrepared(w, b)
		e.emit(Pdus, w)
		return
	}
	ev := r.PDU
	w.u32(ev.Seq)
	w.u32(uint32(ev.Len))
	w.u32(uint32(ev.Missing))
	p := &ev.PDU
	m := decode.Present(p)
	pl := e.prep.plan(m)
	for _, i := range pl.present {
		pf := &pduFields[i]
		v, _ := pf.f.GetIn(p, m)
		w.skip(pduBase + i)
		switch pf.typ {
		case Bool:
			w.bool(v.U != 0)
		case Uint8, Uint16, Uint32:
			w.u32(uint32(v.U))
		case Uint64:
			w.u64(v.U)
		case String:
			w.str(v.S)
		case Bytes:
			w.bytes(v.B)
		}
	}
	w.skip(len(Pdus.Cols))
	e.emit(Pdus, w)
}

// pduBase is the column of the first field of the table.
var pduBase = Pdus.Column(fieldColumn(pduFields[0].f.Name))

func (e *Exporter) finding(r *analyze.Record) {
	w := e.rows[Findings]
	w.reset()
	f := &r.Finding
	e.head(w, r, r.Frame, true)
	code := fmt.Sprint(f.Code)
	e.remember(r, code)
	w.str(fmt.Sprint(f.Severity)) // a string, or a catalogue type with String
	w.str(code)
	w.str(f.Message)
	switch {
	case f.Track != nil && len(f.Track.Frames) > 0:
		w.i64s(f.Track.Frames)
	case r.Frame > 0:
		w.i64s([]int{r.Frame})
	default:
		w.i64s(nil)
	}
	if f.Track != nil {
		w.strOrNull(f.Track.Checks)
	} else {
		w.null()
	}
	if r.HasSeq {
		w.u32(r.Seq)
	} else {
		w.null()
	}
	e.emit(Findings, w)
}

func (e *Exporter) operation(r *analyze.Record) {
	w := e.rows[Operations]
	w.reset()
	e.head(w, r, r.Frame, true)
	var v opVals
	if b := r.Prepared; b != nil { // the shard read it (pduPreparer)
		analyze.ReadValue(&v, b)
	} else {
		v = opValues(r.Op)
	}
	w.str(v.Kind.String())
	w.str(v.Opcode.String())
	w.str(v.Status.String())
	w.u64(v.Length)
	isRead := v.Opcode == decode.OpReadRequest
	isWrite := v.Opcode == decode.OpWrite
	isAtomic := v.Kind == track.OpAtomic
	if isRead {
		w.u32(v.Size)
	} else {
		w.null()
	}
	if isRead || isWrite {
		w.u32(v.STag)
		w.u64(v.TO)
	} else {
		w.null()
		w.null()
	}
	if isRead || isAtomic {
		w.u32(v.SrcSTag)
		w.u64(v.SrcTO)
	} else {
		w.null()
		w.null()
	}
	if v.Opcode == decode.OpSendInv || v.Opcode == decode.OpSendSEInv {
		w.u32(v.InvalidateSTag)
	} else {
		w.null()
	}
	if !isWrite {
		w.u32(v.MSN)
	} else {
		w.null()
	}
	if isAtomic {
		w.str(v.AtomicOp.String())
		w.u32(v.RequestID)
	} else {
		w.null()
		w.null()
	}
	w.i64(v.RequestFrame)
	w.i64(v.LastRequestFrame)
	w.frameOrNull(int(v.ResponseFirstFrame))
	w.frameOrNull(int(v.ResponseLastFrame))
	w.i64(v.Start)
	if v.HasEnd {
		w.i64(v.End)
	} else {
		w.null()
	}
	if v.HasLatency {
		w.i64(v.Latency)
		if r.Conn != nil {
			e.latency(histKey{conn: r.Conn.ID, kind: v.Kind.String()}, v.Latency)
		}
	} else {
		w.null()
	}
	for range 9 { // the Terminate columns
		w.null()
	}
	e.communityID(w, r)
	e.emit(Operations, w)
}

// opVals is what an operations row holds of a track.Operation after its
// head, without pointers (times as UnixNano), so that the shard that
// raised the operation reads it (pduPreparer) and the merger copies it
// as octets.
type opVals struct {
	Length, TO, SrcTO                                                     uint64
	RequestFrame, LastRequestFrame, ResponseFirstFrame, ResponseLastFrame int64
	Start, End, Latency                                                   int64
	Size, STag, SrcSTag, InvalidateSTag, MSN, RequestID                   uint32
	Kind                                                                  track.OpKind
	Opcode                                                                decode.Opcode
	Status                                                                track.OpStatus
	AtomicOp                                                              decode.AtomicOp
	HasEnd, HasLatency                                                    bool
}

func opValues(op *track.Operation) opVals {
	v := opVals{Length: op.Length, TO: op.TO, SrcTO: op.SrcTO,
		RequestFrame: int64(op.RequestFrame), LastRequestFrame: int64(op.LastRequestFrame),
		ResponseFirstFrame: int64(op.ResponseFirstFrame), ResponseLastFrame: int64(op.ResponseLastFrame),
		Start: op.Start.UnixNano(), Latency: int64(op.Latency),
		Size: op.Size, STag: op.STag, SrcSTag: op.SrcSTag, InvalidateSTag: op.InvalidateSTag, MSN: op.MSN, RequestID: op.RequestID,
		Kind: op.Kind, Opcode: op.Opcode, Status: op.Status, AtomicOp: op.AtomicOp, HasLatency: op.HasLatency()}
	if !op.End.IsZero() {
		v.End, v.HasEnd = op.End.UnixNano(), true
	}
	return v
}

func (e *Exporter) terminate(r *analyze.Record) {
	w := e.rows[Operations]
	w.reset()
	t := r.Term
	e.head(w, r, r.Frame, true)
	w.str(track.OpTerminate.String())
	w.str(decode.OpTerminate.String())
	for range 11 { // status .. request_id
		w.null()
	}
	w.i64(int64(t.Frame))
	w.i64(int64(t.Frame))
	w.null()
	w.null()
	w.time(t.Time)
	w.time(t.Time)
	w.null()
	w.str(t.Cause.LayerName)
	w.str(t.Cause.ETypeName)
	w.str(t.Cause.CodeName)
	w.str(t.Cause.Short())
	w.bool(t.Siw)
	w.frameOrNull(t.BlamedFrame)
	if t.BlamedFrame > 0 {
		w.str(t.BlamedOpcode.String())
	} else {
		w.null()
	}
	w.str(t.Verdict.String())
	w.strOrNull(t.Reason)
	e.communityID(w, r)
	e.emit(Operations, w)
}

// communityID writes the community_id column of a row about r's
// connection (NULL without one), made once per connection.
func (e *Exporter) communityID(w *row, r *analyze.Record) {
	if r.Conn == nil {
		w.null()
		return
	}
	id, ok := e.cids[r.Conn.ID]
	if !ok {
		if e.cids == nil {
			e.cids = map[uint64]string{}
		}
		id = communityid.V1(0, communityid.ProtoTCP, r.Conn.Addr[0], r.Conn.Addr[1])
		e.cids[r.Conn.ID] = id
	}
	w.str(id)
}

// recentFinding is a finding a command row may list.
type recentFinding struct {
	frame int
	code  string
}

// maxRecent bounds the findings kept per connection for command rows.
const maxRecent = 64

// remember keeps a finding for the command rows of its connection.
func (e *Exporter) remember(r *analyze.Record, code string) {
	if r.Conn == nil {
		return
	}
	if e.recent == nil {
		e.recent = map[uint64][]recentFinding{}
	}
	l := e.recent[r.Conn.ID]
	if len(l) == maxRecent {
		l = append(l[:0], l[1:]...)
	}
	e.recent[r.Conn.ID] = append(l, recentFinding{r.Frame, code})
}

func (e *Exporter) command(r *analyze.Record) {
	w := e.rows[Commands]
	w.reset()
	c := r.Cmd
	e.head(w, r, r.Frame, false)
	w.str(c.Proto.String())
	w.str(c.Name)
	w.u64(c.ID)
	w.strOrNull(c.Status)
	w.bool(c.OK)
	switch {
	case c.Read:
		w.str("read")
	case c.Write:
		w.str("write")
	default:
		w.null()
	}
	opt := func(h ulp.Has, x uint64) {
		if c.Has&h != 0 {
			w.u64(x)
		} else {
			w.null()
		}
	}
	if c.Has&ulp.HasNSID != 0 {
		w.u32(c.NSID)
	} else {
		w.null()
	}
	opt(ulp.HasLUN, c.LUN)
	opt(ulp.HasLBA, c.LBA)
	opt(ulp.HasBlocks, c.Blocks)
	opt(ulp.HasOffset, c.Offset)
	opt(ulp.HasLength, c.Length)
	w.strOrNull(c.Object)
	w.u64(c.Expected)
	w.u64(c.Moved)
	w.u64(c.Inline)
	w.u64(uint64(c.Reads))
	w.u64(uint64(c.Writes))
	w.u32s(c.STags[:c.NSTags])
	w.i64(int64(c.RequestFrame))
	w.time(c.Start)
	if c.Answered {
		w.i64(int64(c.Latency))
		e.latency(histKey{commands: true, conn: r.Conn.ID, proto: c.Proto.String(), command: c.Name}, int64(c.Latency))
	} else {
		w.null()
	}
	if c.Phased {
		w.i64(int64(c.Queue))
		w.i64(int64(c.Transfer))
		w.i64(int64(c.Backend))
	} else {
		w.null()
		w.null()
		w.null()
	}
	w.strOrNull(c.QueueName)
	e.codes = e.codes[:0]
	if r.Conn != nil {
		for _, f := range e.recent[r.Conn.ID] {
			if f.frame == c.RequestFrame || f.frame == r.Frame {
				e.codes = append(e.codes, f.code)
			}
		}
	}
	w.strs(e.codes)
	e.communityID(w, r)
	w.bool(c.Answered)
	if c.Answered {
		w.null()
	} else {
		w.i64(int64(r.Time.Sub(c.Start)))
	}
	w.bool(c.Standing())
	e.rdmaCols(w, c) // rdma.go
	e.emit(Commands, w)
}

// connections writes a row per connection of the report, by number.
func (e *Exporter) connections(rep *analyze.Report) {
	w := e.rows[Connections]
	stats := slices.Clone(rep.ConnStats)
	slices.SortFunc(stats, func(a, b track.ConnStats) int { return a.Conn - b.Conn })
	qx := newQueueIndex(rep) // queues.go
	for i := range stats {
		cs := &stats[i]
		ci := e.conns[uint64(cs.Conn)]
		if ci == nil {
			c := rep.Conns[cs.Conn]
			if c == nil {
				continue
			}
			ci = &connInfo{addr: c.Addr, initiator: c.Initiator, syn: c.SYN, firstFrame: c.FirstFrame, firstTime: c.FirstTime,
				lastFrame: c.LastFrame, lastTime: c.LastTime, src: [2]string{"unknown", "unknown"}}
		}
		init := reassembly.DirAB
		if ci.initiator >= 0 {
			init = reassembly.Dir(ci.initiator)
		}
		ia, ra := ci.addr[init], ci.addr[init.Other()]
		w.reset()
		w.i64(int64(cs.Conn))
		w.str(addrString(ia))
		w.str(addrString(ra))
		w.str(ia.Addr().String())
		w.u16(ia.Port())
		w.str(ra.Addr().String())
		w.u16(ra.Port())
		w.bool(ci.syn)
		w.i64(int64(ci.firstFrame))
		w.i64(int64(ci.lastFrame))
		w.time(ci.firstTime)
		w.time(ci.lastTime)
		era := &cs.Era
		w.str(era.Name())
		if era.Handshake {
			w.u32(uint32(era.ReqRev))
			w.u32(uint32(era.RepRev))
		} else {
			w.null()
			w.null()
		}
		w.bool(era.Enhanced)
		w.bool(era.P2P)
		w.strOrNull(cs.Negotiated.RTR)
		w.bool(cs.Negotiated.Rejected)
		w.bool(era.CRC)
		for _, td := range []track.Dir{track.I2R, track.R2I} {
			rd := init
			if td == track.R2I {
				rd = init.Other()
			}
			w.bool(ci.markers[rd])
			w.bool(ci.crc[rd])
			w.str(orUnknown(ci.src[rd]))
			for _, x := range []int{cs.Negotiated.IRD[td], cs.Negotiated.ORD[td]} {
				if x < 0 {
					w.null()
				} else {
					w.i64(int64(x))
				}
			}
			s := &cs.Dir[td]
			for _, x := range []uint64{s.FPDUs, s.ULPDUOctets, s.PayloadOctets, s.CRCGood, s.CRCBad, s.Gaps, s.GapOctets, s.Retransmissions,
				s.Ops.Writes, s.Ops.Sends, s.Ops.Reads, s.Ops.ReadsAnswered, s.Ops.Atomics, s.Ops.Terminates} {
				w.u64(x)
			}
		}
		w.u64(rep.Findings.Conn(cs.Conn)) // the pipeline's count: the findings table's rows of the connection
		w.strOrNull(ci.closed)
		w.frameOrNull(ci.closeFrame)
		w.str(communityid.V1(0, communityid.ProtoTCP, ci.addr[0], ci.addr[1]))
		qx.queueCells(w, cs.Conn)
		e.emit(Connections, w)
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// Counts are the rows written per table.
type Counts struct {
	Frames                                            int64
	Connections, PDUs, Operations, Findings, Commands int64
}

// ReadError records what stopped the reading of the capture set (a
// damaged or truncated file) in its captures row: truncated, error.
func (e *Exporter) ReadError(err error) { e.readErr = err }

// Finish writes the connections and the captures row (the commit
// record), closes every part file and commits the set: the data parts
// renamed to part-<commit>.parquet, then the captures part. The commit
// with the greatest id is the set's live copy; Finish then removes the
// set's garbage (Collect): older copies, unfinished commits, orphaned
// temporary files. rep is what analyze.Run returned.
func (e *Exporter) Finish(rep *analyze.Report) (Counts, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	defer unregister(e)
	e.done = true
	n := Counts{Frames: e.frames}
	if e.interrupted {
		return n, ErrInterrupted
	}
	if rep != nil {
		e.connections(rep)
	}
	e.flushHist()
	commit := newPartID()
	now := time.Now
	if e.o.Now != nil {
		now = e.o.Now
	}
	w := e.rows[Captures]
	w.reset()
	w.strs(e.o.Files)
	w.i64(e.frames)
	if e.frameSet {
		w.time(e.firstTime)
		w.time(e.lastTime)
	} else {
		w.null()
		w.null()
	}
	n = Counts{Frames: e.frames, Connections: e.counts[Connections], PDUs: e.counts[Pdus], Operations: e.counts[Operations],
		Findings: e.counts[Findings], Commands: e.counts[Commands]}
	for _, x := range []int64{n.Connections, n.PDUs, n.Operations, n.Findings} {
		w.i64(x)
	}
	w.time(now())
	w.i64(n.Commands)
	w.str(commit)
	w.str(e.id)
	w.str(hostOnce())
	w.str(Version())
	w.str(e.hash)
	w.strs(absPaths(e.o.Files))
	w.strs(e.o.Tags)
	w.bool(e.readErr != nil)
	if e.readErr != nil {
		w.str(e.readErr.Error())
	} else {
		w.null()
	}
	w.i64(e.counts[LatencyHist])
	e.emit(Captures, w)
	var err error
	for _, t := range Tables {
		if cerr := e.parts[t].close(); cerr != nil && err == nil {
			err = fmt.Errorf("export %s: %w", t.Name, cerr)
		}
	}
	if err == nil {
		// Another writer may have committed other content under the
		// name since New looked.
		err = checkName(&e.o, e.hash)
		if errors.Is(err, ErrExists) {
			err = nil // the same content: committing again is harmless
		}
	}
	if err != nil {
		e.Abort()
		return n, err
	}
	// The captures part goes last: its rename is the commit.
	for _, t := range Tables {
		if cerr := e.parts[t].commit(commit); cerr != nil {
			e.Abort()
			return n, fmt.Errorf("export %s: %w", t.Name, cerr)
		}
	}
	if testAfterCommit != nil {
		testAfterCommit()
	}
	Collect(e.o.Dir, e.o.Capture)
	return n, nil
}

// testAfterCommit, set by the package's tests, runs between the commit
// and the collection of garbage (where a writer may die).
var testAfterCommit func()

// Abort removes the temporary part files.
func (e *Exporter) Abort() {
	for _, p := range e.parts {
		p.abort()
	}
	unregister(e)
}

// ErrInterrupted is the error of a capture set that Interrupt stopped.
var ErrInterrupted = errors.New("export: interrupted before the commit")

// exporters are the Exporters made and not yet finished or aborted, for
// Interrupt; stopped is set by Interrupt.
var (
	exportersMu sync.Mutex
	exporters   = map[*Exporter]bool{}
	stopped     bool
)

func register(e *Exporter) bool {
	exportersMu.Lock()
	defer exportersMu.Unlock()
	if !stopped {
		exporters[e] = true
	}
	return !stopped
}

func unregister(e *Exporter) {
	exportersMu.Lock()
	delete(exporters, e)
	exportersMu.Unlock()
}

// Interrupt stops every export of this process (iwdump on SIGINT): a set
// being committed finishes its commit; every other set removes its
// temporary files and will commit nothing; New refuses new sets. It
// returns the number of sets stopped. The analysis goroutines are not
// waited for: the caller exits.
func Interrupt() int {
	exportersMu.Lock()
	stopped = true
	list := make([]*Exporter, 0, len(exporters))
	for e := range exporters {
		list = append(list, e)
	}
	exportersMu.Unlock()
	n := 0
	for _, e := range list {
		e.mu.Lock()
		if !e.interrupted && !e.done {
			e.interrupted = true
			for _, p := range e.parts {
				os.Remove(p.tmp)
			}
			n++
		}
		e.mu.Unlock()
	}
	return n
}

// ErrNoCapture is returned by Run for a capture set with no files.
var ErrNoCapture = errors.New("export: no capture files")
