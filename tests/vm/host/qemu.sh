# Boots the guest (sourced by tests/vm/run.sh).
# boot_guest WORK KERNEL INITRD TIMEOUT_S [DISK]
# The machine: the array MACHINE (-smp, -numa, devices) when set, else standard_machine's;
# MACHINE_OPTS is appended to -machine's options, MACHINE_MEM is -m (default 1024), CPU_EXTRA
# to -cpu's options under TCG, APPEND_EXTRA to the kernel command line.
# DISK (the systemd tier): a raw image attached as a virtio disk on the root bus (/dev/vda).
# Machine: q35 with interrupt remapping (intel-iommu intremap=on, split irqchip), 2 sockets x
# 2 cores x 2 threads = 8 CPUs, NUMA node 0 = CPUs 0-3, node 1 = CPUs 4-7 (distance 20).
# PCIe expander bridges give devices a node: pxb0 (node 0) holds the NVMe drive (4 I/O queue
# pairs), pxb1 (node 1) the vmxnet3 NIC (8 queues) plus an empty root port `rphot` into which
# the host hot-adds a second vmxnet3 when the guest asks for it.
# Serial: ttyS0 = kernel console -> WORK/console.log; ttyS1 = guest program -> WORK/guest.out.
# Monitor: HMP on the FIFO pair WORK/mon.in / WORK/mon.out. A guest line "HOST <command>" is
# sent to the monitor verbatim (logged in WORK/monitor.log); the guest then polls sysfs for the
# effect, so no reply channel is needed.
# Sets QEMU_RC; WORK/boot-stalled exists (with the reason) when the boot watchdog stopped a
# guest that never reached /init (IRQWISE_VM_BOOT_TIMEOUT, default 180 s).

MACHINE=()

# standard_machine WORK: MACHINE = the tiers' guest (see the file header), its NVMe image in WORK.
standard_machine() {
  truncate -s 64M "$1/nvme.img"
  MACHINE=(-smp cpus=8,maxcpus=8,sockets=2,cores=2,threads=2
    -object memory-backend-ram,id=mem0,size=512M -numa node,nodeid=0,cpus=0-3,memdev=mem0
    -object memory-backend-ram,id=mem1,size=512M -numa node,nodeid=1,cpus=4-7,memdev=mem1
    -numa dist,src=0,dst=1,val=20
    -device intel-iommu,intremap=on,eim=off
    -device pxb-pcie,id=pxb0,bus_nr=0x80,numa_node=0,bus=pcie.0
    -device pcie-root-port,id=rp0,bus=pxb0,chassis=128,slot=0
    -drive file="$1/nvme.img",if=none,id=nv0,format=raw
    -device nvme,serial=irqwisevm,drive=nv0,bus=rp0,max_ioqpairs=4,msix_qsize=5
    -device pxb-pcie,id=pxb1,bus_nr=0x90,numa_node=1,bus=pcie.0
    -device pcie-root-port,id=rp1,bus=pxb1,chassis=144,slot=0
    -netdev user,id=n0 -device vmxnet3,netdev=n0,bus=rp1,mac=52:54:00:00:00:01
    -device pcie-root-port,id=rphot,bus=pxb1,chassis=145,slot=0
    -netdev user,id=hn0)
}

boot_guest() {
  local work=$1 kernel=$2 initrd=$3 timeout=$4 disk=${5:-} accel qpid relay rc disk_args=()
  [ -n "$disk" ] && disk_args=(-drive file="$disk",if=none,id=rootd,format=raw -device virtio-blk-pci,drive=rootd,bus=pcie.0)
  if [ -r /dev/kvm ] && [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo && [ "${IRQWISE_VM_ACCEL:-}" != tcg ]; then
    accel=(-accel kvm -cpu host)
  else
    # Intel vendor: the guest then reads CPUID leaf 0xB and threads=2 gives SMT siblings.
    # TCG_THREAD=single (a retried boot): one host thread for all vCPUs, slower but without the
    # multi-threaded TCG race that can panic a boot while the kernel patches its own text.
    accel=(-accel tcg,thread=${TCG_THREAD:-multi} -cpu max,vendor=GenuineIntel${CPU_EXTRA:-})
  fi
  ACCEL_USED=${accel[1]}
  : > "$work/console.log"; : > "$work/guest.out"; : > "$work/monitor.log"
  rm -f "$work/mon.in" "$work/mon.out"; mkfifo "$work/mon.in" "$work/mon.out"
  local machine
  if [ ${#MACHINE[@]} -gt 0 ]; then machine=("${MACHINE[@]}"); else standard_machine "$work"; machine=("${MACHINE[@]}"); MACHINE=(); fi
  local qemu=(qemu-system-x86_64 "${accel[@]}" -machine q35,kernel-irqchip=split${MACHINE_OPTS:-} -m ${MACHINE_MEM:-1024}
    "${machine[@]}"
    "${disk_args[@]}"
    -nodefaults -no-user-config -display none -vga none -no-reboot
    -chardev file,id=con,path="$work/console.log" -serial chardev:con
    -chardev file,id=out,path="$work/guest.out" -serial chardev:out
    -chardev pipe,id=mon,path="$work/mon" -mon chardev=mon,mode=readline
    -kernel "$kernel" -initrd "$initrd"
    -append "console=ttyS0 panic=-1 rdinit=/init mitigations=off intel_iommu=on no_timer_check${APPEND_EXTRA:+ $APPEND_EXTRA}")
  printf '%q ' "${qemu[@]}" > "$work/qemu-cmdline"; echo >> "$work/qemu-cmdline"
  timeout "$timeout" "${qemu[@]}" </dev/null >"$work/qemu.stderr" 2>&1 &
  qpid=$!
  cat "$work/mon.out" >> "$work/monitor.log" &
  local monreader=$!
  # Relay: follow the guest's serial line while QEMU runs.
  tail -n +1 --pid="$qpid" -f "$work/guest.out" | while IFS= read -r line; do
    case $line in
      HOST\ *) cmd=${line#HOST }; cmd=${cmd%$'\r'}
        echo "# $(date +%T.%N) guest asked: $cmd" >> "$work/monitor.log"
        printf '%s\n' "$cmd" > "$work/mon.in";;
    esac
  done &
  relay=$!
  # Boot watchdog: a guest that has not reached /init's @@GUEST_START line on the console within
  # BOOT_LIMIT s (a boot stalled on an overloaded host) is stopped, so the caller can retry it.
  local limit=${IRQWISE_VM_BOOT_TIMEOUT:-180}
  rm -f "$work/boot-stalled"
  ( i=0
    while [ $i -lt "$limit" ]; do
      grep -q '@@GUEST_START' "$work/console.log" 2>/dev/null && exit 0
      kill -0 "$qpid" 2>/dev/null || exit 0
      sleep 1; i=$((i + 1))
    done
    echo "no @@GUEST_START on the console within $limit s" > "$work/boot-stalled"
    kill "$qpid" 2>/dev/null ) &
  local watchdog=$!
  rc=0; wait "$qpid" || rc=$?
  kill "$watchdog" 2>/dev/null || true
  wait "$relay" 2>/dev/null || true
  kill "$monreader" 2>/dev/null || true   # only blocks if QEMU never opened the FIFO
  QEMU_RC=$rc
}
