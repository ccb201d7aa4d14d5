// Command siwpeer keeps the siw VM peer up for interactive work: a Linux
// soft-iWARP guest (peers/siw) that takes commands over a unix socket.
//
//	go run ./internal/siwpeer/cmd/siwpeer up [-for 8h] [-f HOST:GUEST]... [-out DIR]
//	go run ./internal/siwpeer/cmd/siwpeer run 'rdma link show'
//	go run ./internal/siwpeer/cmd/siwpeer run 'nohup rping -s -P -a 10.0.2.15 -p 7175 > /out/rping.log 2>&1 &'
//	go run ./internal/siwpeer/cmd/siwpeer down
//
// up boots the guest and stays in the foreground until down, an
// interrupt, or -for runs out; the VM never outlives it. run runs one
// shell command in the guest (as root, cwd /out), prints its output and
// exits with its exit code. The guest's /out is the host directory -out
// (default a temporary one, printed by up). Forwards: host
// 127.0.0.1:HOST to the guest's 10.0.2.15:GUEST (default 7175 rping and
// 18515 perftest, same port both sides).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/iwkit/iwkit/internal/siwpeer"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func defaultSock() string {
	d := os.Getenv("XDG_RUNTIME_DIR")
	if d == "" {
		d = os.TempDir()
	}
	return filepath.Join(d, "iwkit-siwpeer.sock")
}

type fwds []string

func (f *fwds) String() string     { return strings.Join(*f, ",") }
func (f *fwds) Set(v string) error { *f = append(*f, v); return nil }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("siwpeer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	sock := fs.String("sock", defaultSock(), "the command channel's unix `socket`")
	life := fs.Duration("for", 8*time.Hour, "up: end the VM after this long")
	boot := fs.Duration("boot", 10*time.Minute, "up: give up when the guest takes no command after this long")
	out := fs.String("out", "", "up: host `directory` shared as the guest's /out (default a temporary one)")
	var fw fwds
	fs.Var(&fw, "f", "up: forward host 127.0.0.1:`HOST:GUEST` to the guest (repeatable; default 7175:7175 and 18515:18515)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: siwpeer [flags] up | run 'COMMAND' | down")
		fs.PrintDefaults()
	}
	if len(args) == 0 {
		fs.Usage()
		return 2
	}
	verb, rest := args[0], args[1:]
	if err := fs.Parse(rest); err != nil {
		return 2
	}
	switch verb {
	case "up":
		if len(fw) == 0 {
			fw = fwds{"7175:7175", "18515:18515"}
		}
		return up(*sock, *life, *boot, *out, fw, stdout, stderr)
	case "run":
		if fs.NArg() == 0 {
			fs.Usage()
			return 2
		}
		return client(*sock, "run "+strings.Join(fs.Args(), " "), stdout, stderr)
	case "down":
		return client(*sock, "down", stdout, stderr)
	}
	fs.Usage()
	return 2
}

func up(sock string, life, boot time.Duration, out string, fw []string, stdout, stderr io.Writer) int {
	p, err := siwpeer.Find()
	if err != nil {
		fmt.Fprintln(stderr, "siwpeer:", err)
		return 2
	}
	if c, err := net.Dial("unix", sock); err == nil {
		c.Close()
		fmt.Fprintf(stderr, "siwpeer: a peer is already up on %s (siwpeer down)\n", sock)
		return 2
	}
	s := &siwpeer.Session{Log: stderr}
	defer s.Close()
	fmt.Fprintf(stderr, "siwpeer: booting (TCG: a minute or two)...\n")
	k, err := p.Keep(s, siwpeer.Options{Timeout: life, Out: out, HostFwd: fw, KillOn: siwpeer.GuestOops}, boot)
	if err != nil {
		fmt.Fprintln(stderr, "siwpeer:", err)
		return 1
	}
	// The socket only once the guest takes commands: until then a client
	// hears "no peer up".
	os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		k.Stop()
		fmt.Fprintln(stderr, "siwpeer:", err)
		return 2
	}
	defer os.Remove(sock)
	defer ln.Close()
	fmt.Fprintf(stdout, "siwpeer: up (%s); guest /out is %s; forwards %s; commands on %s\n", k.VM.Name, k.Out, strings.Join(fw, " "), sock)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	down := make(chan struct{})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(k, c, down)
		}
	}()
	select {
	case <-sig:
	case <-down:
	case <-k.VM.Done():
	}
	r := k.Stop()
	if r.KillLine != "" {
		fmt.Fprintf(stdout, "siwpeer: the guest crashed: %s\n", r.KillLine)
	}
	fmt.Fprintln(stdout, "siwpeer: down")
	return 0
}

// serve takes one client's line: "run COMMAND" or "down".
func serve(k *siwpeer.Keeper, c net.Conn, down chan struct{}) {
	defer c.Close()
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return
	}
	line = strings.TrimSpace(line)
	switch {
	case line == "down":
		fmt.Fprintln(c, "rc=0")
		select {
		case <-down:
		default:
			close(down)
		}
	case strings.HasPrefix(line, "run "):
		rc, err := k.Run(strings.TrimPrefix(line, "run "), c)
		if err != nil {
			fmt.Fprintln(c, "siwpeer:", err)
		}
		fmt.Fprintf(c, "rc=%d\n", rc)
	default:
		fmt.Fprintf(c, "siwpeer: unknown request %q\nrc=2\n", line)
	}
}

func client(sock, req string, stdout, stderr io.Writer) int {
	c, err := net.Dial("unix", sock)
	if err != nil {
		fmt.Fprintf(stderr, "siwpeer: no peer up on %s (siwpeer up): %v\n", sock, err)
		return 2
	}
	defer c.Close()
	fmt.Fprintln(c, req)
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	rc := 1
	for sc.Scan() {
		if n, _ := fmt.Sscanf(sc.Text(), "rc=%d", &rc); n == 1 && strings.HasPrefix(sc.Text(), "rc=") {
			continue
		}
		fmt.Fprintln(stdout, sc.Text())
	}
	if rc < 0 {
		return 1
	}
	return rc
}
