# Sourced by the ulp-*.sh recipes (in the guest, /usr/local/bin): the
# record of what ran (NAME.info), the capture on lo, and the data checks
# they share.
#   . ulp-lib.sh NAME
NAME=${1:?name}
INFO=$OUT/$NAME.info
: > "$INFO"; : > "$INFO.log"
# say: a line for the record and the console; run: a command whose exit
# code goes to the record and whose output to the record's tail.
say() { echo "$*" | tee -a "$INFO"; }
run() { echo "+ $*" >> "$INFO"; "$@" >> "$INFO.log" 2>&1; local rc=$?; echo "  rc=$rc" >> "$INFO"; return $rc; }
say "name: $NAME"
say "kernel: $(uname -r) $(uname -v)"
say "siw_params: $(cd /sys/module/siw/parameters && for p in *; do printf '%s=%s ' "$p" "$(cat "$p")"; done)"

# capture_start / capture_stop: tcpdump on lo into /tmp (tmpfs: a 9p write
# path drops under TCG), copied to $OUT at the end.
capture_start() {
  tcpdump --immediate-mode -B 262144 -i lo -s 0 -w "/tmp/$NAME.pcap" 2>/tmp/tcpdump.err & TCPDUMP=$!
  for _ in $(seq 100); do grep -q 'listening on' /tmp/tcpdump.err && break; sleep 0.1; done
  sleep 0.5
  say "capture: tcpdump --immediate-mode -B 262144 -i lo -s 0 -w $NAME.pcap"
}
# capture_stop DMESG-PATTERN
capture_stop() {
  sleep 1
  kill $TCPDUMP; wait $TCPDUMP
  cp "/tmp/$NAME.pcap" "$OUT/"
  say "tcpdump: $(tail -n 2 /tmp/tcpdump.err | tr '\n' ' ')"
  dmesg | grep -iE "$1" | tail -n 30 > "$OUT/$NAME.dmesg"
  cat "$INFO.log" >> "$INFO"; rm -f "$INFO.log"
}

# block_io DEV: write then read back 4 KiB, 128 KiB and 512 KiB with direct
# I/O (small writes go inline in Sends, large ones by RDMA Read; reads come
# back as RDMA Write + Send with Invalidate), and compare.
block_io() {
  local dev=$1
  head -c 524288 /dev/urandom > /tmp/pattern
  run dd if=/tmp/pattern of="$dev" bs=4096 count=1 oflag=direct
  run dd if="$dev" of=/tmp/r4k bs=4096 count=1 iflag=direct
  run dd if=/tmp/pattern of="$dev" bs=131072 count=1 seek=1 oflag=direct
  run dd if="$dev" of=/tmp/r128k bs=131072 count=1 skip=1 iflag=direct
  run dd if=/tmp/pattern of="$dev" bs=524288 count=1 seek=1 oflag=direct
  run dd if="$dev" of=/tmp/r512k bs=524288 count=1 skip=1 iflag=direct
  cmp -n 4096 /tmp/pattern /tmp/r4k && cmp -n 131072 /tmp/pattern /tmp/r128k && cmp /tmp/pattern /tmp/r512k
  say "data_compare_rc: $?"
}

# file_io MOUNTPOINT MOUNT-COMMAND...: write files of 100 B, 4 KiB, 128 KiB
# and 512 KiB with fsync, remount (cold cache), read back and compare,
# remove two, unmount.
file_io() {
  local mnt=$1; shift
  run "$@"
  say "mount: $(grep "$mnt" /proc/mounts)"
  local f rc=0
  head -c 100 /dev/urandom > /tmp/f100; head -c 4096 /dev/urandom > /tmp/f4k
  head -c 131072 /dev/urandom > /tmp/f128k; head -c 524288 /dev/urandom > /tmp/f512k
  for f in f100 f4k f128k f512k; do run dd if=/tmp/$f of="$mnt/$f" bs=1M conv=fsync; done
  run umount "$mnt"
  run "$@"
  run ls -l "$mnt"
  for f in f100 f4k f128k f512k; do cmp /tmp/$f "$mnt/$f" || rc=1; done
  say "read_back_compare_rc: $rc"
  run rm "$mnt/f100" "$mnt/f4k"
  run umount "$mnt"
}
