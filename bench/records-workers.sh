#!/usr/bin/env bash
# The export and the TUI index on 1 and 2 workers (issue 25 item 1: both
# consume analyze.Run, whose records come in capture order from the
# flow-sharded engine), side by side in rounds. Usage:
#   bench/records-workers.sh [FRAMES]
#   BASE=REV bench/records-workers.sh [FRAMES]   # also the tree at REV, interleaved
#   KINDS="bulk small rping" bench/records-workers.sh   # the captures (default: all three)
# About FRAMES frames (default 1 000 000) of each kind, four connections:
#   bulk:  64 KiB RDMA Writes as 1448-octet FPDUs with CRC (iwgen
#          bulk-write -conns 4, as bench/iwdump-workers.sh; ~1 GB);
#   small: 512-octet RDMA Writes, one FPDU and one pure ACK each (2x FRAMES
#          frames), where the analysis of a frame costs most per octet;
#   rping: rping's exchange (advertisement Sends, Reads, Writes).
# Export: iwdump --export DIR -r FILE --workers N;
# index: tui's BenchmarkIndexWorkers on the same file (Session.Open with
# Config.Workers N, to the whole index). Each round runs 1 then 2 workers
# (with BASE: the base's, then this tree's); RUNS rounds (default 3).
# Kept: best wall and least CPU (user + system).
# On a loaded machine the wall clock of a sharded run suffers most (every
# chunk is handed between goroutines): read the load average printed.
set -euo pipefail
cd "$(dirname "$0")/.."
frames=${1:-1000000}
runs=${RUNS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
build() { # DIR SUFFIX
  (cd "$1" && CGO_ENABLED=0 go build -o "$tmp/iwdump$2" ./cmd/iwdump && go test -c -o "$tmp/tui$2.test" ./tui)
}
trees=("")
build . ""
if [ -n "${BASE:-}" ]; then
  mkdir "$tmp/base"
  git archive "$BASE" | tar -x -C "$tmp/base"
  build "$tmp/base" ".base"
  trees=(".base" "")
fi
go build -o "$tmp/iwgen" ./cmd/iwgen
kinds=(${KINDS:-bulk small rping})
for k in "${kinds[@]}"; do
  case $k in
  bulk) "$tmp/iwgen" -q -s bulk-write -msgsize 64KiB -conns 4 -count $((frames / 67 / 4)) -w "$tmp/$k.pcap" ;;
  small) "$tmp/iwgen" -q -s bulk-write -msgsize 512 -conns 4 -count $((frames / 4)) -w "$tmp/$k.pcap" ;;
  rping) "$tmp/iwgen" -q -s rping -conns 4 -count $((frames / 32)) -w "$tmp/$k.pcap" ;;
  *) echo "unknown kind $k" >&2; exit 2 ;;
  esac
done
echo "$(date -u); load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
declare -A wall=() cpu=()
keep() { # KEY WALL CPU
  if [ -z "${wall[$1]:-}" ] || (($(echo "$2 < ${wall[$1]}" | bc -l))); then wall[$1]=$2; fi
  if [ -z "${cpu[$1]:-}" ] || (($(echo "$3 < ${cpu[$1]}" | bc -l))); then cpu[$1]=$3; fi
}
for _ in $(seq "$runs"); do
  for c in "${kinds[@]}"; do
    for t in "${trees[@]}"; do
      for w in 1 2; do
        rm -rf "$tmp/x"
        /usr/bin/time -f "%e %U %S" -o "$tmp/time" "$tmp/iwdump$t" --export "$tmp/x" -r "$tmp/$c.pcap" --workers "$w" >/dev/null 2>&1
        read -r e u s <"$tmp/time"
        keep "$c export$t$w" "$e" "$(echo "$u + $s" | bc -l)"
        line=$(cd tui && IWTUI_BENCH_FILE="$tmp/$c.pcap" "$tmp/tui$t.test" -test.run X -test.bench "IndexWorkers/workers=$w\$" -test.benchtime 1x | grep '^BenchmarkIndexWorkers')
        e=$(echo "$line" | awk '{print $3 / 1e9}')
        u=$(echo "$line" | awk '{print $5 / 1e3}')
        keep "$c index$t$w" "$e" "$u"
      done
    done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| capture | what | tree | workers | wall best (s) | CPU least (s) | speed-up (wall) |"
echo "|---|---|---|---|---|---|---|"
for c in "${kinds[@]}"; do
  for k in export index; do
    for t in "${trees[@]}"; do
      for w in 1 2; do
        label=this
        [ -z "$t" ] || label="base ($BASE)"
        echo "| $c | $k | $label | $w | ${wall[$c $k$t$w]} | ${cpu[$c $k$t$w]} | $(echo "scale=2; ${wall[$c $k${t}1]} / ${wall[$c $k$t$w]}" | bc -l) |"
      done
    done
  done
done
