#!/usr/bin/env bash
# Opens the same generated one-million-frame capture in iwtui and in
# termshark (Debian's package; test.sh installs it), one after the other,
# each in its own tmux server, and prints what BENCHMARKS.md records:
# time to the first screen, time until the whole index (termshark: its
# PSML pass) is built, peak resident memory per frame, and the time a
# display filter takes over the whole capture. Usage:
#   bench/iwtui-vs-termshark.sh [CAPTURE...]
# Without CAPTURE it generates the two captures of issue 29: "dense",
# 1 000 000 frames each a whole 1 KiB RDMA Write (iwgen bulk-write over
# four connections, the receivers' pure ACKs left out by tcpdump), and
# "ACK-mixed", 1 000 000 frames of which every other one is an ACK.
# BenchmarkViews then opens each in-process and gives iwtui's peak RSS
# before any view and after opening every view (and filtering), against
# the budget of 64 octets a row + 70 MB.
#
# First screen: iwtui's list shows the first MPA Request; termshark's
# shows frame 1. Each tool starts in the pane of a tmux server that is
# already running (respawn-pane), so tmux's own start is not counted; the
# same run times `sh -c 'echo MPA Request'` the same way, the floor of
# what tmux and the polling add, and prints it. Index: iwtui's status line
# no longer says "indexing"; termshark's "tshark -T psml" child has exited.
# The index's own size (Index.Bytes, as allocated) comes from
# BenchmarkIndex on the same file, apart from the resident memory. Memory: iwtui's VmHWM;
# termshark's VmHWM plus the largest VmHWM its tshark children reached
# (sampled every 0.2 s while they ran). termshark's first start builds a
# field cache (tshark -G); a warm-up run on a small file does that first.
#
# Filter: the same display filter in both (iwtui's BenchmarkViews:
# ddp.tagged && rdmap.opcode == 0; termshark: $ts_filter, the same frames
# in Wireshark's names), each over the whole capture; see the termshark
# part below for how it is typed and timed. Knobs (environment):
# index_cap, the seconds to wait for termshark's first pass (default 900;
# 0: send the filter once its first screen shows, which stops that pass as
# the bar's Enter does), and filter_cap, the seconds to wait for its
# filtered pass (default 1200).
set -euo pipefail
cd "$(dirname "$0")/.."
index_cap=${index_cap:-900} filter_cap=${filter_cap:-1200}
ts_filter='iwarp_ddp.tagged_flag == 1 && iwarp_rdma.opcode == 0'
tmp=$(mktemp -d)
sock="$tmp/tmux.sock"
trap 'tmux -S "$sock" kill-server 2>/dev/null || true; rm -rf "$tmp"' EXIT
go build -o "$tmp/iwtui" ./cmd/iwtui
go build -o "$tmp/iwgen" ./cmd/iwgen
go test -c -o "$tmp/tui.test" ./tui
caps=("$@")
if [ ${#caps[@]} = 0 ]; then
  # 1 KiB Writes, a pure ACK after each (ack_every -1: at the end of
  # each burst, here every Write).
  gen() { # FILE WRITES-PER-CONNECTION
    "$tmp/iwgen" -s bulk-write -conns 4 -msgsize 1KiB -count "$2" -print yaml |
      sed 's/^  - mpa:/  - ack_every: -1\n    mpa:/' >"$tmp/s.yaml"
    "$tmp/iwgen" -q -scenario "$tmp/s.yaml" -w "$1"
  }
  gen "$tmp/all.pcap" 250000
  tcpdump -r "$tmp/all.pcap" -w "$tmp/dense.pcap" 'tcp[tcpflags] & (tcp-syn|tcp-fin|tcp-rst|tcp-push) != 0' 2>/dev/null
  rm "$tmp/all.pcap"
  gen "$tmp/ack-mixed.pcap" 125000
  caps=("$tmp/dense.pcap" "$tmp/ack-mixed.pcap")
fi
for cap in "${caps[@]}"; do
echo ""
echo "== $(basename "$cap")"
frames=$(capinfos -c -M "$cap" 2>/dev/null | awk '/Number of packets/ {print $NF}')
echo "capture: $frames frames, $(du -h "$cap" | cut -f1); load average $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"

now() { date +%s.%N; }
pane() { tmux -S "$sock" capture-pane -p -t b 2>/dev/null || true; }
# shows RE: whether the pane shows RE (not "pane | grep -q": with pipefail
# an early grep exit fails the pipe by SIGPIPE)
shows() { local s; s=$(pane); grep -q "$1" <<< "$s"; }
# ours: the pane's process and its descendants (other people's tshark
# or termshark on the machine are not counted)
ours() { local p q; p=$(tmux -S "$sock" display -p -t b '#{pane_pid}'); echo "$p"; for q in $(pgrep -P "$p" || true); do echo "$q"; pgrep -P "$q" || true; done; }
named() { local p; for p in $(ours); do grep -q "$1" "/proc/$p/cmdline" 2>/dev/null && echo "$p"; done; true; }
hwm() { local v; v=$(awk '/VmHWM/ {print $2}' "/proc/$1/status" 2>/dev/null); echo "${v:-0}"; }

# One tmux server for the whole run; each command is started in its pane.
tmux -S "$sock" has-session -t b 2>/dev/null || tmux -S "$sock" new-session -d -s b -x 200 -y 50 "sleep 3600"
spawn() { tmux -S "$sock" respawn-pane -k -t b "$1"; }
idle() { spawn "sleep 3600"; sleep 0.5; }

if [ -z "${warm:-}" ]; then
warm=1
# warm-up: termshark's first start builds its caches
spawn "termshark -r $(ls testdata/siw/*.pcap | head -1)"
for _ in $(seq 600); do shows ' 1  *0\.0' && break; sleep 0.1; done
idle

# the floor: tmux starting a command and the polling seeing its output
floor=""
for _ in 1 2 3; do
  start=$(now)
  spawn "sh -c 'echo MPA Request; sleep 3600'"
  until shows 'MPA Request'; do sleep 0.01; done
  floor="$floor $(printf '%.2f' "$(echo "$(now) - $start" | bc -l)")"
  idle
done
echo "tmux floor (echo):$floor s"
fi

# iwtui: three first screens, the last one left to build the whole index
firsts=""
for run in 1 2 3; do
  start=$(now)
  spawn "$tmp/iwtui $cap"
  until shows 'MPA Request'; do sleep 0.01; done
  first=$(echo "$(now) - $start" | bc -l)
  firsts="$firsts $(printf '%.2f' "$first")"
  [ "$run" = 3 ] || idle
done
echo "iwtui first screens:$firsts s"
until shows 'rows [0-9]*/[0-9]*  ? help'; do sleep 0.05; done
index=$(echo "$(now) - $start" | bc -l)
pid=$(named iwtui | head -1)
rss=$(hwm "$pid")
rows=$(pane | grep -o 'rows [0-9]*' | tail -1)
idle
printf 'iwtui:     first screen %6.2f s   index %7.2f s   peak RSS %5d MiB (%4.0f B/frame)   %s\n' "$first" "$index" $((rss / 1024)) "$(echo "$rss * 1024 / $frames" | bc -l)" "$rows"
iw_first=$first iw_index=$index iw_rss=$rss

# termshark
start=$(now)
spawn "termshark -r $cap"
peak=0 seen=0 first=""
while :; do
  if [ -z "$first" ] && shows ' 1  *0\.0'; then
    first=$(echo "$(now) - $start" | bc -l)
    [ "$index_cap" = 0 ] && break
  fi
  psml=$(for p in $(named tshark); do tr '\0' ' ' 2>/dev/null < "/proc/$p/cmdline" | grep -q -- '-T psml' && echo "$p"; done | head -1 || true)
  if [ -n "$psml" ]; then
    seen=1
    h=0; for p in $(named tshark); do h=$((h + $(hwm "$p"))); done
    [ "$h" -gt "$peak" ] && peak=$h
  elif [ "$seen" = 1 ] && [ -n "$first" ]; then
    break
  fi
  if [ -n "$first" ] && [ "$(echo "$(now) - $start > $index_cap" | bc -l)" = 1 ]; then echo "termshark: index not done after $index_cap s"; break; fi
  if [ "$(echo "$(now) - $start > 900" | bc -l)" = 1 ]; then echo "termshark: no first screen after 900 s"; break; fi
  sleep 0.2
done
index=$(echo "$(now) - $start" | bc -l)
[ "$index_cap" = 0 ] && index=nan
tpid=$(named termshark | head -1)
ts=$(hwm "$tpid")
trss=$((ts + peak))
# termshark's display filter: / focuses its filter bar; as the expression
# is typed termshark checks it with a tshark on an empty capture (its
# completion list open meanwhile), and an Enter before that check ends is
# lost, so Enter goes once no such tshark runs. Enter stops the pass
# running (if any) and starts a new one, "tshark -T psml ... -Y FILTER":
# its time is from Enter until that pass has exited (the filtered list
# whole), or until the filtered list shows its first row ("first row").
# filter_cap (seconds) bounds the wait: "> N s" then.
tmux -S "$sock" send-keys -t b '/' "$ts_filter"
for _ in $(seq 600); do
  sleep 0.5
  [ -z "$(for p in $(named tshark); do tr '\0' ' ' 2>/dev/null < "/proc/$p/cmdline" | grep -q -- 'empty.pcap' && echo "$p"; done)" ] && break
done
# The first Enter may only close the completion list: Enter again until
# the filtered pass starts (its time from the Enter that started it).
filtered() { for p in $(named tshark); do tr '\0' ' ' 2>/dev/null < "/proc/$p/cmdline" | grep -q -- '-T psml.*-Y' && echo "$p"; done | head -1 || true; }
for _ in 1 2 3 4 5; do
  sleep 0.5
  tmux -S "$sock" send-keys -t b Enter
  fstart=$(now)
  for _ in $(seq 30); do [ -n "$(filtered)" ] && break 2; sleep 0.1; done
done
seen=0 ffirst=""
while :; do
  psml=$(filtered)
  if [ -n "$psml" ]; then
    seen=1
    h=0; for p in $(named tshark); do h=$((h + $(hwm "$p"))); done
    [ "$h" -gt "$peak" ] && peak=$h
  elif [ "$seen" = 1 ]; then
    break
  fi
  if [ -z "$ffirst" ] && [ "$seen" = 1 ] && pane | grep -q '^ *[0-9][0-9]*  *[0-9]*\.[0-9]'; then ffirst=$(echo "$(now) - $fstart" | bc -l); fi
  if [ "$(echo "$(now) - $fstart > $filter_cap" | bc -l)" = 1 ]; then echo "termshark: filter not done after $filter_cap s"; break; fi
  sleep 0.2
done
tfilter=$(echo "$(now) - $fstart" | bc -l)
[ "$seen" = 1 ] && [ -z "$psml" ] || tfilter="> $filter_cap"
ts=$(hwm "$tpid")
trss=$((ts + peak))
idle
printf 'termshark: first screen %6.2f s   index %7s s   peak RSS %5d MiB (%4.0f B/frame; termshark %d MiB + tshark %d MiB)   filter %s s (first row %s s)\n' "$first" "$(printf '%.2f' "$index" 2>/dev/null || echo "$index")" $((trss / 1024)) "$(echo "$trss * 1024 / $frames" | bc -l)" $((ts / 1024)) $((peak / 1024)) "$(printf '%.2f' "$tfilter" 2>/dev/null || echo "$tfilter")" "$( [ -n "$ffirst" ] && printf '%.2f' "$ffirst" || echo none)"
(cd tui && IWTUI_BENCH_FILE="$cap" "$tmp/tui.test" -test.run XXX -test.bench 'Index$|Views$' -test.benchtime 1x) | grep -E '^Benchmark' | sed 's/^/iwtui in-process: /'
printf 'ratios (termshark / iwtui): first screen %.1fx, memory %.1fx\n' \
  "$(echo "$first / $iw_first" | bc -l)" "$(echo "$trss / $iw_rss" | bc -l)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
done
tmux -S "$sock" kill-server
