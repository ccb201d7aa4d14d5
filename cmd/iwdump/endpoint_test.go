package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/internal/oracle"
)

// TestEndpointFieldsAgainstTshark: the TCP/IP endpoint and time fields
// (ip.src, ip.dst, ip.addr, tcp.srcport, tcp.dstport, tcp.port,
// frame.time_relative) print as tshark prints them (ip.addr and tcp.port
// as its two occurrences), and -Y with them selects the frames tshark's
// same filter selects among the frames that carry MPA.
func TestEndpointFieldsAgainstTshark(t *testing.T) {
	bin := oracle.Tshark(t)
	fields := []string{"ip.src", "ip.dst", "ip.addr", "tcp.srcport", "tcp.dstport", "tcp.port", "frame.time_relative"}
	tshark := func(file, display string, fs ...string) []string {
		args := []string{"-r", file, "-n", "--disable-protocol", "tibia", "-Y", display, "-T", "fields", "-e", "frame.number"}
		for _, f := range fs {
			args = append(args, "-e", f)
		}
		var out []byte
		var err error
		for try := 0; try < 3; try++ { // tshark sometimes exits 2 under load
			if out, err = exec.Command(bin, args...).Output(); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatalf("tshark %s: %v", strings.Join(args, " "), err)
		}
		return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	}
	ours := func(file, display string, fs ...string) []string {
		args := []string{"-r", file, "-T", "fields", "-e", "frame"}
		if display != "" {
			args = append(args, "-Y", display)
		}
		for _, f := range fs {
			args = append(args, "-e", f)
		}
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != exitOK {
			t.Fatalf("iwdump %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
		}
		return strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	}
	for _, file := range []string{"../../testdata/siw/rping.pcap", "../../testdata/siw/term_read_badstag.pcap", "../../testdata/siw/crc_rping.pcap"} {
		want := map[string]string{}
		for _, line := range tshark(file, "iwarp_mpa", fields...) {
			n, _, _ := strings.Cut(line, "\t")
			want[n] = line
		}
		got := ours(file, "", fields...)
		for _, line := range got {
			n, _, _ := strings.Cut(line, "\t")
			if want[n] != line {
				t.Errorf("%s frame %s:\niwdump %q\ntshark %q", file, n, line, want[n])
			}
		}
		if len(got) < 4 {
			t.Fatalf("%s: %d lines", file, len(got))
		}
		// The filters select what tshark's select, frame for frame.
		mid := strings.Split(got[len(got)/2], "\t")
		port, rel := mid[4], mid[7] // tcp.srcport, frame.time_relative of a middle frame
		for _, flt := range []string{
			"tcp.srcport == " + port,
			"tcp.dstport == " + port,
			"tcp.port == " + port + " && frame.time_relative > " + rel,
			"ip.addr == 10.0.2.15",
			"ip.addr == 10.0.2.0/24 && frame.time_relative <= " + rel,
			"ip.addr != 10.0.2.15",
			"ip.src == 10.0.2.15 && tcp.port != " + port,
			"frame.time_relative >= " + rel,
		} {
			w := tshark(file, "iwarp_mpa && ("+flt+")")
			g := ours(file, flt)
			if strings.Join(g, "\n") != strings.Join(w, "\n") {
				t.Errorf("%s -Y %q: iwdump frames %q, tshark %q", file, flt, g, w)
			}
		}
	}
}
