package conform

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iwkit/iwkit/internal/siwpeer"
)

// TestSiwConform's VM (siw_test.go, with iwcm969_test.go's last phase): a
// guest script that runs in phases, each announced to the host on a control
// connection ("ready NAME") and ended when the host answers ("done"), and
// a console watch that kills the VM on a guest kernel oops.

// guestOops matches the console lines of a guest kernel crash.
var guestOops = regexp.MustCompile(`\] (BUG:|Oops|kernel BUG|general protection fault|Kernel panic|RIP: 0010:)`)

const (
	ctlGuestPort = 7399 // the guest reaches the host's control listener at 10.0.2.100:7399
	rpingPort    = 7175 // rping -s -P in the guest
	guestAddr    = "10.0.2.15"
)

// guestPhase holds the shell functions of the guest script: phase
// announces phase $1 on the control connection and blocks until the host
// says it is done; waitport waits for a listener on port $1.
var guestPhase = fmt.Sprintf(`phase() { exec 3<>/dev/tcp/10.0.2.100/%d && echo "ready $1" >&3 && read -r -t 600 ans <&3; exec 3>&-; }
waitport() { for k in $(seq 300); do ss -ltn | grep -q ":$1 " && return 0; sleep 0.1; done; echo "port $1 never listened"; return 1; }
`, ctlGuestPort)

// phase is one "ready NAME" from the guest; writing "done" lets it go on.
type phase struct {
	name string
	conn net.Conn
}

func (p phase) done() {
	p.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintln(p.conn, "done")
	p.conn.Close()
}

// siwVM is a booted guest with its control channel and console watch.
type siwVM struct {
	vm     *siwpeer.VM
	fwd    int    // host port forwarded to the guest's rpingPort
	out    string // the host directory that is the guest's /out
	phases chan phase

	mu   sync.Mutex
	oops string // the first oops line seen
	dead chan struct{}
}

// bootSiwVM boots the guest with script (after guestPhase) and forwards
// a free host port to rping's port in the guest.
func bootSiwVM(t *testing.T, peer *siwpeer.Peer, script string, timeout time.Duration) *siwVM {
	t.Helper()
	ctl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctl.Close() })
	// A free host port for the qemu hostfwd: held until just before qemu
	// binds it, so that no other listener of the test takes it.
	hold, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &siwVM{fwd: hold.Addr().(*net.TCPAddr).Port, out: t.TempDir(), phases: make(chan phase, 8), dead: make(chan struct{})}
	t.Cleanup(func() { // phases the test never answered
		for {
			select {
			case p := <-s.phases:
				p.conn.Close()
			default:
				return
			}
		}
	})
	go func() {
		for {
			c, err := ctl.Accept()
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
				s.phases <- phase{name: name, conn: c}
			}()
		}
	}()
	started := make(chan struct{})
	var once sync.Once
	opts := siwpeer.Options{Timeout: timeout, Out: s.out,
		HostFwd:  []string{fmt.Sprintf("%d:%d", s.fwd, rpingPort)},
		GuestFwd: []string{fmt.Sprintf("%d:%d", ctlGuestPort, ctl.Addr().(*net.TCPAddr).Port)},
		OnLine: func(line string) {
			if guestOops.MatchString(line) {
				s.mu.Lock()
				if s.oops == "" {
					s.oops = line
				}
				s.mu.Unlock()
				// A crashed guest does not power off: end it now.
				once.Do(func() { go func() { <-started; s.vm.Kill() }() })
			}
		}}
	hold.Close()
	s.vm, err = peer.Start(t, guestPhase+script, opts)
	close(started)
	if err != nil {
		t.Fatal(err)
	}
	go func() { s.vm.Wait(); close(s.dead) }()
	return s
}

// next waits for the guest's next phase; ok is false when the VM ended
// first.
func (s *siwVM) next() (phase, bool) {
	select {
	case p := <-s.phases:
		return p, true
	case <-s.dead:
		return phase{}, false
	}
}

// oopsLine is the first guest oops line seen, "" if none.
func (s *siwVM) oopsLine() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.oops
}

// dmesg is the guest's kernel log from the line "iwkit: variant NAME" to
// the next variant's (the guest script writes both).
func (s *siwVM) dmesg(variant string) string {
	b, err := os.ReadFile(filepath.Join(s.out, "dmesg.txt"))
	if err != nil {
		return err.Error()
	}
	log := string(b)
	i := strings.Index(log, "iwkit: variant "+variant+"\n")
	if i < 0 {
		return "(no marker for the variant)"
	}
	log = log[i:]
	if j := strings.Index(log[1:], "iwkit: variant "); j >= 0 {
		log = log[:j+1]
	}
	return log
}

func tail(s string, n int) string {
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}
