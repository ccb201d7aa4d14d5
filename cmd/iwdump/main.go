// Command iwdump decodes iWARP (MPA, DDP, RDMAP) in capture files, in the
// spirit of tcpdump with tshark's depth. See the README for flags, output
// formats and exit codes.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"

	"github.com/iwkit/iwkit/filter"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/reassembly"
)

// Exit codes are a contract (README): 0 clean, 1 usage or I/O error.
const (
	exitOK    = 0
	exitError = 1
)

type options struct {
	file    string
	count   int
	verbose bool
	hex     bool
	format  string
	numeric bool
	display string
	ports   []uint16
	filter  *filter.Filter[*record]
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("iwdump", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.file, "r", "", "read frames from `FILE` (pcap or pcapng, may be gzip-compressed; - for stdin)")
	fs.IntVar(&o.count, "c", 0, "stop after `N` frames")
	fs.BoolVar(&o.verbose, "V", false, "print the full field tree of every PDU")
	fs.BoolVar(&o.hex, "x", false, "print the PDU's octets in hex")
	fs.BoolVar(&o.numeric, "n", false, "print named values (opcodes, Terminate causes, ...) as numbers")
	fs.StringVar(&o.display, "Y", "", "display only PDUs matching the display `filter`, e.g. 'rdmap.opcode == \"RDMA Read Request\" && rdmap.sink_stag == 0x1234'")
	fs.Func("decode-as", "treat TCP `PORT` as iWARP even where content detection hesitates (repeatable)", func(v string) error {
		p, err := strconv.ParseUint(v, 10, 16)
		if err != nil {
			return fmt.Errorf("bad port %q", v)
		}
		o.ports = append(o.ports, uint16(p))
		return nil
	})
	fs.StringVar(&o.format, "T", "text", "output `format`: text or json (NDJSON, one object per PDU)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: iwdump -r FILE [-c N] [-n] [-V] [-x] [-Y FILTER] [-T text|json]\n")
		fs.PrintDefaults()
	}
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile to `FILE` (for performance work)")
	if err := fs.Parse(args); err != nil {
		return exitError
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintf(stderr, "iwdump: %v\n", err)
			return exitError
		}
		defer f.Close()
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if o.file == "" || fs.NArg() > 0 || (o.format != "text" && o.format != "json") {
		fs.Usage()
		return exitError
	}
	if o.display != "" {
		f, err := filter.Compile(o.display, resolveField)
		if err != nil {
			fmt.Fprintf(stderr, "iwdump: -Y: %v\n", err)
			return exitError
		}
		o.filter = f
	}
	r, err := pcap.Open(o.file)
	if err != nil {
		fmt.Fprintf(stderr, "iwdump: %v\n", err)
		return exitError
	}
	defer r.Close()
	w := bufio.NewWriterSize(stdout, 1<<16)
	defer w.Flush()
	if err := dump(r, w, stderr, &o); err != nil {
		w.Flush()
		fmt.Fprintf(stderr, "iwdump: %v\n", err)
		return exitError
	}
	return exitOK
}

// dump reads every frame and prints the PDUs found. A damaged file ends the
// loop with an error after everything before the damage was printed.
func dump(r *pcap.Reader, w *bufio.Writer, stderr io.Writer, o *options) error {
	out := &printer{w: w, o: o}
	h := newHandler(out)
	a := reassembly.New(reassembly.Config{Ports: o.ports}, h)
	defer h.t.Finish()
	defer a.Flush()
	var fr pcap.Frame
	for n := 0; o.count == 0 || n < o.count; n++ {
		err := r.Next(&fr)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if n == 0 {
			h.first = fr.Timestamp
		}
		if err := a.FeedFrame(&fr); err != nil && !errors.Is(err, pcap.ErrNotTCP) {
			out.note(&fr, fr.Timestamp.Sub(h.first), "undecodable frame: "+err.Error())
		}
	}
	return nil
}
