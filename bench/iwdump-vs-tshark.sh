#!/usr/bin/env bash
# Times iwdump against tshark on the same generated captures, in one run, and
# prints the ratios that BENCHMARKS.md records. Usage:
#   bench/iwdump-vs-tshark.sh [FRAMES_FOR_TSHARK] [FRAMES_FOR_MEMORY]
# Defaults: 200000 frames for the side-by-side runs, 1000000 for iwdump's
# resident-memory check. Needs tshark (test.sh installs it) and GNU time.
#
# Two captures of 64 KiB RDMA Writes (1448-octet FPDUs with CRC, one per
# segment, plus ACKs): one connection, and four connections (what
# flow-sharded --workers can spread over cores). iwdump runs with its
# default (--workers 0: one shard per core, up to 4, on files of 64 MiB or
# more) and with --workers 1. Each command runs 3 times; the best wall
# time and its CPU time are kept. Ratios are given on wall time (what a
# user waits) and on CPU time (what the machine pays).
set -euo pipefail
cd "$(dirname "$0")/.."
small=${1:-200000}
big=${2:-1000000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/iwdump" ./cmd/iwdump
go build -o "$tmp/iwgen" ./cmd/iwgen
# -count is messages per connection: ~67 frames each.
"$tmp/iwgen" -q -s bulk-write -msgsize 64KiB -count $((small / 67)) -w "$tmp/c1.pcap"
"$tmp/iwgen" -q -s bulk-write -msgsize 64KiB -conns 4 -count $((small / 67 / 4)) -w "$tmp/c4.pcap"
"$tmp/iwgen" -q -s bulk-write -msgsize 64KiB -count $((big / 67)) -w "$tmp/big.pcap"
frames() { capinfos -c -M "$1" 2>/dev/null | awk '/Number of packets/ {print $NF}'; }
nbig=$(frames "$tmp/big.pcap")

# t LABEL FRAMES COMMAND...: best of 3 runs; prints "wall cpu" and logs a row.
t() {
  local label=$1 n=$2; shift 2
  local best="" bcpu="" brss=""
  for _ in 1 2 3; do
    /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
    read -r wall user sys rss < "$tmp/time"
    if [ -z "$best" ] || (( $(echo "$wall < $best" | bc -l) )); then
      best=$wall; bcpu=$(echo "$user + $sys" | bc -l); brss=$rss
    fi
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
for c in c1 c4; do
  f="$tmp/$c.pcap"; n=$(frames "$f")
  echo "" >&2
  echo "$c: $n frames ($(du -h "$f" | cut -f1)), ${c#c} connection(s)" >&2
  echo "| command | wall (best of 3) | CPU | frames/s (wall) | max RSS |" >&2
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
for mode in text json; do
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$tmp/iwdump" -r "$tmp/big.pcap" -T $mode >/dev/null
  read -r wall user sys rss < "$tmp/time"
  printf 'iwdump -T %-4s on %d frames (%s): wall %.2f s, cpu %.2f s, max RSS %d KiB\n' "$mode" "$nbig" "$(du -h "$tmp/big.pcap" | cut -f1)" "$wall" "$(echo "$user + $sys" | bc -l)" "$rss"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
