package conform

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/internal/siwpeer"
)

// TestSiwConform's VM (siw_test.go, with iwcm969_test.go's last phase): a
// guest script that runs in phases (siwpeer.Phases: the guest announces
// each and goes on when the host says it is done), and a console watch
// that kills the VM on a guest kernel oops.

const (
	rpingPort = 7175 // rping -s -P in the guest
	// rpingBigPort is a second rping -s -P, with a 64 KiB buffer (-S
	// 65535): for the cases that need one (bigCases), run against it
	// alone so that the other cases keep rping's default buffer.
	rpingBigPort = 7177 // not 7176: the siw↔siw phase's (iwcm969_test.go)
	guestAddr    = "10.0.2.15"
)

// guestFuncs holds the shell functions of the guest script: phase $1
// announces a phase and blocks until the host says it is done; waitport
// waits for a listener on port $1.
var guestFuncs = siwpeer.PhaseFunc +
	`waitport() { for k in $(seq 300); do ss -ltn | grep -q ":$1 " && return 0; sleep 0.1; done; echo "port $1 never listened"; return 1; }
`

// siwVM is a booted guest with its phases.
type siwVM struct {
	vm     *siwpeer.VM
	fwd    int    // host port forwarded to the guest's rpingPort
	fwdBig int    // host port forwarded to the guest's rpingBigPort
	out    string // the host directory that is the guest's /out
	phases *siwpeer.Phases
}

// bootSiwVM boots the guest with script (after guestFuncs) and forwards
// a free host port to rping's port in the guest.
func bootSiwVM(t *testing.T, peer *siwpeer.Peer, script string, timeout time.Duration) *siwVM {
	t.Helper()
	s := &siwVM{out: t.TempDir(), phases: siwpeer.NewPhases(t)}
	// A crashed guest does not power off: KillOn ends it.
	opts := siwpeer.Options{Timeout: timeout, Out: s.out, GuestFwd: []string{s.phases.Fwd()}, KillOn: siwpeer.GuestOops}
	s.fwd = opts.AddHostFwd(t, rpingPort)
	s.fwdBig = opts.AddHostFwd(t, rpingBigPort)
	var err error
	s.vm, err = peer.Start(t, guestFuncs+script, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// next waits for the guest's next phase; ok is false when the VM ended
// first.
func (s *siwVM) next() (siwpeer.Phase, bool) { return s.phases.Next(s.vm) }

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
