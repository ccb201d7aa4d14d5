package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iwkit/iwkit/export"
)

// fifoExport starts this test binary as iwdump --export dir on a named
// pipe, writes the first octets of file into it and waits until the
// export's temporary files exist: an export paused mid-way. It returns
// the process, its output, and the rest of the file's octets to write.
func fifoExport(t *testing.T, dir, file string, args ...string) (*exec.Cmd, *bytes.Buffer, *os.File, []byte) {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "in.pcap")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], append([]string{"--export", dir, "--progress", "never", "-r", fifo}, args...)...)
	cmd.Env = append(os.Environ(), "IWDUMP_TEST_AS_IWDUMP=1")
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	half := len(data) / 2
	if _, err := w.Write(data[:half]); err != nil {
		t.Fatal(err)
	}
	// Waiting for a state, not timing: the export creates its
	// temporaries when it starts.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		m, _ := filepath.Glob(filepath.Join(dir, "*", "*", ".part-*.parquet.tmp"))
		if len(m) == len(export.Tables) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no temporaries: %v\n%s", m, out)
		}
	}
	return cmd, out, w, data[half:]
}

// leftFiles are the files under dir.
func leftFiles(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestExportInterrupt: Ctrl-C (SIGINT) during an export removes its
// temporary files, commits nothing and exits 1 with a message.
func TestExportInterrupt(t *testing.T) {
	dir := t.TempDir()
	cmd, out, _, _ := fifoExport(t, dir, "../../testdata/siw/crc_rping.pcap")
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitError || !strings.Contains(out.String(), "interrupt: 1 capture sets stopped before their commit") {
		t.Fatalf("after SIGINT: %v\n%s", err, out)
	}
	if l := leftFiles(dir); len(l) != 0 {
		t.Errorf("left %v", l)
	}
}

// TestExportOverlap is the case: export A of a capture set
// starts and pauses, export B of the same set runs to its end, then A
// resumes and ends. One copy is left, and it is A's (the last commit).
func TestExportOverlap(t *testing.T) {
	file := "../../testdata/siw/crc_rping.pcap"
	dir := t.TempDir()
	// A reads a pipe: it has no content hash, so it must be told to
	// replace what B commits meanwhile.
	a, outA, w, rest := fifoExport(t, dir, file, "--name", "x", "--replace")
	var outB bytes.Buffer
	if code := run([]string{"--export", dir, "--name", "x", "--progress", "never", "-r", file}, &outB, &outB); code != exitOK {
		t.Fatalf("B: exit %d\n%s", code, outB.String())
	}
	w.Write(rest)
	w.Close()
	if err := a.Wait(); err != nil {
		t.Fatalf("A: %v\n%s", err, outA)
	}
	if outA.String() != outB.String() {
		t.Errorf("A said %q, B %q", outA, outB)
	}
	caps := mustRead(t, dir, export.Captures)
	if len(caps) != 1 || caps[0]["content_hash"] != "" {
		t.Fatalf("captures %v", caps)
	}
	if m := exportLine.FindStringSubmatch(strings.TrimSpace(outB.String())); m == nil || m[4] != fmt.Sprint(len(mustRead(t, dir, export.Pdus))) {
		t.Errorf("pdus read %d, export said %q", len(mustRead(t, dir, export.Pdus)), outB.String())
	}
	if l := leftFiles(dir); len(l) != len(export.Tables) {
		t.Errorf("files %v", l)
	}
}

// TestExportSameBaseName is the day1/trace.pcap then
// day2/trace.pcap: the second is refused (naming the first), exported
// under --name, replaces with --replace, and an unchanged file is skipped
// with --skip-existing.
func TestExportSameBaseName(t *testing.T) {
	tmp, dir := t.TempDir(), t.TempDir()
	day1, day2 := filepath.Join(tmp, "day1", "trace.pcap"), filepath.Join(tmp, "day2", "trace.pcap")
	for f, src := range map[string]string{day1: "../../testdata/siw/crc_rping.pcap", day2: "../../testdata/siw/term_read_badstag.pcap"} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(f), 0o755)
		os.WriteFile(f, b, 0o644)
	}
	ex := func(want int, args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if code := run(append([]string{"--export", dir, "--progress", "never"}, args...), &out, &out); code != want {
			t.Fatalf("%v: exit %d, want %d\n%s", args, code, want, out.String())
		}
		return out.String()
	}
	ex(exitOK, "-r", day1)
	if out := ex(exitError, "-r", day2); !strings.Contains(out, "capture name taken by other content") || !strings.Contains(out, day1) {
		t.Errorf("refusal: %s", out)
	}
	ex(exitOK, "--name", "trace-day2", "--tag", "site=lab2", "-r", day2)
	if out := ex(exitOK, "--skip-existing", "-r", day1); out != "capture=trace skipped=unchanged\n" {
		t.Errorf("skip: %q", out)
	}
	byName := func() map[string]export.Row {
		m := map[string]export.Row{}
		for _, c := range mustRead(t, dir, export.Captures) {
			m[c["capture"].(string)] = c
		}
		return m
	}
	caps := byName()
	if len(caps) != 2 || caps["trace"]["paths"].([]string)[0] != day1 || caps["trace-day2"]["tags"].([]string)[0] != "site=lab2" {
		t.Errorf("captures %v", caps)
	}
	ex(exitOK, "--replace", "-r", day2)
	if caps := byName(); caps["trace"]["paths"].([]string)[0] != day2 {
		t.Errorf("after --replace %v", caps["trace"])
	}
	ex(exitUsage, "--tag", "Bad=1", "-r", day1)
	ex(exitUsage, "--name", "a/b", "-r", day1)
}
