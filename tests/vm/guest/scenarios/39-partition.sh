# partition: a cgroup v2 isolated partition made and removed while the daemon runs (the
# cpuset.cpus.partition of a cgroup; since 7.0 the kernel's own housekeeping follows it at run
# time, while /sys/devices/system/cpu/isolated keeps showing the boot's isolcpus= only). The
# kernel notifies the cgroup's own partition file, not the root's cpuset.cpus.isolated that
# irqwise reads: the daemon watches every cgroup's. Isolating CPUs 6-7 must move eth0's queue
# IRQs and their NAPI threads (threaded on) off them, with the transmit steering following (each
# CPU on the queue whose IRQ is nearest), in the pass the change triggers (its trigger is the
# partition file, not the reconcile timer, left at 60 s), and making it a member again must bring
# the startup placement back the same way. Kernel-managed
# NVMe IRQs stay where the kernel spread them, and plan names them; topology says the source is
# live. Before 6.7 the root has no cpuset.cpus.isolated: nothing to see, said and passed.
SCEN=partition
CG=/sys/fs/cgroup
PART=$CG/irqwise-rt
if [ ! -e $CG/cpuset.cpus.isolated ]; then
  measure result "no $CG/cpuset.cpus.isolated on $(uname -r) (cgroup v2 isolated partitions are listed from 6.7)"
  for c in made_off threads_off xps_follows by_watch topology_live managed_named removed_back; do result $c PASS "not on $(uname -r)"; done
elif [ ! -d $PART ]; then
  result made_off FAIL "no $PART: the guest's init could not make the cpuset cgroup"
else
  # The cgroup (a member, cpuset on) was made at boot by the guest's init, and stays: see there.
  echo 6-7 > $PART/cpuset.cpus
  # The threads of eth0's queues follow their IRQs: on, and placed by a pass (SIGHUP).
  echo 1 > /sys/class/net/eth0/threaded
  kill -HUP "$DAEMON_PID"
  now; T0=$NOW; threads_settle 20000
  read_masks "$NIC_IRQS"; BEFORE=$MASKS
  log_mark
  off67() { local e; for e in $MASKS; do case ${e#*=} in 6|7) return 1;; esac; done; return 0; }
  now; T0=$NOW
  echo isolated > $PART/cpuset.cpus.partition
  settle "$NIC_IRQS" off67 20000
  measure off_ms "$SETTLE_MS"
  measure partition "$(cat $PART/cpuset.cpus.partition); cpuset.cpus.isolated '$(cat $CG/cpuset.cpus.isolated)'; cpu/isolated '$(cat /sys/devices/system/cpu/isolated)'"
  check made_off "isolated partition on 6-7: eth0's queue IRQs off 6-7 ($SETTLE_MS ms)" -- eval 'read_masks "$NIC_IRQS"; off67 && REPLY="$MASKS"'
  threads_off() {
    threads_follow || return 1
    case " $THREAD_LISTS " in *" 6 "*|*" 7 "*) REPLY="threads on $THREAD_LISTS"; return 1;; esac
  }
  now; T0=$NOW; threads_settle 10000
  check threads_off "NAPI threads with their IRQs, off 6-7" -- threads_off
  # An isolated CPU still sends (an application pinned there): on the queue whose IRQ is now
  # nearest, which lies off 6-7 (25-xps.sh's rule).
  check xps_follows "transmit steering follows the IRQs: every CPU on its nearest queue, 6-7 included" -- xps_settles 10000
  by_watch() {
    local t; t=$(status_field triggers.0)
    REPLY="the pass that moved them: '$t'"
    case $t in isolation*) return 0;; esac
    log_since_mark | grep -q 'isolation' && { REPLY="$REPLY; the log names the isolation change"; return 0; }
    return 1
  }
  check by_watch "the pass came from the partition file's change, not the reconcile timer" -- by_watch
  topology_live() {
    $IRQWISE --config $CFG topology --json > /tmp/topo.json 2>/dev/null
    awk -v dump=1 -f /guest/planrows.awk /tmp/topo.json > /tmp/topo.dump
    local k
    k=$(awk '$1 ~ /^isolation\.sources\.[0-9]+\.kind$/ && $2 == "cgroup-partition" { sub(/\.kind$/, "", $1); print $1; exit }' /tmp/topo.dump)
    [ -n "$k" ] || { REPLY="no cgroup-partition source"; return 1; }
    REPLY="source $(awk -v k="$k.since" '$1 == k { print $2 }' /tmp/topo.dump), cpus $(awk -v k="$k.cpus" '$1 == k { print $2 }' /tmp/topo.dump)"
    case $REPLY in "source live, cpus 6-7") return 0;; esac; return 1
  }
  check topology_live "topology: the cgroup partition is a live source of CPUs 6-7" -- topology_live
  managed_named() {
    local irq m n=0
    plan_rows
    for irq in $NVME_IO; do
      read -r m < /proc/irq/$irq/smp_affinity_list; expand "$m"
      case " $REPLY " in *" 6 "*|*" 7 "*) ;; *) continue;; esac
      grep -q "^$irq " /tmp/plan.rows || continue
      $IRQWISE --config $CFG plan 2>/dev/null | grep -E "^ +$irq " > /tmp/managed.line
      grep -q "cgroup-isolated CPUs" /tmp/managed.line && grep -q "cannot be moved" /tmp/managed.line ||
        { REPLY="irq $irq on $m: $(cut -c1-160 /tmp/managed.line)"; return 1; }
      n=$((n + 1))
    done
    read_masks "$NVME_IO"
    [ "$MASKS" = "$NVME_BEFORE" ] || { REPLY="NVMe masks changed: $MASKS"; return 1; }
    REPLY="$n NVMe queue IRQs on 6-7 left where the kernel spread them, each named"
    [ $n -gt 0 ]
  }
  check managed_named "managed NVMe IRQs on 6-7 stay, and plan names them" -- managed_named
  now; T0=$NOW
  echo member > $PART/cpuset.cpus.partition
  settle "$NIC_IRQS" '[ "$MASKS" = "$BEFORE" ]' 20000
  measure back_ms "$SETTLE_MS"
  check removed_back "partition removed: the placement from before ($SETTLE_MS ms)" -- eval 'read_masks "$NIC_IRQS"; [ "$MASKS" = "$BEFORE" ]'
  echo 0 > /sys/class/net/eth0/threaded
  napi_thread_pids eth0; for p in $PIDS; do busybox taskset -p -c 0-7 "$p" > /dev/null; done
fi
check no_errors "daemon log has no ERROR/WARN lines" -- no_log_problems
