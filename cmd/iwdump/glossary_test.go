package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestGlossaryNamesWork: every field -G fields lists is taken by -Y (as a
// test of presence and in a comparison) and by -T fields -e. frame.number
// was listed and rejected by -Y.
func TestGlossaryNamesWork(t *testing.T) {
	var g, errb bytes.Buffer
	if code := run([]string{"-G", "fields"}, &g, &errb); code != exitOK {
		t.Fatalf("-G fields: exit %d: %s", code, errb.String())
	}
	n := 0
	for _, line := range strings.Split(g.String(), "\n") {
		cols := strings.Split(line, "\t")
		if cols[0] != "F" {
			continue
		}
		name, ft := cols[2], cols[3]
		n++
		cmp := name + ` == "x"`
		switch {
		case strings.HasPrefix(ft, "FT_UINT"):
			cmp = name + " >= 0"
		case ft == "FT_BOOLEAN":
			cmp = name + " == 1"
		case ft == "FT_BYTES":
			cmp = name + " == 00"
		case ft == "FT_IPv4":
			cmp = name + " == 10.0.2.15"
		case strings.HasSuffix(ft, "_TIME"):
			cmp = name + " >= 0.5"
		}
		for _, args := range [][]string{{"-Y", name}, {"-Y", cmp}, {"-T", "fields", "-e", name}} {
			var out bytes.Buffer
			errb.Reset()
			if code := run(append([]string{"-r", "../../testdata/siw/rping.pcap"}, args...), &out, &errb); code != exitOK || errb.Len() > 0 {
				t.Errorf("%s: exit %d: %s", strings.Join(args, " "), code, errb.String())
			}
		}
	}
	if n < 100 {
		t.Fatalf("%d fields listed", n)
	}
	// A listed record field selects what it says.
	var out bytes.Buffer
	if code := run([]string{"-r", "../../testdata/siw/rping.pcap", "-Y", "frame.number == 9", "-T", "fields", "-e", "frame", "-e", "conn", "-e", "dir"}, &out, &errb); code != exitOK || out.String() != "9\t1\tr2i\n" {
		t.Fatalf("-Y frame.number == 9: exit %d, %q %s", code, out.String(), errb.String())
	}
}
