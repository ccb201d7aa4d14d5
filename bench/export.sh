#!/usr/bin/env bash
# Times the Parquet export, in one run, beside what it is measured against
# (BENCHMARKS.md, "Export and SQL"). Usage:
#   bench/export.sh [FRAMES] [SETS] [FRAMES_PER_SET]
# Defaults: a 1 000 000-frame capture; 16 capture sets of 60 000 frames.
# Needs GNU time and a cgo toolchain (iwsql embeds DuckDB).
#
# 1. iwdump --export beside iwdump -T json --workers 1 (the export runs the
#    pipeline on one worker per capture set) on the big capture: wall,
#    CPU, frames/s, peak resident memory.
# 2. --export --each --jobs 2 over the 16 sets beside --jobs 1 (one after
#    another).
# 3. A DuckDB query (iwsql) over the big capture's export beside iwdump -q
#    -z conv computing the same FPDU and octet counts from the capture.
# Each command runs 3 times; the best wall time and the best CPU time
# (user + sys, the steadier measure on a loaded machine) are kept.
set -euo pipefail
cd "$(dirname "$0")/.."
big=${1:-1000000}
sets=${2:-16}
per=${3:-60000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/iwdump" ./cmd/iwdump
go build -o "$tmp/iwgen" ./cmd/iwgen
go build -o "$tmp/iwsql" ./cmd/iwsql
# -count is messages per connection: ~67 frames each.
"$tmp/iwgen" -q -s bulk-write -msgsize 64KiB -count $((big / 67)) -w "$tmp/big.pcap"
mkdir "$tmp/sets"
for i in $(seq 1 "$sets"); do
  "$tmp/iwgen" -q -s bulk-write -msgsize 64KiB -seed "$i" -count $((per / 67)) -w "$tmp/sets/s$i.pcap"
done

t() { # LABEL FRAMES COMMAND...: best of 3; logs a row, prints "wall cpu"
  local label=$1 n=$2; shift 2
  local best="" bcpu="" brss=""
  for _ in 1 2 3; do
    rm -rf "$tmp/x"
    /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$@" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
    read -r wall user sys rss < "$tmp/time"
    cpu=$(echo "$user + $sys" | bc -l)
    if [ -z "$best" ] || (( $(echo "$wall < $best" | bc -l) )); then
      best=$wall; brss=$rss
    fi
    if [ -z "$bcpu" ] || (( $(echo "$cpu < $bcpu" | bc -l) )); then
      bcpu=$cpu
    fi
  done
  printf '| %-46s | %6.2f s | %6.2f s | %9.0f | %4d MiB |\n' "$label" "$best" "$bcpu" "$(echo "$n / $best" | bc -l)" $((brss / 1024)) >&2
  echo "$best $bcpu"
}
ratio() { read -r aw ac <<< "$2"; read -r bw bc <<< "$3"
  printf '%-52s wall %5.2fx   cpu %5.2fx\n' "$1" "$(echo "$aw / $bw" | bc -l)" "$(echo "$ac / $bc" | bc -l)" >&2; }

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs" >&2
n=$("$tmp/iwdump" --export "$tmp/x" -r "$tmp/big.pcap" | sed 's/.* frames=\([0-9]*\) .*/\1/')
echo "big capture: $n frames ($(du -h "$tmp/big.pcap" | cut -f1))" >&2
echo "| command | wall (best of 3) | CPU (best of 3) | frames/s (wall) | max RSS |" >&2
echo "|---|---|---|---|---|" >&2
j=$(t "iwdump -r F -T json --workers 1 > /dev/null" "$n" "$tmp/iwdump" -r "$tmp/big.pcap" -T json --workers 1)
e=$(t "iwdump --export DIR -r F" "$n" "$tmp/iwdump" --export "$tmp/x" -r "$tmp/big.pcap")
ratio "export / NDJSON" "$e" "$j"

m=$("$tmp/iwdump" --export "$tmp/x" --each "$tmp"/sets/*.pcap | sed 's/.* frames=\([0-9]*\) .*/\1/' | paste -sd+ | bc)
echo "" >&2
echo "$sets capture sets, $m frames in all ($(du -ch "$tmp"/sets/*.pcap | tail -1 | cut -f1))" >&2
echo "| command | wall (best of 3) | CPU (best of 3) | frames/s (wall) | max RSS |" >&2
echo "|---|---|---|---|---|" >&2
s1=$(t "iwdump --export DIR --each --jobs 1 FILE..." "$m" "$tmp/iwdump" --export "$tmp/x" --each --jobs 1 "$tmp"/sets/*.pcap)
s2=$(t "iwdump --export DIR --each --jobs 2 FILE..." "$m" "$tmp/iwdump" --export "$tmp/x" --each --jobs 2 "$tmp"/sets/*.pcap)
ratio "--jobs 1 / --jobs 2 (speed-up)" "$s1" "$s2"

"$tmp/iwdump" --export "$tmp/big-x" -r "$tmp/big.pcap" >/dev/null
q="SELECT conn, dir, count(*) AS fpdus, sum(mpa_ulpdu_length) AS octets FROM pdus WHERE mpa_ulpdu_length IS NOT NULL GROUP BY conn, dir ORDER BY conn, dir"
echo "" >&2
echo "FPDUs and octets per connection and direction, big capture" >&2
echo "| command | wall (best of 3) | CPU (best of 3) | frames/s (wall) | max RSS |" >&2
echo "|---|---|---|---|---|" >&2
z=$(t "iwdump -q -z conv -r F --workers 1" "$n" "$tmp/iwdump" -q -z conv -r "$tmp/big.pcap" --workers 1)
zd=$(t "iwdump -q -z conv -r F" "$n" "$tmp/iwdump" -q -z conv -r "$tmp/big.pcap")
d=$(t "iwsql DIR 'SELECT conn, dir, count(*), sum(...)'" "$n" "$tmp/iwsql" "$tmp/big-x" "$q")
ratio "iwdump -z conv --workers 1 / iwsql" "$z" "$d"
ratio "iwdump -z conv / iwsql" "$zd" "$d"
"$tmp/iwsql" "$tmp/big-x" "$q" >&2
"$tmp/iwdump" -q -z conv -r "$tmp/big.pcap" | sed -n 3,4p >&2
echo "export size: $(du -sh "$tmp/big-x" | cut -f1) for $(du -h "$tmp/big.pcap" | cut -f1) of capture" >&2
