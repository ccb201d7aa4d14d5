#!/bin/bash
# In the guest: capture-suite.sh under several siw parameter sets in one
# boot. siw reads its parameters (/sys/module/siw/parameters, 0644, made
# writable by build.sh) at connect and accept time.
set -u
setp() { for kv in "$@"; do echo "${kv#*=}" > "/sys/module/siw/parameters/${kv%%=*}"; done; }
base() { setp mpa_version=2 mpa_crc_required=N mpa_crc_strict=N peer_to_peer=N try_gso=N; ip link set lo mtu 65536; }
variant() { # PREFIX "PARAM=V ..." SIZES TEST...
  local prefix=$1 params=$2 sizes=$3; shift 3
  base
  # shellcheck disable=SC2086
  setp $params
  SIZES=$sizes capture-suite.sh "$prefix" "$@"
}
variant v1_     "mpa_version=1"                     131072 rping ib_write_bw term-write-badstag
variant crc_    "mpa_crc_required=Y"                131072 rping ib_write_bw ib_read_bw term-read-oob
variant v1crc_  "mpa_version=1 mpa_crc_required=Y"  131072 rping ib_send_bw
variant p2p_    "peer_to_peer=Y"                    4096   rping ib_write_lat
variant p2pcrc_ "peer_to_peer=Y mpa_crc_required=Y" 4096   rping
variant gso_    "try_gso=Y"                         131072 rping ib_write_bw
variant v0_     "mpa_version=0"                     "4096 131072" rping
base; ip link set lo mtu 1500
SIZES=131072 capture-suite.sh mtu1500_ ib_send_bw ib_write_bw ib_read_bw
setp mpa_crc_required=Y
SIZES=131072 capture-suite.sh mtu1500crc_ ib_send_bw ib_write_bw ib_read_bw term-write-oob
base
