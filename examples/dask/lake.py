#!/usr/bin/env python3
"""Map iwdump --export over captures on a dask.distributed cluster, map
partial iwsql --captures queries over partitions of the capture sets, and
reduce them: counts and sums add, latency histograms merge bucket by
bucket and give percentiles by the nearest rank (README "Statistics that
merge"). Prints the reduced answers as one JSON object.

    python3 lake.py --scheduler-file F --iwdump iwdump --iwsql iwsql \\
        --lake DIR [--partitions N] [--workers N] [--kill-once NAME --state DIR] CAPTURE...

--kill-once NAME: the export task of capture NAME, on its first attempt,
exports it (a committed copy), starts a second export from a pipe and
kills it mid-write (temporary files left behind), then SIGKILLs its own
worker process. The scheduler reschedules the task on the other worker,
which exports the capture again: the commit protocol keeps one copy
(README "The commit protocol").
"""

import argparse
import glob
import json
import os
import signal
import subprocess
import sys
import time

# The partial queries each partition answers, and how their rows reduce:
# the key columns, then the columns that add up.
QUERIES = {
    "tables": (
        "SELECT 'connections' AS t, count(*) AS n FROM connections UNION ALL "
        "SELECT 'pdus', count(*) FROM pdus UNION ALL "
        "SELECT 'operations', count(*) FROM operations UNION ALL "
        "SELECT 'findings', count(*) FROM findings UNION ALL "
        "SELECT 'commands', count(*) FROM commands UNION ALL "
        "SELECT 'captures', count(*) FROM captures",
        ["t"], ["n"]),
    "payload": (
        "SELECT dir, count(*) AS fpdus, sum(ddp_payload_length) AS octets FROM pdus "
        "WHERE ddp_payload_length IS NOT NULL GROUP BY dir",
        ["dir"], ["fpdus", "octets"]),
    "commands": (
        "SELECT proto, command, count(*) FILTER (WHERE answered) AS answered, "
        "count(*) FILTER (WHERE NOT answered) AS unanswered, "
        "count(*) FILTER (WHERE NOT answered AND NOT standing) AS hung, "
        "sum(rdma_octets) AS rdma_octets FROM commands GROUP BY ALL",
        ["proto", "command"], ["answered", "unanswered", "hung", "rdma_octets"]),
    "findings": (
        "SELECT code, count(*) AS n FROM findings GROUP BY code",
        ["code"], ["n"]),
    "buckets": (
        "SELECT source, kind, proto, command, lower_ns, max(upper_ns) AS upper_ns, sum(count) AS count, "
        "sum(sum_ns) AS sum_ns, min(min_ns) AS min_ns, max(max_ns) AS max_ns FROM latency_hist GROUP BY ALL",
        None, None),
}

QUANTILES = ["0.5", "0.9", "0.99", "0.999"]


def export(args):
    """The map task of one capture: iwdump --export (retried by the
    scheduler if its worker dies)."""
    iwdump, lake, capture, kill, state = args
    name = os.path.basename(capture).rsplit(".", 1)[0]
    cmd = [iwdump, "--export", lake, "--progress", "never", "-r", capture]
    if kill == name:
        marker = os.path.join(state, "attempt-" + name)
        if not os.path.exists(marker):
            with open(marker, "w") as f:
                f.write(str(os.getpid()))  # the worker that dies
            # A committed copy that this attempt will never report.
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            # An export from a pipe, killed mid-write: its temporary
            # files stay behind.
            p = subprocess.Popen([iwdump, "--export", lake, "--progress", "never", "--name", name, "--replace", "-r", "/dev/stdin"],
                                 stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            with open(capture, "rb") as f:
                data = f.read()
            p.stdin.write(data[: len(data) // 2])
            p.stdin.flush()
            deadline = time.time() + 20
            while not glob.glob(os.path.join(lake, "*", "capture=" + name, ".part-*.parquet.tmp")):
                if time.time() > deadline:
                    raise RuntimeError("the piped export wrote no temporary file")
                time.sleep(0.02)
            p.kill()
            p.wait()
            os.kill(os.getpid(), signal.SIGKILL)  # this worker dies with the task
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return {"capture": name, "pid": os.getpid(), "line": out.stdout.strip()}


def partial(args):
    """The map task of one partition: every partial query in one iwsql
    --captures run (one DuckDB start-up), each row as JSON beside its
    query's name."""
    iwsql, lake, names = args
    sql = " UNION ALL ".join("SELECT '%s' AS q, CAST(to_json(x) AS VARCHAR) AS r FROM (%s) x" % (q, QUERIES[q][0])
                             for q in QUERIES)
    out = subprocess.run([iwsql, "-o", "json", "--captures", ",".join(names), lake, sql],
                         check=True, capture_output=True, text=True)
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    return [(r["q"], json.loads(r["r"])) for r in rows]


def rank(q, n):
    """percentile.Rank: the nearest rank ceil(q*n), q to a millionth."""
    ppm = int(q * 1_000_000 + 0.5)
    return min(max((n * ppm + 999_999) // 1_000_000, 1), n)


def reduce_sums(rows, keys, values):
    out = {}
    for r in rows:
        k = json.dumps([r[c] for c in keys])
        acc = out.setdefault(k, {c: r[c] for c in keys} | {c: 0 for c in values})
        for c in values:
            acc[c] += r[c] or 0
    return sorted(out.values(), key=lambda r: json.dumps([r[c] for c in keys]))


def reduce_buckets(rows):
    """Merge the partial buckets by group and bucket, then per group:
    count, sum, min, max and the percentiles (percentile.BucketQuantile)."""
    groups = {}
    for r in rows:
        g = groups.setdefault(json.dumps([r["source"], r["kind"], r["proto"], r["command"]]), {})
        b = g.setdefault(r["lower_ns"], {"count": 0, "sum_ns": 0, "min_ns": r["min_ns"], "max_ns": r["max_ns"]})
        b["count"] += r["count"]
        b["sum_ns"] += r["sum_ns"]
        b["min_ns"] = min(b["min_ns"], r["min_ns"])
        b["max_ns"] = max(b["max_ns"], r["max_ns"])
    out = []
    for key, g in sorted(groups.items()):
        lows = sorted(g)
        n = sum(g[lo]["count"] for lo in lows)
        res = dict(zip(["source", "kind", "proto", "command"], json.loads(key)))
        res |= {"count": n, "sum_ns": sum(g[lo]["sum_ns"] for lo in lows),
                "min_ns": min(g[lo]["min_ns"] for lo in lows), "max_ns": max(g[lo]["max_ns"] for lo in lows)}
        for q in QUANTILES:
            r, seen = rank(float(q), n), 0
            for lo in lows:
                seen += g[lo]["count"]
                if seen >= r:
                    res["p" + q] = g[lo]["max_ns"]
                    break
        out.append(res)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scheduler-file", required=True)
    ap.add_argument("--iwdump", required=True)
    ap.add_argument("--iwsql", required=True)
    ap.add_argument("--lake", required=True)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--workers", type=int, default=0, help="wait for this many workers before mapping")
    ap.add_argument("--kill-once", default="")
    ap.add_argument("--state", default="")
    ap.add_argument("captures", nargs="+")
    a = ap.parse_args()

    from distributed import Client

    with Client(scheduler_file=a.scheduler_file, timeout=30) as client:
        if a.workers:
            client.wait_for_workers(a.workers, timeout=60)
        workers = sorted(client.scheduler_info()["workers"])
        t0 = time.time()
        exports = client.gather(client.map(export, [(a.iwdump, a.lake, c, a.kill_once, a.state) for c in a.captures],
                                           pure=False))
        names = sorted(e["capture"] for e in exports)
        parts = [names[i :: a.partitions] for i in range(a.partitions)]
        tasks = [(a.iwsql, a.lake, p) for p in parts if p]
        t1 = time.time()
        results = client.gather(client.map(partial, tasks, pure=False))
        t2 = time.time()
        alive = sorted(client.scheduler_info()["workers"])
    rows = {q: [] for q in QUERIES}
    for part in results:
        for q, r in part:
            rows[q].append(r)
    answers = {q: reduce_sums(rows[q], QUERIES[q][1], QUERIES[q][2]) for q in QUERIES if q != "buckets"}
    answers["latency"] = reduce_buckets(rows["buckets"])
    json.dump({"workers": workers, "workers_at_end": alive, "exports": exports, "partitions": parts, "answers": answers,
               "seconds": {"exports": round(t1 - t0, 3), "partials": round(t2 - t1, 3)}},
              sys.stdout, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
