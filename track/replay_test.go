package track

import (
	"io"
	"testing"

	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/reassembly"
)

// replayFile feeds a capture through the real TCP reassembly and MPA
// framer (package reassembly, with markers, CRC and resync) into tr, as
// the pipeline does (Feed), and finishes the tracker.
func replayFile(t testing.TB, path string, tr *Tracker) {
	t.Helper()
	r, err := pcap.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer r.Close()
	a := reassembly.New(reassembly.Config{}, Feed{T: tr})
	var fr pcap.Frame
	for {
		err := r.Next(&fr)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		a.FeedFrame(&fr) // frames without a TCP segment carry nothing
	}
	a.Flush()
	tr.Finish()
}
