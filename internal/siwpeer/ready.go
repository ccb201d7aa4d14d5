package siwpeer

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"
)

// ReadyPort is the guest port a guest command writes "ready N" to (with
// bash's /dev/tcp/10.0.2.100/ReadyPort) once its server N listens: qemu's
// user networking accepts a host connection before anything listens in
// the guest, so the host must not dial a guest server before it hears.
const ReadyPort = 7399

// Ready hears the guest's "ready N" lines for steps 0..n-1.
type Ready struct {
	l  net.Listener
	ch []chan struct{}
	mu sync.Mutex
}

// NewReady listens on the host for n steps; add Fwd to Options.GuestFwd.
// The listener closes at t's cleanup.
func NewReady(t testing.TB, n int) *Ready {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Ready{l: l, ch: make([]chan struct{}, n)}
	for i := range r.ch {
		r.ch[i] = make(chan struct{})
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go r.serve(c)
		}
	}()
	return r
}

func (r *Ready) serve(c net.Conn) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	b := make([]byte, 64)
	n, _ := c.Read(b)
	var k int
	if _, err := fmt.Sscanf(string(b[:n]), "ready %d", &k); err != nil || k < 0 || k >= len(r.ch) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.ch[k]:
	default:
		close(r.ch[k])
	}
}

// Fwd is the guest forward that carries the signals: ReadyPort to the
// host listener.
func (r *Ready) Fwd() string {
	return fmt.Sprintf("%d:%d", ReadyPort, r.l.Addr().(*net.TCPAddr).Port)
}

// Step is closed once the guest said step k is ready.
func (r *Ready) Step(k int) <-chan struct{} { return r.ch[k] }

// Signal is the guest shell line that says step k is ready.
func Signal(k int) string {
	return fmt.Sprintf("echo \"ready %d\" > /dev/tcp/10.0.2.100/%d", k, ReadyPort)
}

// WaitListen is the guest shell line that waits (up to 10 s) until a TCP
// server listens on port.
func WaitListen(port int) string {
	return fmt.Sprintf("for k in $(seq 100); do ss -ltn | grep -q \":%d \" && break; sleep 0.1; done", port)
}

// HostWait is how long a test's host side may wait for its VM: until
// shortly before the test's deadline (10 minutes without one), since
// Start may first wait for another test's VM to end.
func HostWait(t *testing.T) time.Duration {
	if dl, ok := t.Deadline(); ok {
		return time.Until(dl) - 15*time.Second
	}
	return 10 * time.Minute
}

// FreePort finds a free host TCP port for a qemu forward. The port is
// released at once: qemu binds it when the VM starts.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
