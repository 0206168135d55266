# The arm64 tier (sourced by tests/vm/run.sh): Debian's arm64 kernels under qemu-system-aarch64
# (TCG) as the oracle for machines whose CPUs come in clusters, read from the device tree QEMU
# generates. The host's x86 irqwise cannot run in the guest: the guest (guest/arm64/init) copies
# what a plan reads onto a virtio disk, and the host plans that copy with `irqwise plan --root`
# and `irqwise topology --root`, then compares (arm64_check) with what the guest's kernel did.
#
# Every shape has six NVMe controllers (1, 3, 4, 5 and 7 I/O queue pairs, and one per possible
# CPU: serial q1 q3 q4 q5 q7 qcpu) and a 4-queue virtio-net NIC (multi-queue tap backend: the tap
# is created by QEMU, never configured, and carries nothing).
ARM64_SHAPES="c4x2-2n c2x4-1n c2x2-3n smt-2n uneven c3x4-1n c2x4-2n"
# The controllers' queue counts (cpu: one per possible CPU).
ARM64_QUEUES="1 3 4 5 7 cpu"
# The boots `make test-vm` runs by default (KERNEL:SHAPE): on Debian unstable's 7.x (which groups
# by cluster: every shape tells the rules apart, see the relabel check) every shape but `uneven`,
# whose cluster across two nodes (no real machine has one) hangs 7.2's boot right after the
# scheduler's "BUG: arch topology borken" (6.1 boots it); the five shapes of before on 6.1 (the
# rule before 7.0, with the oldest heapsort); c4x2-2n on 6.12 (the rule before 7.0 with the
# newest heapsort). IRQWISE_VM_ARM64_KERNELS / IRQWISE_VM_ARM64_SHAPES pick others.
ARM64_SID_SHAPES="c4x2-2n c2x4-1n c2x2-3n smt-2n c3x4-1n c2x4-2n"
ARM64_RUNS_DEFAULT="6.1:c4x2-2n 6.1:c2x4-1n 6.1:c2x2-3n 6.1:smt-2n 6.1:uneven 6.12:c4x2-2n$(for s in $ARM64_SID_SHAPES; do printf ' sid:%s' "$s"; done)"
ARM64_MODULES="nvme virtio_pci virtio_net virtio_mmio virtio_blk"

# arm64_packages CACHE VERSION: Debian's arm64 kernel VERSION (6.1: linux-image-arm64's; 6.12:
# linux-image-6.12-arm64's, both fetched with `apt-get download` after the arm64 architecture
# is added to dpkg; sid: Debian unstable's current, through the private apt state of
# host/deps.sh's archive_kernel) and busybox-static, unpacked below CACHE, never installed. Sets
# A64_KVER, A64_KIMG, A64_MODBASE (holding lib/modules/A64_KVER with depmod's modules.dep) and
# A64_BUSYBOX.
arm64_packages() {
  local cache=$1 version=$2 meta pkg dir
  case $version in 6.1) meta=linux-image-arm64;; 6.12) meta=linux-image-6.12-arm64;; sid) ;;
    *) echo "test-vm: no arm64 kernel $version (6.1, 6.12, sid)" >&2; return 1;; esac
  if [ "$(id -u)" = 0 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
    dpkg --add-architecture arm64 && apt-get update -qq >&2
  fi
  if ! command -v qemu-system-aarch64 >/dev/null; then
    [ "$(id -u)" = 0 ] || { echo "test-vm: qemu-system-aarch64 missing (apt-get install qemu-system-arm)" >&2; return 1; }
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends qemu-system-arm >&2 || return 1
  fi
  if [ "$version" = sid ]; then
    archive_kernel "$cache/archive" sid arm64 || return 1
    A64_KVER=$ARCHIVE_KVER A64_MODBASE=$ARCHIVE_MODBASE A64_KIMG=$ARCHIVE_KIMG
  else
    pkg=$(apt-cache depends "$meta:arm64" 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { sub(/:arm64$/, "", $2); print $2; exit }')
    [ -n "$pkg" ] || { echo "test-vm: apt-cache knows no $meta:arm64 (dpkg --add-architecture arm64; apt-get update)" >&2; return 1; }
    dir=$cache/arm64-$version
    A64_KVER=${pkg#linux-image-} A64_MODBASE=$dir/root
    A64_KIMG=$dir/root/boot/vmlinuz-$A64_KVER
    unpacked_kernel "$dir" "$pkg:arm64" "$A64_KVER" || return 1
  fi
  A64_BUSYBOX=$cache/arm64-busybox/root/bin/busybox
  if [ ! -x "$A64_BUSYBOX" ]; then
    rm -rf "$cache/arm64-busybox"; mkdir -p "$cache/arm64-busybox"
    (cd "$cache/arm64-busybox" && apt-get download busybox-static:arm64 >/dev/null 2>&1) ||
      { echo "test-vm: apt-get download busybox-static:arm64 failed" >&2; return 1; }
    dpkg-deb -x "$cache"/arm64-busybox/busybox-static_*.deb "$cache/arm64-busybox/root"
  fi
}

# arm64_initramfs ROOT OUT: the arm64 busybox (its applets named as the host's busybox of the
# same Debian release lists them), guest/arm64/init and the drivers of A64_KVER.
arm64_initramfs() {
  local root=$1 out=$2 a
  rm -rf "$root"; mkdir -p "$root"/{bin,sbin,etc,proc,sys,dev,tmp}
  cp "$A64_BUSYBOX" "$root/bin/busybox"
  for a in $(busybox --list); do [ -e "$root/bin/$a" ] || ln -s busybox "$root/bin/$a"; done
  install -m 755 "$VM_DIR/guest/arm64/init" "$root/init"
  KVER=$A64_KVER MODBASE=$A64_MODBASE install_modules "$root" $ARM64_MODULES || return 1
  echo "$ARM64_MODULES" > "$root/etc/modules-load"
  echo "$ARM64_QUEUES" | wc -w > "$root/etc/arm64-controllers"
  pack_cpio "$root" "$out"
}

# arm64_shape NAME: A64_MACHINE (-smp and -numa arguments), A64_MEM (MB), SHAPE_DESC for RESULTS.md.
arm64_shape() {
  local n=0 c
  A64_MACHINE=() A64_MEM=0
  # nodes SIZE_MB CPULIST...: one memory node per CPU list.
  nodes() { local size=$1; shift; for c in "$@"; do A64_MACHINE+=(-object memory-backend-ram,id=m$n,size=${size}M -numa node,nodeid=$n,cpus=$c,memdev=m$n); n=$((n + 1)) A64_MEM=$((A64_MEM + size)); done; }
  case $1 in
    c4x2-2n)
      SHAPE_DESC="-smp 16,sockets=2,clusters=4,cores=2: 8 clusters of 2 CPUs, nodes 0-7 / 8-15 (distance 20)"
      A64_MACHINE=(-smp 16,sockets=2,clusters=4,cores=2,threads=1); nodes 512 0-7 8-15
      A64_MACHINE+=(-numa dist,src=0,dst=1,val=20);;
    c2x4-1n)
      SHAPE_DESC="-smp 8,sockets=1,clusters=2,cores=4: 2 clusters of 4 CPUs, one node"
      A64_MACHINE=(-smp 8,sockets=1,clusters=2,cores=4,threads=1); nodes 1024 0-7;;
    c2x2-3n)
      SHAPE_DESC="-smp 12,sockets=3,clusters=2,cores=2: 6 clusters of 2, nodes 0-3 / 4-7 / 8-11 (0-1 20, 1-2 20, 0-2 30)"
      A64_MACHINE=(-smp 12,sockets=3,clusters=2,cores=2,threads=1); nodes 384 0-3 4-7 8-11
      A64_MACHINE+=(-numa dist,src=0,dst=1,val=20 -numa dist,src=1,dst=2,val=20 -numa dist,src=0,dst=2,val=30);;
    smt-2n)
      SHAPE_DESC="-smp 16,sockets=2,clusters=2,cores=2,threads=2: 4 clusters of 2 cores x 2 threads, nodes 0-7 / 8-15"
      A64_MACHINE=(-smp 16,sockets=2,clusters=2,cores=2,threads=2); nodes 512 0-7 8-15
      A64_MACHINE+=(-numa dist,src=0,dst=1,val=20);;
    uneven)
      SHAPE_DESC="-smp 12,sockets=1,clusters=3,cores=4: 3 clusters of 4, nodes 0-5 / 6-11 (the middle cluster spans both)"
      A64_MACHINE=(-smp 12,sockets=1,clusters=3,cores=4,threads=1); nodes 512 0-5 6-11
      A64_MACHINE+=(-numa dist,src=0,dst=1,val=20);;
    c3x4-1n)
      SHAPE_DESC="-smp 12,sockets=1,clusters=3,cores=4: 3 clusters of 4 CPUs, one node (4 queues: the older rule's groups of 3 span clusters)"
      A64_MACHINE=(-smp 12,sockets=1,clusters=3,cores=4,threads=1); nodes 1024 0-11;;
    c2x4-2n)
      SHAPE_DESC="-smp 16,sockets=2,clusters=2,cores=4: 4 clusters of 4 CPUs, nodes 0-7 / 8-15 (distance 20)"
      A64_MACHINE=(-smp 16,sockets=2,clusters=2,cores=4,threads=1); nodes 512 0-7 8-15
      A64_MACHINE+=(-numa dist,src=0,dst=1,val=20);;
    *) echo "test-vm: unknown arm64 shape $1 ($ARM64_SHAPES)" >&2; return 1;;
  esac
}

# arm64_boot VERSION SHAPE DIR INITRD: one guest (KIMG of VERSION in A64_KIMG), its snapshot
# unpacked in DIR/snap; DIR/console.log, DIR/boot-time (seconds), DIR/shape-desc.
arm64_boot() {
  local version=$1 shape=$2 d=$3 initrd=$4 i q pairs t nvme=()
  arm64_shape "$shape" || return 1
  echo "$SHAPE_DESC" > "$d/shape-desc"
  i=0
  for q in $ARM64_QUEUES; do
    pairs=$q; [ $q = cpu ] && pairs=64
    truncate -s 1M "$d/nvme$i.img"
    nvme+=(-drive file="$d/nvme$i.img",if=none,id=nvd$i,format=raw
      -device nvme,serial=q$q,drive=nvd$i,max_ioqpairs=$pairs,msix_qsize=$((pairs + 1)))
    i=$((i + 1))
  done
  truncate -s 64M "$d/snap.img"
  # One host thread per guest (IRQWISE_VM_ARM64_TCG_THREAD, default single), two guests at a time:
  # measured on a 2-core host, the 12 boots took 123 s single against 199-392 s multi-threaded,
  # where a 16-vCPU guest stalled (RCU stalls, 58 s soft lockups) and took 300 s once.
  local qemu=(qemu-system-aarch64 -M virt,gic-version=3 -accel "tcg,thread=${IRQWISE_VM_ARM64_TCG_THREAD:-single}" -cpu "${IRQWISE_VM_ARM64_CPU:-max,pauth-impdef=on}" -m $A64_MEM
    "${A64_MACHINE[@]}" "${nvme[@]}"
    -netdev tap,id=t0,queues=4,script=no,downscript=no,vhost=off -device virtio-net-pci,netdev=t0,mq=on,vectors=10,romfile=
    -drive file="$d/snap.img",if=none,id=snap,format=raw -device virtio-blk-device,drive=snap
    -nodefaults -no-user-config -display none -no-reboot -serial file:"$d/console.log"
    -kernel "$A64_KIMG" -initrd "$initrd" -append "console=ttyAMA0 panic=-1 rdinit=/init quiet")
  printf '%q ' "${qemu[@]}" > "$d/qemu-cmdline"; echo >> "$d/qemu-cmdline"
  t=$(secs)
  timeout "${IRQWISE_VM_ARM64_TIMEOUT:-300}" "${qemu[@]}" </dev/null > "$d/qemu.stderr" 2>&1 || echo "qemu exit $?" >> "$d/qemu.stderr"
  if ! grep -q '^@@SNAPSHOT ' "$d/console.log"; then
    # Once, and only for a guest that wrote no snapshot: on one host thread (see run.sh's
    # boot_retried; the first console is kept).
    cp "$d/console.log" "$d/console.first.log"
    local single=("${qemu[@]}"); single[4]=tcg,thread=single
    timeout "${IRQWISE_VM_ARM64_TIMEOUT:-300}" "${single[@]}" </dev/null >> "$d/qemu.stderr" 2>&1 || echo "qemu exit $? (retry)" >> "$d/qemu.stderr"
  fi
  since "$t" > "$d/boot-time"
  rm -f "$d"/nvme*.img
  mkdir -p "$d/snap"
  grep -q '^@@SNAPSHOT ' "$d/console.log" && tar -xf "$d/snap.img" -C "$d/snap" 2>/dev/null
  rm -f "$d/snap.img"
}

# arm64_compare SNAP ROWS report|count: every NVMe I/O queue of the snapshot SNAP, its kernel mask
# and blk-mq map against the plan rows ROWS (planrows.awk: irq desired mismatch uncertain):
# `report` prints a MEASURE and a RESULT line per controller (exact, uncertain, mismatch, as the
# oracle tier); `count` prints "QUEUES MISMATCHES" over all controllers.
arm64_compare() {
  local s=$1 rows=$2 how=$3 c ctrl serial ns irqs irq q have blk want n exact unc mis first row all=0 wrong=0
  canon() { awk -v l="$(echo "$1" | tr -d ' ')" 'BEGIN { n = split(l, p, ","); s = ""
    for (i = 1; i <= n; i++) { if (split(p[i], r, "-") == 2) { for (c = r[1]; c <= r[2]; c++) s = s " " c } else s = s " " p[i] }
    print substr(s, 2) }'; }
  for c in "$s"/sys/class/nvme/nvme*; do
    ctrl=${c##*/}; read -r serial < "$c/serial"
    ns=$(cd "$s/sys/block" && ls -d "$ctrl"n1 "$ctrl"c*n1 2>/dev/null | head -1)
    irqs=$(awk -v ctrl="$ctrl" '{ name = $NF } name ~ "^" ctrl "q[0-9]+$" { q = substr(name, length(ctrl) + 2) + 0; if (q > 0) { sub(":", "", $1); irq[q] = $1 } }
      END { for (q = 1; q in irq; q++) printf "%s ", irq[q] }' "$s/proc/interrupts")
    n=0 exact=0 unc=0 mis=0 first="" q=0
    for irq in $irqs; do
      have=$(canon "$(cat "$s/proc/irq/$irq/smp_affinity_list")")
      blk="(none)"; [ -r "$s/sys/block/$ns/mq/$q/cpu_list" ] && blk=$(canon "$(cat "$s/sys/block/$ns/mq/$q/cpu_list")")
      row=$(awk -v i="$irq" '$1 == i { print $2, $3, $4; exit }' "$rows"); set -- ${row:-- - -}
      want=-; [ "$1" = - ] || want=$(canon "$1")
      if [ "$have" = "$want" ] && [ "$blk" = "$want" ] && [ "$2" = false ] && [ "$3" = - ]; then exact=$((exact + 1))
      elif [ "$3" != - ] && [ "$2" != true ]; then unc=$((unc + 1))
      else mis=$((mis + 1)); [ -n "$first" ] || first="queue $((q + 1)) (irq $irq): kernel $have, blk-mq $blk, irqwise $want (mismatch=$2)"
      fi
      n=$((n + 1)) q=$((q + 1))
    done
    all=$((all + n)) wrong=$((wrong + mis))
    [ "$how" = report ] || continue
    echo "MEASURE arm64 $serial@boot $n $exact $unc $mis"
    if [ "$n" = 0 ]; then echo "RESULT arm64 $serial@boot FAIL $ctrl: no I/O queue IRQ in /proc/interrupts"
    elif [ $mis = 0 ]; then echo "RESULT arm64 $serial@boot PASS $ctrl: $n queues: $exact exact, $unc uncertain, 0 mismatches"
    else echo "RESULT arm64 $serial@boot FAIL $ctrl: $n queues: $exact exact, $unc uncertain, $mis mismatches; first: $first"
    fi
  done
  [ "$how" = count ] && echo "$all $wrong"
  return 0
}

# arm64_check DIR IRQWISE: the checks of one booted shape, as RESULT/MEASURE lines (scenario
# "arm64"): per NVMe controller (q1 ... qcpu) every I/O queue's kernel mask
# (proc/irq/N/smp_affinity_list) and blk-mq map (sys/block/<ns>/mq/<q>/cpu_list) against
# `irqwise plan --root DIR/snap --json` (exact / uncertain / mismatch, as the oracle tier), the
# topology (host/arm64.awk) and the NIC. Then the relabel (issue #63): the same snapshot planned
# as a kernel on the other side of 7.0's grouping rule (only `osrelease` changed) must predict
# every queue exactly too, the managed masks showing the rule (check "relabel": the rule and
# where it came from). And the kernel's facts as `topology --json` lists them from the guest's
# BTF and modules (MEASURE "fact:NAME", guest/facts.awk).
arm64_check() {
  local d=$1 irqwise=$2 s=$1/snap release other
  if [ ! -r "$s/proc/sys/kernel/osrelease" ]; then
    echo "# no snapshot from the guest; last console lines:"; tail -5 "$d/console.log" | sed 's/^/# /'; return 0
  fi
  release=$(cat "$s/proc/sys/kernel/osrelease")
  echo "MEASURE arm64 kernel $release"
  case $release in [0-6].*) other=7.2.0-relabelled;; *) other=6.1.0-relabelled;; esac
  "$irqwise" plan --root "$s" --json > "$d/plan.json" 2> "$d/plan.err"
  "$irqwise" topology --root "$s" --json > "$d/topology.json" 2> "$d/topology.err"
  awk -v cols=irq,desired,mismatch,uncertain -f "$VM_DIR/guest/planrows.awk" "$d/plan.json" > "$d/rows"
  arm64_compare "$s" "$d/rows" report
  awk -v dump=1 -f "$VM_DIR/guest/planrows.awk" "$d/topology.json" | awk -f "$VM_DIR/guest/facts.awk" |
    while read -r name rest; do echo "MEASURE arm64 fact:$name $rest"; done
  # The relabel (see above).
  echo "$other" > "$s/proc/sys/kernel/osrelease"
  "$irqwise" plan --root "$s" --json > "$d/plan-relabelled.json" 2> "$d/plan-relabelled.err"
  echo "$release" > "$s/proc/sys/kernel/osrelease"
  awk -v cols=irq,desired,mismatch,uncertain -f "$VM_DIR/guest/planrows.awk" "$d/plan-relabelled.json" > "$d/rows-relabelled"
  local own relabelled rule finding
  own=$(arm64_compare "$s" "$d/rows" count)
  relabelled=$(arm64_compare "$s" "$d/rows-relabelled" count)
  pr() { awk -v get="$1" -f "$VM_DIR/guest/planrows.awk" "$d/plan-relabelled.json"; }
  rule="$(pr grouping.rule) $(pr grouping.source)" finding=$(pr grouping.finding)
  echo "MEASURE arm64 relabel $other ${relabelled% *} ${relabelled#* } $rule"
  if [ "${relabelled%% *}" -gt 0 ] && [ "${relabelled##* }" = 0 ] && [ "${own##* }" = 0 ] && [ -z "$finding" ]; then
    echo "RESULT arm64 relabel PASS as $release and as $other: ${relabelled%% *} queues exact both times (grouping: ${rule% *}, ${rule#* })"
  else
    echo "RESULT arm64 relabel FAIL as $release ${own##* } and as $other ${relabelled##* } of ${relabelled%% *} queues mispredicted${finding:+; finding: $finding}"
  fi
  # The topology and the NIC, from the guest's files and irqwise's two documents (arm64.awk).
  local cpu node nic
  nic=$(for c in "$s"/sys/class/net/*/device; do [ -e "$c/numa_node" ] && { cat "$c/numa_node"; break; }; done)
  {
    awk -v dump=1 -f "$VM_DIR/guest/planrows.awk" "$d/topology.json" | sed 's/^/T /'
    awk -v dump=1 -f "$VM_DIR/guest/planrows.awk" "$d/plan.json" | sed 's/^/P /'
    for cpu in "$s"/sys/devices/system/cpu/cpu[0-9]*; do
      for k in cluster core package thread; do
        f=$cpu/topology/${k}_cpus_list; [ $k = thread ] && f=$cpu/topology/thread_siblings_list
        [ -r "$f" ] && echo "F ${cpu##*cpu} $k $(cat "$f")"
      done
    done
    for node in "$s"/sys/devices/system/node/node[0-9]*; do
      echo "N ${node##*node} $(cat "$node/cpulist") $(cat "$node/distance")"
    done
    echo "O $(cat "$s/sys/devices/system/cpu/online")"
    echo "D ${nic:--1}"
  } | awk -f "$VM_DIR/host/arm64.awk"
}
