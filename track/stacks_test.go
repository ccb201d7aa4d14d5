package track

import (
	"path/filepath"
	"testing"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
)

// TestERDMADriverCapture reads the capture written octet by octet from the
// Linux erdma driver's structures (../testdata/stacks/mkerdma, not gen): all
// five Sends are framed and decoded after the Rev 129 frames, and the only
// findings are one mpa.rev_erdma note and the two FINs.
func TestERDMADriverCapture(t *testing.T) {
	var fs []Finding
	tr := New(Config{OnFinding: func(f *Finding) { fs = append(fs, *f) }})
	replayFile(t, filepath.Join("..", "testdata", "stacks", "erdma_driver.pcap"), tr)
	got := map[finding.Code]int{}
	for _, f := range fs {
		got[f.Code]++
	}
	want := map[finding.Code]int{finding.MPARevERDMA: 1, finding.MPALLPClosed: 2}
	for c, n := range got {
		if want[c] != n {
			t.Errorf("%s: %d findings, want %d", c, n, want[c])
		}
	}
	for c, n := range want {
		if got[c] != n {
			t.Errorf("%s: %d findings, want %d", c, got[c], n)
		}
	}
	st := tr.Stats()
	sends := st.Dir[0].Messages[decode.OpSend] + st.Dir[1].Messages[decode.OpSend]
	if sends != 5 || st.Dir[0].Skips+st.Dir[1].Skips != 0 {
		t.Errorf("%d Sends decoded (want 5), %d skips", sends, st.Dir[0].Skips+st.Dir[1].Skips)
	}
	if t.Failed() {
		for _, f := range fs {
			t.Log(f.String())
		}
	}
}
