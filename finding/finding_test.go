package finding

import (
	"bufio"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

var nameRE = regexp.MustCompile(`^[a-z0-9]+\.[a-z0-9_]+$`)

// receiverCheckIDs reads the row ids of spec/receiver-checks.md, copied
// into testdata.
func receiverCheckIDs(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open("testdata/receiver-check-ids.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ids := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			ids[l] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(ids) < 60 {
		t.Fatalf("only %d receiver-check ids in testdata", len(ids))
	}
	return ids
}

func TestCatalogue(t *testing.T) {
	ids := receiverCheckIDs(t)
	names := map[string]Code{}
	all := All()
	if len(all) != NumCodes-1 {
		t.Fatalf("All has %d codes, NumCodes-1 is %d", len(all), NumCodes-1)
	}
	layer := ""
	seenLayer := map[string]bool{}
	for i, inf := range all {
		c := Code(i + 1)
		if inf.Code != c {
			t.Errorf("row %d: Code %d", i+1, inf.Code)
		}
		if !nameRE.MatchString(inf.Name) {
			t.Errorf("%d: name %q does not match %s (a row missing from infos?)", c, inf.Name, nameRE)
			continue
		}
		if o, ok := names[inf.Name]; ok {
			t.Errorf("%s: name also used by code %d", inf.Name, o)
		}
		names[inf.Name] = c
		if c.String() != inf.Name {
			t.Errorf("%s: String %q", inf.Name, c.String())
		}
		if got, ok := Lookup(inf.Name); !ok || got != c {
			t.Errorf("%s: Lookup gives %v %v", inf.Name, got, ok)
		}
		if inf.Severity > Error {
			t.Errorf("%s: severity %v", inf.Name, inf.Severity)
		}
		if c.Severity() != inf.Severity {
			t.Errorf("%s: Severity() %v, row %v", inf.Name, c.Severity(), inf.Severity)
		}
		if inf.Stage < StageCapture || inf.Stage > StagePipeline {
			t.Errorf("%s: no stage", inf.Name)
		}
		if s := inf.Summary; s == "" || strings.ContainsAny(s, "\n|") || len(s) > 120 {
			t.Errorf("%s: summary %q is not one line of at most 120 characters without '|'", inf.Name, s)
		}
		if len(inf.Checks) == 0 && inf.Ref == "" {
			t.Errorf("%s: neither receiver-check ids nor a reference", inf.Name)
		}
		for _, id := range inf.Checks {
			if !ids[id] {
				t.Errorf("%s: receiver check %q is not a row of receiver-checks.md", inf.Name, id)
			}
		}
		if inf.Fatal && inf.Severity != Error {
			t.Errorf("%s: fatal but not an error", inf.Name)
		}
		// Codes are declared in blocks by layer: a layer's codes are
		// contiguous, so All (and the README's list) groups them.
		if l := inf.Layer(); l != layer {
			if seenLayer[l] {
				t.Errorf("%s: layer %q is split into two blocks", inf.Name, l)
			}
			seenLayer[l], layer = true, l
		}
	}
}

func TestCodeText(t *testing.T) {
	for _, tc := range []struct {
		c     Code
		name  string
		sev   Severity
		stage Stage
		check string
	}{
		{DDPMSNGap, "ddp.msn_gap", Error, StageTrack, "DDP-05"},
		{MPACRCBad, "mpa.crc_bad", Error, StageTrack, "MPA-16"},
		{TCPGap, "tcp.gap", Warning, StageReassembly, "analyzer"},
		{MPAResync, "mpa.resync", Note, StageReassembly, "analyzer"},
		{RDMAPTerminate, "rdmap.terminate", Error, StageTrack, "RD-20, RD-21, RD-25, MPA-23"},
		{MPASiwTerminateEncoding, "mpa.siw_terminate_encoding", Note, StageTrack, "RD-20 (reference §5.1)"},
		{TrackNoHandshake, "track.no_handshake", Note, StageTrack, "analyzer (draft-differences §7)"},
		{FrameUndecodable, "frame.undecodable", Note, StageCapture, "analyzer"},
	} {
		inf := tc.c.Info()
		if tc.c.String() != tc.name || inf.Severity != tc.sev || inf.Stage != tc.stage || inf.ChecksText() != tc.check {
			t.Errorf("%s: %q %v %v %q, want %q %v %v %q", tc.name, tc.c, inf.Severity, inf.Stage, inf.ChecksText(), tc.name, tc.sev, tc.stage, tc.check)
		}
	}
	if none.Valid() || numCodes.Valid() || Code(0).Info().Name != "" || Code(9999).String() != "finding(9999)" {
		t.Error("codes outside the catalogue")
	}
	if _, ok := Lookup("ddp.no_such_code"); ok {
		t.Error("Lookup found an undeclared name")
	}
	if !MPACRCBad.Fatal() || MPAReject.Fatal() || Code(0).Fatal() {
		t.Error("Fatal")
	}
}

// Codes and severities are JSON strings both ways (the generator's truth
// files hold them).
func TestJSON(t *testing.T) {
	type rec struct {
		Code     Code     `json:"code"`
		Severity Severity `json:"severity"`
	}
	b, err := json.Marshal(rec{DDPMOGap, Warning})
	if err != nil || string(b) != `{"code":"ddp.mo_gap","severity":"warning"}` {
		t.Fatalf("%s %v", b, err)
	}
	var r rec
	if err := json.Unmarshal(b, &r); err != nil || r != (rec{DDPMOGap, Warning}) {
		t.Fatalf("%+v %v", r, err)
	}
	for _, bad := range []string{`{"code":"ddp.nope"}`, `{"severity":"info"}`, `{"code":""}`} {
		if err := json.Unmarshal([]byte(bad), &r); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	for s := Note; s <= Error; s++ {
		if v, ok := ParseSeverity(s.String()); !ok || v != s {
			t.Errorf("ParseSeverity(%q) = %v %v", s, v, ok)
		}
	}
	if Severity(7).String() != "severity(7)" {
		t.Error(Severity(7).String())
	}
}
