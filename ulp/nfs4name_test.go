package ulp_test

import (
	"os"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/analyze"
)

// The main operation naming an NFSv4 COMPOUND follows Wireshark's
// (nfs.main_opcode): on the real NFSv4.2 mounts every call's name is the
// operation tshark 4.0 gives as its main opcode for the same operations
// (where tshark gives two, PUTROOTFH and GETATTR, the one that is not
// PUTROOTFH), and -z rpc counts the CLOSEs (issue 27).
func TestNFSv4MainOperation(t *testing.T) {
	want := map[string]string{ // ops → main, from tshark -e nfs.main_opcode
		"SEQUENCE PUTFH GETATTR CLOSE":             "CLOSE",
		"SEQUENCE PUTROOTFH GETFH GETATTR":         "GETATTR",
		"SEQUENCE PUTFH GETATTR":                   "GETATTR",
		"SEQUENCE PUTFH ACCESS GETATTR":            "ACCESS",
		"SEQUENCE PUTFH LOOKUP GETFH GETATTR":      "LOOKUP",
		"SEQUENCE PUTFH OPEN GETFH ACCESS GETATTR": "OPEN",
		"SEQUENCE PUTFH WRITE GETATTR":             "WRITE",
		"SEQUENCE PUTROOTFH SECINFO_NO_NAME":       "SECINFO_NO_NAME",
		"SEQUENCE RECLAIM_COMPLETE":                "RECLAIM_COMPLETE",
		"EXCHANGE_ID":                              "EXCHANGE_ID",
		"CREATE_SESSION":                           "CREATE_SESSION",
	}
	for _, f := range []string{"../testdata/ulp/nfs42_rdma.pcap", "../testdata/ulp/crc_nfs42_rdma.pcap"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		col, _ := analyzeBytes(t, data, analyze.Config{})
		seen := map[string]int{}
		for _, l := range col.lines {
			_, ops, ok := strings.Cut(l, " ops ")
			if !ok || !strings.HasPrefix(l, "RPC call") {
				continue
			}
			w, known := want[ops]
			if !known {
				continue
			}
			seen[ops]++
			if !strings.Contains(l, " NFSv4 "+w+" ops ") && !strings.Contains(l, " NFSv4 "+w+" /") { // the name of the file (nfs.name) may follow
				t.Errorf("%s: %q is not named %s", f, l, w)
			}
		}
		if seen["SEQUENCE PUTFH GETATTR CLOSE"] == 0 || seen["SEQUENCE PUTROOTFH GETFH GETATTR"] == 0 {
			t.Fatalf("%s: the capture no longer has the CLOSE and PUTROOTFH compounds: %v", f, seen)
		}
		closes := 0
		for _, c := range col.cmds {
			if c.name == "NFSv4 CLOSE" {
				closes++
			}
		}
		if closes != seen["SEQUENCE PUTFH GETATTR CLOSE"] {
			t.Errorf("%s: %d NFSv4 CLOSE commands, want %d", f, closes, seen["SEQUENCE PUTFH GETATTR CLOSE"])
		}
	}
}
