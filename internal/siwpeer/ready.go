package siwpeer

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// The guest's control channel: a guest command tells the host when it
// may go on, on a connection to 10.0.2.100:ReadyPort that carries one
// line "ready NAME". qemu's user networking accepts a host connection
// before anything listens in the guest, so the host must not dial a guest
// server before it hears that the server listens. Two forms:
//   - Ready: numbered steps; the guest says "ready N" (Signal) and goes
//     on at once;
//   - Phases: named phases; the guest says "ready NAME" (the phase shell
//     function of PhaseFunc) and blocks until the host answers "done".

// ReadyPort is the guest port of the control channel (bash's
// /dev/tcp/10.0.2.100/ReadyPort in the guest).
const ReadyPort = 7399

// ctl is the host listener of the control channel; serve gets each
// connection's name and owns the connection.
type ctl struct{ l net.Listener }

// listenCtl listens on the host; the listener closes at t's cleanup.
func listenCtl(t testing.TB, serve func(name string, c net.Conn)) ctl {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				c.SetReadDeadline(time.Now().Add(30 * time.Second))
				line, err := bufio.NewReader(c).ReadString('\n')
				c.SetReadDeadline(time.Time{})
				name, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
				if err != nil || !ok {
					c.Close()
					return
				}
				serve(name, c)
			}()
		}
	}()
	return ctl{l}
}

// Fwd is the guest forward that carries the control channel: ReadyPort
// to the host listener. Add it to Options.GuestFwd.
func (c ctl) Fwd() string {
	return fmt.Sprintf("%d:%d", ReadyPort, c.l.Addr().(*net.TCPAddr).Port)
}

// Ready hears the guest's "ready N" lines for steps 0..n-1.
type Ready struct {
	ctl
	ch []chan struct{}
	mu sync.Mutex
}

// NewReady listens on the host for n steps; add Fwd to Options.GuestFwd.
// The listener closes at t's cleanup.
func NewReady(t testing.TB, n int) *Ready {
	t.Helper()
	r := &Ready{ch: make([]chan struct{}, n)}
	for i := range r.ch {
		r.ch[i] = make(chan struct{})
	}
	r.ctl = listenCtl(t, r.serve)
	return r
}

func (r *Ready) serve(name string, c net.Conn) {
	c.Close()
	var k int
	if _, err := fmt.Sscanf(name, "%d", &k); err != nil || k < 0 || k >= len(r.ch) {
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

// PhaseFunc defines the guest shell function `phase NAME`: it announces
// phase NAME on the control channel and blocks (up to 10 minutes) until
// the host says the phase is done (Phase.Done).
var PhaseFunc = fmt.Sprintf("phase() { exec 3<>/dev/tcp/10.0.2.100/%d && echo \"ready $1\" >&3 && read -r -t 600 ans <&3; exec 3>&-; }\n", ReadyPort)

// Phases hears the guest's phases, in the order they come.
type Phases struct {
	ctl
	ch chan Phase
}

// Phase is one phase the guest announced; the guest waits until Done.
type Phase struct {
	Name string
	conn net.Conn
}

// Done lets the guest go on.
func (p Phase) Done() {
	p.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintln(p.conn, "done")
	p.conn.Close()
}

// NewPhases listens on the host for the guest's phases; add Fwd to
// Options.GuestFwd. The listener, and the connections of phases never
// done, close at t's cleanup.
func NewPhases(t testing.TB) *Phases {
	t.Helper()
	ps := &Phases{ch: make(chan Phase, 8)}
	ps.ctl = listenCtl(t, func(name string, c net.Conn) { ps.ch <- Phase{Name: name, conn: c} })
	t.Cleanup(func() {
		for {
			select {
			case p := <-ps.ch:
				p.conn.Close()
			default:
				return
			}
		}
	})
	return ps
}

// Next waits for the guest's next phase; ok is false when the VM ended
// first.
func (ps *Phases) Next(vm *VM) (p Phase, ok bool) {
	select {
	case p := <-ps.ch:
		return p, true
	case <-vm.Done():
		return Phase{}, false
	}
}
