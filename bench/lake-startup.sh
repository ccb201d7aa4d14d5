#!/bin/sh
# iwsql start-up over a 10,000-file export (issue 26): one capture set
# exported, its parts (one per table) copied under as many capture names
# as make 10,000 part files (hard links), then a one-set query with --captures, the same
# query with a WHERE over every set (also with OLD_IWSQL, an iwsql from
# before --captures, when given), and iwsql check.
#   sh bench/lake-startup.sh [iwdump] [iwsql] [OLD_IWSQL]
# EVERY_RUNS="1" runs the every-set query once (default 3 times).
set -e
IWDUMP=${1:-iwdump}
IWSQL=${2:-iwsql}
OLD=${3:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$IWDUMP" --export "$dir/seed" --name c00000 -r testdata/siw/crc_rping.pcap >/dev/null
# The links are made by one python3 process: a mkdir and an ln per file
# took most of an hour on the loaded 2-core machine.
python3 - "$dir" <<'PY'
import glob, os, sys
d = sys.argv[1]
tables = sorted(os.listdir(os.path.join(d, "seed")))
names = -(-10000 // len(tables))
for t in tables:
    src = glob.glob(os.path.join(d, "seed", t, "capture=c00000", "part-*.parquet"))[0]
    for i in range(names):
        to = os.path.join(d, "exp", t, "capture=c%05d" % i)
        os.makedirs(to)
        os.link(src, os.path.join(to, os.path.basename(src)))
PY
echo "files: $(find "$dir/exp" -name 'part-*.parquet' | wc -l)"
run() { /usr/bin/time -f "%e s elapsed, %U s user, %S s sys, %M KiB max RSS: $*" "$@" >/dev/null; }
for i in 1 2 3; do
	run "$IWSQL" --captures c01234 "$dir/exp" "SELECT count(*) FROM pdus"
done
for i in 1 2 3; do
	run "$IWSQL" --captures 'c012*' "$dir/exp" "SELECT source, hist_quantile(lower_ns, count, max_ns, 0.99) FROM latency_hist GROUP BY source"
done
for i in ${EVERY_RUNS:-1 2 3}; do
	run "$IWSQL" "$dir/exp" "SELECT count(*) FROM pdus WHERE capture = 'c01234'"
done
if [ -n "$OLD" ]; then
	run "$OLD" "$dir/exp" "SELECT count(*) FROM pdus WHERE capture = 'c01234'"
fi
run "$IWSQL" check "$dir/exp"
