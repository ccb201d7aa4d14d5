package export

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// checkRDMA holds a commands row's rdma_ops and rdma_frames to the
// operations its NDJSON response lists (ulp.rdma: the same ulp.Command,
// through render's JSON): one op per object, worded from its fields, and
// the frames of each in order.
func checkRDMA(t *testing.T, what string, row Row, js, dropped any) {
	t.Helper()
	list, _ := js.([]any)
	var ops []string
	var frames []int64
	add := func(v any) {
		n, ok := v.(json.Number)
		if !ok {
			return
		}
		f, _ := n.Int64()
		if f > 0 && (len(frames) == 0 || frames[len(frames)-1] != f) {
			frames = append(frames, f)
		}
	}
	for _, x := range list {
		m := x.(map[string]any)
		span := func(a, b any) string {
			if fmt.Sprint(b) == fmt.Sprint(a) || b == nil {
				return fmt.Sprint(a)
			}
			return fmt.Sprint(a, "-", b)
		}
		switch m["op"] {
		case "RDMA Write":
			ops = append(ops, "W "+span(m["frame"], m["last_frame"]))
		case "Send":
			ops = append(ops, "S "+span(m["frame"], m["last_frame"]))
		case "RDMA Read":
			r := "?"
			if m["response_frame"] != nil {
				r = span(m["response_frame"], m["response_last_frame"])
			}
			ops = append(ops, fmt.Sprint("R ", m["frame"], "→", r))
		default:
			t.Errorf("%s: ulp.rdma op %v", what, m["op"])
		}
		add(m["frame"])
		add(m["last_frame"])
		add(m["response_frame"])
		add(m["response_last_frame"])
	}
	if dropped != nil {
		ops = append(ops, fmt.Sprint("+", dropped))
	}
	gotOps, _ := row["rdma_ops"].([]string)
	gotFrames, _ := row["rdma_frames"].([]int64)
	if strings.Join(gotOps, " ") != strings.Join(ops, " ") || !slices.Equal(gotFrames, frames) {
		t.Errorf("%s: rdma_ops %q rdma_frames %v; NDJSON ulp.rdma %q frames %v", what, gotOps, gotFrames, ops, frames)
	}
}
