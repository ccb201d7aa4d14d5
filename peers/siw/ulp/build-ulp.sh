#!/bin/bash
# Derives the ULP guest image from the siw peer image (../build.sh): the same
# kernel and siw.ko, plus what runs storage protocols over iWARP inside the
# guest: nvmet + nvme-cli (NVMe-oF/RDMA), nfsd + the NFS client (RPC-over-RDMA),
# LIO + open-iscsi (iSER), ksmbd + cifs (SMB Direct). Built on demand only
# (test.sh does not); needs root. Idempotent, stamps compared by content.
#   SIW_PEER_CACHE  the base image (default /var/tmp/iwkit-siw-peer; built if missing)
#   SIW_ULP_CACHE   this image (default /var/tmp/iwkit-siw-ulp); boot it with
#                   SIW_PEER_CACHE=$SIW_ULP_CACHE ../run ...
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BASE=${SIW_PEER_CACHE:-/var/tmp/iwkit-siw-peer}
CACHE=${SIW_ULP_CACHE:-/var/tmp/iwkit-siw-ulp}
ROOT=$CACHE/rootfs
IMG=$CACHE/root.img
ULP_PKGS="nvme-cli nfs-kernel-server nfs-common rpcbind targetcli-fb open-iscsi python3-rtslib-fb cifs-utils ksmbd-tools"
say() { echo "[siw-peer ulp $(date +%T)] $*"; }
t0=$(date +%s)
[ "$(id -u)" = 0 ] || { echo "build-ulp.sh: must run as root" >&2; exit 1; }
SIW_PEER_CACHE=$BASE "$HERE/../build.sh"
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
stamp_ok() { [ -f "$CACHE/.iwkit-$1" ] && [ "$(cat "$CACHE/.iwkit-$1")" = "$2" ]; }
stamp_set() { echo "$2" > "$CACHE/.iwkit-$1"; }
in_root() { # mount /proc for the chroot while a command runs in it
  mount -t proc proc "$ROOT/proc"
  local rc=0
  chroot "$ROOT" "$@" || rc=$?
  umount "$ROOT/proc"
  return $rc
}

# 1. A copy of the base root with the ULP packages, redone when the base
#    image or this script changes. Services must not start in the chroot.
base_id=$(cat "$BASE/.iwkit-image")
pkgs_want="$base_id $(sha256sum < "$HERE/build-ulp.sh" | cut -c1-16)"
if ! stamp_ok pkgs "$pkgs_want" || [ ! -d "$ROOT" ]; then
  say "copying $BASE/rootfs and installing: $ULP_PKGS"
  rm -rf "$ROOT" "$CACHE"/.iwkit-*
  cp -a "$BASE/rootfs" "$ROOT"
  printf '#!/bin/sh\nexit 101\n' > "$ROOT/usr/sbin/policy-rc.d"; chmod 0755 "$ROOT/usr/sbin/policy-rc.d"
  in_root apt-get update -q > "$CACHE/apt.log" 2>&1
  DEBIAN_FRONTEND=noninteractive in_root apt-get install -y -q --no-install-recommends $ULP_PKGS \
    >> "$CACHE/apt.log" 2>&1 || { tail -n 30 "$CACHE/apt.log" >&2; exit 1; }
  chroot "$ROOT" apt-get clean
  rm -f "$ROOT/usr/sbin/policy-rc.d"
  stamp_set pkgs "$pkgs_want"
fi

# 2. SMB Direct: Debian's 6.1 builds cifs and ksmbd without
#    CONFIG_CIFS_SMB_DIRECT / CONFIG_SMB_SERVER_SMBDIRECT, so both are rebuilt
#    out of tree from the matching linux-source with them on. Debian 6.1's
#    ksmbd oopses in opinfo_put(NULL) on every CREATE without an oplock (a
#    stable backport lacking mainline's NULL check): the one source change
#    adds that check.
KVER=$(ls "$ROOT/lib/modules" | sort -V | tail -n 1)
UPD=$ROOT/lib/modules/$KVER/updates
if ! stamp_ok smb "$pkgs_want" || [ ! -f "$UPD/cifs.ko" ] || [ ! -f "$UPD/ksmbd.ko" ]; then
  SRCPKG=linux-source-${KVER%%.0-*}
  VER=$(chroot "$ROOT" dpkg-query -W -f='${Version}' "linux-image-$KVER")
  say "building cifs.ko and ksmbd.ko with SMB Direct from $SRCPKG=$VER"
  # --reinstall: the base image has the package installed (build.sh used
  # it for siw.ko) but removed its tarball afterwards.
  DEBIAN_FRONTEND=noninteractive chroot "$ROOT" apt-get install -y -q --reinstall --no-install-recommends \
    "$SRCPKG=$VER" >> "$CACHE/apt.log" 2>&1 || { tail -n 30 "$CACHE/apt.log" >&2; exit 1; }
  K=$ROOT/usr/src/ksrc
  rm -rf "$K" && mkdir -p "$K"
  tar -xJf "$ROOT/usr/src/$SRCPKG.tar.xz" -C "$K" --strip-components=1 \
    "$SRCPKG/fs/smb/" "$SRCPKG/fs/internal.h" "$SRCPKG/scripts/asn1_compiler.c" \
    "$SRCPKG/include/linux/asn1_ber_bytecode.h" "$SRCPKG/include/linux/asn1.h"
  rm -f "$ROOT/usr/src/$SRCPKG.tar.xz"
  perl -0pi -e 's/(void opinfo_put\(struct oplock_info \*opinfo\)\n\{\n)/$1\tif (!opinfo)\n\t\treturn;\n/' "$K/fs/smb/server/oplock.c"
  grep -A3 '^void opinfo_put' "$K/fs/smb/server/oplock.c" | grep -q 'if (!opinfo)' \
    || { echo "build-ulp.sh: the ksmbd opinfo_put patch did not apply" >&2; exit 1; }
  # ksmbd's ASN.1 tables need scripts/asn1_compiler, which linux-kbuild lacks
  chroot "$ROOT" gcc -O2 -I/usr/src/ksrc/include -o /usr/src/ksrc/asn1_compiler /usr/src/ksrc/scripts/asn1_compiler.c
  KB=$(readlink -f "$ROOT/usr/src/linux-headers-$KVER/scripts")
  cp "$K/asn1_compiler" "$KB/asn1_compiler"
  in_root make -s -j"$(nproc)" -C "/usr/src/linux-headers-$KVER" M=/usr/src/ksrc/fs/smb/server \
    CONFIG_SMB_SERVER=m CONFIG_SMB_SERVER_SMBDIRECT=y KCFLAGS=-DCONFIG_SMB_SERVER_SMBDIRECT=1 modules \
    > "$CACHE/smb-build.log" 2>&1 || { tail -n 30 "$CACHE/smb-build.log" >&2; exit 1; }
  in_root make -s -j"$(nproc)" -C "/usr/src/linux-headers-$KVER" M=/usr/src/ksrc/fs/smb/client \
    CONFIG_CIFS=m CONFIG_CIFS_SMB_DIRECT=y KCFLAGS=-DCONFIG_CIFS_SMB_DIRECT=1 modules \
    >> "$CACHE/smb-build.log" 2>&1 || { tail -n 30 "$CACHE/smb-build.log" >&2; exit 1; }
  mkdir -p "$UPD"
  strip --strip-debug -o "$UPD/ksmbd.ko" "$K/fs/smb/server/ksmbd.ko"
  strip --strip-debug -o "$UPD/cifs.ko" "$K/fs/smb/client/cifs.ko"
  rm -rf "$K" "$KB/asn1_compiler"
  chroot "$ROOT" depmod -a "$KVER"
  stamp_set smb "$pkgs_want"
fi

# 3. The recipes and the image; kernel and initramfs are the base's.
img_want() { echo "$pkgs_want $(cat "$HERE"/guest/* | sha256sum | cut -c1-16) $(stat -c %i:%Y:%s "$IMG" 2>/dev/null)"; }
if ! stamp_ok image "$(img_want)"; then
  say "writing $IMG"
  install -m 0755 "$HERE"/guest/* "$ROOT/usr/local/bin/"
  size_mb=$(( $(du -sm "$ROOT" | cut -f1) + 768 ))
  rm -f "$IMG.tmp"
  mkfs.ext4 -q -F -L siwroot -E root_owner=0:0 -d "$ROOT" "$IMG.tmp" "${size_mb}M"
  mv "$IMG.tmp" "$IMG"
  cp "$BASE/vmlinuz" "$BASE/initrd.img" "$BASE/.accel" "$CACHE/"
  stamp_set image "$(img_want)"
fi
say "ready in $(( $(date +%s) - t0 ))s: $CACHE"
