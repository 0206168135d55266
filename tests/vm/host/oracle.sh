# The oracle tier's guests (sourced by tests/vm/run.sh): one boot per kernel and shape, each with
# five NVMe controllers on one node, one per queue count: serial q1, q3, q5, q7 (max_ioqpairs) and
# qcpu (64 pairs: the nvme driver then asks for one queue per possible CPU).
#
# oracle_shape NAME WORK: sets MACHINE, MACHINE_MEM, MACHINE_OPTS, CPU_EXTRA, APPEND_EXTRA for
# boot_guest, SHAPE_DESC (for RESULTS.md), and writes WORK/steps (the guest's /etc/oracle-steps:
# "check STAGE" runs the comparison, other lines change the machine between checks; see
# guest/oracle/oracle.sh). Fails on an unknown NAME.
ORACLE_SHAPES="2x2x2 three-nodes uneven maxcpus nosmt isolcpus"
# The boots `make test-vm` runs by default (KERNEL:SHAPE, two at a time, in this order): the
# possible > present case on both kernels and three nodes with NVMe on the middle one, about a
# minute under TCG; IRQWISE_VM_ORACLE=full boots every kernel x every shape.
ORACLE_CI_RUNS="6.1:three-nodes 6.1:maxcpus 6.12:maxcpus sid:maxcpus 6.1:isolcpus"

# nvme_block WORK NODE BUS_NR: MACHINE args for a PCIe expander bridge on NODE holding the five
# controllers behind root ports.
nvme_block() {
  local work=$1 node=$2 bus=$3 i=0 q pairs
  NVME_ARGS=(-device pxb-pcie,id=pxbn,bus_nr=$bus,numa_node=$node,bus=pcie.0)
  for q in 1 3 5 7 cpu; do
    pairs=$q; [ $q = cpu ] && pairs=64
    truncate -s 1M "$work/nvme$i.img"
    NVME_ARGS+=(-device pcie-root-port,id=rpn$i,bus=pxbn,chassis=$((200 + i)),slot=0
      -drive file="$work/nvme$i.img",if=none,id=nvd$i,format=raw
      -device nvme,serial=q$q,drive=nvd$i,bus=rpn$i,max_ioqpairs=$pairs,msix_qsize=$((pairs + 1)))
    i=$((i + 1))
  done
}

# mem_nodes SIZE_MB CPULIST...: MACHINE args for one node per CPU list, each with SIZE_MB.
mem_nodes() {
  local size=$1 n=0 c; shift
  NODE_ARGS=()
  for c in "$@"; do
    NODE_ARGS+=(-object memory-backend-ram,id=mem$n,size=${size}M -numa node,nodeid=$n,cpus=$c,memdev=mem$n)
    n=$((n + 1))
  done
  MACHINE_MEM=$((size * n))
}

oracle_shape() {
  local name=$1 work=$2
  MACHINE_OPTS="" CPU_EXTRA="" APPEND_EXTRA=""
  case $name in
    2x2x2)
      SHAPE_DESC="2 sockets x 2 cores x 2 threads, nodes 0-3 / 4-7, NVMe on node 0"
      mem_nodes 512 0-3 4-7; nvme_block "$work" 0 0x80
      MACHINE=(-smp cpus=8,maxcpus=8,sockets=2,cores=2,threads=2 "${NODE_ARGS[@]}" -numa dist,src=0,dst=1,val=20)
      printf 'check boot\nmanaged-mode\n' > "$work/steps";;
    three-nodes)
      SHAPE_DESC="3 nodes x 4 CPUs (0-3 / 4-7 / 8-11, 2 cores x 2 threads each; distances 0-1 20, 1-2 20, 0-2 30), NVMe on the middle node 1"
      mem_nodes 384 0-3 4-7 8-11; nvme_block "$work" 1 0x80
      MACHINE=(-smp cpus=12,maxcpus=12,sockets=3,cores=2,threads=2 "${NODE_ARGS[@]}"
        -numa dist,src=0,dst=1,val=20 -numa dist,src=1,dst=2,val=20 -numa dist,src=0,dst=2,val=30)
      printf 'check boot\nmanaged-mode\n' > "$work/steps";;
    uneven)
      SHAPE_DESC="uneven nodes 0-2 / 3-7 (2 x 2 x 2: the core of CPUs 2,3 spans both nodes), NVMe on node 1"
      mem_nodes 512 0-2 3-7; nvme_block "$work" 1 0x80
      MACHINE=(-smp cpus=8,maxcpus=8,sockets=2,cores=2,threads=2 "${NODE_ARGS[@]}" -numa dist,src=0,dst=1,val=20)
      printf 'check boot\nmanaged-mode\n' > "$work/steps";;
    maxcpus)
      SHAPE_DESC="possible > present: -smp cpus=8,maxcpus=12 (2 sockets x 3 cores x 2 threads, nodes 0-5 / 6-11), kernel maxcpus=7 (CPU 7 offline at boot), NVMe on node 1; then CPU 7 online and a CPU hot-added (socket 1, core 1) and onlined (6.12 makes possible = present = 0-7 here: nothing to hot-add)"
      mem_nodes 512 0-5 6-11; nvme_block "$work" 1 0x80
      MACHINE=(-smp cpus=8,maxcpus=12,sockets=2,cores=3,threads=2 "${NODE_ARGS[@]}" -numa dist,src=0,dst=1,val=20)
      APPEND_EXTRA="maxcpus=7"
      printf '%s\n' "check boot" "managed-mode" "daemon" "online 7" "settle 1" "check cpu7-online" \
        "hotadd max-x86_64-cpu,id=hotcpu,socket-id=1,core-id=1,thread-id=0" "online-new" "settle 1" "check hot-added" > "$work/steps";;
    nosmt)
      SHAPE_DESC="2 x 2 x 2 as above booted with nosmt (CPUs 1,3,5,7 offline), NVMe on node 0; then SMT on"
      mem_nodes 512 0-3 4-7; nvme_block "$work" 0 0x80
      MACHINE=(-smp cpus=8,maxcpus=8,sockets=2,cores=2,threads=2 "${NODE_ARGS[@]}" -numa dist,src=0,dst=1,val=20)
      APPEND_EXTRA="nosmt"
      printf '%s\n' "check boot" "managed-mode" "daemon" "smt on" "settle 1" "check smt-on" > "$work/steps";;
    isolcpus)
      SHAPE_DESC="2 x 2 x 2 as above booted with isolcpus=2-3 (no managed_irq flag), NVMe on node 0: irqwise advise boot"
      mem_nodes 512 0-3 4-7; nvme_block "$work" 0 0x80
      MACHINE=(-smp cpus=8,maxcpus=8,sockets=2,cores=2,threads=2 "${NODE_ARGS[@]}" -numa dist,src=0,dst=1,val=20)
      APPEND_EXTRA="isolcpus=2-3"
      printf '%s\n' "advise 2-3" > "$work/steps";;
    *) echo "test-vm: unknown oracle shape $name ($ORACLE_SHAPES)" >&2; return 1;;
  esac
  MACHINE+=(-device intel-iommu,intremap=on,eim=off "${NVME_ARGS[@]}")
}

# build_oracle_base ROOT IRQWISE_BIN: busybox, irqwise, the guest program and the nvme modules of
# $KVER (below $MODBASE), shared by every shape of one kernel.
build_oracle_base() {
  local root=$1 irqwise=$2
  busybox_skeleton "$root" || return 1
  mkdir -p "$root"/{guest,usr/bin,var/run,cfg/etc/irqwise}
  cp "$VM_DIR"/guest/oracle/init "$root/init"
  cp "$VM_DIR"/guest/oracle/oracle.sh "$VM_DIR"/guest/lib.sh "$VM_DIR"/guest/planrows.awk "$root/guest/"
  chmod +x "$root/init" "$root"/guest/*.sh
  copy_in "$root" "$irqwise" /usr/bin/irqwise && chmod 755 "$root/usr/bin/irqwise"
  install_modules "$root" nvme || return 1
  echo nvme > "$root/etc/modules-load"
  echo 5 > "$root/etc/oracle-controllers"
}

