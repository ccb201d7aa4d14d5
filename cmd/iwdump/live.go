package main

// The flags of live capture (-i), capture filters (a pcap-filter expression
// after the flags, or -F FILE) and writing what passes them (-w, with
// tcpdump's rotation -C/-G/-W). The sources themselves are analyze's
// (analyze.OpenLive, analyze.Filtered).

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/analyze"
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
	fs.Func("G", "with -w, start a new file every `SECONDS`; FILE may hold strftime(3) conversions such as %Y%m%d-%H%M%S. -G fields lists the fields of -e, -Y and the export, as tshark -G fields does", func(v string) error {
		if v == "fields" {
			o.glossary = v
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("-G takes SECONDS or fields, not %q", v)
		}
		l.rotateSecs = n
		return nil
	})
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
		o.print.Quiet = true // standard output carries the capture file
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

// openInput opens what -r or -i names, with the capture filter and -w;
// out is flushed while a live capture is idle.
func openInput(o *options, out *bufio.Writer, stderr io.Writer) (analyze.Source, int64, error) {
	l := &o.live
	tee := analyze.Tee{Path: l.write, Rotate: l.rotateOptions(), Warn: warner(stderr)}
	if l.iface != "" {
		src, err := startLive(o, tee, out, stderr)
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
	src, total, err := analyze.OpenFiles(o.files)
	if err != nil {
		return nil, 0, err
	}
	return analyze.Filtered(src, ff, tee), total, nil
}

// rotateOptions are -w's file options.
func (l *liveOptions) rotateOptions() pcap.RotateOptions {
	ro := pcap.RotateOptions{Format: pcap.Format(l.wformat),
		Interval: time.Duration(l.rotateSecs) * time.Second, MaxFiles: l.maxFiles}
	if l.rotateSize != "" {
		ro.FileSize, _ = pcap.ParseFileSize(l.rotateSize)
	}
	return ro
}

// Live capture tuning, for tests: the queue between capture and decoder
// and the decoder's share of the ring (0: analyze's defaults), how often
// lag is reported, and a hook that sees the capture once it runs.
var (
	liveQueueFrames int
	liveQueueOctets int64
	liveRingShare   int
	lagReportEvery  time.Duration
	liveHook        func(*pcap.Live)
)

// warner prints the library's warnings on stderr, as iwdump's.
func warner(stderr io.Writer) func(string) {
	return func(msg string) { fmt.Fprintf(stderr, "iwdump: %s\n", msg) }
}

func startLive(o *options, tee analyze.Tee, out *bufio.Writer, stderr io.Writer) (*analyze.Live, error) {
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
	src, err := analyze.OpenLive(analyze.LiveConfig{Iface: l.iface, Snaplen: l.snaplen, Promisc: !l.noPromisc,
		BufferSize: l.bufferKiB << 10, Filter: prog, Tee: tee, Decode: l.write != "-", Count: o.count,
		Warn: warner(stderr), Idle: func() { out.Flush() },
		QueueFrames: liveQueueFrames, QueueOctets: liveQueueOctets, RingShare: liveRingShare, LagEvery: lagReportEvery, Started: liveHook})
	if err != nil {
		return nil, err
	}
	lc := src.Capture()
	fmt.Fprintf(stderr, "iwdump: listening on %s, link-type %s, snapshot length %d bytes, %s\n",
		l.iface, linkTypeName(lc.LinkType()), lc.Snaplen(), lc.Method())
	return src, nil
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
