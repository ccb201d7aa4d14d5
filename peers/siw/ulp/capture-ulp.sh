#!/bin/bash
# Runs the ULP capture recipes, one VM boot each; NAME.pcap, NAME.info
# (commands, exit codes, siw parameters, data check), NAME.dmesg and
# NAME.console.log land in OUTDIR.
#   capture-ulp.sh OUTDIR [NAME...]     (default: all)
# Needs build-ulp.sh's image (SIW_ULP_CACHE, default /var/tmp/iwkit-siw-ulp).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export SIW_PEER_CACHE=${SIW_ULP_CACHE:-/var/tmp/iwkit-siw-ulp}
OUT=${1:?usage: capture-ulp.sh OUTDIR [NAME...]}; shift
mkdir -p "$OUT"
# NAME -> guest command and siw module parameters (crc_ = mpa_crc_required)
declare -A CMD=(
  [nvmeof]="ulp-nvme.sh nvmeof"             [crc_nvmeof]="ulp-nvme.sh crc_nvmeof"
  [nfs3_rdma]="ulp-nfs.sh nfs3_rdma 3"      [nfs42_rdma]="ulp-nfs.sh nfs42_rdma 4.2"
  [crc_nfs42_rdma]="ulp-nfs.sh crc_nfs42_rdma 4.2"
  [iser]="ulp-iser.sh iser"                 [crc_iser]="ulp-iser.sh crc_iser"
  [smb_direct]="ulp-smb.sh smb_direct"      [crc_smb_direct]="ulp-smb.sh crc_smb_direct")
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(nvmeof crc_nvmeof nfs3_rdma nfs42_rdma crc_nfs42_rdma iser crc_iser smb_direct crc_smb_direct)
for n in "${names[@]}"; do
  [ -n "${CMD[$n]:-}" ] || { echo "capture-ulp.sh: unknown recipe $n" >&2; exit 2; }
  params=""; [ "${n#crc_}" != "$n" ] && params="mpa_crc_required=1"
  d=$(mktemp -d "$OUT/.run-$n.XXXX")
  "$HERE/../run" -t 240 -o "$d" -e "SIW_PARAMS=\"$params\"" "${CMD[$n]}" > "$d/run.log" 2>&1; rc=$?
  { echo "host_cmd: SIW_PEER_CACHE=$SIW_PEER_CACHE run -t 240 -e 'SIW_PARAMS=\"$params\"' '${CMD[$n]}'"
    echo "guest_cmd_rc: $rc"; cat "$d/$n.info" 2>/dev/null; } > "$OUT/$n.info"
  mv "$d/$n.pcap" "$d/$n.dmesg" "$OUT/" 2>/dev/null
  mv "$d/console.log" "$OUT/$n.console.log" 2>/dev/null
  rm -rf "$d"
  echo "$n rc=$rc"
done
