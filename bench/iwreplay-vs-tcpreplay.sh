#!/usr/bin/env bash
# Stateless replay's highest drop-free rate, iwreplay beside tcpreplay
# (Debian's; test.sh installs it), on the same veth pair whose far end is in
# a network namespace made here. Each point replays a siw capture (234
# frames of up to 1514 octets, looped to last about a second) with --pps R
# and --preload; it is drop-free when the far end's receive counter grew by
# exactly the packets the tool reports sent, and it holds its rate when the
# tool's measured rate is within 5% of R (best of up to 3 tries, the
# machine being shared). Needs root. Usage:
#   bench/iwreplay-vs-tcpreplay.sh [RATES...]
set -euo pipefail
cd "$(dirname "$0")/.."
rates=("$@")
[ ${#rates[@]} -gt 0 ] || rates=(20000 50000 75000 100000 150000 200000 300000 400000)
file=testdata/siw/mtu1500_ib_write_bw_32768.pcap
frames=234
tmp=$(mktemp -d)
id=$$
ns=iwkit-bench-$id host=ibra$id far=ibrb$id
cleanup() {
  ip link del "$host" 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/iwreplay" ./cmd/iwreplay
ip netns add "$ns"
ip link add "$host" type veth peer name "$far"
echo 1 > "/proc/sys/net/ipv6/conf/$host/disable_ipv6"
ip link set "$far" netns "$ns"
ip netns exec "$ns" sh -c "echo 1 > /proc/sys/net/ipv6/conf/$far/disable_ipv6; ip link set $far up"
ip link set "$host" up
rx() { ip netns exec "$ns" cat "/sys/class/net/$far/statistics/rx_packets"; }

# point TOOL RATE: prints "sent rx pps"
point() {
  local tool=$1 rate=$2 loop before after args
  before=$(rx)
  if [ "$rate" = top ]; then args=(--topspeed); loop=2000; else args=(--pps "$rate"); loop=$(( (rate + frames - 1) / frames )); fi
  if [ "$tool" = tcpreplay ]; then
    tcpreplay -i "$host" -K "${args[@]}" --loop "$loop" "$file" > "$tmp/out" 2>&1 || true
  else
    "$tmp/iwreplay" -i "$host" -K "${args[@]}" --loop "$loop" "$file" > "$tmp/out" 2>&1 || true
  fi
  sleep 0.2
  after=$(rx)
  local sent pps
  sent=$(awk '/^Actual:/ {print $2}' "$tmp/out")
  pps=$(awk '/^Rated:/ {print $(NF-1)}' "$tmp/out")
  echo "$sent $((after - before)) $pps"
}

echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  load: $(cut -d' ' -f1-3 /proc/loadavg)  tcpreplay: $(tcpreplay --version 2>&1 | head -1)"
echo "| tool | asked pps | sent | arrived | measured pps | drop-free and held |"
echo "|---|---|---|---|---|---|"
declare -A best
for tool in iwreplay tcpreplay; do
  best[$tool]=0
  for r in "${rates[@]}" top; do
    # The machine is shared: a point gets up to 3 tries (both tools alike).
    for try in 1 2 3; do
      read -r sent got pps < <(point "$tool" "$r")
      ok=no
      if [ "$sent" = "$got" ]; then
        if [ "$r" = top ] || python3 -c "import sys; sys.exit(0 if $pps >= 0.95*$r else 1)"; then ok=yes; fi
      fi
      [ $ok = yes ] && break
    done
    echo "| $tool | $r | $sent | $got | $pps | $ok |"
    if [ $ok = yes ] && python3 -c "import sys; sys.exit(0 if $pps > ${best[$tool]} else 1)"; then best[$tool]=$pps; fi
  done
done
echo
echo "highest drop-free rate: iwreplay ${best[iwreplay]} pps, tcpreplay ${best[tcpreplay]} pps, ratio $(python3 -c "print(round(${best[iwreplay]}/${best[tcpreplay]}, 2))")"
