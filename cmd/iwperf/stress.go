package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/iwkit/iwkit/endpoint/perf"
)

// stress runs `iwperf stress HOST`; without HOST it is the server, which
// serves every test.
func (a *app) stress() int {
	if a.host == "" {
		return a.server()
	}
	f := a.f
	set := map[string]bool{}
	a.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	o := perf.StressOptions{Seed: uint64(f.seed), Conns: 8, Window: 16, MaxSize: 65536, Duration: 10 * time.Second,
		IRD: f.ird, ORD: f.ord, Config: a.cfg, Timeout: f.timeout, Errors: a.stdout}
	if !set["seed"] {
		o.Seed = uint64(time.Now().UnixNano())
	}
	if set["q"] || set["qp"] {
		o.Conns = f.qps
	}
	if set["t"] || set["tx-depth"] {
		o.Window = f.depth
	}
	if f.size > 0 {
		o.MaxSize = f.size
	}
	if f.iters > 0 {
		o.Ops = f.iters
	}
	if f.dur > 0 {
		o.Duration = time.Duration(f.dur) * time.Second
	}
	fmt.Fprintf(a.stdout, "stress: seed %d (--seed %d repeats this run), %d connections, %d operations in flight each, up to %d octets, for %v\n",
		o.Seed, o.Seed, o.Conns, o.Window, o.MaxSize, o.Duration)
	sum, err := perf.RunStress(a.ctx, a.dialer(), o)
	if err != nil {
		return a.fail(err)
	}
	sum.Format(a.stdout)
	if f.outJSON {
		b, _ := json.MarshalIndent(sum, "", " ")
		if err := os.WriteFile(f.jsonFile, append(b, '\n'), 0o644); err != nil {
			return a.fail(err)
		}
	}
	if sum.TotalErrors() > 0 {
		return 1
	}
	return 0
}
