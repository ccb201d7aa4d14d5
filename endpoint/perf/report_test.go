package perf

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/iwkit/iwkit/endpoint"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs; got:\n%s\nwant:\n%s", name, got, want)
	}
}

func fixedResult(test string) Result {
	r := Result{Test: test, QPs: 2, Depth: 128, CQMod: 100,
		Params: endpoint.Params{Rev: 2, CRC: true, MarkersRx: true, IRD: 16, ORD: 16, MULPDU: 1448},
		Local:  Address{Addr: "192.0.2.1:40000", QPN: 1, STag: 0x101, VAddr: 0x7f0000001000},
		Remote: Address{Addr: "192.0.2.2:18515", STag: 0x201, VAddr: 0x7f0000002000},
		Row: Row{Size: 65536, Iters: 5000, PeakBps: 1200 * (1 << 20), AvgBps: 1100.5 * (1 << 20), MsgRate: 17608,
			Elapsed: time.Second}}
	if IsLat(test) {
		r.Depth = 1
		r.Row = Row{Size: 2, Iters: 1000, Lat: &Latency{Min: 10.5, Max: 250, Typical: 12.25, Avg: 13.4, Stdev: 3.1, P99: 40, P999: 200}}
	}
	return r
}

// TestFormatGolden pins the layout perftest's readers expect: banner,
// perftest's column heads, its row format, MB = 2^20, Gb = 10^9 bits.
func TestFormatGolden(t *testing.T) {
	var b bytes.Buffer
	fixedResult(WriteBW).Format(&b, false)
	fixedResult(WriteBW).Format(&b, true)
	r := fixedResult(SendBW)
	r.Bidir = true
	r.Format(&b, false)
	fixedResult(ReadLat).Format(&b, false)
	golden(t, "format.golden", b.Bytes())
	golden(t, "json-bw.golden", JSON([]Result{fixedResult(WriteBW)}, false))
	golden(t, "json-lat.golden", JSON([]Result{fixedResult(SendLat)}, false))
	sw := []Result{fixedResult(WriteBW), fixedResult(WriteBW)}
	sw[1].Row.Size = 131072
	golden(t, "json-sweep-gbits.golden", JSON(sw, true))
}

// Under --perftest the JSON names perftest's exchange, as the banner
// does, not iwkit's MPA Private Data (issue 31, broken item 4).
func TestJSONExchangeMethod(t *testing.T) {
	r := fixedResult(WriteBW)
	r.Exchange = "perftest 6.06"
	var doc struct {
		TestInfo map[string]any `json:"test_info"`
	}
	if err := json.Unmarshal(JSON([]Result{r}, false), &doc); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	r.Format(&b, false)
	if got := doc.TestInfo["Data_ex_method"]; got != "perftest 6.06, rdma_cm control QP" || !bytes.Contains(b.Bytes(), []byte("Data ex. method : perftest 6.06, rdma_cm control QP")) {
		t.Fatalf("Data_ex_method %q; banner:\n%s", got, b.String())
	}
}
