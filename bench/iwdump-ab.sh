#!/usr/bin/env bash
# Two iwdump binaries side by side, alternately, in rounds (before/after a
# change; see BENCHMARKS.md), on the item 8/9 capture. Usage:
#   bench/iwdump-ab.sh OLD-BINARY NEW-BINARY [FRAMES]
# Default 1 000 000 frames: bulk 64 KiB RDMA Writes as 1448-octet FPDUs
# with CRC over four connections (iwgen bulk-write -conns 4). For each mode
# (-q, text, -T json) and --workers 1 and 2, each round runs the old then
# the new binary; RUNS rounds (default 5). Kept per binary: the least and
# the median CPU time (user + system) and the best wall time. On a loaded
# machine read the CPU columns, and only differences larger than the
# spread between rounds.
set -euo pipefail
old=$(realpath "$1"); new=$(realpath "$2")
cd "$(dirname "$0")/.."
frames=${3:-1000000}
runs=${RUNS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/iwgen" ./cmd/iwgen
"$tmp/iwgen" -q -s bulk-write -msgsize 64KiB -conns 4 -count $((frames / 67 / 4)) -w "$tmp/c4.pcap"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; $(date -u)"
echo "| mode | --workers | binary | CPU least | CPU median | wall best |"
echo "|---|---|---|---|---|---|"
for mode in "-q" "" "-T json"; do
  for w in 1 2; do
    : > "$tmp/old"; : > "$tmp/new"
    for _ in $(seq "$runs"); do
      for b in old new; do
        # shellcheck disable=SC2086
        /usr/bin/time -f "%e %U %S" -o "$tmp/time" "${!b}" -r "$tmp/c4.pcap" $mode --workers "$w" >/dev/null
        read -r e u s < "$tmp/time"
        echo "$(echo "$u + $s" | bc -l) $e" >> "$tmp/$b"
      done
    done
    for b in old new; do
      cpu=$(cut -d' ' -f1 "$tmp/$b" | sort -g)
      least=$(head -1 <<< "$cpu"); median=$(sed -n "$(( (runs + 1) / 2 ))p" <<< "$cpu")
      wall=$(cut -d' ' -f2 "$tmp/$b" | sort -g | head -1)
      printf '| %s | %d | %s | %.2f s | %.2f s | %.2f s |\n' "${mode:-text}" "$w" "$b" "$least" "$median" "$wall"
    done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
