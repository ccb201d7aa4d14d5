#!/usr/bin/env bash
# iwperf against a plain Go TCP copy of the same sizes, in one run, on
# loopback: bandwidth (write_bw and send_bw with CRC, -D seconds each) and
# latency (send_lat and write_lat, half a round trip), beside the endpoint
# package's TCP baseline (BenchmarkTCPCopy: one writer, one reader; ping-pong
# for latency), each size's baseline measured just before iwperf's. Prints
# the table BENCHMARKS.md records. Usage:
#   bench/iwperf-vs-tcp.sh [SECONDS]        (default 2 per bandwidth point)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-2}
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/iwperf" ./cmd/iwperf
sizes="64 4096 65536 1048576"
port=$((20000 + RANDOM % 20000))

# iw TEST SIZE ARGS...: one iwperf run against a fresh server; prints the
# JSON results object.
iw() {
  local test=$1 size=$2; shift 2
  "$tmp/iwperf" "$test" --bind 127.0.0.1 -p "$port" >/dev/null 2>&1 &
  local spid=$!
  pids+=("$spid")
  "$tmp/iwperf" "$test" 127.0.0.1 -p "$port" --retry 5s -s "$size" --crc --out_json --out_json_file "$tmp/out.json" "$@" >/dev/null
  wait "$spid" || true
  cat "$tmp/out.json"
}
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][sys.argv[2]])' "$tmp/out.json" "$1"; }

go test -c -o "$tmp/endpoint.test" ./endpoint
# tcp SIZE: the TCP baseline of one size, measured right before iwperf's
# (the machine is shared: pairs measured together compare best).
tcp() {
  "$tmp/endpoint.test" -test.run XXX -test.bench "TCPCopy/^$1\$" -test.benchtime 1x > "$tmp/tcp.txt"
  read -r _ _ _ _ tb _ tl _ < <(grep '^BenchmarkTCPCopy/' "$tmp/tcp.txt")
}

echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| size | TCP MB/s | write_bw MB/s | x | send_bw MB/s | x | TCP lat µs | send_lat t_avg µs | x | write_lat t_avg µs | x |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|\n'
for s in $sizes; do
  tcp "$s"
  # perftest's MB is 2^20 octets; the TCP baseline's is 10^6.
  iw write_bw "$s" -D "$secs" >/dev/null; wbw=$(python3 -c "print(round($(field BW_average)*1048576/1e6, 1))")
  iw send_bw "$s" -D "$secs" >/dev/null; sbw=$(python3 -c "print(round($(field BW_average)*1048576/1e6, 1))")
  iw send_lat "$s" -n 2000 >/dev/null; sl=$(field t_avg)
  iw write_lat "$s" -n 2000 >/dev/null; wl=$(field t_avg)
  python3 - "$s" "$tb" "$wbw" "$sbw" "$tl" "$sl" "$wl" <<'EOF'
import sys
s, tb, wbw, sbw, tl, sl, wl = sys.argv[1], *map(float, sys.argv[2:])
print(f"| {s} | {tb:.1f} | {wbw:.1f} | {wbw/tb:.2f} | {sbw:.1f} | {sbw/tb:.2f} | {tl:.1f} | {sl:.1f} | {sl/tl:.2f} | {wl:.1f} | {wl/tl:.2f} |")
EOF
done
