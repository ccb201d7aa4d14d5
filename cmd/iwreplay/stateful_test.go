package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func siw(name string) string { return filepath.Join("..", "..", "testdata", "siw", name) }

// pair runs iwreplay --listen with respArgs and iwreplay --connect with
// iniArgs against it, and returns both outputs and exit codes.
func pair(t *testing.T, respArgs, iniArgs []string) (respOut, iniOut string, respRC, iniRC int) {
	t.Helper()
	pr, pw := io.Pipe()
	var wg sync.WaitGroup
	var rout bytes.Buffer
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer pw.Close()
		respRC = run(append([]string{"--listen", "127.0.0.1:0", "--timeout", "5"}, respArgs...), &rout, pw)
	}()
	// The listener says where it listens on stderr.
	sc := bufio.NewScanner(pr)
	addr := ""
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "iwreplay: listening on "); ok {
			addr = a
			break
		}
		t.Log(sc.Text())
	}
	go io.Copy(io.Discard, pr)
	if addr == "" {
		wg.Wait()
		t.Fatalf("no listening address; exit %d, %s", respRC, rout.String())
	}
	var iout, ierr bytes.Buffer
	iniRC = run(append([]string{"--connect", addr, "--timeout", "5"}, iniArgs...), &iout, &ierr)
	wg.Wait()
	return rout.String(), iout.String(), respRC, iniRC
}

func TestStatefulCommand(t *testing.T) {
	// perftest's write_bw: two connections, STags on the first, Writes on
	// the second; both sides replayed, nothing differs.
	f := siw("ib_write_bw_4096.pcap")
	rout, iout, rrc, irc := pair(t, []string{"--topspeed", "--json", f}, []string{"-t", f})
	if rrc != 0 || irc != 0 {
		t.Fatalf("exit %d/%d:\n%s\n%s", rrc, irc, rout, iout)
	}
	if !strings.Contains(iout, "Replayed the initiator of connection 1,2: 54 operations, 54 matched, 0 differences") {
		t.Errorf("initiator report: %q", iout)
	}
	lines := strings.Split(strings.TrimSpace(rout), "\n")
	var sum map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatal(err)
	}
	if sum["operations"] != 54.0 || sum["matched"] != 54.0 || sum["differences"] != 0.0 || sum["side"] != "responder" {
		t.Errorf("responder summary %v", sum)
	}

	// --decode-as reaches the analyzer that reads the capture (declared
	// ports: the framer keeps looking for MPA there).
	rout, iout, rrc, irc = pair(t, []string{"--topspeed", "--decode-as", "7170", siw("rping.pcap")}, []string{"--topspeed", "--decode-as", "7170", siw("rping.pcap")})
	if rrc != 0 || irc != 0 || !strings.Contains(iout, "0 differences") {
		t.Fatalf("--decode-as 7170: exit %d/%d:\n%s\n%s", rrc, irc, rout, iout)
	}

	// The responder replays rping, the initiator the CRC variant: the
	// Request differs (C), and the responder says so with exit 1. The
	// initiator sees what its capture has: a Reply with C (the endpoint
	// answers C=1 with C=1, CRCs being in use then, RFC 5044 §7.1.1).
	rout, iout, rrc, irc = pair(t, []string{"--topspeed", "--json", siw("rping.pcap")}, []string{"--topspeed", siw("crc_rping.pcap")})
	if rrc != 1 || irc != 0 {
		t.Fatalf("exit %d/%d:\n%s\n%s", rrc, irc, rout, iout)
	}
	if !strings.Contains(rout, `{"frame":4,"kind":"handshake","what":"MPA Request C (CRC) true, the capture has false"}`) ||
		!strings.Contains(rout, `"operations":36,"matched":35,"differences":1`) {
		t.Errorf("responder: %s", rout)
	}
}

func TestStatefulUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		rc   int
		msg  string
	}{
		{[]string{"--connect", "h:1", "--listen", "1", "x.pcap"}, 2, "not both"},
		{[]string{"--connect", "h:1", "-i", "lo", "x.pcap"}, 2, "stateless"},
		{[]string{"--connect", "h:1", "--pps", "5", "x.pcap"}, 2, "stateless"},
		{[]string{"--connect", "h:1", "-x", "2", "-t", "x.pcap"}, 2, "at most one"},
		{[]string{"--connect", "h:1", "--assume", "fast", "x.pcap"}, 2, "--assume"},
		{[]string{"--connect", "h:1"}, 2, "usage:"},
		{[]string{"--connect", "h:1", "no-such.pcap"}, 1, "no-such.pcap"},
		{[]string{"--connect", "h:1", "--conn", "3", siw("rping.pcap")}, 1, "no connection 3"},
		// --decode-as is package capture's, as in iwdump and iwtui.
		{[]string{"--connect", "h:1", "--decode-as", "x", siw("rping.pcap")}, 2, "bad port"},
		{[]string{"--connect", "h:1", "--decode-as", "7170=fcp", siw("rping.pcap")}, 2, "unknown protocol"},
		{[]string{"-i", "lo", "--decode-as", "7170", siw("rping.pcap")}, 2, "for stateful replay"},
		{[]string{"--connect", "h:1", "--decode-as", "7170=nvme", "--conn", "3", siw("rping.pcap")}, 1, "no connection 3"},
	} {
		var out, errb bytes.Buffer
		if rc := run(c.args, &out, &errb); rc != c.rc || !strings.Contains(errb.String(), c.msg) {
			t.Errorf("%v: exit %d, %q", c.args, rc, errb.String())
		}
	}
}
