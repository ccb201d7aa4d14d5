package conform

import (
	"strings"
	"testing"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/track"
)

// findingsOf runs the analysis over a case's own capture (Options.PcapDir)
// and returns the tracker's findings.
func findingsOf(t *testing.T, path string) []track.Finding {
	t.Helper()
	src, _, err := analyze.OpenFiles([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var k trackFindings
	if _, err := analyze.Run(src, analyze.Config{Workers: 1}, &k); err != nil {
		t.Fatal(err)
	}
	return k
}

// trackFindings keeps the tracker's findings of the records it sees.
type trackFindings []track.Finding

func (k *trackFindings) Record(r *analyze.Record) {
	if r.Kind == analyze.KindFinding && r.Finding.Track != nil {
		*k = append(*k, *r.Finding.Track)
	}
}

// checkNoReceiveDiagnosis: siw's answer to a Send it had no receive for,
// provoked for real (case ddp-no-recv: four Sends where rping posts one
// receive), is diagnosed in plain words from the case's capture: one
// rdmap.no_receive_posted (issue 28), blaming a Send of ours that the
// Terminate followed.
func checkNoReceiveDiagnosis(t *testing.T, row Row) {
	if row.Pcap == "" {
		t.Fatalf("case ddp-no-recv wrote no capture (%s: %s)", row.Verdict, row.Got)
	}
	var diag []track.Finding
	for _, f := range findingsOf(t, row.Pcap) {
		if f.Code == finding.RDMAPNoReceivePosted {
			diag = append(diag, f)
		}
	}
	if len(diag) != 1 {
		t.Fatalf("%d rdmap.no_receive_posted findings in %s (siw answered %q), want 1", len(diag), row.Pcap, row.Got)
	}
	f := diag[0]
	t.Logf("%s", f.String())
	if !strings.Contains(f.Message, "no receive posted") || len(f.Frames) < 2 || f.Frames[1] >= f.Frames[0] {
		t.Errorf("the diagnosis does not name the Send it blames before the Terminate: %s", f.String())
	}
}
