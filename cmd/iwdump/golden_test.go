package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenModes are the output modes checked against golden files; the
// name is the file suffix.
var goldenModes = []struct {
	name string
	args []string
}{
	{"txt", nil},
	{"V.txt", []string{"-V"}},
	{"x.txt", []string{"-x"}},
	{"ndjson", []string{"-T", "json"}},
	{"z.txt", []string{"-q", "-z", "conv,ops,findings,latency"}},
}

// goldenCaptures are the committed captures with golden outputs: the real
// siw ones that cover handshakes, CRC, RTR, reads, terminates and
// segmentation.
var goldenCaptures = []string{
	"siw/rping.pcap", "siw/crc_rping.pcap", "siw/p2p_rping.pcap", "siw/v1_rping.pcap",
	"siw/term_read_badstag.pcap", "siw/term_send_norecv.pcap", "siw/term_write_oob.pcap",
	"siw/mtu1500gso_ib_write_bw_32768.pcap", "siw/mtu1500_ib_send_bw_32768.pcap",
	// Written octet by octet from the Linux erdma driver's structures (issue 28).
	"stacks/erdma_driver.pcap",
}

func TestGolden(t *testing.T) {
	for _, c := range goldenCaptures {
		for _, m := range goldenModes {
			name := filepath.Base(c) + "." + m.name
			t.Run(name, func(t *testing.T) {
				var out, errb bytes.Buffer
				args := append([]string{"-r", filepath.Join("../../testdata", c)}, m.args...)
				if code := run(args, &out, &errb); code != exitOK {
					t.Fatalf("exit %d: %s", code, errb.String())
				}
				golden := filepath.Join("../../testdata/golden", name)
				if *update {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test ./cmd/iwdump -run TestGolden -update)", err)
				}
				if !bytes.Equal(out.Bytes(), want) {
					gl, wl := strings.Split(out.String(), "\n"), strings.Split(string(want), "\n")
					for i := 0; i < len(gl) || i < len(wl); i++ {
						var g, w string
						if i < len(gl) {
							g = gl[i]
						}
						if i < len(wl) {
							w = wl[i]
						}
						if g != w {
							t.Fatalf("line %d differs:\n got %q\nwant %q", i+1, g, w)
						}
					}
				}
			})
		}
	}
}
