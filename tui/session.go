package tui

import (
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/filter"
	"github.com/iwkit/iwkit/pcap"
	pcapbpf "github.com/iwkit/iwkit/pcap/bpf"
	"github.com/iwkit/iwkit/ulp"
)

// Config says what a Session opens: what package capture's options name
// (iwtui takes the same capture input flags as iwdump).
type Config struct {
	File string // a capture file (pcap/pcapng, plain or gzip)
	// Files are several, merged in time order (read once into the spill
	// file); File, when set, is the first of them.
	Files    []string
	Ports    []uint16             // taken for iWARP (--decode-as PORT)
	DecodeAs map[uint16]ulp.Proto // --decode-as PORT=proto
	// CaptureFilter filters the frames of files (nil: none). Compiled once
	// (capture.Options.FileFilter), it serves every pass over the frames.
	CaptureFilter *pcapbpf.Filter
	Live          *analyze.LiveConfig // a live capture instead of files
	// Workers shards the index of a file (analyze.Config.Workers; 0: by
	// its size).
	Workers int
}

// Session is an open capture: its index, being built, and what reads it.
type Session struct {
	Ix     *Index
	Name   string
	cfg    Config
	live   *analyze.Live
	src    analyze.Source
	_      pad
	cancel atomic.Bool // read by the reader at every frame: a line of its own
	_      pad
	paused atomic.Bool
	done   chan struct{}

	fmu sync.Mutex
	flt *FilterRun                // the display filter being applied or applied
	cur atomic.Pointer[FilterRun] // flt, for the indexer's hot path
	// feed is held by the indexing goroutine while it feeds a frame, and
	// let go while it waits for the next one: whoever holds it is at a
	// frame boundary (every record of the frames read so far handed out).
	feed sync.Mutex
	idx  *indexer
	// colours: the user's colouring rules applied (colours.go; nil: none)
	colours atomic.Pointer[colourSet]
	// whole: a display filter or colouring rules are applied or being
	// applied, which match the records as the indexer takes them: the
	// shards of a sharded run hand them out whole (rowPreparer;
	// wholeRecords).
	//
	// whole and cancel are read by the shards and the reader for every
	// record and frame; the indexer writes feed for every frame. They sit
	// on cache lines of their own (pad): sharing one, each write took the
	// line from the other cores (false sharing: 0.3 s of 4 s of CPU on 2 M
	// frames, 2 workers).
	_     pad
	whole atomic.Bool
	_     pad
	// feedWait counts who waits for feed (lockFeed): only then does a
	// sharded run's indexer let go of it between frames (indexer.Frame).
	feedWait atomic.Int32
}

// pad fills a cache line.
type pad [64]byte

// lockFeed takes feed: at the next frame boundary of the run.
func (s *Session) lockFeed() {
	s.feedWait.Add(1)
	s.feed.Lock()
	s.feedWait.Add(-1)
}

// FilterRun is a display filter applied to the rows: a bitset of the rows
// it matches, filled by a pass over the capture (rows before Cut) and by
// the indexer as rows arrive (rows from Cut on).
type FilterRun struct {
	Expr  string
	f     *filter.Filter[*analyze.Record]
	mu    sync.Mutex
	bits  []uint64
	cut   int  // rows below cut come from the pass
	upto  int  // frames the pass covers: 1..upto
	Done  bool // the pass is over
	Err   error
	gen   atomic.Uint64
	count int
	tcp   []uint64 // the TCP rows it matches (tcpBase + bit)
}

// Match reports whether row i passes.
func (fr *FilterRun) Match(i int) bool {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	if i >= tcpBase {
		i -= tcpBase
		return i/64 < len(fr.tcp) && fr.tcp[i/64]&(1<<(i%64)) != 0
	}
	return i/64 < len(fr.bits) && fr.bits[i/64]&(1<<(i%64)) != 0
}

func (fr *FilterRun) set(i int) {
	fr.mu.Lock()
	bits := &fr.bits
	if i >= tcpBase {
		bits, i = &fr.tcp, i-tcpBase
	}
	for len(*bits) <= i/64 {
		*bits = append(*bits, 0)
	}
	(*bits)[i/64] |= 1 << (i % 64)
	fr.count++
	fr.mu.Unlock()
	fr.gen.Add(1)
}

// Gen changes whenever the run matched more rows or finished.
func (fr *FilterRun) Gen() uint64 { return fr.gen.Load() }

// Status reports rows matched so far and whether the pass is over.
func (fr *FilterRun) Status() (int, bool, error) {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	return fr.count, fr.Done, fr.Err
}

var errCancelled = errors.New("cancelled")

// captureFilter is the capture filter of files (nil: none; live, the
// capture applies it).
func (s *Session) captureFilter() *pcapbpf.Filter {
	if s.cfg.Live != nil {
		return nil
	}
	return s.cfg.CaptureFilter
}

// Open opens a capture and starts indexing it on its own goroutine.
func Open(cfg Config) (*Session, error) {
	files := cfg.Files
	if cfg.File != "" {
		files = append([]string{cfg.File}, files...)
	}
	s := &Session{Name: strings.Join(files, " + "), done: make(chan struct{})}
	var st *store
	var src analyze.Source
	var total int64
	ir, ierr := (*pcap.IndexedReader)(nil), pcap.ErrNotSeekable
	if cfg.Live == nil && len(files) == 1 {
		ir, ierr = pcap.OpenIndexed(files[0])
	}
	if cfg.Live != nil {
		var err error
		if st, err = newSpill(); err != nil {
			return nil, err
		}
		lc := *cfg.Live
		live, err := analyze.OpenLive(lc)
		if err != nil {
			st.close()
			return nil, err
		}
		s.live = live
		s.Name = lc.Iface
		src = &spillSource{src: live, s: st}
	} else if ierr == nil {
		// Its own handle: the source's closes when indexing ends.
		fh, err := os.Open(files[0])
		if err != nil {
			ir.Close()
			return nil, err
		}
		rr, err := pcap.NewRandomReader(fh)
		if err != nil {
			fh.Close()
			ir.Close()
			return nil, err
		}
		st = &store{rr: rr, file: fh}
		src = &indexedSource{r: ir, s: st}
		if total, err = fileSize(files[0]); err != nil {
			ir.Close()
			return nil, err
		}
	} else if errors.Is(ierr, pcap.ErrNotSeekable) {
		// A pipe, a gzip file or several files: read once, spilled.
		in, t, err := analyze.OpenFiles(files)
		if err != nil {
			return nil, err
		}
		total = t
		if st, err = newSpill(); err != nil {
			in.Close()
			return nil, err
		}
		src = &spillSource{src: in, s: st}
	} else {
		return nil, ierr
	}
	s.cfg = cfg
	if cfg.Live == nil {
		st.sources = files
	}
	src = analyze.Filtered(src, s.captureFilter(), analyze.Tee{})
	s.src = src
	s.Ix = newIndex(st, total)
	s.idx = &indexer{ix: s.Ix, s: s}
	go s.build(cfg)
	return s, nil
}

// cancelSource ends a run when the session closes.
type cancelSource struct {
	analyze.Source
	s *Session
	// boundary: Next is where the records of the frames before are all
	// indexed (one worker), and it lets go of the feed while it waits.
	// Sharded, the indexer's Frame is that place (indexer.boundary).
	boundary bool
}

// Pin is the source's, when it has one (indexedSource): the sharded run
// reads the frames straight into its chunks.
func (c *cancelSource) Pin(buf []byte) bool {
	p, ok := c.Source.(interface{ Pin([]byte) bool })
	return ok && p.Pin(buf)
}

func (c *cancelSource) Next(f *pcap.Frame) error {
	if c.s.cancel.Load() {
		return errCancelled
	}
	if !c.boundary {
		return c.Source.Next(f)
	}
	c.s.feed.Unlock() // at a frame boundary while waiting
	err := c.Source.Next(f)
	c.s.feed.Lock()
	return err
}

func (s *Session) build(cfg Config) {
	defer close(s.done)
	s.feed.Lock()
	defer s.feed.Unlock()
	ix := s.Ix
	rc := s.runConfig()
	// The octets read go to the progress bar 256 KiB at a time (an atomic
	// add per frame was 4% of a sharded index's CPU); a live capture's as
	// they come.
	var unreported int64
	rc.Progress = func(n int) {
		if unreported += int64(n); unreported >= 256<<10 || s.live != nil {
			ix.read.Add(unreported)
			unreported = 0
		}
	}
	sharded := rc.Shards() > 1
	s.idx.boundary = sharded
	rep, err := analyze.Run(&cancelSource{Source: s.src, s: s, boundary: !sharded}, rc, s.idx)
	s.idx.unlock() // a run that ended early may end inside a batch
	ix.read.Add(unreported)
	s.src.Close()
	if s.live != nil {
		s.live.Finish()
	}
	ix.mu.Lock()
	ix.done, ix.err, ix.report = true, err, rep
	if rep != nil {
		for i := range rep.ConnStats {
			cs := rep.ConnStats[i]
			if c := ix.conns[cs.Conn]; c != nil {
				c.Stats = &cs
			}
		}
	}
	ix.mu.Unlock()
}

// Wait waits until the index is complete.
func (s *Session) Wait() { <-s.done }

// Close stops indexing and removes the spill file.
func (s *Session) Close() {
	s.cancel.Store(true)
	if s.live != nil {
		s.live.Capture().Stop()
	}
	<-s.done
	s.Ix.store.close()
}

// Live reports whether the session is a live capture.
func (s *Session) Live() bool { return s.live != nil }

// Drops reports the kernel's counters of a live capture.
func (s *Session) Drops() (received, dropped uint64, ok bool) {
	if s.live == nil {
		return 0, 0, false
	}
	st, err := s.live.Capture().Stats()
	if err != nil {
		return 0, 0, false
	}
	return st.Received, st.Dropped, true
}

// ApplyFilter starts applying a display filter ("" removes it) and returns
// the run; nil for "". At a frame boundary it fixes the rows a pass over
// the frames read so far decides; the indexer matches later rows as they
// come, so a filter applies while the index is built or a live capture
// runs (quiet or not).
func (s *Session) ApplyFilter(expr string) (*FilterRun, error) {
	if expr == "" {
		s.fmu.Lock()
		s.flt = nil
		s.cur.Store(nil)
		s.whole.Store(s.colours.Load() != nil) // the rules still match
		s.fmu.Unlock()
		return nil, nil
	}
	f, err := analyze.CompileFilter(expr)
	if err != nil {
		return nil, err
	}
	fr := &FilterRun{Expr: expr, f: f}
	s.start([]*FilterRun{fr}, func() {
		s.fmu.Lock()
		s.flt = fr
		s.cur.Store(fr)
		s.fmu.Unlock()
	})
	return fr, nil
}

// start fixes, at a frame boundary, the rows a pass over the frames read
// so far decides for the runs frs (their cut) and installs them (install:
// from then on the indexer matches the later rows), then starts the pass.
func (s *Session) start(frs []*FilterRun, install func()) {
	s.wholeRecords() // returns holding feed
	cut, upto := s.Ix.Len(), s.idx.last
	if _, _, done, _ := s.Ix.Progress(); done {
		cut, upto = 1<<62, s.Ix.store.frames()
	}
	for _, fr := range frs {
		fr.cut, fr.upto = cut, upto
	}
	install()
	s.feed.Unlock()
	if upto == 0 {
		finish(frs, nil)
	} else {
		go s.pass(frs)
	}
}

// finish marks the runs done (with the pass's error, if any).
func finish(frs []*FilterRun, err error) {
	for _, fr := range frs {
		fr.mu.Lock()
		fr.Done, fr.Err = true, err
		fr.mu.Unlock()
		fr.gen.Add(1)
	}
}

// wholeRecords has the shards hand out whole records from now on, and
// returns holding feed once the indexer has indexed every record they
// took (rowPreparer): a filter must see every record from its cut on.
//
// The shards took records only of the frames the store held when whole
// was set (n): a frame's offset goes into the store, under its lock,
// before the frame is handed to a shard (indexedSource, spillSource), so
// a shard that takes a step at a later frame does so after this
// goroutine's store of whole and its unlock of the store, and sees
// whole. Once the indexer is past frame n (at its boundary before a
// later frame, indexer.Frame), or the run has ended, every record taken
// is indexed.
func (s *Session) wholeRecords() {
	s.whole.Store(true)
	n := s.Ix.store.frames()
	for {
		s.lockFeed()
		if !s.idx.boundary || s.idx.last >= n { // one worker: nothing is taken
			return
		}
		if _, _, done, _ := s.Ix.Progress(); done { // the run ended: nothing more comes
			return
		}
		s.feed.Unlock()
		time.Sleep(100 * time.Microsecond)
	}
}

// Filter is the display filter applied (nil: none).
func (s *Session) Filter() *FilterRun {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	return s.flt
}

// pass runs the pipeline over the stored frames (1..upto of the runs,
// or all) and sets the rows below their cut that they match, each row in
// the first run that matches it (one run: the display filter; several:
// the colouring rules, first match wins): the same pipeline over the same
// frames hands out the same records in the same order.
func (s *Session) pass(frs []*FilterRun) {
	m := &matcher{frs: frs, s: s}
	err := s.rerun(&storeSource{st: s.Ix.store, upto: frs[0].upto}, m)
	if err == errCancelled {
		err = nil
	}
	finish(frs, err)
}

// rerun runs the pipeline over frames read back from the store as the
// index ran it: through the same capture filter, with the same settings,
// so the same frames give the same records in the same order.
func (s *Session) rerun(src analyze.Source, c analyze.Consumer) error {
	_, err := analyze.Run(analyze.Filtered(src, s.captureFilter(), analyze.Tee{}), s.runConfig(), c)
	return err
}

// runConfig is the pipeline's configuration for every pass: sharded for
// a large file (analyze.Run hands the records out in capture order all
// the same), one worker for a live capture, whose frames come as they
// are captured.
func (s *Session) runConfig() analyze.Config {
	if s.live != nil {
		return analyze.Config{Ports: s.cfg.Ports, DecodeAs: s.cfg.DecodeAs, Workers: 1, Segments: true}
	}
	// Segments: the TCP rows (tcp.go).
	return analyze.Config{Ports: s.cfg.Ports, DecodeAs: s.cfg.DecodeAs, Workers: s.cfg.Workers, InputSize: s.Ix.total, Segments: true}
}

// matcher numbers the rows of a filter pass as the indexer does.
type matcher struct {
	frs []*FilterRun // all with the same cut and upto
	s   *Session
	row int
	tcp int // TCP rows numbered so far
}

func (m *matcher) Record(r *analyze.Record) {
	if keptSegment(r) {
		// TCP rows below the cut's are the pass's too (tcp.go).
		if m.row < m.frs[0].cut {
			firstMatch(m.frs, r, tcpBase+m.tcp)
		}
		m.tcp++
		return
	}
	if r.Kind != analyze.KindPDU && r.Kind != analyze.KindFinding {
		return
	}
	if m.row < m.frs[0].cut {
		firstMatch(m.frs, r, m.row)
	}
	m.row++
}

// firstMatch sets row in the first of the runs whose filter matches r.
func firstMatch(frs []*FilterRun, r *analyze.Record, row int) {
	for _, fr := range frs {
		if fr.f.Match(r) {
			fr.set(row)
			return
		}
	}
}

// storeSource reads frames 1..upto back from the store.
type storeSource struct {
	st   *store
	upto int
	n    int
	buf  []byte
	s    *Session
}

func (x *storeSource) Next(f *pcap.Frame) error {
	for {
		if x.n >= x.upto {
			return io.EOF
		}
		x.n++
		var err error
		x.buf, err = x.st.read(x.n, f, x.buf)
		if err == nil {
			return nil
		}
		// frames dropped by a capture filter are not stored
	}
}

func (x *storeSource) Close() error { return nil }
