package wirefuzz

import (
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"sort"
)

// gen draws random inputs. There is no coverage to steer by (the peer is
// a black box), so every input is drawn afresh from the mutation space:
// about half the Requests are valid, so that the FPDU steps behind them
// reach the peer's data path, and most inputs wait for the Reply, as an
// Initiator must (RFC 5044 §7.1.2: no FPDU before the Reply).
type gen struct {
	r          *rand.Rand
	reqNames   []string
	fpduNames  []string
	tmplNames  []string
	maxSteps   int
	requestMut float64 // chance that the Request has mutations
}

func newGen(seed int64) *gen {
	g := &gen{r: rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15)), maxSteps: 4, requestMut: 0.6}
	g.reqNames = sortedKeys(requestFields)
	g.fpduNames = sortedKeys(fpduFields)
	for k := range templates {
		g.tmplNames = append(g.tmplNames, k)
	}
	sort.Strings(g.tmplNames)
	return g
}

func sortedKeys(m map[string][]int64) []string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// muts draws 1 to max distinct mutations of the fields in names.
func (g *gen) muts(names []string, table map[string][]int64, max int) []Mut {
	n := 1 + g.r.IntN(max)
	var ms []Mut
	for len(ms) < n {
		f := names[g.r.IntN(len(names))]
		if slices.ContainsFunc(ms, func(m Mut) bool { return m.F == f }) {
			continue
		}
		vs := table[f]
		v := vs[g.r.IntN(len(vs))]
		if g.r.IntN(8) == 0 {
			v = int64(g.r.Uint32()) // now and then a value off the list
		}
		ms = append(ms, Mut{F: f, V: v})
	}
	return ms
}

// input draws one input.
func (g *gen) input() Input {
	var in Input
	if g.r.Float64() < g.requestMut {
		in.Request = g.muts(g.reqNames, requestFields, 3)
	}
	if g.r.IntN(100) < 85 {
		in.Steps = append(in.Steps, Step{Op: OpAwait})
	}
	for n := g.r.IntN(g.maxSteps + 1); n > 0; n-- {
		switch k := g.r.IntN(10); {
		case k < 7:
			s := Step{Op: OpFPDU, PDU: g.tmplNames[g.r.IntN(len(g.tmplNames))]}
			if g.r.IntN(3) > 0 {
				s.Muts = g.muts(g.fpduNames, fpduFields, 2)
			}
			in.Steps = append(in.Steps, s)
		case k < 8:
			b := make([]byte, 1+g.r.IntN(32))
			for i := range b {
				b[i] = byte(g.r.Uint32())
			}
			in.Steps = append(in.Steps, Step{Op: OpRaw, Data: hex.EncodeToString(b)})
		case k < 9:
			in.Steps = append(in.Steps, Step{Op: OpSleep, MS: 10 + g.r.IntN(200)})
		default:
			in.Steps = append(in.Steps, Step{Op: OpAwait})
		}
	}
	// How the connection ends: a FIN (also the default), or an RST.
	switch g.r.IntN(4) {
	case 0:
		in.Steps = append(in.Steps, Step{Op: OpReset})
	case 1:
		in.Steps = append(in.Steps, Step{Op: OpFin})
	}
	return in
}
