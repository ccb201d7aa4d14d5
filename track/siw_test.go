package track

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/finding"
)

// siwCaptures returns the real captures between two Linux siw endpoints
// (../testdata/siw, made with the VM peer in ../peers/siw). IWKIT_SIW_CAPTURES, a
// glob, overrides the location.
func siwCaptures(t *testing.T) []string {
	pat := os.Getenv("IWKIT_SIW_CAPTURES")
	if pat == "" {
		pat = filepath.Join("..", "testdata", "siw", "*.pcap")
	}
	files, err := filepath.Glob(pat)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skipf("no siw captures match %s", pat)
	}
	return files
}

// siwInfo is what the .info file next to a capture says about the run.
type siwInfo struct {
	server, client string
	serverRC       int
	clientRC       int
}

func readInfo(path string) (siwInfo, bool) {
	f, err := os.Open(strings.TrimSuffix(path, ".pcap") + ".info")
	if err != nil {
		return siwInfo{}, false
	}
	defer f.Close()
	var in siwInfo
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ": ")
		if !ok {
			continue
		}
		switch k {
		case "server_cmd":
			in.server = v
		case "client_cmd":
			in.client = v
		case "server_rc":
			in.serverRC, _ = strconv.Atoi(v)
		case "client_rc":
			in.clientRC, _ = strconv.Atoi(v)
		}
	}
	return in, in.client != ""
}

func flagInt(cmd, flag string) int {
	m := regexp.MustCompile(`(?:^| )` + flag + ` (\d+)`).FindStringSubmatch(cmd)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func TestSiwCaptures(t *testing.T) {
	for _, path := range siwCaptures(t) {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			var fs []Finding
			var terms []TerminateReport
			tr := New(Config{
				OnFinding:   func(f *Finding) { fs = append(fs, *f) },
				OnTerminate: func(r *TerminateReport) { terms = append(terms, *r) },
			})
			replayFile(t, path, tr)
			// siw-term: the server Terminates right after the offending
			// message of frame 8 (testdata/siw/README.md, item 6).
			causes := map[string][3]uint8{
				"term_write_badstag.pcap": {1, 1, 0}, "term_write_oob.pcap": {1, 1, 1},
				"term_read_badstag.pcap": {0, 1, 0}, "term_read_oob.pcap": {0, 1, 1},
				"term_send_norecv.pcap": {1, 2, 2},
			}
			if want, ok := causes[name]; ok {
				if len(terms) != 1 {
					t.Fatalf("%d Terminates, want 1", len(terms))
				}
				r := terms[0]
				got := [3]uint8{r.Cause.Layer, r.Cause.EType, r.Cause.Code}
				if got != want || !r.Siw || r.Dir != R2I || r.BlamedFrame != 8 || r.Verdict != VerdictPlausible ||
					r.SiwReadMSN != strings.HasPrefix(name, "term_read") {
					t.Errorf("Terminate report %+v, want cause %v from siw blaming frame 8", r, want)
				}
			}
			in, hasInfo := readInfo(path)
			isTerm := strings.HasPrefix(strings.TrimPrefix(name, strings.SplitN(name, "term_", 2)[0]), "term_") && !strings.Contains(name, "term_ok")
			nterm, norecv := 0, 0
			for _, f := range fs {
				t.Logf("%s", f.String())
				if f.Severity != finding.Error {
					continue
				}
				if isTerm && f.Code == finding.RDMAPTerminate {
					nterm++
					continue
				}
				if name == "term_send_norecv.pcap" && f.Code == finding.RDMAPNoReceivePosted {
					norecv++
					continue
				}
				t.Errorf("unexpected error finding: %s", f.String())
			}
			// siw Terminates a Send that finds its receive queue empty
			// (siw_rqe_get fails): the diagnosis names it once.
			if want := b2i(name == "term_send_norecv.pcap"); norecv != want {
				t.Errorf("%d rdmap.no_receive_posted findings, want %d", norecv, want)
			}
			if isTerm && nterm != 1 {
				t.Errorf("%d Terminate findings, want 1 (siw-term provokes exactly one)", nterm)
			}
			if !hasInfo {
				return
			}
			conns := tr.AllConnStats()
			if len(conns) == 0 {
				t.Fatal("no connections")
			}
			data := conns[len(conns)-1] // perftest: control connection first, then data
			ops := [2]OpCounts{data.Dir[0].Ops, data.Dir[1].Ops}
			ok := in.serverRC == 0 && in.clientRC == 0
			tool := strings.Fields(in.client)[0]
			switch {
			case tool == "rping" && ok:
				n := flagInt(in.client, "-C")
				// rping: the client (MPA Initiator) advertises a buffer with
				// a Send; the server reads it, answers with a Send, gets a
				// second advertisement, writes into it and answers again.
				want := [2]OpCounts{
					I2R: {Sends: uint64(2 * n), ReadResponses: uint64(n)},
					R2I: {Sends: uint64(2 * n), Reads: uint64(n), ReadsAnswered: uint64(n), Writes: uint64(n)},
				}
				if data.Negotiated.RTR != "" {
					want[I2R].RTRs = 1
				}
				for d := range ops {
					if ops[d] != want[d] {
						t.Errorf("%s ops %+v, want %+v", Dir(d), ops[d], want[d])
					}
				}
				if data.ReadLatency.Count != uint64(n) || data.ReadLatency.P50 <= 0 {
					t.Errorf("read latency %+v, want %d samples", data.ReadLatency, n)
				}
			case tool == "ib_write_bw" && ok:
				if n := flagInt(in.client, "-n"); ops[I2R].Writes != uint64(n) {
					t.Errorf("data connection: %d Writes from the client, want %d", ops[I2R].Writes, n)
				}
			case tool == "ib_read_bw" && ok:
				n := uint64(flagInt(in.client, "-n"))
				if ops[I2R].Reads != n || ops[I2R].ReadsAnswered != n || ops[R2I].ReadResponses != n {
					t.Errorf("data connection: ops %+v / %+v, want %d Reads answered", ops[I2R], ops[R2I], n)
				}
				if data.ReadLatency.Count != n {
					t.Errorf("read latency samples %d, want %d", data.ReadLatency.Count, n)
				}
			case tool == "ib_send_bw" && ok:
				if n := flagInt(in.client, "-n"); ops[I2R].Sends != uint64(n) {
					t.Errorf("data connection: %d Sends from the client, want %d", ops[I2R].Sends, n)
				}
			case strings.HasSuffix(in.client, " ok"):
				want := OpCounts{Writes: 1, Reads: 1, ReadsAnswered: 1, Sends: 1}
				if ops[I2R] != want {
					t.Errorf("siw-term ok: ops %+v, want %+v", ops[I2R], want)
				}
			}
		})
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
