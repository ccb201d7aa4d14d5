package main

// Live capture (-i), capture filters (a pcap-filter expression after the
// flags, or -F FILE) and writing what passes them (-w, with tcpdump's
// rotation -C/-G/-W). The capture loop runs on its own goroutine: it reads
// the kernel ring, writes every frame to -w at once, and hands a copy to the
// decoder (dump, on the caller's goroutine) through a buffered channel. A
// slow decoder or terminal never stalls the ring: when the channel is full
// the frame is still written but not decoded, and the lag is reported.

import (
	"bufio"
	"errors"
	"flag"
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

// liveOptions are the flags of this file.
type liveOptions struct {
	iface      string
	list       bool
	snaplen    int
	noPromisc  bool
	bufferKiB  int
	write      string
	wformat    string
	rotateSize string
	rotateSecs int
	maxFiles   int
	filterFile string
	printProg  bool
	printDDD   bool

	expr string               // the capture filter expression (arguments after the flags)
	prog []bpf.RawInstruction // or a program read with -F
	out  *bufio.Writer        // the decoder's output, flushed while the capture is idle
}

// liveFlags registers the flags of live capture, capture filters and -w.
func liveFlags(fs *flag.FlagSet, o *options) {
	l := &o.live
	fs.StringVar(&l.iface, "i", "", "capture live from network interface `IFACE` (Linux; needs CAP_NET_RAW; -D lists them; any: all interfaces, Linux cooked frames)")
	fs.BoolVar(&l.list, "D", false, "list the network interfaces -i can capture on, and exit")
	fs.IntVar(&l.snaplen, "s", 0, "keep at most `SNAPLEN` octets of each captured frame (0: 262144)")
	fs.BoolVar(&l.noPromisc, "p", false, "do not put the interface into promiscuous mode")
	fs.IntVar(&l.bufferKiB, "B", pcap.DefaultBufferSize>>10, "kernel capture buffer size in `KiB`")
	fs.StringVar(&l.write, "w", "", "write the frames that pass the capture filter to `FILE` (pcap, or pcapng if FILE ends in .pcapng; - for standard output)")
	fs.StringVar(&l.wformat, "format", "", "capture file `format` for -w: pcap or pcapng (default: from the -w file name)")
	fs.StringVar(&l.rotateSize, "C", "", "with -w, start a new file when the current one exceeds `SIZE` million octets (suffix k, m, g: KiB, MiB, GiB); files are named FILE, FILE1, FILE2, ...")
	fs.IntVar(&l.rotateSecs, "G", 0, "with -w, start a new file every `SECONDS`; FILE may hold strftime(3) conversions such as %Y%m%d-%H%M%S")
	fs.IntVar(&l.maxFiles, "W", 0, "with -C, keep at most `COUNT` files, reusing their names in a ring; with -G alone, stop after COUNT files")
	fs.StringVar(&l.filterFile, "F", "", "read the capture filter from `FILE`: a BPF program in tcpdump -ddd format, or a filter expression")
	fs.BoolVar(&l.printProg, "d", false, "print the capture filter's BPF program in readable form and exit")
	fs.BoolVar(&l.printDDD, "ddd", false, "print the capture filter's BPF program in tcpdump -ddd format (what -F reads) and exit")
}

// liveSetup checks these flags, reads the capture filter from the
// arguments left after the flags (or -F), and handles -D, -d and -ddd.
// done says the command is over, with exit code code.
func liveSetup(o *options, args []string, stdout, stderr io.Writer) (code int, done bool) {
	l := &o.live
	fail := func(format string, a ...any) (int, bool) {
		fmt.Fprintf(stderr, "iwdump: "+format+"\n", a...)
		return exitError, true
	}
	if l.list {
		if err := listInterfaces(stdout); err != nil {
			return fail("%v", err)
		}
		return exitOK, true
	}
	for _, a := range args {
		if len(a) > 1 && a[0] == '-' && !strings.ContainsAny(a, " \t") {
			return fail("flags go before the capture filter: %q comes after %q", a, args[0])
		}
	}
	l.expr = strings.Join(args, " ")
	if l.filterFile != "" {
		if l.expr != "" {
			return fail("a capture filter is given both with -F and as arguments (%q)", l.expr)
		}
		b, err := os.ReadFile(l.filterFile)
		if err != nil {
			return fail("-F: %v", err)
		}
		if isProgramText(string(b)) {
			prog, err := pcapbpf.ParseProgram(string(b))
			if err != nil {
				return fail("-F %s: %v", l.filterFile, err)
			}
			l.prog = prog
		} else {
			l.expr = strings.Join(strings.Fields(stripComments(string(b))), " ")
		}
	}
	switch {
	case l.iface != "" && len(o.files) > 0:
		return fail("-i and -r both given: capture live or read files, not both")
	case l.snaplen < 0 || l.snaplen > pcap.MaxSnaplen:
		return fail("-s takes 0 to %d, not %d", pcap.MaxSnaplen, l.snaplen)
	case l.bufferKiB <= 0:
		return fail("-B takes a size in KiB above 0, not %d", l.bufferKiB)
	case l.wformat != "" && l.wformat != "pcap" && l.wformat != "pcapng":
		return fail("--format takes pcap or pcapng, not %q", l.wformat)
	case l.write == "" && (l.rotateSize != "" || l.rotateSecs != 0 || l.maxFiles != 0 || l.wformat != ""):
		return fail("-C, -G, -W and --format go with -w FILE")
	case l.rotateSecs < 0 || l.maxFiles < 0:
		return fail("-G and -W take counts above 0")
	case l.write == "-" && len(o.stats) > 0:
		return fail("-w - and -z would both write to standard output")
	}
	if l.rotateSize != "" {
		if _, err := pcap.ParseFileSize(l.rotateSize); err != nil {
			return fail("-C: %v", err)
		}
	}
	if l.write == "-" {
		o.quiet = true // standard output carries the capture file
	}
	if l.printProg || l.printDDD {
		prog, err := l.program()
		if err != nil {
			return fail("%s", filterMessage(err))
		}
		if l.printDDD {
			fmt.Fprint(stdout, pcapbpf.FormatProgram(prog))
		} else {
			insns, _ := bpf.Disassemble(prog)
			for i, ins := range insns {
				fmt.Fprintf(stdout, "(%03d) %v\n", i, ins)
			}
		}
		return exitOK, true
	}
	return 0, false
}

// isProgramText tells a -ddd program (a count, then lines of numbers) from
// a filter expression in a -F file.
func isProgramText(s string) bool {
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) != 1 {
			return false
		}
		for _, c := range f[0] {
			if c < '0' || c > '9' {
				return false
			}
		}
		return true
	}
	return false
}

// stripComments drops #-comments from a filter file, as tcpdump does.
func stripComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// program is the capture filter for -d/-ddd: for the interface (kernel
// form) with -i, else for Ethernet frames in a file.
func (l *liveOptions) program() ([]bpf.RawInstruction, error) {
	if l.prog != nil {
		return l.prog, nil
	}
	lt, kernel := layers.LinkTypeEthernet, false
	if l.iface != "" {
		var err error
		if lt, err = pcap.InterfaceLinkType(l.iface); err != nil {
			return nil, err
		}
		kernel = kernelFilter(l.iface)
	}
	return pcapbpf.Compile(l.expr, lt, pcapbpf.Options{Kernel: kernel, Snaplen: l.snaplen})
}

// kernelFilter says whether the capture filter of iface runs in the
// kernel (and is compiled in the kernel form). On "any" it runs in user
// space, on the cooked frames.
func kernelFilter(iface string) bool { return iface != pcap.AnyInterface }

// filterMessage words a capture filter error for the user; for syntax the
// compiler does not cover it says how to use tcpdump's compiler instead.
func filterMessage(err error) string {
	var pe *pcap.PermissionError
	switch {
	case errors.Is(err, pcapbpf.ErrUnsupported):
		return fmt.Sprintf("%v\n  compile it with tcpdump and load the program: tcpdump -ddd 'EXPRESSION' > filter.bpf; iwdump -F filter.bpf ...", err)
	case errors.As(err, &pe):
		exe, xerr := os.Executable()
		if xerr != nil {
			exe = "iwdump"
		}
		return fmt.Sprintf("%v\n  run iwdump as root, or give the binary the capability: sudo setcap cap_net_raw,cap_net_admin=eip %s", err, exe)
	case errors.Is(err, pcap.ErrNoSuchInterface):
		return fmt.Sprintf("%v (iwdump -D lists the interfaces)", err)
	}
	return err.Error()
}

func listInterfaces(w io.Writer) error {
	ifs, err := pcap.Interfaces()
	if err != nil {
		return err
	}
	for i, it := range ifs {
		note := ""
		if it.LinkType == 0 {
			note = " (link type not supported)"
		}
		if it.Name == pcap.AnyInterface && it.Index == 0 {
			note = " (Pseudo-device that captures on all interfaces)" + note
			fmt.Fprintf(w, "%d.%s%s %s\n", i+1, it.Name, note, it.Description())
			continue
		}
		fmt.Fprintf(w, "%d.%s %s%s\n", i+1, it.Name, it.Description(), note)
	}
	return nil
}

// openInput opens what -r or -i names, with the capture filter and -w.
func openInput(o *options, stderr io.Writer) (frameSource, int64, error) {
	l := &o.live
	if l.iface != "" {
		src, err := startLive(o, stderr)
		if err != nil {
			return nil, 0, errors.New(filterMessage(err))
		}
		return src, 0, nil
	}
	// The filter first: a mistake in it shows before any file is read.
	var ff *pcapbpf.Filter
	var err error
	if l.prog != nil {
		ff, err = pcapbpf.NewProgramFilter(l.prog)
	} else if l.expr != "" {
		ff, err = pcapbpf.NewFilter(l.expr)
	}
	if err != nil {
		return nil, 0, errors.New(filterMessage(err))
	}
	src, total, err := openSources(o.files)
	if err != nil {
		return nil, 0, err
	}
	if ff == nil && l.write == "" {
		return src, total, nil
	}
	return &filteredSource{src: src, ff: ff, opts: o, first: true, stderr: stderr}, total, nil
}

// rotateOptions are -w's file options for frames of link type lt.
func (l *liveOptions) rotateOptions(lt layers.LinkType, snaplen int) pcap.RotateOptions {
	ro := pcap.RotateOptions{Format: pcap.Format(l.wformat), LinkType: lt, Snaplen: uint32(snaplen),
		Interval: time.Duration(l.rotateSecs) * time.Second, MaxFiles: l.maxFiles}
	if l.rotateSize != "" {
		ro.FileSize, _ = pcap.ParseFileSize(l.rotateSize)
	}
	return ro
}

// filteredSource applies the capture filter to frames read from files and
// writes those that pass to -w. Frames keep their numbers in the file.
type filteredSource struct {
	src    frameSource
	ff     *pcapbpf.Filter
	w      *pcap.RotatingWriter
	opts   *options
	first  bool
	done   bool
	stderr io.Writer
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
				return errors.New(filterMessage(fmt.Errorf("frame %d: %w", f.Number, err)))
			}
			if !ok {
				continue
			}
		}
		if s.first && s.opts.live.write != "" {
			// The file's link type is known with its first frame.
			s.first = false
			w, err := pcap.CreateRotating(s.opts.live.write, s.opts.live.rotateOptions(f.LinkType, pcap.MaxSnaplen))
			if err != nil {
				return fmt.Errorf("-w: %w", err)
			}
			s.w = w
		}
		if s.w != nil {
			if err := s.w.WriteFrame(f.Timestamp, f.Data, f.OrigLen); err != nil {
				if errors.Is(err, pcap.ErrFileLimit) {
					fmt.Fprintf(s.stderr, "iwdump: -w: maximum file limit reached: %d\n", s.opts.live.maxFiles)
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
		if err = s.w.Close(); err != nil {
			fmt.Fprintf(s.stderr, "iwdump: -w: %v\n", err)
		}
	}
	s.src.Close()
	return err
}

// --- live ---

// Bounds of the queue between capture and decoder: beyond either, frames
// are written to -w but not decoded. (Variables for tests.)
var (
	liveQueueFrames       = 1 << 15
	liveQueueOctets int64 = 128 << 20
	lagReportEvery        = time.Second
)

// liveFrame is a captured frame copied out of the kernel ring.
type liveFrame struct {
	fr  pcap.Frame
	buf []byte
}

// liveSource is the decoder's end of a live capture.
type liveSource struct {
	l      *pcap.Live
	o      *options
	stderr io.Writer
	ch     chan *liveFrame
	pool   sync.Pool
	cur    *liveFrame
	queued atomic.Int64 // octets in the channel
	w      *pcap.RotatingWriter
	sig    chan os.Signal

	captured  atomic.Uint64
	undecoded atomic.Uint64
	done      chan struct{} // closed when the capture loop has ended
	lagDone   chan struct{} // closed when watchLag has ended (it writes to stderr)
	err       error         // why the capture loop ended, when not Stop
	finished  sync.Once
	summary   string
	decode    bool
}

// liveHook, when set (tests), is called once the capture runs.
var liveHook func(*pcap.Live)

func startLive(o *options, stderr io.Writer) (*liveSource, error) {
	l := &o.live
	lt, err := pcap.InterfaceLinkType(l.iface)
	if err != nil {
		return nil, err
	}
	prog := l.prog
	if prog == nil && l.expr != "" {
		if prog, err = pcapbpf.Compile(l.expr, lt, pcapbpf.Options{Kernel: kernelFilter(l.iface), Snaplen: l.snaplen}); err != nil {
			return nil, err
		}
	}
	lc, err := pcap.OpenLive(l.iface, pcap.LiveOptions{Snaplen: l.snaplen, Promisc: !l.noPromisc,
		BufferSize: l.bufferKiB << 10, Filter: prog})
	if err != nil {
		return nil, err
	}
	s := &liveSource{l: lc, o: o, stderr: stderr, ch: make(chan *liveFrame, liveQueueFrames),
		done: make(chan struct{}), lagDone: make(chan struct{}), decode: l.write != "-"}
	if l.write != "" {
		s.w, err = pcap.CreateRotating(l.write, l.rotateOptions(lc.LinkType(), lc.Snaplen()))
		if err != nil {
			lc.Close()
			return nil, fmt.Errorf("-w: %w", err)
		}
	}
	fmt.Fprintf(stderr, "iwdump: listening on %s, link-type %s, snapshot length %d bytes, %s\n",
		l.iface, linkTypeName(lc.LinkType()), lc.Snaplen(), lc.Method())
	// Ctrl-C (or SIGTERM) ends the capture cleanly: what the kernel has
	// is drained, written and decoded, then the summary is printed.
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
	if liveHook != nil {
		liveHook(lc)
	}
	return s, nil
}

func linkTypeName(lt layers.LinkType) string {
	switch lt {
	case layers.LinkTypeEthernet:
		return "EN10MB (Ethernet)"
	case layers.LinkTypeRaw:
		return "RAW (Raw IP)"
	case layers.LinkTypeLinuxSLL:
		return "LINUX_SLL (Linux cooked v1)"
	}
	return lt.String()
}

// capture is the capture loop: kernel → -w → decoder queue.
func (s *liveSource) capture() {
	defer close(s.done)
	defer close(s.ch)
	count := uint64(s.o.count)
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
		if s.w != nil {
			if err := s.w.WriteFrame(fr.Timestamp, fr.Data, fr.OrigLen); err != nil {
				if errors.Is(err, pcap.ErrFileLimit) {
					fmt.Fprintf(s.stderr, "iwdump: -w: maximum file limit reached: %d\n", s.o.live.maxFiles)
				} else {
					s.err = fmt.Errorf("-w: %w", err)
				}
				s.l.Stop()
				return
			}
		}
		n := s.captured.Add(1)
		if s.decode {
			s.enqueue(&fr)
		}
		if count > 0 && n >= count {
			s.l.Stop()
			return
		}
	}
}

// enqueue hands a copy of fr to the decoder, unless the queue is full.
func (s *liveSource) enqueue(fr *pcap.Frame) {
	if len(s.ch) == cap(s.ch) || s.queued.Load()+int64(len(fr.Data)) > liveQueueOctets {
		s.undecoded.Add(1)
		return
	}
	lf, _ := s.pool.Get().(*liveFrame)
	if lf == nil {
		lf = &liveFrame{}
	}
	if cap(lf.buf) < len(fr.Data) {
		lf.buf = make([]byte, len(fr.Data), max(len(fr.Data), 2048))
	}
	lf.buf = append(lf.buf[:0], fr.Data...)
	lf.fr = *fr
	lf.fr.Data = lf.buf
	s.queued.Add(int64(len(lf.buf)))
	s.ch <- lf // cannot block: this goroutine is the only sender
}

// watchLag reports, at most once a second, that decoding fell behind.
func (s *liveSource) watchLag() {
	defer close(s.lagDone)
	t := time.NewTicker(lagReportEvery)
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
					where = "; all are in " + s.o.live.write
				}
				fmt.Fprintf(s.stderr, "iwdump: decoding is behind the capture: %d frames not decoded so far%s\n", n, where)
				reported = n
			}
		}
	}
}

// Next gives the decoder the next captured frame; while none is waiting
// the decoder's output is flushed, so a quiet link shows what it had.
func (s *liveSource) Next(f *pcap.Frame) error {
	if s.cur != nil {
		s.queued.Add(-int64(len(s.cur.buf)))
		s.pool.Put(s.cur)
		s.cur = nil
	}
	var lf *liveFrame
	select {
	case lf = <-s.ch:
	default:
		if s.o.live.out != nil {
			s.o.live.out.Flush()
		}
		lf = <-s.ch
	}
	if lf == nil {
		<-s.done
		if s.err != nil {
			return s.err
		}
		return io.EOF
	}
	s.cur = lf
	*f = lf.fr
	return nil
}

// finish stops the capture (if it still runs), waits for the loop, closes
// -w and the socket, prints tcpdump's summary on stderr and returns the
// statistics line for -z.
func (s *liveSource) finish() string {
	s.finished.Do(func() {
		s.l.Stop()
		for range s.ch { // the decoder has stopped reading (-c): let the loop end
		}
		<-s.done
		<-s.lagDone // its last report comes before the summary
		signal.Stop(s.sig)
		if s.w != nil {
			if err := s.w.Close(); err != nil {
				fmt.Fprintf(s.stderr, "iwdump: -w: %v\n", err)
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
				fmt.Fprintf(&b, " (all are in %s)", s.o.live.write)
			}
			b.WriteString("\n")
		}
		fmt.Fprint(s.stderr, b.String())
		s.summary = fmt.Sprintf("live capture on %s (%s): %d frames captured, %d received by filter, %d dropped by kernel, %d not decoded",
			s.o.live.iface, s.l.Method(), st.Captured, st.Received, st.Dropped, s.undecoded.Load())
		if s.w != nil {
			s.summary += fmt.Sprintf(", %d written to %d file(s)", s.w.Written(), s.w.Files())
		}
	})
	return s.summary
}

func (s *liveSource) Close() error {
	s.finish()
	if s.err != nil {
		return s.err
	}
	return nil
}

// captureReport ends a live capture and returns its statistics line for
// the -z tables ("" for files).
func captureReport(src frameSource) string {
	if s, ok := src.(*liveSource); ok {
		return s.finish()
	}
	return ""
}
