package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/pcap"
)

// With -t e and -t ad, each PDU line shows the capture time of the frame
// it names (the frame holding the PDU's last octet), to the microsecond.
func TestTimeFormats(t *testing.T) {
	const capture = "../../testdata/siw/crc_rping.pcap"
	r, err := pcap.Open(capture)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var stamps []time.Time
	for {
		var f pcap.Frame
		if err := r.Next(&f); err != nil {
			break
		}
		stamps = append(stamps, f.Timestamp)
	}
	for _, tf := range []string{"e", "ad"} {
		var out, errb bytes.Buffer
		if code := run([]string{"-r", capture, "-t", tf}, &out, &errb); code != exitOK {
			t.Fatalf("-t %s: exit %d: %s", tf, code, errb.String())
		}
		lines := 0
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			f := strings.Fields(line)
			n, err := strconv.Atoi(f[0])
			if err != nil || n < 1 || n > len(stamps) || strings.Contains(line, "**") {
				continue // findings may name an earlier frame's time
			}
			want := stamps[n-1].Round(time.Microsecond).UTC()
			var got string
			if tf == "e" {
				got = f[1]
				if w := strconv.FormatInt(want.Unix(), 10) + want.Format(".000000"); got != w {
					t.Errorf("-t e frame %d: %s, want %s", n, got, w)
				}
			} else {
				got = f[1] + " " + f[2]
				if w := want.Format("2006-01-02 15:04:05.000000"); got != w {
					t.Errorf("-t ad frame %d: %s, want %s", n, got, w)
				}
			}
			lines++
		}
		if lines < 10 {
			t.Fatalf("-t %s: only %d lines checked:\n%s", tf, lines, out.String())
		}
	}
}
