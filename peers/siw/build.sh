#!/bin/bash
# Builds (or refreshes) the image of the siw VM peer: a Debian guest whose
# kernel runs Linux soft-iWARP (siw), with rdma-core, perftest and our
# guest tools. Idempotent: every stage is redone only when what it depends on
# changed, compared by content (a fresh git clone has new mtimes but the same
# content, and must not rebuild). Needs root and Debian's archive; installs
# the host packages it needs (qemu, debootstrap, ...) with apt-get.
#
#   SIW_PEER_CACHE   image cache, outside the repository (default /var/tmp/iwkit-siw-peer)
#   SIW_PEER_MIRROR  Debian mirror for debootstrap (default: the first Debian
#                    URI in this machine's apt sources, either format)
#   SIW_PEER_SUITE   Debian suite of the guest (default bookworm)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${SIW_PEER_CACHE:-/var/tmp/iwkit-siw-peer}
SUITE=${SIW_PEER_SUITE:-bookworm}
ROOT=$CACHE/rootfs
IMG=$CACHE/root.img
GUEST_PKGS=linux-image-amd64,linux-headers-amd64,rdma-core,ibverbs-utils,ibverbs-providers,rdmacm-utils,perftest,tcpdump,iproute2,kmod,procps,gcc,make,libc6-dev,libibverbs-dev,librdmacm-dev,netcat-openbsd,xz-utils,bc,initramfs-tools
say() { echo "[siw-peer build $(date +%T)] $*"; }
t0=$(date +%s)
[ "$(id -u)" = 0 ] || { echo "build.sh: must run as root (debootstrap, chroot, apt-get)" >&2; exit 1; }
command -v apt-get >/dev/null || { echo "build.sh: apt-get not found (needs a Debian host)" >&2; exit 1; }
mkdir -p "$CACHE"

# One build at a time per cache: tests of several packages (and test.sh)
# may call this at once.
exec 9>"$CACHE/.lock"
flock 9

# The mirror this machine's apt already uses. Both the one-line format
# (sources.list) and deb822 (*.sources) are read; either may be absent, so
# no grep may end the script under pipefail.
apt_mirror() {
  { grep -hsE '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' || true
    grep -hsE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{print $2}' || true
  } | { grep -v -- '-security' || true; } | head -n 1
}

# 1. Host tools.
need=()
for p in qemu-system-x86_64:qemu-system-x86 debootstrap:debootstrap mkfs.ext4:e2fsprogs \
         setpriv:util-linux flock:util-linux zstd:zstd; do
  command -v "${p%%:*}" >/dev/null || need+=("${p#*:}")
done
# qemu's 9p shares (-virtfs) need the qemu-system-common helpers; slirp
# networking is built in. nc serves the guest->host forwards.
command -v nc >/dev/null || need+=(netcat-openbsd)
if [ ${#need[@]} -gt 0 ]; then
  say "installing host packages: ${need[*]}"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null
fi

stamp_ok() { [ -f "$CACHE/.iwkit-$1" ] && [ "$(cat "$CACHE/.iwkit-$1")" = "$2" ]; }
stamp_set() { echo "$2" > "$CACHE/.iwkit-$1"; }

# 2. The guest's root file system (the slow part: ~1.5 min).
want="$SUITE $GUEST_PKGS"
if ! stamp_ok debootstrap "$want" || [ ! -d "$ROOT/lib/modules" ]; then
  MIRROR=${SIW_PEER_MIRROR:-$(apt_mirror)}
  [ -n "$MIRROR" ] || { echo "build.sh: no Debian mirror in the apt sources; set SIW_PEER_MIRROR" >&2; exit 1; }
  say "debootstrap $SUITE from $MIRROR into $ROOT (log: $CACHE/debootstrap.log)"
  rm -rf "$ROOT" "$ROOT.tmp" "$CACHE"/.iwkit-*
  debootstrap --variant=minbase --include="$GUEST_PKGS" "$SUITE" "$ROOT.tmp" "$MIRROR" \
    > "$CACHE/debootstrap.log" 2>&1 &
  ds=$!
  # A line of progress every 20 s: this stage is silent for minutes.
  n=0
  while kill -0 $ds 2>/dev/null; do
    sleep 1
    n=$((n + 1))
    if [ $((n % 20)) = 0 ]; then say "debootstrap: $(tail -n 1 "$CACHE/debootstrap.log")"; fi
  done
  wait $ds || { tail -n 20 "$CACHE/debootstrap.log" >&2; exit 1; }
  mv "$ROOT.tmp" "$ROOT"
  stamp_set debootstrap "$want"
fi
KVER=$(ls "$ROOT/lib/modules" | sort -V | tail -n 1)

# 3. siw.ko. Debian builds its kernels without CONFIG_RDMA_SIW, so the module
#    is built out of tree from the linux-source package of the guest kernel's
#    exact version. The one change to the source: siw's tunables, 'const bool'
#    globals upstream, become writable module parameters, so that one boot can
#    try several MPA settings. The protocol code is untouched.
SIWKO=$ROOT/lib/modules/$KVER/updates/siw.ko
siw_want="$KVER $(sed -n '/^# --- siw.ko recipe/,/^# --- end siw.ko recipe/p' "$0" | sha256sum | cut -c1-16)"
if ! stamp_ok siw "$siw_want" || [ ! -f "$SIWKO" ]; then
# --- siw.ko recipe
  SRCPKG=linux-source-${KVER%%.0-*}          # 6.1.0-50-amd64 -> linux-source-6.1
  VER=$(chroot "$ROOT" dpkg-query -W -f='${Version}' "linux-image-$KVER")
  say "building siw.ko for $KVER from $SRCPKG=$VER"
  chroot "$ROOT" apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive chroot "$ROOT" apt-get install -y -q --no-install-recommends \
    "$SRCPKG=$VER" "linux-headers-$KVER=$VER" > "$CACHE/siw-apt.log" 2>&1 \
    || { tail -n 20 "$CACHE/siw-apt.log" >&2; exit 1; }
  SRC=$ROOT/usr/src/siw
  rm -rf "$SRC" && mkdir -p "$SRC"
  tar -xJf "$ROOT/usr/src/$SRCPKG.tar.xz" -C "$SRC" --strip-components=5 "$SRCPKG/drivers/infiniband/sw/siw/"
  rm -f "$ROOT/usr/src/$SRCPKG.tar.xz"      # 130 MB the image does not need
  knobs='zcopy_tx|try_gso|loopback_enabled|mpa_crc_required|mpa_crc_strict|siw_tcp_nagle|peer_to_peer'
  sed -i -E "s/^extern const bool ($knobs);/extern bool \1;/" "$SRC/siw.h"
  sed -i -E "s/^const bool ($knobs)( = true)?;/bool \1\2;\nmodule_param(\1, bool, 0644);/" "$SRC/siw_main.c"
  sed -i -E 's/^u_char mpa_version = MPA_REVISION_2;/&\nmodule_param(mpa_version, byte, 0644);/' "$SRC/siw_main.c"
  n=$(grep -c '^module_param(' "$SRC/siw_main.c" || true)
  [ "$n" = 8 ] || { echo "build.sh: the siw parameter patch matched $n of 8 knobs; has the source changed?" >&2; exit 1; }
  mount -t proc proc "$ROOT/proc"
  trap 'umount "$ROOT/proc" 2>/dev/null || true' EXIT
  chroot "$ROOT" make -s -C "/usr/src/linux-headers-$KVER" M=/usr/src/siw CONFIG_RDMA_SIW=m modules \
    > "$CACHE/siw-build.log" 2>&1 || { tail -n 30 "$CACHE/siw-build.log" >&2; exit 1; }
  umount "$ROOT/proc"; trap - EXIT
  mkdir -p "$(dirname "$SIWKO")"
  strip --strip-debug -o "$SIWKO" "$SRC/siw.ko"
  chroot "$ROOT" depmod -a "$KVER"
# --- end siw.ko recipe
  stamp_set siw "$siw_want"
fi

# 4. Our guest files, a small initramfs and the ext4 image. The stamp holds
#    the inputs' hash and the image's identity, so an image replaced by any
#    other tool is rebuilt too.
inputs=("$HERE/build.sh" "$HERE"/guest/*)
img_want() { echo "$(cat "${inputs[@]}" | sha256sum | cut -c1-16) $(stat -c %i:%Y:%s "$IMG" 2>/dev/null)"; }
if ! stamp_ok image "$(img_want)" || [ ! -f "$CACHE/vmlinuz" ] || [ ! -f "$CACHE/initrd.img" ]; then
  say "installing guest tools and writing $IMG"
  install -m 0755 "$HERE/guest/siw-guest-init" "$ROOT/usr/local/sbin/siw-guest-init"
  install -m 0644 "$HERE/guest/siw-term.c" "$ROOT/usr/local/src/siw-term.c"
  install -m 0755 "$HERE/guest/capture-suite.sh" "$HERE/guest/capture-variants.sh" "$ROOT/usr/local/bin/"
  chroot "$ROOT" gcc -O2 -Wall -o /usr/local/bin/siw-term /usr/local/src/siw-term.c -lrdmacm -libverbs
  echo siwpeer > "$ROOT/etc/hostname"
  echo "/dev/vda / ext4 rw,noatime 0 1" > "$ROOT/etc/fstab"
  # Only what mounts an ext4 root on virtio-blk: a big initramfs costs
  # seconds of every TCG boot.
  printf 'MODULES=list\nCOMPRESS=zstd\n' > "$ROOT/etc/initramfs-tools/conf.d/siw-peer.conf"
  printf '%s\n' virtio_pci virtio_blk ext4 > "$ROOT/etc/initramfs-tools/modules"
  chroot "$ROOT" update-initramfs -c -k "$KVER" >/dev/null 2>&1 || chroot "$ROOT" update-initramfs -u -k "$KVER" >/dev/null
  cp "$ROOT/boot/vmlinuz-$KVER" "$CACHE/vmlinuz.tmp" && mv "$CACHE/vmlinuz.tmp" "$CACHE/vmlinuz"
  cp "$ROOT/boot/initrd.img-$KVER" "$CACHE/initrd.img.tmp" && mv "$CACHE/initrd.img.tmp" "$CACHE/initrd.img"
  rm -f "$ROOT"/boot/*.dpkg-bak "$ROOT"/boot/*.new
  chroot "$ROOT" apt-get clean
  size_mb=$(( $(du -sm "$ROOT" | cut -f1) + 768 ))
  rm -f "$IMG.tmp"
  mkfs.ext4 -q -F -L siwroot -E root_owner=0:0 -d "$ROOT" "$IMG.tmp" "${size_mb}M"
  # A VM already running keeps the old inode: the rename is safe under it.
  mv "$IMG.tmp" "$IMG"
  stamp_set image "$(img_want)"
fi

# 5. Which accelerator boots. KVM counts only if the guest kernel really
#    boots under it (on nested hosts it can hang in early boot): with no root
#    file system it must reach its panic. Probed once per image.
if [ ! -f "$CACHE/.accel" ]; then
  accel=tcg
  if [ -w /dev/kvm ]; then
    say "probing KVM (20 s at most)"
    if timeout --foreground 20 qemu-system-x86_64 -accel kvm -cpu host,-arch-capabilities -m 256 \
         -nodefaults -display none -no-reboot -serial stdio -kernel "$CACHE/vmlinuz" \
         -append "console=ttyS0 panic=-1 root=/dev/null" </dev/null 2>&1 | grep -q 'Kernel panic'; then
      accel=kvm
    fi
  fi
  echo $accel > "$CACHE/.accel"
fi
say "ready in $(( $(date +%s) - t0 ))s: $CACHE (guest kernel $KVER, accel $(cat "$CACHE/.accel"))"
