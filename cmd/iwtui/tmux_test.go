package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/internal/exitcode"
	"github.com/iwkit/iwkit/internal/testenv"
	"github.com/iwkit/iwkit/pcap"
)

// build compiles iwtui into dir.
func build(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "iwtui")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func writeScenario(t *testing.T, path, name string) {
	t.Helper()
	sc, err := gen.Builtin(name, gen.Params{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.WriteFile(path, sc, nil); err != nil {
		t.Fatal(err)
	}
}

// tmux runs a command on its own tmux server (socket), so that nothing
// of the user's is touched.
type tmux struct {
	t    *testing.T
	sock string
}

func (m *tmux) run(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-S", m.sock}, args...)...).CombinedOutput()
	return string(out), err
}

func (m *tmux) keys(keys ...string) {
	m.t.Helper()
	if out, err := m.run(append([]string{"send-keys", "-t", "iw"}, keys...)...); err != nil {
		m.t.Fatalf("send-keys: %v %s", err, out)
	}
}

func (m *tmux) screen() string {
	out, _ := m.run("capture-pane", "-p", "-t", "iw")
	return out
}

// wait polls the pane until re matches (a deadline, not a measurement).
func (m *tmux) wait(re string) []string {
	m.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := m.screen()
		if g := rx.FindStringSubmatch(s); g != nil {
			return g
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("screen never showed %q:\n%s", re, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startTmux builds iwtui and starts it on capture in its own tmux server.
func startTmux(t *testing.T, capture string) *tmux {
	testenv.Tool(t, "tmux")
	dir := t.TempDir()
	bin := build(t, dir)
	m := &tmux{t: t, sock: filepath.Join(dir, "tmux.sock")}
	t.Cleanup(func() { m.run("kill-server") })
	// Its own settings directory: the user's settings (columns, theme)
	// neither change what it shows nor get written.
	if out, err := m.run("new-session", "-d", "-s", "iw", "-x", "160", "-y", "45", "env XDG_CONFIG_HOME="+dir+" "+bin+" "+capture); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	return m
}

// quit presses q and waits for iwtui to end.
func (m *tmux) quit() {
	m.t.Helper()
	m.keys("q")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := m.run("has-session", "-t", "iw"); err != nil {
			return // iwtui quit: the session is gone
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("q did not quit:\n%s", m.screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestTmuxULP drives the real binary on a real Linux NVMe-oF capture: the
// commands view, Enter to a command, its NVMe-oF fields in the tree,
// folding a protocol, the STags the commands advertised, quit.
func TestTmuxULP(t *testing.T) {
	m := startTmux(t, "../../testdata/ulp/nvmeof.pcap")
	m.wait(`rows 142/142`)
	m.keys("U")
	m.wait(`nvme Connect id 0 +Success`)
	m.keys("j", "Enter") // the second command: Property Get, frame 14
	m.wait(`frame 14  conn 1 i2r`)
	m.keys("Tab")
	m.wait(`▾ MPA`)
	// Fold MPA, DDP, RDMAP and the framing: the NVMe-oF fields show.
	m.keys("j", "j", "Left", "j", "Left", "j", "Left", "j", "Left") // past the TCP line
	m.wait(`▸ FPDU framing`)
	m.wait(`nvme.opcode = Fabrics`)
	m.wait(`nvme.fctype = Property Get`)
	m.keys("t")
	m.wait(`i2r +8 +11 +13 +2 +1024 +13 +read-source,invalidated nvme Connect id 0`) // the tracker's ledger entry
	m.keys("q")                                                                      // back to the list (Esc then q would read as Alt-q)
	m.wait(`Packets`)
	m.quit()
}

// TestTmux drives the real binary in tmux on a generated capture: open,
// filter, select, jump from a Terminate to the frame it blames, write a
// file, quit.
func TestTmux(t *testing.T) {
	dir := t.TempDir()
	capture := filepath.Join(dir, "term.pcap")
	writeScenario(t, capture, "every-terminate")
	m := startTmux(t, capture)
	m.wait(`rows 259/259`) // the every-terminate capture's rows, findings included (rdmap.no_receive_posted: issue 28)
	m.wait(`MPA Request`)

	// Filter: the Terminates.
	m.keys("/")
	m.wait(`Filter:`)
	m.keys(`rdmap.opcode == "Terminate"`)
	m.wait(`ok`)
	m.keys("Enter")
	m.wait(`rows 34/259`)
	// Select the second Terminate, which blames a frame; its tree ends
	// with the finding naming it; Enter there goes to it.
	m.keys("j")
	g := m.wait(`frame (\d+)  conn 2 r2i`)
	if g[1] != "254" {
		t.Fatalf("second Terminate at frame %s, want 254", g[1])
	}
	m.keys("Tab", "G", "Enter")
	m.wait(`filter cleared to show the frame`)
	m.wait(`frame 206  conn 2 i2r`)

	// Write the shown rows (all again) and quit.
	out := filepath.Join(dir, "out.pcapng")
	m.keys("Tab", "Tab", "w")
	m.wait(`Write shown rows to:`)
	m.keys(out, "Enter")
	g = m.wait(`wrote (\d+) frames`)
	r, err := pcap.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	var f pcap.Frame
	n := 0
	for r.Next(&f) == nil {
		n++
	}
	r.Close()
	if fmt.Sprint(n) != g[1] || n == 0 || r.Format() != pcap.FormatPcapNG {
		t.Fatalf("%s holds %d frames (%s), the status said %s", out, n, r.Format(), g[1])
	}
	// W: the row's connection, to a classic pcap; fewer frames than all.
	conn := filepath.Join(dir, "conn.pcap")
	m.keys("W")
	m.wait(`Write connection \d+ to:`)
	m.keys(conn, "Enter")
	g = m.wait(`wrote (\d+) frames to \S*conn.pcap`)
	if r, err = pcap.Open(conn); err != nil {
		t.Fatal(err)
	}
	k := 0
	for r.Next(&f) == nil {
		k++
	}
	r.Close()
	if fmt.Sprint(k) != g[1] || k == 0 || k >= n || r.Format() != pcap.FormatPcap {
		t.Fatalf("%s holds %d frames (%s) of %d, the status said %s", conn, k, r.Format(), n, g[1])
	}
	m.quit()
}

// TestNotATerminal: with standard output not a terminal, iwtui says so,
// points at iwdump and exits 3.
func TestNotATerminal(t *testing.T) {
	dir := t.TempDir()
	capture := filepath.Join(dir, "term.pcap")
	writeScenario(t, capture, "mixed")
	cmd := exec.Command(build(t, dir), capture)
	cmd.Stdout = io.Discard
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitcode.NotATerminal {
		t.Fatalf("exit %v, want %d", err, exitcode.NotATerminal)
	}
	if !strings.Contains(stderr.String(), "not a terminal") || !strings.Contains(stderr.String(), "iwdump") {
		t.Fatalf("message %q", stderr.String())
	}
}

// TestExitCodes: bad flags and filters exit 2, an input that cannot be
// opened 1, a good one with standard output not a terminal 3.
func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	capture := filepath.Join(dir, "m.pcap")
	writeScenario(t, capture, "mixed")
	junk := filepath.Join(dir, "junk.pcap")
	os.WriteFile(junk, []byte("not a capture at all"), 0o644)
	cases := []struct {
		args []string
		code int
		say  string
	}{
		{nil, exitcode.Usage, "no input"},
		{[]string{"-Y", "rdmap.opcode ==", capture}, exitcode.Usage, "column 16"},
		{[]string{capture, "tcp", "port"}, exitcode.Usage, "syntax error"},
		{[]string{"--nosuchflag", capture}, exitcode.Usage, "nosuchflag"},
		{[]string{filepath.Join(dir, "missing.pcap")}, exitcode.Failure, "no such file"},
		{[]string{junk}, exitcode.Failure, "not a pcap"},
		{[]string{capture}, exitcode.NotATerminal, "iwdump"},
		{[]string{"-Y", "finding", capture, "tcp port 4791"}, exitcode.NotATerminal, "not a terminal"},
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	for _, tc := range cases {
		var stderr strings.Builder
		if got := run(tc.args, devnull, &stderr); got != tc.code || !strings.Contains(stderr.String(), tc.say) {
			t.Errorf("iwtui %q: exit %d, want %d; stderr %q (want %q in it)", tc.args, got, tc.code, stderr.String(), tc.say)
		}
	}
}
