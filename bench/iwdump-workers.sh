#!/usr/bin/env bash
# iwdump's scaling with --workers (issue 20, item 9), measured side by side
# in one run. Usage:
#   bench/iwdump-workers.sh [FRAMES] [WORKERS...]
# Defaults: 1 000 000 frames, workers 1 2 4. The capture is bulk 64 KiB
# RDMA Writes as 1448-octet FPDUs with CRC over four connections (iwgen
# bulk-write -conns 4). Each round runs every worker count once, in turn,
# for RUNS rounds (default 5), so that load from other work on the machine
# falls on all of them alike; kept per worker count: the best wall time and
# the least CPU time (user + system), and their ratios to one worker.
# Modes: -q (the pipeline, no output), default text, -T json.
#
# The row "2 procs" is the machine's own ceiling for two cores at that
# moment: two independent one-worker iwdump processes, each over a capture
# of two of the connections (half the frames), run at the same time. They
# share nothing but the machine, so no sharding can beat their speed-up;
# on a virtual machine it moves from minute to minute with where the
# host runs the two vCPUs (BENCHMARKS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
frames=${1:-1000000}
shift || true
workers=("$@")
[ ${#workers[@]} -gt 0 ] || workers=(1 2 4)
runs=${RUNS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/iwdump" ./cmd/iwdump
go build -o "$tmp/iwgen" ./cmd/iwgen
# -count is messages per connection: ~67 frames each (FPDUs and ACKs).
count=$((frames / 67 / 4))
"$tmp/iwgen" -q -s bulk-write -msgsize 64KiB -conns 4 -count $count -w "$tmp/c4.pcap"
"$tmp/iwgen" -q -s bulk-write -msgsize 64KiB -conns 2 -count $count -w "$tmp/h1.pcap"
cp "$tmp/h1.pcap" "$tmp/h2.pcap"
n=$( (capinfos -c -M "$tmp/c4.pcap" 2>/dev/null || true) | awk '/Number of packets/ {print $NF}')
echo "capture: ${n:-?} frames ($(du -h "$tmp/c4.pcap" | cut -f1)), 4 connections; $(nproc) CPUs; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
TIMEFORMAT='%3R %3U %3S'
# timed CMD...: appends "wall user sys" of CMD to $tmp/time (millisecond resolution).
timed() { { time "$@" >/dev/null; } 2>>"$tmp/time"; }
for mode in "-q" "" "-T json"; do
  declare -A wall=() cpu=()
  keep() { # keep KEY: the best wall and least CPU of the last timed run
    read -r e u s < <(tail -n1 "$tmp/time")
    c=$(echo "$u + $s" | bc -l)
    if [ -z "${wall[$1]:-}" ] || (( $(echo "$e < ${wall[$1]}" | bc -l) )); then wall[$1]=$e; fi
    if [ -z "${cpu[$1]:-}" ] || (( $(echo "$c < ${cpu[$1]}" | bc -l) )); then cpu[$1]=$c; fi
  }
  for _ in $(seq "$runs"); do
    for w in "${workers[@]}"; do
      # shellcheck disable=SC2086
      timed "$tmp/iwdump" -r "$tmp/c4.pcap" $mode --workers "$w"
      keep "$w"
    done
    # shellcheck disable=SC2086
    timed bash -c "'$tmp/iwdump' -r '$tmp/h1.pcap' $mode --workers 1 >/dev/null & '$tmp/iwdump' -r '$tmp/h2.pcap' $mode --workers 1 >/dev/null; wait"
    keep procs
  done
  echo ""
  echo "iwdump ${mode:-(text)}, best of $runs:"
  echo "| --workers | wall | CPU | speed-up (wall) | CPU / one worker's |"
  echo "|---|---|---|---|---|"
  for w in "${workers[@]}" procs; do
    label=$w
    [ "$w" = procs ] && label="2 procs"
    printf '| %s | %.3f s | %.3f s | %.2fx | %.2f |\n' "$label" "${wall[$w]}" "${cpu[$w]}" \
      "$(echo "${wall[${workers[0]}]} / ${wall[$w]}" | bc -l)" "$(echo "${cpu[$w]} / ${cpu[${workers[0]}]}" | bc -l)"
  done
  unset wall cpu
done
echo ""
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
