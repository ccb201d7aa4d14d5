package siwpeer

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// These tests play the guest's part of the control channel over loopback
// (qemu's guest forward is an nc to the same host listener): no VM.

func say(t *testing.T, c ctl, line string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", c.l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := fmt.Fprintln(conn, line); err != nil {
		t.Fatal(err)
	}
	return conn
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A step closes on its own "ready N" only; lines out of range or of
// another shape close nothing.
func TestReadySteps(t *testing.T) {
	r := NewReady(t, 3)
	if want := fmt.Sprintf("%d:%d", ReadyPort, r.l.Addr().(*net.TCPAddr).Port); r.Fwd() != want {
		t.Errorf("Fwd %q, want %q", r.Fwd(), want)
	}
	for _, line := range []string{"ready 3", "ready -1", "hello 0", "ready x"} {
		say(t, r.ctl, line)
	}
	say(t, r.ctl, "ready 1")
	say(t, r.ctl, "ready 1") // twice: no double close
	<-r.Step(1)
	say(t, r.ctl, "ready 2")
	<-r.Step(2)
	if isClosed(r.Step(0)) {
		t.Error("step 0 closed, but the guest never said it")
	}
	if !strings.Contains(Signal(2), `"ready 2" > /dev/tcp/10.0.2.100/7399`) {
		t.Errorf("Signal(2) = %q", Signal(2))
	}
}

// The guest's phase blocks until the host's Done; Next gives up when the
// VM has ended.
func TestPhases(t *testing.T) {
	ps := NewPhases(t)
	vm := &VM{done: make(chan struct{})}
	conn := say(t, ps.ctl, "ready crc")
	p, ok := ps.Next(vm)
	if !ok || p.Name != "crc" {
		t.Fatalf("Next: %q, %v", p.Name, ok)
	}
	p.Done()
	ans, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || ans != "done\n" {
		t.Errorf("the guest heard %q, %v", ans, err)
	}
	close(vm.done)
	if p, ok := ps.Next(vm); ok {
		t.Errorf("Next after the VM ended: %q", p.Name)
	}
	if !strings.Contains(PhaseFunc, `echo "ready $1"`) {
		t.Errorf("PhaseFunc does not say ready: %s", PhaseFunc)
	}
}

// AddHostFwd's ports are distinct and held: nobody else can listen on
// them until Start closes them for qemu.
func TestAddHostFwdHeld(t *testing.T) {
	var o Options
	a, b := o.AddHostFwd(t, 7500), o.AddHostFwd(t, 7501)
	if a == b {
		t.Fatalf("both forwards got port %d", a)
	}
	if want := []string{fmt.Sprintf("%d:7500", a), fmt.Sprintf("%d:7501", b)}; fmt.Sprint(o.HostFwd) != fmt.Sprint(want) {
		t.Errorf("HostFwd %v, want %v", o.HostFwd, want)
	}
	if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", a)); err == nil {
		l.Close()
		t.Errorf("port %d is not held", a)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	o.AddGuestFwd(7400, l.Addr())
	if want := fmt.Sprintf("7400:%d", l.Addr().(*net.TCPAddr).Port); len(o.GuestFwd) != 1 || o.GuestFwd[0] != want {
		t.Errorf("GuestFwd %v, want [%s]", o.GuestFwd, want)
	}
}

// The end of the VM run releases what waits on it: Await gives up, and a
// host server's ServeCtx ends.
func TestHostEnd(t *testing.T) {
	h := NewHost(t)
	never := make(chan struct{})
	awaited := make(chan bool, 1)
	h.Go(func() { awaited <- h.Await(never) })
	sctx, cancel := h.ServeCtx()
	defer cancel()
	if isClosed(h.Ended()) || sctx.Err() != nil {
		t.Fatal("ended before the run ended")
	}
	h.end()
	h.wg.Wait()
	if <-awaited {
		t.Error("Await reported ready after the run ended without it")
	}
	<-sctx.Done()
	if h.Ctx.Err() != nil {
		t.Error("the host side's context ended with the run; it ends at hostWait")
	}
}

// TestHold: while a test holds the machine's boot lock, another holder
// (another test binary: a separate open file, as flock sees it) cannot
// take it, and Start's own lock is nothing; after the test's cleanup the
// lock is free again. No VM is booted: the lock is a file of the cache.
func TestHold(t *testing.T) {
	p := &Peer{Cache: t.TempDir()}
	other := func() bool {
		f, err := os.OpenFile(filepath.Join(p.Cache, ".boot-lock"), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
	}
	t.Run("held", func(t *testing.T) {
		if err := p.Hold(t); err != nil {
			t.Fatal(err)
		}
		if other() {
			t.Error("another process could take the boot lock while it is held")
		}
		l, err := p.lock(t)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := l.(nopCloser); !ok {
			t.Errorf("Start would take a lock of its own while the test holds it: %T", l)
		}
		l.Close()
	})
	if !other() {
		t.Error("the boot lock is still held after the holding test ended")
	}
}
