package pcap

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/internal/writev"
)

// RotateOptions configure a RotatingWriter. The rotation follows tcpdump's
// -C, -G and -W exactly, file names included.
type RotateOptions struct {
	Format   Format
	LinkType layers.LinkType
	Snaplen  uint32
	// FileSize (-C) starts a new file when the current one has grown
	// beyond this many octets: checked before each frame is written, so a
	// file ends with the frame that crossed the limit. Files are named
	// NAME, NAME1, NAME2, ... (with MaxFiles: NAME0, NAME1, ... padded to
	// the width of MaxFiles-1).
	FileSize int64
	// Interval (-G) starts a new file when a frame arrives this long after
	// the current file was opened; NAME then goes through strftime(3) with
	// the local time of the opening.
	Interval time.Duration
	// MaxFiles (-W): with FileSize, the numbers wrap around after this
	// many files, overwriting the oldest (a ring buffer); with Interval
	// alone, ErrFileLimit is returned instead of opening file MaxFiles+1.
	MaxFiles int
	// Now is the clock of Interval (nil: time.Now). tcpdump uses the time
	// of day, not the frame's timestamp.
	Now func() time.Time
	// Keep is how many chunks the caller of WriteFrameKeep may hold at
	// once, beyond what the writer itself uses (ChunkSize octets each).
	Keep int
}

// ErrFileLimit is returned by WriteFrame when -G -W has produced all the
// files it may: the capture should end (tcpdump: "Maximum file limit
// reached").
var ErrFileLimit = errors.New("maximum file limit reached")

// RotatingWriter writes frames to a capture file, starting new files as
// RotateOptions say. "-" writes to standard output and never rotates.
type RotatingWriter struct {
	name    string
	o       RotateOptions
	f       *asyncWriter
	pool    *ChunkPool
	w       *Writer
	size    int64 // octets in the current file, written or buffered
	cur     string
	opened  time.Time // when the current -G window started (whole seconds)
	cCount  int       // -C file number within the -G window
	gCount  int       // -G rotations so far
	digits  int       // width of the -C number (tcpdump's WflagChars)
	files   int       // files opened so far
	written uint64
}

// CreateRotating opens the first file.
func CreateRotating(name string, o RotateOptions) (*RotatingWriter, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Format == "" {
		o.Format = FormatForName(name)
	}
	w := &RotatingWriter{name: name, o: o, pool: NewChunkPool(ChunkSize, writerChunks+max(o.Keep, 0))}
	if o.MaxFiles > 0 {
		for x := o.MaxFiles - 1; x > 0; x /= 10 {
			w.digits++
		}
	}
	if name == "-" {
		w.o.FileSize, w.o.Interval = 0, 0
	}
	w.opened = w.o.Now().Truncate(time.Second)
	numbered := 0 // tcpdump numbers the first file only with -C
	if w.o.FileSize > 0 {
		numbered = w.digits
	}
	if err := w.open(w.fileName(0, numbered)); err != nil {
		return nil, err
	}
	return w, nil
}

// fileName is tcpdump's MakeFilename: strftime when -G is on, then the
// number appended when there is one to show.
func (w *RotatingWriter) fileName(count, width int) string {
	name := w.name
	if w.o.Interval > 0 {
		name = Strftime(name, w.opened)
	}
	if count == 0 && width == 0 {
		return name
	}
	return fmt.Sprintf("%s%0*d", name, width, count)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func (w *RotatingWriter) open(name string) error {
	var f *asyncWriter
	if name == "-" {
		f = newAsyncWriter(nopCloser{os.Stdout}, os.Stdout, w.pool)
	} else {
		fh, err := os.Create(name)
		if err != nil {
			return err
		}
		f = newAsyncWriter(fh, fh, w.pool)
	}
	cw := &countWriter{w: f}
	pw, err := NewWriter(cw, w.o.Format, w.o.LinkType, w.o.Snaplen)
	if err != nil {
		f.Close()
		return err
	}
	// The file header is written (or buffered) now; count it.
	if err := pw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", name, err)
	}
	w.f, w.w, w.cur, w.size = f, pw, name, cw.n
	w.files++
	return nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

func (w *RotatingWriter) closeCurrent() error {
	if w.w == nil {
		return nil
	}
	err := w.w.Flush()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.w, w.f = nil, nil
	if err != nil {
		return fmt.Errorf("%s: %w", w.cur, err)
	}
	return nil
}

// WriteFrame writes one frame, rotating first when it is time.
func (w *RotatingWriter) WriteFrame(ts time.Time, data []byte, origLen int) error {
	_, _, err := w.WriteFrameKeep(ts, data, origLen)
	return err
}

// WriteFrameKeep writes one frame as WriteFrame does and returns its copy
// in the file's buffer and the chunk that holds it. The copy stays valid
// until the next call on w, or, when the caller Holds the chunk (before
// that call), until it Releases it. It returns no copy for a frame larger
// than a chunk.
func (w *RotatingWriter) WriteFrameKeep(ts time.Time, data []byte, origLen int) ([]byte, *Chunk, error) {
	if err := w.rotate(); err != nil {
		return nil, nil, err
	}
	if err := w.f.error(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", w.cur, err)
	}
	hdr, total := recordLayout(w.o.Format, len(data))
	rec, c := w.f.reserve(total)
	if rec == nil {
		// Larger than a chunk: through the writer, copied in pieces.
		if err := w.w.WriteFrame(ts, data, origLen); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", w.cur, err)
		}
		if err := w.w.Flush(); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", w.cur, err)
		}
	} else {
		copy(rec[hdr:], data)
		putRecord(w.o.Format, rec, ts, len(data), origLen)
	}
	w.size += int64(total)
	w.written++
	if rec == nil {
		return nil, nil, nil
	}
	return rec[hdr : hdr+len(data) : hdr+len(data)], c, nil
}

// WriteFrameHeld writes one frame as WriteFrame does, but from data
// itself, not a copy: it holds h, which keeps data valid, until data is in
// the file (a ring Block: the file is written from the kernel's ring).
// Short frames are copied all the same.
func (w *RotatingWriter) WriteFrameHeld(ts time.Time, data []byte, origLen int, h Holder) error {
	if len(data) < heldMin || h == nil {
		return w.WriteFrame(ts, data, origLen)
	}
	if err := w.rotate(); err != nil {
		return err
	}
	if err := w.f.error(); err != nil {
		return fmt.Errorf("%s: %w", w.cur, err)
	}
	_, total := recordLayout(w.o.Format, len(data))
	w.f.appendHeld(w.o.Format, ts, data, origLen, h)
	w.size += int64(total)
	w.written++
	return nil
}

// rotate starts the next file when it is time (tcpdump's -G, -C, -W).
func (w *RotatingWriter) rotate() error {
	if w.w == nil {
		return errors.New("capture file closed")
	}
	if w.o.Interval > 0 {
		now := w.o.Now().Truncate(time.Second)
		if now.Sub(w.opened) >= w.o.Interval {
			w.opened = now
			w.gCount++
			if err := w.closeCurrent(); err != nil {
				return err
			}
			if w.o.FileSize == 0 && w.o.MaxFiles > 0 && w.gCount >= w.o.MaxFiles {
				return ErrFileLimit
			}
			w.cCount = 0
			width := 0
			if w.o.FileSize > 0 {
				width = w.digits
			}
			if err := w.open(w.fileName(0, width)); err != nil {
				return err
			}
		}
	}
	if w.o.FileSize > 0 && w.size > w.o.FileSize {
		if err := w.closeCurrent(); err != nil {
			return err
		}
		w.cCount++
		if w.o.MaxFiles > 0 && w.cCount >= w.o.MaxFiles {
			w.cCount = 0
		}
		if err := w.open(w.fileName(w.cCount, w.digits)); err != nil {
			return err
		}
	}
	return nil
}

// Flush writes buffered frames out to the current file.
func (w *RotatingWriter) Flush() error {
	if w.w == nil {
		return nil
	}
	if err := w.w.Flush(); err != nil {
		return err
	}
	return w.f.Sync()
}

// Chunk is a buffer of capture file records on their way to the file,
// shared with whoever else reads the frames in it (the live decoder):
// it goes back to its pool for reuse once every holder has released it,
// so a frame is copied out of the kernel's ring once, into the file's
// buffer, and read from there by both the file writer and the decoder.
type Chunk struct {
	buf []byte
	// A chunk on its way to a file may also carry frames written from
	// where they are (WriteFrameHeld): segs are then what to write, in
	// order, pieces of buf between frames held elsewhere, and holds what
	// to release once written.
	segs     [][]byte
	segStart int // buf[segStart:] is not in segs yet
	holds    []Holder
	lastHold Holder
	heldLen  int // octets of frames held elsewhere

	refs atomic.Int32
	gen  uint64 // incremented at each reuse, by the goroutine that gets it
	pool *ChunkPool
}

// Hold keeps the chunk (and the frames in it) from reuse until Release.
func (c *Chunk) Hold() { c.refs.Add(1) }

// Release gives up a hold (or the reference Get returned with).
func (c *Chunk) Release() {
	if c.refs.Add(-1) == 0 {
		c.pool.put(c)
	}
}

// Gen tells the uses of a chunk apart: it changes each time the pool
// hands the chunk out again.
func (c *Chunk) Gen() uint64 { return c.gen }

// Len is how many octets the chunk holds.
func (c *Chunk) Len() int { return len(c.buf) }

// Append copies b into the chunk and returns the copy, or nil when it
// does not fit.
func (c *Chunk) Append(b []byte) []byte {
	n := len(c.buf)
	if cap(c.buf)-n < len(b) {
		return nil
	}
	c.buf = append(c.buf, b...)
	return c.buf[n:len(c.buf):len(c.buf)]
}

// Holder is memory shared by several users, reused once all have
// released it: a ring Block, a Chunk.
type Holder interface {
	Hold()
	Release()
}

// ChunkPool hands out chunks of one size, at most limit of them in use at
// once: the memory of a capture's buffers stays bounded.
type ChunkPool struct {
	size      int
	limit     int32
	allocated atomic.Int32
	free      chan *Chunk
}

// ChunkSize is the size of a RotatingWriter's chunks: more than a record
// of MaxSnaplen octets.
const ChunkSize = 1 << 20

// NewChunkPool makes a pool of at most limit chunks of size octets.
func NewChunkPool(size, limit int) *ChunkPool {
	limit = max(limit, 1)
	return &ChunkPool{size: size, limit: int32(limit), free: make(chan *Chunk, limit)}
}

// Get returns an empty chunk with one reference: a released one, or a new
// one while fewer than the limit exist, or (wait) the next one released;
// without wait, nil when all are in use.
func (p *ChunkPool) Get(wait bool) *Chunk {
	var c *Chunk
	select {
	case c = <-p.free:
	default:
		if p.allocated.Add(1) <= p.limit {
			c = &Chunk{buf: make([]byte, 0, p.size), pool: p}
		} else {
			p.allocated.Add(-1)
			if !wait {
				return nil
			}
			c = <-p.free
		}
	}
	c.gen++
	c.refs.Store(1)
	return c
}

func (p *ChunkPool) put(c *Chunk) {
	c.buf = c.buf[:0]
	clear(c.segs)
	c.segs, c.segStart, c.holds, c.lastHold, c.heldLen = c.segs[:0], 0, c.holds[:0], nil, 0
	p.free <- c // cannot block: it holds every chunk allocated
}

// asyncWriter writes to a file on its own goroutine: the writer of frames
// (the capture loop) fills a chunk, hands it over and carries on while the
// disk catches up. Up to asyncChunks chunks wait; beyond that Write blocks
// (so memory stays bounded), as it does when the pool has no chunk left.
// A write error is returned by a later call.
type asyncWriter struct {
	w       io.WriteCloser
	vw      *writev.Writer // w as a file, for writev; nil: written piece by piece
	pool    *ChunkPool
	cur     *Chunk
	full    chan *Chunk
	pending sync.WaitGroup
	done    chan struct{}
	mu      sync.Mutex
	err     error
}

const (
	asyncChunks = 16
	// A chunk goes to the file once it carries this many octets of frames
	// held elsewhere or this many pieces (writev takes 1024 at most).
	heldPerChunk = 1 << 20
	segsPerChunk = 1000
	// Frames shorter than heldMin are copied even when they could be
	// written from where they are: a piece of writev costs about as much.
	heldMin = 512
	// writerChunks is what an asyncWriter may use of its pool: the
	// chunk being filled, those waiting, and the one being written.
	writerChunks = asyncChunks + 2
)

func newAsyncWriter(w io.WriteCloser, file *os.File, pool *ChunkPool) *asyncWriter {
	a := &asyncWriter{w: w, vw: writev.New(file), pool: pool, full: make(chan *Chunk, asyncChunks), done: make(chan struct{})}
	a.cur = pool.Get(true)
	go a.loop()
	return a
}

func (a *asyncWriter) loop() {
	defer close(a.done)
	for c := range a.full {
		a.mu.Lock()
		failed := a.err != nil
		a.mu.Unlock()
		if !failed {
			var err error
			if len(c.segs) > 0 {
				err = a.writev(c.segs)
			} else {
				_, err = a.w.Write(c.buf)
			}
			if err != nil {
				a.mu.Lock()
				a.err = err
				a.mu.Unlock()
			}
		}
		for _, h := range c.holds {
			h.Release()
		}
		c.Release()
		a.pending.Done()
	}
}

func (a *asyncWriter) error() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// writev writes segs in order, to the file in as few system calls as it
// can (package writev, where the system has writev(2)).
func (a *asyncWriter) writev(segs [][]byte) error {
	if a.vw != nil {
		_, err := a.vw.Write(segs)
		return err
	}
	for _, b := range segs {
		if _, err := a.w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// appendHeld adds a record whose frame octets are written from data
// itself, held by h until written.
func (a *asyncWriter) appendHeld(format Format, ts time.Time, data []byte, origLen int, h Holder) {
	hdr, total := recordLayout(format, len(data))
	tail := total - hdr - len(data)
	c := a.cur
	if cap(c.buf)-len(c.buf) < hdr+tail || len(c.segs)+3 > segsPerChunk || c.heldLen+len(data) > heldPerChunk || (c.lastHold != nil && c.lastHold != h) {
		// One chunk per holder: a ring block goes back to the kernel
		// as soon as the frames written from it are written.
		a.ship()
		c = a.cur
	}
	k := len(c.buf)
	c.buf = c.buf[:k+hdr+tail]
	putRecordHeader(format, c.buf[k:k+hdr], ts, len(data), origLen, total)
	putRecordTrailer(c.buf[k+hdr:], total)
	c.segs = append(c.segs, c.buf[c.segStart:k+hdr], data)
	c.segStart = k + hdr
	if c.lastHold != h {
		h.Hold()
		c.holds = append(c.holds, h)
		c.lastHold = h
	}
	c.heldLen += len(data)
}

// ship hands the current chunk to the file's goroutine and takes the next.
func (a *asyncWriter) ship() {
	c := a.cur
	if len(c.buf) == 0 && len(c.segs) == 0 {
		return
	}
	if len(c.segs) > 0 && c.segStart < len(c.buf) {
		c.segs = append(c.segs, c.buf[c.segStart:])
		c.segStart = len(c.buf)
	}
	a.pending.Add(1)
	a.full <- a.cur
	a.cur = a.pool.Get(true)
}

func (a *asyncWriter) Write(b []byte) (int, error) {
	if err := a.error(); err != nil {
		return 0, err
	}
	n := len(b)
	for len(b) > 0 {
		c := a.cur
		k := copy(c.buf[len(c.buf):cap(c.buf)], b)
		c.buf = c.buf[:len(c.buf)+k]
		b = b[k:]
		if len(c.buf) == cap(c.buf) {
			a.ship()
		}
	}
	return n, nil
}

// reserve returns n octets at the end of the current chunk (shipping it
// first when they do not fit), and the chunk; nil when n is more than a
// chunk holds.
func (a *asyncWriter) reserve(n int) ([]byte, *Chunk) {
	if n > a.pool.size {
		return nil, nil
	}
	if cap(a.cur.buf)-len(a.cur.buf) < n {
		a.ship()
	}
	c := a.cur
	k := len(c.buf)
	c.buf = c.buf[:k+n]
	return c.buf[k : k+n : k+n], c
}

// Sync waits until everything written so far is in the file.
func (a *asyncWriter) Sync() error {
	a.ship()
	a.pending.Wait()
	return a.error()
}

func (a *asyncWriter) Close() error {
	a.ship()
	a.cur.Release()
	a.cur = nil
	close(a.full)
	<-a.done
	err := a.error()
	if cerr := a.w.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close flushes and closes the current file.
func (w *RotatingWriter) Close() error { return w.closeCurrent() }

// Current is the name of the file being written.
func (w *RotatingWriter) Current() string { return w.cur }

// Files is how many files were opened.
func (w *RotatingWriter) Files() int { return w.files }

// Written is how many frames were written.
func (w *RotatingWriter) Written() uint64 { return w.written }

// ParseFileSize reads tcpdump's -C argument: millions of octets, or with a
// suffix k, m or g, KiB, MiB or GiB.
func ParseFileSize(s string) (int64, error) {
	mult := int64(1000000)
	num := s
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'k', 'K':
			mult, num = 1024, s[:n-1]
		case 'm', 'M':
			mult, num = 1024*1024, s[:n-1]
		case 'g', 'G':
			mult, num = 1024*1024*1024, s[:n-1]
		}
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil || v <= 0 || v > (1<<62)/mult {
		return 0, fmt.Errorf("invalid file size %q", s)
	}
	return v * mult, nil
}

// Strftime formats t by the strftime(3) conversions tcpdump's -G file names
// use. Unknown conversions are kept as written.
func Strftime(format string, t time.Time) string {
	if !strings.Contains(format, "%") {
		return format
	}
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		switch format[i] {
		case 'Y':
			b.WriteString(strconv.Itoa(t.Year()))
		case 'y':
			fmt.Fprintf(&b, "%02d", t.Year()%100)
		case 'C':
			fmt.Fprintf(&b, "%02d", t.Year()/100)
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'k':
			fmt.Fprintf(&b, "%2d", t.Hour())
		case 'I':
			fmt.Fprintf(&b, "%02d", (t.Hour()+11)%12+1)
		case 'l':
			fmt.Fprintf(&b, "%2d", (t.Hour()+11)%12+1)
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'u':
			wd := int(t.Weekday())
			if wd == 0 {
				wd = 7
			}
			b.WriteString(strconv.Itoa(wd))
		case 'w':
			b.WriteString(strconv.Itoa(int(t.Weekday())))
		case 's':
			b.WriteString(strconv.FormatInt(t.Unix(), 10))
		case 'F':
			b.WriteString(t.Format("2006-01-02"))
		case 'T':
			b.WriteString(t.Format("15:04:05"))
		case 'R':
			b.WriteString(t.Format("15:04"))
		case 'D':
			b.WriteString(t.Format("01/02/06"))
		case 'z':
			b.WriteString(t.Format("-0700"))
		case 'Z':
			b.WriteString(t.Format("MST"))
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}
