package wirefuzz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/iwkit/iwkit/endpoint"
)

// Options configure a fuzzing run.
type Options struct {
	// Addr is the peer's HOST:PORT: any MPA Responder (rping -s -P,
	// ib_*_bw servers, iwconform --serve).
	Addr string
	// CRC makes the baseline Request ask for MPA CRCs.
	CRC bool
	// Seed of the input generator (a run is reproducible from it and the
	// peer's answers); 0 takes one from the clock.
	Seed int64
	// Inputs and Duration bound the run (0: no bound; with neither set
	// the run ends only when the peer dies or ctx ends).
	Inputs   int
	Duration time.Duration
	// Timeout is the wait for an MPA Reply and for a liveness probe's
	// answer (default 5 s; the probe tries for twice as long).
	Timeout time.Duration
	// Drain is how long each input reads the peer's reaction after its
	// last step (default 200 ms).
	Drain time.Duration
	// Settle is the pause between an input and the liveness probe
	// (default 50 ms): a crash in the peer's deferred work (a kernel's
	// workqueue) needs a moment to show.
	Settle time.Duration
	// Out is the directory for the record: log.ndjson (one line per
	// input), inputs/NNNNNN.pcap (the input's connection and the probe's),
	// case.json and case.pcap when the peer died.
	Out string
	// Window is how many of the last inputs make the failing sequence
	// (default 2: a crash can show only at the probe after the next
	// input).
	Window int
	// MinimiseAttempts bounds the candidates tried (default 48).
	MinimiseAttempts int
	// Restart brings a dead peer back and returns its (new) address;
	// nil: minimising goes on only while the peer is alive (a
	// supervised server that restarts itself). Restarts bounds how many
	// times it is called (default 8).
	Restart  func(ctx context.Context) (string, error)
	Restarts int
	// Cause, when set, says how the peer died (say, the oops line of a
	// VM's console); it is called once the peer is found dead.
	Cause func() string
	// Triage, when set, is asked instead of Cause when the peer stops
	// answering: the cause, and whether it is the death the run hunts
	// (fatal: the peer's host died, say a kernel oops on a VM's
	// console). A death that is not fatal (the target's listener or
	// process gone while its host lives) is recorded (Report.Lost,
	// Out/lost-N.json and .pcap), Restart brings the target back, and
	// the search goes on; only a fatal one is minimised and ends the run.
	// A candidate of the minimiser that fails in a way that is not fatal
	// does not reproduce the case. Without Triage every death is fatal.
	Triage func(ctx context.Context) (cause string, fatal bool)
	// Down, when set, says without waiting whether the peer cannot answer
	// now (its VM has ended, its listener is gone): a failed liveness
	// probe is then not retried for the rest of twice Timeout.
	Down func() bool
	// Logf, when set, gets progress lines.
	Logf func(format string, args ...any)
}

func (o *Options) defaults() {
	if o.Seed == 0 {
		o.Seed = time.Now().UnixNano()
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Drain <= 0 {
		o.Drain = 200 * time.Millisecond
	}
	if o.Settle <= 0 {
		o.Settle = 50 * time.Millisecond
	}
	if o.Window <= 0 {
		o.Window = 2
	}
	if o.MinimiseAttempts <= 0 {
		o.MinimiseAttempts = 48
	}
	if o.Restarts <= 0 {
		o.Restarts = 8
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
}

func (o *Options) player() *player {
	return &player{addr: o.Addr, crc: o.CRC, timeout: o.Timeout, drain: o.Drain, down: o.Down}
}

// cause asks Triage (or Cause) how the peer died and whether that is
// fatal.
func (o *Options) cause(ctx context.Context) (string, bool) {
	if o.Triage != nil {
		return o.Triage(ctx)
	}
	if o.Cause != nil {
		return o.Cause(), true
	}
	return "the peer stopped answering", true
}

// Report is how a run went.
type Report struct {
	Seed     int64         `json:"seed"`
	Inputs   int           `json:"inputs"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	PerSec   float64       `json:"inputs_per_s"`
	Died     bool          `json:"died"`
	FoundAt  time.Duration `json:"found_after_ns,omitempty"` // from the start to the failed probe
	Case     *Case         `json:"case,omitempty"`
	CasePath string        `json:"case_path,omitempty"`
	CasePcap string        `json:"case_pcap,omitempty"`
	// Lost are the deaths that were not fatal (Options.Triage), after
	// which the target was restarted and the search went on.
	Lost []Lost `json:"lost,omitempty"`
}

// Lost is a death that was not fatal: the input after which the probe
// failed, why, and its record (a case file of the last inputs, not
// minimised, and the input's pcap).
type Lost struct {
	N     int    `json:"n"` // the input's number in log.ndjson
	Cause string `json:"cause"`
	Case  string `json:"case"`
	Pcap  string `json:"pcap"`
}

// logLine is one input in log.ndjson.
type logLine struct {
	N       int     `json:"n"`
	Input   Input   `json:"input"`
	Outcome Outcome `json:"outcome"`
	Alive   bool    `json:"alive"`
	Dead    string  `json:"dead,omitempty"`
	Pcap    string  `json:"pcap"`
	MS      float64 `json:"ms"`
}

// Fuzz plays random inputs against the peer, checking after each that it
// lives, until a bound is reached or the peer dies; a death is minimised
// and written as Out/case.json and Out/case.pcap.
func Fuzz(ctx context.Context, o Options) (Report, error) {
	o.defaults()
	rep := Report{Seed: o.Seed}
	if o.Out == "" {
		return rep, errors.New("wirefuzz: Options.Out (the record's directory) is required")
	}
	if err := os.MkdirAll(filepath.Join(o.Out, "inputs"), 0o755); err != nil {
		return rep, err
	}
	logf, err := os.Create(filepath.Join(o.Out, "log.ndjson"))
	if err != nil {
		return rep, err
	}
	defer logf.Close()
	enc := json.NewEncoder(logf)
	p := o.player()
	if err := p.alive(ctx, nil); err != nil {
		return rep, fmt.Errorf("the peer does not answer before the first input: %w", err)
	}
	g := newGen(o.Seed)
	start := time.Now()
	var recent []Input
	var deathCause string
	for ctx.Err() == nil && (o.Inputs == 0 || rep.Inputs < o.Inputs) && (o.Duration == 0 || time.Since(start) < o.Duration) {
		in := g.input()
		rep.Inputs++
		t0 := time.Now()
		name := fmt.Sprintf("inputs/%06d.pcap", rep.Inputs)
		capt, done, err := newPcap(filepath.Join(o.Out, name))
		if err != nil {
			return rep, err
		}
		out, perr := p.play(ctx, in, capt)
		if perr != nil {
			out.Reaction = "no connection: " + errText(perr)
		}
		sleepCtx(ctx, o.Settle)
		dead := p.alive(ctx, capt)
		if err := done(); err != nil {
			return rep, err
		}
		line := logLine{N: rep.Inputs, Input: in, Outcome: out, Alive: dead == nil, Pcap: name, MS: float64(time.Since(t0).Microseconds()) / 1000}
		if dead != nil {
			line.Dead = dead.Error()
		}
		enc.Encode(line)
		recent = append(recent, in)
		if len(recent) > o.Window {
			recent = recent[1:]
		}
		if dead == nil || ctx.Err() != nil {
			continue
		}
		o.Logf("wirefuzz: the peer stopped answering after input %d (%v): %s; %v", rep.Inputs, time.Since(start).Round(time.Millisecond), in, dead)
		cause, fatal := o.cause(ctx)
		if !fatal {
			if ctx.Err() != nil {
				break
			}
			l, err := o.lost(rep.Inputs, cause, recent, filepath.Join(o.Out, name))
			if err != nil {
				return rep, err
			}
			rep.Lost = append(rep.Lost, l)
			o.Logf("wirefuzz: not fatal (%s): recorded as %s; restarting the target", cause, l.Case)
			if o.Restart == nil {
				return rep, fmt.Errorf("wirefuzz: the target was lost (%s) and there is no Restart", cause)
			}
			// The restart's time is not search time (Duration).
			t1 := time.Now()
			addr, err := o.Restart(ctx)
			if err != nil {
				return rep, fmt.Errorf("wirefuzz: restarting the lost target: %w", err)
			}
			start = start.Add(time.Since(t1))
			o.Addr = addr
			p = o.player()
			recent = nil
			continue
		}
		rep.Died = true
		rep.FoundAt = time.Since(start)
		deathCause = cause
		o.Logf("wirefuzz: the peer died after input %d (%v): %s", rep.Inputs, rep.FoundAt.Round(time.Millisecond), cause)
		break
	}
	rep.Elapsed = time.Since(start)
	if rep.Elapsed > 0 {
		rep.PerSec = float64(rep.Inputs) / rep.Elapsed.Seconds()
	}
	if !rep.Died {
		return rep, ctx.Err()
	}
	c := Case{Target: o.Addr, CRC: o.CRC, Seed: o.Seed, Cause: deathCause, Inputs: recent}
	rep.CasePath, rep.CasePcap = filepath.Join(o.Out, "case.json"), filepath.Join(o.Out, "case.pcap")
	// The unminimised case and its record first: a minimising that is
	// cut short leaves a re-runnable case all the same.
	if err := WriteCase(rep.CasePath, c); err != nil {
		return rep, err
	}
	copyFile(filepath.Join(o.Out, fmt.Sprintf("inputs/%06d.pcap", rep.Inputs)), rep.CasePcap)
	m := &minimiser{o: &o, cas: c}
	m.run(ctx)
	rep.Case = &m.cas
	return rep, WriteCase(rep.CasePath, m.cas)
}

// lost records a death that was not fatal as Out/lost-NNN.json (the last
// inputs as a case, not minimised) and Out/lost-NNN.pcap (the input's
// record, with the failed probes).
func (o *Options) lost(n int, cause string, recent []Input, pcap string) (Lost, error) {
	l := Lost{N: n, Cause: cause, Case: filepath.Join(o.Out, fmt.Sprintf("lost-%06d.json", n)),
		Pcap: filepath.Join(o.Out, fmt.Sprintf("lost-%06d.pcap", n))}
	c := Case{Target: o.Addr, CRC: o.CRC, Seed: o.Seed, Cause: cause, Inputs: append([]Input(nil), recent...)}
	if err := WriteCase(l.Case, c); err != nil {
		return l, err
	}
	return l, copyFile(pcap, l.Pcap)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// Replay plays the case's inputs against the peer at o.Addr (the case's
// own target when empty), checking liveness after each, and records what
// was played in pcapPath (when set). It returns the index of the input
// after which the peer stopped answering and why, or -1 and nil.
func Replay(ctx context.Context, o Options, c Case, pcapPath string) (int, error) {
	o.defaults()
	if o.Addr == "" {
		o.Addr = c.Target
	}
	o.CRC = c.CRC
	p := o.player()
	var capt *endpoint.Capture
	if pcapPath != "" {
		var done func() error
		var err error
		if capt, done, err = newPcap(pcapPath); err != nil {
			return -1, err
		}
		defer done()
	}
	if err := p.alive(ctx, capt); err != nil {
		return -1, fmt.Errorf("the peer does not answer before the case: %w", err)
	}
	for i, in := range c.Inputs {
		out, err := p.play(ctx, in, capt)
		if err != nil {
			out.Reaction = "no connection: " + errText(err)
		}
		o.Logf("input %d: %s: reply %s, %s", i+1, in, out.Reply, out.Reaction)
		sleepCtx(ctx, o.Settle)
		if err := p.alive(ctx, capt); err != nil {
			return i, err
		}
	}
	return -1, nil
}
