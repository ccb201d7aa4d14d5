package gen

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// limitSink fails once a run has written enough, so any scenario ends.
type limitSink struct {
	frames, octets int
}

var errLimit = errors.New("frame limit")

const (
	fuzzMaxFrames = 4000
	fuzzMaxOctets = 4 << 20
)

func (l *limitSink) WriteFrame(_ time.Time, data []byte, origLen int) error {
	if len(data) > origLen || origLen > 65535+64 {
		return errors.New("frame longer than its wire length, or than a TCP segment allows")
	}
	l.frames++
	l.octets += len(data)
	if l.frames > fuzzMaxFrames || l.octets > fuzzMaxOctets {
		return errLimit
	}
	return nil
}

// FuzzScenario feeds scenario files (JSON or YAML) to Parse and Run: no
// input may panic, every run ends (at the latest when the sink refuses more
// frames), and the truth of a run that completes is consistent.
func FuzzScenario(f *testing.F) {
	for _, s := range []string{
		`{"connections":[{"ops":[{"op":"send","size":100}]}]}`,
		`{"connections":[{"mpa":{"rev":2,"crc":true,"rtr":"read","ird":1,"ord":1},"packing":"stream","max_ulpdu":3000,"ops":[{"op":"write","size":5000},{"op":"read","dir":"r2i","size":"3KiB"}]}]}`,
		`{"seed":9,"connections":[{"client":"[::1]:1","server":"[::2]:2","vlan":5,"timestamps":true,"mss":200,"mpa":{"markers_i2r":true,"markers_r2i":true},"ops":[{"op":"fetch_add"},{"op":"cmp_swap","dir":"r2i"},{"op":"imm","imm":5},{"op":"terminate","layer":1,"etype":2,"code":1}]}],"rates":{"drop":0.1,"reorder":0.1,"corrupt_crc":0.2,"corrupt_header":0.2}}`,
		`{"connections":[{"client_isn":4294967290,"packing":"pack","ops":[{"op":"send_inv","inv_stag":3,"size":10,"repeat":20}]}],"impairments":[{"kind":"reorder","segment":3},{"kind":"retransmit_diff","segment":4},{"kind":"wrong_msn","fpdu":2},{"kind":"midstream","value":3}]}`,
		"connections:\n  - mpa: {reject: true}\n    ops: [{op: send}]\n",
		`{"max_bytes":100000,"connections":[{"ops":[{"op":"pause","delay":"1ms"},{"op":"write_imm","size":10}]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// A run that takes long without reaching the sink's limit is a
		// bug too: crash so the fuzzer keeps the input.
		watchdog := time.AfterFunc(3*time.Second, func() { panic(fmt.Sprintf("takes over 3s on %q", b)) })
		defer watchdog.Stop()
		sc, err := Parse(b, false)
		if err != nil {
			return
		}
		for _, im := range sc.Impairments {
			if im.Kind == ImpMidstream && *im.Value > 10000 {
				return // frames the capture misses do not reach the sink's limit
			}
		}
		var col Collector
		sink := &limitSink{}
		st, err := Run(sc, sink, &Options{Truth: &col})
		if sink.frames > fuzzMaxFrames+1 || sink.octets > fuzzMaxOctets+70000 {
			t.Fatalf("wrote %d frames, %d octets past the limit", sink.frames, sink.octets)
		}
		if err != nil {
			return
		}
		if st.Frames != sink.frames || col.T.Frames != sink.frames {
			t.Fatalf("stats %d frames, truth %d, sink %d", st.Frames, col.T.Frames, sink.frames)
		}
		if int64(len(col.T.FPDUs)) != st.FPDUs {
			t.Fatalf("truth has %d FPDUs, stats %d", len(col.T.FPDUs), st.FPDUs)
		}
		for _, fp := range col.T.FPDUs {
			if fp.LastFrame < fp.FirstFrame || fp.LastFrame > sink.frames || (fp.FirstFrame == 0) != fp.Missing {
				t.Fatalf("FPDU %+v: frames out of range", fp)
			}
		}
	})
}
