package siwpeer

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Each test proves one way a VM run can end, and then that no process with
// the VM's unique name is left. Polls of /proc are bounded in number, not
// timed: a killed qemu disappears after the kernel has torn it down.
const goneTries = 400

func assertGone(t *testing.T, name string) {
	t.Helper()
	if err := Gone(name, goneTries); err != nil {
		t.Error(err)
		for _, pid := range Running(name) {
			syscall.Kill(pid, syscall.SIGKILL) // do not leave it to the next test
		}
	}
}

// isQemu reports whether pid is qemu: the run script has exec'd it.
func isQemu(pid int) bool {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	return err == nil && strings.Contains(filepath.Base(exe), "qemu-system")
}

// waitQemu polls until the VM's process is qemu (bounded tries).
func waitQemu(t testing.TB, vm *VM) {
	t.Helper()
	for i := 0; i < 2000; i++ {
		if isQemu(vm.PID()) && len(Running(vm.Name)) > 0 {
			return
		}
		select {
		case <-vm.Done():
			t.Fatalf("the VM ended before qemu ran: %+v", vm.Wait())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("pid %d never became qemu", vm.PID())
}

// The guest's command runs, its output reaches the console, its exit code
// comes back, and the VM ends by itself (the guest powers off).
func TestExitCode(t *testing.T) {
	p := Require(t)
	out := t.TempDir()
	vm, err := p.Start(t, "echo guest-says-hello; echo data > $OUT/file; exit 3", Options{Timeout: 4 * time.Minute, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	r := vm.Wait()
	if r.ExitCode != 3 || r.Killed || r.TimedOut {
		t.Fatalf("exit code %d killed %v timed out %v err %v\n%s", r.ExitCode, r.Killed, r.TimedOut, r.Err, r.Tail(3000))
	}
	if !strings.Contains(r.Console, "guest-says-hello") {
		t.Errorf("console lacks the command's output:\n%s", r.Tail(3000))
	}
	if b, err := os.ReadFile(filepath.Join(out, "file")); err != nil || string(b) != "data\n" {
		t.Errorf("file the guest wrote to /out: %q, %v", b, err)
	}
	assertGone(t, vm.Name)
}

// A guest kernel crash: the guest panics and, with panic=0, hangs there
// for good, as a guest wedged by a siw oops does. Options.KillOn sees it
// on the console and kills the VM.
func TestGuestOopsKilled(t *testing.T) {
	p := Require(t)
	vm, err := p.Start(t, "echo 0 > /proc/sys/kernel/panic; echo c > /proc/sysrq-trigger; sleep 600",
		Options{Timeout: 4 * time.Minute, KillOn: GuestOops})
	if err != nil {
		t.Fatal(err)
	}
	r := vm.Wait()
	if !r.Killed || r.ExitCode != -1 {
		t.Fatalf("want the VM killed after the oops, got exit code %d killed %v timed out %v\n%s", r.ExitCode, r.Killed, r.TimedOut, r.Tail(3000))
	}
	if !GuestOops.MatchString(r.KillLine) {
		t.Errorf("killed on %q, not a crash:\n%s", r.KillLine, r.Tail(3000))
	}
	assertGone(t, vm.Name)
}

// The host-side timeout kills qemu wherever the guest is (here, most
// likely still booting).
func TestTimeout(t *testing.T) {
	p := Require(t)
	// Long enough for the run script to reach qemu on a loaded machine,
	// short of a full TCG boot.
	vm, err := p.Start(t, "sleep 600", Options{Timeout: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	waitQemu(t, vm)
	r := vm.Wait()
	if !r.TimedOut || r.ExitCode != -1 {
		t.Fatalf("want a timeout, got exit code %d killed %v timed out %v", r.ExitCode, r.Killed, r.TimedOut)
	}
	assertGone(t, vm.Name)
}

// The helper modes a child test binary runs (see TestHelperVM).
const helperEnv = "IWKIT_SIWPEER_HELPER"

// runHelper re-executes this test binary to run TestHelperVM in mode,
// waits until the child reports its VM running, checks that it runs, then
// either kills the child with SIGKILL or tells it to go on (to fail or
// panic), and returns the VM's name and the child's output.
func runHelper(t *testing.T, mode string, kill bool) (name string, output string, err error) {
	t.Helper()
	// The child dies with this test (Pdeathsig is tied to the forking
	// thread, hence the lock).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperVM$", "-test.v", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	re := regexp.MustCompile(`^SIWPEER-HELPER vm=(\S+) pid=(\d+)`)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if m := re.FindStringSubmatch(sc.Text()); m != nil && name == "" {
			name = m[1]
			pid, _ := strconv.Atoi(m[2])
			// Proof that the VM was alive when the child ended.
			if !isQemu(pid) || len(Running(name)) == 0 {
				t.Fatalf("the child's VM %s (pid %d) is not running", name, pid)
			}
			if kill {
				cmd.Process.Signal(syscall.SIGKILL)
			} else {
				fmt.Fprintln(stdin, "go on")
			}
		}
	}
	err = cmd.Wait()
	if name == "" {
		t.Fatalf("the child never reported a VM:\n%s", out.String())
	}
	return name, out.String(), err
}

// The test binary is killed with SIGKILL while its VM runs: no cleanup
// runs in it, and the parent-death signal alone must end qemu.
func TestTestBinaryKilled(t *testing.T) {
	Require(t)
	name, out, err := runHelper(t, "block", true)
	if ws, ok := exitStatus(err); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v\n%s", err, out)
	}
	assertGone(t, name)
}

// A test fails (t.Fatal) while its VM runs: the cleanup kills it.
func TestFailingTestKills(t *testing.T) {
	Require(t)
	name, out, err := runHelper(t, "fatal", false)
	if err == nil || !strings.Contains(out, "deliberate failure with a VM running") || !strings.Contains(out, "--- FAIL: TestHelperVM") {
		t.Fatalf("want the child test to fail: %v\n%s", err, out)
	}
	assertGone(t, name)
}

// A test panics while its VM runs.
func TestPanickingTestKills(t *testing.T) {
	Require(t)
	name, out, err := runHelper(t, "panic", false)
	if err == nil || !strings.Contains(out, "deliberate panic with a VM running") {
		t.Fatalf("want the child test to panic: %v\n%s", err, out)
	}
	assertGone(t, name)
}

func exitStatus(err error) (syscall.WaitStatus, bool) {
	ee, ok := err.(*exec.ExitError)
	if !ok {
		return 0, false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ws, ok
}

// TestHelperVM is the child of the tests above: it does nothing unless
// IWKIT_SIWPEER_HELPER names a mode. It boots a VM (qemu started is
// enough; the guest need not finish booting), reports it, and then blocks
// until killed, fails or panics.
func TestHelperVM(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		return // not a test of its own
	}
	p := Require(t)
	vm, err := p.Start(t, "sleep 600", Options{Timeout: 4 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	waitQemu(t, vm)
	fmt.Printf("SIWPEER-HELPER vm=%s pid=%d\n", vm.Name, vm.PID())
	if mode != "block" {
		// The parent checks the VM first, then says go on.
		bufio.NewReader(os.Stdin).ReadString('\n')
	}
	switch mode {
	case "block":
		vm.Wait()
		t.Fatal("the VM ended before the parent killed this process")
	case "fatal":
		t.Fatal("deliberate failure with a VM running")
	case "panic":
		panic("deliberate panic with a VM running")
	}
}
