package ulp_test

import (
	"os"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/analyze"
)

// NFS WRITE data carried in the Send itself (no read chunk, RFC 8166
// §3.5.3: the small writes Linux sends inline) is counted as the command's
// inline octets, as SMB2 and iSER count theirs; data in a read chunk is
// not (issue 27). The real captures: an NFSv3 WRITE of 100 octets and an
// NFSv4.2 WRITE of 100 octets inline, beside 4 KiB WRITEs by RDMA Read.
func TestNFSWriteInline(t *testing.T) {
	for _, f := range []string{"nfs3_rdma.pcap", "nfs42_rdma.pcap", "crc_nfs42_rdma.pcap"} {
		data, err := os.ReadFile("../testdata/ulp/" + f)
		if err != nil {
			t.Fatal(err)
		}
		col, _ := analyzeBytes(t, data, analyze.Config{})
		inline, byRDMA := 0, 0
		for _, c := range col.cmds {
			if !strings.HasSuffix(c.name, " WRITE") {
				continue
			}
			t.Logf("%s: %s xid 0x%x inline %d moved %d reads %d", f, c.name, c.id, c.inl, c.moved, c.reads)
			switch {
			case c.reads == 0 && c.inl == 100:
				inline++
			case c.reads > 0 && c.inl == 0 && c.moved > 0:
				byRDMA++
			default:
				t.Errorf("%s: %s xid 0x%x: inline %d, %d octets in %d RDMA Reads", f, c.name, c.id, c.inl, c.moved, c.reads)
			}
		}
		if inline == 0 || byRDMA == 0 {
			t.Errorf("%s: %d inline WRITEs, %d by RDMA Read: the capture should have both", f, inline, byRDMA)
		}
	}
}
