package main

// Writing what passes the capture filter (-w, with tcpdump's rotation
// -C/-G/-W) and starting a live capture. The capture input flags (-r, -i,
// -F, the filter, --decode-as, -s -p -B) are package capture's; the sources
// are analyze's (analyze.OpenLive, analyze.Filtered).

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/capture"
	"github.com/iwkit/iwkit/pcap"
)

// writeOptions are -w and its flags.
type writeOptions struct {
	write      string
	wformat    string
	rotateSize string
	rotateSecs int
	maxFiles   int
}

// writeFlags registers -w and its flags.
func writeFlags(fs *flag.FlagSet, o *options) {
	l := &o.w
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
}

// check checks -w and its flags.
func (l *writeOptions) check(o *options) error {
	switch {
	case l.wformat != "" && l.wformat != "pcap" && l.wformat != "pcapng":
		return fmt.Errorf("--format takes pcap or pcapng, not %q", l.wformat)
	case l.write == "" && (l.rotateSize != "" || l.rotateSecs != 0 || l.maxFiles != 0 || l.wformat != ""):
		return errors.New("-C, -G, -W and --format go with -w FILE")
	case l.rotateSecs < 0 || l.maxFiles < 0:
		return errors.New("-G and -W take counts above 0")
	case l.write == "-" && len(o.stats) > 0:
		return errors.New("-w - and -z would both write to standard output")
	}
	if l.rotateSize != "" {
		if _, err := pcap.ParseFileSize(l.rotateSize); err != nil {
			return fmt.Errorf("-C: %v", err)
		}
	}
	return nil
}

// tee is where -w writes.
func (l *writeOptions) tee(stderr io.Writer) analyze.Tee {
	ro := pcap.RotateOptions{Format: pcap.Format(l.wformat),
		Interval: time.Duration(l.rotateSecs) * time.Second, MaxFiles: l.maxFiles}
	if l.rotateSize != "" {
		ro.FileSize, _ = pcap.ParseFileSize(l.rotateSize)
	}
	return analyze.Tee{Path: l.write, Rotate: ro, Warn: warner(stderr)}
}

// warner prints the library's warnings on stderr, as iwdump's.
func warner(stderr io.Writer) func(string) {
	return func(msg string) { fmt.Fprintf(stderr, "iwdump: %s\n", msg) }
}

// openInput opens what -r or -i names, with the capture filter and -w;
// out is flushed while a live capture is idle.
func openInput(o *options, out *bufio.Writer, stderr io.Writer) (analyze.Source, int64, error) {
	tee := o.w.tee(stderr)
	if o.in.Iface == "" {
		return o.in.OpenFiles(tee)
	}
	lc := o.in.LiveConfig()
	lc.Tee, lc.Decode, lc.Count, lc.Warn, lc.Idle = tee, o.w.write != "-", o.count, warner(stderr), func() { out.Flush() }
	lc.QueueFrames, lc.QueueOctets, lc.RingShare, lc.LagEvery, lc.Started = liveQueueFrames, liveQueueOctets, liveRingShare, lagReportEvery, liveHook
	src, err := analyze.OpenLive(lc)
	if err != nil {
		return nil, 0, err
	}
	c := src.Capture()
	fmt.Fprintf(stderr, "iwdump: listening on %s, link-type %s, snapshot length %d bytes, %s\n",
		o.in.Iface, capture.LinkTypeName(c.LinkType()), c.Snaplen(), c.Method())
	return src, 0, nil
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
