package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runArgs(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// Bad input gets a clear error and exit 1, never a panic, and whatever was
// decoded before the damage is still printed.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile("../../testdata/siw/rping.pcap")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	_, full, _ := runArgs(t, "-r", "../../testdata/siw/rping.pcap")

	// Cut in the middle of a record: the PDU lines before it are all there
	// (findings about what the cut left unfinished may follow them).
	code, out, errs := runArgs(t, "-r", write("cut.pcap", good[:len(good)/2]))
	var pdus []string
	for _, l := range strings.SplitAfter(out, "\n") {
		if l != "" && !strings.Contains(l, ": ** ") {
			pdus = append(pdus, l)
		}
	}
	if code != exitError || !strings.Contains(errs, "frame") || len(pdus) < 10 || !strings.HasPrefix(full, strings.Join(pdus, "")) {
		t.Errorf("cut file: exit %d, stderr %q, %d PDU lines:\n%s", code, errs, len(pdus), out)
	}
	if strings.Contains(out, " -9223372036") {
		t.Errorf("a finding raised at the end has no time:\n%s", out)
	}
	for name, data := range map[string][]byte{
		"empty.pcap":       {},
		"garbage.pcap":     []byte("GET / HTTP/1.1\r\nHost: example\r\n\r\n"),
		"header-only.pcap": good[:10],
	} {
		code, _, errs := runArgs(t, "-r", write(name, data))
		if code != exitError || !strings.Contains(errs, "pcap") {
			t.Errorf("%s: exit %d, stderr %q", name, code, errs)
		}
	}
	// An unknown link type: every frame gets a clear note.
	odd := append([]byte(nil), good...)
	odd[20] = 0x93 // link type 147 (user-defined), little-endian header
	code, out, _ = runArgs(t, "-r", write("linktype.pcap", odd))
	if code != exitOK || !strings.Contains(out, "unsupported link type 147") {
		t.Errorf("unknown link type: exit %d, output %.200q", code, out)
	}
	// A gzip-compressed copy decodes the same as the plain file.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(good)
	zw.Close()
	if _, out, _ := runArgs(t, "-r", write("rping.pcap.gz", gz.Bytes())); out != full {
		t.Error("gzip-compressed capture decodes differently")
	}
	// Snaplen-cut frames: FPDUs are reported as partial, not as errors.
	code, out, _ = runArgs(t, "-r", "../../testdata/siw/mtu1500_ib_send_bw_32768.pcap", "-c", "5")
	if code != exitOK || strings.Count(out, "\n") == 0 {
		t.Errorf("-c 5: exit %d output %q", code, out)
	}
	// Usage errors.
	for _, args := range [][]string{{}, {"-r"}, {"-r", "x", "-T", "xml"}, {"-r", "x", "--fail-on", "fatal"}, {"-r", "x", "-Y", "ddp.nope"}, {"-r", "x", "-z", "nope"}, {"-r", "x", "--plot", "a.gif"}} {
		if code, _, errs := runArgs(t, args...); code != exitUsage || errs == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
	if code, _, errs := runArgs(t, "-r", filepath.Join(dir, "missing.pcap")); code != exitError || !strings.Contains(errs, "no such file") {
		t.Errorf("missing file: %d %q", code, errs)
	}
}

func TestFailOnAndFilter(t *testing.T) {
	// term_read_badstag holds a Terminate: an error finding.
	if code, _, _ := runArgs(t, "-r", "../../testdata/siw/term_read_badstag.pcap", "-q", "--fail-on", "error"); code != exitFindings {
		t.Errorf("--fail-on error with a Terminate: exit %d, want %d", code, exitFindings)
	}
	if code, _, _ := runArgs(t, "-r", "../../testdata/siw/rping.pcap", "-q", "--fail-on", "error"); code != exitOK {
		t.Errorf("--fail-on error on a clean rping: exit %d", code)
	}
	if code, _, _ := runArgs(t, "-r", "../../testdata/siw/rping.pcap", "-q", "--fail-on", "note"); code != exitFindings {
		t.Errorf("--fail-on note: exit %d (the FIN raises a note)", code)
	}
	_, out, _ := runArgs(t, "-r", "../../testdata/siw/rping.pcap", "-Y", `rdmap.opcode == "RDMA Read Request"`)
	if n := strings.Count(out, "\n"); n != 5 || strings.Count(out, "ReadReq") != 5 {
		t.Errorf("-Y read requests: %d lines:\n%s", n, out)
	}
	_, out, _ = runArgs(t, "-r", "../../testdata/siw/term_read_badstag.pcap", "-Y", `finding.severity == "error"`, "-T", "json")
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, `"code":"rdmap.terminate"`) {
		t.Errorf("-Y errors: %s", out)
	}
	// Merging a file with itself: every frame comes twice, and the second
	// copies are TCP retransmissions, so the PDUs are counted once.
	_, one, _ := runArgs(t, "-r", "../../testdata/siw/rping.pcap", "-q", "-z", "ops")
	_, same, _ := runArgs(t, "-r", "../../testdata/siw/rping.pcap", "-r", "../../testdata/siw/rping.pcap", "-q", "-z", "ops")
	if !strings.Contains(one, "Send                20") || one != same {
		t.Errorf("merge with itself:\n%s\n%s", one, same)
	}
	// Two different captures: both connections, frames in time order.
	_, two, _ := runArgs(t, "-r", "../../testdata/siw/rping.pcap", "-r", "../../testdata/siw/crc_rping.pcap", "-q", "-z", "ops")
	if !strings.Contains(two, "Send                40") {
		t.Errorf("merge of two captures:\n%s", two)
	}
	_, lines, _ := runArgs(t, "-r", "../../testdata/siw/crc_rping.pcap", "-r", "../../testdata/siw/rping.pcap")
	last := -1.0
	for _, l := range strings.Split(strings.TrimSpace(lines), "\n") {
		var frame int
		var ts float64
		fmt.Sscanf(l, "%d %f", &frame, &ts)
		if ts < last {
			t.Fatalf("merged output goes back in time at %q", l)
		}
		last = ts
	}
}
