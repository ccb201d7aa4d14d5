package conform

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/endpoint/rping"
)

// TestMULPDUOverrun sends the overrun against an iwkit target with a
// 64 KiB rping buffer: the FPDU on the wire must carry ULPDU_Length
// 0xFFFF (read back from the case's own capture), and iwkit's receiver,
// which takes any ULPDU_Length, must place it intact. With rping's
// default 64-octet buffer the case skips, naming what it needs.
func TestMULPDUOverrun(t *testing.T) {
	addr := serve(t, rping.Options{Size: 65535})
	dir := t.TempDir()
	rows, err := Run(context.Background(), Options{Addr: addr, Size: 65535, Only: []string{"mpa-mulpdu-overrun"}, PcapDir: dir}, nil)
	if err != nil || len(rows) != 1 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	r := rows[0]
	if r.Verdict != Pass || !strings.HasPrefix(r.Got, "placed") {
		t.Fatalf("%s: %s (%s)", r.Verdict, r.Got, r.Reason)
	}
	// The FPDU's first octets: ULPDU_Length 0xFFFF, a tagged last DDP
	// segment of version 1 (0xC1), an RDMA Write of RDMAP version 1 (0x40).
	b, err := os.ReadFile(filepath.Join(dir, "mpa-mulpdu-overrun.pcap"))
	if err != nil || !bytes.Contains(b, []byte{0xff, 0xff, 0xc1, 0x40}) {
		t.Errorf("the capture holds no FPDU of ULPDU_Length 0xFFFF carrying a Write (%v)", err)
	}
	rows, _ = Run(context.Background(), Options{Addr: serve(t, rping.Options{}), Only: []string{"mpa-mulpdu-overrun"}}, nil)
	if len(rows) != 1 || rows[0].Verdict != Skip || !strings.Contains(rows[0].Reason, "65535") {
		t.Errorf("with a 64-octet buffer: %+v", rows)
	}
}
