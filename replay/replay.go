// Package replay sends the frames of a capture file onto a network
// interface, statelessly, with tcpreplay's habits: the capture's own timing
// (scaled by a multiplier), a fixed packet or bit rate, or as fast as the
// interface takes them; loops, limits and a duration; and tcpreplay's
// closing report. On Linux frames go out through a pure-Go AF_PACKET socket
// (no libpcap). Stateful replay (a live peer answering) is not here.
package replay

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/pcap"
)

// Options choose the pacing and the extent of a replay. At most one of
// PPS, Mbps and Topspeed may be set; without any the capture's timing is
// kept, divided by Multiplier.
type Options struct {
	PPS        float64 // packets per second
	Mbps       float64 // megabits (10^6 bits) per second, frame octets counted
	Multiplier float64 // speed-up of the capture's timing (0: 1)
	Topspeed   bool    // as fast as the interface takes them
	Loop       int     // passes over the file (0: 1)
	Limit      uint64  // stop after this many packets (0: no limit)
	Duration   time.Duration
	Preload    bool // read the whole file into memory first
	// Stats, with StatsOut, prints tcpreplay's running statistics every
	// Stats.
	Stats    time.Duration
	StatsOut io.Writer
	// Stop ends the replay early (a signal).
	Stop <-chan struct{}
	// now and sleep are the clock (tests replace them).
	now   func() time.Time
	sleep func(time.Duration)
}

func (o *Options) check() error {
	n := 0
	for _, b := range []bool{o.PPS > 0, o.Mbps > 0, o.Topspeed} {
		if b {
			n++
		}
	}
	if n > 1 || n == 1 && o.Multiplier > 0 && o.Multiplier != 1 {
		return errors.New("replay: give at most one of --pps, --mbps, --multiplier, --topspeed")
	}
	if o.PPS < 0 || o.Mbps < 0 || o.Multiplier < 0 || o.Loop < 0 || o.Duration < 0 || o.Stats < 0 {
		return errors.New("replay: negative rate, loop count, duration or interval")
	}
	if o.Multiplier == 0 {
		o.Multiplier = 1
	}
	if o.Loop == 0 {
		o.Loop = 1
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.sleep == nil {
		o.sleep = time.Sleep
	}
	return nil
}

// Sink takes frames. A send that the interface could not queue at once is
// retried by the sink and counted, not lost.
type Sink interface {
	// Send sends one frame; retries count the ENOBUFS and EAGAIN retries
	// before it went (or failed).
	Send(frame []byte) (r Retries, err error)
	// Name is the device's name, for the report.
	Name() string
}

// Retries count sends retried because the kernel had no room.
type Retries struct {
	NoBufs uint64 // ENOBUFS: the device queue or socket buffer was full
	Again  uint64 // EAGAIN
}

// Stats are what a replay did, in tcpreplay's terms.
type Stats struct {
	Packets   uint64 // sent successfully
	Bytes     uint64 // their octets
	Failed    uint64 // refused by the kernel (EMSGSIZE: larger than the MTU, …)
	Truncated uint64 // sent as captured, shorter than on the wire (snaplen)
	Retries
	Flows       int    // distinct TCP 4-tuples, each direction its own flow
	FlowPackets uint64 // TCP packets
	NonFlow     uint64 // other packets
	Start, End  time.Time
	Device      string
}

// Elapsed is the time from the first send to the last.
func (s Stats) Elapsed() time.Duration { return s.End.Sub(s.Start) }

// Report prints tcpreplay's closing report (tcpreplay 4.4's layout).
func (s Stats) Report(w io.Writer) {
	sec := s.Elapsed().Seconds()
	rate := func(v float64) float64 {
		if sec <= 0 {
			return 0
		}
		return v / sec
	}
	fmt.Fprintf(w, "Actual: %d packets (%d bytes) sent in %.6f seconds\n", s.Packets, s.Bytes, sec)
	mbps := rate(float64(s.Bytes)) * 8 / 1e6
	mf := "%.2f"
	if mbps < 1 {
		mf = "%.3f"
	}
	fmt.Fprintf(w, "Rated: %.1f Bps, "+mf+" Mbps, %.2f pps\n", rate(float64(s.Bytes)), mbps, rate(float64(s.Packets)))
	fmt.Fprintf(w, "Flows: %d flows, %.2f fps, %d unique flow packets, %d unique non-flow packets\n",
		s.Flows, rate(float64(s.Flows)), s.FlowPackets, s.NonFlow)
	fmt.Fprintf(w, "Statistics for network device: %s\n", s.Device)
	fmt.Fprintf(w, "\tSuccessful packets:        %d\n", s.Packets)
	fmt.Fprintf(w, "\tFailed packets:            %d\n", s.Failed)
	fmt.Fprintf(w, "\tTruncated packets:         %d\n", s.Truncated)
	fmt.Fprintf(w, "\tRetried packets (ENOBUFS): %d\n", s.NoBufs)
	fmt.Fprintf(w, "\tRetried packets (EAGAIN):  %d\n", s.Again)
}

// Pacer is the schedule: when each frame is due, as an offset from the
// start of the replay.
type Pacer struct {
	o        *Options
	n        uint64        // frames scheduled
	bytes    uint64        // octets scheduled before this frame
	first    time.Time     // capture time of the pass's first frame
	base     time.Duration // the pass's start offset
	last     time.Duration // the last frame's offset
	newPass  bool
	havePass bool
}

// NewPacer returns the schedule of o.
func NewPacer(o Options) (*Pacer, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	return &Pacer{o: &o, newPass: true}, nil
}

// Pass starts a new pass over the file (a loop): with the capture's
// timing it starts where the last one ended.
func (p *Pacer) Pass() { p.newPass = true }

// Due is the offset at which a frame of size octets, captured at ts, is
// due.
func (p *Pacer) Due(ts time.Time, size int) time.Duration {
	var d time.Duration
	switch {
	case p.o.Topspeed:
	case p.o.PPS > 0:
		d = time.Duration(float64(p.n) / p.o.PPS * 1e9)
	case p.o.Mbps > 0:
		d = time.Duration(float64(p.bytes) * 8 / (p.o.Mbps * 1e6) * 1e9)
	default:
		if p.newPass {
			p.first, p.base, p.newPass = ts, p.last, false
		}
		off := ts.Sub(p.first)
		if off < 0 {
			off = 0 // out of order in the file: send at once
		}
		d = p.base + time.Duration(float64(off)/p.o.Multiplier)
		d = max(d, p.last)
	}
	p.n++
	p.bytes += uint64(size)
	p.last = d
	return d
}

type flowKey struct {
	src, dst netip.Addr
	sp, dp   uint16
}

// frameSource yields the frames of one pass.
type frameSource interface {
	next(f *pcap.Frame) error
}

type fileSource struct{ r *pcap.Reader }

func (s fileSource) next(f *pcap.Frame) error { return s.r.Next(f) }

type memFrame struct {
	ts      time.Time
	data    []byte
	origLen int
}

type memSource struct {
	frames []memFrame
	i      int
}

func (s *memSource) next(f *pcap.Frame) error {
	if s.i >= len(s.frames) {
		return io.EOF
	}
	m := s.frames[s.i]
	s.i++
	f.Timestamp, f.Data, f.CapLen, f.OrigLen, f.LinkType = m.ts, m.data, len(m.data), m.origLen, layers.LinkTypeEthernet
	return nil
}

// File replays the capture file name onto sink.
func File(name string, sink Sink, o Options) (Stats, error) {
	if err := o.check(); err != nil {
		return Stats{}, err
	}
	pacer, err := NewPacer(o)
	if err != nil {
		return Stats{}, err
	}
	st := Stats{Device: sink.Name()}
	flows := map[flowKey]bool{}
	var mem []memFrame
	open := func() (frameSource, func(), error) {
		if mem != nil {
			return &memSource{frames: mem}, func() {}, nil
		}
		r, err := pcap.Open(name)
		if err != nil {
			return nil, nil, err
		}
		return fileSource{r}, func() { r.Close() }, nil
	}
	if o.Preload {
		r, err := pcap.Open(name)
		if err != nil {
			return st, err
		}
		var f pcap.Frame
		for {
			if err := r.Next(&f); err != nil {
				r.Close()
				if err != io.EOF {
					return st, err
				}
				break
			}
			if err := checkLink(f.LinkType); err != nil {
				r.Close()
				return st, err
			}
			mem = append(mem, memFrame{ts: f.Timestamp, data: append([]byte(nil), f.Data...), origLen: f.OrigLen})
		}
		if mem == nil {
			mem = []memFrame{}
		}
	}
	var ticker *time.Ticker
	var tick <-chan time.Time
	if o.Stats > 0 && o.StatsOut != nil {
		ticker = time.NewTicker(o.Stats)
		defer ticker.Stop()
		tick = ticker.C
	}
	var f pcap.Frame
	stopped := func() bool {
		select {
		case <-o.Stop:
			return true
		default:
			return false
		}
	}
	b := newBatcher(sink, &st, flows, o.Preload)
	b.now = o.now
	for pass := 0; pass < o.Loop; pass++ {
		src, closeSrc, err := open()
		if err != nil {
			return st, err
		}
		pacer.Pass()
		for {
			if err := src.next(&f); err != nil {
				closeSrc()
				if err == io.EOF {
					break
				}
				b.flush()
				return st.finish(o), err
			}
			if err := checkLink(f.LinkType); err != nil {
				closeSrc()
				b.flush()
				return st.finish(o), err
			}
			due := pacer.Due(f.Timestamp, len(f.Data))
			if st.Start.IsZero() {
				st.Start = o.now()
				if tick != nil {
					fmt.Fprintf(o.StatsOut, "Test start: %s ...\n", st.Start.Format("2006-01-02 15:04:05.000000"))
				}
			}
			now := o.now().Sub(st.Start)
			if o.Duration > 0 && (due >= o.Duration || now >= o.Duration) ||
				o.Limit > 0 && st.Packets+st.Failed+uint64(b.len()) >= o.Limit || stopped() {
				closeSrc()
				b.flush()
				return st.finish(o), nil
			}
			if due > now {
				// Nothing more is due: send what is, then wait.
				b.flush()
				o.sleep(due - now)
			}
			b.add(&f)
			if b.len() == batchMax {
				b.flush()
			}
			select {
			case <-tick:
				b.flush()
				st.Report(o.StatsOut)
			default:
			}
		}
	}
	b.flush()
	return st.finish(o), nil
}

// BatchSink sends several frames per call (sendmmsg).
type BatchSink interface {
	Sink
	// SendBatch sends frames in order and says how many went; a frame
	// the kernel refuses stops it with that frame's error.
	SendBatch(frames [][]byte) (sent int, r Retries, err error)
}

// batchMax is the most frames sent in one call.
const batchMax = 64

// batcher gathers the frames that are due and sends them together.
type batcher struct {
	sink   Sink
	bs     BatchSink
	st     *Stats
	flows  map[flowKey]bool
	alias  bool // frames stay valid (preloaded): no copy
	frames [][]byte
	meta   []frameMeta
	bufs   [][]byte
	pkt    pcap.Packet
	now    func() time.Time
}

type frameMeta struct {
	truncated, flow bool
	key             flowKey
}

func newBatcher(sink Sink, st *Stats, flows map[flowKey]bool, alias bool) *batcher {
	b := &batcher{sink: sink, st: st, flows: flows, alias: alias, bufs: make([][]byte, batchMax), now: time.Now}
	b.bs, _ = sink.(BatchSink)
	return b
}

func (b *batcher) len() int { return len(b.frames) }

func (b *batcher) add(f *pcap.Frame) {
	data := f.Data
	if !b.alias {
		i := len(b.frames)
		b.bufs[i] = append(b.bufs[i][:0], f.Data...)
		data = b.bufs[i]
	}
	m := frameMeta{truncated: f.OrigLen > f.CapLen}
	if pcap.DecodeTCP(f.LinkType, data, &b.pkt) == nil {
		m.flow, m.key = true, flowKey{b.pkt.Src, b.pkt.Dst, b.pkt.SrcPort, b.pkt.DstPort}
	}
	b.frames = append(b.frames, data)
	b.meta = append(b.meta, m)
}

func (b *batcher) account(i int, err error) {
	st := b.st
	if err != nil {
		st.Failed++
		return
	}
	m := b.meta[i]
	st.Packets++
	st.Bytes += uint64(len(b.frames[i]))
	if m.truncated {
		st.Truncated++
	}
	if !m.flow {
		st.NonFlow++
		return
	}
	st.FlowPackets++
	if !b.flows[m.key] {
		b.flows[m.key] = true
		st.Flows++
	}
}

func (b *batcher) flush() {
	if len(b.frames) == 0 {
		return
	}
	for i := 0; i < len(b.frames); {
		if b.bs == nil {
			r, err := b.sink.Send(b.frames[i])
			b.st.NoBufs, b.st.Again = b.st.NoBufs+r.NoBufs, b.st.Again+r.Again
			b.account(i, err)
			i++
			continue
		}
		n, r, err := b.bs.SendBatch(b.frames[i:])
		b.st.NoBufs, b.st.Again = b.st.NoBufs+r.NoBufs, b.st.Again+r.Again
		for j := i; j < i+n; j++ {
			b.account(j, nil)
		}
		i += n
		if err != nil {
			b.account(i, err)
			i++
		}
	}
	b.st.End = b.now()
	b.frames, b.meta = b.frames[:0], b.meta[:0]
}

func (s Stats) finish(o Options) Stats {
	if s.End.IsZero() {
		s.End = s.Start
	}
	if o.Stats > 0 && o.StatsOut != nil && !s.Start.IsZero() {
		fmt.Fprintf(o.StatsOut, "Test complete: %s\n", s.End.Format("2006-01-02 15:04:05.000000"))
	}
	return s
}

func checkLink(lt layers.LinkType) error {
	if lt != layers.LinkTypeEthernet {
		return fmt.Errorf("replay: frames of link type %v cannot go onto an Ethernet interface", lt)
	}
	return nil
}
