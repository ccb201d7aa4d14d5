package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/internal/testenv"
	"github.com/iwkit/iwkit/pcap"
)

// needLiveCapture skips, saying why, when this process cannot capture on lo.
func needLiveCapture(t testing.TB) {
	t.Helper()
	testenv.NeedRoot(t, "live capture (CAP_NET_RAW)")
	l, err := pcap.OpenLive("lo", pcap.LiveOptions{})
	var pe *pcap.PermissionError
	if errors.As(err, &pe) {
		testenv.Skipf(t, "no CAP_NET_RAW: %v", err)
	}
	if err != nil {
		testenv.Skipf(t, "cannot capture on lo: %v", err)
	}
	l.Close()
}

// iwarpPeers runs a TCP server on 127.0.0.1 and a client to it that speak
// iWARP: an MPA Request and Reply (Rev 1, CRC on), then n Sends each way
// (QN 0, MSN 1..n), FPDUs built with the decode encoders. It returns when
// both sides have sent everything and closed.
type iwarpPeers struct {
	ln   net.Listener
	port int
}

func newIWARPPeers(t testing.TB) *iwarpPeers {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &iwarpPeers{ln: ln, port: ln.Addr().(*net.TCPAddr).Port}
}

// fpdus is n Send FPDUs with CRC, payloads of varied sizes, one after the
// other as they go on the wire.
func sendFPDUs(n int, tag byte) []byte {
	var wire []byte
	for i := 1; i <= n; i++ {
		payload := bytes.Repeat([]byte{tag, byte(i)}, 20+(i*37)%700)
		seg := decode.Segment{
			DDP:     decode.DDPHeader{Last: true, DV: 1, QN: 0, MSN: uint32(i)},
			RDMAP:   decode.RDMAPControl{RV: 1, Opcode: decode.OpSend},
			Payload: payload,
		}
		wire = decode.AppendFPDU(wire, seg.Append(nil), true)
	}
	return wire
}

func (p *iwarpPeers) run(t testing.TB, n int) {
	req := (&decode.MPAFrame{Rev: 1, CRC: true}).Append(nil)
	rep := (&decode.MPAFrame{Reply: true, Rev: 1, CRC: true}).Append(nil)
	// exchange sends wire (in pieces, so that FPDUs straddle TCP
	// segments) while reading the peer's stream to its end, then closes:
	// each side half-closes after sending, so nothing is reset.
	exchange := func(c *net.TCPConn, wire []byte, piece int) error {
		read := make(chan error, 1)
		go func() { _, err := io.Copy(io.Discard, c); read <- err }()
		for len(wire) > 0 {
			k := min(len(wire), piece)
			if _, err := c.Write(wire[:k]); err != nil {
				return err
			}
			wire = wire[k:]
		}
		if err := c.CloseWrite(); err != nil {
			return err
		}
		if err := <-read; err != nil {
			return err
		}
		return c.Close()
	}
	errs := make(chan error, 1)
	go func() { // responder
		c, err := p.ln.Accept()
		if err != nil {
			errs <- err
			return
		}
		got := make([]byte, len(req))
		if _, err := io.ReadFull(c, got); err != nil {
			errs <- err
			return
		}
		if _, err := c.Write(rep); err != nil {
			errs <- err
			return
		}
		errs <- exchange(c.(*net.TCPConn), sendFPDUs(n, 'r'), 1000)
	}()
	c, err := net.Dial("tcp4", p.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(rep))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if err := exchange(c.(*net.TCPConn), sendFPDUs(n, 'i'), 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// pduKey identifies a decoded PDU of the test traffic.
type pduKey struct {
	dir, opcode string
	msn         int
}

// countPDUs reads iwdump's NDJSON output.
func countPDUs(t testing.TB, ndjson []byte) (map[pduKey]int, int) {
	seen := map[pduKey]int{}
	mpa := 0
	sc := bufio.NewScanner(bytes.NewReader(ndjson))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var o struct {
			Dir string `json:"dir"`
			MPA struct {
				Type      string `json:"type"`
				CRCStatus string `json:"crc_status"`
			} `json:"mpa"`
			DDP struct {
				MSN int `json:"msn"`
			} `json:"ddp"`
			RDMAP struct {
				Opcode string `json:"opcode"`
			} `json:"rdmap"`
		}
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		if o.MPA.Type != "" {
			mpa++
			continue
		}
		if o.RDMAP.Opcode == "" {
			continue // a finding
		}
		if o.MPA.CRCStatus != "good" {
			t.Errorf("CRC %q: %s", o.MPA.CRCStatus, sc.Text())
		}
		seen[pduKey{o.Dir, o.RDMAP.Opcode, o.DDP.MSN}]++
	}
	return seen, mpa
}

func checkEachOnce(t testing.TB, seen map[pduKey]int, mpa, n int) {
	t.Helper()
	if mpa != 2 {
		t.Errorf("%d MPA frames decoded, want the Request and the Reply once each", mpa)
	}
	bad := 0
	for _, dir := range []string{"i2r", "r2i"} {
		for i := 1; i <= n; i++ {
			if c := seen[pduKey{dir, "Send", i}]; c != 1 && bad < 10 {
				t.Errorf("%s Send MSN %d decoded %d times, want once", dir, i, c)
				bad++
			}
		}
	}
	if len(seen) != 2*n {
		t.Errorf("%d distinct PDUs, want %d", len(seen), 2*n)
	}
}

// framesIn counts the frames of a capture file.
func framesIn(t *testing.T, file string) int {
	t.Helper()
	r, err := pcap.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := 0
	var f pcap.Frame
	for r.Next(&f) == nil {
		n++
	}
	return n
}

// runLive runs iwdump with args while the test traffic flows, ending the
// capture with SIGINT as Ctrl-C would.
func runLive(t *testing.T, args []string, traffic func()) (stdout, stderr string, code int) {
	started := make(chan *pcap.Live, 1)
	liveHook = func(l *pcap.Live) { started <- l }
	defer func() { liveHook = nil }()
	var out, errb bytes.Buffer
	done := make(chan int)
	go func() { done <- run(args, &out, &errb) }()
	select {
	case <-started:
	case c := <-done:
		t.Fatalf("iwdump ended before capturing (exit %d): %s", c, errb.String())
	}
	traffic()
	time.Sleep(100 * time.Millisecond)
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	select {
	case code = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("iwdump did not end after SIGINT")
	}
	return out.String(), errb.String(), code
}

// The end-to-end check: iWARP traffic made during the test on lo,
// captured with the filter in the kernel, each FPDU decoded exactly once;
// Ctrl-C ends the capture with the summary; -w holds every frame.
func TestLiveLoopbackIWARP(t *testing.T) {
	checkLiveIWARP(t, "lo", "listening on lo", layers.LinkTypeEthernet)
}

// checkLiveIWARP captures iWARP traffic on lo through iface: each FPDU is
// decoded exactly once, with no loss reported (ACKs the capture shows
// before their data are no loss), the summary and -z conv say what was
// captured, and the -w file, of link type lt, decodes the same.
func checkLiveIWARP(t *testing.T, iface, listening string, lt layers.LinkType) {
	checkLiveIWARPTo(t, iface, listening, lt, true)
}

// Without -w the frames are copied into the capture's own chunks for the
// decoder: each FPDU is still decoded exactly once.
func TestLiveLoopbackIWARPNoWrite(t *testing.T) {
	checkLiveIWARPTo(t, "lo", "listening on lo", layers.LinkTypeEthernet, false)
}

// -w - writes the capture file to standard output from the ring (writev
// to a pipe): every frame captured is in it, in order, whole.
func TestLiveWriteStdout(t *testing.T) {
	needLiveCapture(t)
	peers := newIWARPPeers(t)
	defer peers.ln.Close()
	c := startCapture(t, os.Args[0], []string{"IWDUMP_TEST_AS_IWDUMP=1"}, "-i", "lo", "-w", "-", "tcp", "port", fmt.Sprint(peers.port))
	peers.run(t, 300)
	time.Sleep(200 * time.Millisecond)
	captured, _, dropped, _ := c.stop(t)
	r, err := pcap.NewReader(bytes.NewReader(c.stdout.Bytes()))
	if err != nil {
		t.Fatalf("standard output is not a capture file (%d octets): %v\n%s", c.stdout.Len(), err, c.stderr.String())
	}
	frames, big := 0, 0
	var f pcap.Frame
	var p pcap.Packet
	for {
		err := r.Next(&f)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("frame %d: %v", frames+1, err)
		}
		frames++
		if len(f.Data) >= 512 {
			big++ // written from the ring, not copied
		}
		if err := pcap.DecodeTCP(f.LinkType, f.Data, &p); err != nil || (int(p.SrcPort) != peers.port && int(p.DstPort) != peers.port) {
			t.Errorf("frame %d is not the test connection (%v)", f.Number, err)
		}
	}
	if frames != captured || dropped != 0 || big == 0 {
		t.Errorf("%d frames (%d of 512 octets or more) on standard output, %d captured, %d dropped:\n%s", frames, big, captured, dropped, c.stderr.String())
	}
}

// When the decoder may hold only one block of the ring, frames of the
// next are copied for it while it reads the last: the mix of frames read
// in the ring and copies still decodes each FPDU once, with -w and
// without.
func TestLiveLoopbackIWARPRingShare(t *testing.T) {
	defer func(n int) { liveRingShare = n }(liveRingShare)
	liveRingShare = 1
	for _, write := range []bool{true, false} {
		t.Run(fmt.Sprint("w=", write), func(t *testing.T) {
			checkLiveIWARPTo(t, "lo", "listening on lo", layers.LinkTypeEthernet, write, "-B", "1024") // blocks of 128 KiB
		})
	}
}

// checkLiveIWARPTo is checkLiveIWARP, with -w or without.
func checkLiveIWARPTo(t *testing.T, iface, listening string, lt layers.LinkType, write bool, extra ...string) {
	needLiveCapture(t)
	const n = 300
	peers := newIWARPPeers(t)
	defer peers.ln.Close()
	other, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	file := filepath.Join(t.TempDir(), "live.pcapng")
	args := []string{"-i", iface, "-T", "json", "-w", file, "-z", "conv", "tcp", "port", fmt.Sprint(peers.port)}
	if !write {
		args = append(args[:4], args[6:]...)
	}
	args = append(extra, args...)
	stdout, stderr, code := runLive(t, args, func() {
		// Traffic the capture filter must keep out.
		u, _ := net.DialUDP("udp4", nil, other.LocalAddr().(*net.UDPAddr))
		for i := 0; i < 50; i++ {
			u.Write([]byte("not iwarp"))
		}
		u.Close()
		peers.run(t, n)
	})
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	t.Logf("stderr:\n%s", stderr)
	for _, want := range []string{listening, "packets captured", "packets received by filter", "0 packets dropped by kernel"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "not decoded") {
		t.Errorf("the decoder fell behind:\n%s", stderr)
	}
	if !strings.Contains(stdout, "live capture on "+iface) {
		t.Errorf("-z conv lacks the capture statistics")
	}
	var ndjson []byte
	for _, line := range strings.SplitAfter(stdout, "\n") {
		if strings.HasPrefix(line, "{") {
			ndjson = append(ndjson, line...)
		}
		if strings.Contains(line, `"code":"tcp.gap"`) || strings.Contains(line, `"code":"track.uncertain_after_gap"`) {
			t.Errorf("loss reported on lo: %s", line)
		}
	}
	seen, mpa := countPDUs(t, ndjson)
	checkEachOnce(t, seen, mpa, n)
	if !write {
		return
	}

	// The file holds every captured frame, all of the test's connection.
	r, err := pcap.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	frames := 0
	var f pcap.Frame
	var p pcap.Packet
	for r.Next(&f) == nil {
		frames++
		if f.LinkType != lt {
			t.Fatalf("frame %d: link type %v in -w, want %v", f.Number, f.LinkType, lt)
		}
		if err := pcap.DecodeTCP(f.LinkType, f.Data, &p); err != nil || (int(p.SrcPort) != peers.port && int(p.DstPort) != peers.port) {
			t.Errorf("frame %d in -w is not the test connection (%v)", f.Number, err)
		}
	}
	r.Close()
	if !strings.Contains(stderr, fmt.Sprintf("%d packets captured", frames)) {
		t.Errorf("%d frames in %s; stderr says:\n%s", frames, file, stderr)
	}
	// Decoding the file gives the same PDUs.
	var out, errb bytes.Buffer
	if c := run([]string{"-r", file, "-T", "json"}, &out, &errb); c != exitOK {
		t.Fatalf("-r %s: exit %d: %s", file, c, errb.String())
	}
	seen2, mpa2 := countPDUs(t, out.Bytes())
	checkEachOnce(t, seen2, mpa2, n)
}

// -c N ends the capture after N frames; -w and the decoder see N.
func TestLiveCount(t *testing.T) {
	needLiveCapture(t)
	peers := newIWARPPeers(t)
	defer peers.ln.Close()
	started := make(chan *pcap.Live, 1)
	liveHook = func(l *pcap.Live) { started <- l }
	defer func() { liveHook = nil }()
	file := filepath.Join(t.TempDir(), "c.pcap")
	var out, errb bytes.Buffer
	done := make(chan int)
	go func() {
		done <- run([]string{"-i", "lo", "-c", "10", "-w", file, "tcp port " + fmt.Sprint(peers.port)}, &out, &errb)
	}()
	<-started
	peers.run(t, 50)
	select {
	case c := <-done:
		if c != exitOK {
			t.Fatalf("exit %d: %s", c, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("-c 10 did not end the capture")
	}
	n := framesIn(t, file)
	if n != 10 || !strings.Contains(errb.String(), "10 packets captured") {
		t.Errorf("%d frames written; stderr:\n%s", n, errb.String())
	}
}

// Without CAP_NET_RAW the message says what is missing and how to grant it.
func TestLiveNoPrivilege(t *testing.T) {
	testenv.NeedRoot(t, "running a child as an unprivileged user")
	dir, err := os.MkdirTemp("", "iwdump-noprivilege-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755) // the unprivileged user must reach the binary
	bin := filepath.Join(dir, "iwdump")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-i", "lo", "tcp")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitError {
		t.Fatalf("want exit %d, have %v: %s", exitError, err, out)
	}
	for _, want := range []string{"CAP_NET_RAW", "setcap cap_net_raw"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("message lacks %q: %s", want, out)
		}
	}
}

func TestListInterfaces(t *testing.T) {
	var out, errb bytes.Buffer
	if c := run([]string{"-D"}, &out, &errb); c != exitOK {
		t.Fatalf("exit %d: %s", c, errb.String())
	}
	if !strings.Contains(out.String(), ".lo [Up, Running, Loopback]") {
		t.Errorf("-D:\n%s", out.String())
	}
}

// A capture filter after -r filters the file in user space with the same
// program; -w keeps what passed.
func TestFileCaptureFilter(t *testing.T) {
	in := "../../testdata/siw/rping.pcap"
	var all, errb bytes.Buffer
	if c := run([]string{"-r", in, "-T", "json"}, &all, &errb); c != exitOK {
		t.Fatalf("exit %d: %s", c, errb.String())
	}
	// The responder's port, from the first PDU.
	var first struct {
		Dst string `json:"dst"`
	}
	json.Unmarshal([]byte(strings.SplitN(all.String(), "\n", 2)[0]), &first)
	_, port, _ := net.SplitHostPort(first.Dst)
	file := filepath.Join(t.TempDir(), "f.pcap")
	for _, c := range []struct {
		args []string
		sub  func(string) bool
	}{
		{[]string{"tcp", "dst", "port", port}, func(l string) bool { return strings.Contains(l, `"dir":"i2r"`) }},
		{[]string{"src port " + port}, func(l string) bool { return strings.Contains(l, `"dir":"r2i"`) }},
		{[]string{"udp"}, func(string) bool { return false }},
	} {
		var out bytes.Buffer
		errb.Reset()
		args := append([]string{"-r", in, "-T", "json", "-w", file}, c.args...)
		if code := run(args, &out, &errb); code != exitOK {
			t.Fatalf("%v: exit %d: %s", c.args, code, errb.String())
		}
		want := 0
		for _, l := range strings.Split(all.String(), "\n") {
			if strings.Contains(l, `"rdmap"`) && c.sub(l) {
				want++
			}
		}
		got := strings.Count(out.String(), `"rdmap"`)
		if got != want {
			t.Errorf("%v: %d PDUs, want %d", c.args, got, want)
		}
		// What -w kept decodes to the same.
		var again bytes.Buffer
		if want > 0 {
			if code := run([]string{"-r", file, "-T", "json"}, &again, &errb); code != exitOK {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			if n := strings.Count(again.String(), `"rdmap"`); n != want {
				t.Errorf("%v: -w file decodes to %d PDUs, want %d", c.args, n, want)
			}
		}
	}
}

func TestCaptureFilterErrors(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog.bpf")
	expr := filepath.Join(dir, "expr.txt")
	os.WriteFile(expr, []byte("# iWARP\ntcp port 4420\n"), 0o644)
	var out, errb bytes.Buffer
	if c := run([]string{"-ddd", "tcp port 4420"}, &out, &errb); c != exitOK {
		t.Fatalf("exit %d: %s", c, errb.String())
	}
	os.WriteFile(prog, out.Bytes(), 0o644)
	var out2 bytes.Buffer
	if c := run([]string{"-F", expr, "-ddd"}, &out2, &errb); c != exitOK || out2.String() != out.String() {
		t.Errorf("-F expression file: exit %d, %q", c, out2.String())
	}
	out2.Reset()
	if c := run([]string{"-F", prog, "-ddd"}, &out2, &errb); c != exitOK || out2.String() != out.String() {
		t.Errorf("-F program: exit %d, %q", c, out2.String())
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-r", "x.pcap", "mpls or tcp"}, "tcpdump -ddd"},
		{[]string{"-r", "x.pcap", "tcp[0:2] / 0 = 1"}, "division by zero"},
		{[]string{"-r", "x.pcap", "tcp port"}, "syntax error"},
		{[]string{"-r", "x.pcap", "tcp", "-w", "y"}, "flags go before the capture filter"},
		{[]string{"-r", "x.pcap", "-F", prog, "tcp"}, "both with -F"},
		{[]string{"-i", "lo", "-r", "x.pcap"}, "-i and -r"},
		{[]string{"-r", "x.pcap", "-C", "1"}, "go with -w"},
		{[]string{"-r", "x.pcap", "-w", "y", "-C", "x"}, "invalid file size"},
		{[]string{"-i", "no-such-iface0"}, "iwdump -D lists"},
		{[]string{"-w", "-", "-z", "conv", "-r", "x.pcap"}, "standard output"},
	} {
		errb.Reset()
		want := exitUsage
		if c.args[1] == "no-such-iface0" {
			want = exitError // not a usage mistake: the machine has no such interface
		}
		if code := run(c.args, io.Discard, &errb); code != want || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", c.args, code, errb.String(), c.want)
		}
	}
}

// mtuFPDUs is n Sends whose FPDUs fill a 1500-octet Ethernet frame
// (1448 octets: the MSS with TCP timestamps), as iWARP over a 1500 MTU
// sends them.
func mtuFPDU(msn int) []byte {
	seg := decode.Segment{
		DDP:     decode.DDPHeader{Last: true, DV: 1, QN: 0, MSN: uint32(msn)},
		RDMAP:   decode.RDMAPControl{RV: 1, Opcode: decode.OpSend},
		Payload: make([]byte, 1448-2-4-18),
	}
	return decode.AppendFPDU(nil, seg.Append(nil), true)
}

// BenchmarkLiveIWARP runs iwdump's whole live pipeline (kernel filter,
// ring, -w, decoding and tracking) on lo while iWARP flows: "paced1G"
// sends 1448-octet FPDUs at 1 Gbit/s on the wire for two seconds (the
// budget: no kernel drops, nothing left undecoded); "blast" sends as fast
// as TCP goes (on lo: 64 KiB segments). Run with -benchtime 1x.
func BenchmarkLiveIWARP(b *testing.B) {
	needLiveCapture(b)
	for _, mode := range []string{"paced1G", "blast"} {
		b.Run(mode, func(b *testing.B) {
			peers := newIWARPPeers(b)
			defer peers.ln.Close()
			file := filepath.Join(b.TempDir(), "bench.pcap")
			started := make(chan *pcap.Live, 1)
			liveHook = func(l *pcap.Live) { started <- l }
			defer func() { liveHook = nil }()
			var out, errb bytes.Buffer
			done := make(chan int)
			go func() {
				done <- run([]string{"-i", "lo", "-q", "-z", "conv", "-w", file, "tcp port " + fmt.Sprint(peers.port)}, &out, &errb)
			}()
			<-started
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			var sent int
			start := time.Now()
			go func() {
				c, err := peers.ln.Accept()
				if err == nil {
					io.Copy(io.Discard, c)
					c.Close()
				}
			}()
			c, err := net.Dial("tcp4", peers.ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			c.Write((&decode.MPAFrame{Rev: 1, CRC: true}).Append(nil))
			const wireBits = (1448 + 66) * 8 // FPDU, TCP/IP/Ethernet headers
			perMs := 83                      // 1e9 / wireBits / 1000, rounded
			dur := 2 * time.Second
			if mode == "blast" {
				dur = time.Second
			}
			fpdu := mtuFPDU(1)
			batch := make([]byte, 0, 64*len(fpdu))
			for i := 0; i < 64; i++ {
				batch = append(batch, mtuFPDU(i+1)...)
			}
			for time.Since(start) < dur {
				if mode == "blast" {
					c.Write(batch)
					sent += 64
					continue
				}
				// Pace by the millisecond: perMs FPDUs, one write each.
				due := start.Add(time.Duration(sent/perMs) * time.Millisecond)
				if d := time.Until(due); d > 0 {
					time.Sleep(d)
				}
				for i := 0; i < perMs; i++ {
					c.Write(fpdu)
				}
				sent += perMs
			}
			el := time.Since(start)
			c.Close()
			time.Sleep(200 * time.Millisecond)
			syscall.Kill(os.Getpid(), syscall.SIGINT)
			if code := <-done; code != exitOK {
				b.Fatalf("exit %d: %s", code, errb.String())
			}
			runtime.ReadMemStats(&ms1)
			captured, _, dropped, undecoded := captureCounts(errb.String())
			b.ReportMetric(float64(captured)/el.Seconds(), "frames/s")
			// Allocations of the whole process (capture, -w, decoder,
			// tracking, the test's sender) per frame captured.
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(max(captured, 1)), "allocs/frame")
			b.ReportMetric(float64(sent)*1448*8/el.Seconds()/1e9, "FPDU-Gbit/s")
			b.ReportMetric(float64(dropped), "drops")
			b.ReportMetric(float64(undecoded), "undecoded")
			if mode == "paced1G" && (dropped > 0 || undecoded > 0) {
				b.Errorf("at 1 Gbit/s: %d dropped by the kernel, %d not decoded\n%s", dropped, undecoded, errb.String())
			}
		})
	}
}

// slowWriter is a terminal that cannot keep up.
type slowWriter struct{ n int }

func (w *slowWriter) Write(b []byte) (int, error) {
	time.Sleep(20 * time.Millisecond)
	w.n += len(b)
	return len(b), nil
}

// When the decoder (here: its output) cannot keep up, frames still go to
// -w, the capture does not drop, and the lag is reported.
func TestLiveDecoderBehind(t *testing.T) {
	needLiveCapture(t)
	defer func(f int, o int64, d time.Duration) { liveQueueFrames, liveQueueOctets, lagReportEvery = f, o, d }(liveQueueFrames, liveQueueOctets, lagReportEvery)
	liveQueueFrames, lagReportEvery = 4, 50*time.Millisecond
	peers := newIWARPPeers(t)
	defer peers.ln.Close()
	file := filepath.Join(t.TempDir(), "behind.pcap")
	started := make(chan *pcap.Live, 1)
	liveHook = func(l *pcap.Live) { started <- l }
	defer func() { liveHook = nil }()
	var errb bytes.Buffer
	done := make(chan int)
	go func() {
		done <- run([]string{"-i", "lo", "-w", file, "tcp port " + fmt.Sprint(peers.port)}, &slowWriter{}, &errb)
	}()
	<-started
	// Many small FPDUs, each written alone: many frames.
	c, err := net.Dial("tcp4", peers.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		if s, err := peers.ln.Accept(); err == nil {
			io.Copy(io.Discard, s)
			s.Close()
		}
	}()
	c.Write((&decode.MPAFrame{Rev: 1, CRC: true}).Append(nil))
	for i := 1; i <= 300; i++ {
		c.Write(mtuFPDU(i))
		time.Sleep(200 * time.Microsecond)
	}
	c.Close()
	time.Sleep(300 * time.Millisecond)
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	stderr := errb.String()
	var captured, undecoded int
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasSuffix(line, "packets captured") {
			fmt.Sscanf(line, "%d", &captured)
		}
		if strings.Contains(line, "not decoded: the decoder fell behind") {
			fmt.Sscanf(line, "%d", &undecoded)
		}
	}
	if undecoded == 0 || !strings.Contains(stderr, "decoding is behind the capture") || !strings.Contains(stderr, "0 packets dropped by kernel") {
		t.Fatalf("no lag reported:\n%s", stderr)
	}
	n := framesIn(t, file)
	if n != captured || n < 300 {
		t.Errorf("%d frames in -w, %d captured (want every frame of 300+ written)", n, captured)
	}
	t.Logf("%d captured, %d not decoded", captured, undecoded)
}

// BenchmarkLiveBeside (issue 20 item 10): iwdump -i lo -w FILE and
// tcpdump -i lo -w FILE, each its own process with the same kernel buffer
// (-B 32768 KiB), capture the same iWARP traffic at once: 1448-octet
// FPDUs with CRC written 64 KiB at a time (lo carries them in segments of
// up to 64 KiB), paced by the millisecond at each rate for a second. Each
// rate reports both captures' kernel drops and what iwdump left
// undecoded; the drop-free rate of each is the highest rate with 0 drops
// (BENCHMARKS.md, "Live capture on lo"). Run with -benchtime 1x.
func BenchmarkLiveBeside(b *testing.B) {
	needLiveCapture(b)
	tcpdump := testenv.Tool(b, "tcpdump")
	batch := make([]byte, 0, 64<<10)
	for i := 1; len(batch)+1448 <= 64<<10; i++ {
		batch = append(batch, mtuFPDU(i)...)
	}
	// Senders: connections, each written by its own goroutine, so that
	// the offered rate is not one core's; unpaced, each writes
	// blastBatches batches per call.
	conns := 1
	if n, err := strconv.Atoi(os.Getenv("IWDUMP_BESIDE_CONNS")); err == nil && n > 0 {
		conns = n
	}
	const blastBatches = 4
	blast := bytes.Repeat(batch, blastBatches)
	secs := 1.0
	if v, err := strconv.ParseFloat(os.Getenv("IWDUMP_BESIDE_SECONDS"), 64); err == nil && v > 0 {
		secs = v
	}
	rates := []int{1, 2, 4, 8, 12, 16, 24, 0}
	if v := os.Getenv("IWDUMP_BESIDE_RATES"); v != "" {
		rates = nil
		for _, f := range strings.Split(v, ",") {
			n, _ := strconv.Atoi(f)
			rates = append(rates, n)
		}
	}
	for _, gbps := range rates {
		name := fmt.Sprintf("%dG", gbps)
		if gbps == 0 {
			name = "blast"
		}
		b.Run(name, func(b *testing.B) {
			peers := newIWARPPeers(b)
			defer peers.ln.Close()
			dir := b.TempDir()
			filter := fmt.Sprintf("tcp port %d", peers.port)
			iwArgs := append(strings.Fields(os.Getenv("IWDUMP_BESIDE_ARGS")), "-i", "lo", "-q", "-B", "32768", "-w", filepath.Join(dir, "iw.pcap"), filter)
			bin := os.Args[0] // this test binary as iwdump, or another build of it
			if v := os.Getenv("IWDUMP_BESIDE_IWDUMP"); v != "" {
				bin = v
			}
			iw := startCapture(b, bin, []string{"IWDUMP_TEST_AS_IWDUMP=1"}, iwArgs...)
			td := startCapture(b, tcpdump, nil, "-i", "lo", "-n", "-B", "32768", "-w", filepath.Join(dir, "td.pcap"), filter)
			go func() {
				for {
					c, err := peers.ln.Accept()
					if err != nil {
						return
					}
					go func() {
						io.Copy(io.Discard, c)
						c.Close()
					}()
				}
			}()
			cs := make([]net.Conn, conns)
			for i := range cs {
				c, err := net.Dial("tcp4", peers.ln.Addr().String())
				if err != nil {
					b.Fatal(err)
				}
				c.Write((&decode.MPAFrame{Rev: 1, CRC: true}).Append(nil))
				cs[i] = c
			}
			// Octets per millisecond at the rate, per connection (FPDU
			// octets: the TCP/IP headers of 64 KiB segments add 0.1%).
			perMs := int64(gbps) * 1e9 / 8 / 1000 / int64(conns)
			var sent atomic.Int64
			iwCPU, tdCPU := iw.cpu(), td.cpu()
			dur := time.Duration(secs * float64(time.Second))
			start := time.Now()
			var wg sync.WaitGroup
			errs := make(chan error, conns)
			for _, c := range cs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var mine int64
					for time.Since(start) < dur {
						out := blast
						if gbps > 0 {
							out = batch
							due := start.Add(time.Duration(mine/perMs) * time.Millisecond)
							if d := time.Until(due); d > 0 {
								time.Sleep(d)
							}
						}
						n, err := c.Write(out)
						if err != nil {
							errs <- err
							return
						}
						mine += int64(n)
						sent.Add(int64(n))
					}
				}()
			}
			wg.Wait()
			el := time.Since(start)
			for _, c := range cs {
				c.Close()
			}
			select {
			case err := <-errs:
				b.Fatal(err)
			default:
			}
			time.Sleep(300 * time.Millisecond)
			// CPU time per GB sent while the traffic flowed: on a loaded
			// machine the drops say how much CPU each got, this what
			// each needs. Per GB captured too: a capture that drops
			// half does half the work.
			gb := float64(sent.Load()) / 1e9
			iwSec, tdSec := (iw.cpu() - iwCPU).Seconds(), (td.cpu() - tdCPU).Seconds()
			b.ReportMetric(iwSec/gb, "iwdump-cpu-s/GB")
			b.ReportMetric(tdSec/gb, "tcpdump-cpu-s/GB")
			iwc, _, iwd, iwu := iw.stop(b)
			tdc, _, tdd, _ := td.stop(b)
			if os.Getenv("IWDUMP_BESIDE_LOG") != "" {
				b.Logf("iwdump:\n%s\ntcpdump:\n%s", iw.stderr.String(), td.stderr.String())
			}
			// (What arrived is taken as captured plus dropped: tcpdump's
			// "received by filter" came out at about twice what it
			// captured with no drops here.)
			if iwc > 0 && tdc > 0 {
				b.ReportMetric(iwSec/(gb*float64(iwc)/float64(iwc+iwd)), "iwdump-cpu-s/GB-captured")
				b.ReportMetric(tdSec/(gb*float64(tdc)/float64(tdc+tdd)), "tcpdump-cpu-s/GB-captured")
			}
			b.ReportMetric(float64(sent.Load())*8/el.Seconds()/1e9, "sent-Gbit/s")
			b.ReportMetric(float64(iwd), "iwdump-drops")
			b.ReportMetric(float64(tdd), "tcpdump-drops")
			b.ReportMetric(float64(iwu), "iwdump-undecoded")
			b.ReportMetric(float64(iwc), "iwdump-frames")
			b.ReportMetric(float64(tdc), "tcpdump-frames")
		})
	}
}

// capProc is a capturing process of BenchmarkLiveBeside.
type capProc struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer // complete once stop returns
	stderr bytes.Buffer
	done   chan struct{}
}

// startCapture starts a capture command and waits until it listens.
func startCapture(b testing.TB, path string, env []string, args ...string) *capProc {
	c := &capProc{cmd: exec.Command(path, args...), done: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), env...)
	c.cmd.Stdout = &c.stdout
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, err := c.cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
	})
	listening := make(chan struct{})
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(pr)
		told := false
		for sc.Scan() {
			c.stderr.WriteString(sc.Text() + "\n")
			if !told && strings.Contains(sc.Text(), "listening on") {
				told = true
				close(listening)
			}
		}
		c.cmd.Wait()
	}()
	select {
	case <-listening:
	case <-c.done:
		b.Fatalf("%s ended: %s", path, c.stderr.String())
	case <-time.After(30 * time.Second):
		b.Fatalf("%s does not listen: %s", path, c.stderr.String())
	}
	return c
}

// cpu is the CPU time the capture has used so far (/proc/PID/stat utime
// and stime, in clock ticks of 10 ms).
func (c *capProc) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	var ut, st int64
	if len(f) > 12 {
		fmt.Sscan(f[11], &ut)
		fmt.Sscan(f[12], &st)
	}
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// stop interrupts the capture and returns what it says it captured,
// received, dropped and left undecoded.
func (c *capProc) stop(b testing.TB) (captured, received, dropped, undecoded int) {
	syscall.Kill(c.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-c.done:
	case <-time.After(60 * time.Second):
		b.Fatalf("%s does not end", c.cmd.Path)
	}
	return captureCounts(c.stderr.String())
}

// captureCounts reads the summary a capture (iwdump or tcpdump) prints on
// its standard error when it ends: what it captured, received, dropped and
// left undecoded.
func captureCounts(stderr string) (captured, received, dropped, undecoded int) {
	for _, line := range strings.Split(stderr, "\n") {
		var n int
		if _, err := fmt.Sscanf(line, "%d packets", &n); err != nil {
			continue
		}
		switch {
		case strings.HasSuffix(line, "packets captured"):
			captured = n
		case strings.HasSuffix(line, "dropped by kernel"):
			dropped = n
		case strings.HasSuffix(line, "received by filter"):
			received = n
		case strings.Contains(line, "not decoded"):
			undecoded = n
		}
	}
	return captured, received, dropped, undecoded
}
