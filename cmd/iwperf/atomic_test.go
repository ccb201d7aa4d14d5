package main

import (
	"regexp"
	"strings"
	"testing"
)

// iwperf atomic_bw, server and client, as ib_atomic_bw: -A picks the
// operation, the banner names it, every row is of 8 octets.
func TestCLIAtomicBW(t *testing.T) {
	for _, a := range []string{"FETCH_AND_ADD", "CMP_AND_SWAP"} {
		c, s := cli(t, "atomic_bw", "-A", a, "-n", "200", "--crc")
		for _, out := range []string{c, s} {
			if !strings.Contains(out, "Atomic "+a+" BW Test") || !strings.Contains(out, "BW peak[MB/sec]") ||
				!regexp.MustCompile(`(?m)^ 8 +200 `).MatchString(out) {
				t.Fatalf("output:\n%s", out)
			}
		}
	}
	c, _ := cli(t, "atomic_lat", "-n", "100")
	if !strings.Contains(c, "Atomic FETCH_AND_ADD Latency Test") || !regexp.MustCompile(`(?m)^ 8 +100 `).MatchString(c) {
		t.Fatalf("output:\n%s", c)
	}
}
