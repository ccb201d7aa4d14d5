#!/usr/bin/env bash
# Runs iwkit's native Go fuzz targets one after the other, each for a given
# time, with the minimiser capped, and keeps what they learn in the
# repository: the new interesting inputs a run adds to Go's fuzz cache are
# copied into the target's testdata/fuzz/<Target>/ corpus, those that
# added the most coverage first, under a size and count cap, so the committed corpora grow a little per
# campaign and stay small. A crash fails the script (after the remaining
# targets have run); Go itself writes the crashing input into
# testdata/fuzz/<Target>/, which is the regression seed to commit with the
# fix.
#
# Usage: ./fuzz.sh [-t TIME] [-m MINTIME] [-p WORKERS] [-n NEW] [-s BYTES]
#                  [-c MAX] [-l LOGDIR] [REGEX...]
#   -t  fuzz time per target (go test -fuzztime), default 1m
#   -m  minimiser time per input (-fuzzminimizetime), default 5s
#   -p  fuzz workers (-parallel), default 1
#   -n  at most NEW inputs kept per target per run, default 8
#   -s  inputs larger than BYTES are not kept, default 4096
#   -c  no input is kept once a corpus holds MAX files, default 64
#   -l  directory for the full logs, default a temporary one
#   REGEX  only targets whose "dir.FuzzName" (e.g. ulp.FuzzNVMe, pcap/bpf.FuzzCompile) matches one of them (grep -E);
#          default every `func Fuzz` in the repository
#
# Per target it prints the execs, the new interesting inputs and the
# coverage bits (GODEBUG=fuzzdebug=1: the baseline and the final total),
# and the result. Example, every ULP target for 10 minutes at low priority:
#   nice -n 19 ./fuzz.sh -t 10m 'ulp\.'
set -uo pipefail
cd "$(dirname "$0")"

time=1m mintime=5s workers=1 keep=8 maxsize=4096 maxfiles=64 logdir=
while getopts t:m:p:n:s:c:l: o; do
  case $o in
  t) time=$OPTARG ;; m) mintime=$OPTARG ;; p) workers=$OPTARG ;;
  n) keep=$OPTARG ;; s) maxsize=$OPTARG ;; c) maxfiles=$OPTARG ;;
  l) logdir=$OPTARG ;;
  *) sed -n '13,25p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ -n "$logdir" ] || logdir=$(mktemp -d "${TMPDIR:-/tmp}/iwkit-fuzz.XXXXXX")
mkdir -p "$logdir"

module=$(go list -m)
fuzzcache=$(go env GOCACHE)/fuzz

# Every target as "dir name", from the test sources.
targets=$(grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' . |
  sed -E 's|^\./(.*)/[^/]*_test\.go:func (Fuzz.*)$|\1 \2|' | sort -u)

failed=() summary=()
while read -r dir name; do
  [ -n "$dir" ] || continue
  if [ $# -gt 0 ]; then
    match=
    for re in "$@"; do
      if printf '%s\n' "$dir.$name" | grep -qE -- "$re"; then match=1; fi
    done
    [ -n "$match" ] || continue
  fi
  log="$logdir/${dir//\//_}.$name.log"
  cache="$fuzzcache/$module/$dir/$name"
  marker="$logdir/.start.${dir//\//_}.$name"
  touch "$marker"
  echo "== $dir $name ($time, minimiser $mintime, $workers worker(s)); log $log"
  GODEBUG=fuzzdebug=1 go test "./$dir" -run '^$' -fuzz "^$name\$" \
    -fuzztime "$time" -fuzzminimizetime "$mintime" -parallel "$workers" -v >"$log" 2>&1
  rc=$?

  # Keep the run's new interesting inputs: Go writes one file per input
  # that added coverage into its cache, and the debug log says how many
  # coverage bits each added ("new interesting input, id: <first 8 hex
  # digits of the file name>, ..., new bits: N"). Take those that added
  # the most, the smaller first among equals, under the caps.
  corpus="$dir/testdata/fuzz/$name"
  kept=0
  if [ -d "$cache" ]; then
    have=$(find "$corpus" -type f 2>/dev/null | wc -l)
    bits_of=$(sed -n 's/.*new interesting input, id: \([0-9a-f]*\),.*new bits: \([0-9]*\),.*/\1 \2/p' "$log")
    while read -r _ size file; do
      [ -n "$file" ] || continue
      [ "$kept" -lt "$keep" ] && [ "$have" -lt "$maxfiles" ] || break
      [ -e "$corpus/$(basename "$file")" ] && continue
      mkdir -p "$corpus"
      cp "$file" "$corpus/"
      kept=$((kept + 1)) have=$((have + 1))
    done < <(find "$cache" -type f -newer "$marker" -size -$((maxsize + 1))c -printf '%s %p\n' |
      while read -r size file; do
        id=$(basename "$file" | cut -c1-8)
        b=$(printf '%s\n' "$bits_of" | awk -v id="$id" '$1 == id { print $2; exit }')
        echo "${b:-0} $size $file"
      done | sort -k1,1nr -k2,2n)
  fi

  execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  interesting=$(grep -o 'new interesting: [0-9]* (total: [0-9]*)' "$log" | tail -1)
  base=$(grep -o 'initial coverage bits: [0-9]*' "$log" | tail -1 | awk '{print $NF}')
  bits=$(grep -o 'total bits: [0-9]*' "$log" | tail -1 | awk '{print $NF}')
  if [ $rc -eq 0 ]; then result=ok; else result=FAIL; failed+=("$dir $name"); fi
  line="$dir $name: execs ${execs:-0}, ${interesting:-new interesting: 0}, coverage bits ${base:-?} -> ${bits:-${base:-?}}, kept $kept, $result"
  echo "$line"
  summary+=("$line")
  if [ $rc -ne 0 ]; then
    grep -E -A30 -- '--- FAIL|panic:|Failing input written' "$log" | head -60
  fi
done <<<"$targets"

echo "== summary"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: ${#failed[@]} target(s) failed: ${failed[*]} (crashing inputs are in their testdata/fuzz/; logs in $logdir)" >&2
  exit 1
fi
