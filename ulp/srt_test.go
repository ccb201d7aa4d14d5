package ulp_test

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/internal/oracle"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/ulp"
)

// srtRow is one row of tshark's service response time table, or ours
// gathered the same way.
type srtRow struct {
	calls              int
	min, max, sum, avg time.Duration
}

var srtLine = regexp.MustCompile(`^\s*\d+\s+(.+?)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$`)

func secs(s string) time.Duration {
	f, _ := strconv.ParseFloat(s, 64)
	return time.Duration(math.Round(f*1e6)) * time.Microsecond
}

// tsharkSRT runs tshark -q -z STAT on a capture and returns its rows by
// name.
func tsharkSRT(t *testing.T, bin, file, stat string) map[string]srtRow {
	t.Helper()
	out, err := exec.Command(bin, "-r", file, "-n", "-o", "tcp.try_heuristic_first:TRUE", "-q", "-z", stat).Output()
	if err != nil {
		t.Fatalf("tshark -z %s: %v", stat, err)
	}
	rows := map[string]srtRow{}
	for _, l := range strings.Split(string(out), "\n") {
		m := srtLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[2])
		rows[m[1]] = srtRow{calls: n, min: secs(m[3]), max: secs(m[4]), avg: secs(m[5]), sum: secs(m[6])}
	}
	return rows
}

// smb2SRTNames are tshark's SMB2 SRT row names by iwkit's command name
// ([MS-SMB2] §2.2.1 command codes).
var smb2SRTNames = map[string]string{"SMB2 NEGOTIATE": "Negotiate Protocol", "SMB2 SESSION_SETUP": "Session Setup", "SMB2 LOGOFF": "Session Logoff",
	"SMB2 TREE_CONNECT": "Tree Connect", "SMB2 TREE_DISCONNECT": "Tree Disconnect", "SMB2 CREATE": "Create", "SMB2 CLOSE": "Close", "SMB2 FLUSH": "Flush",
	"SMB2 READ": "Read", "SMB2 WRITE": "Write", "SMB2 LOCK": "Lock", "SMB2 IOCTL": "Ioctl", "SMB2 ECHO": "KeepAlive", "SMB2 QUERY_DIRECTORY": "Find",
	"SMB2 CHANGE_NOTIFY": "Notify", "SMB2 QUERY_INFO": "GetInfo", "SMB2 SET_INFO": "SetInfo", "SMB2 OPLOCK_BREAK": "Break"}

// TestTsharkSRT: tshark as the oracle of the -z smb2 and -z rpc tables on
// the committed real captures: the answered commands' count, min, max and
// mean latency of each row tshark's -z smb2,srt / rpc,srt has equal ours
// (to its microsecond). Left out where tshark is known wrong (issue 27):
// NFS WRITEs whose data a read chunk carries, which tshark times from the
// last Read Response instead of the call (filtered out of its table); and
// tshark sums an NFSv4 COMPOUND under one row where iwkit names it by its
// main operation, so NFSv4 compares as one total.
func TestTsharkSRT(t *testing.T) {
	bin := oracle.Tshark(t) // skips, or fails under CI=true
	cases := []struct {
		file, stat string
		row        func(k ulp.CmdKey) string // tshark's row of our command, "" none
	}{
		{"smb_direct.pcap", "smb2,srt", func(k ulp.CmdKey) string { return smb2SRTNames[k.Name] }},
		{"crc_smb_direct.pcap", "smb2,srt", func(k ulp.CmdKey) string { return smb2SRTNames[k.Name] }},
		{"nfs3_rdma.pcap", "rpc,srt,100003,3,nfs.procedure_v3!=7", func(k ulp.CmdKey) string {
			if n, ok := strings.CutPrefix(k.Name, "NFSv3 "); ok && n != "WRITE" {
				return n
			}
			return ""
		}},
		{"nfs42_rdma.pcap", "rpc,srt,100003,4,nfs.main_opcode!=38", func(k ulp.CmdKey) string {
			if strings.HasPrefix(k.Name, "NFSv4 ") && k.Name != "NFSv4 WRITE" && k.Name != "NFSv4 NULL" {
				return "COMPOUND"
			}
			return ""
		}},
		{"crc_nfs42_rdma.pcap", "rpc,srt,100003,4,nfs.main_opcode!=38", func(k ulp.CmdKey) string {
			if strings.HasPrefix(k.Name, "NFSv4 ") && k.Name != "NFSv4 WRITE" && k.Name != "NFSv4 NULL" {
				return "COMPOUND"
			}
			return ""
		}},
	}
	compared := 0
	for _, tc := range cases {
		file := "../testdata/ulp/" + tc.file
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		src, err := pcap.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		cs := &cmdTimes{}
		rep, err := analyze.Run(src, analyze.Config{}, cs)
		if err != nil {
			t.Fatal(err)
		}
		ours := map[string]*srtRow{}
		for _, c := range cs.cmds {
			name := tc.row(ulp.CmdKey{Proto: c.Proto, Name: c.Name})
			if name == "" || !c.Answered {
				continue
			}
			r := ours[name]
			if r == nil {
				r = &srtRow{min: c.Latency, max: c.Latency}
				ours[name] = r
			}
			r.calls++
			r.sum += c.Latency
			r.min, r.max = min(r.min, c.Latency), max(r.max, c.Latency)
		}
		// the -z table's rows are these commands: check the rows tshark
		// has one for against the same commands
		for k, st := range rep.ULP.ByName {
			name := tc.row(k)
			if name == "" || tc.row(k) == "COMPOUND" {
				continue
			}
			if o := ours[name]; o == nil || int(st.Latency.Count()) != o.calls || time.Duration(st.Latency.Min()) != o.min || time.Duration(st.Latency.Max()) != o.max {
				t.Errorf("%s: -z row %s disagrees with its commands", tc.file, k.Name)
			}
		}
		ts := tsharkSRT(t, bin, file, tc.stat)
		if len(ts) == 0 {
			t.Errorf("%s: tshark -z %s has no rows", tc.file, tc.stat)
		}
		for name, want := range ts {
			got := ours[name]
			if got == nil {
				t.Errorf("%s: tshark row %s (%d calls), none in iwkit's", tc.file, name, want.calls)
				continue
			}
			avg := (got.sum/time.Duration(got.calls) + time.Microsecond/2).Truncate(time.Microsecond)
			if got.calls != want.calls || got.min != want.min || got.max != want.max || got.sum != want.sum || (avg-want.avg).Abs() > time.Microsecond {
				t.Errorf("%s %s: iwkit %d calls min %v max %v mean %v sum %v; tshark %d calls min %v max %v mean %v sum %v", tc.file, name,
					got.calls, got.min, got.max, avg, got.sum, want.calls, want.min, want.max, want.avg, want.sum)
			}
			compared++
			t.Logf("%s %s: %d calls, mean %v (tshark %d, %v)", tc.file, name, got.calls, avg, want.calls, want.avg)
		}
		for name, got := range ours {
			if _, ok := ts[name]; !ok {
				t.Errorf("%s: iwkit row %s (%d calls), none in tshark's", tc.file, name, got.calls)
			}
		}
	}
	if compared == 0 {
		t.Error("nothing compared")
	}
}

// cmdTimes keeps the commands.
type cmdTimes struct{ cmds []ulp.Command }

func (c *cmdTimes) Record(r *analyze.Record) {
	if r.Kind == analyze.KindCommand {
		c.cmds = append(c.cmds, *r.Cmd)
	}
}
