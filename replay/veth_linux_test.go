package replay

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iwkit/iwkit/pcap"
)

// The far end of the veth pair lives in a network namespace the test
// makes. Its capture runs in a child process started with "ip netns exec"
// (which also gives it the namespace's /sys): this test binary again, as
// captureHelper, streaming the IPv4 frames it sees back on stdout.

const helperEnv = "IWKIT_REPLAY_CAPTURE_IFACE"

func TestMain(m *testing.M) {
	if iface := os.Getenv(helperEnv); iface != "" {
		os.Exit(captureHelper(iface))
	}
	os.Exit(m.Run())
}

// captureHelper captures on iface until its stdin closes: "R" once the
// capture is open, then each IPv4 frame as a 4-octet length, 8 octets of
// timestamp (ns) and the frame.
func captureHelper(iface string) int {
	l, err := pcap.OpenLive(iface, pcap.LiveOptions{Promisc: true, BlockTimeout: 5 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, "capture:", err)
		return 1
	}
	defer l.Close()
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	out.WriteString("R")
	out.Flush()
	go func() {
		io.Copy(io.Discard, os.Stdin)
		l.Stop()
	}()
	var f pcap.Frame
	var hdr [12]byte
	for {
		if err := l.Next(&f); err != nil {
			break
		}
		if len(f.Data) < 14 || f.Data[12] != 0x08 || f.Data[13] != 0x00 {
			continue // IPv4 only: the captures are
		}
		binary.BigEndian.PutUint32(hdr[:4], uint32(len(f.Data)))
		binary.BigEndian.PutUint64(hdr[4:], uint64(f.Timestamp.UnixNano()))
		out.Write(hdr[:])
		out.Write(f.Data)
		if err := out.Flush(); err != nil {
			return 1
		}
	}
	if st, err := l.Stats(); err == nil && st.Dropped > 0 {
		fmt.Fprintf(os.Stderr, "capture: %d frames dropped by the kernel\n", st.Dropped)
		return 3
	}
	return 0
}

func needNetns(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces and veth pairs need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("ip (iproute2) missing")
		}
		t.Skip("ip (iproute2) missing")
	}
}

var nsSeq atomic.Int32

func sh(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v %s", strings.Join(args, " "), err, out)
	}
}

// vethNS makes a veth pair whose far end is in a new namespace, both ends
// up with MTU 65535 (the siw captures come from lo) and without IPv6, so
// that neither end sends anything of its own. Everything goes at cleanup.
func vethNS(t *testing.T) (host, ns, far string) {
	t.Helper()
	needNetns(t)
	n := nsSeq.Add(1)
	id := fmt.Sprintf("%d%d", os.Getpid()%100000, n)
	host, far, ns = "irpa"+id, "irpb"+id, "iwkit-replay-"+id
	sh(t, "ip", "netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	sh(t, "ip", "link", "add", host, "type", "veth", "peer", "name", far)
	t.Cleanup(func() { exec.Command("ip", "link", "del", host).Run() })
	os.WriteFile("/proc/sys/net/ipv6/conf/"+host+"/disable_ipv6", []byte("1"), 0)
	sh(t, "ip", "link", "set", far, "netns", ns)
	sh(t, "ip", "netns", "exec", ns, "sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/"+far+"/disable_ipv6; ip link set "+far+" mtu 65535 up")
	sh(t, "ip", "link", "set", host, "mtu", "65535", "up")
	return host, ns, far
}

// replayPair is a sender on the near end of a fresh vethNS pair and the
// capture on its far end; both end with the test.
func replayPair(t *testing.T) (*Interface, *farCapture) {
	t.Helper()
	host, ns, far := vethNS(t)
	capt := startCapture(t, ns, far)
	sink, err := OpenInterface(host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	return sink, capt
}

type captured struct {
	ts   time.Time
	data []byte
}

// farCapture is the capture running in the namespace.
type farCapture struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	mu     sync.Mutex
	frames []captured
	done   chan struct{}
	stderr bytes.Buffer
}

func startCapture(t *testing.T, ns, iface string) *farCapture {
	t.Helper()
	c := &farCapture{done: make(chan struct{})}
	c.cmd = exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^$")
	c.cmd.Env = append(os.Environ(), helperEnv+"="+iface)
	c.cmd.Stderr = &c.stderr
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.stdin.Close()
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			c.cmd.Process.Kill()
			<-c.done
		}
	})
	r := bufio.NewReaderSize(stdout, 1<<20)
	ready := make(chan error, 1)
	go func() {
		defer close(c.done)
		defer c.cmd.Wait()
		b, err := r.ReadByte()
		if err != nil || b != 'R' {
			ready <- fmt.Errorf("capture did not start: %v", err)
			return
		}
		ready <- nil
		var hdr [12]byte
		for {
			if _, err := io.ReadFull(r, hdr[:]); err != nil {
				return
			}
			d := make([]byte, binary.BigEndian.Uint32(hdr[:4]))
			if _, err := io.ReadFull(r, d); err != nil {
				return
			}
			c.mu.Lock()
			c.frames = append(c.frames, captured{time.Unix(0, int64(binary.BigEndian.Uint64(hdr[4:]))), d})
			c.mu.Unlock()
		}
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("%v: %s", err, c.stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("capture did not start")
	}
	return c
}

// wait returns the frames once n arrived (or after a quiet timeout).
func (c *farCapture) wait(n int) []captured {
	end := time.Now().Add(10 * time.Second)
	for time.Now().Before(end) {
		c.mu.Lock()
		got := len(c.frames)
		c.mu.Unlock()
		if got >= n {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // and nothing more
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.frames
	c.frames = nil
	return out
}

// TestVethEveryFrame replays every siw capture onto the veth pair; the
// capture in the namespace sees every frame, byte for byte, in order.
func TestVethEveryFrame(t *testing.T) {
	sink, capt := replayPair(t)
	files, _ := filepath.Glob("../testdata/siw/*.pcap")
	if len(files) < 10 {
		t.Fatalf("siw captures: %v", files)
	}
	total := 0
	for _, name := range files {
		want := readFrames(t, name)
		st, err := File(name, sink, Options{PPS: 5000})
		if err != nil {
			t.Fatal(err)
		}
		got := capt.wait(len(want))
		if st.Packets != uint64(len(want)) || st.Failed != 0 || len(got) != len(want) {
			t.Fatalf("%s: sent %d of %d (%d failed), %d arrived", name, st.Packets, len(want), st.Failed, len(got))
		}
		for i := range want {
			if !bytes.Equal(got[i].data, want[i]) {
				t.Fatalf("%s: frame %d differs", filepath.Base(name), i+1)
			}
		}
		total += len(want)
	}
	t.Logf("%d frames of %d captures arrived intact and in order", total, len(files))
}

// rate measures a capture's rate over its span.
func rate(fr []captured, octets bool) float64 {
	if len(fr) < 2 {
		return 0
	}
	var n float64
	for _, f := range fr[1:] {
		if octets {
			n += float64(len(f.data)) * 8
		} else {
			n++
		}
	}
	return n / fr[len(fr)-1].ts.Sub(fr[0].ts).Seconds()
}

// TestVethRates: --pps and --mbps hold their rate over more than a
// second (measured on the far side; the band is generous because the
// machine is shared), and --loop repeats the file.
func TestVethRates(t *testing.T) {
	sink, capt := replayPair(t)
	want := readFrames(t, rpingPcap)
	st, err := File(rpingPcap, sink, Options{PPS: 400, Loop: 12})
	if err != nil {
		t.Fatal(err)
	}
	got := capt.wait(12 * len(want))
	if len(got) != 12*len(want) || st.Packets != uint64(len(got)) {
		t.Fatalf("--loop 12: %d arrived, %d sent, want %d", len(got), st.Packets, 12*len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i].data, want[i%len(want)]) {
			t.Fatalf("--loop: frame %d differs", i)
		}
	}
	// The schedule itself is checked exactly in TestPacerSchedule; here
	// the band only has to survive a loaded machine's stalls.
	if r := rate(got, false); r < 400*0.75 || r > 400*1.25 {
		t.Errorf("--pps 400: %.1f pps arrived", r)
	}
	if r := float64(st.Packets) / st.Elapsed().Seconds(); r < 400*0.75 || r > 400*1.25 {
		t.Errorf("--pps 400: %.1f pps sent", r)
	}

	mtu := "../testdata/siw/mtu1500_ib_write_bw_32768.pcap"
	want = readFrames(t, mtu)
	st, err = File(mtu, sink, Options{Mbps: 2, Loop: 2, Preload: true})
	if err != nil {
		t.Fatal(err)
	}
	got = capt.wait(2 * len(want))
	if len(got) != 2*len(want) {
		t.Fatalf("--mbps: %d arrived of %d", len(got), 2*len(want))
	}
	if st.Elapsed() < time.Second {
		t.Fatalf("--mbps 2 run too short to judge: %v", st.Elapsed())
	}
	// The first frame's octets are not in the span.
	if r := rate(got, true) / 1e6; r < 2*0.75 || r > 2*1.25 {
		t.Errorf("--mbps 2: %.3f Mbit/s arrived", r)
	}
}

// TestReportLikeTcpreplay: tcpreplay (Debian's; the test script installs
// it) and iwreplay replay the same file onto the same veth; their reports
// have the same shape, line for line, numbers aside.
func TestReportLikeTcpreplay(t *testing.T) {
	host, ns, far := vethNS(t)
	path, err := exec.LookPath("tcpreplay")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tcpreplay is not installed; ./test.sh installs it")
		}
		t.Skip("tcpreplay is not installed")
	}
	capt := startCapture(t, ns, far)
	out, err := exec.Command(path, "-i", host, "--pps", "2000", rpingPcap).CombinedOutput()
	if err != nil {
		t.Fatalf("tcpreplay: %v %s", err, out)
	}
	want := readFrames(t, rpingPcap)
	if got := capt.wait(len(want)); len(got) != len(want) {
		t.Fatalf("tcpreplay's frames: %d of %d arrived", len(got), len(want))
	}
	sink, err := OpenInterface(host)
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	st, err := File(rpingPcap, sink, Options{PPS: 2000})
	if err != nil {
		t.Fatal(err)
	}
	if got := capt.wait(len(want)); len(got) != len(want) {
		t.Fatalf("our frames: %d of %d arrived", len(got), len(want))
	}
	var b bytes.Buffer
	st.Report(&b)
	theirs := strings.Split(strings.TrimSpace(tcpreplayShape(string(out))), "\n")
	ours := strings.Split(strings.TrimSpace(tcpreplayShape(b.String())), "\n")
	// tcpreplay may print warnings first; compare from "Actual:".
	for len(theirs) > 0 && !strings.HasPrefix(theirs[0], "Actual:") {
		theirs = theirs[1:]
	}
	if strings.Join(theirs, "\n") != strings.Join(ours, "\n") {
		t.Fatalf("tcpreplay's report:\n%s\nours:\n%s", out, b.String())
	}
}
