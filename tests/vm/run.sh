#!/bin/bash
# make test-vm: irqwise end-to-end in QEMU (tests/vm/README.md), in two tiers:
#   kernel   the release binary in a busybox initramfs on Debian's stock kernel: placement through
#            CPU/link/device hot-plug and SIGHUP, idle cost and placement beside irqbalance;
#   systemd  the package (`make deb`) installed with dpkg in a debootstrapped Debian 12 root,
#            booted with systemd as PID 1: the unit's start, reload, watchdog, restarts, stop,
#            sandbox, journal fields and exposure, irqbalance's conflict and the install warning.
# Installs missing packages (as root), boots one guest per tier (each runs all of its scenarios;
# a guest line "HOST <command>" is relayed to QEMU's monitor), then prints one line per check,
# the tables, "N passed, M failed" per tier and for the whole suite.
# Exit status: 0 when every check passed, 1 when one failed, 2 when the suite could not run.
# env: IRQWISE_VM_TIERS="kernel systemd"  the tiers to run (default: both)
#      IRQWISE_VM_BROKEN=1  kernel tier: irqwise replaced by a stub that places nothing
#      IRQWISE_VM_BROKEN_UNIT=kill-reload|no-netlink|restart-loop  systemd tier: the installed
#                           unit broken on purpose (tests/vm/host/debroot.sh)
#                           (either way the suite must then fail: shows that it can)
#      IRQWISE_VM_WORK=DIR  work dir (default: $CARGO_TARGET_DIR/vm or target/vm): DIR/kernel,
#                           DIR/systemd per tier, DIR/cache kept between runs (the Debian root)
#      IRQWISE_VM_TIMEOUT=S limit for each guest run (default 540)
#      IRQWISE_VM_ACCEL=tcg force TCG even where KVM is usable
#      IRQWISE_VM_SCENARIOS="10 70"  run only the scenario files with these number prefixes
#                           (in each tier; later scenarios may rely on state an earlier one set)
#      IRQWISE_VM_IDLE_S=S  kernel tier: the idle-cost window in the guest, seconds (default 30)
#      IRQWISE_VM_BOOT_TIMEOUT=S  a guest not at /init after S s (default 180) is stopped and
#                           its boot retried once (reported in the timings line)
#      IRQWISE_VM_MIRROR=URL  Debian mirror for debootstrap (default http://deb.debian.org/debian)
set -euo pipefail
VM_DIR=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$VM_DIR/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$REPO/target}
WORK=${IRQWISE_VM_WORK:-$TARGET/vm}
TIMEOUT=${IRQWISE_VM_TIMEOUT:-540}
TIERS=${IRQWISE_VM_TIERS:-kernel systemd}
. "$VM_DIR/host/deps.sh"
. "$VM_DIR/host/initramfs.sh"
. "$VM_DIR/host/qemu.sh"
. "$VM_DIR/host/debroot.sh"

secs() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(secs)" 'BEGIN { printf "%.1f", b - a }'; }
T_ALL=$(secs)
mkdir -p "$WORK/cache"

t=$(secs); ensure_packages || exit 2; T_PKG=$(since "$t")
guest_kernel || exit 2
KIMG=/boot/vmlinuz-$KVER
if [ -s "$WORK/cache/vmlinux-$KVER" ] || extract_vmlinux "$KIMG" "$WORK/cache/vmlinux-$KVER"; then
  KIMG=$WORK/cache/vmlinux-$KVER        # PVH entry: no in-guest decompression
fi

# boot_retried WORK INITRD [DISK]: boots the guest; once more, and only when it never reached
# /init (an environmental stall: QEMU could not start or the kernel boot hung under load). A
# guest that started and then failed is not retried. Sets BOOT_NOTE.
boot_retried() {
  local w=$1 initrd=$2 disk=${3:-} why
  BOOT_NOTE=""
  boot_guest "$w" "$KIMG" "$initrd" "$TIMEOUT" "$disk"
  if ! grep -q '@@GUEST_START' "$w/console.log"; then
    why=$(cat "$w/boot-stalled" 2>/dev/null || echo "qemu exited with $QEMU_RC before /init")
    echo "test-vm: the guest never started ($why); last console lines:" >&2
    tail -5 "$w/console.log" >&2; tail -5 "$w/qemu.stderr" >&2
    echo "test-vm: retrying the boot once (first console kept in console.first.log)" >&2
    cp "$w/console.log" "$w/console.first.log"
    BOOT_NOTE=" (boot retried once: $why)"
    boot_guest "$w" "$KIMG" "$initrd" "$TIMEOUT" "$disk"
  fi
  if ! grep -q '^@@DONE' "$w/guest.out"; then
    local stalled
    stalled=$(cat "$w/boot-stalled" 2>/dev/null || true)
    echo "test-vm: the guest did not finish (qemu exit $QEMU_RC${stalled:+; $stalled}); last console lines:" >&2
    tail -25 "$w/console.log" >&2
    echo "test-vm: last guest lines:" >&2; tail -15 "$w/guest.out" >&2
  fi
}

# expected_checks SCENARIO_FILE...: every `check NAME` / `result NAME` in the files, with the
# scenario (the last SCEN= before it) it runs in.
expected_checks() {
  awk '/^SCEN=/ { s = substr($1, 6) } match($0, /(^|[ ;])(check|result) [a-z_0-9]+/) {
         c = substr($0, RSTART, RLENGTH); sub(/^[ ;]?(check|result) /, "", c); print s, c }' "$@"
}

# between BEGIN END FILE: the lines strictly between the marker lines.
between() { sed -n "/^$1/,/^$2/p" "$3" | sed '1d;$d'; }

# The kernel tier (sets its RC): busybox init, the release binary, scenarios in guest/scenarios.
tier_kernel() {
  local w=$WORK/kernel bin t
  mkdir -p "$w"
  t=$(secs); (cd "$REPO" && cargo build --release --quiet) || return 2; local t_build; t_build=$(since "$t")
  bin=$TARGET/release/irqwise
  if [ "${IRQWISE_VM_BROKEN:-0}" = 1 ]; then
    echo "test-vm: IRQWISE_VM_BROKEN=1: the guest's irqwise is a stub that places nothing" >&2
    bin=$VM_DIR/guest/irqwise-stub.sh
  fi
  fetch_irqbalance "$WORK/cache/irqbalance"
  t=$(secs)
  build_initramfs "$w/root" "$w/initramfs.cpio.gz" "$bin" "$IRQBALANCE" || return 2
  local t_initrd; t_initrd=$(since "$t")
  echo "test-vm: kernel tier: booting $KVER ($(basename "$KIMG")), log in $w" >&2
  t=$(secs); boot_retried "$w" "$w/initramfs.cpio.gz"; local t_boot; t_boot=$(since "$t")
  between @@DAEMON_LOG_BEGIN @@DAEMON_LOG_END "$w/guest.out" > "$w/irqwise.log"
  expected_checks "$VM_DIR/guest/main.sh" $(scenario_files) > "$w/expected"
  local meta="Debian kernel $KVER, QEMU $ACCEL_USED, 2 sockets x 2 cores x 2 threads (nodes 0: CPUs 0-3, 1: CPUs 4-7), NVMe (4 I/O queues) on node 0, vmxnet3 (8 queues) on node 1; host $(nproc) CPUs"
  local rc=0
  awk -v md="$w/RESULTS.md" -v meta="$meta" -f "$VM_DIR/host/report.awk" "$w/expected" "$w/guest.out" || rc=1
  {
    echo
    echo "Timings on this host: cargo build ${t_build} s, initramfs ${t_initrd} s, guest run ${t_boot} s${BOOT_NOTE}."
  } | tee -a "$w/RESULTS.md"
  [ "${IRQWISE_VM_BROKEN:-0}" != 1 ] && grep -q '^@@DONE' "$w/guest.out" && COMPLETE="$COMPLETE kernel"
  return $rc
}

# The systemd tier: the Debian root (cached), the .deb, the disk image, a boot with systemd.
tier_systemd() {
  local w=$WORK/systemd t deb base=$WORK/cache/debroot-$DEBROOT_SUITE
  mkdir -p "$w"
  t=$(secs); debian_base "$base" || return 2; local t_base; t_base=$(since "$t")
  t=$(secs)
  if ! (cd "$REPO" && make deb) > "$w/make-deb.log" 2>&1; then
    echo "test-vm: make deb failed; last lines of $w/make-deb.log:" >&2; tail -15 "$w/make-deb.log" >&2; return 2
  fi
  local t_deb; t_deb=$(since "$t")
  deb=$(ls -t "$REPO"/target/packages/irqwise_*.deb | head -1)
  t=$(secs)
  guest_disk "$base" "$w/stage" "$deb" "$w/root.img" "$w/chroot-install.log" || return 2
  build_boot_initramfs "$w/initramfs-root" "$w/initramfs.cpio.gz" "$VM_DIR/guest/systemd/init" virtio_pci virtio_blk crc32c_generic ext4 || return 2
  rm -rf "$w/stage" "$w/initramfs-root"
  local t_img; t_img=$(since "$t")
  echo "test-vm: systemd tier: booting $KVER with the Debian root of $(basename "$deb"), log in $w" >&2
  t=$(secs); boot_retried "$w" "$w/initramfs.cpio.gz" "$w/root.img"; local t_boot; t_boot=$(since "$t")
  rm -f "$w/root.img"
  between @@JOURNAL_BEGIN @@JOURNAL_END "$w/guest.out" > "$w/journal.log"
  expected_checks "$VM_DIR"/guest/systemd/main.sh $(scenario_files "$VM_DIR"/guest/systemd) > "$w/expected"
  local systemd_version; systemd_version=$(awk '$1 == "MEASURE" && $3 == "systemd" { print $4 }' "$w/guest.out")
  local meta="Debian 12 (debootstrap --variant=minbase: $DEBROOT_PACKAGES; no procps), systemd ${systemd_version:-?} as PID 1, kernel $KVER, QEMU $ACCEL_USED, 8 CPUs in 2 NUMA nodes, NVMe on node 0, vmxnet3 (8 queues) on node 1; $(basename "$deb") installed with dpkg -i in a chroot"
  local rc=0
  awk -v md="$w/RESULTS.md" -v meta="$meta" -v tier=systemd -f "$VM_DIR/host/report.awk" "$w/expected" "$w/guest.out" || rc=1
  local base_note="reused"; [ "$DEBROOT_BUILT" = yes ] && base_note="built"
  {
    echo
    echo "Timings on this host: Debian root ${t_base} s ($base_note), make deb ${t_deb} s, disk image and initramfs ${t_img} s, guest run ${t_boot} s${BOOT_NOTE}."
  } | tee -a "$w/RESULTS.md"
  [ -z "${IRQWISE_VM_BROKEN_UNIT:-}" ] && grep -q '^@@DONE' "$w/guest.out" && COMPLETE="$COMPLETE systemd"
  return $rc
}

# update_results TIER FILE: TIER's section of tests/vm/RESULTS.md becomes FILE (kept between
# marker comments, so a run of one tier leaves the other's section as it was).
update_results() {
  local tier=$1 file=$2 results=$VM_DIR/RESULTS.md
  [ -f "$results" ] || printf '# irqwise in QEMU: results of the VM suite (`make test-vm`)\n' > "$results"
  awk -v tier="$1" -v file="$file" '
    function section() { print "<!-- tier: " tier " -->"; while ((getline l < file) > 0) print l; print "<!-- end of tier: " tier " -->"; done = 1 }
    $0 == "<!-- tier: " tier " -->" { skip = 1; section(); next }
    skip && $0 == "<!-- end of tier: " tier " -->" { skip = 0; next }
    !skip { print }
    END { if (!done) { print ""; section() } }' "$results" > "$results.new"
  mv "$results.new" "$results"
}

RC=0 COMPLETE="" TOTAL_PASS=0 TOTAL_FAIL=0 TOTAL_SKIP=0
for tier in $TIERS; do
  case $tier in kernel|systemd) ;; *) echo "test-vm: unknown tier $tier (kernel, systemd)" >&2; exit 2;; esac
  echo "=== test-vm: $tier tier ==="
  trc=0; "tier_$tier" || trc=$?
  [ $trc = 2 ] && { echo "test-vm: the $tier tier could not run" >&2; exit 2; }
  [ $trc = 0 ] || RC=1
  if [ -f "$WORK/$tier/RESULTS.md" ]; then
    read -r p f s < <(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed\(, \([0-9]*\) skipped\)\{0,1\}$/\1 \2 \4/p' "$WORK/$tier/RESULTS.md" | tail -1) || true
    TOTAL_PASS=$((TOTAL_PASS + ${p:-0})); TOTAL_FAIL=$((TOTAL_FAIL + ${f:-0})); TOTAL_SKIP=$((TOTAL_SKIP + ${s:-0}))
  fi
done
# A full run (every scenario, the real binary and unit, the guest finished) refreshes the tier's
# section of the committed RESULTS.md (failures are listed in it).
if [ -z "${IRQWISE_VM_SCENARIOS:-}" ]; then
  for tier in $COMPLETE; do update_results "$tier" "$WORK/$tier/RESULTS.md"; done
fi
echo
echo "test-vm: tiers: $TIERS; packages ${T_PKG} s; total $(since "$T_ALL") s"
echo "${TOTAL_PASS} passed, ${TOTAL_FAIL} failed$([ "$TOTAL_SKIP" -gt 0 ] && echo ", $TOTAL_SKIP skipped")"
exit $RC
