// Package siwpeer boots the siw VM peer (peers/siw in this repository: a
// Debian guest running Linux soft-iWARP) for tests, so that no VM outlives
// the test that started it on any path: the test passes or fails, the guest
// oopses and the console watch kills it (Options.KillOn), the time runs
// out, or the test binary itself is killed with SIGKILL. ready.go and
// host.go hold what the tests around a VM share: the guest's control
// channel, the host side's goroutines, the budget and the forwards.
//
// How: the peer's run script, given -x, prepares the guest's control
// directory and then execs qemu, so the child this package starts is qemu
// itself. That child
//   - leads its own process group (Setpgid), and every kill here is sent to
//     the whole group: qemu and the nc processes its guest forwards spawn;
//   - has a parent-death signal (Pdeathsig SIGKILL), which Linux sends when
//     the thread that forked it ends. The fork happens on a goroutine locked
//     to its OS thread until the child has been reaped, so that thread
//     lives exactly as long as the test binary needs the VM, and dies with
//     the binary;
//   - is killed by t.Cleanup, by the timeout and by Kill.
//
// Require finds the scripts and makes sure the image exists, building it
// when the machine can (root and apt-get). Where it cannot, the test is
// skipped with the reason, or fails with it when CI is set.
package siwpeer

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// Peer is the VM peer of this repository with a usable image.
type Peer struct {
	Dir   string // peers/siw in the module
	Cache string // the image cache (SIW_PEER_CACHE, default /var/tmp/iwkit-siw-peer)
}

// CacheDir is where the image lives: outside the repository.
func CacheDir() string {
	if c := os.Getenv("SIW_PEER_CACHE"); c != "" {
		return c
	}
	return "/var/tmp/iwkit-siw-peer"
}

// Unavailable skips t with reason, or fails it when CI is set: under CI a
// test that can run on the machine must not be skipped, and the test
// script installs everything the peer needs.
func Unavailable(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("siw VM peer unavailable under CI: %s", reason)
	}
	t.Skipf("siw VM peer unavailable: %s", reason)
}

// ScriptsDir returns peers/siw of the module the test runs in: go test
// runs in the package directory, so the module root is the first parent
// holding go.mod.
func ScriptsDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			dir := filepath.Join(d, "peers", "siw")
			if _, err := os.Stat(filepath.Join(dir, "run")); err != nil {
				return "", fmt.Errorf("module root %s has no peers/siw/run", d)
			}
			return dir, nil
		}
		if d == filepath.Dir(d) {
			return "", fmt.Errorf("no go.mod above %s", wd)
		}
	}
}

var build struct {
	once   sync.Once
	reason string // why the peer is unavailable; "" when it is ready
	log    string // the build's output
}

// Require returns the peer, building or refreshing its image first when
// this machine can (build.sh is idempotent: under a second when the image
// is current, about 2 minutes from nothing). The build runs once per test
// binary. When the peer cannot be had, t is skipped or failed (Unavailable).
func Require(t testing.TB) *Peer {
	t.Helper()
	if testing.Short() {
		t.Skip("the siw VM peer boots a VM; skipped in -short mode")
	}
	dir, err := ScriptsDir()
	if err != nil {
		Unavailable(t, err.Error())
	}
	p := &Peer{Dir: dir, Cache: CacheDir()}
	build.once.Do(func() { build.reason, build.log = p.prepare() })
	if build.log != "" {
		t.Logf("siw peer: %s", lastLine(build.log))
	}
	if build.reason != "" {
		Unavailable(t, build.reason)
	}
	return p
}

// prepare builds the image when it can and says why the peer is unusable.
func (p *Peer) prepare() (reason, log string) {
	why := "" // why build.sh cannot run here
	if os.Geteuid() != 0 {
		why = "peers/siw/build.sh needs root"
	} else if _, err := exec.LookPath("apt-get"); err != nil {
		why = "peers/siw/build.sh needs apt-get"
	} else if os.Getenv("SIW_PEER_BUILD") == "0" {
		why = "SIW_PEER_BUILD=0 says not to build" // use the image as it is
	}
	canBuild := why == ""
	var buildErr string
	if canBuild {
		out, err := exec.Command(filepath.Join(p.Dir, "build.sh")).CombinedOutput()
		log = string(out)
		if err != nil {
			buildErr = fmt.Sprintf("peers/siw/build.sh failed (%v):\n%s", err, tail(out, 2000))
		}
	}
	for _, f := range []string{"vmlinuz", "initrd.img", "root.img"} {
		if _, err := os.Stat(filepath.Join(p.Cache, f)); err != nil {
			if buildErr != "" {
				return buildErr, log
			}
			return fmt.Sprintf("no image in %s, and none can be built: %s", p.Cache, why), log
		}
	}
	if buildErr != "" {
		// build.sh replaces the image only whole (rename), so the one
		// there is consistent, if older: a refresh that failed (say, the
		// mirror was unreachable) need not stop the tests.
		log += "\nthe refresh failed; using the image already built. " + buildErr
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		return "qemu-system-x86_64 is not installed (peers/siw/build.sh installs it as root)", log
	}
	return "", log
}

// Options of one VM run.
type Options struct {
	// Timeout ends the VM from the host (default 5 minutes). The guest's
	// command gets Timeout less 60 s (boot and power-off), at least 10 s.
	Timeout time.Duration
	// Out is the host directory shared as the guest's /out (default a
	// fresh temporary directory).
	Out string
	// Env lines for the guest's /ctl/env (run -e), e.g. SIW_PARAMS="...".
	Env []string
	// HostFwd "H:G" forwards host 127.0.0.1:H to guest 10.0.2.15:G;
	// GuestFwd "G:H" forwards guest 10.0.2.100:G to host 127.0.0.1:H.
	HostFwd, GuestFwd []string
	// OnLine, when set, sees every console line as it arrives. It must
	// not block.
	OnLine func(line string)
	// KillOn, when set, ends the VM at the first console line it matches
	// (Result.KillLine): a guest whose kernel crashed does not power off.
	// GuestOops matches a guest kernel crash.
	KillOn *regexp.Regexp

	held []net.Listener // host ports of AddHostFwd, held until qemu binds them
}

// GuestOops matches the console lines of a guest kernel crash (the
// kernel's own lines, after their "[ seconds]" stamp).
var GuestOops = regexp.MustCompile(`\] (BUG:|Oops|kernel BUG|general protection fault|Kernel panic|RIP: 0010:)`)

// Result is how a VM run ended.
type Result struct {
	// ExitCode is the guest command's exit code, -1 when the guest left
	// none (it was killed, timed out or died).
	ExitCode int
	TimedOut bool // the Options.Timeout ended it
	Killed   bool // Kill (or the test's cleanup) ended it
	Console  string
	Err      error  // qemu's own exit status or a start failure
	KillLine string // the console line Options.KillOn matched, "" if none
}

// Tail is the console's last n octets, for a failure message.
func (r Result) Tail(n int) string { return tail([]byte(r.Console), n) }

// VM is one running boot of the peer.
type VM struct {
	Name string // unique; qemu's -name, in its command line
	ctl  string

	mu       sync.Mutex
	pid      int
	reaped   bool
	timedOut bool
	killed   bool
	killLine string
	done     chan struct{}
	res      Result
}

var seq struct {
	sync.Mutex
	n int
}

// uniqueName makes the VM's marker: pid, a counter and random octets, so
// no two VMs on the machine, ours or another test binary's, share it.
func uniqueName() string {
	seq.Lock()
	seq.n++
	n := seq.n
	seq.Unlock()
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("iwkit-siwpeer-%d-%d-%s", os.Getpid(), n, hex.EncodeToString(b[:]))
}

// Owner is what Start needs of the caller that owns the VM: a
// testing.TB, or a Session (keep.go) for a command.
type Owner interface {
	Helper()
	TempDir() string
	Logf(format string, args ...any)
	Cleanup(func())
}

// Start boots the VM to run command (bash, as root, cwd /out) and returns
// once qemu runs. The VM ends when the guest powers off after the command,
// on Kill, on the timeout, at t's cleanup, or when the test binary dies.
func (p *Peer) Start(t Owner, command string, o Options) (*VM, error) {
	t.Helper()
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Out == "" {
		o.Out = t.TempDir()
	}
	vm := &VM{Name: uniqueName(), ctl: t.TempDir(), done: make(chan struct{})}
	guest := max(o.Timeout-60*time.Second, 10*time.Second)
	args := []string{"-x", "-c", vm.ctl, "-o", o.Out, "-n", vm.Name, "-t", strconv.Itoa(int(guest.Seconds()))}
	for _, e := range o.Env {
		args = append(args, "-e", e)
	}
	for _, f := range o.HostFwd {
		args = append(args, "-f", f)
	}
	for _, f := range o.GuestFwd {
		args = append(args, "-g", f)
	}
	args = append(args, "--", command)

	cmd := exec.Command(filepath.Join(p.Dir, "run"), args...)
	cmd.Env = append(os.Environ(), "SIW_PEER_CACHE="+p.Cache)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// One VM of ours at a time on the machine: under TCG a VM keeps two
	// cores busy, and two test binaries (go test runs packages in
	// parallel) booting at once would slow each other's guests past their
	// protocol timeouts. The lock is a file lock: the kernel releases it
	// when its holder dies, however it dies.
	lock, err := p.lock(t)
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		lock.Close()
		return nil, err
	}
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = pw, pw

	var console bytes.Buffer
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			console.Write(sc.Bytes())
			console.WriteByte('\n')
			if o.OnLine != nil {
				o.OnLine(sc.Text())
			}
			if o.KillOn != nil && o.KillOn.Match(sc.Bytes()) {
				vm.mu.Lock()
				first := vm.killLine == ""
				if first {
					vm.killLine = sc.Text()
				}
				vm.mu.Unlock()
				if first {
					vm.Kill()
				}
			}
		}
		io.Copy(&console, pr)
		pr.Close()
	}()

	startErr := make(chan error, 1)
	go func() {
		defer lock.Close() // and so unlock, once the VM is reaped
		// Pdeathsig fires when the forking thread ends: keep this
		// goroutine on its thread until the child is reaped.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for _, l := range o.held {
			l.Close() // qemu binds these ports now
		}
		err := cmd.Start()
		pw.Close()
		if err != nil {
			startErr <- err
			<-scanned
			vm.finish(-1, err, console.String())
			return
		}
		vm.mu.Lock()
		vm.pid = cmd.Process.Pid
		killed := vm.killed // a Kill before the pid was known
		vm.mu.Unlock()
		if killed {
			vm.killGroup()
		}
		startErr <- nil
		// Wait without reaping, end what is left of the group (nc
		// children of qemu's guest forwards), then reap: while the leader
		// is unreaped its pid, the group's id, cannot be reused, so the
		// group kill cannot hit anybody else.
		waitNoReap(vm.pid)
		vm.killGroup()
		err = cmd.Wait()
		vm.mu.Lock()
		vm.reaped = true
		vm.mu.Unlock()
		<-scanned
		code := -1
		if b, rerr := os.ReadFile(filepath.Join(vm.ctl, "rc")); rerr == nil {
			if n, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				code = n
			}
		}
		vm.finish(code, err, console.String())
	}()
	if err := <-startErr; err != nil {
		return nil, fmt.Errorf("starting the siw VM: %w", err)
	}
	timer := time.AfterFunc(o.Timeout, func() {
		vm.mu.Lock()
		vm.timedOut = true
		vm.mu.Unlock()
		vm.killGroup()
	})
	t.Cleanup(func() {
		timer.Stop()
		vm.Kill()
		<-vm.done
	})
	return vm, nil
}

// held is the boot lock taken by Hold: while it is held, Start takes no
// lock of its own.
var held struct {
	sync.Mutex
	f *os.File
}

// nopCloser stands for the lock when Hold holds it.
type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// lock takes the machine's boot lock for one VM (closing it unlocks), or
// nothing when Hold holds it.
func (p *Peer) lock(t Owner) (io.Closer, error) {
	held.Lock()
	h := held.f != nil
	held.Unlock()
	if h {
		return nopCloser{}, nil
	}
	return p.flock(t)
}

func (p *Peer) flock(t Owner) (*os.File, error) {
	lock, err := os.OpenFile(filepath.Join(p.Cache, ".boot-lock"), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		t.Logf("siw peer: waiting for another VM of this machine's tests to end")
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
			lock.Close()
			return nil, err
		}
	}
	return lock, nil
}

// Hold takes the machine's boot lock (Start's) until t's cleanup, for a
// test that boots VMs one after another (a fuzzer restarting a crashed
// guest): without it, another test binary's VM may boot between two of
// its VMs and hold the machine for minutes of its budget. The VMs of
// this process that Start boots meanwhile take no lock of their own, so
// one test at a time of the binary may hold it.
func (p *Peer) Hold(t Owner) error {
	f, err := p.flock(t)
	if err != nil {
		return err
	}
	held.Lock()
	held.f = f
	held.Unlock()
	t.Cleanup(func() {
		held.Lock()
		held.f = nil
		held.Unlock()
		f.Close()
	})
	return nil
}

func (vm *VM) finish(code int, err error, console string) {
	vm.mu.Lock()
	vm.res = Result{ExitCode: code, TimedOut: vm.timedOut, Killed: vm.killed, Console: console, Err: err, KillLine: vm.killLine}
	vm.mu.Unlock()
	close(vm.done)
}

// killGroup sends SIGKILL to the VM's process group, unless the leader has
// been reaped (its id may then be reused).
func (vm *VM) killGroup() {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	if vm.pid > 0 && !vm.reaped {
		syscall.Kill(-vm.pid, syscall.SIGKILL)
	}
}

// Kill ends the VM now (a no-op once it has ended; before qemu has
// started, as soon as it has).
func (vm *VM) Kill() {
	vm.mu.Lock()
	if !vm.reaped {
		vm.killed = true
	}
	vm.mu.Unlock()
	vm.killGroup()
}

// PID is qemu's process id (the run script execs qemu in place).
func (vm *VM) PID() int {
	vm.mu.Lock()
	defer vm.mu.Unlock()
	return vm.pid
}

// Wait returns how the VM ended, once it has.
func (vm *VM) Wait() Result {
	<-vm.done
	vm.mu.Lock()
	defer vm.mu.Unlock()
	return vm.res
}

// Done is closed when the VM has ended and its result is ready.
func (vm *VM) Done() <-chan struct{} { return vm.done }

// waitNoReap blocks until pid has exited, leaving it a zombie
// (waitid with WNOWAIT).
func waitNoReap(pid int) {
	const pPID = 1
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno != syscall.EINTR {
			return
		}
	}
}

// Running returns the ids of the live processes whose command line holds
// name: the way to see whether a VM (whose qemu carries -name NAME) is
// still there. Zombies do not count: they hold no CPU, memory or ports.
func Running(name string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cl, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cl, []byte(name)) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i >= 0 && i+2 < len(st) && st[i+2] == 'Z' {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// ErrStillRunning says processes of a VM remained after the polls.
var ErrStillRunning = errors.New("siw VM processes still running")

// Gone polls /proc up to tries times, pausing between polls, until no
// process carries name, and fails with ErrStillRunning otherwise. A kill
// takes effect asynchronously (the kernel tears qemu's memory down), hence
// a bounded number of polls rather than one look.
func Gone(name string, tries int) error {
	for i := 0; i < tries; i++ {
		if len(Running(name)) == 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%w: %s: pids %v", ErrStillRunning, name, Running(name))
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
