package track

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/iwkit/iwkit/decode"
	"github.com/iwkit/iwkit/finding"
	"github.com/iwkit/iwkit/gen"
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

// TestResetReportedOnce: a reset is reported once, from the side that sent
// it (main at 731012f reported it from both sides).
func TestResetReportedOnce(t *testing.T) {
	sc := &gen.Scenario{Connections: []gen.Connection{{Close: "rst", Ops: []gen.Op{{Op: gen.OpNameSend, Size: 64}}}}}
	_, fs, _, _ := runGen(t, sc)
	n := 0
	for _, f := range fs {
		if f.Code == finding.MPALLPClosed {
			n++
			if f.Dir != I2R {
				t.Errorf("RST reported from the %s, the client sent it: %s", f.Dir.Sender(), f.String())
			}
		}
	}
	if n != 1 {
		t.Errorf("RST reported %d times, want once", n)
	}
}

// TestV1FallbackLinked: cxgb4's MPA v2 → v1 reconnect, as gen writes it,
// is linked: per pair one mpa.reset_in_setup from the Responder and one
// mpa.v1_fallback on the v1 connection, naming the v2 attempt's frames.
func TestV1FallbackLinked(t *testing.T) {
	sc, err := gen.Builtin("cxgb4-fallback", gen.Params{Count: 2, Conns: 3})
	if err != nil {
		t.Fatal(err)
	}
	_, fs, _, _ := runGen(t, sc)
	resets, falls := 0, 0
	for _, f := range fs {
		switch f.Code {
		case finding.MPAResetInSetup:
			resets++
			if f.Dir != R2I || len(f.Frames) != 2 {
				t.Errorf("reset in setup: %s", f.String())
			}
		case finding.MPAV1Fallback:
			falls++
			if len(f.Frames) != 2 || f.Frames[1] >= f.Frames[0] || !strings.Contains(f.Message, "fallback cost") {
				t.Errorf("fallback: %s", f.String())
			}
		}
	}
	if resets != 3 || falls != 3 {
		t.Errorf("%d resets in setup, %d fallbacks; want 3 and 3", resets, falls)
	}
}

// TestSplitFPDUsEverywhere: FPDUs split over TCP segments as Marvell qed
// firmware sends them, at every octet offset (offset 1 splits
// ULPDU_Length), with markers and CRC, are framed with no finding but the
// FINs, every message decoded. The MPA frames are split at the same offset.
func TestSplitFPDUsEverywhere(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   gen.Op
		mpa  gen.MPA
	}{
		// A 124-octet FPDU (18-octet DDP/RDMAP header, 100 octets, CRC),
		// markers toward the Responder.
		{"send", gen.Op{Op: gen.OpNameSend, Size: 100}, gen.MPA{Rev: ptrTo(2), CRC: true, MarkersI2R: true}},
		// A full-size FPDU (MULPDU of a 1460-octet MSS), no markers.
		{"write", gen.Op{Op: gen.OpNameWrite, Size: 1400}, gen.MPA{Rev: ptrTo(1), CRC: true}},
	} {
		fpdu := 0
		for k := 1; fpdu == 0 || k < fpdu; k++ {
			sc := &gen.Scenario{Connections: []gen.Connection{{Split: []int{k}, MPA: tc.mpa,
				Ops: []gen.Op{tc.op, tc.op, {Op: gen.OpNameSend, Dir: "r2i", Size: 100}}}}}
			tr, fs, truth, _ := runGen(t, sc)
			if fpdu == 0 {
				fpdu = int(truth.FPDUs[0].End - truth.FPDUs[0].Seq)
			}
			for _, f := range fs {
				if f.Code != finding.MPALLPClosed {
					t.Errorf("%s split at %d: %s", tc.name, k, f.String())
				}
			}
			st := tr.Stats()
			var msgs uint64
			for d := range st.Dir {
				for _, m := range st.Dir[d].Messages {
					msgs += m
				}
			}
			if msgs != 3 || st.Dir[0].Skips+st.Dir[1].Skips != 0 {
				t.Errorf("%s split at %d: %d messages (want 3), %d skips", tc.name, k, msgs, st.Dir[0].Skips+st.Dir[1].Skips)
			}
			if t.Failed() {
				return
			}
		}
		if fpdu < 100 {
			t.Errorf("%s: FPDU of %d octets", tc.name, fpdu)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestIRDORDMismatchNamed: an Initiator that announced ORD 4 and kept it
// after the Responder's IRD 1 overruns it; the finding names the Reply that
// announced the IRD and the mismatch.
func TestIRDORDMismatchNamed(t *testing.T) {
	s := newScen(t, Limits{})
	q, r := mpaReq(2), mpaRep(2)
	r.V2.IRD = 1
	s.mpa(I2R, q)
	s.mpa(R2I, r) // frame 2
	s.seg(I2R, rreq(1, 1, 0, 8, 2, 0))
	s.seg(I2R, rreq(2, 1, 8, 8, 2, 8))
	s.finish()
	n := 0
	for _, f := range s.fs {
		if f.Code == finding.RDMAPIRDExceeded {
			n++
			if len(f.Frames) != 2 || f.Frames[1] != 2 || !strings.Contains(f.Message, "ORD 4") || !strings.Contains(f.Message, "mismatch") {
				t.Errorf("%s", f.String())
			}
		}
	}
	if n != 1 {
		t.Errorf("%d rdmap.ird_exceeded findings, want 1", n)
	}
}
