#!/bin/bash
# make test-vm: irqwise end-to-end in QEMU (tests/vm/README.md), in six tiers:
#   kernel   the release binary in a busybox initramfs on Debian's stock kernel: placement through
#            CPU/link/device hot-plug, NIC reconfigurations and SIGHUP, idle cost and placement
#            beside irqbalance;
#   kernel-sid  the same on Debian unstable's current kernel (7.x, fetched by package name through
#            a private apt state), without the irqbalance comparison, shorter idle window and storm;
#   kernel-6.12  the same on Debian 12's 6.12 kernel (unpacked from its package, not installed);
#            not in the default tiers: IRQWISE_VM_TIERS;
#   oracle   the kernel as oracle for managed NVMe IRQs: one light boot per kernel (6.1, 6.12,
#            sid) and guest shape (host/oracle.sh), irqwise's prediction against /proc/irq and
#            blk-mq; by default the whole matrix (18 boots, two at a time), five boots
#            (ORACLE_CI_RUNS) with IRQWISE_VM_ORACLE=ci;
#   arm64    Debian's arm64 kernels (sid in six shapes, 6.1 in five, 6.12 in one) under
#            qemu-system-aarch64: clusters from the device tree; the guest's copy of what a plan
#            reads is planned on the host (`plan --root`, `topology --root`) against the kernel's
#            masks, and planned relabelled to the other side of 7.0's grouping rule, which
#            must be exact too (host/arm64.sh); the kernel's facts from its BTF and modules;
#   systemd  the package (`make deb`) installed with dpkg in a debootstrapped Debian 12 root,
#            booted with systemd as PID 1: the unit's start, reload, watchdog, restarts, stop,
#            sandbox, journal fields and exposure, irqbalance's conflict and the install warning;
#            the image (`make image`) under podman as a DaemonSet runs it, and the claim hook;
#            on sid (systemd-sid), pods on containerd 2.x driven through CRI, irqwise as an NRI
#            plugin (66-containerd-nri, host/containerd.sh), and the shipped DaemonSet manifest
#            under `podman kube play` of Debian unstable's podman (67-podman-kube, host/podman.sh).
# Installs missing packages (as root), boots one guest per tier (each runs all of its scenarios;
# the oracle and arm64 tiers boot one per kernel and shape;
# a guest line "HOST <command>" is relayed to QEMU's monitor), then prints one line per check,
# the tables, "N passed, M failed" per tier and for the whole suite. A kernel that cannot be
# fetched stops the suite with its reason (exit 2), never a skipped tier.
# Exit status: 0 when every check passed, 1 when one failed, 2 when the suite could not run.
# env: IRQWISE_VM_TIERS="kernel kernel-sid kernel-6.12 oracle arm64 systemd systemd-sid"  the
#                           tiers to run (default: kernel kernel-sid oracle arm64 systemd
#                           systemd-sid; systemd-sid: the systemd guest on 7.x, scenarios 10 56 66 67 90: the podman scenario runs on 6.1 only, to keep CI short;
#                           66-containerd-nri and 67-podman-kube on sid only: containerd 2.x and podman 5.x
#                           from Debian unstable, host/containerd.sh and host/podman.sh)
#      IRQWISE_VM_ARCHIVE_MIRROR=URL  Debian archive for the kernels newer than Debian 12's
#                           (default http://deb.debian.org/debian; unstable's current is found
#                           anew from the archive, never named here)
#      IRQWISE_VM_SID_IDLE_S=S, IRQWISE_VM_SID_STORM_CYCLES=N  kernel-sid: its idle window
#                           (default 20) and storm cycles (default 100)
#      IRQWISE_VM_BROKEN=1  kernel tier: irqwise replaced by a stub that places nothing
#      IRQWISE_VM_BROKEN_UNIT=kill-reload|no-netlink|restart-loop  systemd tier: the installed
#                           unit broken on purpose (tests/vm/host/debroot.sh)
#                           (either way the suite must then fail: shows that it can)
#      IRQWISE_VM_WORK=DIR  work dir (default: $CARGO_TARGET_DIR/vm or target/vm): DIR/kernel,
#                           DIR/systemd per tier, DIR/cache kept between runs (the Debian root)
#      IRQWISE_VM_TIMEOUT=S limit for each guest run (default 720; x 1.5 for tiers run together)
#      IRQWISE_VM_TOGETHER="kernel kernel-sid"  the tiers that run at the same time, each in its
#                           own guest, at the place of the first of them (default: these two, whose
#                           guests mostly wait; empty: every tier in turn)
#      IRQWISE_VM_ACCEL=tcg force TCG even where KVM is usable
#      IRQWISE_VM_SCENARIOS="10 70"  run only the scenario files with these number prefixes
#                           (in each tier; later scenarios may rely on state an earlier one set)
#      IRQWISE_VM_IDLE_S=S  kernel tier: the idle-cost window in the guest, seconds (default 60: one
#                           reconcile of irqwise, six scans of irqbalance)
#      IRQWISE_VM_STORM_CYCLES=N  kernel tier: CPU offline/online cycles of the storm scenarios
#                           (57-storm.sh, 70-irqbalance.sh; default 100: 20-40 s each under TCG)
#      IRQWISE_VM_BOOT_TIMEOUT=S  a guest not at /init after S s (default 180) is stopped and
#                           its boot retried once (reported in the timings line)
#      IRQWISE_VM_MIRROR=URL  Debian mirror for debootstrap (default http://deb.debian.org/debian)
#      IRQWISE_VM_ORACLE=ci    oracle tier: five boots only (ORACLE_CI_RUNS in host/oracle.sh),
#                           for quick runs; the default, full, is every kernel x every shape
#                           (18 boots; RESULTS.md's matrix is updated only by it)
#      IRQWISE_VM_ORACLE_KERNELS="6.1 6.12 sid", IRQWISE_VM_ORACLE_SHAPES="maxcpus nosmt"  oracle tier:
#                           these kernels x shapes of the matrix (host/oracle.sh lists the shapes)
#      IRQWISE_VM_ARM64_KERNELS="6.1 6.12 sid", IRQWISE_VM_ARM64_SHAPES="c4x2-2n uneven"  arm64
#                           tier: these kernels x shapes (host/arm64.sh lists the shapes) instead
#                           of the default runs (ARM64_RUNS_DEFAULT in host/arm64.sh)
#      IRQWISE_VM_ORACLE_RELABEL="maxcpus nosmt"  oracle tier: the shapes whose checks are each
#                           followed by the relabel check (default maxcpus; "all" for every shape)
#      IRQWISE_VM_ORACLE_TCG_THREAD=multi, IRQWISE_VM_ARM64_TCG_THREAD=multi  the oracle and arm64
#                           tiers' guests on many host threads (default single: one host thread
#                           per guest, two guests at a time; faster on 2 cores, no MTTCG stalls)
#      IRQWISE_VM_ORACLE_SNAPSHOTS=1  oracle tier: `irqwise snapshot` of the guest after every
#                           check, in WORK/oracle/KERNEL-SHAPE/snapshot-STAGE.tar.gz (test fixtures)
set -euo pipefail
VM_DIR=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$VM_DIR/../.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$REPO/target}
WORK=${IRQWISE_VM_WORK:-$TARGET/vm}
TIMEOUT=${IRQWISE_VM_TIMEOUT:-720}
TIERS=${IRQWISE_VM_TIERS:-kernel kernel-sid oracle arm64 systemd systemd-sid}
. "$VM_DIR/host/deps.sh"
. "$VM_DIR/host/initramfs.sh"
. "$VM_DIR/host/qemu.sh"
. "$VM_DIR/host/debroot.sh"
. "$VM_DIR/host/oracle.sh"
. "$VM_DIR/host/arm64.sh"
. "$VM_DIR/host/containerd.sh"
. "$VM_DIR/host/podman.sh"

secs() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(secs)" 'BEGIN { printf "%.1f", b - a }'; }
T_ALL=$(secs)
mkdir -p "$WORK/cache"

# use_kernel 6.1|6.12|sid: KVER, KIMG (the PVH-bootable vmlinux when one can be extracted: no
# in-guest decompression) and MODBASE of that guest kernel. sid is Debian unstable's current
# kernel (7.x), found anew from the archive on every run (host/deps.sh, archive_kernel).
use_kernel() {
  case $1 in
    6.1) guest_kernel || return 1;;
    6.12) second_kernel "$WORK/cache/kernel-6.12" || return 1;;
    sid) archive_kernel "$WORK/cache/archive" sid amd64 || return 1
      KVER=$ARCHIVE_KVER KIMG=$ARCHIVE_KIMG MODBASE=$ARCHIVE_MODBASE;;
    *) echo "test-vm: no guest kernel $1 (6.1, 6.12, sid)" >&2; return 1;;
  esac
  pvh_image "$KIMG" "$WORK/cache" "$KVER"
}

# The oracle tier's boots, KERNEL:SHAPE each, in launch order.
if [ "${IRQWISE_VM_ORACLE:-full}" = full ] || [ -n "${IRQWISE_VM_ORACLE_KERNELS:-}${IRQWISE_VM_ORACLE_SHAPES:-}" ]; then
  ORACLE_RUNS=$(for v in ${IRQWISE_VM_ORACLE_KERNELS:-6.1 6.12 sid}; do for s in ${IRQWISE_VM_ORACLE_SHAPES:-$ORACLE_SHAPES}; do echo "$v:$s"; done; done)
else
  ORACLE_RUNS=$ORACLE_CI_RUNS
fi

t=$(secs); ensure_packages || exit 2
use_kernel 6.1 || exit 2
# The 6.12 package is fetched only when a tier boots it.
case " $TIERS " in *" kernel-6.12 "*) use_kernel 6.12 || exit 2;; esac
case " $TIERS " in *" kernel-sid "* | *" systemd-sid "*) use_kernel sid || exit 2;; esac
case " $TIERS $ORACLE_RUNS " in *" oracle "*6.12:*) use_kernel 6.12 || exit 2;; esac
case " $TIERS $ORACLE_RUNS " in *" oracle "*sid:*) use_kernel sid || exit 2;; esac
T_PKG=$(since "$t")

# IRQWISE_VM_FETCH_ONLY=1: only what the tiers download or build before their first boot (host
# packages, the kernels above, irqbalance, the Debian root, containerd and the CRI client,
# podman from unstable, the arm64 kernels), then exit; a later run finds them cached. `.ci/run`
# starts it beside the cargo build, which leaves the network and disk idle.
if [ "${IRQWISE_VM_FETCH_ONLY:-0}" = 1 ]; then
  fetch_irqbalance "$WORK/cache/irqbalance"
  case " $TIERS " in *" systemd"*) debian_base "$WORK/cache/debroot-$DEBROOT_SUITE" || exit 2;; esac
  case " $TIERS " in *" systemd-sid "*)
    scenario_files "$VM_DIR"/guest/systemd | grep -q '/66-containerd-nri\.sh$' && { containerd_prepare "$WORK/cache" || exit 2; }
    scenario_files "$VM_DIR"/guest/systemd | grep -q '/67-podman-kube\.sh$' &&
      { podman_prepare "$WORK/cache" "$WORK/cache/debroot-$DEBROOT_SUITE" || exit 2; };; esac
  case " $TIERS " in *" arm64 "*)
    for version in $(for run in $ARM64_RUNS_DEFAULT; do echo "${run%%:*}"; done | sort -u); do
      arm64_packages "$WORK/cache" "$version" || exit 2
    done;; esac
  echo "test-vm: fetched in $(since "$T_ALL") s"
  exit 0
fi

# boot_retried WORK INITRD [DISK]: boots the guest; once more when it never reached /init (an
# environmental stall: QEMU could not start or the kernel boot hung under load), and once more when
# its kernel died of an int3 trap in its own text (multi-threaded TCG, below). A guest that
# started and then failed any other way is not retried. Sets BOOT_NOTE.
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
    BOOT_NOTE=" (boot retried once, single-threaded TCG: $why)"
    # Once seen: 6.12 panicked twice in a row with int3 in sched_clock_cpu during boot (text
    # patching under multi-threaded TCG); the retry runs the vCPUs on one host thread.
    TCG_THREAD=single boot_guest "$w" "$KIMG" "$initrd" "$TIMEOUT" "$disk"
  fi
  # Once, and only for this signature: a guest kernel that died of an int3 trap in its own text
  # ("Oops: int3"), which is the kernel patching its code (a static key flipped) while another
  # vCPU of multi-threaded TCG ran a stale copy of it: QEMU's doing, not irqwise's (seen on 6.12
  # and 7.2 at boot and once in the middle of a run). The run starts over; the note says so.
  if ! grep -q '^@@DONE' "$w/guest.out" && grep -q 'Oops: int3' "$w/console.log"; then
    echo "test-vm: the guest kernel died of an int3 trap in its own text (multi-threaded TCG); running the guest once more" >&2
    grep -m1 -A3 'Oops: int3' "$w/console.log" >&2
    cp "$w/console.log" "$w/console.int3.log"; cp "$w/guest.out" "$w/guest.int3.out"
    BOOT_NOTE="$BOOT_NOTE (run again once: the first guest's kernel died of an int3 trap in its own text, multi-threaded TCG)"
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
  awk '/^SCEN=/ { s = substr($1, 6) } match($0, /(^|[ ;])(check|result) [A-Za-z_0-9]+/) {
         c = substr($0, RSTART, RLENGTH); sub(/^[ ;]?(check|result) /, "", c); print s, c }' "$@"
}

# between BEGIN END FILE: the lines strictly between the marker lines.
between() { sed -n "/^$1/,/^$2/p" "$3" | sed '1d;$d'; }

# The kernel tier (sets its RC): busybox init, the release binary, scenarios in guest/scenarios,
# on kernel VERSION (default 6.1; the tiers kernel-6.12 and kernel-sid run it on 6.12 and on
# Debian unstable's 7.x). On sid the comparison with irqbalance (70-irqbalance.sh: irqbalance's
# own behaviour, the same program on any kernel) is left to the 6.1 tier, and the idle window
# and the storm are shorter (IRQWISE_VM_SID_IDLE_S, default 20 s; IRQWISE_VM_SID_STORM_CYCLES,
# default 100): the measurements RESULTS.md compares are 6.1's; tests/vm/README.md says why.
tier_kernel() {
  local version=${1:-6.1} tier=kernel bin t
  [ "$version" = 6.1 ] || tier=kernel-$version
  local SKIP_SCENARIOS="" IDLE_S_TIER="" STORM_CYCLES_TIER=""
  if [ "$version" = sid ]; then
    SKIP_SCENARIOS=70 IDLE_S_TIER=${IRQWISE_VM_SID_IDLE_S:-20} STORM_CYCLES_TIER=${IRQWISE_VM_SID_STORM_CYCLES:-100}
  fi
  local w=$WORK/$tier
  mkdir -p "$w"
  use_kernel "$version" || return 2
  t=$(secs); (cd "$REPO" && packaging/release-flags.sh cargo build --release --quiet) || return 2; local t_build; t_build=$(since "$t")
  bin=$TARGET/release/irqwise
  if [ "${IRQWISE_VM_BROKEN:-0}" = 1 ]; then
    echo "test-vm: IRQWISE_VM_BROKEN=1: the guest's irqwise is a stub that places nothing" >&2
    bin=$VM_DIR/guest/irqwise-stub.sh
  fi
  fetch_irqbalance "$WORK/cache/irqbalance"
  t=$(secs)
  build_initramfs "$w/root" "$w/initramfs.cpio.gz" "$bin" "$IRQBALANCE" || return 2
  local t_initrd; t_initrd=$(since "$t")
  echo "test-vm: $tier tier: booting $KVER ($(basename "$KIMG")), log in $w" >&2
  t=$(secs); boot_retried "$w" "$w/initramfs.cpio.gz"; local t_boot; t_boot=$(since "$t")
  between @@DAEMON_LOG_BEGIN @@DAEMON_LOG_END "$w/guest.out" > "$w/irqwise.log"
  expected_checks "$VM_DIR/guest/main.sh" $(scenario_files) > "$w/expected"
  local meta="Debian kernel $KVER, QEMU $ACCEL_USED, 2 sockets x 2 cores x 2 threads (nodes 0: CPUs 0-3, 1: CPUs 4-7), NVMe (4 I/O queues) on node 0, vmxnet3 (8 queues) on node 1; host $(nproc) CPUs"
  local rc=0
  awk -v md="$w/RESULTS.md" -v meta="$meta" -f "$VM_DIR/host/report.awk" "$w/expected" "$w/guest.out" || rc=1
  {
    echo
    echo "Timings on this host: cargo build ${t_build} s, initramfs ${t_initrd} s, guest run ${t_boot} s${BESIDE:+ (beside the guest of the $BESIDE tier)}${BOOT_NOTE}."
  } | tee -a "$w/RESULTS.md"
  [ "${IRQWISE_VM_BROKEN:-0}" != 1 ] && grep -q '^@@DONE' "$w/guest.out" && COMPLETE="$COMPLETE $tier"
  return $rc
}
tier_kernel-6.12() { tier_kernel 6.12; }
tier_kernel-sid() { tier_kernel sid; }

# oracle_boot VERSION SHAPE DIR: one oracle guest (run in a subshell; KIMG and MODBASE are
# VERSION's): its machine, its initramfs (the kernel's base archive and one with the shape's
# files: the kernel reads concatenated archives), the boot, and DIR/boot-time, DIR/shape-desc.
oracle_boot() {
  local version=$1 shape=$2 d=$3 t
  oracle_shape "$shape" "$d" || return 2
  if [ "${IRQWISE_VM_ORACLE_SNAPSHOTS:-0}" = 1 ]; then   # a snapshot after every check
    awk '{ print } $1 == "check" { print "snapshot " $2 }' "$d/steps" > "$d/steps.new" && mv "$d/steps.new" "$d/steps"
  fi
  mkdir -p "$d/overlay/etc"
  echo "$shape" > "$d/overlay/etc/oracle-shape"; cp "$d/steps" "$d/overlay/etc/oracle-steps"
  rm -f "$d/overlay/etc/oracle-relabel"
  oracle_relabels "$shape" && touch "$d/overlay/etc/oracle-relabel"
  pack_cpio "$d/overlay" "$d/overlay.cpio.gz"
  cat "$WORK/oracle/base-$version.cpio.gz" "$d/overlay.cpio.gz" > "$d/initramfs.cpio.gz"
  echo "$SHAPE_DESC" > "$d/shape-desc"
  # One host thread for all vCPUs (IRQWISE_VM_ORACLE_TCG_THREAD, default single): these guests
  # only boot and read, two at a time on a 2-core host; measured, 18 boots took 193 s single
  # against 250-284 s multi-threaded, which also stalled or died of int3 once a run and was retried.
  local TCG_THREAD=${IRQWISE_VM_ORACLE_TCG_THREAD:-single}
  t=$(secs); boot_retried "$d" "$d/initramfs.cpio.gz" > "$d/boot.log" 2>&1
  echo "$(since "$t")$BOOT_NOTE" > "$d/boot-time"
  rm -f "$d"/nvme*.img
}

# oracle_relabels SHAPE: whether SHAPE's checks are each followed by the relabel check (a
# snapshot and a plan in the guest: about 15 s of TCG time each, so by default only on maxcpus,
# whose three stages include a hot-added CPU; IRQWISE_VM_ORACLE_RELABEL="all" for every shape).
oracle_relabels() {
  case " ${IRQWISE_VM_ORACLE_RELABEL:-maxcpus} " in *" all "*|*" $1 "*) return 0;; *) return 1;; esac
}

# The oracle tier: one light boot per kernel and shape (host/oracle.sh), each comparing
# irqwise's managed-IRQ predictions with the kernel's masks and blk-mq's map. Guests run
# IRQWISE_VM_ORACLE_JOBS at a time (default 2: a booting guest keeps about one host CPU busy).
tier_oracle() {
  local w=$WORK/oracle bin t version shape run d rc=0 boots=0 running=0 jobs=${IRQWISE_VM_ORACLE_JOBS:-2}
  local versions
  versions=$(for run in $ORACLE_RUNS; do echo "${run%%:*}"; done | sort -u)
  mkdir -p "$w"
  t=$(secs); (cd "$REPO" && packaging/release-flags.sh cargo build --release --quiet) || return 2; local t_build; t_build=$(since "$t")
  bin=$TARGET/release/irqwise
  : > "$w/guest.out"; : > "$w/expected"; : > "$w/boots"
  for version in $versions; do
    use_kernel "$version" || return 2
    build_oracle_base "$w/root-$version" "$bin" || return 2
    pack_cpio "$w/root-$version" "$w/base-$version.cpio.gz"
  done
  local t_all; t_all=$(secs)
  for run in $ORACLE_RUNS; do
    version=${run%%:*} shape=${run#*:}
    use_kernel "$version" || return 2
    d=$w/$version-$shape; rm -rf "$d"; mkdir -p "$d"
    echo "test-vm: oracle tier: $KVER, shape $shape, log in $d" >&2
    oracle_boot "$version" "$shape" "$d" &
    running=$((running + 1))
    if [ $running -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
  done
  wait || true
  local t_guests; t_guests=$(since "$t_all")
  # In table order: by kernel, then by shape as ORACLE_SHAPES lists them.
  for version in $versions; do
    use_kernel "$version" || return 2
    for shape in $ORACLE_SHAPES; do
      case " $(echo $ORACLE_RUNS) " in *" $version:$shape "*) ;; *) continue;; esac
      d=$w/$version-$shape
      [ -f "$d/boot-time" ] || { echo "test-vm: oracle guest $version/$shape did not run; see $d" >&2; cat "$d/boot.log" >&2 2>/dev/null; }
      cat "$d/boot.log" >&2 2>/dev/null || true
      boots=$((boots + 1))
      printf '%s\t%s\t%s\t%s\t%s\n' "$version" "$KVER" "$shape" "$(cat "$d/boot-time" 2>/dev/null || echo '?')" "$(cat "$d/shape-desc" 2>/dev/null)" >> "$w/boots"
      # Each check of the guest, named by kernel and shape.
      local relabel=0; oracle_relabels "$shape" && relabel=1
      awk -v tag="$version/$shape" -v relabel=$relabel '$1 == "check" { print tag, "check@" $2; if (relabel) print tag, "relabel-" $2 } $1 == "daemon" { print tag, "daemon_memory" } $1 == "managed-mode" { print tag, "managed_mode" } $1 == "advise" { print tag, "advise_boot" }' "$d/steps" |
        while read -r tag stage; do
          case $stage in *@*) for q in q1 q3 q5 q7 qcpu; do echo "$tag $q@${stage#*@}"; done;; *) echo "$tag $stage";; esac
        done >> "$w/expected"
      sed -e "s|^RESULT oracle |RESULT $version/$shape |" -e "s|^MEASURE oracle |MEASURE $version/$shape |" "$d/guest.out" |
        sed '/^@@SNAPSHOT_BEGIN/,/^@@SNAPSHOT_END/d' >> "$w/guest.out"
      local snap
      for snap in $(awk '$1 == "@@SNAPSHOT_BEGIN" { print $2 }' "$d/guest.out"); do
        sed -n "/^@@SNAPSHOT_BEGIN $snap\$/,/^@@SNAPSHOT_END/p" "$d/guest.out" | sed '1d;$d' | tr -d '\r' | base64 -d > "$d/snapshot-$snap.tar.gz" ||
          echo "test-vm: snapshot $snap of $version/$shape did not decode" >&2
      done
    done
  done
  awk -v md="$w/RESULTS.md" -v boots="$w/boots" -f "$VM_DIR/host/oracle.awk" "$w/expected" "$w/guest.out" || rc=1
  {
    echo
    echo "Timings on this host: cargo build ${t_build} s, $boots guest runs ($jobs at a time) ${t_guests} s in all (each: $(cut -f4 "$w/boots" | awk '{ printf "%s%s", (NR > 1 ? ", " : ""), $1 }') s$(grep -c 'boot retried' "$w/boots" | awk '$1 > 0 { printf "; %d boot(s) retried once, single-threaded TCG", $1 }'))."
  } | tee -a "$w/RESULTS.md"
  # RESULTS.md: the whole matrix from a full run, the CI subset in a section of its own.
  if [ -z "${IRQWISE_VM_ORACLE_SHAPES:-}${IRQWISE_VM_ORACLE_KERNELS:-}${IRQWISE_VM_ORACLE_SNAPSHOTS:-}" ]; then
    if [ "${IRQWISE_VM_ORACLE:-full}" = full ]; then
      COMPLETE="$COMPLETE oracle"
    else
      mkdir -p "$WORK/oracle-ci"
      sed '1,/^## /s/^## \(.*\)$/## \1: the CI subset (`make test-vm` default)/' "$w/RESULTS.md" > "$WORK/oracle-ci/RESULTS.md"
      COMPLETE="$COMPLETE oracle-ci"
    fi
  fi
  return $rc
}

# The arm64 tier (host/arm64.sh): one light boot per kernel and shape, two at a time; each
# guest's copy of what a plan reads is planned on the host and compared with its kernel.
tier_arm64() {
  local w=$WORK/arm64 bin t run runs version versions shape d rc=0 running=0 jobs=${IRQWISE_VM_ARM64_JOBS:-2}
  if [ -n "${IRQWISE_VM_ARM64_KERNELS:-}${IRQWISE_VM_ARM64_SHAPES:-}" ]; then
    runs=$(for version in ${IRQWISE_VM_ARM64_KERNELS:-6.1}; do for shape in ${IRQWISE_VM_ARM64_SHAPES:-$ARM64_SHAPES}; do echo "$version:$shape"; done; done)
  else
    runs=$ARM64_RUNS_DEFAULT
  fi
  versions=$(for run in $runs; do echo "${run%%:*}"; done | sort -u)
  mkdir -p "$w"
  t=$(secs); (cd "$REPO" && packaging/release-flags.sh cargo build --release --quiet) || return 2; local t_build; t_build=$(since "$t")
  bin=$TARGET/release/irqwise
  : > "$w/guest.out"; : > "$w/expected"; : > "$w/boots"
  t=$(secs)
  for version in $versions; do
    arm64_packages "$WORK/cache" "$version" || return 2
    arm64_initramfs "$w/root-$version" "$w/initramfs-$version.cpio.gz" || return 2
    printf '%s %s\n' "$A64_KVER" "$A64_KIMG" > "$w/kernel-$version"
  done
  local t_pkg; t_pkg=$(since "$t")
  t=$(secs)
  for run in $runs; do
    version=${run%%:*} shape=${run#*:}
    read -r A64_KVER A64_KIMG < "$w/kernel-$version"   # fetched above, once per kernel
    d=$w/$version-$shape; rm -rf "$d"; mkdir -p "$d"; echo "$A64_KVER" > "$d/kver"
    echo "test-vm: arm64 tier: $A64_KVER, shape $shape, log in $d" >&2
    arm64_boot "$version" "$shape" "$d" "$w/initramfs-$version.cpio.gz" &
    running=$((running + 1))
    if [ $running -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
  done
  wait || true
  local t_guests; t_guests=$(since "$t")
  for run in $runs; do
    version=${run%%:*} shape=${run#*:} d=$w/${run%%:*}-${run#*:}
    printf '%s\t%s\t%s\t%s\t%s\n' "$version" "$(cat "$d/kver")" "$shape" "$(cat "$d/boot-time" 2>/dev/null || echo '?')" "$(cat "$d/shape-desc" 2>/dev/null)" >> "$w/boots"
    for q in $ARM64_QUEUES; do echo "$version/$shape q$q@boot"; done >> "$w/expected"
    printf '%s\n' "$version/$shape topology" "$version/$shape nic" "$version/$shape relabel" >> "$w/expected"
    arm64_check "$d" "$bin" | sed -e "s|^RESULT arm64 |RESULT $version/$shape |" -e "s|^MEASURE arm64 |MEASURE $version/$shape |" >> "$w/guest.out"
  done
  awk -v md="$w/RESULTS.md" -v boots="$w/boots" -v tier=arm64 -v queues="$ARM64_QUEUES" -f "$VM_DIR/host/oracle.awk" "$w/expected" "$w/guest.out" || rc=1
  {
    echo
    echo "Timings on this host: cargo build ${t_build} s, packages and initramfs ${t_pkg} s, $(echo $runs | wc -w) guest runs ($jobs at a time) ${t_guests} s in all."
  } | tee -a "$w/RESULTS.md"
  [ -z "${IRQWISE_VM_ARM64_KERNELS:-}${IRQWISE_VM_ARM64_SHAPES:-}" ] && COMPLETE="$COMPLETE arm64"
  return $rc
}

# The systemd tier: the Debian root (cached), the .deb, the disk image, a boot with systemd.
tier_systemd() {
  local version=${1:-6.1} tier=systemd modules="virtio_pci virtio_blk crc32c_generic ext4"
  if [ "$version" = sid ]; then
    # The hardened unit on 7.x: what needs a newer kernel (napi-set), the sandbox itself, pods
    # on containerd 2.x through NRI (66-containerd-nri, issue 62) and the shipped manifest under
    # `podman kube play` (67-podman-kube: unstable's podman; the image under Debian 12's podman
    # with the claim hook, 65-podman, is left to 6.1: about 40 s of guest time).
    tier=systemd-sid modules="virtio_pci virtio_blk ext4"   # 7.x has crc32c in the core
    local IRQWISE_VM_SCENARIOS=${IRQWISE_VM_SCENARIOS:-10 56 66 67 90}
  else
    # containerd and podman 5 from Debian unstable: the sid tier's (host/containerd.sh, host/podman.sh)
    local SKIP_SCENARIOS="66 67"
  fi
  local w=$WORK/$tier t deb oci base=$WORK/cache/debroot-$DEBROOT_SUITE
  mkdir -p "$w"
  use_kernel "$version" || return 2
  t=$(secs); debian_base "$base" || return 2; local t_base; t_base=$(since "$t")
  t=$(secs)
  if ! (cd "$REPO" && make deb) > "$w/make-deb.log" 2>&1; then
    echo "test-vm: make deb failed; last lines of $w/make-deb.log:" >&2; tail -15 "$w/make-deb.log" >&2; return 2
  fi
  local t_deb; t_deb=$(since "$t")
  # The OCI image of that .deb (65-podman.sh runs it under podman); `-o deb`: the package just built.
  t=$(secs)
  if ! (cd "$REPO" && make -o deb image) > "$w/make-image.log" 2>&1; then
    echo "test-vm: make image failed; last lines of $w/make-image.log:" >&2; tail -15 "$w/make-image.log" >&2; return 2
  fi
  local t_oci; t_oci=$(since "$t")
  # containerd, runc, the CRI client and the images, only when 66-containerd-nri.sh runs.
  local GUEST_EXTRA="" t_ctr=""
  if scenario_files "$VM_DIR"/guest/systemd | grep -q '/66-containerd-nri\.sh$'; then
    t=$(secs); containerd_prepare "$WORK/cache" || return 2; t_ctr=$(since "$t")
    GUEST_EXTRA=containerd_install
  fi
  # podman from unstable over the Debian 12 root's, only when 67-podman-kube.sh runs.
  local t_pod="" sid_note=""
  if scenario_files "$VM_DIR"/guest/systemd | grep -q '/67-podman-kube\.sh$'; then
    t=$(secs); podman_prepare "$WORK/cache" "$base" || return 2; t_pod=$(since "$t")
    GUEST_EXTRA="$GUEST_EXTRA podman_install"
    sid_note=" + podman $PODMAN_VERSION with $(echo $PODMAN_DEBS | wc -w) packages from Debian unstable (libc6 $(echo $PODMAN_DEBS | tr ' ' '\n' | sed -n 's|.*/libc6_\([^_]*\)_.*|\1|p'))"
  fi
  deb=$(ls -t "$REPO"/target/packages/irqwise_*.deb | head -1)
  oci=$(ls -t "$REPO"/target/image/irqwise-*.oci.tar | head -1)
  t=$(secs)
  guest_disk "$base" "$w/stage" "$deb" "$w/root.img" "$w/chroot-install.log" "$oci" || return 2
  # shellcheck disable=SC2086
  build_boot_initramfs "$w/initramfs-root" "$w/initramfs.cpio.gz" "$VM_DIR/guest/systemd/init" $modules || return 2
  rm -rf "$w/stage" "$w/initramfs-root"
  local t_img; t_img=$(since "$t")
  echo "test-vm: $tier tier: booting $KVER with the Debian root of $(basename "$deb"), log in $w" >&2
  t=$(secs); boot_retried "$w" "$w/initramfs.cpio.gz" "$w/root.img"; local t_boot; t_boot=$(since "$t")
  rm -f "$w/root.img"
  between @@JOURNAL_BEGIN @@JOURNAL_END "$w/guest.out" > "$w/journal.log"
  expected_checks "$VM_DIR"/guest/systemd/main.sh $(scenario_files "$VM_DIR"/guest/systemd) > "$w/expected"
  local systemd_version; systemd_version=$(awk '$1 == "MEASURE" && $3 == "systemd" { print $4 }' "$w/guest.out")
  local meta="Debian 12 (debootstrap --variant=minbase: $DEBROOT_PACKAGES; no procps)$sid_note, systemd ${systemd_version:-?} as PID 1, kernel $KVER, QEMU $ACCEL_USED, 8 CPUs in 2 NUMA nodes, NVMe on node 0, vmxnet3 (8 queues) on node 1; $(basename "$deb") installed with dpkg -i in a chroot"
  local rc=0
  awk -v md="$w/RESULTS.md" -v meta="$meta" -v tier=systemd -f "$VM_DIR/host/report.awk" "$w/expected" "$w/guest.out" || rc=1
  local base_note="reused"; [ "$DEBROOT_BUILT" = yes ] && base_note="built"
  {
    echo
    echo "Timings on this host: Debian root ${t_base} s ($base_note), make deb ${t_deb} s, make image ${t_oci} s,${t_ctr:+ containerd, runc, CRI client and images ${t_ctr} s,}${t_pod:+ podman from unstable resolved and fetched ${t_pod} s (installed in the chroot ${PODMAN_INSTALL_S} s),} disk image and initramfs ${t_img} s, guest run ${t_boot} s${BOOT_NOTE}."
  } | tee -a "$w/RESULTS.md"
  [ -z "${IRQWISE_VM_BROKEN_UNIT:-}" ] && grep -q '^@@DONE' "$w/guest.out" && COMPLETE="$COMPLETE $tier"
  return $rc
}
tier_systemd-sid() { tier_systemd sid; }

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

# tier_done TIER TRC: counts a finished tier's checks (exit 2: the suite could not run).
tier_done() {
  local tier=$1 trc=$2 p f s
  [ "$trc" = 2 ] && { echo "test-vm: the $tier tier could not run" >&2; exit 2; }
  [ "$trc" = 0 ] || RC=1
  if [ -f "$WORK/$tier/RESULTS.md" ]; then
    read -r p f s < <(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed\(, \([0-9]*\) skipped\)\{0,1\}$/\1 \2 \4/p' "$WORK/$tier/RESULTS.md" | tail -1) || true
    TOTAL_PASS=$((TOTAL_PASS + ${p:-0})); TOTAL_FAIL=$((TOTAL_FAIL + ${f:-0})); TOTAL_SKIP=$((TOTAL_SKIP + ${s:-0}))
  fi
}

# tiers_together TIER...: the kernel tiers' guests mostly wait (debounces, idle windows, irqbalance's
# 10 s scans): measured on a 2-core host, one kept the host 45% busy. So these run at once, each in
# its own guest and WORK/TIER; their output is printed whole, in order, when all have finished.
tiers_together() {
  local tier trc i=0
  local -a pids=()
  echo "=== test-vm: tiers $* together (IRQWISE_VM_TOGETHER) ==="
  fetch_irqbalance "$WORK/cache/irqbalance"   # once, not raced by each tier
  for tier in "$@"; do
    rm -f "$WORK/$tier.complete"
    ( COMPLETE=""; TIMEOUT=$((TIMEOUT * 3 / 2)); BESIDE=$(echo " $* " | sed "s/ $tier / /; s/^ *//; s/ *$//; s/ /, /g"); trc=0; "tier_$tier" || trc=$?; echo "$COMPLETE" > "$WORK/$tier.complete"; exit $trc ) \
      > "$WORK/$tier.output" 2>&1 &
    pids+=("$!")
  done
  for tier in "$@"; do
    trc=0; wait "${pids[$i]}" || trc=$?; i=$((i + 1))
    echo "=== test-vm: $tier tier ==="
    cat "$WORK/$tier.output"
    COMPLETE="$COMPLETE $(cat "$WORK/$tier.complete" 2>/dev/null || true)"
    tier_done "$tier" "$trc"
  done
}

# IRQWISE_VM_TOGETHER: the tiers of TIERS that run at once, at the place of the first of them.
TOGETHER=${IRQWISE_VM_TOGETHER-kernel kernel-sid}
together=$(for tier in $TIERS; do case " $TOGETHER " in *" $tier "*) echo "$tier";; esac; done)
[ "$(echo $together | wc -w)" -ge 2 ] || together=""

RC=0 COMPLETE="" TOTAL_PASS=0 TOTAL_FAIL=0 TOTAL_SKIP=0
for tier in $TIERS; do
  case $tier in kernel|kernel-6.12|kernel-sid|oracle|arm64|systemd|systemd-sid) ;; *) echo "test-vm: unknown tier $tier (kernel, kernel-6.12, kernel-sid, oracle, arm64, systemd, systemd-sid)" >&2; exit 2;; esac
  case " $(echo $together) " in
    "  ") ;;
    " $tier "*) tiers_together $together; continue;;
    *" $tier "*) continue;;
  esac
  echo "=== test-vm: $tier tier ==="
  trc=0; "tier_$tier" || trc=$?
  tier_done "$tier" "$trc"
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
