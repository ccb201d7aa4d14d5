#!/usr/bin/env bash
# Times iwdump against tshark on the same generated capture, in one run, and
# prints the ratios that BENCHMARKS.md records. Usage:
#   bench/iwdump-vs-tshark.sh [FRAMES_FOR_TSHARK] [FRAMES_FOR_MEMORY]
# Defaults: 200000 frames for the side-by-side runs, 1000000 for iwdump's
# resident-memory check. Needs tshark (test.sh installs it) and GNU time.
set -euo pipefail
cd "$(dirname "$0")/.."
small=${1:-200000}
big=${2:-1000000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/iwdump" ./cmd/iwdump
go build -o "$tmp/iwgen" ./cmd/iwgen
# bulk-write at 64 KiB: 1448-octet FPDUs with CRC, one per segment, plus ACKs
# (about 1.5 frames per FPDU). -count is messages: ~67 frames each.
"$tmp/iwgen" -q -s bulk-write -msgsize 64KiB -count $((small / 67)) -w "$tmp/small.pcap"
"$tmp/iwgen" -q -s bulk-write -msgsize 64KiB -count $((big / 67)) -w "$tmp/big.pcap"
frames() { capinfos -c -M "$1" 2>/dev/null | awk '/Number of packets/ {print $NF}'; }
nsmall=$(frames "$tmp/small.pcap"); nbig=$(frames "$tmp/big.pcap")
# Ratios use CPU time (user + system): on a shared 2-core machine wall time
# measures the neighbours as much as the program. Wall time is printed too.
t() { # label, command...: prints CPU seconds; logs wall, CPU, rate, max RSS (KiB)
  local label=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  read -r wall user sys rss < "$tmp/time"
  cpu=$(echo "$user + $sys" | bc -l)
  printf '%-28s wall %7.2f s  cpu %7.2f s  %9.0f frames/cpu-s  max RSS %7d KiB\n' "$label" "$wall" "$cpu" "$(echo "$nsmall / $cpu" | bc -l)" "$rss" >&2
  echo "$cpu"
}
echo "capture: $nsmall frames ($(du -h "$tmp/small.pcap" | cut -f1)); load average: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
fields=(-e frame.number -e iwarp_mpa.ulpdulength -e iwarp_ddp.tagged_flag -e iwarp_ddp.last_flag -e iwarp_ddp.stag -e iwarp_ddp.tagged_offset
        -e iwarp_ddp.qn -e iwarp_ddp.msn -e iwarp_ddp.mo -e iwarp_rdma.opcode -e iwarp_mpa.crc_check)
ts_text=$(t "tshark (default text)" tshark -n -r "$tmp/small.pcap")
iw_text=$(t "iwdump (default text)" "$tmp/iwdump" -r "$tmp/small.pcap")
ts_fields=$(t "tshark -T fields" tshark -n -r "$tmp/small.pcap" -T fields "${fields[@]}")
iw_json=$(t "iwdump -T json (NDJSON)" "$tmp/iwdump" -r "$tmp/small.pcap" -T json)
printf 'ratio text:   %.1fx\n' "$(echo "$ts_text / $iw_text" | bc -l)"
printf 'ratio NDJSON: %.1fx (vs tshark -T fields)\n' "$(echo "$ts_fields / $iw_json" | bc -l)"
for mode in text json; do
  /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$tmp/iwdump" -r "$tmp/big.pcap" -T $mode >/dev/null
  read -r wall user sys rss < "$tmp/time"
  printf 'iwdump -T %-4s on %d frames (%s): wall %.2f s, cpu %.2f s, max RSS %d KiB\n' "$mode" "$nbig" "$(du -h "$tmp/big.pcap" | cut -f1)" "$wall" "$(echo "$user + $sys" | bc -l)" "$rss"
done
