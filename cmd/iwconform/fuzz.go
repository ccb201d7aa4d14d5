package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"github.com/iwkit/iwkit/endpoint/wirefuzz"
)

// fuzzFlags are the --fuzz and --replay mode's settings.
type fuzzFlags struct {
	dir, replay, restart string
	inputs               int
	dur                  time.Duration
	seed                 int64
	crc                  bool
	timeout              time.Duration
}

// runFuzz is iwconform --fuzz DIR (and --replay CASE): exit 0 when the
// target lived through every input, 1 when it died (the case is written),
// 2 on a usage or setup error.
func runFuzz(ctx context.Context, f fuzzFlags, addr string, stdout, stderr io.Writer) int {
	o := wirefuzz.Options{Addr: addr, CRC: f.crc, Seed: f.seed, Inputs: f.inputs, Duration: f.dur, Timeout: f.timeout, Out: f.dir,
		Logf: func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }}
	if f.restart != "" {
		o.Restart = func(ctx context.Context) (string, error) { return restartTarget(ctx, f.restart, addr) }
	}
	if f.replay != "" {
		c, err := wirefuzz.ReadCase(f.replay)
		if err != nil {
			fmt.Fprintln(stderr, "iwconform:", err)
			return 2
		}
		pcap := ""
		if f.dir != "" {
			pcap = strings.TrimSuffix(f.dir, "/") + "/replay.pcap"
		}
		at, err := wirefuzz.Replay(ctx, o, c, pcap)
		switch {
		case at >= 0:
			fmt.Fprintf(stdout, "the target died after input %d of %d: %v\n", at+1, len(c.Inputs), err)
			return 1
		case err != nil:
			fmt.Fprintln(stderr, "iwconform:", err)
			return 2
		}
		fmt.Fprintf(stdout, "the target lived through the case's %d inputs\n", len(c.Inputs))
		return 0
	}
	rep, err := wirefuzz.Fuzz(ctx, o)
	json.NewEncoder(stdout).Encode(rep)
	if err != nil && ctx.Err() == nil {
		fmt.Fprintln(stderr, "iwconform:", err)
		return 2
	}
	if rep.Died {
		return 1
	}
	return 0
}

// restartTarget runs the --restart-cmd shell command; the last line it
// prints, when it is HOST:PORT, is the target's new address.
func restartTarget(ctx context.Context, cmd, addr string) (string, error) {
	out, err := exec.CommandContext(ctx, "sh", "-c", cmd).Output()
	if err != nil {
		return "", fmt.Errorf("--restart-cmd: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); strings.Count(last, ":") == 1 && !strings.ContainsAny(last, " \t") {
		return last, nil
	}
	return addr, nil
}
