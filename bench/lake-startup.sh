#!/bin/sh
# iwsql start-up over a 10,000-file export (issue 26): one capture set
# exported, its six parts copied under 1,667 capture names (10,002 part
# files, hard links), then a one-set query with --captures, the same
# query with a WHERE over every set (also with OLD_IWSQL, an iwsql from
# before --captures, when given), and iwsql check.
#   sh bench/lake-startup.sh [iwdump] [iwsql] [OLD_IWSQL]
set -e
IWDUMP=${1:-iwdump}
IWSQL=${2:-iwsql}
OLD=${3:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$IWDUMP" --export "$dir/seed" --name c00000 -r testdata/siw/crc_rping.pcap >/dev/null
for t in connections pdus operations findings commands captures; do
	src=$(ls "$dir"/seed/$t/capture=c00000/part-*.parquet)
	i=0
	while [ $i -lt 1667 ]; do
		n=$(printf 'c%05d' $i)
		mkdir -p "$dir/exp/$t/capture=$n"
		ln "$src" "$dir/exp/$t/capture=$n/"
		i=$((i + 1))
	done
done
echo "files: $(find "$dir/exp" -name 'part-*.parquet' | wc -l)"
run() { /usr/bin/time -f "%e s elapsed, %U s user, %S s sys, %M KiB max RSS: $*" "$@" >/dev/null; }
for i in 1 2 3; do
	run "$IWSQL" --captures c01234 "$dir/exp" "SELECT count(*) FROM pdus"
done
for i in 1 2 3; do
	run "$IWSQL" "$dir/exp" "SELECT count(*) FROM pdus WHERE capture = 'c01234'"
done
if [ -n "$OLD" ]; then
	run "$OLD" "$dir/exp" "SELECT count(*) FROM pdus WHERE capture = 'c01234'"
fi
run "$IWSQL" check "$dir/exp"
