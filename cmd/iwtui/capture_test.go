package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/internal/exitcode"
	"github.com/iwkit/iwkit/ulp"
)

// TestCaptureFlagsAsIwdump drives the real iwdump binary and iwtui with
// the same argument lists, good and bad, and compares what they do with
// the capture input flags (package capture): the exit status, the first
// line of the message (command name aside) and, for -d/-ddd, the compiled
// program. A good list reads the file in iwdump (exit 0) and opens it in
// iwtui (which then exits 3: its output is not a terminal).
func TestCaptureFlagsAsIwdump(t *testing.T) {
	dir := t.TempDir()
	iwdump := filepath.Join(dir, "iwdump")
	if out, err := exec.Command("go", "build", "-o", iwdump, "../iwdump").CombinedOutput(); err != nil {
		t.Fatalf("go build iwdump: %v\n%s", err, out)
	}
	file := "../../testdata/siw/rping.pcap"
	file2 := "../../testdata/siw/term_read_badstag.pcap"
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	exprFile := write("expr.txt", "# iWARP on the rping port\ntcp # any TCP\n  and port 7170\n")
	progOut, err := exec.Command(iwdump, "-ddd", "tcp port 7170").Output()
	if err != nil {
		t.Fatal(err)
	}
	progFile := write("prog.bpf", "# tcpdump -ddd 'tcp port 7170'\n"+string(progOut))
	badProg := write("bad.bpf", "3\n6 0 0 1\n")
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	cases := []struct {
		args []string
		want int // iwdump's exit status; iwtui's is the same but 3 for 0
	}{
		// Bad: usage mistakes exit 2 in both.
		{[]string{}, exitcode.Usage},
		{[]string{"-r"}, exitcode.Usage},
		{[]string{"--nosuchflag", "-r", file}, exitcode.Usage},
		{[]string{"-r", file, "tcp", "port"}, exitcode.Usage},
		{[]string{"-r", file, "tcp[0:2] / 0 = 1"}, exitcode.Usage},
		{[]string{"-r", file, "mpls or tcp"}, exitcode.Usage},
		{[]string{"-r", file, "tcp", "-s", "100"}, exitcode.Usage},
		{[]string{"-r", file, "-F", exprFile, "tcp"}, exitcode.Usage},
		{[]string{"-r", file, "-F", badProg}, exitcode.Usage},
		{[]string{"-i", "lo", "-r", file}, exitcode.Usage},
		{[]string{"-r", file, "-s", "-1"}, exitcode.Usage},
		{[]string{"-r", file, "-B", "0"}, exitcode.Usage},
		{[]string{"-r", file, "--decode-as", "x"}, exitcode.Usage},
		{[]string{"-r", file, "--decode-as", "4420=fcp"}, exitcode.Usage},
		{[]string{"-r", file, "-Y", "rdmap.opcode =="}, exitcode.Usage},
		// Failures: exit 1 in both.
		{[]string{"-r", filepath.Join(dir, "missing.pcap")}, exitcode.Failure},
		{[]string{"-r", file, "-F", filepath.Join(dir, "missing.bpf")}, exitcode.Failure},
		{[]string{"-i", "no-such-iface0"}, exitcode.Failure},
		// Good.
		{[]string{"-r", file}, exitcode.OK},
		{[]string{"-r", file, "-r", file2}, exitcode.OK},
		{[]string{"-r", file, "tcp port 7170"}, exitcode.OK},
		{[]string{"-r", file, "-F", exprFile}, exitcode.OK},
		{[]string{"-r", file, "-F", progFile}, exitcode.OK},
		{[]string{"-r", file, "--decode-as", "7170", "--decode-as", "4420=nvme"}, exitcode.OK},
		{[]string{"-ddd", "tcp port 7170"}, exitcode.OK},
		{[]string{"-d", "-F", exprFile}, exitcode.OK},
		{[]string{"-ddd", "-F", progFile}, exitcode.OK},
		{[]string{"-i", "lo", "-ddd", "tcp port 7170"}, exitcode.OK},  // the kernel's form
		{[]string{"-i", "any", "-ddd", "tcp port 7170"}, exitcode.OK}, // user space, cooked frames
	}
	for _, c := range cases {
		cmd := exec.Command(iwdump, append([]string{"-q"}, c.args...)...)
		var dout, derr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &dout, &derr
		err := cmd.Run()
		dcode := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			dcode = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		tout, err := os.CreateTemp(dir, "stdout")
		if err != nil {
			t.Fatal(err)
		}
		var terr strings.Builder
		tcode := run(c.args, tout, &terr)
		tout.Close()
		tprinted, _ := os.ReadFile(tout.Name())

		wantT := c.want
		if c.want == exitcode.OK && !slicesHas(c.args, "-d", "-ddd") {
			wantT = exitcode.NotATerminal
		}
		if dcode != c.want || tcode != wantT {
			t.Errorf("%q: iwdump exit %d (want %d), iwtui exit %d (want %d)\niwdump: %s\niwtui: %s", c.args, dcode, c.want, tcode, wantT, derr.String(), terr.String())
			continue
		}
		if c.want != exitcode.OK {
			dl := strings.TrimPrefix(firstLine(derr.String()), "iwdump: ")
			tl := strings.TrimPrefix(firstLine(terr.String()), "iwtui: ")
			if dl != strings.ReplaceAll(tl, "iwtui", "iwdump") || dl == "" {
				t.Errorf("%q: iwdump says %q, iwtui %q", c.args, dl, tl)
			}
		}
		if slicesHas(c.args, "-d", "-ddd") && (dout.String() != string(tprinted) || dout.Len() == 0) {
			t.Errorf("%q: iwdump prints\n%s\niwtui\n%s", c.args, dout.String(), tprinted)
		}
	}

	// The options iwtui opens with are the ones given.
	cfg, _, code, done := parse([]string{"--decode-as", "7170", "--decode-as", "4420=nvme", "-r", file, "-r", file2, "tcp"}, devnull, os.Stderr)
	if done || code != exitcode.OK || !reflect.DeepEqual(cfg.Files, []string{file, file2}) || !reflect.DeepEqual(cfg.Ports, []uint16{7170, 4420}) ||
		cfg.DecodeAs[4420] != ulp.NVMe || cfg.CaptureFilter == nil || cfg.Live != nil {
		t.Errorf("parse: %+v code %d done %v", cfg, code, done)
	}
	// FILE first after the flags, as before -r: the same as -r FILE.
	cfg2, _, _, _ := parse([]string{file, "tcp"}, devnull, os.Stderr)
	if !reflect.DeepEqual(cfg2.Files, []string{file}) || cfg2.CaptureFilter == nil {
		t.Errorf("iwtui FILE filter: %+v", cfg2)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func slicesHas(s []string, any ...string) bool {
	for _, v := range s {
		for _, a := range any {
			if v == a {
				return true
			}
		}
	}
	return false
}
