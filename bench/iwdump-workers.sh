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
"$tmp/iwgen" -q -s bulk-write -msgsize 64KiB -conns 4 -count $((frames / 67 / 4)) -w "$tmp/c4.pcap"
n=$(capinfos -c -M "$tmp/c4.pcap" 2>/dev/null | awk '/Number of packets/ {print $NF}')
echo "capture: $n frames ($(du -h "$tmp/c4.pcap" | cut -f1)), 4 connections; $(nproc) CPUs; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in "-q" "" "-T json"; do
  declare -A wall=() cpu=()
  for _ in $(seq "$runs"); do
    for w in "${workers[@]}"; do
      # shellcheck disable=SC2086
      /usr/bin/time -f "%e %U %S" -o "$tmp/time" "$tmp/iwdump" -r "$tmp/c4.pcap" $mode --workers "$w" >/dev/null
      read -r e u s < "$tmp/time"
      c=$(echo "$u + $s" | bc -l)
      if [ -z "${wall[$w]:-}" ] || (( $(echo "$e < ${wall[$w]}" | bc -l) )); then wall[$w]=$e; fi
      if [ -z "${cpu[$w]:-}" ] || (( $(echo "$c < ${cpu[$w]}" | bc -l) )); then cpu[$w]=$c; fi
    done
  done
  echo ""
  echo "iwdump ${mode:-(text)}, best of $runs:"
  echo "| --workers | wall | CPU | speed-up (wall) | CPU / one worker's |"
  echo "|---|---|---|---|---|"
  for w in "${workers[@]}"; do
    printf '| %d | %.2f s | %.2f s | %.2fx | %.2f |\n' "$w" "${wall[$w]}" "${cpu[$w]}" \
      "$(echo "${wall[${workers[0]}]} / ${wall[$w]}" | bc -l)" "$(echo "${cpu[$w]} / ${cpu[${workers[0]}]}" | bc -l)"
  done
  unset wall cpu
done
echo ""
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
