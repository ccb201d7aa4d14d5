package capture

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/internal/testenv"
	"github.com/iwkit/iwkit/pcap"
	pcapbpf "github.com/iwkit/iwkit/pcap/bpf"
	"github.com/iwkit/iwkit/ulp"
)

const rping = "../testdata/siw/rping.pcap" // port 7170

// parse registers which flags, parses args and finishes, as a command does.
func parse(which Flags, args ...string) (*Options, bool, string, error) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o Options
	o.Register(fs, which)
	if err := fs.Parse(args); err != nil {
		return &o, false, "", &UsageError{err.Error()}
	}
	var out strings.Builder
	done, err := o.Finish(fs.Args(), &out)
	return &o, done, out.String(), err
}

func write(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The flags land in Options; mistakes are usage errors, a missing file or
// interface is not.
func TestFinish(t *testing.T) {
	o, done, _, err := parse(All, "-r", rping, "-r", rping, "--decode-as", "7170", "--decode-as", "4420=nvme", "-s", "128", "-p", "-B", "64", "tcp", "port 7170")
	if err != nil || done {
		t.Fatalf("%v %v", err, done)
	}
	if len(o.Files) != 2 || o.Expr != "tcp port 7170" || o.FileFilter() == nil || len(o.Ports) != 2 || o.DecodeAs[4420] != ulp.NVMe || o.DecodeAs[7170] != ulp.None ||
		o.Snaplen != 128 || !o.NoPromisc || o.BufferKiB != 64 || o.Program != nil {
		t.Fatalf("%+v", o)
	}
	lc := o.LiveConfig()
	if lc.Promisc || lc.BufferSize != 64<<10 || lc.Snaplen != 128 || !lc.Decode {
		t.Fatalf("live config %+v", lc)
	}
	prog := write(t, "p.bpf", "1\n6 0 0 65535\n")
	for _, c := range []struct {
		which Flags
		args  []string
		usage bool
		say   string
	}{
		{All, nil, true, "no input"},
		{All, []string{"-r", rping, "tcp", "port"}, true, "syntax error"},
		{All, []string{"-r", rping, "tcp", "-s", "1"}, true, "flags go before"},
		{All, []string{"-r", rping, "-F", prog, "tcp"}, true, "both with -F"},
		{All, []string{"-r", rping, "-i", "lo"}, true, "-i and -r"},
		{All, []string{"-r", rping, "-s", "-1"}, true, "-s takes"},
		{All, []string{"-r", rping, "-B", "0"}, true, "-B takes"},
		{All, []string{"-r", rping, "--decode-as", "70000"}, true, "bad port"},
		{All, []string{"-r", rping, "--decode-as", "1=fcp"}, true, "unknown protocol"},
		{All, []string{"-r", rping, "mpls or tcp"}, true, "tcpdump -ddd"},
		{Read, []string{"-r", rping, "tcp"}, true, "unexpected arguments"},
		{All, []string{"-r", rping, "-F", "/no/such/filter"}, false, "no such file"},
		{All, []string{"-i", "no-such-iface0", "tcp"}, false, "-D lists"},
	} {
		_, _, _, err := parse(c.which, c.args...)
		if err == nil || IsUsage(err) != c.usage || !strings.Contains(Message("iwdump", err), c.say) {
			t.Errorf("%q: %v (usage %v), want %q (usage %v)", c.args, err, IsUsage(err), c.say, c.usage)
		}
	}
}

// -F reads a tcpdump -ddd program (comments before it allowed) or else an
// expression with # comments: the same filter either way.
func TestFilterFile(t *testing.T) {
	_, _, ddd, err := parse(All, "-ddd", "tcp port 7170")
	if err != nil {
		t.Fatal(err)
	}
	exprFile := write(t, "e", "# the rping port\ntcp   # TCP\nport 7170\n")
	progFile := write(t, "p", "# tcpdump -ddd 'tcp port 7170'\n\n"+ddd)
	for _, f := range []string{exprFile, progFile} {
		o, _, _, err := parse(All, "-r", rping, "-F", f)
		if err != nil {
			t.Fatal(err)
		}
		if f == exprFile && (o.Expr != "tcp port 7170" || o.Program != nil) || f == progFile && o.Program == nil {
			t.Fatalf("%s: expr %q program %v", f, o.Expr, o.Program)
		}
		_, _, again, err := parse(All, "-ddd", "-F", f)
		if err != nil || again != ddd {
			t.Fatalf("-F %s -ddd: %v\n%s\nwant\n%s", f, err, again, ddd)
		}
		if n := count(t, o); n == 0 {
			t.Fatalf("-F %s keeps no frame of %s", f, rping)
		}
	}
	if !isProgramText("# c\n 3\n") || isProgramText("tcp\n") || isProgramText("3 and tcp") || isProgramText("") {
		t.Fatal("isProgramText")
	}
}

// count reads the files of o through its filter.
func count(t *testing.T, o *Options) int {
	src, _, err := o.OpenFiles(analyze.Tee{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	n := 0
	var f pcap.Frame
	for src.Next(&f) == nil {
		n++
	}
	return n
}

// The filter compiled once filters the files: a port that is not in the
// capture keeps nothing, the capture's port keeps all its TCP frames.
func TestFileFilter(t *testing.T) {
	all, _, _, _ := parse(All, "-r", rping)
	on, _, _, _ := parse(All, "-r", rping, "tcp port 7170")
	off, _, _, _ := parse(All, "-r", rping, "tcp port 7171")
	n, m, z := count(t, all), count(t, on), count(t, off)
	if n == 0 || m == 0 || m > n || z != 0 {
		t.Fatalf("all %d, port 7170 %d, port 7171 %d", n, m, z)
	}
}

// The kernel/user choice: on an interface the program is compiled in the
// kernel's form, on "any" for user space over cooked frames.
func TestKernelChoice(t *testing.T) {
	if _, err := pcap.InterfaceLinkType("lo"); err != nil {
		testenv.Skipf(t, "no interfaces here: %v", err)
	}
	for _, c := range []struct {
		iface  string
		kernel bool
		lt     layers.LinkType
	}{{"lo", true, layers.LinkTypeEthernet}, {"any", false, layers.LinkTypeLinuxSLL}} {
		o, _, _, err := parse(All, "-i", c.iface, "tcp port 7170")
		if err != nil {
			t.Fatal(err)
		}
		want, err := pcapbpf.Compile("tcp port 7170", c.lt, pcapbpf.Options{Kernel: c.kernel})
		if err != nil {
			t.Fatal(err)
		}
		if KernelFilter(c.iface) != c.kernel || fmt.Sprint(o.Program) != fmt.Sprint(want) || o.FileFilter() != nil {
			t.Errorf("%s: kernel %v, program %v, want %v", c.iface, KernelFilter(c.iface), o.Program, want)
		}
	}
}

// A live capture on loopback with the options' filter in the kernel sees
// the traffic of the port it names and none of another port's.
func TestLiveLoopback(t *testing.T) {
	testenv.NeedRoot(t, "live capture (CAP_NET_RAW)")
	keep, drop := listen(t), listen(t)
	o, _, _, err := parse(All, "-i", "lo", fmt.Sprintf("tcp port %d", keep.port))
	if err != nil {
		t.Fatal(err)
	}
	lc := o.LiveConfig()
	src, err := analyze.OpenLive(lc)
	var pe *pcap.PermissionError
	if errors.As(err, &pe) {
		testenv.Skipf(t, "no CAP_NET_RAW: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	frames := make(chan pcap.Packet, 64)
	defer func() {
		// Live's contract: Close once Next has returned. Stop ends the
		// capture; the reader returns once it has drained it.
		src.Capture().Stop()
		for range frames {
		}
		src.Finish()
		src.Close()
	}()
	drop.send(t, "not this one")
	keep.send(t, "this one")
	go func() {
		defer close(frames)
		var f pcap.Frame
		for src.Next(&f) == nil {
			var p pcap.Packet
			if pcap.DecodeTCP(f.LinkType, f.Data, &p) == nil {
				p.Payload = append([]byte(nil), p.Payload...)
				frames <- p
			}
		}
	}()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case p, ok := <-frames:
			if !ok {
				t.Fatal("the capture ended before the kept port's data")
			}
			if int(p.SrcPort) != keep.port && int(p.DstPort) != keep.port {
				t.Fatalf("a frame of ports %d > %d passed the filter", p.SrcPort, p.DstPort)
			}
			if string(p.Payload) == "this one" {
				return
			}
		case <-deadline:
			t.Fatal("no frame of the kept port within 10 s")
		}
	}
}

type server struct {
	ln   net.Listener
	port int
}

func listen(t *testing.T) *server {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	return &server{ln: ln, port: ln.Addr().(*net.TCPAddr).Port}
}

func (s *server) send(t *testing.T, msg string) {
	c, err := net.Dial("tcp4", s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
}
