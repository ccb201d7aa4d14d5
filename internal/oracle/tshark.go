// Package oracle runs tshark, the differential oracle of iwkit's tests,
// the same way for every package: found or skipped (failed under CI, where
// test.sh must have installed it; see testenv), Wireshark's Tibia dissector off (it
// claims tcp/7171-7172, where perftest runs), and field output parsed into
// values per frame.
package oracle

import (
	"bytes"
	"fmt"
	"github.com/iwkit/iwkit/internal/testenv"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Tshark returns the path of tshark. When it is missing the test is
// skipped, or fails when the CI environment variable is set.
func Tshark(t testing.TB) string {
	t.Helper()
	return testenv.Tool(t, "tshark")
}

// Rows maps a frame number to each field's values, one per occurrence
// (several FPDUs in one frame give several).
type Rows map[int]map[string][]string

// Fields runs `tshark -T fields` on file with the display filter and
// returns the fields of every matching frame. tshark sometimes exits 2
// under load; it is tried three times.
func Fields(t testing.TB, file, display string, fields ...string) Rows {
	t.Helper()
	bin := Tshark(t)
	args := []string{"-r", file, "-n", "--disable-protocol", "tibia", "-T", "fields", "-E", "header=n", "-E", "separator=\t",
		"-E", "occurrence=a", "-E", "aggregator=,", "-Y", display, "-e", "frame.number"}
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	var out []byte
	var err error
	for try := 0; try < 3; try++ {
		var stderr bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stderr = &stderr
		if out, err = cmd.Output(); err == nil {
			break
		}
		err = fmt.Errorf("%v: %s", err, stderr.String())
	}
	if err != nil {
		t.Fatalf("tshark %s: %v", file, err)
	}
	rows := Rows{}
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if line == "" {
			continue
		}
		cols := strings.Split(line, "\t")
		frame, err := strconv.Atoi(cols[0])
		if err != nil {
			t.Fatalf("tshark row %q", line)
		}
		m := map[string][]string{}
		for i, f := range fields {
			if i+1 < len(cols) && cols[i+1] != "" {
				m[f] = strings.Split(cols[i+1], ",")
			}
		}
		rows[frame] = m
	}
	return rows
}
