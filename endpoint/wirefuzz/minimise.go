package wirefuzz

import (
	"context"
	"os"
	"path/filepath"
)

// minimiser reduces a failing case: fewer inputs, then fewer steps and
// mutations (delta debugging's complement steps: drop a chunk, keep the
// result when the peer still dies), within Options.MinimiseAttempts and
// Options.Restarts. A candidate that kills the peer costs a restart
// before the next one; one that does not costs a probe. Each reduction
// that killed the peer is written at once (case.json, case.pcap), so the
// case on disk is always one that was seen to fail.
type minimiser struct {
	o                  *Options
	cas                Case
	attempts, restarts int
	dead               bool // the peer is dead: a restart comes before the next candidate
	stop               bool // no more candidates can be tried
}

func (m *minimiser) run(ctx context.Context) {
	m.dead = true
	from := size(m.cas.Inputs)
	defer func() {
		m.cas.Minimised.From = from
		m.cas.Minimised.To = size(m.cas.Inputs)
		m.cas.Minimised.Attempts = m.attempts
		m.cas.Minimised.Restarts = m.restarts
	}()
	// A restart is dear (a VM boot), and only a candidate that kills
	// costs one: first the candidates that likely live and say much when
	// they do not. The last input's prefixes, shortest first (its
	// Request, its first steps, then the FIN every input ends with): the
	// first that kills ends where the failure starts. Then its skeleton
	// (the Request, the first and last steps, no step mutations), then
	// the last input alone.
	last := m.cas.Inputs[len(m.cas.Inputs)-1]
	for n := 1; n < len(last.Steps) && !m.stop; n++ {
		p := last.clone()
		p.Steps = p.Steps[:n]
		if m.try(ctx, []Input{p}) {
			break
		}
	}
	if sk, ok := skeleton(m.cas.Inputs); ok {
		m.try(ctx, sk)
	}
	if n := len(m.cas.Inputs); n > 1 {
		m.try(ctx, m.cas.Inputs[n-1:])
	}
	m.ddmin(ctx, func(c []Input) []unit {
		u := make([]unit, len(c))
		for i := range c {
			u[i] = unit{in: i, step: -1, mut: -1}
		}
		return u
	})
	m.ddmin(ctx, units)
}

// skeleton is the case's last input alone with only its Request, first
// and last steps, the steps' mutations dropped; ok is false when that is
// no smaller than the case.
func skeleton(c []Input) ([]Input, bool) {
	last := c[len(c)-1].clone()
	sk := Input{Request: last.Request}
	if n := len(last.Steps); n > 0 {
		sk.Steps = append(sk.Steps, Step{Op: last.Steps[0].Op, PDU: last.Steps[0].PDU, Data: last.Steps[0].Data, MS: last.Steps[0].MS})
		if n > 1 {
			l := last.Steps[n-1]
			sk.Steps = append(sk.Steps, Step{Op: l.Op, PDU: l.PDU, Data: l.Data, MS: l.MS})
		}
	}
	out := []Input{sk}
	return out, size(out) != size(c)
}

// unit is one removable part of a case: a whole input (step and mut -1),
// a step (mut -1), a mutation of the Request (step -1) or of a step.
type unit struct{ in, step, mut int }

// units lists the steps and mutations of c.
func units(c []Input) []unit {
	var u []unit
	for i, in := range c {
		for k := range in.Request {
			u = append(u, unit{i, -1, k})
		}
		for j, s := range in.Steps {
			u = append(u, unit{i, j, -1})
			for k := range s.Muts {
				u = append(u, unit{i, j, k})
			}
		}
	}
	return u
}

// without returns c less the units in drop.
func without(c []Input, drop []unit) []Input {
	gone := map[unit]bool{}
	for _, u := range drop {
		gone[u] = true
	}
	var out []Input
	for i, in := range c {
		if gone[unit{i, -1, -1}] {
			continue
		}
		n := Input{}
		for k, mu := range in.Request {
			if !gone[unit{i, -1, k}] {
				n.Request = append(n.Request, mu)
			}
		}
		for j, s := range in.Steps {
			if gone[unit{i, j, -1}] {
				continue
			}
			ns := s
			ns.Muts = nil
			for k, mu := range s.Muts {
				if !gone[unit{i, j, k}] {
					ns.Muts = append(ns.Muts, mu)
				}
			}
			n.Steps = append(n.Steps, ns)
		}
		out = append(out, n)
	}
	return out
}

// ddmin drops chunks of the units that list gives of the current case.
func (m *minimiser) ddmin(ctx context.Context, list func([]Input) []unit) {
	u := list(m.cas.Inputs)
	n := 2
	for len(u) > 0 && !m.stop && ctx.Err() == nil {
		n = min(n, len(u))
		chunk := (len(u) + n - 1) / n
		reduced := false
		for i := 0; i < len(u) && !m.stop; i += chunk {
			cand := without(m.cas.Inputs, u[i:min(i+chunk, len(u))])
			if len(cand) == 0 {
				continue
			}
			if m.try(ctx, cand) {
				u = list(m.cas.Inputs)
				n = max(n-1, 2)
				reduced = true
				break
			}
		}
		if !reduced {
			if n >= len(u) {
				return
			}
			n = min(2*n, len(u))
		}
	}
}

// try plays cand against a live peer (restarting it first when it is
// dead) and reports whether the peer died; the case becomes cand when it
// did.
func (m *minimiser) try(ctx context.Context, cand []Input) bool {
	o := m.o
	if m.stop || ctx.Err() != nil || m.attempts >= o.MinimiseAttempts {
		m.stop = true
		return false
	}
	p := o.player()
	if m.dead {
		if p.alive(ctx, nil) != nil {
			if o.Restart == nil || m.restarts >= o.Restarts {
				m.stop = true
				return false
			}
			m.restarts++
			o.Logf("wirefuzz: restarting the peer (%d of at most %d)", m.restarts, o.Restarts)
			addr, err := o.Restart(ctx)
			if err != nil {
				o.Logf("wirefuzz: restart: %v", err)
				m.stop = true
				return false
			}
			o.Addr = addr
		}
		m.dead = false
	}
	m.attempts++
	tmp := filepath.Join(o.Out, "candidate.pcap")
	c := m.cas
	c.Inputs = cand
	at, err := Replay(ctx, *o, c, tmp)
	if at < 0 {
		if err != nil {
			// The peer was not there to try the candidate on.
			m.dead, m.stop = true, true
			o.Logf("wirefuzz: candidate %d not tried: %v", m.attempts, err)
			return false
		}
		o.Logf("wirefuzz: candidate %d (%s): the peer lives", m.attempts, size(cand))
		return false
	}
	m.dead = true
	cause, fatal := o.cause(ctx)
	if !fatal {
		// Another failure (Options.Triage): not the case's.
		o.Logf("wirefuzz: candidate %d (%s) fails another way: %s", m.attempts, size(cand), cause)
		return false
	}
	// The inputs after the one that killed the peer were not played.
	c.Inputs = cand[:at+1]
	c.Cause = cause
	c.Minimised.Confirmed = true
	m.cas = c
	o.Logf("wirefuzz: candidate %d (%s) kills the peer: %s", m.attempts, size(c.Inputs), c.Cause)
	os.Rename(tmp, filepath.Join(o.Out, "case.pcap"))
	WriteCase(filepath.Join(o.Out, "case.json"), m.cas)
	return true
}
