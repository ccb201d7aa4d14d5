package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ParseAssume reads --assume: a comma-separated list of crc, markers,
// rev=N, ird=N, ord=N.
func ParseAssume(s string) (*Assume, error) {
	a := &Assume{Rev: 2}
	for _, f := range strings.Split(s, ",") {
		k, v, hasV := strings.Cut(strings.TrimSpace(f), "=")
		n := 0
		if hasV {
			var err error
			if n, err = strconv.Atoi(v); err != nil || n < 0 {
				return nil, fmt.Errorf("replay: --assume %s: not a count", f)
			}
		}
		switch {
		case k == "crc" && !hasV:
			a.CRC = true
		case k == "markers" && !hasV:
			a.Markers = true
		case k == "rev" && hasV && (n == 1 || n == 2):
			a.Rev = n
		case k == "ird" && hasV && n < 0x3FFF:
			a.IRD = n
		case k == "ord" && hasV && n < 0x3FFF:
			a.ORD = n
		case k == "":
		default:
			return nil, fmt.Errorf("replay: --assume %q: give crc, markers, rev=1|2, ird=N, ord=N", f)
		}
	}
	return a, nil
}

// Report prints the result: one line per difference, then the summary
// line; with asJSON one JSON object per difference and the summary object
// last (keys operations, matched, differences).
func (r *Result) Report(w io.Writer, asJSON bool) {
	if asJSON {
		enc := json.NewEncoder(w)
		for _, d := range r.Differences {
			enc.Encode(struct {
				Frame int    `json:"frame,omitempty"`
				Kind  string `json:"kind"`
				What  string `json:"what"`
			}{d.Frame, d.Kind, d.What})
		}
		enc.Encode(struct {
			Side        string  `json:"side"`
			Connections []int   `json:"connections"`
			Operations  int     `json:"operations"`
			Matched     int     `json:"matched"`
			Differences int     `json:"differences"`
			Seconds     float64 `json:"seconds"`
			Redials     int     `json:"redials"`
			Masked      int     `json:"masked,omitempty"`
		}{r.Side.String(), r.Conns, r.Operations, r.Matched, len(r.Differences), r.Duration.Seconds(), r.Redials, r.Masked})
		return
	}
	for _, d := range r.Differences {
		fmt.Fprintln(w, d.String())
	}
	conns := make([]string, len(r.Conns))
	for i, c := range r.Conns {
		conns[i] = strconv.Itoa(c)
	}
	redials := ""
	if r.Redials > 0 {
		redials = fmt.Sprintf(" (%d redials)", r.Redials)
	}
	if r.Masked > 0 {
		redials += fmt.Sprintf(" (%d octets masked)", r.Masked)
	}
	fmt.Fprintf(w, "Replayed the %s of connection %s: %d operations, %d matched, %d differences in %.6f seconds%s\n",
		r.Side, strings.Join(conns, ","), r.Operations, r.Matched, len(r.Differences), r.Duration.Seconds(), redials)
}
