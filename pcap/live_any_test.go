//go:build linux

package pcap

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/internal/testenv"
	"github.com/iwkit/iwkit/pcap/bpf"
	"golang.org/x/sys/unix"
)

// openAnyT opens "any" with filter (compiled for LINUX_SLL, user-space
// form), or skips the test saying why when the process may not capture.
func openAnyT(t testing.TB, filter string, o LiveOptions) *Live {
	t.Helper()
	testenv.NeedRoot(t, "live capture (CAP_NET_RAW)")
	if filter != "" {
		prog, err := bpf.Compile(filter, layers.LinkTypeLinuxSLL, bpf.Options{Snaplen: o.Snaplen})
		if err != nil {
			t.Fatal(err)
		}
		o.Filter = prog
	}
	l, err := OpenLive(AnyInterface, o)
	var pe *PermissionError
	if errors.As(err, &pe) {
		testenv.Skipf(t, "no CAP_NET_RAW: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// cookedSeq returns the sequence number in a captured cooked frame of a
// datagram to port, checking the cooked header of a loopback packet.
func cookedSeq(t testing.TB, f *Frame, port int) (int, bool) {
	t.Helper()
	d := f.Data
	if f.LinkType != layers.LinkTypeLinuxSLL || len(d) < 16+20+8+4 {
		t.Errorf("frame %d: link type %v, %d octets", f.Number, f.LinkType, len(d))
		return 0, false
	}
	// Packet type PACKET_HOST (the outgoing copy is dropped), ARPHRD_LOOPBACK,
	// a 6-octet all-zero address, IPv4.
	want := []byte{0, 0, 0x03, 0x04, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0x08, 0x00}
	if !bytes.Equal(d[:16], want) {
		t.Errorf("frame %d: cooked header % x, want % x", f.Number, d[:16], want)
		return 0, false
	}
	ip := d[16:]
	if ip[9] != 17 {
		return 0, false
	}
	u := ip[int(ip[0]&0xf)*4:]
	if int(binary.BigEndian.Uint16(u[2:])) != port {
		t.Errorf("frame %d: port %d passed the filter 'udp dst port %d'", f.Number, binary.BigEndian.Uint16(u[2:]), port)
		return 0, false
	}
	return int(binary.BigEndian.Uint32(u[8:])), true
}

// Datagrams on lo captured on "any": each once (the outgoing copy is
// dropped), with the cooked header, the capture filter applied, kernel
// timestamps, and the statistics.
func TestLiveAnyLoopbackEachPacketOnce(t *testing.T) {
	sink, port := udpSink(t)
	defer sink.Close()
	noise, noisePort := udpSink(t)
	defer noise.Close()
	l := openAnyT(t, fmt.Sprintf("udp dst port %d", port), LiveOptions{})
	defer l.Close()
	if l.LinkType() != layers.LinkTypeLinuxSLL || l.Interface() != "any" {
		t.Fatalf("link type %v, interface %q", l.LinkType(), l.Interface())
	}
	const n = 2000
	before := time.Now()
	go func() {
		sendSeq(t, noisePort, 100, 50) // the filter keeps these out
		sendSeq(t, port, n, 200)
		sink.waitSeq(n - 1)
		l.Stop()
	}()
	seen := make([]int, n)
	readLive(t, l, func(f *Frame) {
		if s, ok := cookedSeq(t, f, port); ok && s < n {
			seen[s]++
		}
		if f.CapLen != len(f.Data) || f.OrigLen != f.CapLen || f.CapLen != 16+20+8+200 {
			t.Errorf("frame %d: caplen %d origlen %d data %d", f.Number, f.CapLen, f.OrigLen, len(f.Data))
		}
		if f.Timestamp.Before(before.Add(-time.Second)) || f.Timestamp.After(time.Now()) {
			t.Errorf("frame %d: timestamp %v not during the test", f.Number, f.Timestamp)
		}
	})
	checkSeenOnce(t, seen)
	st, err := l.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %+v", l.Method(), st)
	if st.Captured != n || st.Dropped != 0 || st.Received < n+100 {
		t.Errorf("stats %+v, want %d captured, none dropped, at least %d received", st, n, n+100)
	}
}

// Stop right after the traffic: every frame queued before Stop comes out.
func TestLiveAnyStopDrains(t *testing.T) {
	sink, port := udpSink(t)
	defer sink.Close()
	l := openAnyT(t, fmt.Sprintf("udp dst port %d", port), LiveOptions{})
	defer l.Close()
	const n = 300
	sendSeq(t, port, n, 100)
	l.Stop()
	got := 0
	readLive(t, l, func(f *Frame) {
		got++
	})
	if got != n {
		t.Errorf("%d frames after Stop, want %d", got, n)
	}
	// Next keeps saying io.EOF.
	if err := l.Next(new(Frame)); err != io.EOF {
		t.Errorf("Next after the end: %v", err)
	}
}

// Snaplen counts the cooked header; OrigLen is the length on the wire.
func TestLiveAnySnaplen(t *testing.T) {
	checkSnaplen(t, cookedLen, func(port int) *Live {
		return openAnyT(t, fmt.Sprintf("udp dst port %d", port), LiveOptions{Snaplen: 64})
	})
}

func TestLiveAnyOpen(t *testing.T) {
	lt, err := InterfaceLinkType("any")
	if err != nil || lt != layers.LinkTypeLinuxSLL {
		t.Errorf("InterfaceLinkType(any) = %v, %v", lt, err)
	}
	ifs, err := Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	if last := ifs[len(ifs)-1]; last.Name != "any" || last.LinkType != layers.LinkTypeLinuxSLL {
		t.Errorf("Interfaces does not end with any: %+v", last)
	}
	testenv.NeedRoot(t, "opening a capture")
	if _, err := OpenLive("any", LiveOptions{Method: MethodRing}); err == nil {
		t.Error("any with the ring: no error")
	}
	// A kernel-form program (-F) reads packet metadata: it cannot run in
	// user space.
	prog, err := bpf.Compile("vlan 100", layers.LinkTypeEthernet, bpf.Options{Kernel: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLive("any", LiveOptions{Filter: prog}); err == nil {
		t.Error("kernel-form filter on any: no error")
	}
}

// The cooked headers (and the rest) of the same datagrams captured by
// tcpdump -i any -y LINUX_SLL and by OpenLive("any") are the same octets.
func TestLiveAnyCookedMatchesTcpdump(t *testing.T) {
	tcpdump := testenv.Tool(t, "tcpdump")
	sink, port := udpSink(t)
	defer sink.Close()
	l := openAnyT(t, fmt.Sprintf("udp dst port %d", port), LiveOptions{})
	defer l.Close()
	file := filepath.Join(t.TempDir(), "any.pcap")
	stopTcpdump := startTcpdump(t, tcpdump, file, fmt.Sprintf("udp dst port %d", port))
	const n = 20
	sendSeq(t, port, n, 64)
	waitFileFrames(file, n, func([]byte) bool { return true })
	stderr := stopTcpdump()
	l.Stop()
	var ours [][]byte
	var f Frame
	for l.Next(&f) == nil {
		ours = append(ours, append([]byte(nil), f.Data...))
	}
	r, err := Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var theirs [][]byte
	for r.Next(&f) == nil {
		if f.LinkType != layers.LinkTypeLinuxSLL {
			t.Fatalf("tcpdump wrote link type %v", f.LinkType)
		}
		theirs = append(theirs, append([]byte(nil), f.Data...))
	}
	if len(ours) != n || len(theirs) != n {
		t.Fatalf("%d frames captured here, %d by tcpdump, want %d each (tcpdump: %s)", len(ours), len(theirs), n, stderr)
	}
	for i := range ours {
		if !bytes.Equal(ours[i], theirs[i]) {
			t.Errorf("datagram %d:\n here    % x\n tcpdump % x", i, ours[i][:min(len(ours[i]), 40)], theirs[i][:min(len(theirs[i]), 40)])
		}
	}
}

// waitFileFrames waits until the capture file being written (tcpdump -U
// writes each packet as it takes it) holds want frames that match, polling
// at most 500 times, 10 ms apart; the test then compares what there is.
func waitFileFrames(file string, want int, match func([]byte) bool) {
	for i := 0; i < 500; i++ {
		got := 0
		if r, err := Open(file); err == nil {
			var f Frame
			for r.Next(&f) == nil {
				if match(f.Data) {
					got++
				}
			}
			r.Close()
		}
		if got >= want {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// startTcpdump runs tcpdump -i any -y LINUX_SLL -w file [filter] and
// returns once it listens (its filter is attached); stop ends it with
// SIGINT and returns what it said.
func startTcpdump(t *testing.T, tcpdump, file string, filter ...string) (stop func() string) {
	t.Helper()
	// A small snaplen: in immediate mode libpcap gives each frame of its
	// ring a slot of snaplen octets, and its ring holds few of 256 KiB.
	args := append([]string{"-i", "any", "-y", "LINUX_SLL", "--immediate-mode", "-s", "2048", "-U", "-w", file}, filter...)
	cmd := exec.Command(tcpdump, args...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		testenv.Skipf(t, "tcpdump: %v", err)
	}
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var said []string
	timeout := time.After(10 * time.Second)
wait:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				cmd.Wait()
				t.Fatalf("tcpdump ended: %s", strings.Join(said, "\n"))
			}
			said = append(said, line)
			if strings.Contains(line, "listening on") {
				break wait
			}
		case <-timeout:
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("tcpdump does not listen: %s", strings.Join(said, "\n"))
		}
	}
	return func() string {
		cmd.Process.Signal(os.Interrupt)
		for line := range lines {
			said = append(said, line)
		}
		cmd.Wait()
		return strings.Join(said, "\n")
	}
}

// BenchmarkLiveAnyLoopback: frames/s the "any" socket delivers on lo while
// a sender blasts 1448-octet UDP datagrams, with the capture filter in user
// space.
func BenchmarkLiveAnyLoopback(b *testing.B) {
	benchBlast(b, func(port int) *Live {
		return openAnyT(b, fmt.Sprintf("udp dst port %d", port), LiveOptions{})
	})
}

// VLAN tags the kernel took out of packets are put back after the cooked
// header as libpcap does: tagged frames written on one end of a veth pair
// (seen leaving there and arriving, with the tag in metadata, on the
// peer) come out of "any" with the same octets as out of tcpdump -i any
// -y LINUX_SLL.
func TestLiveAnyVLANMatchesTcpdump(t *testing.T) {
	tcpdump := testenv.Tool(t, "tcpdump")
	a, _ := veth(t)
	l := openAnyT(t, "", LiveOptions{})
	defer l.Close()
	file := filepath.Join(t.TempDir(), "vlan.pcap")
	stopTcpdump := startTcpdump(t, tcpdump, file)
	payload := []byte("iwkit any vlan test")
	frames := [][]byte{
		vlanUDPFrame(t, 7777, payload, [2]uint16{0x8100, 0x2064}),
		vlanUDPFrame(t, 7777, payload, [2]uint16{0x88a8, 100}, [2]uint16{0x8100, 300}),
		vlanUDPFrame(t, 7777, payload),
	}
	ifc, err := net.InterfaceByName(a)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
	if err != nil {
		testenv.Skipf(t, "raw socket: %v", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifc.Index}); err != nil {
		t.Fatal(err)
	}
	for _, fr := range frames {
		if _, err := unix.Write(fd, fr); err != nil {
			t.Fatal(err)
		}
	}
	// Each frame is seen twice: leaving a, arriving on b.
	waitFileFrames(file, 2*len(frames), func(b []byte) bool { return bytes.Contains(b, payload) })
	stderr := stopTcpdump()
	l.Stop()
	pick := func(next func(*Frame) error) []string {
		var out []string
		var f Frame
		for next(&f) == nil {
			if bytes.Contains(f.Data, payload) {
				out = append(out, fmt.Sprintf("% x", f.Data))
			}
		}
		sort.Strings(out)
		return out
	}
	ours := pick(l.Next)
	r, err := Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	theirs := pick(r.Next)
	if len(theirs) != 2*len(frames) {
		t.Logf("tcpdump: %s", stderr)
	}
	if strings.Join(ours, "\n") != strings.Join(theirs, "\n") {
		t.Errorf("frames differ:\n here\n  %s\n tcpdump\n  %s", strings.Join(ours, "\n  "), strings.Join(theirs, "\n  "))
	}
	tagged := 0
	for _, s := range ours {
		if strings.HasPrefix(s[14*3:], "81 00") {
			tagged++
		}
	}
	t.Logf("%d frames, %d with the tag after the cooked header", len(ours), tagged)
}

// BenchmarkLiveAnyDrain: how fast Next takes frames out of the "any"
// socket when the kernel has queued them (sent first, read afterwards):
// the capacity of the reader (a recvmsg, the cooked header and the
// user-space filter per frame), without a sender sharing the CPU.
func BenchmarkLiveAnyDrain(b *testing.B) {
	benchDrain(b, func(port int) *Live {
		return openAnyT(b, fmt.Sprintf("udp dst port %d", port), LiveOptions{BufferSize: 256 << 20})
	})
}
