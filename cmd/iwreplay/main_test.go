package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		rc   int
		msg  string
	}{
		{[]string{"x.pcap"}, 2, "usage:"},
		{[]string{"--no-such-flag", "-i", "lo", "x.pcap"}, 2, "flag provided but not defined"},
		{[]string{"-i", "lo"}, 2, "usage:"},
		{[]string{"-i", "lo", "--pps", "10", "--mbps", "1", "x.pcap"}, 2, "at most one of"},
		{[]string{"-i", "lo", "--loop", "0", "x.pcap"}, 2, "--loop"},
		{[]string{"-i", "no-such-iface0", "x.pcap"}, 1, "no-such-iface0"},
		// The capture input is package capture's -r, or FILE after the flags.
		{[]string{"-i", "no-such-iface0", "-r", "x.pcap"}, 1, "no-such-iface0"},
		{[]string{"-i", "lo", "-r", "x.pcap", "y.pcap"}, 2, "usage:"},
		{[]string{"-i", "lo", "-r", "x.pcap", "-r", "y.pcap"}, 2, "usage:"},
		{[]string{"--connect", "127.0.0.1:1", "-r", "/no/such.pcap"}, 1, "no such file"},
	} {
		var out, errb bytes.Buffer
		if rc := run(c.args, &out, &errb); rc != c.rc || !strings.Contains(errb.String(), c.msg) {
			t.Errorf("%v: exit %d, %q", c.args, rc, errb.String())
		}
	}
}
