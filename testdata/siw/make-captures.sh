#!/bin/bash
# Regenerate the soft-iWARP (Linux siw) captures in testdata/siw/ with the
# repository's VM peer, peers/siw (see "The siw VM peer" in README.md).
#
#   sudo testdata/siw/make-captures.sh [DEST]     # run from anywhere; needs root
#
# DEST defaults to testdata/siw next to this script. Raw output of every VM
# run (all pcaps, .info, console.log, dmesg) stays in $WORK (default
# /tmp/siwcaps), one sub-directory per run. Runs are sequential on purpose:
# under TCG (no usable KVM) one VM already keeps 2 cores busy.
#
# Env: WORK, and the peer's own SIW_PEER_CACHE (default
# /var/tmp/iwkit-siw-peer; outside the repository), SIW_PEER_SMP,
# SIW_PEER_ACCEL, SIW_PEER_MIRROR.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
PEER=$REPO/peers/siw
DEST=${1:-$HERE}
WORK=${WORK:-/tmp/siwcaps}

"$PEER/build.sh"

cap() { # NAME TIMEOUT run-args... : one VM boot, output in $WORK/NAME
  local name=$1 t=$2 rc=0; shift 2
  rm -rf "${WORK:?}/$name"
  echo "== $name: run -t $t -o $WORK/$name $*"
  "$PEER/run" -t "$t" -o "$WORK/$name" "$@" > "$WORK/$name.log" 2>&1 || rc=$?
  tail -n 1 "$WORK/$name.log"
  [ $rc = 0 ] || { echo "run $name failed (rc=$rc), see $WORK/$name/console.log" >&2; exit 1; }
}
mkdir -p "$WORK"

# 1. defaults: MPA v2, CRC off, no P2P, lo MTU 65536
cap default 300 -e 'SIZES="4096"' -e 'ITERS=20' \
  'capture-suite.sh "" rping ib_write_bw ib_read_bw ib_send_bw'
# 2. Terminates (siw-term); slow because the tools wait for completions that never come (alarm 15 s)
cap term 600 \
  'capture-suite.sh "" term-write-badstag term-write-oob term-read-badstag term-read-oob term-send-norecv term-ok'
# 3. CRC negotiated
cap crc 300 -e 'SIW_PARAMS="mpa_crc_required=1"' -e 'SIZES="4096"' -e 'ITERS=10' \
  'capture-suite.sh crc_ rping ib_read_bw'
# 4. MPA v2 peer-to-peer (RTR), without and with CRC (params are writable at run time)
cap p2p 300 -e 'SIW_PARAMS="peer_to_peer=1"' \
  'capture-suite.sh p2p_ rping; echo Y > /sys/module/siw/parameters/mpa_crc_required; capture-suite.sh p2pcrc_ rping'
# 5. MPA v1 (rping fails with v1, perftest works)
cap v1 300 -e 'SIW_PARAMS="mpa_version=1"' -e 'SIZES="4096"' -e 'ITERS=10' \
  'capture-suite.sh v1_ rping ib_write_bw'
# 6. lo MTU 1500 (MSS 1448): multi-FPDU messages; then try_gso=Y: FPDUs larger than the MSS
#    (perftest needs -n >= 5; 65536 x 5 would be ~370 KB per file, hence 32768)
cap mtu1500 300 -e 'SIZES="32768"' -e 'ITERS=5' \
  'ip link set lo mtu 1500; capture-suite.sh mtu1500_ ib_write_bw ib_read_bw ib_send_bw; echo Y > /sys/module/siw/parameters/try_gso; capture-suite.sh mtu1500gso_ ib_write_bw'

FILES="default/rping default/ib_write_bw_4096 default/ib_read_bw_4096 default/ib_send_bw_4096
term/term_write_badstag term/term_write_oob term/term_read_badstag term/term_read_oob
term/term_send_norecv term/term_ok crc/crc_rping crc/crc_ib_read_bw_4096 p2p/p2p_rping
p2p/p2pcrc_rping v1/v1_rping v1/v1_ib_write_bw_4096 mtu1500/mtu1500_ib_write_bw_32768
mtu1500/mtu1500_ib_read_bw_32768 mtu1500/mtu1500_ib_send_bw_32768 mtu1500/mtu1500gso_ib_write_bw_32768"
mkdir -p "$DEST"
for f in $FILES; do
  [ -s "$WORK/$f.pcap" ] || { echo "missing $WORK/$f.pcap" >&2; exit 1; }
  cp "$WORK/$f.pcap" "$WORK/$f.info" "$DEST/"
done
ls -l "$DEST"
# Opcode summary per file (Wireshark's Tibia dissector claims tcp/7171-7172):
#   tshark -n --disable-protocol tibia -r F -Y iwarp_rdma -T fields -e iwarp_rdma.opcode | sort | uniq -c
# The expected tshark outputs follow the captures they describe.
if [ "$DEST" = "$HERE" ] && command -v tshark >/dev/null; then "$HERE/make-expected.sh"; fi
