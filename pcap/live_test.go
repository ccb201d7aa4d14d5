//go:build linux

package pcap

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/iwkit/iwkit/internal/testenv"
	"github.com/iwkit/iwkit/pcap/bpf"
	"golang.org/x/sys/unix"
)

// openLoopback opens lo with filter, or skips the test saying why when the
// process may not capture.
func openLoopback(t testing.TB, filter string, o LiveOptions) *Live {
	t.Helper()
	testenv.NeedRoot(t, "live capture (CAP_NET_RAW)")
	lt, err := InterfaceLinkType("lo")
	if err != nil {
		testenv.Skipf(t, "no loopback interface: %v", err)
	}
	if filter != "" {
		prog, err := bpf.Compile(filter, lt, bpf.Options{Kernel: true, Snaplen: o.Snaplen})
		if err != nil {
			t.Fatal(err)
		}
		o.Filter = prog
	}
	l, err := OpenLive("lo", o)
	var pe *PermissionError
	if errors.As(err, &pe) {
		testenv.Skipf(t, "no CAP_NET_RAW: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// udpSink listens on 127.0.0.1 and reads (and discards) what arrives.
func udpSink(t testing.TB) (*sink, int) {
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{UDPConn: c}
	s.last.Store(-1)
	go func() {
		buf := make([]byte, 65536)
		for {
			n, _, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			if n >= 4 {
				s.last.Store(int64(binary.BigEndian.Uint32(buf)))
			}
		}
	}()
	return s, c.LocalAddr().(*net.UDPAddr).Port
}

// sink receives the datagrams of sendSeq and notes the sequence number of
// the last one. A packet reaches a socket after the packet taps (Linux
// hands it to AF_PACKET sockets before the protocol stack), so once the
// sink holds the last datagram of a burst, every capture has been handed
// the whole burst: a test waits for that instead of sleeping.
type sink struct {
	*net.UDPConn
	last atomic.Int64
}

// waitSeq waits until datagram seq has arrived, polling, for at most ten
// seconds (the datagram may have been dropped; the test then finds out
// what its capture holds).
func (s *sink) waitSeq(seq int) {
	for i := 0; i < 10000 && s.last.Load() < int64(seq); i++ {
		time.Sleep(time.Millisecond)
	}
}

// sendSeq sends n datagrams numbered from 0 to port.
func sendSeq(t testing.TB, port, n, size int) {
	c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := make([]byte, max(size, 8))
	copy(b[4:], "iwkit-live-test")
	for i := 0; i < n; i++ {
		binary.BigEndian.PutUint32(b, uint32(i))
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
	}
}

// checkSeenOnce fails unless every datagram (seen counts them by their
// sequence number) was captured exactly once.
func checkSeenOnce(t *testing.T, seen []int) {
	t.Helper()
	bad := 0
	for i, c := range seen {
		if c != 1 && bad < 10 {
			t.Errorf("datagram %d captured %d times, want once", i, c)
			bad++
		}
	}
}

// readLive reads frames from l until io.EOF, handing each to fn.
func readLive(t testing.TB, l *Live, fn func(f *Frame)) {
	t.Helper()
	var f Frame
	for {
		err := l.Next(&f)
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		fn(&f)
	}
}

// seqOf returns the sequence number in a captured datagram to port.
func seqOf(t testing.TB, f *Frame, port int) (int, bool) {
	var p Packet
	// DecodeTCP knows only TCP: take UDP apart here (Ethernet, IPv4).
	d := f.Data
	if len(d) < 14+20+8+4 || binary.BigEndian.Uint16(d[12:]) != 0x0800 {
		return 0, false
	}
	ihl := int(d[14]&0xf) * 4
	if d[14+9] != 17 {
		return 0, false
	}
	u := d[14+ihl:]
	if int(binary.BigEndian.Uint16(u[2:])) != port {
		t.Errorf("frame %d: port %d passed the filter 'udp dst port %d'", f.Number, binary.BigEndian.Uint16(u[2:]), port)
		return 0, false
	}
	_ = p
	return int(binary.BigEndian.Uint32(u[8:])), true
}

func TestLiveLoopbackEachPacketOnce(t *testing.T) {
	for _, m := range []struct {
		name   string
		method CaptureMethod
	}{{"ring", MethodRing}, {"socket", MethodSocket}} {
		t.Run(m.name, func(t *testing.T) {
			sink, port := udpSink(t)
			defer sink.Close()
			l := openLoopback(t, fmt.Sprintf("udp dst port %d", port), LiveOptions{Method: m.method})
			defer l.Close()
			if m.method == MethodRing && !strings.HasPrefix(l.Method(), "TPACKET_V3") {
				t.Fatalf("method %q", l.Method())
			}
			if l.LinkType() != layers.LinkTypeEthernet {
				t.Fatalf("link type %v", l.LinkType())
			}
			const n = 2000
			go func() {
				sendSeq(t, port, n, 200)
				sink.waitSeq(n - 1)
				l.Stop()
			}()
			seen := make([]int, n)
			readLive(t, l, func(f *Frame) {
				if s, ok := seqOf(t, f, port); ok && s < n {
					seen[s]++
				}
				if f.CapLen != len(f.Data) || f.OrigLen != f.CapLen {
					t.Errorf("frame %d: caplen %d origlen %d data %d", f.Number, f.CapLen, f.OrigLen, len(f.Data))
				}
			})
			checkSeenOnce(t, seen)
			st, err := l.Stats()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %+v", l.Method(), st)
			if st.Captured != n || st.Dropped != 0 || st.Received < n {
				t.Errorf("stats %+v, want %d captured, none dropped", st, n)
			}
		})
	}
}

// Stats is read while Next runs on another goroutine (the TUI's status
// line does so): its Captured count grows with the frames handed out and
// ends at the burst. Under -race this fails if Next's count is not safe to
// read from another goroutine.
func TestLiveStatsWhileCapturing(t *testing.T) {
	for _, m := range []struct {
		name string
		open func(t testing.TB, filter string) *Live
	}{
		{"ring", func(t testing.TB, f string) *Live { return openLoopback(t, f, LiveOptions{Method: MethodRing}) }},
		{"socket", func(t testing.TB, f string) *Live { return openLoopback(t, f, LiveOptions{Method: MethodSocket}) }},
		{"any", func(t testing.TB, f string) *Live { return openAnyT(t, f, LiveOptions{}) }},
	} {
		t.Run(m.name, func(t *testing.T) {
			sink, port := udpSink(t)
			defer sink.Close()
			l := m.open(t, fmt.Sprintf("udp dst port %d", port))
			defer l.Close()
			const n = 400
			read := make(chan int)
			go func() {
				got := 0
				var f Frame
				for l.Next(&f) == nil {
					got++
				}
				read <- got
			}()
			// A failure ends the loops, not the test: Close must wait
			// until the reader's Next has returned.
			var last uint64
			ok := true
			for i := 0; ok && i < n; i += 50 {
				sendSeq(t, port, 50, 100)
				st, err := l.Stats()
				if err != nil {
					t.Error(err)
					ok = false
				} else if st.Captured < last {
					t.Errorf("Captured went back from %d to %d", last, st.Captured)
					ok = false
				}
				last = st.Captured
			}
			// Every datagram sent is captured: wait for the count to reach
			// the burst (a deadline, not a measure).
			for deadline := time.Now().Add(10 * time.Second); ok && last < n && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
				st, _ := l.Stats()
				last = st.Captured
			}
			l.Stop()
			got := <-read
			if st, _ := l.Stats(); st.Captured != uint64(got) || got != n {
				t.Errorf("Stats counted %d frames, Next returned %d, %d were sent", st.Captured, got, n)
			}
		})
	}
}

// Stop right after the traffic: every frame the kernel captured before
// Stop still comes out of Next.
func TestLiveStopDrains(t *testing.T) {
	for _, m := range []CaptureMethod{MethodRing, MethodSocket} {
		sink, port := udpSink(t)
		defer sink.Close()
		l := openLoopback(t, fmt.Sprintf("udp dst port %d", port), LiveOptions{Method: m, BlockTimeout: 200 * time.Millisecond})
		defer l.Close()
		const n = 300
		sendSeq(t, port, n, 100)
		l.Stop() // the ring's last block is still open in the kernel
		got := 0
		readLive(t, l, func(f *Frame) {
			got++
		})
		if got != n {
			t.Errorf("%s: %d frames after Stop, want %d", l.Method(), got, n)
		}
	}
}

func TestLiveSnaplen(t *testing.T) {
	checkSnaplen(t, 14, func(port int) *Live {
		return openLoopback(t, fmt.Sprintf("udp dst port %d", port), LiveOptions{Snaplen: 64})
	})
}

// checkSnaplen: ten 1000-octet datagrams captured with snaplen 64 (by the
// capture open returns, its filter keeping port) come out cut at 64
// octets, with their length on the wire (a link header of hdr octets).
func checkSnaplen(t *testing.T, hdr int, open func(port int) *Live) {
	t.Helper()
	sink, port := udpSink(t)
	defer sink.Close()
	l := open(port)
	defer l.Close()
	go func() {
		sendSeq(t, port, 10, 1000)
		sink.waitSeq(9)
		l.Stop()
	}()
	var f Frame
	n := 0
	for l.Next(&f) == nil {
		n++
		if f.CapLen != 64 || len(f.Data) != 64 || f.OrigLen != hdr+20+8+1000 || !f.Truncated() {
			t.Errorf("frame %d: caplen %d origlen %d", f.Number, f.CapLen, f.OrigLen)
		}
	}
	if n != 10 {
		t.Errorf("%d frames, want 10", n)
	}
}

func TestLiveErrors(t *testing.T) {
	if _, err := OpenLive("no-such-iface0", LiveOptions{}); !errors.Is(err, ErrNoSuchInterface) {
		t.Errorf("unknown interface: %v", err)
	}
	if _, err := InterfaceLinkType("no-such-iface0"); !errors.Is(err, ErrNoSuchInterface) {
		t.Errorf("unknown interface link type: %v", err)
	}
	ifs, err := Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	var lo bool
	for _, i := range ifs {
		if i.Name == "lo" {
			lo = true
			if !strings.Contains(i.Description(), "Loopback") || i.LinkType != layers.LinkTypeEthernet {
				t.Errorf("lo: %s %v", i.Description(), i.LinkType)
			}
		}
	}
	if !lo {
		t.Errorf("lo not listed: %+v", ifs)
	}
}

func TestRingGeometry(t *testing.T) {
	for _, c := range []struct{ buf, bs, n int }{
		{0, 1 << 20, 32}, {2 << 20, 256 << 10, 8}, {64 << 20, 1 << 20, 64}, {100 << 10, 128 << 10, 2},
		{1 << 20, 128 << 10, 8},
	} {
		bs, n := ringGeometry(c.buf)
		if bs != c.bs || n != c.n {
			t.Errorf("ringGeometry(%d) = %d x %d, want %d x %d", c.buf, n, bs, c.n, c.bs)
		}
	}
}

// BenchmarkLiveCaptureLoopback: frames/s the ring delivers on lo while a
// sender blasts UDP datagrams of an iWARP-sized frame (1448 octets of
// payload) as fast as it can, with the kernel filter on. Kernel drops are
// reported; the reader does nothing but count.
func BenchmarkLiveCaptureLoopback(b *testing.B) {
	for _, m := range []struct {
		name   string
		method CaptureMethod
	}{{"ring", MethodRing}, {"socket", MethodSocket}} {
		b.Run(m.name, func(b *testing.B) {
			benchBlast(b, func(port int) *Live {
				return openLoopback(b, fmt.Sprintf("udp dst port %d", port), LiveOptions{Method: m.method})
			})
		})
	}
}

// benchBlast reports the frames/s that the capture open returns (its
// filter keeping the datagrams to port) delivers while a sender blasts
// 1448-octet datagrams to port, and the kernel drops.
func benchBlast(b *testing.B, open func(port int) *Live) {
	sink, port := udpSink(b)
	defer sink.Close()
	l := open(port)
	defer l.Close()
	b.ResetTimer()
	start := time.Now()
	go func() {
		sendSeq(b, port, b.N, 1448)
		time.Sleep(50 * time.Millisecond)
		l.Stop()
	}()
	var f Frame
	n, octets := 0, 0
	for l.Next(&f) == nil {
		n++
		octets += f.CapLen
	}
	el := time.Since(start).Seconds()
	b.StopTimer()
	st, _ := l.Stats()
	b.ReportMetric(float64(n)/el, "frames/s")
	b.ReportMetric(float64(octets)*8/el/1e9, "Gbit/s")
	b.ReportMetric(float64(st.Dropped), "drops")
	b.ReportMetric(float64(b.N-n), "lost")
}

// BenchmarkLiveRingDrain: how fast the reader takes frames out of the
// ring when the kernel has filled it (sent first, read afterwards): the
// capacity of the capture loop itself, without a sender sharing the CPU.
func BenchmarkLiveRingDrain(b *testing.B) {
	benchDrain(b, func(port int) *Live {
		return openLoopback(b, fmt.Sprintf("udp dst port %d", port), LiveOptions{BufferSize: 256 << 20, BlockTimeout: 5 * time.Millisecond})
	})
}

// benchDrain reports how fast Next takes frames that the kernel queued
// (batches of 20000 datagrams of 1448 octets sent first, read afterwards)
// out of the capture open returns, its filter keeping the datagrams to
// port. 20000 frames of 1490 octets fit a 256 MiB buffer.
func benchDrain(b *testing.B, open func(port int) *Live) {
	sink, port := udpSink(b)
	defer sink.Close()
	l := open(port)
	defer l.Close()
	const batch = 20000
	var f Frame
	total, octets := 0, 0
	var el time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		b.StopTimer()
		sendSeq(b, port, batch, 1448)
		time.Sleep(20 * time.Millisecond) // the ring's last block retires
		b.StartTimer()
		start := time.Now()
		for got := 0; got < batch; got++ {
			if err := l.Next(&f); err != nil {
				b.Fatal(err)
			}
			octets += f.CapLen
		}
		el += time.Since(start)
		total += batch
	}
	b.StopTimer()
	st, _ := l.Stats()
	b.ReportMetric(float64(total)/el.Seconds(), "frames/s")
	b.ReportMetric(float64(octets)*8/el.Seconds()/1e9, "Gbit/s")
	b.ReportMetric(float64(st.Dropped), "drops")
}

// veth creates a veth pair for a test and removes it at the end.
func veth(t *testing.T) (a, b string) {
	t.Helper()
	testenv.NeedRoot(t, "creating a veth pair")
	a, b = fmt.Sprintf("iwk%da", os.Getpid()%10000), fmt.Sprintf("iwk%db", os.Getpid()%10000)
	if out, err := exec.Command("ip", "link", "add", a, "type", "veth", "peer", "name", b).CombinedOutput(); err != nil {
		testenv.Skipf(t, "cannot create a veth pair: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "link", "del", a).Run() })
	for _, n := range []string{a, b} {
		if out, err := exec.Command("ip", "link", "set", n, "up").CombinedOutput(); err != nil {
			t.Fatalf("ip link set %s up: %v %s", n, err, out)
		}
	}
	// The kernel brings a link up from its linkwatch work, a moment after
	// "ip link set up" returns; until then frames written on it are
	// dropped. Wait (polling, at most ten seconds) until both ends say so.
	for _, n := range []string{a, b} {
		state := ""
		for i := 0; i < 2000 && state != "up"; i++ {
			if i > 0 {
				time.Sleep(5 * time.Millisecond)
			}
			st, _ := os.ReadFile("/sys/class/net/" + n + "/operstate")
			state = strings.TrimSpace(string(st))
		}
		if state != "up" {
			t.Fatalf("%s is %q, not up", n, state)
		}
	}
	return a, b
}

// TestLiveVLANKernel checks the kernel form of "vlan" on a real kernel.
// Tagged frames are written raw on one end of a veth pair. On the peer
// they arrive with the outer tag moved into metadata (the program reads
// SKF_AD_VLAN_TAG*); on the sending end they are seen leaving with the tag
// still in the packet. Both captures must keep exactly the frames the
// expression describes, and hand them over with their tags in place.
func TestLiveVLANKernel(t *testing.T) {
	a, b := veth(t)
	frameTo := func(dport uint16, tags ...[2]uint16) []byte {
		return vlanUDPFrame(t, dport, []byte("vlan test"), tags...)
	}
	type frame struct {
		name string
		data []byte
		keep map[string]bool // by filter
	}
	const (
		f100   = "vlan 100 and udp dst port 7777"
		fQinQ  = "vlan 100 and vlan 300 and udp"
		fNoTag = "udp dst port 7777 and not vlan" // vlan shifts what follows it
	)
	frames := []frame{
		{"vlan100-7777", frameTo(7777, [2]uint16{0x8100, 0x2064}), map[string]bool{f100: true}},
		{"vlan200-7777", frameTo(7777, [2]uint16{0x8100, 200}), nil},
		{"untagged-7777", frameTo(7777), map[string]bool{fNoTag: true}},
		{"vlan100-8888", frameTo(8888, [2]uint16{0x8100, 100}), nil},
		{"qinq-100-300", frameTo(7777, [2]uint16{0x88a8, 100}, [2]uint16{0x8100, 300}), map[string]bool{f100: false, fQinQ: true}},
	}
	// Which frames each filter keeps, as tcpdump -r would on the frames
	// as written (the file form of the same expression).
	for _, fr := range frames {
		for _, expr := range []string{f100, fQinQ, fNoTag} {
			ff, err := bpf.NewFilter(expr)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := ff.Match(layers.LinkTypeEthernet, fr.data); err != nil || got != fr.keep[expr] {
				t.Fatalf("%s on %s: file program says %v (%v)", expr, fr.name, got, err)
			}
		}
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
	const copies = 5
	for _, where := range []string{b, a} { // metadata (received), in-packet (sent)
		for _, m := range []CaptureMethod{MethodRing, MethodSocket} {
			for _, expr := range []string{f100, fQinQ, fNoTag} {
				name := fmt.Sprintf("%s/%s/%s", where, map[CaptureMethod]string{MethodRing: "ring", MethodSocket: "socket"}[m], expr)
				prog, err := bpf.Compile(expr, layers.LinkTypeEthernet, bpf.Options{Kernel: true})
				if err != nil {
					t.Fatal(err)
				}
				l, err := OpenLive(where, LiveOptions{Filter: prog, Method: m})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				for i := 0; i < copies; i++ {
					for _, fr := range frames {
						if _, err := unix.Write(fd, fr.data); err != nil {
							t.Fatal(err)
						}
					}
				}
				time.Sleep(100 * time.Millisecond)
				l.Stop()
				got := map[string]int{}
				var f Frame
				for l.Next(&f) == nil {
					matched := ""
					for _, fr := range frames {
						want := fr.data
						if m == MethodSocket && where == b && len(want) > 16 && binary.BigEndian.Uint16(want[12:]) != 0x0800 {
							// The socket method learns only the VLAN ID of
							// a tag the kernel took out: it puts back an
							// 802.1Q tag without priority bits.
							want = append([]byte{}, want...)
							binary.BigEndian.PutUint16(want[12:], 0x8100)
							binary.BigEndian.PutUint16(want[14:], binary.BigEndian.Uint16(want[14:])&0x0fff)
						}
						if bytes.Equal(f.Data, want) {
							matched = fr.name
						}
					}
					if matched == "" {
						t.Errorf("%s: captured a frame not as written: % x", name, f.Data[:min(len(f.Data), 24)])
					}
					got[matched]++
				}
				l.Close()
				for _, fr := range frames {
					want := 0
					if fr.keep[expr] {
						want = copies
					}
					if got[fr.name] != want {
						t.Errorf("%s: %s captured %d times, want %d", name, fr.name, got[fr.name], want)
					}
				}
			}
		}
	}
}

// Frames the kernel queued before the capture filter was attached must not
// come out: other traffic on lo while the capture opens (here a steady
// stream to another port) never reaches Next.
func TestLiveNothingBeforeFilter(t *testing.T) {
	for _, m := range []CaptureMethod{MethodRing, MethodSocket} {
		noise, noisePort := udpSink(t)
		defer noise.Close()
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			c, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: noisePort})
			if err != nil {
				return
			}
			defer c.Close()
			for {
				select {
				case <-stop:
					return
				default:
					c.Write([]byte("noise"))
				}
			}
		}()
		time.Sleep(20 * time.Millisecond)
		sink, port := udpSink(t)
		defer sink.Close()
		l := openLoopback(t, fmt.Sprintf("udp dst port %d", port), LiveOptions{Method: m, BlockTimeout: 200 * time.Millisecond})
		defer l.Close()
		close(stop)
		<-done
		const n = 100
		sendSeq(t, port, n, 100)
		l.Stop()
		got, other := 0, 0
		readLive(t, l, func(f *Frame) {
			if _, ok := seqOf(t, f, port); ok {
				got++
			} else {
				other++
			}
		})
		if got != n || other != 0 {
			t.Errorf("%s: %d frames to the filtered port (want %d) and %d others (want 0)", l.Method(), got, n, other)
		}
	}
}

// A held ring block keeps its frames where they are while the reader goes
// on: with every block held, a burst of four rings' worth of traffic stops
// the kernel (it drops and counts the rest) rather than overwriting what
// is held; once released, blocks go back to it.
func TestLiveRingHold(t *testing.T) {
	sink, port := udpSink(t)
	defer sink.Close()
	l := openLoopback(t, fmt.Sprintf("udp dst port %d", port), LiveOptions{Method: MethodRing, BufferSize: 1 << 20})
	defer l.Close()
	if l.RingBlocks() != 8 {
		t.Fatalf("%d blocks, want 8 of 128 KiB", l.RingBlocks())
	}
	const n = 3000 // of 1400 octets: 4 MiB
	go func() {
		sendSeq(t, port, n, 1400)
		time.Sleep(300 * time.Millisecond) // the sink may drop some: no waitSeq
		l.Stop()
	}()
	type kept struct {
		data, copy []byte
	}
	var (
		frames []kept
		held   []*Block
		last   *Block
		gen    uint64
	)
	readLive(t, l, func(f *Frame) {
		b := l.Block()
		if b == nil {
			t.Fatalf("frame %d is not in the ring", f.Number)
		}
		if b != last || b.Gen() != gen {
			b.Hold()
			held = append(held, b)
			last, gen = b, b.Gen()
		}
		frames = append(frames, kept{f.Data, bytes.Clone(f.Data)})
	})
	for i, k := range frames {
		if !bytes.Equal(k.data, k.copy) {
			t.Fatalf("frame %d of %d changed while its block was held", i+1, len(frames))
		}
	}
	st, err := l.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d frames in %d blocks held; %+v", len(frames), len(held), st)
	if len(held) > l.RingBlocks() || st.Dropped == 0 || st.Captured+st.Dropped != st.Received {
		t.Errorf("%d blocks held of %d, stats %+v: want the kernel stopped at the held ring, its drops counted", len(held), l.RingBlocks(), st)
	}
	for _, b := range held {
		b.Release()
	}
	for i := range l.rg.blocks {
		if b := &l.rg.blocks[i]; b.refs.Load() > 1 || (b.refs.Load() == 0 && atomic.LoadUint32(&b.desc.Block_status) != unix.TP_STATUS_KERNEL) {
			t.Errorf("block %d not back with the kernel after its release (refs %d)", i, b.refs.Load())
		}
	}
}

// TestLiveRingCloseWhileHeld: closing the capture while a holder (a -w
// writer, a decoder) still holds a block leaves that block's frames
// readable (before, Close unmapped the ring under the holder: a read
// faulted); the last release unmaps it.
func TestLiveRingCloseWhileHeld(t *testing.T) {
	sink, port := udpSink(t)
	defer sink.Close()
	l := openLoopback(t, fmt.Sprintf("udp dst port %d", port), LiveOptions{Method: MethodRing, BufferSize: 1 << 20})
	const n = 20
	go func() {
		sendSeq(t, port, n, 1000)
		time.Sleep(300 * time.Millisecond)
		l.Stop()
	}()
	var (
		held        []*Block
		data, saved [][]byte
	)
	readLive(t, l, func(f *Frame) {
		b := l.Block()
		if b == nil {
			t.Fatalf("frame %d is not in the ring", f.Number)
		}
		b.Hold()
		held = append(held, b)
		data, saved = append(data, f.Data), append(saved, bytes.Clone(f.Data))
	})
	if len(held) == 0 {
		t.Fatal("no frame captured")
	}
	rg := l.rg
	l.Close()
	rg.closeMu.Lock()
	mapped := rg.mem != nil
	rg.closeMu.Unlock()
	if !mapped {
		t.Fatal("Close unmapped the ring while blocks were held")
	}
	for i := range data {
		if !bytes.Equal(data[i], saved[i]) { // faults if the ring is gone
			t.Fatalf("frame %d changed after Close", i+1)
		}
	}
	for _, b := range held {
		b.Release()
	}
	rg.closeMu.Lock()
	mapped = rg.mem != nil
	rg.closeMu.Unlock()
	if mapped {
		t.Error("the ring is still mapped after the last release")
	}
}
