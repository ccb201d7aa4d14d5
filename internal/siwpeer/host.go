package siwpeer

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"
)

// Budget is the VM's Options.Timeout for a test: limit, or less when the
// test's deadline comes sooner (less a margin for reporting), so that the
// VM ends inside go test's -timeout. The run takes less; the budget only
// ends a hung guest.
func Budget(t *testing.T, limit time.Duration) time.Duration {
	if dl, ok := t.Deadline(); ok {
		return min(limit, time.Until(dl)-30*time.Second)
	}
	return limit
}

// hostWait is how long a test's host side may wait for its VM: until
// shortly before the test's deadline (10 minutes without one), since
// Start may first wait for another test's VM to end.
func hostWait(t *testing.T) time.Duration {
	if dl, ok := t.Deadline(); ok {
		return time.Until(dl) - 15*time.Second
	}
	return 10 * time.Minute
}

// AddHostFwd reserves a free host TCP port, forwards it to the guest's
// port guest (HostFwd) and returns it. The port stays held by a listener
// of ours until Start hands it to qemu, so that no other reservation and
// no other listener of the test gets it.
func (o *Options) AddHostFwd(t testing.TB, guest int) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() }) // when Start is never called
	o.held = append(o.held, l)
	port := l.Addr().(*net.TCPAddr).Port
	o.HostFwd = append(o.HostFwd, fmt.Sprintf("%d:%d", port, guest))
	return port
}

// AddGuestFwd forwards the guest's 10.0.2.100:guest to host, a host
// listener's address (GuestFwd).
func (o *Options) AddGuestFwd(guest int, host net.Addr) {
	o.GuestFwd = append(o.GuestFwd, fmt.Sprintf("%d:%d", guest, host.(*net.TCPAddr).Port))
}

// Host is the host side of one VM run: goroutines that talk to the guest
// while the VM runs, started before it boots (they wait for the guest's
// signals), and ended with it.
type Host struct {
	// Ctx is the host side's context: it ends at hostWait(t). The VM's
	// own Timeout starts only once it boots, and Start may first wait
	// for another test's VM.
	Ctx    context.Context
	cancel context.CancelFunc
	ended  chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
}

// NewHost makes the host side of a VM run of t.
func NewHost(t *testing.T) *Host {
	h := &Host{ended: make(chan struct{})}
	h.Ctx, h.cancel = context.WithTimeout(context.Background(), hostWait(t))
	t.Cleanup(func() { h.end(); h.wg.Wait(); h.cancel() })
	return h
}

// Go runs f alongside the VM; Run waits for it.
func (h *Host) Go(f func()) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		f()
	}()
}

// Ended is closed once the VM run has ended (or failed to start).
func (h *Host) Ended() <-chan struct{} { return h.ended }

func (h *Host) end() { h.once.Do(func() { close(h.ended) }) }

// Await waits until ready is closed (a Ready step) and reports false
// when the VM run ended first.
func (h *Host) Await(ready <-chan struct{}) bool {
	select {
	case <-ready:
		return true
	case <-h.ended:
		return false
	}
}

// ServeCtx is Ctx ended 2 s after the VM run: for a host server of a
// guest client. qemu's guest forward (nc) keeps the host socket open
// after the guest's FIN, so a server would otherwise wait for a client
// that is gone until Ctx ends.
func (h *Host) ServeCtx() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(h.Ctx)
	go func() {
		select {
		case <-h.ended:
			time.Sleep(2 * time.Second)
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// Run boots the VM to run command, waits for it to end, ends the host
// side (Ended) and waits for the goroutines of Go. When the VM cannot
// start, t fails (once those goroutines have returned).
func (h *Host) Run(t *testing.T, p *Peer, command string, o Options) Result {
	t.Helper()
	vm, err := p.Start(t, command, o)
	if err != nil {
		h.end()
		h.wg.Wait()
		t.Fatal(err)
	}
	r := vm.Wait()
	h.end()
	h.wg.Wait()
	return r
}
