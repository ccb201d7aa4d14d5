package tui

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/reassembly"
	"github.com/iwkit/iwkit/track"
)

// Row kinds.
const (
	RowFPDU    uint8 = iota + 1 // an FPDU
	RowMPA                      // an MPA Request or Reply
	RowFinding                  // a finding
)

// Row flags.
const (
	FlagTagged  uint8 = 1 << iota // DDP T
	FlagLast                      // DDP L
	FlagCRCGood                   // CRC checked and good
	FlagCRCBad                    // CRC checked and bad
	FlagPartial                   // part of the FPDU was not captured
	FlagSegErr                    // the DDP/RDMAP headers did not decode
	FlagReject                    // MPA Reply with R
	FlagReply                     // MPA Reply (else Request)
)

// Queue values of a Row besides the DDP QN (0-3).
const (
	QueueTagged uint8 = 4 // tagged segments (Writes, Read Responses)
	QueueOther  uint8 = 5 // MPA frames, QN above 3, undecodable
)

// Row is one line of the list: a PDU or a finding, 40 octets. It says
// where the PDU's octets are (frames First..Last of direction Dir of
// connection Conn, TCP sequence range Seq..End) and a few fields for the
// summary; the rest is decoded when the row is shown in detail.
type Row struct {
	Rel         int64  // ns since the first frame
	First, Last uint32 // frames
	Seq, End    uint32
	Conn        uint32
	Aux         uint32 // FPDU: STag (tagged) or MSN; finding: its index in Index.findings
	ULen        uint16 // FPDU: payload octets (decode.PDU.PayloadLen), or ULPDU_Length with FlagSegErr; MPA frame: Private Data length
	Kind        uint8
	Dir         uint8 // reassembly.Dir
	Op          uint8 // RDMAP opcode; finding: its severity's finding.Rank
	Flags       uint8
	Queue       uint8
	Sev         finding.Rank // worst finding on this PDU (finding.RankNone: none)
}

// Finding is a finding as the index keeps it.
type Finding struct {
	Rel      int64
	Frame    int
	Frames   []int // the frames the finding names (the first raised it)
	Conn     int
	Dir      uint8
	Severity finding.Severity
	Code     finding.Code
	Message  string
	Row      int // its row in the list
}

// Op is an RDMA operation as the index keeps it (track.Operation).
type Op struct {
	Conn                                  int
	Dir                                   track.Dir
	Kind                                  track.OpKind
	Opcode                                decode.Opcode
	Status                                track.OpStatus
	Length                                uint64
	Size                                  uint32
	STag, SrcSTag, InvSTag                uint32
	TO                                    uint64
	MSN                                   uint32
	RequestFrame, ResponseFirst, RespLast int
	RequestLast                           int
	Rel                                   int64
	Latency                               time.Duration
}

// ConnInfo is what the index knows of one iWARP connection.
type ConnInfo struct {
	ID        int
	Addr      [2]netip.AddrPort
	Initiator int8
	Params    [2]reassembly.Params
	FirstRel  int64
	First     int
	Last      int // the last frame of a PDU of the connection indexed so far
	Closed    string
	PDUs      [2]uint64
	Octets    [2]uint64 // ULPDU octets
	CRCBad    [2]uint64
	Markers   [2]uint64
	Stats     *track.ConnStats // at the end of the capture
	Proto     string           // the storage protocol decoded (ulp.Proto), "" if none
}

// DirName is track's name of direction d (reassembly.Dir): "i2r" or
// "r2i" (track.DirOf).
func (c *ConnInfo) DirName(d uint8) string {
	return track.DirOfInitiator(c.Initiator, reassembly.Dir(d)).String()
}

// STagUse is the tracker's ledger entry of one STag of one side of a
// connection (track.STagInfo, as the operations hand it out), with the
// storage command or rping Send that advertised it, when one did.
type STagUse struct {
	Conn int
	track.STagInfo
	Advertised int    // frame of the advertisement, 0 if none seen
	AdvBy      string // what advertised it: a ULP command, an rping Send
}

// Index is the capture as iwtui knows it: one Row per PDU and finding,
// the findings, operations and connections, and the frame index. It is
// built by Build on its own goroutine and read by the screen meanwhile:
// every access takes its lock.
type Index struct {
	mu       sync.RWMutex
	rows     chunked[Row]
	tcp      chunked[Row] // TCP segment rows (tcp.go), numbered from tcpBase
	findings []Finding
	ops      chunked[opRec] // in the order the tracker completes them
	opExt    chunked[Op]    // the operations a row does not tell
	conns    map[int]*ConnInfo
	connIDs  []int
	stags    map[[3]uint64]*STagUse // by connection, owner and STag
	ulp      ulpText                // rows that complete a ULP message
	cmds     []Cmd                  // ULP commands completed
	cmdSTags []uint32               // the STags they advertised
	cmdXfers []cmdXfer              // the operations that moved their data (commands.go)
	adverts  map[[2]uint64]Advert   // STags advertised, by connection and STag
	first    time.Time
	// timeFormat is the list's time column's format (render.TimeFormats,
	// as iwdump -t; "": r).
	timeFormat string
	done       bool
	err        error
	report     *analyze.Report
	read       atomic.Int64 // octets read (progress)
	total      int64        // octets in the input (0: unknown)
	frames     int
	worst      finding.Rank
	tally      finding.Tally // findings counted while indexing; FindingCounts

	store *store
}

func newIndex(st *store, total int64) *Index {
	return &Index{conns: map[int]*ConnInfo{}, stags: map[[3]uint64]*STagUse{}, adverts: map[[2]uint64]Advert{}, store: st, total: total}
}

// Len is the number of rows indexed so far.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.rows.Len()
}

// Row returns row i.
func (ix *Index) Row(i int) Row {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if i >= tcpBase {
		return ix.tcpRow(i) // tcp.go
	}
	return *ix.rows.At(i)
}

// Progress reports the octets read, the input size (0: unknown), whether
// the index is complete and the error that ended it.
func (ix *Index) Progress() (read, total int64, done bool, err error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.read.Load(), ix.total, ix.done, ix.err
}

// Finding returns finding i.
func (ix *Index) Finding(i int) Finding {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.findings[i]
}

// NumFindings is the number of findings so far.
func (ix *Index) NumFindings() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.findings)
}

// RowOf returns the PDU row of connection conn that holds frame (-1 if
// none): the PDU rows come in the order of their last frames.
func (ix *Index) RowOf(conn, frame int) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	n := ix.rows.Len()
	lo, hi := 0, n
	for lo < hi {
		m := (lo + hi) / 2
		if int(ix.rows.At(m).Last) < frame {
			lo = m + 1
		} else {
			hi = m
		}
	}
	// Finding rows (spanning the frames of the PDU they are about) may
	// sit among the PDU rows of later frames: look a little around.
	for i := max(lo-16, 0); i < n && i < lo+256; i++ {
		r := ix.rows.At(i)
		if r.Kind != RowFinding && int(r.Conn) == conn && int(r.First) <= frame && frame <= int(r.Last) {
			return i
		}
	}
	return -1
}

// OpRow returns the row of operation i's request (-1 if none).
func (ix *Index) OpRow(i int) int {
	ix.mu.RLock()
	rec := *ix.ops.At(i)
	ix.mu.RUnlock()
	if !rec.Ext {
		return int(rec.Row)
	}
	o := ix.Op(i)
	return ix.RowOf(o.Conn, o.RequestFrame)
}

// Findings returns a copy of the findings so far.
func (ix *Index) Findings() []Finding {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return append([]Finding(nil), ix.findings...)
}

// Ops returns a copy of the operations so far (NumOps and Op read them
// one at a time).
func (ix *Index) Ops() []Op {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make([]Op, ix.ops.Len())
	for i := range out {
		out[i] = ix.opAt(i)
	}
	return out
}

// NumOps is the number of operations so far.
func (ix *Index) NumOps() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.ops.Len()
}

// Op returns operation i (in the order the tracker completed them).
func (ix *Index) Op(i int) Op {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.opAt(i)
}

// opRec is an operation as the index stores it, 16 octets: most
// operations of a dense capture (a Write or Send in one FPDU, answered by
// nothing) are what their request's row says (Row's connection, time,
// opcode, STag or MSN, payload length) and the tagged offset (or the
// invalidated STag) the row has no room for; any other operation is kept
// whole in Index.opExt. The expansion (compactOp) is the one definition:
// an operation is stored compact only when it expands to itself.
type opRec struct {
	TO  uint64 // Write: TO; Send: the STag it invalidates
	Row uint32 // the request's row (compact), or ext: its index in opExt
	Ext bool
}

// opAt expands operation i (under the lock).
func (ix *Index) opAt(i int) Op {
	o := ix.ops.At(i)
	if o.Ext {
		return *ix.opExt.At(int(o.Row))
	}
	r := ix.rows.At(int(o.Row))
	return ix.compactOp(r, o.TO)
}

// compactOp is the operation a single-FPDU request row r stands for, with
// its tagged offset (Write) or invalidated STag (Send) to.
func (ix *Index) compactOp(r *Row, to uint64) Op {
	op := decode.Opcode(r.Op)
	o := Op{Conn: int(r.Conn), Kind: track.KindOf(op), Opcode: op, Status: track.OpOK, Length: uint64(r.ULen),
		RequestFrame: int(r.First), RequestLast: int(r.Last), Rel: r.Rel}
	if c := ix.conns[int(r.Conn)]; c != nil {
		o.Dir = track.DirOfInitiator(c.Initiator, reassembly.Dir(r.Dir))
	}
	if r.Flags&FlagTagged != 0 {
		o.STag, o.TO = r.Aux, to
	} else {
		o.MSN, o.InvSTag = r.Aux, uint32(to)
	}
	return o
}

// Conn returns connection id (nil if unknown); a copy.
func (ix *Index) Conn(id int) *ConnInfo {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	c := ix.conns[id]
	if c == nil {
		return nil
	}
	cp := *c
	return &cp
}

// Conns returns copies of the connections, in order of their numbers.
func (ix *Index) Conns() []ConnInfo {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make([]ConnInfo, 0, len(ix.connIDs))
	for _, id := range ix.connIDs {
		out = append(out, *ix.conns[id])
	}
	return out
}

// STags returns the STags seen, by connection and STag.
func (ix *Index) STags() []STagUse {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make([]STagUse, 0, len(ix.stags))
	used := make(map[[2]uint64]bool, len(ix.stags))
	for k, s := range ix.stags {
		u := *s
		ck := [2]uint64{k[0], k[2]}
		if a, ok := ix.adverts[ck]; ok {
			u.Advertised, u.AdvBy = int(a.Frame), ix.advertiser(a)
		}
		used[ck] = true
		out = append(out, u)
	}
	// Advertised and never used (an rping Send only counts when used).
	for k, a := range ix.adverts {
		if !used[k] && a.Cmd >= 0 {
			out = append(out, STagUse{Conn: int(k[0]), STagInfo: track.STagInfo{STag: uint32(k[1]), FirstFrame: int(a.Frame)}, Advertised: int(a.Frame), AdvBy: ix.advertiser(a)})
		}
	}
	sortSTags(out)
	return out
}

// Bytes is what the index holds in memory, as allocated: the rows and the
// frame offsets (whole chunks), the ULP summaries, and the findings,
// operations, commands, STags and advertisements kept for the views
// (their fixed parts; messages and names share the pipeline's strings).
func (ix *Index) Bytes() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	n := (ix.rows.Cap()+ix.tcp.Cap())*int(unsafe.Sizeof(Row{})) + ix.ulp.bytes()
	n += cap(ix.findings)*int(unsafe.Sizeof(Finding{})) + ix.ops.Cap()*int(unsafe.Sizeof(opRec{})) + ix.opExt.Cap()*int(unsafe.Sizeof(Op{})) + cap(ix.cmds)*int(unsafe.Sizeof(Cmd{})) + cap(ix.cmdSTags)*4
	n += cap(ix.cmdXfers) * int(unsafe.Sizeof(cmdXfer{}))
	n += len(ix.stags)*int(unsafe.Sizeof(STagUse{})+16) + len(ix.adverts)*int(unsafe.Sizeof(Advert{})+16)
	ix.store.mu.Lock()
	n += ix.store.offsets.Cap() * 8
	ix.store.mu.Unlock()
	return n
}

// Empty says why a capture indexed whole gave no row ("" when it gave
// some, or is not indexed yet): what the pipeline saw of it (frames, TCP
// segments, flows) and why none was taken for iWARP.
func (ix *Index) Empty() string {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if !ix.done || ix.rows.Len() > 0 || ix.err != nil || ix.report == nil {
		return ""
	}
	a := &ix.report.Asm
	frames := ix.store.frames()
	switch {
	case frames == 0:
		return "nothing decoded: the capture holds no frame"
	case a.Packets == 0:
		return fmt.Sprintf("nothing decoded: %d frames, none a TCP segment", frames)
	case a.PayloadBytes == 0:
		return fmt.Sprintf("nothing decoded: %d frames, %d TCP segments in %d flows, none with payload", frames, a.Packets, a.Flows)
	}
	why := "no MPA Request or Reply, and no run of FPDUs that a good CRC, a marker or three in a row in sequence vouch for (with CRC and markers off, the frames of a list written filtered are too far apart)"
	return fmt.Sprintf("nothing decoded: %d frames, %d TCP segments in %d flows, none taken for iWARP: %s", frames, a.Packets, a.Flows, why)
}

// FindRow returns the first row at or after frame n (by Last), -1 if none.
func (ix *Index) FindRow(n int) int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	best := -1
	for i := 0; i < ix.rows.Len(); i++ {
		r := ix.rows.At(i)
		if r.Kind == RowFinding {
			continue
		}
		if int(r.First) <= n && n <= int(r.Last) {
			return i
		}
		if int(r.Last) >= n && (best < 0 || r.Last < ix.rows.At(best).Last) {
			best = i
		}
	}
	return best
}

// indexer is the analyze.Consumer that builds an Index.
type indexer struct {
	ix    *Index
	s     *Session
	last  int              // the frame fed last
	stags []track.STagInfo // an operation's, read from what a shard prepared
	// boundary: the run is sharded; Frame, called by its merger before
	// the records of each frame, is where the records of the frames
	// before are all indexed, and lets a filter in (Session.feed).
	boundary bool
	// locked: ix.mu is held across the records of a sharded run's batch
	// (Record, Batch).
	locked bool
}

func (x *indexer) Record(r *analyze.Record) {
	ix := x.ix
	if !x.locked {
		ix.mu.Lock()
	}
	row := x.record(r)
	if x.boundary && (row < 0 || !x.matching()) {
		// A sharded run: ix.mu is held to the end of the batch (Batch),
		// not taken per record; but not across a match, which takes the
		// filter's and the colours' locks.
		x.locked = true
		return
	}
	ix.mu.Unlock()
	x.locked = false
	if row >= 0 {
		x.match(r, row)
	}
}

// Batch lets go of ix.mu at the end of a sharded run's batch of records
// (analyze.Batcher): the screen reads the index while the shards work.
func (x *indexer) Batch() { x.unlock() }

func (x *indexer) unlock() {
	if x.locked {
		x.ix.mu.Unlock()
		x.locked = false
	}
}

// matching reports whether a display filter or colouring rules match
// the rows as they come (match).
func (x *indexer) matching() bool {
	s := x.s
	return s != nil && (s.cur.Load() != nil || s.colours.Load() != nil)
}

// record indexes r, holding ix.mu, and returns the number of the row it
// made (-1: none).
func (x *indexer) record(r *analyze.Record) int {
	ix := x.ix
	row := -1
	if r.Kind == analyze.KindPDU || r.Kind == analyze.KindFinding {
		row = ix.rows.Len()
	} else if segmentRow(r) {
		row = tcpBase + ix.tcp.Len()
	}
	if ix.first.IsZero() {
		ix.first = r.Time.Add(-r.Rel)
	}
	switch r.Kind {
	case analyze.KindOpened:
		id := int(r.Conn.ID)
		if ix.conns[id] == nil {
			ix.conns[id] = &ConnInfo{ID: id, Addr: r.Conn.Addr, Initiator: r.Conn.Initiator, FirstRel: int64(r.Rel), First: r.Conn.FirstFrame}
			ix.connIDs = append(ix.connIDs, id)
		}
	case analyze.KindNegotiated:
		if c := ix.conns[int(r.Conn.ID)]; c != nil {
			c.Params[r.Dir] = r.Conn.Params[r.Dir]
			c.Params[r.Dir].Frame.PrivateData = append([]byte(nil), c.Params[r.Dir].Frame.PrivateData...)
			c.Initiator = r.Conn.Initiator
		}
	case analyze.KindClosed:
		if c := ix.conns[int(r.Conn.ID)]; c != nil && r.Close != nil {
			c.Closed = r.Close.Reason.String()
		}
	case analyze.KindPDU:
		x.pdu(r)
	case analyze.KindFinding:
		x.finding(r)
	case analyze.KindOperation:
		x.op(r)
	case analyze.KindCommand:
		x.command(r)
	case analyze.KindSegment:
		if segmentRow(r) {
			x.segment(r) // tcp.go
		}
	}
	return row
}

func (x *indexer) pdu(r *analyze.Record) {
	ix := x.ix
	var pr pduRow
	if b := r.Prepared; b != nil { // the shard made it (rowPreparer)
		if b = analyze.ReadValue(&pr, b); len(b) > 0 {
			x.advert(r, b) // the payload of a Send that may advertise a buffer
		}
	} else {
		pr = makePDURow(r)
	}
	row := &pr.row
	row.Conn = uint32(r.Conn.ID)
	c := ix.conns[int(r.Conn.ID)]
	if c != nil {
		c.Initiator = r.Conn.Initiator
		c.Last = max(c.Last, r.LastFrame)
		if row.Kind == RowFPDU {
			c.PDUs[r.Dir]++
			c.Octets[r.Dir] += uint64(pr.octets)
			c.Markers[r.Dir] += uint64(pr.markers)
			if row.Flags&FlagCRCBad != 0 {
				c.CRCBad[r.Dir]++
			}
		}
	}
	if r.Prepared == nil {
		x.ulpPDU(r, c, ix.rows.Len())
	}
	ix.rows.Append(*row)
}

// pduRow is what a PDU makes of the index: its row (but for the
// connection's number, which only the merger of a sharded run knows)
// and what it adds to its connection's counts.
type pduRow struct {
	row     Row
	markers uint32
	octets  uint16 // ULPDU_Length
}

// makePDURow reads a PDU record's row: on the shard that raised it, in a
// sharded run (rowPreparer), else as the indexer takes it.
func makePDURow(r *analyze.Record) pduRow {
	p := &r.PDU.PDU
	pr := pduRow{row: Row{Rel: int64(r.Rel), First: uint32(r.FirstFrame), Last: uint32(r.LastFrame), Seq: r.Seq, End: r.End,
		Dir: uint8(r.Dir), Queue: QueueOther}}
	row := &pr.row
	if p.IsMPAFrame {
		row.Kind = RowMPA
		row.ULen = p.MPA.PDLength
		if p.MPA.Reply {
			row.Flags |= FlagReply
		}
		if p.MPA.Reject {
			row.Flags |= FlagReject
		}
	} else {
		row.Kind = RowFPDU
		row.ULen = p.FPDU.ULPDULength // FlagSegErr: shown as ulpdu_length
		if n, ok := p.PayloadLen(); ok {
			row.ULen = uint16(n) // "len", as iwdump's summary
		}
		switch p.CRCStatus {
		case decode.CRCGood:
			row.Flags |= FlagCRCGood
		case decode.CRCBad:
			row.Flags |= FlagCRCBad
		}
		if r.PDU.Missing > 0 {
			row.Flags |= FlagPartial
		}
		if p.SegErr != nil {
			row.Flags |= FlagSegErr
		}
		u := p.FPDU.ULPDU
		if len(u) >= decode.DDPUntaggedHdrLen || (len(u) >= decode.DDPTaggedHdrLen && u[0]&decode.DDPFlagT != 0) {
			d := &p.Seg.DDP
			row.Op = uint8(p.Seg.RDMAP.Opcode)
			if d.Last {
				row.Flags |= FlagLast
			}
			if d.Tagged {
				row.Flags |= FlagTagged
				row.Aux = d.STag
				row.Queue = QueueTagged
			} else {
				row.Aux = d.MSN
				if d.QN < 4 {
					row.Queue = uint8(d.QN)
				}
			}
		} else {
			row.Flags |= FlagSegErr
		}
		pr.octets, pr.markers = p.FPDU.ULPDULength, uint32(len(p.Markers))
	}
	return pr
}

// Preparer makes the rows of a shard (analyze.Splitter).
func (x *indexer) Preparer() analyze.Preparer { return rowPreparer{s: x.s} }

// rowPreparer reads, on a shard, what the records that need nothing
// else make of the index (analyze.Splitter): the rows of the PDUs without
// a storage-protocol message (ulpPDU), with the payload of those that may
// advertise a buffer (mayAdvertise), the TCP segments' rows (none for a
// segment the index does not keep), and the operations with their STags'
// ledger entries. None while a display filter or colouring rules are
// applied or being applied (Session.whole), which match the records
// whole.
type rowPreparer struct {
	s *Session
}

func (rp rowPreparer) Prepare(r *analyze.Record, b []byte) ([]byte, bool) {
	if rp.s == nil {
		return b, false
	}
	switch r.Kind {
	case analyze.KindPDU:
		if r.ULP != nil {
			return b, false
		}
	case analyze.KindSegment:
	case analyze.KindOperation:
		if r.Conn == nil { // its connection's number is the shard's: it comes whole
			return b, false
		}
	default:
		return b, false
	}
	if rp.s.whole.Load() { // Session.wholeRecords
		return b, false
	}
	switch r.Kind {
	case analyze.KindPDU:
		pr := makePDURow(r)
		b = analyze.AppendValue(b, &pr)
		if p := &r.PDU.PDU; mayAdvertise(p) {
			b = append(b, p.Seg.Payload...) // x.advert
		}
		return b, true
	case analyze.KindSegment:
		if !keptSegment(r) {
			return b, true // nothing: not a row
		}
		row := makeSegmentRow(r)
		return analyze.AppendValue(b, &row), true
	}
	st := r.STags()
	op := opPrep{op: makeOp(r.Op), n: int32(len(st))}
	if !r.Op.Start.IsZero() {
		op.start, op.hasStart = r.Op.Start.UnixNano(), true
	}
	b = analyze.AppendValue(b, &op)
	for i := range st {
		b = analyze.AppendValue(b, &st[i])
	}
	return b, true
}

// segmentRow says whether a segment record makes a TCP row: as a shard
// that took it said (an empty Prepared: no), else keptSegment.
func segmentRow(r *analyze.Record) bool {
	if r.Kind != analyze.KindSegment {
		return false
	}
	if r.Prepared != nil {
		return len(r.Prepared) > 0
	}
	return keptSegment(r)
}

// opPrep is what a shard reads of an operation (rowPreparer): the
// operation but for its connection's number and start, which the
// indexer sets, the start as UnixNano (hasStart: one is known), and the
// number of its STags' ledger entries that follow it.
type opPrep struct {
	op       Op
	start    int64
	n        int32
	hasStart bool
}

func (x *indexer) finding(r *analyze.Record) {
	ix := x.ix
	f := Finding{Rel: int64(r.Rel), Frame: r.Frame, Severity: r.Finding.Severity, Code: r.Finding.Code, Message: r.Finding.Message, Row: ix.rows.Len()}
	if r.Finding.Track != nil {
		f.Frames = append([]int(nil), r.Finding.Track.Frames...)
	}
	sev := f.Severity.Rank()
	ix.worst = max(ix.worst, sev)
	row := Row{Rel: f.Rel, First: uint32(r.FirstFrame), Last: uint32(r.LastFrame), Seq: r.Seq, End: r.End,
		Kind: RowFinding, Aux: uint32(len(ix.findings)), Op: uint8(sev), Sev: sev, Queue: QueueOther}
	if r.Conn != nil {
		f.Conn, f.Dir = int(r.Conn.ID), uint8(r.Dir)
		row.Conn, row.Dir = uint32(r.Conn.ID), uint8(r.Dir)
		// Colour the PDU the finding is about.
		for i := ix.rows.Len() - 1; i >= 0 && i >= ix.rows.Len()-256; i-- {
			p := ix.rows.At(i)
			if p.Kind != RowFinding && p.Conn == row.Conn && int(p.First) <= r.Frame && r.Frame <= int(p.Last) {
				p.Sev = max(p.Sev, sev)
				break
			}
		}
	}
	ix.tally.Add(r.ConnID(), r.Finding.Code) // the pipeline's rule (Report.Findings): FindingCounts
	ix.findings = append(ix.findings, f)
	ix.rows.Append(row)
}

func (x *indexer) op(r *analyze.Record) {
	ix := x.ix
	var op Op
	var stags []track.STagInfo
	if b := r.Prepared; b != nil { // the shard read it (rowPreparer)
		var p opPrep
		b = analyze.ReadValue(&p, b)
		op, op.Conn = p.op, int(r.Conn.ID)
		op.Rel = int64(r.Rel)
		if p.hasStart {
			op.Rel = p.start - ix.first.UnixNano()
		}
		stags = x.stags[:0]
		for range p.n {
			var in track.STagInfo
			b = analyze.ReadValue(&in, b)
			stags = append(stags, in)
		}
		x.stags = stags
	} else {
		o := r.Op
		op = makeOp(o)
		op.Rel = int64(r.Rel)
		if !o.Start.IsZero() {
			op.Rel = int64(o.Start.Sub(ix.first))
		}
		stags = r.STags()
	}
	ix.addOp(&op)
	// The tracker's ledger entries of the STags the operation named, as
	// they stand after it: the latest is the entry.
	for _, in := range stags {
		k := [3]uint64{uint64(op.Conn), uint64(in.Owner), uint64(in.STag)}
		s := ix.stags[k]
		if s == nil {
			s = &STagUse{Conn: op.Conn}
			ix.stags[k] = s
		}
		s.STagInfo = in
	}
}

// makeOp is the index's Op of an operation, but for Rel.
func makeOp(o *track.Operation) Op {
	return Op{Conn: o.Conn, Dir: o.Dir, Kind: o.Kind, Opcode: o.Opcode, Status: o.Status, Length: o.Length, Size: o.Size,
		STag: o.STag, SrcSTag: o.SrcSTag, InvSTag: o.InvalidateSTag, TO: o.TO, MSN: o.MSN,
		RequestFrame: o.RequestFrame, ResponseFirst: o.ResponseFirstFrame, RespLast: o.ResponseLastFrame, RequestLast: o.LastRequestFrame,
		Latency: o.Latency}
}

// compactOps: operations are stored compact where they can be (the
// tests compare with an index that keeps every one whole).
var compactOps = true

// addOp stores op compact when a row near the end of the list (its
// request, one FPDU) says all of it but the offset, else whole.
func (ix *Index) addOp(op *Op) {
	if compactOps && op.RequestFrame > 0 && op.Kind != track.OpRead && op.Latency == 0 {
		for i := ix.rows.Len() - 1; i >= 0 && i >= ix.rows.Len()-64; i-- {
			r := ix.rows.At(i)
			if r.Kind != RowFPDU || int(r.Conn) != op.Conn || int(r.First) != op.RequestFrame {
				continue
			}
			to := op.TO
			if r.Flags&FlagTagged == 0 {
				to = uint64(op.InvSTag)
			}
			if ix.compactOp(r, to) == *op {
				ix.ops.Append(opRec{TO: to, Row: uint32(i)})
				return
			}
			break
		}
	}
	ix.ops.Append(opRec{Row: uint32(ix.opExt.Len()), Ext: true})
	ix.opExt.Append(*op)
}

// Frame is called before each frame's records.
func (x *indexer) Frame(fr *pcap.Frame) {
	// A sharded run lets go of feed only when someone waits for it: an
	// unlock and lock per frame cost the merger, the run's longest
	// goroutine, a tenth of its time.
	if x.boundary && x.s != nil && x.s.feedWait.Load() != 0 {
		x.unlock() // whoever waits may read the index
		x.s.feed.Unlock()
		x.s.feed.Lock()
	}
	x.last = fr.Number
}

// live matches a new row against the filter installed.
func (x *indexer) match(r *analyze.Record, row int) {
	s := x.s
	if s == nil || r.Prepared != nil {
		// A record a shard took holds too little to match; none comes
		// once a filter or colours are installed (Session.wholeRecords).
		return
	}
	if f := s.cur.Load(); f != nil && row >= f.cut && f.f.Match(r) {
		f.set(row)
	}
	if c := s.colours.Load(); c != nil && len(c.runs) > 0 && row >= c.runs[0].cut {
		firstMatch(c.runs, r, row) // the colouring rules (colours.go)
	}
}

// OpOf returns the operation PDU row r belongs to: one of its connection
// and kind whose request or response frames hold it (false if none).
func (ix *Index) OpOf(r *Row) (Op, bool) {
	if r.Kind != RowFPDU {
		return Op{}, false
	}
	k := track.KindOf(decode.Opcode(r.Op))
	if k == 0 {
		return Op{}, false
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	f := int(r.Last)
	for i := 0; i < ix.ops.Len(); i++ {
		if rec := ix.ops.At(i); !rec.Ext {
			if q := ix.rows.At(int(rec.Row)); q.Conn != r.Conn || int(q.First) > f || f > int(q.Last) {
				continue
			}
		}
		o := ix.opAt(i)
		if o.Conn != int(r.Conn) || o.Kind != k {
			continue
		}
		if (o.RequestFrame <= f && f <= max(o.RequestLast, o.RequestFrame)) || (o.ResponseFirst > 0 && o.ResponseFirst <= f && f <= o.RespLast) {
			return o, true
		}
	}
	return Op{}, false
}
