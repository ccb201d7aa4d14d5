#!/bin/sh
# iwsql start-up over a 10,000-file export (issue 26): one capture set
# exported, its six parts copied under 1,667 capture names (10,002 part
# files), then a one-set query with --captures, the same query with a
# WHERE over every set, and iwsql check.
#   sh bench/lake-startup.sh [iwdump] [iwsql]
set -e
IWDUMP=${1:-iwdump}
IWSQL=${2:-iwsql}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$IWDUMP" --export "$dir/seed" --name c00000 -r testdata/siw/crc_rping.pcap >/dev/null
for t in connections pdus operations findings commands captures; do
	src=$(ls "$dir"/seed/$t/capture=c00000/part-*.parquet)
	i=0
	while [ $i -lt 1667 ]; do
		n=$(printf 'c%05d' $i)
		mkdir -p "$dir/exp/$t/capture=$n"
		cp "$src" "$dir/exp/$t/capture=$n/"
		i=$((i + 1))
	done
done
echo "files: $(find "$dir/exp" -name 'part-*.parquet' | wc -l)"
run() { /usr/bin/time -f "%e s elapsed, %U s user, %M KiB max RSS: $*" "$@" >/dev/null; }
for i in 1 2 3; do
	run "$IWSQL" --captures c01234 "$dir/exp" "SELECT count(*) FROM pdus"
done
for i in 1 2 3; do
	run "$IWSQL" "$dir/exp" "SELECT count(*) FROM pdus WHERE capture = 'c01234'"
done
run "$IWSQL" check "$dir/exp"
