// Package capture is the capture input every front end takes (iwdump,
// iwtui, iwreplay): files (-r, merged in time order), a live interface (-i
// with -s, -p, -B; -D lists them), the capture filter (a pcap-filter
// expression after the flags, or -F FILE; -d and -ddd print its program),
// and --decode-as. One set of flags, parsed, checked and compiled here, so
// the same arguments mean the same thing, and fail the same way, in every
// command. The sources themselves are analyze's (analyze.OpenFiles,
// analyze.OpenLive, analyze.Filtered).
package capture

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/pcap"
	pcapbpf "github.com/iwkit/iwkit/pcap/bpf"
	"github.com/iwkit/iwkit/ulp"
	"golang.org/x/net/bpf"
)

// Flags selects the flags a command registers.
type Flags uint

const (
	Read     Flags = 1 << iota // -r FILE (repeatable)
	Live                       // -i IFACE, -D, -s, -p, -B
	Filter                     // -F FILE, -d, -ddd and the expression after the flags
	DecodeAs                   // --decode-as PORT[=proto]
	All      = Read | Live | Filter | DecodeAs
)

// Options are the capture input a command was given.
type Options struct {
	Files      []string // -r: merged in time order
	Iface      string   // -i
	List       bool     // -D
	Snaplen    int      // -s (0: pcap.MaxSnaplen)
	NoPromisc  bool     // -p
	BufferKiB  int      // -B
	FilterFile string   // -F
	PrintProg  bool     // -d
	PrintDDD   bool     // -ddd
	// The capture filter: Expr (the arguments after the flags, or an
	// expression read with -F) or Program (a tcpdump -ddd program read
	// with -F, or Expr compiled for the interface of -i).
	Expr    string
	Program []bpf.RawInstruction
	// Ports are TCP ports taken for iWARP (--decode-as PORT); DecodeAs
	// also forces a storage protocol on some of them (PORT=proto).
	Ports    []uint16
	DecodeAs map[uint16]ulp.Proto

	flags      Flags
	fileFilter *pcapbpf.Filter // compiled once, by Finish
}

// Register adds the flags of which to fs.
func (o *Options) Register(fs *flag.FlagSet, which Flags) {
	o.flags = which
	if which&Read != 0 {
		fs.Func("r", "read frames from `FILE` (pcap or pcapng, may be gzip-compressed; - for stdin); repeat to merge several files in time order", func(v string) error {
			o.Files = append(o.Files, v)
			return nil
		})
	}
	if which&Live != 0 {
		fs.StringVar(&o.Iface, "i", "", "capture live from network interface `IFACE` (Linux; needs CAP_NET_RAW; -D lists them; any: all interfaces, Linux cooked frames)")
		fs.BoolVar(&o.List, "D", false, "list the network interfaces -i can capture on, and exit")
		fs.IntVar(&o.Snaplen, "s", 0, "keep at most `SNAPLEN` octets of each captured frame (0: 262144)")
		fs.BoolVar(&o.NoPromisc, "p", false, "do not put the interface into promiscuous mode")
		fs.IntVar(&o.BufferKiB, "B", pcap.DefaultBufferSize>>10, "kernel capture buffer size in `KiB`")
	}
	if which&Filter != 0 {
		fs.StringVar(&o.FilterFile, "F", "", "read the capture filter from `FILE`: a BPF program in tcpdump -ddd format, or a filter expression (# comments)")
		fs.BoolVar(&o.PrintProg, "d", false, "print the capture filter's BPF program in readable form and exit")
		fs.BoolVar(&o.PrintDDD, "ddd", false, "print the capture filter's BPF program in tcpdump -ddd format (what -F reads) and exit")
	}
	if which&DecodeAs != 0 {
		fs.Func("decode-as", "treat TCP `PORT` as iWARP even where content detection hesitates; PORT=nvme|iser|smbd|rpcrdma also forces that storage protocol on it (repeatable)", o.addDecodeAs)
	}
}

func (o *Options) addDecodeAs(v string) error {
	v, proto, hasProto := strings.Cut(v, "=")
	p, err := strconv.ParseUint(v, 10, 16)
	if err != nil {
		return fmt.Errorf("bad port %q", v)
	}
	o.Ports = append(o.Ports, uint16(p))
	if hasProto { // the storage protocol (package ulp)
		up, ok := ulp.ParseProto(proto)
		if !ok {
			return fmt.Errorf("unknown protocol %q (want one of %s)", proto, strings.Join(ulp.Protos(), ", "))
		}
		if o.DecodeAs == nil {
			o.DecodeAs = map[uint16]ulp.Proto{}
		}
		o.DecodeAs[uint16(p)] = up
	}
	return nil
}

// UsageError is a mistake in the flags or arguments: exit status 2
// (package exitcode) in every command.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, a ...any) error { return &UsageError{fmt.Sprintf(format, a...)} }

// IsUsage reports whether err is a usage mistake rather than a failure to
// read or capture.
func IsUsage(err error) bool {
	var ue *UsageError
	var fe *pcapbpf.Error
	return errors.As(err, &ue) || errors.As(err, &fe)
}

// Finish checks the options and takes the capture filter from args (the
// arguments left after the flags) or -F, and compiles it, once: for the
// interface with -i (in the kernel's form, except on "any", where it runs
// in user space on the cooked frames), else for the frames of the files.
// -D, -d and -ddd print to stdout; done then says the command is over.
// Errors are worded for the user (see Message); IsUsage tells a usage
// mistake (exit 2) from a failure (exit 1).
func (o *Options) Finish(args []string, stdout io.Writer) (done bool, err error) {
	if o.List {
		return true, listInterfaces(stdout)
	}
	for _, a := range args {
		if len(a) > 1 && a[0] == '-' && !strings.ContainsAny(a, " \t") {
			return false, usagef("flags go before the capture filter: %q comes after %q", a, args[0])
		}
	}
	if len(args) > 0 && o.flags&Filter == 0 {
		return false, usagef("unexpected arguments %q", strings.Join(args, " "))
	}
	o.Expr = strings.Join(args, " ")
	switch {
	case o.Iface != "" && len(o.Files) > 0:
		return false, usagef("-i and -r both given: capture live or read files, not both")
	case o.Snaplen < 0 || o.Snaplen > pcap.MaxSnaplen:
		return false, usagef("-s takes 0 to %d, not %d", pcap.MaxSnaplen, o.Snaplen)
	case o.flags&Live != 0 && o.BufferKiB <= 0:
		return false, usagef("-B takes a size in KiB above 0, not %d", o.BufferKiB)
	}
	if o.FilterFile != "" {
		if o.Expr != "" {
			return false, usagef("a capture filter is given both with -F and as arguments (%q)", o.Expr)
		}
		b, err := os.ReadFile(o.FilterFile)
		if err != nil {
			return false, fmt.Errorf("-F: %w", err)
		}
		if isProgramText(string(b)) {
			if o.Program, err = pcapbpf.ParseProgram(string(b)); err != nil {
				return false, usagef("-F %s: %v", o.FilterFile, err)
			}
		} else {
			o.Expr = strings.Join(strings.Fields(stripComments(string(b))), " ")
		}
	}
	if o.PrintProg || o.PrintDDD {
		return true, o.printProgram(stdout)
	}
	if len(o.Files) == 0 && o.Iface == "" {
		return false, usagef("no input: give -r FILE or -i IFACE")
	}
	if o.Iface != "" {
		if o.Program == nil && o.Expr != "" {
			prog, err := o.compile()
			if err != nil {
				return false, err
			}
			o.Program = prog
		}
		return false, nil
	}
	switch {
	case o.Program != nil:
		o.fileFilter, err = pcapbpf.NewProgramFilter(o.Program)
		if err != nil {
			err = usagef("-F %s: %v", o.FilterFile, err)
		}
	case o.Expr != "":
		o.fileFilter, err = pcapbpf.NewFilter(o.Expr)
	}
	return false, err
}

// FileFilter is the capture filter for the frames of files (nil: none),
// compiled by Finish. It is safe for concurrent use: every pass over the
// frames shares it.
func (o *Options) FileFilter() *pcapbpf.Filter { return o.fileFilter }

// KernelFilter says whether the capture filter of iface runs in the
// kernel (and is compiled in the kernel's form). On "any" it runs in user
// space, on the cooked frames (as libpcap does there).
func KernelFilter(iface string) bool { return iface != pcap.AnyInterface }

// compile compiles Expr for the interface of -i, or for Ethernet frames
// in a file (what -d prints without -i).
func (o *Options) compile() ([]bpf.RawInstruction, error) {
	lt, kernel := layers.LinkTypeEthernet, false
	if o.Iface != "" {
		var err error
		if lt, err = pcap.InterfaceLinkType(o.Iface); err != nil {
			return nil, err
		}
		kernel = KernelFilter(o.Iface)
	}
	return pcapbpf.Compile(o.Expr, lt, pcapbpf.Options{Kernel: kernel, Snaplen: o.Snaplen})
}

// printProgram is -d and -ddd: the capture filter's program.
func (o *Options) printProgram(w io.Writer) error {
	prog := o.Program
	if prog == nil {
		var err error
		if prog, err = o.compile(); err != nil {
			return err
		}
	}
	if o.PrintDDD {
		_, err := fmt.Fprint(w, pcapbpf.FormatProgram(prog))
		return err
	}
	insns, _ := bpf.Disassemble(prog)
	for i, ins := range insns {
		fmt.Fprintf(w, "(%03d) %v\n", i, ins)
	}
	return nil
}

// LiveConfig is the live capture of -i, -s, -p, -B and the compiled
// filter; the caller adds its own tee, queue and reporting settings.
func (o *Options) LiveConfig() analyze.LiveConfig {
	return analyze.LiveConfig{Iface: o.Iface, Snaplen: o.Snaplen, Promisc: !o.NoPromisc,
		BufferSize: o.BufferKiB << 10, Filter: o.Program, Decode: true}
}

// OpenFiles opens the files of -r, merged in time order, through the
// capture filter, with what passes it written to tee (Path "": nowhere).
// total is the files' size.
func (o *Options) OpenFiles(tee analyze.Tee) (src analyze.Source, total int64, err error) {
	src, total, err = analyze.OpenFiles(o.Files)
	if err != nil {
		return nil, 0, err
	}
	return analyze.Filtered(src, o.fileFilter, tee), total, nil
}

// isProgramText tells a -ddd program (a count, then lines of numbers) from
// a filter expression in a -F file: its first line that is not a comment
// is a single number.
func isProgramText(s string) bool {
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) != 1 {
			return false
		}
		_, err := strconv.ParseUint(f[0], 10, 32)
		return err == nil
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
