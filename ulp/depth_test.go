package ulp_test

import (
	"bytes"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/iwkit/iwkit/analyze"
	"github.com/iwkit/iwkit/gen"
	"github.com/iwkit/iwkit/pcap"
	"github.com/iwkit/iwkit/ulp"
)

// msgTimes keeps the frame and time of every ULP message of a Send, and
// the last frame's time.
type msgTimes struct {
	frames []int
	times  []time.Time
	last   time.Time
}

func (m *msgTimes) Record(r *analyze.Record) {
	if r.Time.After(m.last) {
		m.last = r.Time
	}
	if r.Kind == analyze.KindPDU && r.ULP != nil && !r.PDU.PDU.IsMPAFrame {
		m.frames = append(m.frames, r.Frame)
		m.times = append(m.times, r.Time)
	}
}

// TestDepthSeries: on a generated NVMe queue with known outstanding
// counts (a Connect, five Flushes sent and answered out of order, one
// left outstanding), the depth series equals the truth at every change:
// its value, the frame and the time of the command or response that
// changed it; the max and the time-weighted mean follow; the one left is
// listed with its age.
func TestDepthSeries(t *testing.T) {
	flush := func(cid uint16) gen.Op { return send("i2r", sqe(0x00, cid, 1, 0x40, 0, 0, 0)) }
	done := func(cid, sqhd uint16) gen.Op { return send("r2i", cqe(cid, sqhd, 1, 0, 0)) }
	ops := []gen.Op{
		send("i2r", append(connectSQE(1, 0x01, 0, 1024, 0, 1, 31), connectData(1)...)), send("r2i", cqe(1, 1, 1, 1, 0)),
		flush(11), flush(12), flush(13), done(12, 2), flush(14), flush(15), flush(16),
		done(11, 3), done(13, 4), done(14, 5), done(15, 6),
	}
	truth := []int{1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 3, 2, 1} // after each Send, in order
	for i := range ops {
		ops[i].Gap = gen.Duration(time.Duration(10*(i+1)) * time.Microsecond) // uneven spacing: the mean weighs time
	}
	sc := &gen.Scenario{Name: "depth", Seed: 31, Connections: []gen.Connection{nvmeConn("10.0.0.1:40020", 1, ops...)}}
	src, err := pcap.NewReader(bytes.NewReader(genPcap(t, sc)))
	if err != nil {
		t.Fatal(err)
	}
	mt := &msgTimes{}
	rep, err := analyze.Run(src, analyze.Config{}, mt)
	if err != nil {
		t.Fatal(err)
	}
	if len(mt.frames) != len(truth) {
		t.Fatalf("%d ULP Sends decoded, want %d", len(mt.frames), len(truth))
	}
	if len(rep.ULP.Queues) != 1 {
		t.Fatalf("%d queues, want 1", len(rep.ULP.Queues))
	}
	q := rep.ULP.Queues[0]
	if q.Key.Conn != "10.0.0.1:40020 > 10.0.0.2:4420" || q.Key.Name != "qid 1 cntlid 1 nqn.2024-01.org.iwkit:sub1" {
		t.Errorf("queue %+v", q.Key)
	}
	s := q.Depth.Series
	if len(s) != len(truth) {
		t.Fatalf("series of %d points %v, truth %v", len(s), s, truth)
	}
	area, mx := 0.0, 0
	for i, p := range s {
		if p.Depth != truth[i] || p.Frame != mt.frames[i] || !p.Time.Equal(mt.times[i]) {
			t.Errorf("point %d: depth %d frame %d at %v; truth %d at frame %d, %v", i, p.Depth, p.Frame, p.Time, truth[i], mt.frames[i], mt.times[i])
		}
		end := mt.last
		if i+1 < len(truth) {
			end = mt.times[i+1]
		}
		area += float64(truth[i]) * float64(end.Sub(mt.times[i]))
		mx = max(mx, truth[i])
	}
	mean := area / float64(mt.last.Sub(mt.times[0]))
	if q.Depth.Max != mx || math.Abs(q.Depth.Mean()-mean) > 1e-9 {
		t.Errorf("max %d mean %v, truth %d %v", q.Depth.Max, q.Depth.Mean(), mx, mean)
	}
	// SQ head from the completions' SQHD, SQ tail from the submissions
	// (the Connect and the six Flushes), at every change
	for w, want := range map[int][]int64{ulp.WinNVMeSQHead: {1, 2, 3, 4, 5, 6}, ulp.WinNVMeSQTail: {1, 2, 3, 4, 5, 6, 7}} {
		var got []int64
		for _, p := range q.Windows[w].Series {
			got = append(got, p.Value)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", ulp.WindowNames[w], got, want)
		}
	}
	if len(rep.ULP.Stuck) != 1 || rep.ULP.Stuck[0].ID != 16 || rep.ULP.Stuck[0].Age != mt.last.Sub(mt.times[8]) || rep.ULP.Stuck[0].AER {
		t.Errorf("outstanding at the end %+v, want cid 16 aged %v", rep.ULP.Stuck, mt.last.Sub(mt.times[8]))
	}
}

// TestDepthBounded: past MaxDepthPoints changes a queue's series stops
// (Truncated) while its max and mean stay exact.
func TestDepthBounded(t *testing.T) {
	sc := &gen.Scenario{Name: "depth-bounded", Seed: 32, Repeat: ulp.MaxDepthPoints/2 + 10, Connections: []gen.Connection{nvmeConn("10.0.0.1:40021", 1,
		send("i2r", sqe(0x00, 7, 1, 0x40, 0, 0, 0)), send("r2i", cqe(7, 1, 1, 0, 0)))}}
	src, err := pcap.NewReader(bytes.NewReader(genPcap(t, sc)))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analyze.Run(src, analyze.Config{}, &msgTimes{})
	if err != nil {
		t.Fatal(err)
	}
	q := rep.ULP.Queues[0]
	if len(q.Depth.Series) != ulp.MaxDepthPoints || !q.Depth.Truncated || q.Depth.Max != 1 || q.Depth.Mean() <= 0 || q.Depth.Mean() >= 1 {
		t.Errorf("%d points, truncated %v, max %d, mean %v", len(q.Depth.Series), q.Depth.Truncated, q.Depth.Max, q.Depth.Mean())
	}
}
