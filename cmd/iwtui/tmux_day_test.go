package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/internal/oracle"
	"github.com/iwkit/iwkit/internal/testenv"
)

// TestTmuxDay is issue 29's check of a termshark user's day, on the real
// binary in tmux (its own server on its own socket, killed on every path
// by t.Cleanup): resize the terminal, open every view, the TCP rows,
// follow a stream, copy a tree field (OSC 52, which tmux with
// set-clipboard on takes into its paste buffer), save with the findings
// as comments, and have tshark read them back as frame.comment.
func TestTmuxDay(t *testing.T) {
	testenv.Tool(t, "tmux")
	bin := oracle.Tshark(t)
	dir := t.TempDir()
	capture := filepath.Join(dir, "term.pcap")
	writeScenario(t, capture, "every-terminate")
	iwtui := build(t, dir)
	m := &tmux{t: t, sock: filepath.Join(dir, "tmux.sock")}
	t.Cleanup(func() { m.run("kill-server") })
	// TERM tmux-256color: the terminfo tcell knows as xterm-like, so it
	// writes OSC 52.
	if out, err := m.run("-f", "/dev/null", "new-session", "-d", "-s", "iw", "-x", "80", "-y", "24", "env TERM=tmux-256color "+iwtui+" "+capture); err != nil {
		t.Fatalf("tmux: %v %s", err, out)
	}
	if out, err := m.run("set-option", "-s", "set-clipboard", "on"); err != nil {
		t.Fatalf("set-clipboard: %v %s", err, out)
	}
	m.wait(`rows 259/259`)
	for _, size := range [][2]string{{"200", "50"}, {"120", "40"}, {"80", "24"}} {
		if out, err := m.run("resize-window", "-t", "iw", "-x", size[0], "-y", size[1]); err != nil {
			t.Fatalf("resize-window: %v %s", err, out)
		}
		m.wait(`Packets`)
		m.wait(`rows 259/259`)
	}
	// Every view, and back.
	for _, v := range []struct{ key, title string }{
		{"e", "Findings"}, {"o", "RDMA operations"}, {"U", "Storage-protocol"}, {"C", "Connections"},
		{"t", "STags"}, {"i", "I/O graph"}, {"?", "iwtui keys"},
	} {
		m.keys(v.key)
		m.wait(v.title)
		m.keys("q")
		m.wait(`Packets`)
	}
	// Sort a view: the operations by their third column (Conn), then reversed.
	m.keys("o")
	m.wait("RDMA operations")
	m.keys("s", "s")
	m.wait(`Conn▲`) // the title is cut at 80 columns: the header marks the order
	m.keys("S")
	m.wait(`Conn▼`)
	m.keys("q")
	m.wait(`Packets`)
	// The TCP rows, then PDUs only again.
	m.keys("T")
	m.wait(`TCP \[SYN\]`)
	m.keys("T")
	// Follow the stream of a PDU row.
	m.keys("j", "j", "j", "F")
	m.wait(`Follow MPA stream`)
	m.wait(`FPDU seq|MPA frame seq`)
	m.keys("q")
	m.wait(`Packets`)
	// Copy a field of the tree.
	m.keys("Tab", "j", "j", "j", "y")
	m.wait(`copied the tree line`)
	buf, err := m.run("show-buffer")
	if err != nil || !strings.Contains(buf, " = ") {
		t.Fatalf("tmux paste buffer after y: %q %v", buf, err)
	}
	// Save with the findings as comments, on a wide screen: at 80
	// columns the status line is cut after the file's path, whose length
	// depends on the test's temporary directory.
	if out, err := m.run("resize-window", "-t", "iw", "-x", "200", "-y", "50"); err != nil {
		t.Fatalf("resize-window: %v %s", err, out)
	}
	out := filepath.Join(dir, "findings.pcapng")
	m.keys("E") // from the tree (Esc then E would read as Alt-E)
	m.wait(`Write pcapng with findings`)
	m.keys(out, "Enter")
	m.wait(`with findings as comments`)
	got, err := exec.Command(bin, "-r", out, "-T", "fields", "-e", "frame.comment").Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	if !strings.Contains(string(got), "iwkit: error rdmap.terminate: ") {
		t.Fatalf("tshark frame.comment of the saved file:\n%s", got)
	}
	m.quit()
}
