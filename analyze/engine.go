package analyze

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"time"
	"unsafe"

	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/internal/writev"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/reassembly"
	"github.com/iwkit/iwkit/track"
	"github.com/iwkit/iwkit/ulp"
)

// Config is what Run needs besides the frames.
type Config struct {
	// Ports are TCP ports taken for iWARP even where content detection
	// hesitates (iwdump --decode-as).
	Ports []uint16
	// Count stops after that many frames (0: all).
	Count int
	// Workers is the number of shards (see Run); 0 picks by InputSize.
	Workers int
	// InputSize is the size of the input in octets, when known (0
	// otherwise); with Workers 0, large inputs are sharded.
	InputSize int64
	// Progress, when set, hears of the octets read (frame and record
	// header) as frames are read.
	Progress func(octets int)
	// DecodeAs forces the storage protocol of connections to or from a
	// TCP port (iwdump --decode-as PORT=nvme); NoULP turns the ULP layer
	// off (package ulp; analyze/ulp.go).
	DecodeAs map[uint16]ulp.Proto
	NoULP    bool
	// Unanswered hands out, when a connection ends (or the capture
	// does), a KindCommand record for each storage command still
	// outstanding on it (Cmd.Answered false): the export's commands rows.
	// Without it they are counted in Report.ULP only (-z nvme's
	// "unanswered").
	Unanswered bool
	// MaxFlows bounds the TCP flow table of the whole run (shared out
	// among the workers; default 1024): when it is full the least recently
	// active flow is evicted, what it held reported as a gap and its
	// connection with a tcp.flow_evicted finding. The tracker keeps the
	// state of as many connections. MemoryBudget bounds the reassembly
	// buffers of the whole run in octets (default 16 MiB). KeepConns caps
	// the closed connections Report.Conns keeps (default 2048; the ones
	// past it are counted in Report.ConnsDropped). With the defaults a run
	// stays within 100 MB resident on any input (DESIGN.md).
	MaxFlows     int
	MemoryBudget int64
	KeepConns    int
	// Panics says whether a decoder panic on hostile input becomes an
	// internal.decoder_panic finding (contain.go); by default it does,
	// except in a test binary.
	Panics PanicMode
	// Segments hands out a KindSegment record for each TCP segment that
	// opens or closes a connection, carries no data, or carries data that
	// is not new (reassembly.SegmentEvent): iwtui's TCP rows.
	Segments bool
}

// The defaults of Config's limits.
const (
	DefaultMaxFlows     = 1024
	DefaultMemoryBudget = 16 << 20
	DefaultKeepConns    = 2048
)

// limits returns the reassembly and tracker limits of one of n shards.
func (c *Config) limits(n int) (reassembly.Config, track.Limits, int) {
	flows, mem, keep := c.MaxFlows, c.MemoryBudget, c.KeepConns
	if flows <= 0 {
		flows = DefaultMaxFlows
	}
	if mem <= 0 {
		mem = DefaultMemoryBudget
	}
	if keep <= 0 {
		keep = DefaultKeepConns
	}
	flows = max(1, flows/n)
	rc := reassembly.Config{Ports: c.Ports, MaxFlows: flows, MemoryBudget: mem / int64(n), Segments: c.Segments}
	// The tracker keeps every flow's connection (one it forgot while the
	// flow lives would come back without its handshake).
	return rc, track.Limits{Conns: flows, RetainedConns: max(1, keep/n)}, max(1, keep/n)
}

// MaxWorkers bounds Config.Workers: a chunk holds 128 frames per shard
// (shard.go), and the chunks in flight bound memory.
const MaxWorkers = 64

// Shards is the number of shards Run uses for c: Config.Workers, or by
// default one per core (runtime.GOMAXPROCS, up to MaxWorkers) for inputs of
// 64 MiB or more, else 1.
func (c *Config) Shards() int { return c.workers() }

func (c *Config) workers() int {
	switch {
	case c.Workers > 0:
		return min(c.Workers, MaxWorkers)
	case c.InputSize >= 64<<20:
		return min(runtime.GOMAXPROCS(0), MaxWorkers)
	}
	return 1
}

// A Consumer takes records. Run hands every record of the capture to one
// Consumer, in capture order, on one goroutine, whatever the number of
// workers. RunOrdered makes one per shard instead (see there).
type Consumer interface {
	Record(r *Record)
}

// A Splitter is a Consumer that does the part of its work that needs
// a record whole on the shard that raised it, so that it runs in
// parallel: with more than one worker, Run calls Prepare of the shard's
// Preparer on the shard's goroutine with each record the shard raises,
// in the shard's order, while the record is valid (its connection
// numbers are the shard's own). When Prepare takes the record, Run does not
// copy it: Record gets, in capture order, a record that holds the
// record's Kind, Frame, Time, Rel, Dir, Src, Dst, FirstFrame, LastFrame,
// HasSeq, Seq and End, a Conn that holds only the connection's global
// number (ID), Addr, IWARP, Initiator, LastFrame and LastTime, and
// Prepared, what Prepare appended; its other fields are zero. What else
// the consumer needs of the record, Prepare puts in Prepared; what else
// of the connection, it learns from the records Prepare does not take
// (KindOpened and KindNegotiated come before the connection's PDUs).
// Otherwise Record gets the record whole, as any Consumer. With one
// worker Record gets every record as raised, Prepared nil.
type Splitter interface {
	Consumer
	// Preparer returns the preparer of one shard; Run calls it once per
	// shard before the first record.
	Preparer() Preparer
}

// A Preparer is a Splitter's shard-side half (see Splitter).
type Preparer interface {
	// Prepare appends to b what the Splitter's Record needs of r and
	// returns it, and whether it took r (false: r is handed out whole, and
	// b's new octets are dropped).
	Prepare(r *Record, b []byte) ([]byte, bool)
}

// AppendValue appends the octets of *v to b: how a Preparer carries a
// value to its Splitter's Record (ReadValue reads it back). T must hold no
// pointers; the octets are read in the same process, during the run.
func AppendValue[T any](b []byte, v *T) []byte {
	return append(b, unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))...)
}

// ReadValue reads into *v what AppendValue appended at the start of b and
// returns the rest of b.
func ReadValue[T any](v *T, b []byte) []byte {
	n := copy(unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v)), b)
	return b[n:]
}

// A Batcher is a Consumer told where the records of a sharded run
// (Workers > 1) come in batches: Run calls Batch, on the goroutine that
// calls Record, after the records of each chunk of frames and after the
// last record; between a Batch and the next record it waits for the
// shards. A consumer that locks what it builds can hold the lock from a
// batch's first record to its Batch instead of taking it per record.
// With one worker Batch is never called.
type Batcher interface {
	Consumer
	Batch()
}

// A FrameConsumer also sees every frame, in order, before the records
// of that frame (Run), or, as RunOrdered's consumer, every frame before it
// is fed to the reassembly (in every shard: each shard sees every frame).
type FrameConsumer interface {
	Consumer
	Frame(fr *pcap.Frame)
}

// Out is where a RunOrdered consumer writes what must come out in capture
// order.
type Out struct {
	w    *bufio.Writer
	sink *shardOut // with Workers > 1: the shard's output for the chunk
}

// OutRoom is the room Buf leaves at least: a text line or an NDJSON
// object of a PDU fits, so that it is written in place.
const OutRoom = 8 << 10

// Buf returns an empty buffer to append a record to and pass to Write
// whole, as bufio.Writer.AvailableBuffer: the free end of the output
// (the writer's buffer, or the shard's output for the chunk), with at
// least OutRoom octets of room, so that Write need not copy the record.
// A record that outgrows it is copied as any other.
func (o *Out) Buf() []byte {
	if s := o.sink; s != nil {
		if cap(s.buf)-len(s.buf) < OutRoom {
			s.buf = slices.Grow(s.buf, OutRoom)
		}
		return s.buf[len(s.buf):len(s.buf)]
	}
	if o.w.Available() < OutRoom {
		o.w.Flush() // an error stays in w: Write reports it as before
	}
	return o.w.AvailableBuffer()
}

// Write appends b to the output. b may be from Buf: then it is in place
// already.
func (o *Out) Write(b []byte) {
	if s := o.sink; s != nil {
		if n := len(s.buf); len(b) > 0 && len(b) <= cap(s.buf)-n && &s.buf[:n+1][n] == &b[0] {
			s.buf = s.buf[:n+len(b)]
			return
		}
		s.buf = append(s.buf, b...)
		return
	}
	o.w.Write(b) // bufio copies nothing when b is its AvailableBuffer
}

// AppendConn appends the decimal number of connection id (Record.Conn.ID)
// to b, which the consumer then passes to Write whole. A shard knows only
// its own numbering: it leaves a place the merger fills with the global
// number.
func (o *Out) AppendConn(b []byte, id uint64) []byte {
	if o.sink != nil {
		o.sink.patches = append(o.sink.patches, connPatch{off: len(o.sink.buf) + len(b), local: id})
		return b
	}
	return appendUint(b, id)
}

// Report is what the capture held, for the statistics tables.
type Report struct {
	Conns     map[int]*reassembly.Conn // iWARP connections by number
	ConnStats []track.ConnStats        // per connection, by number
	Stats     track.Stats              // the whole capture
	Asm       reassembly.Stats
	Worst     int // highest severity of the findings raised, as int(finding.Severity); -1: none
	// Findings counts every finding handed out as a record (the
	// reassembly's, the framer's, the tracker's and the ULPs'), by code
	// and by connection: the one count every face shows.
	Findings *finding.Tally
	// Panics counts the decoder panics contained (Config.Panics): each is
	// an internal.decoder_panic finding; iwdump exits with status 5 (exitcode.DecoderPanic).
	Panics int
	// ULP is what the storage-protocol layer decoded (-z nvme, ...).
	ULP *ulp.Stats
	// Discovery holds the NVMe-oF discovery log entries and the Connects
	// of the run under its connection numbers; Discovery.Links ties each
	// entry to the connections it announced.
	Discovery *ulp.Discovery
	// ConnsDropped counts the ended connections Conns does not hold
	// (Config.KeepConns); their statistics are in Stats only.
	ConnsDropped int
}

// Run reads src to its end (or Config.Count frames), passes every frame
// through the TCP reassembly, the MPA framer, the decoders, the tracker
// and the storage-protocol layer, and hands every record to c, in capture
// order, on one goroutine. An error reading src ends the run; everything
// before it has been handed out, and Run returns the report with the
// error.
//
// With more than one worker (Config.Workers, or a large Config.InputSize)
// one goroutine reads and hands out frames in chunks, shards own the
// flows that hash to them and keep a copy of each record they raise, and
// a merger hands the copies to c in frame order (shard.go): c sees the
// records one worker would hand it, in the same order, with the same
// connection numbers. What c does runs on the merger's goroutine while the
// shards go on with the next frames.
func Run(src Source, cfg Config, c Consumer) (*Report, error) {
	n := cfg.workers()
	if n == 1 {
		return runOne(src, &cfg, c)
	}
	m := newMerger(n)
	m.c = c
	m.fc, _ = c.(FrameConsumer)
	m.bc, _ = c.(Batcher)
	sp, _ := c.(Splitter)
	return runSharded(src, &cfg, n, m, func(_ int, out *Out) Consumer {
		k := &recorder{out: out}
		if sp != nil {
			k.prep = sp.Preparer()
		}
		return k
	})
}

// Output is where RunOrdered writes.
type Output struct {
	W *bufio.Writer
	// Direct, when set, is the file W writes to (iwdump's standard
	// output). With more than one worker the merger then writes the
	// shards' output to it where it lies, a writev(2) per chunk, instead
	// of copying it into W (which it flushes first, so that the order
	// holds).
	Direct *os.File
}

// RunOrdered is Run for consumers whose product is octets in capture
// order (iwdump's text and NDJSON, package render): newConsumer makes one
// consumer per shard, called on the shard's goroutine with the records of
// the flows it owns, and what each writes to its Out comes out to out.W in
// the order one consumer would have written it, octet for octet, whatever
// the number of workers. Records are not copied: the shards format them
// where they lie, in parallel.
func RunOrdered(src Source, cfg Config, out Output, newConsumer func(shard int, out *Out) Consumer) (*Report, error) {
	n := cfg.workers()
	if n == 1 {
		return runOne(src, &cfg, newConsumer(0, &Out{w: out.W}))
	}
	m := newMerger(n)
	m.w = out.W
	if out.Direct != nil {
		m.vw = writev.New(out.Direct)
	}
	return runSharded(src, &cfg, n, m, newConsumer)
}

// runOne is Run on one worker: the records go straight to c.
func runOne(src Source, cfg *Config, c Consumer) (*Report, error) {
	rc, lim, keep := cfg.limits(1)
	h := newHandler(c, lim, keep)
	h.ulpSetup(cfg)
	err := h.run(src, cfg, rc)
	return h.report(), err
}

// run feeds every frame through the reassembler and the tracker.
func (h *handler) run(src Source, cfg *Config, rc reassembly.Config) error {
	a := reassembly.New(rc, h)
	h.asm = a
	var fr pcap.Frame
	defer func() {
		a.Flush()
		h.finishing = true
		h.trackFinish()
		h.ulpFinish()
	}()
	for n := 0; cfg.Count == 0 || n < cfg.Count; n++ {
		err := src.Next(&fr)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if cfg.Progress != nil {
			cfg.Progress(fr.CapLen + 16)
		}
		h.frame(&fr)
		if err := a.FeedFrame(&fr); err != nil {
			h.undecodable(&fr, err)
		}
	}
	return nil
}

// DirName names a direction of an iWARP connection for output: "i2r" from
// the MPA initiator, "r2i" towards it (track.DirOf).
func DirName(c *reassembly.Conn, d reassembly.Dir) string { return track.DirOf(c, d).String() }

// TrackDir maps a reassembly direction to the MPA roles track uses.
func TrackDir(c *reassembly.Conn, d reassembly.Dir) track.Dir { return track.DirOf(c, d) }

// handler turns reassembly events into records and feeds the tracker,
// whose findings and operations come back as records too.
type handler struct {
	c     Consumer
	fc    FrameConsumer // c, when it wants frames
	t     *track.Tracker
	feed  track.Feed // reassembly events → t
	asm   *reassembly.Assembler
	first time.Time // timestamp of the first frame: Rel counts from it
	last  time.Time // timestamp of the latest frame
	seen  bool      // a frame was seen: first is set
	conns map[int]*reassembly.Conn
	// keep: connections past the first keep to end in the tracker leave
	// conns (ended counts them, dropped those that left); finishing: the
	// end of the input, where every connection ends and stays.
	keep, ended, dropped int
	finishing            bool
	worst                int
	findings             finding.Tally // every KindFinding record emitted
	rec                  Record
	u                    ulpState         // the storage-protocol layer (ulp.go)
	stags                []track.STagInfo // Record.STags
	x                    containment      // decoder panics (contain.go)
	// beforeFinding, when set, hears of the connection of each tracker
	// finding, operation and Terminate before it is handed out (shard.go
	// cuts the end of the capture by it).
	beforeFinding func(conn int)
}

func newHandler(c Consumer, lim track.Limits, keep int) *handler {
	h := &handler{c: c, conns: map[int]*reassembly.Conn{}, worst: -1, keep: keep}
	h.fc, _ = c.(FrameConsumer)
	h.t = track.New(track.Config{OnFinding: h.onFinding, OnOperation: h.onOperation, OnTerminate: h.onTerminate, OnConnEnd: h.onConnEnd, Limits: lim})
	h.feed = track.Feed{T: h.t}
	return h
}

// report gathers what the statistics tables need; call it after run.
func (h *handler) report() *Report {
	// The report holds a copy of the ULP statistics, not a pointer into the
	// handler: a caller keeping reports (export --each) must not keep every
	// finished pipeline, its consumer and its reader's buffers alive.
	u, d := h.u.stats, h.u.disc
	r := &Report{Conns: h.conns, ConnsDropped: h.dropped, ConnStats: h.t.AllConnStats(), Stats: h.t.Stats(), Worst: h.worst, ULP: &u, Discovery: &d, Findings: h.findings.Clone(), Panics: h.x.n}
	if h.asm != nil {
		r.Asm = h.asm.Stats()
	}
	return r
}

// emit hands out h.rec, filled by the caller from reset's zero state.
func (h *handler) emit() {
	if h.rec.Kind == KindFinding {
		h.worst = max(h.worst, int(h.rec.Finding.Severity))
		h.findings.Add(h.rec.ConnID(), h.rec.Finding.Code)
	}
	h.x.emitting++ // a panic in the consumer is not a decoder's (contain.go)
	h.c.Record(&h.rec)
	h.x.emitting--
}

// reset starts a record of kind k at frame, time t.
func (h *handler) reset(k Kind, frame int, t time.Time) *Record {
	h.rec = Record{Kind: k, Frame: frame, Time: t, Rel: t.Sub(h.first), FirstFrame: frame, LastFrame: frame}
	return &h.rec
}

// onConn fills the connection part of a record.
func (r *Record) onConn(c *reassembly.Conn, d reassembly.Dir) {
	r.Conn, r.Dir = c, d
	r.Src, r.Dst = c.Addr[d], c.Addr[d.Other()]
}

func (h *handler) onOperation(op *track.Operation) {
	if h.beforeFinding != nil {
		// Tracker.Finish ends unfinished operations too: they belong to
		// their connection's end block like its findings (FuzzCapture).
		h.beforeFinding(op.Conn)
	}
	t := op.End
	if t.IsZero() {
		t = h.last
	}
	r := h.reset(KindOperation, max(op.ResponseLastFrame, op.LastRequestFrame), t)
	r.FirstFrame = op.RequestFrame
	r.Op, r.h = op, h
	h.onTrackConn(r, op.Conn, op.Dir)
	h.emit()
}

// onTerminate hands out a Terminate decoded in context.
func (h *handler) onTerminate(tr *track.TerminateReport) {
	if h.beforeFinding != nil {
		h.beforeFinding(tr.Conn)
	}
	r := h.reset(KindTerminate, tr.Frame, tr.Time)
	r.Term = tr
	h.onTrackConn(r, tr.Conn, tr.Dir)
	h.emit()
}

// onConnEnd drops a connection the tracker is done with from conns once
// keep have ended: the tracker raises nothing more for it, and keeps the
// statistics of the same first ones (Limits.RetainedConns).
func (h *handler) onConnEnd(cs track.ConnStats) {
	if h.finishing {
		return
	}
	if h.ended++; h.ended > h.keep {
		if _, ok := h.conns[cs.Conn]; ok {
			delete(h.conns, cs.Conn)
			h.dropped++
		}
	}
}

// onTrackConn fills the connection part of a record the tracker raised
// for connection conn, direction d, from what was kept of it: the
// connection may already be gone (records raised at Finish).
func (h *handler) onTrackConn(r *Record, conn int, d track.Dir) {
	c := h.conns[conn]
	if c == nil {
		return
	}
	rd := reassembly.DirAB
	if TrackDir(c, reassembly.DirBA) == d {
		rd = reassembly.DirBA
	}
	r.onConn(c, rd)
}

// onFinding hands out a tracker finding.
func (h *handler) onFinding(f *track.Finding) {
	if h.beforeFinding != nil {
		h.beforeFinding(f.Conn)
	}
	frame := 0
	if len(f.Frames) > 0 {
		frame = f.Frames[0]
	}
	t := f.Time
	if t.IsZero() { // raised at the end, not by a unit
		t = h.last
	}
	r := h.reset(KindFinding, frame, t)
	if n := len(f.Frames); n > 0 {
		r.LastFrame = f.Frames[n-1]
	}
	r.Finding = Finding{Severity: f.Severity, Code: f.Code, Message: f.Message, Track: f}
	h.onTrackConn(r, f.Conn, f.Dir)
	h.emit()
}

// finding hands out a finding of the framer or the TCP reassembly.
func (h *handler) finding(c *reassembly.Conn, d reassembly.Dir, frame int, t time.Time, code finding.Code, msg string) *Record {
	r := h.reset(KindFinding, frame, t)
	r.onConn(c, d)
	r.Finding = Finding{Severity: code.Severity(), Code: code, Message: msg}
	return r
}

// frame takes note of a frame before it is fed: the first one's time is
// the origin of Rel.
func (h *handler) frame(fr *pcap.Frame) {
	if !h.seen {
		h.first, h.seen = fr.Timestamp, true
	}
	h.last = fr.Timestamp
	if h.fc != nil {
		h.fc.Frame(fr)
	}
}

// undecodable notes a frame whose TCP segment could not be decoded
// (finding.FrameUndecodable, reported as a note without its code); frames
// that hold none (pcap.ErrNotTCP) are not news.
func (h *handler) undecodable(fr *pcap.Frame, err error) {
	if !errors.Is(err, pcap.ErrNotTCP) {
		r := h.reset(KindNote, fr.Number, fr.Timestamp)
		r.Note = "undecodable frame: " + err.Error()
		h.emit()
	}
}

func (h *handler) Opened(c *reassembly.Conn) {
	cp := *c // the assembler reuses c after Closed; findings may come later
	h.conns[int(c.ID)] = &cp
	r := h.reset(KindOpened, c.LastFrame, c.LastTime)
	r.onConn(&cp, reassembly.DirAB)
	h.emit()
}

func (h *handler) Negotiated(c *reassembly.Conn, d reassembly.Dir) {
	r := h.reset(KindNegotiated, c.LastFrame, c.LastTime)
	r.onConn(c, d)
	h.emit()
	p := &c.Params[d]
	if p.CRCSource == reassembly.SourceInferred || p.MarkersSource == reassembly.SourceInferred {
		h.finding(c, d, c.LastFrame, c.LastTime, finding.MPAParamsInferred,
			fmt.Sprintf("no handshake seen: markers %v (%s), CRC %v (%s)", p.Markers, p.MarkersSource, p.CRC, p.CRCSource))
		h.emit()
	}
}

func (h *handler) PDU(c *reassembly.Conn, e *reassembly.PDUEvent) {
	if e.Err != nil {
		h.finding(c, e.Dir, e.LastFrame, e.LastTime, finding.MPABadFrame, "MPA frame does not decode: "+e.Err.Error())
		h.emit()
		return
	}
	if cp := h.conns[int(c.ID)]; cp != nil {
		cp.Initiator = c.Initiator
	}
	r := h.reset(KindPDU, e.LastFrame, e.LastTime)
	r.onConn(c, e.Dir)
	r.FirstFrame = e.FirstFrame
	r.HasSeq, r.Seq, r.End = true, e.Seq, e.Seq+uint32(e.Len)
	r.PDU = e
	uc := h.ulpPDU(c, e, r)
	h.emit()
	h.ulpAfter(c, e.Dir, uc, e)
	h.trackPDU(c, e)
}

func (h *handler) Gap(c *reassembly.Conn, e *reassembly.GapEvent) {
	code := finding.TCPGap
	if e.Reason == reassembly.GapSkipped {
		code = finding.MPASkipped
	}
	msg := fmt.Sprintf("%d octets missing at seq %d (%s)", e.Len, e.Seq, e.Reason)
	if e.Reason == reassembly.GapSkipped {
		msg = fmt.Sprintf("%d octets at seq %d skipped while looking for an FPDU boundary", e.Len, e.Seq)
	}
	if e.FPDUsLost > 0 {
		msg += fmt.Sprintf(", about %d FPDUs lost", e.FPDUsLost)
	}
	r := h.finding(c, e.Dir, e.Frame, c.LastTime, code, msg)
	r.HasSeq, r.Seq, r.End, r.Gap = true, e.Seq, e.Seq+uint32(min(e.Len, 1<<32-1)), e
	h.emit()
	h.ulpGap(c)
	h.trackGap(c, e)
}

func (h *handler) Resync(c *reassembly.Conn, e *reassembly.ResyncEvent) {
	if e.How == reassembly.ResyncStart {
		return
	}
	r := h.finding(c, e.Dir, e.Frame, c.LastTime, finding.MPAResync,
		fmt.Sprintf("FPDU boundary found at seq %d by %s (%d FPDUs validated)", e.Seq, e.How, e.Chain))
	r.HasSeq, r.Seq, r.End, r.Resync = true, e.Seq, e.Seq, e
	h.emit()
}

func (h *handler) Retransmission(c *reassembly.Conn, e *reassembly.RetransEvent) {
	r := h.finding(c, e.Dir, e.Frame, c.LastTime, finding.TCPRetransInconsistent,
		fmt.Sprintf("retransmitted octets at seq %d differ from the first copy (%d octets compared)", e.Seq, e.Len))
	r.HasSeq, r.Seq, r.End = true, e.Seq, e.Seq+uint32(e.Len)
	h.emit()
	h.trackRetransmission(c, e)
}

// Finding reports a framing finding: the catalogue's summary of its code
// is the message.
func (h *handler) Finding(c *reassembly.Conn, e *reassembly.FindingEvent) {
	r := h.finding(c, e.Dir, e.Frame, c.LastTime, e.Code, fmt.Sprintf("%s (seq %d, %d octets)", e.Code.Info().Summary, e.Seq, e.Len))
	r.HasSeq, r.Seq, r.End = true, e.Seq, e.Seq+uint32(e.Len)
	h.emit()
}

// Segment hands out a TCP segment the reassembler reports (Config.Segments).
func (h *handler) Segment(c *reassembly.Conn, e *reassembly.SegmentEvent) {
	r := h.reset(KindSegment, e.Frame, e.Time)
	r.onConn(c, e.Dir)
	r.HasSeq, r.Seq, r.End = true, e.Seq, e.Seq+uint32(e.Len)
	r.Seg = *e
	h.emit()
}

func (h *handler) Closed(c *reassembly.Conn, e *reassembly.CloseEvent) {
	if !c.IWARP {
		return
	}
	at := e.Time
	if e.Reason == reassembly.CloseEnd {
		at = h.last // the capture's end, not the connection's last frame
	}
	h.ulpClosed(int(c.ID), e.Frame, at)
	if e.Reason == reassembly.CloseEvicted {
		// What the flow held was reported as gaps by the reassembly;
		// what follows of the connection starts a new one.
		h.finding(c, reassembly.DirAB, e.Frame, e.Time, finding.TCPFlowEvicted, "flow table full: connection dropped (the least recently active one)")
		h.emit()
	}
	r := h.reset(KindClosed, e.Frame, e.Time)
	r.onConn(c, reassembly.DirAB)
	r.Close = e
	h.emit()
	h.trackClosed(c, e)
}
