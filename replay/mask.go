package replay

import (
	"fmt"
	"sort"
	"strings"

	"github.com/iwkit/iwkit/endpoint/perf"
)

// MaskRule leaves octets of what the peer sends uncompared in a stateful
// replay: fields that differ every run whoever the peer is (queue pair
// numbers, STags and addresses of a ULP's own exchange, random buffer
// contents, measurements), which would otherwise be reported as
// differences. STags and addresses the replay later uses are learnt
// whatever the rules (player.learn); a rule covers the rest.
type MaskRule struct {
	Name string
	Doc  string
	// octets returns the ranges [from, to) of captured, the payload of
	// message i of s, to leave uncompared.
	octets func(s *Script, i int, captured []byte) [][2]int
}

var maskRules = []MaskRule{
	{Name: "perftest", Doc: "perftest -R (ib_*_bw, ib_*_lat): the control channel's pingpong_dest qpn, psn, rkey, padding, vaddr and gid, " +
		"the bandwidth report's BW peak, BW average and MsgRate (the server's whole report: perftest sends it unfilled); " +
		"every payload of the test connections (buffer contents)",
		octets: perftestOctets},
}

// MaskRules lists the rules by name.
func MaskRules() []MaskRule {
	r := append([]MaskRule(nil), maskRules...)
	sort.Slice(r, func(i, j int) bool { return r[i].Name < r[j].Name })
	return r
}

// ParseMasks reads a comma-separated list of rule names.
func ParseMasks(list string) ([]MaskRule, error) {
	var out []MaskRule
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		found := false
		for _, r := range maskRules {
			if r.Name == n {
				out, found = append(out, r), true
			}
		}
		if !found {
			var names []string
			for _, r := range MaskRules() {
				names = append(names, r.Name)
			}
			return nil, fmt.Errorf("no mask rule %q (rules: %s)", n, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// perftestOctets: perftest's control channel is the connection whose
// first Send is its version record (endpoint/perf owns the layout); the
// others are its test connections.
func perftestOctets(s *Script, i int, captured []byte) [][2]int {
	m := &s.Msgs[i]
	if m.Kind == MsgConnect {
		return nil
	}
	control := -1
	for k := range s.Msgs {
		if s.Msgs[k].Kind == MsgSend {
			if perf.IsPerftestVersion(s.Msgs[k].Payload) {
				control = s.Msgs[k].C
			}
			break
		}
	}
	if control < 0 {
		return nil // not a perftest capture
	}
	if m.C != control {
		return [][2]int{{0, len(captured)}}
	}
	if m.Kind != MsgSend {
		return nil
	}
	if r := perf.PerftestDestVarying(captured); r != nil {
		return r
	}
	if len(captured) != perf.PerftestReportFieldLen {
		return nil
	}
	// The report's fields are consecutive 8-octet Sends of one side.
	k := 0
	for j := i - 1; j >= 0; j-- {
		p := &s.Msgs[j]
		if p.C != m.C || p.Side != m.Side {
			continue
		}
		if p.Kind != MsgSend || len(p.Payload) != perf.PerftestReportFieldLen {
			break
		}
		k++
	}
	if perf.PerftestReportVarying(k, m.Side == Responder) {
		return [][2]int{{0, len(captured)}}
	}
	return nil
}
