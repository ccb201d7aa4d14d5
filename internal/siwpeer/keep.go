package siwpeer

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Keep-alive mode, for interactive work (cmd/siwpeer): the guest stays up
// and takes commands over a command channel until it is told to stop.
//
// The channel: the guest connects to 10.0.2.100:KeepPort (a guest
// forward to a host listener of Keeper) and reads one line, a token and
// the command; it runs the command with its output and then "TOKEN rc=N"
// back on the same connection, and meanwhile opens the next connection.
// The token line ends the command's output: the guest forward's nc keeps
// the host's side open after the guest closes its own. So one guest connection waits
// for each command, and several commands run at once. A command that
// should outlive its connection (a server) is started in the background
// by the caller ("nohup CMD > /out/NAME.log 2>&1 &"): /out is the host
// directory Keeper shares.

// KeepPort is the guest port of the command channel.
const KeepPort = 7398

// keepScript is the guest's side: the command loop, with siw loaded by the
// guest's boot as for every run.
var keepScript = fmt.Sprintf(`while true; do
  exec 3<>/dev/tcp/10.0.2.100/%d || { sleep 0.5; continue; }
  if read -r tok cmd <&3; then
    ( bash -c "$cmd" 2>&1; printf '\n%%s rc=%%d\n' "$tok" $? ) >&3 3>&- &
  fi
  exec 3>&-
done
`, KeepPort)

// Session owns VMs outside a test (Owner): its temporary directories and
// cleanups, run by Close.
type Session struct {
	mu       sync.Mutex
	dirs     []string
	cleanups []func()
	Log      io.Writer // Logf's lines (default stderr)
}

func (s *Session) Helper() {}

func (s *Session) TempDir() string {
	d, err := os.MkdirTemp("", "siwpeer-")
	if err != nil {
		panic(err) // no temporary directory: nothing here can work
	}
	s.mu.Lock()
	s.dirs = append(s.dirs, d)
	s.mu.Unlock()
	return d
}

func (s *Session) Logf(format string, args ...any) {
	w := s.Log
	if w == nil {
		w = os.Stderr
	}
	fmt.Fprintf(w, format+"\n", args...)
}

func (s *Session) Cleanup(f func()) {
	s.mu.Lock()
	s.cleanups = append(s.cleanups, f)
	s.mu.Unlock()
}

// Close runs the cleanups (last first) and removes the directories.
func (s *Session) Close() {
	s.mu.Lock()
	c, d := s.cleanups, s.dirs
	s.cleanups, s.dirs = nil, nil
	s.mu.Unlock()
	for i := len(c) - 1; i >= 0; i-- {
		c[i]()
	}
	for _, dir := range d {
		os.RemoveAll(dir)
	}
}

// Find returns the peer of the module around the working directory with
// its image as it is (no build: peers/siw/build.sh builds it).
func Find() (*Peer, error) {
	dir, err := ScriptsDir()
	if err != nil {
		return nil, err
	}
	p := &Peer{Dir: dir, Cache: CacheDir()}
	for _, f := range []string{"vmlinuz", "initrd.img", "root.img"} {
		if _, err := os.Stat(filepath.Join(p.Cache, f)); err != nil {
			return nil, fmt.Errorf("no image in %s (run peers/siw/build.sh as root): %w", p.Cache, err)
		}
	}
	return p, nil
}

// Keeper is a guest kept up for commands.
type Keeper struct {
	VM   *VM
	Out  string // the host directory that is the guest's /out
	ln   net.Listener
	idle chan net.Conn // guest connections waiting for a command
}

// Keep boots the guest in keep-alive mode (o.Timeout bounds its life;
// o.HostFwd are the forwards to the guest's servers) and returns once it
// takes commands.
func (p *Peer) Keep(t Owner, o Options, boot time.Duration) (*Keeper, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { ln.Close() })
	if o.Out == "" {
		o.Out = t.TempDir()
	}
	k := &Keeper{Out: o.Out, ln: ln, idle: make(chan net.Conn, 64)}
	o.GuestFwd = append(o.GuestFwd, fmt.Sprintf("%d:%d", KeepPort, ln.Addr().(*net.TCPAddr).Port))
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			k.idle <- c
		}
	}()
	if k.VM, err = p.Start(t, keepScript, o); err != nil {
		return nil, err
	}
	// Up when the guest's first command connection comes.
	select {
	case c := <-k.idle:
		k.idle <- c
		return k, nil
	case <-k.VM.Done():
		r := k.VM.Wait()
		return nil, fmt.Errorf("the guest ended during its boot (exit %d)\n%s", r.ExitCode, r.Tail(3000))
	case <-time.After(boot):
		k.VM.Kill()
		r := k.VM.Wait()
		return nil, fmt.Errorf("the guest did not take commands within %v; its console:\n%s", boot, r.Tail(3000))
	}
}

// Run runs command in the guest, copying its output (stdout and stderr)
// to w, and returns its exit code.
func (k *Keeper) Run(command string, w io.Writer) (int, error) {
	if strings.ContainsAny(command, "\n\r") {
		return -1, errors.New("siwpeer: a command is one line")
	}
	var c net.Conn
	select {
	case c = <-k.idle:
	case <-k.VM.Done():
		return -1, errors.New("siwpeer: the guest has ended")
	case <-time.After(30 * time.Second):
		return -1, errors.New("siwpeer: the guest's command loop did not connect within 30 s")
	}
	defer c.Close()
	var tb [8]byte
	rand.Read(tb[:])
	tok := "siwpeer-" + hex.EncodeToString(tb[:])
	if _, err := fmt.Fprintln(c, tok, command); err != nil {
		return -1, err
	}
	// The output, then an empty line and the token's: the empty line is
	// held back until the next.
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	blank := false
	for sc.Scan() {
		l := sc.Text()
		if rest, ok := strings.CutPrefix(l, tok+" rc="); ok {
			rc := -1
			fmt.Sscanf(rest, "%d", &rc)
			return rc, nil
		}
		if blank {
			fmt.Fprintln(w, "")
		}
		if blank = l == ""; !blank {
			fmt.Fprintln(w, l)
		}
	}
	if sc.Err() != nil {
		return -1, sc.Err()
	}
	return -1, errors.New("siwpeer: the command's connection ended without its exit code (the guest died?)")
}

// Stop kills the guest and waits until it is gone.
func (k *Keeper) Stop() Result {
	k.VM.Kill()
	r := k.VM.Wait()
	k.ln.Close()
	return r
}
