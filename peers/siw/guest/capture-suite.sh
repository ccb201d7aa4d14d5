#!/bin/bash
# In the guest: capture iWARP traffic between two local siw endpoints with
# tcpdump on lo, one test per pcap: $OUT/<PREFIX><test>.pcap plus a .info
# (siw parameters, lo MTU, the exact commands and their exit codes).
#   capture-suite.sh PREFIX TEST...
# TEST: rping, ib_{send,write,read}_{bw,lat}, term-MODE (a siw-term mode:
#       ok write-badstag write-oob read-badstag read-oob send-norecv)
# SIZES (default "4096 131072") and ITERS (default 20) set perftest's -s/-n.
set -u
PREFIX=$1; shift
SIZES=${SIZES:-4096 131072}
ITERS=${ITERS:-20}
# The device is the first rdma link, the address its netdev's IPv4 address.
DEV=${DEV:-$(rdma link show | awk '{split($2, a, "/"); print a[1]; exit}')}
NETDEV=$(rdma link show | awk -v d="$DEV/" 'index($2, d) == 1 { for (i = 1; i <= NF; i++) if ($i == "netdev") print $(i + 1) }')
ADDR=${ADDR:-$(ip -4 -o addr show dev "$NETDEV" | awk '{sub("/.*", "", $4); print $4; exit}')}
echo "capture-suite: dev=$DEV netdev=$NETDEV addr=$ADDR"
port=7170
params() { for p in /sys/module/siw/parameters/*; do printf '%s=%s ' "${p##*/}" "$(cat "$p")"; done; }

# tcpdump writes to tmpfs with a large buffer: under TCG a small one drops.
start_capture() { # NAME PORT
  tcpdump --immediate-mode -B 262144 -Z root -i lo -s 0 -U -w "/tmp/$1.pcap" "tcp port $2" 2> "/tmp/$1.tcpdump" &
  TCPDUMP=$!
  for _ in $(seq 50); do grep -q listening "/tmp/$1.tcpdump" && return; sleep 0.1; done
}
stop_capture() { # NAME
  sleep 1
  kill -INT $TCPDUMP; wait $TCPDUMP 2>/dev/null
  cp "/tmp/$1.pcap" "$OUT/"
  tail -n 3 "/tmp/$1.tcpdump" | sed "s/^/[$1 tcpdump] /"
}
pair() { # NAME SERVER-CMD CLIENT-CMD
  local name=$1 srv=$2 cli=$3 src crc
  echo "=== $name"; echo "siw params: $(params)"; echo "server: $srv"; echo "client: $cli"
  start_capture "$name" "$port"
  timeout 60 bash -c "$srv" > "/tmp/$name.srv" 2>&1 & local sp=$!
  sleep 1
  timeout 60 bash -c "$cli" > "/tmp/$name.cli" 2>&1; crc=$?
  wait $sp; src=$?
  stop_capture "$name"
  echo "--- server rc=$src"; tail -n 25 "/tmp/$name.srv"
  echo "--- client rc=$crc"; tail -n 25 "/tmp/$name.cli"
  printf '%s\n' "name: $name" "siw_params: $(params)" "lo_mtu: $(cat /sys/class/net/lo/mtu)" \
    "server_cmd: $srv" "client_cmd: $cli" "server_rc: $src" "client_rc: $crc" > "$OUT/$name.info"
  port=$((port + 1))
}
for t in "$@"; do
  case $t in
  rping)
    pair "${PREFIX}rping" "rping -s -v -a $ADDR -p $port -C 5 -S 100" "rping -c -v -a $ADDR -p $port -C 5 -S 100" ;;
  ib_*_bw | ib_*_lat)
    for s in $SIZES; do
      pair "${PREFIX}${t}_$s" "$t -R -d $DEV -p $port -n $ITERS -s $s" "$t -R -d $DEV -p $port -n $ITERS -s $s $ADDR"
    done ;;
  term-*)
    m=${t#term-}
    pair "${PREFIX}term_${m//-/_}" "siw-term server $port $ADDR" "siw-term client $ADDR $port $m" ;;
  *) echo "capture-suite: unknown test $t" ;;
  esac
done
dmesg | grep -i siw | tail -n 20 > "$OUT/${PREFIX}dmesg-siw.txt"
