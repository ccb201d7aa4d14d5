package analyze

// Sources with a capture filter and a -w tee: frames read from files and
// filtered (Filtered), and live capture (OpenLive). The live capture loop
// runs on its own goroutine: it reads the kernel ring, writes every frame
// to the tee at once, and hands a copy to the decoder (Run, on the
// caller's goroutine) through a bounded queue. A slow decoder or terminal
// never stalls the ring: when the queue is full the frame is still written
// but not decoded, and the lag is reported.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/pcap"
	pcapbpf "github.com/iwkit/iwkit/pcap/bpf"
	"golang.org/x/net/bpf"
)

// Tee is where a source writes the frames that pass its capture filter
// (iwdump -w, with tcpdump's rotation).
type Tee struct {
	Path   string             // file name ("-": standard output); "" writes nothing
	Rotate pcap.RotateOptions // LinkType and Snaplen are set when the tee opens
	// Warn, when set, hears that the file limit was reached (-W) or that
	// closing the file failed. Messages name no program: the caller adds
	// its own ("iwdump: ").
	Warn func(msg string)
}

func (t *Tee) open(lt layers.LinkType, snaplen int) (*pcap.RotatingWriter, error) {
	ro := t.Rotate
	ro.LinkType, ro.Snaplen = lt, uint32(snaplen)
	w, err := pcap.CreateRotating(t.Path, ro)
	if err != nil {
		return nil, fmt.Errorf("-w: %w", err)
	}
	return w, nil
}

func (t *Tee) limitReached() {
	if t.Warn != nil {
		t.Warn(fmt.Sprintf("-w: maximum file limit reached: %d", t.Rotate.MaxFiles))
	}
}

// Filtered applies a capture filter (nil: none) to frames read from src
// and writes those that pass to tee (Path "": nowhere). Frames keep their
// numbers in src.
func Filtered(src Source, ff *pcapbpf.Filter, tee Tee) Source {
	if ff == nil && tee.Path == "" {
		return src
	}
	return &filteredSource{src: src, ff: ff, tee: tee, first: true}
}

type filteredSource struct {
	src   Source
	ff    *pcapbpf.Filter
	tee   Tee
	w     *pcap.RotatingWriter
	first bool
	done  bool
}

func (s *filteredSource) Next(f *pcap.Frame) error {
	if s.done {
		return io.EOF
	}
	for {
		if err := s.src.Next(f); err != nil {
			return err
		}
		if s.ff != nil {
			ok, err := s.ff.Match(f.LinkType, f.Data)
			if err != nil {
				return fmt.Errorf("frame %d: %w", f.Number, err)
			}
			if !ok {
				continue
			}
		}
		if s.first && s.tee.Path != "" {
			// The file's link type is known with its first frame.
			s.first = false
			w, err := s.tee.open(f.LinkType, pcap.MaxSnaplen)
			if err != nil {
				return err
			}
			s.w = w
		}
		if s.w != nil {
			if err := s.w.WriteFrame(f.Timestamp, f.Data, f.OrigLen); err != nil {
				if errors.Is(err, pcap.ErrFileLimit) {
					s.tee.limitReached()
					s.done = true
					return io.EOF
				}
				return fmt.Errorf("-w: %w", err)
			}
		}
		return nil
	}
}

func (s *filteredSource) Close() error {
	var err error
	if s.w != nil {
		if err = s.w.Close(); err != nil && s.tee.Warn != nil {
			s.tee.Warn("-w: " + err.Error())
		}
	}
	s.src.Close()
	return err
}

// LiveConfig is what OpenLive needs.
type LiveConfig struct {
	Iface      string
	Snaplen    int  // 0: pcap.MaxSnaplen
	Promisc    bool // put the interface into promiscuous mode
	BufferSize int  // kernel buffer, octets
	// Filter is the compiled capture filter (nil: everything).
	Filter []bpf.RawInstruction
	Tee    Tee
	// Decode false only writes the tee (iwdump -w -): Next sees no frame.
	Decode bool
	// Count stops the capture after that many frames (0: no limit).
	Count int
	// Warn, when set, hears that decoding fell behind the capture (at
	// most once per LagEvery) and that closing the -w file failed.
	// Messages name no program: the caller adds its own ("iwdump: ").
	Warn func(msg string)
	// Idle, when set, is called when the decoder has caught up with the
	// capture, before it waits: flush output there, so a quiet link shows
	// what it had.
	Idle func()
	// Queue bounds between capture and decoder (0: 32768 frames, 24 MiB:
	// with the kernel ring in front of it and the analysis behind, the
	// 100 MB budget); beyond either, frames are written to the tee but
	// not decoded.
	QueueFrames int
	QueueOctets int64
	// RingShare is how many blocks of the kernel's ring the decoder may
	// hold (0: a quarter of them); beyond, frames are copied for it.
	RingShare int
	// LagEvery is how often the lag is reported at most (0: a second).
	LagEvery time.Duration
	// Started, when set, is called once the capture runs (tests).
	Started func(*pcap.Live)
}

// Live is a live capture as a Source.
//
// From the kernel's ring (pcap.Live.Block), a frame is not copied: the
// -w file is written from the ring (pcap.RotatingWriter.WriteFrameHeld)
// and the decoder reads the frame where the kernel put it, as tcpdump
// writes its file; the ring block goes back to the kernel once both are
// done with it. A frame not in the ring (the socket methods, a frame
// whose VLAN tag was put back) is copied once: with -w, into the file's buffer (WriteFrameKeep), and the decoder
// reads it there; without, into a chunk of the capture's own pool.
//
// The decoder holds the blocks and chunks its queued frames are in (one
// hold each, taken by the capture loop with the first frame in it for the
// decoder, released by the decoder when it moves on to the next). Memory
// stays bounded and the kernel keeps most of its ring: the decoder holds
// at most a quarter of the ring; beyond it, frames are copied for it into
// chunks of the capture's own pool, at most QueueOctets of them; beyond
// that they are written but not decoded.
type Live struct {
	l   *pcap.Live
	cfg LiveConfig
	ch  chan liveFrame
	w   *pcap.RotatingWriter
	sig chan os.Signal

	// The capture loop's side.
	pool      *pcap.ChunkPool // chunks frames are copied into for the decoder (no -w, or past its share of the ring)
	own       *pcap.Chunk     // the chunk of pool being filled
	held      holder          // the block or chunk last held for the decoder, in its use heldGen
	heldGen   uint64
	maxBlocks int64 // ring blocks the decoder may hold
	maxChunks int64 // chunks the decoder may hold

	// The decoder's side: the block or chunk of the frames it reads now.
	decChunk   holder
	decIsChunk bool

	decBlocks atomic.Int64 // ring blocks held for the decoder
	decChunks atomic.Int64 // chunks held for the decoder
	queued    atomic.Int64 // octets of frames in the channel
	captured  atomic.Uint64
	undecoded atomic.Uint64
	done      chan struct{} // closed when the capture loop has ended
	lagDone   chan struct{} // closed when watchLag has ended (it writes to Stderr)
	err       error         // why the capture loop ended, when not Stop
	finished  sync.Once
	summary   string
	tcpdump   string // Tcpdump
}

// liveFrame is a captured frame in a ring block or a chunk; hold says the
// capture loop took the decoder's hold on c with this frame.
type liveFrame struct {
	fr    pcap.Frame
	c     holder
	hold  bool
	chunk bool // c is a chunk, not a ring block
}

// holder is a pcap.Block or a pcap.Chunk: memory reused once every
// holder has released it; Gen tells its uses apart.
type holder interface {
	Hold()
	Release()
	Gen() uint64
}

// OpenLive starts capturing. Ctrl-C (or SIGTERM) ends the capture
// cleanly: what the kernel has is drained, written and decoded, then
// Next returns io.EOF.
func OpenLive(cfg LiveConfig) (*Live, error) {
	if cfg.QueueFrames <= 0 {
		cfg.QueueFrames = 1 << 15
	}
	if cfg.QueueOctets <= 0 {
		cfg.QueueOctets = 24 << 20
	}
	if cfg.LagEvery <= 0 {
		cfg.LagEvery = time.Second
	}
	if cfg.Warn == nil {
		cfg.Warn = func(string) {}
	}
	lc, err := pcap.OpenLive(cfg.Iface, pcap.LiveOptions{Snaplen: cfg.Snaplen, Promisc: cfg.Promisc,
		BufferSize: cfg.BufferSize, Filter: cfg.Filter})
	if err != nil {
		return nil, err
	}
	s := &Live{l: lc, cfg: cfg, ch: make(chan liveFrame, cfg.QueueFrames),
		done: make(chan struct{}), lagDone: make(chan struct{})}
	// The decoder may hold chunks of up to QueueOctets, and two at least:
	// the one it reads and the one being filled.
	s.maxChunks = max(2, cfg.QueueOctets/pcap.ChunkSize)
	s.maxBlocks = int64(max(1, lc.RingBlocks()/4))
	if cfg.RingShare > 0 {
		s.maxBlocks = int64(cfg.RingShare)
	}
	if cfg.Tee.Path != "" {
		if cfg.Decode {
			cfg.Tee.Rotate.Keep = int(s.maxChunks)
		}
		if s.w, err = cfg.Tee.open(lc.LinkType(), lc.Snaplen()); err != nil {
			lc.Close()
			return nil, err
		}
	}
	if cfg.Decode {
		s.pool = pcap.NewChunkPool(pcap.ChunkSize, int(s.maxChunks)+1)
	}
	s.sig = make(chan os.Signal, 1)
	signal.Notify(s.sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-s.sig:
			lc.Stop()
		case <-s.done:
		}
	}()
	go s.capture()
	go s.watchLag()
	if cfg.Started != nil {
		cfg.Started(lc)
	}
	return s, nil
}

// Capture is the underlying capture (link type, snaplen, method).
func (s *Live) Capture() *pcap.Live { return s.l }

// Stop ends the capture: what was queued is still decoded.
func (s *Live) Stop() { s.l.Stop() }

// capture is the capture loop: kernel → tee → decoder queue.
func (s *Live) capture() {
	defer close(s.done)
	defer close(s.ch)
	defer func() {
		if s.own != nil {
			s.own.Release()
		}
	}()
	count := uint64(s.cfg.Count)
	var fr pcap.Frame
	for {
		err := s.l.Next(&fr)
		if err == io.EOF {
			return
		}
		if err != nil {
			s.err = err
			return
		}
		var (
			data []byte
			c    holder
		)
		if b := s.l.Block(); b != nil {
			// In the ring: written and decoded from there.
			data, c = fr.Data, b
			if s.w != nil {
				if err := s.w.WriteFrameHeld(fr.Timestamp, fr.Data, fr.OrigLen, b); err != nil {
					s.writeFailed(err)
					return
				}
			}
		} else if s.w != nil {
			// The one copy out of the ring: into the file's buffer.
			d, ch, err := s.w.WriteFrameKeep(fr.Timestamp, fr.Data, fr.OrigLen)
			if err != nil {
				s.writeFailed(err)
				return
			}
			if ch != nil {
				data, c = d, ch
			}
		}
		if s.cfg.Decode && !s.enqueue(&fr, data, c) {
			s.undecoded.Add(1)
		}
		n := s.captured.Add(1)
		if count > 0 && n >= count {
			s.l.Stop()
			return
		}
	}
}

// writeFailed ends the capture when -w cannot go on.
func (s *Live) writeFailed(err error) {
	if errors.Is(err, pcap.ErrFileLimit) {
		s.cfg.Tee.limitReached()
	} else {
		s.err = fmt.Errorf("-w: %w", err)
	}
	s.l.Stop()
}

// enqueue hands fr to the decoder, unless the queue is full: as data in
// c (a ring block, or a chunk of the -w file's buffer), or (c nil)
// copied into a chunk of the capture's own. It says whether the frame was
// queued.
func (s *Live) enqueue(fr *pcap.Frame, data []byte, c holder) bool {
	n := int64(len(fr.Data))
	if len(s.ch) == cap(s.ch) || s.queued.Load()+n > s.cfg.QueueOctets {
		return false
	}
	_, inRing := c.(*pcap.Block)
	if inRing && (c != s.held || c.Gen() != s.heldGen) && s.decBlocks.Load() >= s.maxBlocks {
		c = nil // the decoder holds its share of the ring: a copy instead
	}
	if c == nil {
		if s.w != nil && !inRing {
			return false // larger than a chunk (not from a live capture)
		}
		inRing = false
		var own *pcap.Chunk
		if data, own = s.copyOut(fr.Data); own == nil {
			return false
		}
		c = own
	}
	lf := liveFrame{fr: *fr, c: c, chunk: !inRing}
	lf.fr.Data = data
	if c != s.held || c.Gen() != s.heldGen {
		count, limit := &s.decChunks, s.maxChunks
		if inRing {
			count, limit = &s.decBlocks, s.maxBlocks
		}
		if count.Load() >= limit {
			return false
		}
		c.Hold()
		count.Add(1)
		s.held, s.heldGen, lf.hold = c, c.Gen(), true
	}
	s.queued.Add(n)
	s.ch <- lf // cannot block: this goroutine is the only sender
	return true
}

// copyOut copies b into the capture's own chunk, starting a new one when
// it is full and the decoder may hold one more; nil when it may not.
func (s *Live) copyOut(b []byte) ([]byte, *pcap.Chunk) {
	if s.own != nil {
		if cp := s.own.Append(b); cp != nil {
			return cp, s.own
		}
	}
	if s.decChunks.Load() >= s.maxChunks {
		return nil, nil
	}
	next := s.pool.Get(false)
	if next == nil {
		return nil, nil
	}
	if s.own != nil {
		s.own.Release()
	}
	s.own = next
	cp := s.own.Append(b)
	if cp == nil {
		return nil, nil
	}
	return cp, s.own
}

// watchLag reports, at most once per LagEvery, that decoding fell behind.
func (s *Live) watchLag() {
	defer close(s.lagDone)
	t := time.NewTicker(s.cfg.LagEvery)
	defer t.Stop()
	var reported uint64
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
			if n := s.undecoded.Load(); n > reported {
				where := ""
				if s.w != nil {
					where = "; all are in " + s.cfg.Tee.Path
				}
				s.cfg.Warn(fmt.Sprintf("decoding is behind the capture: %d frames not decoded so far%s", n, where))
				reported = n
			}
		}
	}
}

// Next gives the decoder the next captured frame. Its Data stays valid
// until the next call.
func (s *Live) Next(f *pcap.Frame) error {
	var (
		lf liveFrame
		ok bool
	)
	select {
	case lf, ok = <-s.ch:
	default:
		if s.cfg.Idle != nil {
			s.cfg.Idle()
		}
		lf, ok = <-s.ch
	}
	if !ok {
		s.took(nil)
		<-s.done
		if s.err != nil {
			return s.err
		}
		return io.EOF
	}
	s.took(&lf)
	*f = lf.fr
	return nil
}

// took moves the decoder on to frame lf (nil: past the last): the chunk
// of the frames before it is released when lf starts another.
func (s *Live) took(lf *liveFrame) {
	if lf != nil {
		s.queued.Add(-int64(len(lf.fr.Data)))
		if !lf.hold {
			return
		}
	}
	if s.decChunk != nil {
		s.decChunk.Release()
		if s.decIsChunk {
			s.decChunks.Add(-1)
		} else {
			s.decBlocks.Add(-1)
		}
		s.decChunk = nil
	}
	if lf != nil {
		s.decChunk, s.decIsChunk = lf.c, lf.chunk
	}
}

// Tcpdump is tcpdump's summary of the capture, after Finish: frames
// captured, received by the filter, dropped by the kernel, and those the
// decoder did not take (lines ending in a newline).
func (s *Live) Tcpdump() string { return s.tcpdump }

// Finish stops the capture (if it still runs), waits for the loop, closes
// the tee and the socket, keeps tcpdump's summary (Tcpdump) and returns
// the statistics line for the -z tables. It may be called more than once.
func (s *Live) Finish() string {
	s.finished.Do(func() {
		s.l.Stop()
		for lf := range s.ch { // the decoder has stopped reading (-c): let the loop end
			s.took(&lf)
		}
		s.took(nil)
		<-s.done
		<-s.lagDone // its last report comes before the summary
		signal.Stop(s.sig)
		if s.w != nil {
			if err := s.w.Close(); err != nil {
				s.cfg.Warn("-w: " + err.Error())
			}
		}
		st, err := s.l.Stats()
		s.l.Close()
		var b strings.Builder
		fmt.Fprintf(&b, "%d packets captured\n", st.Captured)
		if err == nil {
			fmt.Fprintf(&b, "%d packets received by filter\n%d packets dropped by kernel\n", st.Received, st.Dropped)
		}
		if n := s.undecoded.Load(); n > 0 {
			fmt.Fprintf(&b, "%d packets not decoded: the decoder fell behind", n)
			if s.w != nil {
				fmt.Fprintf(&b, " (all are in %s)", s.cfg.Tee.Path)
			}
			b.WriteString("\n")
		}
		s.tcpdump = b.String()
		s.summary = fmt.Sprintf("live capture on %s (%s): %d frames captured, %d received by filter, %d dropped by kernel, %d not decoded",
			s.cfg.Iface, s.l.Method(), st.Captured, st.Received, st.Dropped, s.undecoded.Load())
		if s.w != nil {
			s.summary += fmt.Sprintf(", %d written to %d file(s)", s.w.Written(), s.w.Files())
		}
	})
	return s.summary
}

// Close ends the capture (Finish) and reports why the capture loop ended,
// when it was not stopped.
func (s *Live) Close() error {
	s.Finish()
	return s.err
}
