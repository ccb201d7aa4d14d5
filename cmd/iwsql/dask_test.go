//go:build cgo && unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// asIWSQL makes the test binary the iwsql command (the dask workers run
// it as iwsql --captures): no second cgo build of DuckDB for the test.
const asIWSQL = "IWKIT_TEST_AS_IWSQL"

func TestMain(m *testing.M) {
	if os.Getenv(asIWSQL) == "1" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// daskPython is a Python 3 that imports distributed (Debian's
// python3-distributed: /usr/bin/python3, whatever python3 comes first
// in PATH), or "" and why not.
func daskPython() (string, string) {
	var tried []string
	cands := []string{"python3", "/usr/bin/python3"}
	for _, c := range cands {
		p, err := exec.LookPath(c)
		if err != nil {
			tried = append(tried, c+": not found")
			continue
		}
		if out, err := exec.Command(p, "-c", "import distributed").CombinedOutput(); err != nil {
			tried = append(tried, p+": "+strings.TrimSpace(lastLine(string(out))))
			continue
		}
		return p, ""
	}
	return "", strings.Join(tried, "; ")
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// group is a process started in a process group of its own, killed with
// its children (iwdump under a worker) on every path.
type group struct {
	cmd  *exec.Cmd
	out  syncBuffer
	done chan struct{} // closed when it has exited
}

// syncBuffer is a bytes.Buffer its process writes while the test may
// read it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func start(t *testing.T, ctx context.Context, env []string, name string, args ...string) *group {
	t.Helper()
	g := &group{cmd: exec.CommandContext(ctx, name, args...), done: make(chan struct{})}
	g.cmd.Env = env
	g.cmd.Stdout, g.cmd.Stderr = &g.out, &g.out
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	g.cmd.Cancel = func() error { return syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL) }
	g.cmd.WaitDelay = 5 * time.Second
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := g.cmd.Process.Pid
	done := g.done
	go func() { g.cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		syscall.Kill(-pgid, syscall.SIGKILL) // the group: its children too
		<-done
		// Nothing of the group is left (reaped or not, a member answers
		// signal 0 until it is gone).
		for i := 0; syscall.Kill(-pgid, 0) == nil; i++ {
			if i == 100 {
				t.Errorf("process group %d (%s) outlives its kill", pgid, name)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	return g
}

// TestDask: a dask.distributed scheduler and two worker processes on
// 127.0.0.1 map iwdump --export over nine storage captures into one lake,
// one task's worker SIGKILLed mid-task after a committed export and a
// half-written one (so the task is retried on the other worker); they
// then map iwsql --captures over three partitions of the capture sets
// and examples/dask/lake.py reduces the partial results. Every count, sum
// and extreme equals single-node iwsql over a clean export of the same
// captures, every percentile from the merged buckets equals
// hist_quantile's over the whole set and is within percentile.RelError
// above quantile_disc's.
func TestDask(t *testing.T) {
	py, why := daskPython()
	if py == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("dask.distributed is missing (test.sh installs python3-distributed): %s", why)
		}
		t.Skipf("dask.distributed is missing (apt-get install python3-distributed; test.sh does): %s", why)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	tmp := t.TempDir()
	iwdump := filepath.Join(tmp, "iwdump")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", iwdump, "github.com/iwkit/iwkit/cmd/iwdump").CombinedOutput(); err != nil {
		t.Fatalf("go build iwdump: %v\n%s", err, out)
	}
	t0 := time.Now()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Nine storage captures: every protocol, answered and unanswered
	// commands, RDMA Reads.
	var caps []string
	for _, c := range []string{"nvmeof", "crc_nvmeof", "gen_nvme_findings", "iser", "smb_direct", "gen_smbd_findings", "nfs3_rdma", "nfs42_rdma", "gen_rpcrdma_findings"} {
		p, _ := filepath.Abs("../../testdata/ulp/" + c + ".pcap")
		caps = append(caps, p)
	}
	const victim = "nvmeof" // its export task's worker is killed once
	lake, state, clean := filepath.Join(tmp, "lake"), filepath.Join(tmp, "state"), filepath.Join(tmp, "clean")
	for _, d := range []string{lake, state} {
		os.MkdirAll(d, 0o755)
	}
	env := append(os.Environ(), asIWSQL+"=1", "DASK_DISTRIBUTED__WORKER__DAEMON=False", "PYTHONDONTWRITEBYTECODE=1")

	sched := filepath.Join(tmp, "scheduler.json")
	s := start(t, ctx, env, py, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
		"--no-dashboard", "--scheduler-file", sched, "--idle-timeout", "300s")
	waitFor(t, ctx, func() bool { st, err := os.Stat(sched); return err == nil && st.Size() > 0 }, "the scheduler file", s)
	var ws []*group
	for i := range 2 {
		ws = append(ws, start(t, ctx, env, py, "-m", "distributed.cli.dask_worker", "--scheduler-file", sched, "--host", "127.0.0.1",
			"--no-nanny", "--nthreads", "1", "--no-dashboard", "--name", fmt.Sprintf("w%d", i), "--death-timeout", "60",
			"--local-directory", filepath.Join(tmp, fmt.Sprintf("w%d", i))))
	}
	args := []string{"../../examples/dask/lake.py", "--scheduler-file", sched, "--iwdump", iwdump, "--iwsql", self,
		"--lake", lake, "--partitions", "3", "--workers", "2", "--kill-once", victim, "--state", state}
	c := exec.CommandContext(ctx, py, append(args, caps...)...)
	c.Env = env
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("lake.py: %v\n%s\nscheduler:\n%s\nworkers:\n%s\n%s", err, stderr.String(), s.out.String(), ws[0].out.String(), ws[1].out.String())
	}
	t.Logf("cluster and lake.py: %v", time.Since(t0).Round(time.Millisecond))
	var got struct {
		Workers      []string `json:"workers"`
		WorkersAtEnd []string `json:"workers_at_end"`
		Exports      []struct {
			Capture string
			Pid     int
		}
		Partitions [][]string
		Answers    map[string][]map[string]any
		Seconds    map[string]float64
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// Two workers ran; one died with the victim's first attempt, and the
	// survivor exported it again.
	if len(got.Workers) != 2 || len(got.WorkersAtEnd) != 1 {
		t.Errorf("workers %v at the start, %v at the end: want 2, then 1 (the one killed gone)", got.Workers, got.WorkersAtEnd)
	}
	// The first attempt's worker is gone; the retry ran on another.
	b, err := os.ReadFile(filepath.Join(state, "attempt-"+victim))
	if err != nil {
		t.Fatalf("the victim's first attempt did not run: %v", err)
	}
	killed, _ := strconv.Atoi(string(b))
	for _, e := range got.Exports {
		if e.Capture == victim && (e.Pid == killed || killed == 0) {
			t.Errorf("%s exported by worker pid %d, the one killed (%d)", victim, e.Pid, killed)
		}
	}
	if killed == 0 || syscall.Kill(killed, 0) == nil {
		t.Errorf("the worker that ran the first attempt (pid %d) is alive", killed)
	}
	// The killed attempts left garbage: an older commit (removed by the
	// retry) and the piped export's temporary files, which no query sees.
	temps, _ := filepath.Glob(filepath.Join(lake, "*", "capture="+victim, ".part-*.parquet.tmp"))
	if len(temps) == 0 {
		t.Errorf("no temporary file of the killed export in %s", lake)
	}
	t.Logf("%d captures exported by %v; %d temporary files of the killed export left; partitions %v; seconds %v", len(got.Exports), got.Workers, len(temps), got.Partitions, got.Seconds)

	// Single node: a clean export of the same captures, and iwsql over all
	// of it.
	if out, err := exec.CommandContext(ctx, iwdump, append([]string{"--export", clean, "--each", "--progress", "never"}, caps...)...).CombinedOutput(); err != nil {
		t.Fatalf("iwdump --export: %v\n%s", err, out)
	}
	q := func(dir, query string) []map[string]any {
		t.Helper()
		var o, e bytes.Buffer
		if code := run([]string{"-o", "json", dir, query}, nil, &o, &e); code != 0 {
			t.Fatalf("iwsql %s: exit %d: %s", query, code, e.String())
		}
		var rows []map[string]any
		dec := json.NewDecoder(&o)
		dec.UseNumber()
		for dec.More() {
			var r map[string]any
			if err := dec.Decode(&r); err != nil {
				t.Fatal(err)
			}
			rows = append(rows, r)
		}
		return rows
	}
	checks := 0
	want := map[string][]map[string]any{
		"tables": q(clean, `SELECT 'connections' AS t, count(*) AS n FROM connections UNION ALL SELECT 'pdus', count(*) FROM pdus
			UNION ALL SELECT 'operations', count(*) FROM operations UNION ALL SELECT 'findings', count(*) FROM findings
			UNION ALL SELECT 'commands', count(*) FROM commands UNION ALL SELECT 'captures', count(*) FROM captures`),
		"payload":  q(clean, `SELECT dir, count(ddp_payload_length) AS fpdus, sum(ddp_payload_length) AS octets FROM pdus GROUP BY dir HAVING fpdus > 0`),
		"commands": q(clean, `SELECT proto, command, count(latency_ns) AS answered, count(*) - count(latency_ns) AS unanswered, count(*) FILTER (WHERE age_ns IS NOT NULL AND NOT standing) AS hung, sum(rdma_octets) AS rdma_octets FROM commands GROUP BY ALL`),
		"findings": q(clean, `SELECT code, count(*) AS n FROM findings GROUP BY code`),
	}
	for name, rows := range want {
		g := got.Answers[name]
		if len(rows) == 0 || len(g) != len(rows) {
			t.Errorf("%s: %d reduced rows, single node %d", name, len(g), len(rows))
			continue
		}
		for _, w := range rows {
			if !slices.ContainsFunc(g, func(r map[string]any) bool { return sameRow(r, w) }) {
				t.Errorf("%s: single node %v, not among the reduced rows %v", name, w, g)
			}
			checks++
		}
	}
	for _, w := range q(clean, `SELECT count(*) AS n FROM captures`) {
		if fmt.Sprint(w["n"]) != fmt.Sprint(len(caps)) {
			t.Errorf("%v capture sets, %d exported", w["n"], len(caps))
		}
	}

	// Latency: counts, sums and extremes exact; percentiles from the
	// merged buckets equal to hist_quantile over the whole set, and
	// within RelError above the nearest rank of the raw rows.
	groups := `source, kind, proto, command`
	raw := `SELECT 'operations' AS source, kind, NULL::VARCHAR AS proto, NULL::VARCHAR AS command, latency_ns FROM operations WHERE latency_ns IS NOT NULL
		UNION ALL SELECT 'commands', NULL, proto, command, latency_ns FROM commands WHERE answered`
	var hq, rq []string
	for _, p := range []string{"0.5", "0.9", "0.99", "0.999"} {
		hq = append(hq, fmt.Sprintf(`hist_quantile(lower_ns, count, max_ns, %s) AS "p%s"`, p, p))
		rq = append(rq, fmt.Sprintf(`quantile_disc(latency_ns, %s) AS "p%s"`, p, p))
	}
	hist := q(clean, "SELECT "+groups+", sum(count) AS count, sum(sum_ns) AS sum_ns, min(min_ns) AS min_ns, max(max_ns) AS max_ns, "+strings.Join(hq, ", ")+" FROM latency_hist GROUP BY ALL")
	exact := q(clean, "SELECT "+groups+", count(*) AS count, sum(latency_ns) AS sum_ns, min(latency_ns) AS min_ns, max(latency_ns) AS max_ns, "+strings.Join(rq, ", ")+" FROM ("+raw+") GROUP BY ALL")
	lat := got.Answers["latency"]
	if len(lat) < 20 || len(lat) != len(hist) || len(hist) != len(exact) {
		t.Fatalf("latency: %d reduced groups, %d single-node, %d raw", len(lat), len(hist), len(exact))
	}
	key := func(r map[string]any) string { return fmt.Sprint(r["source"], r["kind"], r["proto"], r["command"]) }
	byKey := map[string]map[string]any{}
	for _, r := range exact {
		byKey[key(r)] = r
	}
	above := 0
	for _, h := range hist {
		g := lat[slices.IndexFunc(lat, func(r map[string]any) bool { return key(r) == key(h) })]
		if !sameRow(g, h) {
			t.Errorf("latency %s: reduced %v, single-node hist_quantile %v", key(h), g, h)
		}
		e := byKey[key(h)]
		for _, c := range []string{"count", "sum_ns", "min_ns", "max_ns"} {
			if num(g[c]) != num(e[c]) {
				t.Errorf("latency %s: %s reduced %v, raw rows %v", key(h), c, g[c], e[c])
			}
		}
		for _, p := range []string{"p0.5", "p0.9", "p0.99", "p0.999"} {
			v, x := num(g[p]), num(e[p])
			if v < x || float64(v-x) > math.Abs(float64(x))/1024 {
				t.Errorf("latency %s %s: reduced %d, nearest rank %d: beyond the bound", key(h), p, v, x)
			}
			if v != x {
				above++
			}
		}
		checks++
	}
	// The lake with the killed attempts' garbage answers as the clean
	// export.
	for _, query := range []string{"SELECT count(*) AS n, sum(count) AS c FROM latency_hist", "SELECT count(*) AS n FROM captures", "SELECT count(*) AS n FROM pdus"} {
		if a, b := q(lake, query), q(clean, query); !sameRow(a[0], b[0]) {
			t.Errorf("%s: the lake %v, the clean export %v", query, a, b)
		}
	}
	t.Logf("%d answers compared; %d percentiles above the nearest rank, within 1/1024", checks, above)
}

// num is a JSON number as an int64.
func num(v any) int64 {
	n, _ := v.(json.Number).Int64()
	return n
}

// sameRow: every column of want has the same value in got (JSON
// numbers as their text, NULL as null).
func sameRow(got, want map[string]any) bool {
	for k, w := range want {
		if fmt.Sprint(got[k]) != fmt.Sprint(w) {
			return false
		}
	}
	return true
}

// waitFor polls cond until it holds, the context ends or g exits.
func waitFor(t *testing.T, ctx context.Context, cond func() bool, what string, g *group) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("no %s: %v\n%s", what, ctx.Err(), g.out.String())
		case <-g.done:
			t.Fatalf("no %s: it exited\n%s", what, g.out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
