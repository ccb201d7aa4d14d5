// Command iwtui is the terminal inspector of iWARP captures: the PDU list,
// the field tree and the octets of a capture file or a live interface,
// with findings, RDMA operations, connections, STags and an I/O graph a
// key away. See the "iwtui" section of README.md for keys, flags and exit
// codes.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/pcap"
	pcapbpf "github.com/iwkit/iwkit/pcap/bpf"
	"github.com/iwkit/iwkit/tui"
	"golang.org/x/net/bpf"
	"golang.org/x/term"
)

// Exit codes.
const (
	exitOK       = 0
	exitError    = 1 // the capture cannot be opened or read
	exitUsage    = 2 // bad flags or filters
	exitNotATerm = 3 // standard output is not a terminal
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout *os.File, stderr io.Writer) int {
	fs := flag.NewFlagSet("iwtui", flag.ContinueOnError)
	fs.SetOutput(stderr)
	iface := fs.String("i", "", "capture live from network interface `IFACE` (Linux; needs CAP_NET_RAW)")
	filterFile := fs.String("F", "", "read the capture filter from `FILE`: a BPF program in tcpdump -ddd format, or a filter expression")
	snaplen := fs.Int("s", 0, "live: keep at most `SNAPLEN` octets of each frame (0: 262144)")
	noPromisc := fs.Bool("p", false, "live: do not put the interface into promiscuous mode")
	bufKiB := fs.Int("B", pcap.DefaultBufferSize>>10, "live: kernel capture buffer size in `KiB`")
	display := fs.String("Y", "", "start with the display `filter` applied (iwdump -Y language)")
	var ports []uint16
	fs.Func("decode-as", "treat TCP `PORT` as iWARP even where content detection hesitates (repeatable)", func(v string) error {
		p, err := strconv.ParseUint(v, 10, 16)
		if err != nil {
			return fmt.Errorf("bad port %q", v)
		}
		ports = append(ports, uint16(p))
		return nil
	})
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: iwtui [flags] FILE [capture filter]\n       iwtui [flags] -i IFACE [capture filter]\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	rest := fs.Args()
	var file string
	if *iface == "" {
		if len(rest) == 0 {
			fmt.Fprintln(stderr, "iwtui: no input: give FILE or -i IFACE")
			fs.Usage()
			return exitUsage
		}
		file, rest = rest[0], rest[1:]
	}
	expr := strings.Join(rest, " ")
	var prog []bpf.RawInstruction
	if *filterFile != "" {
		if expr != "" {
			fmt.Fprintf(stderr, "iwtui: a capture filter is given both with -F and as arguments (%q)\n", expr)
			return exitUsage
		}
		b, err := os.ReadFile(*filterFile)
		if err != nil {
			fmt.Fprintf(stderr, "iwtui: -F: %v\n", err)
			return exitUsage
		}
		if p, err := pcapbpf.ParseProgram(string(b)); err == nil {
			prog = p
		} else {
			var lines []string
			for _, ln := range strings.Split(string(b), "\n") {
				if i := strings.IndexByte(ln, '#'); i >= 0 {
					ln = ln[:i]
				}
				lines = append(lines, ln)
			}
			expr = strings.Join(strings.Fields(strings.Join(lines, " ")), " ")
		}
	}
	if *display != "" {
		if _, err := analyze.CompileFilter(*display); err != nil {
			fmt.Fprintf(stderr, "iwtui: -Y: %v\n", err)
			return exitUsage
		}
	}
	cfg := tui.Config{File: file, Ports: ports}
	if *iface != "" {
		lt, err := pcap.InterfaceLinkType(*iface)
		if err != nil {
			fmt.Fprintf(stderr, "iwtui: %v\n", err)
			return exitError
		}
		if prog == nil && expr != "" {
			if prog, err = pcapbpf.Compile(expr, lt, pcapbpf.Options{Kernel: *iface != pcap.AnyInterface, Snaplen: *snaplen}); err != nil {
				fmt.Fprintf(stderr, "iwtui: capture filter: %v\n", err)
				return exitUsage
			}
		}
		cfg.Live = &analyze.LiveConfig{Iface: *iface, Snaplen: *snaplen, Promisc: !*noPromisc, BufferSize: *bufKiB << 10,
			Filter: prog, Decode: true}
	} else if prog != nil || expr != "" {
		cfg.CaptureExpr, cfg.CaptureProgram = expr, prog
		var err error
		if prog != nil {
			_, err = pcapbpf.NewProgramFilter(prog)
		} else {
			_, err = pcapbpf.NewFilter(expr)
		}
		if err != nil {
			fmt.Fprintf(stderr, "iwtui: capture filter: %v\n", err)
			return exitUsage
		}
	}
	s, err := tui.Open(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "iwtui: %v\n", err)
		return exitError
	}
	defer s.Close()
	if !term.IsTerminal(int(stdout.Fd())) {
		fmt.Fprintln(stderr, "iwtui: standard output is not a terminal; for text output use iwdump (iwdump -r FILE [-V] [-Y FILTER])")
		return exitNotATerm
	}

	u := tui.New(s)
	if *display != "" {
		u.ApplyFilter(*display)
	}
	if err := u.Run(); err != nil {
		fmt.Fprintf(stderr, "iwtui: %v\n", err)
		return exitError
	}
	return exitOK
}
