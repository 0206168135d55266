#!/bin/bash
# make test-vm: irqwise end-to-end on a real Linux kernel in QEMU (tests/vm/README.md).
# Installs missing packages (as root), builds the release binary, packs it with a busybox
# initramfs, boots one guest that runs every scenario, relays the guest's hot-plug requests to
# QEMU's monitor, then prints one line per check, the measured tables, and "N passed, M failed".
# Exit status: 0 when every check passed, 1 when one failed, 2 when the suite could not run.
# env: IRQWISE_VM_BROKEN=1  run the guest with irqwise replaced by a stub that places nothing
#                           (the suite must then fail: shows that it can)
#      IRQWISE_VM_WORK=DIR  work dir (default: $CARGO_TARGET_DIR/vm or target/vm)
#      IRQWISE_VM_TIMEOUT=S limit for the guest run (default 540)
#      IRQWISE_VM_ACCEL=tcg force TCG even where KVM is usable
#      IRQWISE_VM_SCENARIOS="10 70"  run only the scenario files with these number prefixes
#      IRQWISE_VM_IDLE_S=S  the idle-cost window in the guest, seconds (default 30)
#      IRQWISE_VM_BOOT_TIMEOUT=S  a guest not at /init after S s (default 180) is stopped and
#                           its boot retried once (reported in the timings line)
set -euo pipefail
VM_DIR=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$VM_DIR/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$REPO/target}
WORK=${IRQWISE_VM_WORK:-$TARGET/vm}
TIMEOUT=${IRQWISE_VM_TIMEOUT:-540}
. "$VM_DIR/host/deps.sh"
. "$VM_DIR/host/initramfs.sh"
. "$VM_DIR/host/qemu.sh"

secs() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(secs)" 'BEGIN { printf "%.1f", b - a }'; }
T_ALL=$(secs)
mkdir -p "$WORK/cache"

t=$(secs); ensure_packages || exit 2; T_PKG=$(since "$t")
guest_kernel || exit 2
t=$(secs); (cd "$REPO" && cargo build --release --quiet) || exit 2; T_BUILD=$(since "$t")
BIN=$TARGET/release/irqwise
if [ "${IRQWISE_VM_BROKEN:-0}" = 1 ]; then
  echo "test-vm: IRQWISE_VM_BROKEN=1: the guest's irqwise is a stub that places nothing" >&2
  BIN=$VM_DIR/guest/irqwise-stub.sh
fi
fetch_irqbalance "$WORK/cache/irqbalance"
KIMG=/boot/vmlinuz-$KVER
if [ -s "$WORK/cache/vmlinux-$KVER" ] || extract_vmlinux "$KIMG" "$WORK/cache/vmlinux-$KVER"; then
  KIMG=$WORK/cache/vmlinux-$KVER        # PVH entry: no in-guest decompression
fi
t=$(secs)
build_initramfs "$WORK/root" "$WORK/initramfs.cpio.gz" "$BIN" "$IRQBALANCE" || exit 2
T_INITRD=$(since "$t")

echo "test-vm: booting $KVER ($(basename "$KIMG")), log in $WORK" >&2
# One retry, and only when the guest never reached /init (an environmental stall: QEMU could not
# start or the kernel boot hung under load). A guest that started and then failed is not retried.
BOOT_NOTE=""
t=$(secs); boot_guest "$WORK" "$KIMG" "$WORK/initramfs.cpio.gz" "$TIMEOUT"
if ! grep -q '@@GUEST_START' "$WORK/console.log"; then
  why=$(cat "$WORK/boot-stalled" 2>/dev/null || echo "qemu exited with $QEMU_RC before /init")
  echo "test-vm: the guest never started ($why); last console lines:" >&2
  tail -5 "$WORK/console.log" >&2; tail -5 "$WORK/qemu.stderr" >&2
  echo "test-vm: retrying the boot once (first console kept in console.first.log)" >&2
  cp "$WORK/console.log" "$WORK/console.first.log"
  BOOT_NOTE=" (boot retried once: $why)"
  boot_guest "$WORK" "$KIMG" "$WORK/initramfs.cpio.gz" "$TIMEOUT"
fi
T_BOOT=$(since "$t")
sed -n '/^@@DAEMON_LOG_BEGIN/,/^@@DAEMON_LOG_END/p' "$WORK/guest.out" | sed '1d;$d' > "$WORK/irqwise.log"
if ! grep -q '^@@DONE' "$WORK/guest.out"; then
  stalled=$(cat "$WORK/boot-stalled" 2>/dev/null || true)
  echo "test-vm: the guest did not finish (qemu exit $QEMU_RC${stalled:+; $stalled}); last console lines:" >&2
  tail -25 "$WORK/console.log" >&2
  echo "test-vm: last guest lines:" >&2; tail -15 "$WORK/guest.out" >&2
fi

# Every `check NAME` / `result NAME` in the scenario scripts, with the scenario it runs in.
awk '/^SCEN=/ { s = substr($1, 6) } match($0, /(^|[ ;])(check|result) [a-z_0-9]+/) {
       c = substr($0, RSTART, RLENGTH); sub(/^[ ;]?(check|result) /, "", c); print s, c }' \
  "$VM_DIR/guest/main.sh" $(scenario_files) > "$WORK/expected"
META="Debian kernel $KVER, QEMU $ACCEL_USED, 2 sockets x 2 cores x 2 threads (nodes 0: CPUs 0-3, 1: CPUs 4-7), NVMe (4 I/O queues) on node 0, vmxnet3 (8 queues) on node 1; host $(nproc) CPUs"
rc=0
awk -v md="$WORK/RESULTS.md" -v meta="$META" -f "$VM_DIR/host/report.awk" "$WORK/expected" "$WORK/guest.out" || rc=1
{
  echo
  echo "Timings on this host: packages ${T_PKG} s, cargo build ${T_BUILD} s, initramfs ${T_INITRD} s, guest run ${T_BOOT} s${BOOT_NOTE}, total $(since "$T_ALL") s."
} | tee -a "$WORK/RESULTS.md"
# A full run of the real binary refreshes the committed table (failures are listed in it).
if [ "${IRQWISE_VM_BROKEN:-0}" != 1 ] && [ -z "${IRQWISE_VM_SCENARIOS:-}" ] && grep -q '^@@DONE' "$WORK/guest.out"; then
  cp "$WORK/RESULTS.md" "$VM_DIR/RESULTS.md"
fi
exit $rc
