#!/usr/bin/env bash
# Times iwdump against tshark on the same generated captures, in one run, and
# prints the ratios that BENCHMARKS.md records. Usage:
#   bench/iwdump-vs-tshark.sh [FRAMES]
# Default: 1 000 000 frames (issue 20's item 8). CONNS (default "4") lists
# the connection counts of the captures to run, e.g. CONNS="1 4"; RUNS
# (default 3) the runs of each command. Needs tshark (test.sh installs it)
# and GNU time.
#
# The captures are 64 KiB RDMA Writes (1448-octet FPDUs with CRC, one per
# segment, plus ACKs) over that many connections (what flow-sharded
# --workers spreads over cores). iwdump runs with its default (--workers 0:
# one shard per core on files of 64 MiB or more) and with --workers 1.
# Each command runs RUNS times, in turn with the others; the best wall time
# and the least CPU time are kept. Ratios are given on wall time (what a
# user waits) and on CPU time (what the machine pays).
set -euo pipefail
cd "$(dirname "$0")/.."
small=${1:-1000000}
runs=${RUNS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/iwdump" ./cmd/iwdump
go build -o "$tmp/iwgen" ./cmd/iwgen
# -count is messages per connection: ~67 frames each.
for k in ${CONNS:-4}; do
  "$tmp/iwgen" -q -s bulk-write -msgsize 64KiB -conns "$k" -count $((small / 67 / k)) -w "$tmp/c$k.pcap"
done
frames() { capinfos -c -M "$1" 2>/dev/null | awk '/Number of packets/ {print $NF}'; }

# t LABEL FRAMES COMMAND...: best wall and least CPU of RUNS runs; prints
# "wall cpu" and logs a row.
t() {
  local label=$1 n=$2; shift 2
  local best="" bcpu="" brss=""
  for _ in $(seq "$runs"); do
    /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
    read -r wall user sys rss < "$tmp/time"
    cpu=$(echo "$user + $sys" | bc -l)
    if [ -z "$best" ] || (( $(echo "$wall < $best" | bc -l) )); then best=$wall; brss=$rss; fi
    if [ -z "$bcpu" ] || (( $(echo "$cpu < $bcpu" | bc -l) )); then bcpu=$cpu; fi
  done
  printf '| %-34s | %6.2f s | %6.2f s | %9.0f | %4d MiB |\n' "$label" "$best" "$bcpu" "$(echo "$n / $best" | bc -l)" $((brss / 1024)) >&2
  echo "$best $bcpu"
}
ratio() { # name tshark-result iwdump-result
  read -r tw tc <<< "$2"; read -r iw ic <<< "$3"
  printf '%-44s wall %5.1fx   cpu %5.1fx\n' "$1" "$(echo "$tw / $iw" | bc -l)" "$(echo "$tc / $ic" | bc -l)"
}
fields=(-e frame.number -e iwarp_mpa.ulpdulength -e iwarp_ddp.tagged_flag -e iwarp_ddp.last_flag -e iwarp_ddp.stag -e iwarp_ddp.tagged_offset
        -e iwarp_ddp.qn -e iwarp_ddp.msn -e iwarp_ddp.mo -e iwarp_rdma.opcode -e iwarp_mpa.crc_check)
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs" >&2
out=""
for k in ${CONNS:-4}; do
  c=c$k
  f="$tmp/$c.pcap"; n=$(frames "$f")
  echo "" >&2
  echo "$c: $n frames ($(du -h "$f" | cut -f1)), ${c#c} connection(s)" >&2
  echo "| command | wall (best of $runs) | CPU (least) | frames/s (wall) | max RSS |" >&2
  echo "|---|---|---|---|---|" >&2
  ts_text=$(t "tshark -n -r F" "$n" tshark -n -r "$f")
  iw_text=$(t "iwdump -r F" "$n" "$tmp/iwdump" -r "$f")
  iw_text1=$(t "iwdump -r F --workers 1" "$n" "$tmp/iwdump" -r "$f" --workers 1)
  ts_fields=$(t "tshark -n -r F -T fields (11 fields)" "$n" tshark -n -r "$f" -T fields "${fields[@]}")
  iw_json=$(t "iwdump -r F -T json" "$n" "$tmp/iwdump" -r "$f" -T json)
  iw_json1=$(t "iwdump -r F -T json --workers 1" "$n" "$tmp/iwdump" -r "$f" -T json --workers 1)
  out+=$(ratio "$c text (default) vs tshark" "$ts_text" "$iw_text")$'\n'
  out+=$(ratio "$c text --workers 1 vs tshark" "$ts_text" "$iw_text1")$'\n'
  out+=$(ratio "$c NDJSON (default) vs tshark -T fields" "$ts_fields" "$iw_json")$'\n'
  out+=$(ratio "$c NDJSON --workers 1 vs tshark -T fields" "$ts_fields" "$iw_json1")$'\n'
done
echo "" >&2
printf '%s' "$out"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
